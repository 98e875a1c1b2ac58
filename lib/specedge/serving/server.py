"""The verification server: gRPC on 127.0.0.1, a queue, and one thread that forms and verifies batches.

Each ``Verify`` call enqueues a ``Pending`` and blocks until its batch is verified. The scheduling
thread asks the ``BatchFormer`` for a batch whenever the queue or the set of active clients changed,
verifies it in one pass (``Verifier``), feeds the outcomes to the ``DraftAllocator`` and answers each
request with S(t+1). Policies get ``now`` from here: they have no clock of their own.

Robustness: a malformed request is answered with ``INVALID_ARGUMENT`` naming the field and the server
goes on; a client that sends nothing for ``client_timeout`` seconds while the batch waits for it is
dropped from the active set (so a wait-for-all former does not wait forever), and the log says so.
The server stops by itself ``idle_timeout`` seconds after its last request, or when every client said
Bye.
"""
from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import numpy as np
import torch

from . import wire_pb2 as pb
from . import wire_pb2_grpc as pb_grpc
from . import slo
from .interfaces import BatchFormer, DraftAllocator, Outcome, Pending
from .verifier import Request, Verifier


@dataclass
class _Slot:
    pending: Pending
    request: Request
    t_sent: float
    t_draft: float
    bytes_up: int
    done: threading.Event = field(default_factory=threading.Event)
    reply: pb.VerifyReply | None = None
    error: str | None = None


def decode_distribution(msg: pb.DraftDistribution, s: int, vocab: int) -> torch.Tensor | None:
    """The (S, V) draft distribution of a request: dense, or TK-SLT's top-K rows scattered back."""
    if s == 0 or (not msg.probs and msg.vocab_size == 0):
        return None
    if msg.vocab_size != vocab:
        raise ValueError(f"draft.vocab_size: {msg.vocab_size}, the target's vocabulary has {vocab}")
    probs = np.frombuffer(msg.probs, dtype=np.float32)
    if msg.top_k == 0:
        if probs.size != s * vocab:
            raise ValueError(f"draft.probs: {probs.size} values, expected S x V = {s} x {vocab}")
        return torch.from_numpy(probs.copy()).view(s, vocab)
    k = int(msg.top_k)
    idx = np.frombuffer(msg.indices, dtype=np.int32)
    if probs.size != s * k or idx.size != s * k:
        raise ValueError(f"draft.indices/probs: expected S x K = {s} x {k} entries each")
    if idx.size and (idx.min() < 0 or idx.max() >= vocab):
        raise ValueError(f"draft.indices: outside [0, {vocab})")
    out = torch.zeros((s, vocab))
    out.scatter_(1, torch.from_numpy(idx.astype(np.int64)).view(s, k), torch.from_numpy(probs.copy()).view(s, k))
    return out


def encode_distribution(q: torch.Tensor | None, top_k: int | None, vocab: int) -> pb.DraftDistribution:
    if q is None:
        return pb.DraftDistribution()
    if not top_k:
        return pb.DraftDistribution(vocab_size=vocab, probs=q.float().numpy().tobytes())
    vals, idx = q.float().topk(top_k, dim=-1)
    return pb.DraftDistribution(vocab_size=vocab, top_k=top_k, probs=vals.numpy().tobytes(),
                                indices=idx.to(torch.int32).numpy().tobytes())


