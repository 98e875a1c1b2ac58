"""The verification server: gRPC (127.0.0.1 by default), a queue, and one thread that forms and verifies batches.

Each ``Verify`` call is checked (``codec.request_from_wire`` and the limits below), enqueued, and its
handler blocks on an event until its batch is verified. The scheduling thread asks the ``BatchFormer``
for a batch whenever it is woken (an arrival, a client leaving, a verification ending, a timeout
falling due), verifies it in one pass (``Verifier``), feeds the outcomes to the ``DraftAllocator`` and
answers each request with S(t+1). Policies get ``now`` from here: they have no clock of their own.

What no client can do (each answered with a status naming the field, logged as an event row):
- send a request a policy or the verifier cannot take: non-finite, negative or unnormalised draft
  probabilities, a temperature outside [0, 100], more than ``max_draft`` drafts, or more tokens than
  the target has positions (``INVALID_ARGUMENT``);
- act for another client: ``Hello`` returns a token that every ``Verify`` and ``Bye`` must carry, a
  client id that is live cannot be taken over, and a session belongs to the client that opened it
  (``PERMISSION_DENIED`` / ``ALREADY_EXISTS``); one request per session is in flight
  (``FAILED_PRECONDITION``);
- take the loop down: a policy that raises fails only the requests it was given (``INTERNAL``, its
  message), and the server goes on; anything else that escapes the loop stops the server with a line
  on stderr, an event row and ``failure`` set (the CLI exits non-zero).

A client that sends nothing for ``client_timeout`` seconds while the others wait is dropped from the
active set. The server stops by itself ``idle_timeout`` seconds after the last Hello or request
(never while ``loading(True)``), or when every client said Bye (``stop_when_done``).
"""
from __future__ import annotations

import secrets
import sys
import threading
import time
import traceback
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from . import slo
from . import wire_pb2 as pb
from . import wire_pb2_grpc as pb_grpc
from .codec import request_from_wire
from .interfaces import BatchFormer, DraftAllocator, Outcome, Pending
from .verifier import Request, Verifier

MAX_DRAFT = 64        # default cap on drafted tokens per request (a dense request is then 2 MB at |V| = 8192)
POLL = 0.005          # s: a former that returned no batch is asked again after this (WISP waits for time)


@dataclass
class _Slot:
    pending: Pending
    request: Request
    t_sent: float
    t_draft: float
    bytes_up: int
    done: threading.Event = field(default_factory=threading.Event)
    reply: pb.VerifyReply | None = None
    error: tuple[grpc.StatusCode, str] | None = None


class VerificationServer(pb_grpc.VerifierServicer):
    def __init__(self, verifier: Verifier, former: BatchFormer, allocator: DraftAllocator,
                 clients: list[int], *, label: str = "", target_name: str = "",
                 client_timeout: float = 30.0, idle_timeout: float = 120.0, max_draft: int = MAX_DRAFT,
                 stop_when_done: bool = True, start_barrier: bool = True):
        if not idle_timeout > 0 or not client_timeout > 0:
            raise ValueError(f"idle_timeout and client_timeout must be > 0 s, got {idle_timeout}, {client_timeout}")
        if max_draft < 1:
            raise ValueError(f"max_draft: must be >= 1, got {max_draft}")
        self.verifier, self.former, self.allocator = verifier, former, allocator
        self.label, self.target_name = label, target_name
        self.client_timeout, self.idle_timeout = client_timeout, idle_timeout
        self.max_draft, self.stop_when_done, self.start_barrier = int(max_draft), stop_when_done, start_barrier
        self.max_positions = int(getattr(verifier.model.config, "max_position_embeddings", 0) or 0)
        self.clients = list(clients)
        self.allocation = dict(allocator.initial(self.clients))
        self.active: set[int] = set()
        self.known: set[int] = set()      # said Hello at least once, or were given up (``forget``)
        self.last_seen: dict[int, float] = {}
        self.queue: list[_Slot] = []
        self.cond = threading.Condition()
        self.log: list[dict] = []
        self.events: list[dict] = []
        self.batches = 0
        self.t0 = time.monotonic()
        self.last_activity = self.t0
        self.last_hello = self.t0
        self.stopped = threading.Event()
        self.failure: BaseException | None = None   # what ended the scheduling thread, if it crashed
        self.policy_errors: list[str] = []          # policies that raised (their requests failed)
        self._tokens: dict[int, str] = {}
        self._session_of: dict[int, str] = {}       # each client's live session
        self._owner: dict[str, int] = {}
        self._in_flight: set[str] = set()
        self._busy: list[_Slot] = []                # the batch being verified
        self.drafters_loading = False
        self._thread = threading.Thread(target=self._loop, name="verifier", daemon=True)
        self._grpc = None
        self.port = None

    # ---------------------------------------------------------------- lifecycle
    def start(self, port: int = 0, host: str = "127.0.0.1") -> int:
        """Listen on ``host:port`` (0: a free port) and start the scheduling thread; returns the port.
        A port in use is refused (no SO_REUSEPORT: two servers never split the drafters silently)."""
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port: must be an integer in 0..65535 (0: any free port), got {port!r}")
        workers = max(8, 2 * len(self.clients) + 4)
        cap = self.max_draft * self.verifier.vocab_size * 8 + (1 << 20)
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc"),
                                 options=[("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", cap)])
        pb_grpc.add_VerifierServicer_to_server(self, self._grpc)
        try:
            bound = self._grpc.add_insecure_port(f"{host}:{port}")
        except RuntimeError:
            bound = 0
        if not bound:
            self._grpc = None
            raise OSError(f"port {port} on {host}: cannot listen there (in use by another process, "
                          f"or not an address of this machine)")
        self.port = bound
        self._grpc.start()
        self._thread.start()
        return self.port

    def stop(self) -> None:
        self.stopped.set()
        with self.cond:
            self.cond.notify_all()
            self._fail(self.queue, grpc.StatusCode.UNAVAILABLE, "server stopped")
            self.queue = []
        if self._grpc is not None:
            self._grpc.stop(grace=1.0).wait()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def wait(self, timeout: float | None = None) -> bool:
        return self.stopped.wait(timeout)

    def loading(self, flag: bool) -> None:
        """``run`` holds the idle timer while its drafters load their models (readiness, not a timer);
        releasing it counts as activity."""
        with self.cond:
            self.drafters_loading = bool(flag)
            self.last_activity = time.monotonic()
            self.cond.notify_all()

    def forget(self, client: int, why: str) -> None:
        """Give up on ``client`` (its process ended): no round waits for it any more."""
        with self.cond:
            self.known.add(client)
            if client in self.active:
                self.active.discard(client)
            self._event(client, f"dropped: {why}")
            self.cond.notify_all()

    def _event(self, client: int, what: str) -> None:
        self.events.append(dict(system="real", policy=self.label, client=client,
                                end=time.monotonic() - self.t0, event=what))

    def _refuse(self, context, client: int, code: grpc.StatusCode, msg: str):
        self._event(client, f"error: {code.name}: {msg}")
        context.abort(code, msg)

    # ---------------------------------------------------------------- RPCs
    def Hello(self, request, context):
        c = int(request.client)
        if c not in self.allocation:
            self._refuse(context, c, grpc.StatusCode.INVALID_ARGUMENT, f"client: {c} is not one of {self.clients}")
        if request.vocab_size and request.vocab_size != self.verifier.vocab_size:
            self._refuse(context, c, grpc.StatusCode.INVALID_ARGUMENT,
                         f"vocab_size: draft has {request.vocab_size}, target has {self.verifier.vocab_size}")
        with self.cond:
            if c in self.active:
                msg = f"client: {c} is live (said Hello, not Bye yet); one process per client id"
                self._event(c, f"error: ALREADY_EXISTS: {msg}")
                live = True
            else:
                live = False
                token = secrets.token_hex(16)
                self._tokens[c] = token
                self.active.add(c)
                self.known.add(c)
                now = time.monotonic()
                self.last_seen[c] = self.last_activity = self.last_hello = now
                self.cond.notify_all()
        if live:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, msg)
        return pb.HelloReply(draft_length=self.allocation[c], vocab_size=self.verifier.vocab_size,
                             target_model=self.target_name, token=token, max_draft=self.max_draft)

    def _owns(self, c: int, token: str) -> bool:
        return bool(token) and secrets.compare_digest(self._tokens.get(c, ""), token)

    def Bye(self, request, context):
        c = int(request.client)
        if not self._owns(c, request.token):
            self._refuse(context, c, grpc.StatusCode.PERMISSION_DENIED, f"token: not the token Hello gave client {c}")
        with self.cond:
            self.active.discard(c)
            self._tokens.pop(c, None)
            sess = self._session_of.pop(c, None)
            if sess and sess not in self._in_flight:
                self.verifier.close(sess)
                self._owner.pop(sess, None)
            self.last_activity = time.monotonic()
            self.cond.notify_all()
        return pb.ByeReply()

    def Verify(self, request, context):
        arrival = time.monotonic()
        c = int(request.client)
        if not self._owns(c, request.token):
            self._refuse(context, c, grpc.StatusCode.PERMISSION_DENIED,
                         f"token: not the token Hello gave client {c} (say Hello first)")
        try:
            slot = self._parse(request, arrival)
        except ValueError as err:
            self._refuse(context, c, grpc.StatusCode.INVALID_ARGUMENT, str(err))
        refused = None
        with self.cond:
            sess, owner = request.session, self._owner.get(request.session, c)
            if self.stopped.is_set():
                refused = (grpc.StatusCode.UNAVAILABLE, "server stopping")
            elif c not in self.active:
                refused = (grpc.StatusCode.FAILED_PRECONDITION,
                           f"client: {c} is not active (dropped, finished or never said Hello)")
            elif owner != c:
                refused = (grpc.StatusCode.PERMISSION_DENIED, f"session: {sess!r} belongs to another client")
            elif sess in self._in_flight:
                refused = (grpc.StatusCode.FAILED_PRECONDITION,
                           f"session: {sess!r} has a request in flight (one at a time)")
            elif self._session_of.get(c, sess) in self._in_flight:
                refused = (grpc.StatusCode.FAILED_PRECONDITION,
                           f"session: client {c} has session {self._session_of[c]!r} in flight")
            else:
                old = self._session_of.get(c)
                if old is not None and old != sess:
                    self.verifier.close(old)  # the client moved on to its next prompt
                    self._owner.pop(old, None)
                self._session_of[c], self._owner[sess] = sess, c
                self._in_flight.add(sess)
                self.last_seen[c] = self.last_activity = arrival
                self.queue.append(slot)
                self.cond.notify_all()
        if refused:
            self._refuse(context, c, *refused)
        context.add_callback(lambda: self._cancelled(slot))
        slot.done.wait()
        if slot.error:
            context.abort(*slot.error)
        return slot.reply

    def _cancelled(self, slot: _Slot) -> None:
        """The RPC ended (answered, or the client went away): a queued slot leaves the queue."""
        if slot.done.is_set():
            return
        with self.cond:
            if slot in self.queue:
                self.queue.remove(slot)
                self._fail([slot], grpc.StatusCode.CANCELLED, "client cancelled")
                self._event(slot.pending.client, "error: CANCELLED: the client went away while queued")
                self.cond.notify_all()

    def _parse(self, r, arrival: float) -> _Slot:
        req = request_from_wire(r, self.verifier.vocab_size, self.max_draft)
        known = r.session in self.verifier.sessions
        if not known and not req.new_tokens:
            raise ValueError(f"session: {r.session!r} is unknown and sends no prompt (new_tokens empty)")
        self.verifier.check(req)
        held = len(self.verifier.sessions[r.session].tokens) if known else 0
        total = held + len(req.new_tokens) + len(req.draft_ids)
        if self.max_positions and total > self.max_positions:
            raise ValueError(f"draft_ids: the session would reach {total} positions, the target has "
                             f"{self.max_positions} ({held} held + {len(req.new_tokens)} new + "
                             f"{len(req.draft_ids)} drafted)")
        s = len(req.draft_ids)
        cached = self.verifier.cached_length(r.session) if self.verifier.use_cache else 0
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
    def _fail(self, slots: list[_Slot], code: grpc.StatusCode, msg: str) -> None:
        for s in slots:
            s.error = (code, msg)
            self._in_flight.discard(s.pending.session)
            s.done.set()

    def _drop_dead(self, now: float) -> float:
        """Drop silent clients; returns when the next one would fall due."""
        waiting = {s.pending.client for s in self.queue}
        due = float("inf")
        for c in sorted(self.active - waiting):
            since = now - self.last_seen.get(c, now)
            if since > self.client_timeout:
                self.active.discard(c)
                self._event(c, f"dropped: no request for {self.client_timeout:g} s")
            else:
                due = min(due, self.client_timeout - since)
        return due

    def _loop(self) -> None:
        try:
            self._schedule()
        except BaseException as err:  # never silently: stop the server, say why, fail the waiters
            self.failure = err
            print(f"specedge server: the scheduling thread crashed, stopping: {err!r}", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            self._event(-1, f"stopped: scheduling thread crashed: {err!r}")
            with self.cond:
                left = self.queue + [s for s in self._busy if not s.done.is_set()]
                self._fail(left, grpc.StatusCode.INTERNAL, f"server crashed: {err!r}")
                self.queue = []
        finally:
            self.stopped.set()

    def _schedule(self) -> None:
        everyone = set(self.clients)
        while not self.stopped.is_set():
            with self.cond:
                now = time.monotonic()
                wake = self._drop_dead(now)
                if self.stop_when_done and self.known >= everyone and not self.active and not self.queue:
                    break  # every client finished or was dropped
                idle = 0.0 if self.drafters_loading else now - self.last_activity
                if idle > self.idle_timeout:
                    self._event(-1, f"stopped: idle for {self.idle_timeout:g} s (no Hello or request)")
                    break
                wake = min(wake, self.idle_timeout - idle)
                batch = []
                barrier_open = not self.start_barrier or self.known >= everyone \
                    or now - self.last_hello > self.client_timeout
                if self.queue and not barrier_open:  # rounds begin once every client said Hello
                    wake = min(wake, self.client_timeout - (now - self.last_hello))
                elif self.queue:
                    given = list(self.queue)
                    try:
                        batch = self.former.form([s.pending for s in given], now - self.t0, frozenset(self.active))
                    except Exception as err:  # the former's bug fails the requests it was given, not the server
                        self._policy_failed("batch former", err, given)
                        continue
                    if not batch:
                        wake = min(wake, POLL)
                if not batch:
                    self.cond.wait(timeout=max(wake, 1e-3))
                    continue
                chosen = {id(p) for p in batch}
                slots = [s for s in self.queue if id(s.pending) in chosen]
                self.queue = [s for s in self.queue if id(s.pending) not in chosen]
                self._busy = slots
            self._verify(slots)
            self._busy = []

    def _policy_failed(self, what: str, err: Exception, slots: list[_Slot]) -> None:
        label = getattr(self.former if what == "batch former" else self.allocator, "label", "")
        msg = f"{what} {label} failed: {type(err).__name__}: {err}"
        self.policy_errors.append(msg)
        for s in slots:
            self._event(s.pending.client, f"error: INTERNAL: {msg}")
        with self.cond:
            self.queue = [s for s in self.queue if s not in slots]
            self._fail(slots, grpc.StatusCode.INTERNAL, msg)

    def _verify(self, slots: list[_Slot]) -> None:
        t_start, cpu0 = time.monotonic(), time.thread_time()
        try:
            results = self.verifier.verify([s.request for s in slots])
        except Exception as err:  # a bad batch must not take the server down
            self._policy_failed("verification", err, slots)
            return
        t_verify = time.monotonic() - t_start
        t_verify_cpu = time.thread_time() - cpu0   # this thread's CPU time: t_verify less what others took
        outcomes = [Outcome(s.pending.client, s.pending.n_draft, r.accepted, r.accept_prob_sum)
                    for s, r in zip(slots, results)]
        try:
            alloc = self.allocator.update(outcomes)
        except Exception as err:
            self._policy_failed("draft allocator", err, slots)
            return
        with self.cond:
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
                                 up=p.arrival + self.t0 - s.t_sent, accept_prob_sum=r.accept_prob_sum,
                                 n_new=p.n_new, n_cached=p.n_cached, t_verify_cpu=t_verify_cpu))
            with self.cond:
                self.last_seen[p.client] = time.monotonic()
                self._in_flight.discard(p.session)
            s.done.set()