class VerificationServer(pb_grpc.VerifierServicer):
    def __init__(self, verifier: Verifier, former: BatchFormer, allocator: DraftAllocator,
                 clients: list[int], *, label: str = "", target_name: str = "",
                 client_timeout: float = 30.0, idle_timeout: float = 120.0):
        self.verifier, self.former, self.allocator = verifier, former, allocator
        self.label, self.target_name = label, target_name
        self.client_timeout, self.idle_timeout = client_timeout, idle_timeout
        self.clients = list(clients)
        self.allocation = dict(allocator.initial(self.clients))
        self.active: set[int] = set()
        self.known: set[int] = set()
        self.last_seen: dict[int, float] = {}
        self.queue: list[_Slot] = []
        self.cond = threading.Condition()
        self.log: list[dict] = []
        self.events: list[dict] = []
        self.batches = 0
        self.t0 = time.monotonic()
        self.last_request = self.t0
        self.stopped = threading.Event()
        self.failure: BaseException | None = None   # what ended the scheduling thread, if it failed
        self._session_of: dict[int, str] = {}
        self._thread = threading.Thread(target=self._loop, name="verifier", daemon=True)
        self._grpc = None
        self.port = None

    # ---------------------------------------------------------------- lifecycle
    def start(self, port: int = 0) -> int:
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=max(4, 2 * len(self.clients) + 2)))
        pb_grpc.add_VerifierServicer_to_server(self, self._grpc)
        self.port = self._grpc.add_insecure_port(f"127.0.0.1:{port}")
        self._grpc.start()
        self._thread.start()
        return self.port

    def stop(self) -> None:
        self.stopped.set()
        with self.cond:
            self.cond.notify_all()
        if self._grpc is not None:
            self._grpc.stop(grace=1.0).wait()
        self._thread.join(timeout=5)

    def wait(self, timeout: float | None = None) -> bool:
        return self.stopped.wait(timeout)

    def _event(self, client: int, what: str) -> None:
        self.events.append(dict(system="real", policy=self.label, client=client,
                                end=time.monotonic() - self.t0, event=what))

    # ---------------------------------------------------------------- RPCs
    def Hello(self, request, context):
        c = int(request.client)
        if c not in self.allocation:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"client: {c} is not one of {self.clients}")
        if request.vocab_size and request.vocab_size != self.verifier.vocab_size:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"vocab_size: draft has {request.vocab_size}, target has {self.verifier.vocab_size}")
        with self.cond:
            self.active.add(c)
            self.known.add(c)
            self.last_seen[c] = time.monotonic()
            self.cond.notify_all()
        return pb.HelloReply(draft_length=self.allocation[c], vocab_size=self.verifier.vocab_size,
                             target_model=self.target_name)

    def Bye(self, request, context):
        c = int(request.client)
        with self.cond:
            self.active.discard(c)
            sess = self._session_of.pop(c, None)
            if sess:
                self.verifier.close(sess)
            self.cond.notify_all()
        return pb.ByeReply()

    def Verify(self, request, context):
        arrival = time.monotonic()
        c = int(request.client)
        try:
            slot = self._parse(request, arrival)
        except ValueError as err:
            self._event(c, f"error: {err}")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        with self.cond:
            if c not in self.active:
                msg = f"client: {c} is not active (dropped, finished or never said Hello)"
                self._event(c, f"error: {msg}")
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, msg)
            old = self._session_of.get(c)
            if old is not None and old != request.session:
                self.verifier.close(old)  # the client moved on to its next prompt
            self._session_of[c] = request.session
            self.last_seen[c] = arrival
            self.last_request = arrival
            self.queue.append(slot)
            self.cond.notify_all()
        while not slot.done.wait(0.5):
            if not context.is_active() or self.stopped.is_set():
                break
        if slot.error or slot.reply is None:
            context.abort(grpc.StatusCode.INTERNAL, slot.error or "server stopped")
        return slot.reply

    def _parse(self, r, arrival: float) -> _Slot:
        if not r.session:
            raise ValueError("session: empty")
        if int(r.client) not in self.allocation:
            raise ValueError(f"client: {r.client} is not one of {self.clients}")
        if not np.isfinite(r.temperature) or r.temperature < 0:
            raise ValueError(f"temperature: must be a finite value >= 0, got {r.temperature}")
        s = len(r.draft_ids)
        q = decode_distribution(r.draft, s, self.verifier.vocab_size) if r.temperature > 0 else None
        req = Request(r.session, list(r.new_tokens), list(r.draft_ids), q, float(r.temperature))
        if r.session not in self.verifier.sessions and not req.new_tokens:
            raise ValueError(f"session: {r.session!r} is unknown and sends no prompt (new_tokens empty)")
        self.verifier.check(req)
        cached = self.verifier.cached_length(r.session) if self.verifier.use_cache else 0
        held = len(self.verifier.sessions[r.session].tokens) if r.session in self.verifier.sessions else 0
        n_new = len(req.new_tokens) + s + (0 if self.verifier.use_cache else held)
        pend = Pending(client=int(r.client), session=r.session, round=int(r.round),
                       arrival=arrival - self.t0, n_draft=s, n_new=n_new, n_cached=cached,
                       slo_class=int(r.slo_class) if r.slo_class else None, payload_bytes=r.ByteSize())
        if pend.slo_class:
            # eq (6): the device's drafting time is in the request, the network time is the uplink
            # just measured (same clock on loopback), taken twice for the reply
            alpha = float(r.alpha) if r.alpha > 0 else 1.0
            up = max(arrival - float(r.t_sent), 0.0) if r.t_sent else 0.0
            pend.deadline = pend.arrival + slo.budget(alpha, s, pend.slo_class, float(r.t_draft), 2 * up)
            pend.expected_tokens = slo.expected_tokens(alpha, s)
        return _Slot(pend, req, float(r.t_sent), float(r.t_draft), r.ByteSize())

    # ---------------------------------------------------------------- the scheduling thread
    def _drop_dead(self, now: float) -> None:
        waiting = {s.pending.client for s in self.queue}
        for c in sorted(self.active - waiting):
            if now - self.last_seen.get(c, now) > self.client_timeout:
                self.active.discard(c)
                self._event(c, f"dropped: no request for {self.client_timeout:g} s")

    def _loop(self) -> None:
        while not self.stopped.is_set():
            with self.cond:
                self.cond.wait(timeout=0.05)
                now = time.monotonic()
                self._drop_dead(now)
                if self.known >= set(self.clients) and not self.active and not self.queue:
                    break  # every client finished or was dropped
                if now - self.last_request > self.idle_timeout:
                    self._event(-1, f"stopped: idle for {self.idle_timeout:g} s")
                    break
                if not self.queue:
                    continue
                if not self.known >= set(self.clients) and now - self.t0 < self.client_timeout:
                    continue  # start barrier: rounds begin once every client said Hello
                pend = [s.pending for s in self.queue]
                try:
                    batch = self.former.form(pend, now - self.t0, frozenset(self.active))
                except Exception as err:  # a scheduler bug ends the run with its message instead of hanging it
                    self.failure = err
                    self._event(-1, f"stopped: batch former failed: {err!r}")
                    for s in self.queue:
                        s.error = f"batch former failed: {err!r}"
                        s.done.set()
                    self.queue = []
                    break
                if not batch:
                    continue
                chosen = {id(p) for p in batch}
                slots = [s for s in self.queue if id(s.pending) in chosen]
                self.queue = [s for s in self.queue if id(s.pending) not in chosen]
            self._verify(slots)
        self.stopped.set()

    def _verify(self, slots: list[_Slot]) -> None:
        t_start = time.monotonic()
        try:
            results = self.verifier.verify([s.request for s in slots])
        except Exception as err:  # a bad batch must not take the server down
            for s in slots:
                s.error = f"verification failed: {err}"
                s.done.set()
            return
        t_verify = time.monotonic() - t_start
        outcomes = [Outcome(s.pending.client, s.pending.n_draft, r.accepted, r.accept_prob_sum)
                    for s, r in zip(slots, results)]
        with self.cond:
            alloc = self.allocator.update(outcomes)
            self.allocation.update(alloc)
        batch = self.batches
        self.batches += 1
        first = min(s.pending.arrival for s in slots)
        last = max(s.pending.arrival for s in slots)
        for s, r in zip(slots, results):
            p = s.pending
            reply = pb.VerifyReply(accepted=r.accepted, token=r.token, bonus=r.bonus,
                                   next_draft_length=int(self.allocation.get(p.client, 0)), batch=batch,
                                   t_arrival=p.arrival + self.t0, t_start=t_start, t_verify=t_verify,
                                   accept_prob_sum=r.accept_prob_sum)
            reply.t_reply = time.monotonic()
            s.reply = reply
            self.log.append(dict(system="real", policy=self.label, batch=batch, round=p.round,
                                 client=p.client, S=p.n_draft, accepted=r.accepted, tokens=r.accepted + 1,
                                 t_draft=s.t_draft, t_receive=last - first,
                                 t_queue=t_start - self.t0 - p.arrival, t_verify=t_verify,
                                 bytes_up=s.bytes_up, bytes_down=reply.ByteSize(),
                                 arrival=p.arrival, start=t_start - self.t0, end=reply.t_reply - self.t0,
                                 slo_class=p.slo_class, deadline=p.deadline, event="",
                                 up=p.arrival + self.t0 - s.t_sent, accept_prob_sum=r.accept_prob_sum))
            self.last_seen[p.client] = time.monotonic()
            s.done.set()
