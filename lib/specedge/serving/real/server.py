"""The verification server: gRPC (127.0.0.1 by default), a queue, and one thread that forms and verifies batches.

Each ``Verify`` call is checked (``codec.request_from_wire`` and the limits below), enqueued, and its
handler blocks on an event until its batch is verified. The scheduling thread asks the ``BatchFormer``
for a batch whenever it is woken (an arrival, a client leaving, a verification ending, a timeout
falling due), verifies it in one forward pass (``Verifier``; several when it holds more than
``max_pass_tokens`` context tokens), feeds the outcomes to the ``DraftAllocator`` and
answers each request with S(t+1). Policies get ``now`` from here: they have no clock of their own.

What no client can do (each answered with a status naming the field; refused calls are counted, and
only the first few of a kind become event rows, so a flood costs no memory):
- send a request a policy or the verifier cannot take: non-finite, negative or unnormalised draft
  probabilities, a temperature outside [0, 100], more than ``max_draft`` drafts, more tokens than the
  target has positions, a follow-up without the last verdict's token first in ``new_tokens``, a round
  that does not increase, an ``slo_class`` outside 0..1000 or a ``t_sent`` later than its receipt
  (``INVALID_ARGUMENT``; checked against the session's state before the request joins a batch);
  ``t_sent`` is only checked not to decrease within a Hello: the client's clock is never compared with
  the server's (the drafter converts it with the offset it measured at Hello);
- act for another client: with a ``key`` (the deployment's secret; ``run`` makes one, ``server`` writes
  one to a file only its user can read) only a client that knows it can say Hello, so no outsider can
  claim an id; ``Hello`` returns a token that every ``Verify`` and ``Bye`` must carry, a client id that
  is live cannot be taken over, and sessions are kept under the Hello that opened them, so no one can
  continue or squat another client's session and a new Hello never continues an old one
  (``PERMISSION_DENIED`` / ``ALREADY_EXISTS``); ``Bye(finished=True)`` from a Hello that verified no
  round counts as "finished nothing", and clients the server has not seen cannot end anything;
- make the server parse or queue without bound: one request per client in flight, refused before its
  payload is parsed (``FAILED_PRECONDITION``); a batch runs in forward passes of at most
  ``max_pass_tokens`` context tokens; the sessions' caches hold at most ``max_cache_bytes``: beyond it
  only *idle* sessions are evicted (their client sent nothing for longer than the round wait), those
  over their client's share (``max_cache_bytes`` / clients) first, then the least recently used; its
  client's next request on it gets ``RESOURCE_EXHAUSTED`` (the shipped drafter then opens a new session
  with its whole context). An active session is never evicted: when only active ones are left, new
  sessions are refused (``RESOURCE_EXHAUSTED``, "retry") until memory frees up, and the active ones may
  grow past the cap by their own remaining positions;
- fail others: a pass that raises is retried one request at a time and only the request that raises
  fails (``INTERNAL``, counted in ``request_errors``); a policy that raises fails only the requests it
  was given (``INTERNAL``, its message), and the server goes on; anything else that escapes the loop
  stops the server with a line on stderr, an event row and ``failure`` set (the CLI exits non-zero);
- outlive its welcome: ``Bye`` or a drop (``client_timeout`` s with no request while it owes one) ends
  the client's Hello and its session and frees the cache; a request queued then is answered
  ``CANCELLED``, one being verified is freed when its pass ends.

Sync rounds wait only for live clients that owe a request: every client that said Hello before the
first round (the start barrier opens once every client said Hello, or ``client_timeout`` s after the
first Hello, and never closes again), and a later client from its first request on; and each round
waits for a missing client at most the round wait (``round_wait`` s, or ``ROUND_WAIT_FACTOR`` times the
median gap between a reply and the next request over the clients' recent rounds), after which it goes
on without it: the late request joins the next round. A client late ``max_late_rounds`` rounds in a row
is dropped (each late round is an event row, counted after the first few). The server stops
by itself ``idle_timeout`` seconds after the last Hello or request (never while ``loading(True)``), or
when every client finished (``Bye(finished=True)``) or was given up (``forget``) (``stop_when_done``).
"""
from __future__ import annotations

import ctypes
import math
import secrets
import sys
import threading
import time
import traceback
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from .. import slo
from . import wire_pb2 as pb
from . import wire_pb2_grpc as pb_grpc
from .codec import host_port, request_from_wire
from ..interfaces import BatchFormer, DraftAllocator, Outcome, Pending
from .verifier import Request, Verifier

MAX_DRAFT = 64        # default cap on drafted tokens per request (a dense request is then 2 MB at |V| = 8192)
POLL = 0.005          # s: a former that returned no batch is asked again after this (WISP waits for time)
CLIENT_TIMEOUT = 10.0  # s: a client that sends nothing for this long while it owes a request is dropped
MAX_PASS_TOKENS = 4096  # context tokens (cached + fed) of one forward pass; a batch beyond it runs in several
MAX_CACHE_BYTES = 1e9   # bytes of the sessions' KV caches; beyond it the least recently used idle one is evicted
MAX_SLO_CLASS = 1000    # tok/s: the largest token-speed class a request may name
EVENT_ROWS_PER_KIND = 10  # refused calls / ended Hellos of one kind logged as rows; the rest only counted
ROUND_WAIT_FLOOR = 1.0   # s: the adaptive round wait is never shorter than this (a loaded host stalls a drafter
                         # for tenths of a second; a sync round of our own drafters should not go on without it)
ROUND_WAIT_FACTOR = 4.0  # the adaptive round wait: this many times the median gap of the clients' recent rounds
MAX_LATE_ROUNDS = 20     # consecutive rounds a client may miss under sync rounds before it is dropped
# The longest wait any timeout, delay or deadline may name (s, about 11.6 days): far below what the code
# that takes them can represent (threading.TIMEOUT_MAX, ~9.2e9 s here; gRPC's deadline, int64 ns since
# the epoch, ~7e9 s from now; time.sleep's int64 ns), so a flag inside it never fails later.
MAX_SECONDS = 1e6
assert MAX_SECONDS < threading.TIMEOUT_MAX


def _libc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):   # not glibc: nothing to hand back
        return None


_MALLOC_TRIM = _libc_trim()


def trim_heap() -> None:
    """Hand the heap's free pages back to the OS. glibc keeps them after the large transient tensors of
    a pass (and per gRPC thread arena after parsing payloads), so without this a server's resident
    memory stays at its high-water mark after the sessions that caused it ended."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, msg: str):
        super().__init__(msg)
        self.code, self.msg = code, msg


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
    ended: bool = False           # its client ended (Bye, drop) while it was being verified


@dataclass
class _Client:
    """One client between its Hello and its end (Bye, drop, given up): its token, its session, its
    request in flight."""
    token: str
    epoch: int                    # the Hello's number: session keys are namespaced by it
    session: str = ""             # the client's name of its live session ("" none)
    key: str = ""                 # the verifier's key of it
    reserved: bool = False        # a Verify of this client is being parsed
    slot: _Slot | None = None     # its request queued or being verified
    last_round: int = -1
    evicted: set[str] = field(default_factory=set)
    verified: int = 0             # rounds verified under this Hello
    t_sent: float = 0.0           # the last request's t_sent (may not decrease)
    last_reply: float = 0.0       # monotonic: its last reply went out (or its Hello)
    missed: int = 0               # batches formed without it since its last request (it owed one)
    late: int = 0                 # rounds in a row its request came after the round wait

    @property
    def busy(self) -> bool:
        return self.reserved or self.slot is not None


class VerificationServer(pb_grpc.VerifierServicer):
    def __init__(self, verifier: Verifier, former: BatchFormer, allocator: DraftAllocator,
                 clients: list[int], *, label: str = "", target_name: str = "",
                 client_timeout: float = CLIENT_TIMEOUT, idle_timeout: float = 120.0, max_draft: int = MAX_DRAFT,
                 stop_when_done: bool = True, start_barrier: bool = True, max_pass_tokens: int = MAX_PASS_TOKENS,
                 max_cache_bytes: float = MAX_CACHE_BYTES, key: str | None = None,
                 round_wait: float | None = None, max_late_rounds: int = MAX_LATE_ROUNDS):
        for name, v in (("idle_timeout", idle_timeout), ("client_timeout", client_timeout),
                        ("max_pass_tokens", max_pass_tokens), ("max_cache_bytes", max_cache_bytes),
                        ("round_wait", 1.0 if round_wait is None else round_wait)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name}: must be a finite value > 0, got {v!r}")
        for name, v in (("idle_timeout", idle_timeout), ("client_timeout", client_timeout),
                        ("round_wait", round_wait or 0.0)):
            if v > MAX_SECONDS:
                raise ValueError(f"{name}: at most {MAX_SECONDS:g} s, got {v!r}")
        if max_draft < 1:
            raise ValueError(f"max_draft: must be >= 1, got {max_draft}")
        if isinstance(max_late_rounds, bool) or not isinstance(max_late_rounds, int) or max_late_rounds < 1:
            raise ValueError(f"max_late_rounds: must be an integer >= 1, got {max_late_rounds!r}")
        if key is not None and not (isinstance(key, str) and len(key) >= 16):
            raise ValueError("key: must be a string of at least 16 characters (secrets.token_hex(16)) or None")
        self.verifier, self.former, self.allocator = verifier, former, allocator
        self.label, self.target_name = label, target_name
        self.client_timeout, self.idle_timeout = float(client_timeout), float(idle_timeout)
        self.max_draft, self.stop_when_done, self.start_barrier = int(max_draft), stop_when_done, start_barrier
        self.max_pass_tokens, self.max_cache_bytes = int(max_pass_tokens), float(max_cache_bytes)
        self.key, self.round_wait, self.max_late_rounds = key, round_wait, int(max_late_rounds)
        self.max_positions = int(getattr(verifier.model.config, "max_position_embeddings", 0) or 0)
        self.clients = list(clients)
        self.allocation = dict(allocator.initial(self.clients))
        self.active: set[int] = set()     # live: said Hello, not ended yet
        self.rounds: set[int] = set()     # the live clients a round waits for (the formers' ``active``)
        self.known: set[int] = set()      # said Hello at least once, or were given up (``forget``)
        self.finished: set[int] = set()   # their last Hello ended with Bye(finished=True)
        self.given_up: set[int] = set()   # ``forget``: their process ended
        self.ended: dict[int, str] = {}   # how each client's last Hello ended
        self.interrupted: dict[int, int] = {}  # Hellos of each client that ended before its last round
        self.last_seen: dict[int, float] = {}
        self.queue: list[_Slot] = []
        self.cond = threading.Condition()
        self.log: list[dict] = []
        self.events: list[dict] = []
        self.refusals: dict[tuple, int] = {}   # (client or "other", code, field) -> refused calls
        self.event_counts: dict[tuple, int] = {}  # (client, kind) -> ended Hellos, evictions, late rounds
        self.request_errors = 0                # requests the verifier raised on (each failed alone)
        self.evictions = 0
        self.late_rounds = 0                   # rounds that went on without a late client
        self._gaps: list[float] = []           # recent gaps between a reply and the client's next request
        self.passes = 0
        self.batches = 0
        self.t0 = time.monotonic()
        self.last_activity = self.t0
        self.first_hello: float | None = None
        self.barrier_open = not start_barrier
        self.stopped = threading.Event()
        self.failure: BaseException | None = None   # what ended the scheduling thread, if it crashed
        self.policy_errors: list[str] = []          # policies that raised (their requests failed)
        self._clients: dict[int, _Client] = {}
        self._epochs = 0
        self._last_used: dict[str, float] = {}      # verifier key -> last verification (eviction order)
        self._expect: dict[str, int] = {}           # verifier key -> its last verdict's token
        self._busy: list[_Slot] = []                # the batch being verified
        self._trim_due = False                      # a session ended: hand its memory back when idle
        self.drafters_loading = False
        self._thread = threading.Thread(target=self._loop, name="verifier", daemon=True)
        self._grpc = None
        self.port = None
        self.key_file = None   # the file ``write_key`` wrote (removed at stop)

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
            bound = self._grpc.add_insecure_port(host_port(host, port))
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
        with self.cond:
            for c in sorted(self._clients):
                self._end(c, "live when the server stopped (mid-generation)")
            for (who, code, what), n in sorted(self.refusals.items(), key=str):
                if n > EVENT_ROWS_PER_KIND:
                    self._event(who if isinstance(who, int) else -1,
                                f"error: {code}: {n} calls refused ({what}), the first {EVENT_ROWS_PER_KIND} logged")
            self.refusals.clear()
            for (who, kind), n in sorted(self.event_counts.items(), key=str):
                if n > EVENT_ROWS_PER_KIND:
                    self._event(who, f"counted: {n} '{kind}' events, the first {EVENT_ROWS_PER_KIND} logged")
            self.event_counts.clear()
        if self.key_file is not None:
            try:
                self.key_file.unlink()
            except OSError:
                pass

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
        """Give up on ``client`` (its process ended): its session ends, no round waits for it any more."""
        with self.cond:
            self.known.add(client)
            self.given_up.add(client)
            if client in self._clients:
                self._end(client, f"dropped: {why}")
            else:
                self._event(client, f"dropped: {why}")
            self.cond.notify_all()

    def unfinished(self) -> dict[int, str]:
        """{client: why} for every client whose last Hello did not end with its last round."""
        with self.cond:
            return {c: self.ended.get(c, "no verified round: never said Hello")
                    for c in self.clients if c not in self.finished}

    def write_key(self, path) -> None:
        """Write the key to ``path``, readable by this user only (the drafters of a two-terminal set-up
        read it from there; another machine's get a copy); removed when the server stops."""
        import os
        from pathlib import Path
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(self.key + "\n")
        os.replace(tmp, path)
        self.key_file = path

    def _event(self, client: int, what: str) -> None:
        self.events.append(dict(system="real", policy=self.label, client=client,
                                end=time.monotonic() - self.t0, event=what))

    def _bounded_event(self, client: int, what: str) -> None:
        """An event row, but only the first ``EVENT_ROWS_PER_KIND`` of a (client, kind) (kind: the text
        before its first colon); the rest are counted (one summary row when the server stops)."""
        kind = (client, what.split(":", 1)[0])
        n = self.event_counts[kind] = self.event_counts.get(kind, 0) + 1
        if n <= EVENT_ROWS_PER_KIND:
            self._event(client, what)

    def _end(self, c: int, why: str, finished: bool = False) -> None:
        """End client ``c``'s Hello (caller holds ``cond``): its session is closed and its cache freed,
        a queued request is answered CANCELLED, one being verified is freed once its pass ends."""
        cl = self._clients.pop(c, None)
        if cl is None:
            return
        self.active.discard(c)
        self.rounds.discard(c)
        if finished and cl.slot is None and cl.verified:
            self.finished.add(c)
            self.ended[c] = "finished"
        else:
            if finished and not cl.verified:
                why = "finished nothing: said Bye(finished=true) without a verified round"
            self.ended[c] = why
            self.interrupted[c] = self.interrupted.get(c, 0) + 1
            self._bounded_event(c, why)
        slot = cl.slot
        if slot is not None and slot in self.queue:
            self.queue.remove(slot)
            self._fail([slot], grpc.StatusCode.CANCELLED, f"client {c} ended ({why}) with this request queued")
        if slot is not None and slot in self._busy:
            slot.ended = True     # its session is closed when its pass ends
        elif cl.key:
            self._close(cl.key)
        self._trim_due = True
        self.last_activity = time.monotonic()
        self.cond.notify_all()

    def _close(self, key: str) -> None:
        self.verifier.close(key)
        self._last_used.pop(key, None)
        self._expect.pop(key, None)

    def _count(self, client: int, code: grpc.StatusCode, msg: str) -> None:
        """Count a refused call; only the first ``EVENT_ROWS_PER_KIND`` of a kind become event rows."""
        who = client if client in self.allocation else "other"
        kind = (who, code.name, msg.split(":", 1)[0])
        with self.cond:
            n = self.refusals[kind] = self.refusals.get(kind, 0) + 1
        if n <= EVENT_ROWS_PER_KIND:
            self._event(client if who != "other" else -1, f"error: {code.name}: {msg}")

    def _refuse(self, context, client: int, code: grpc.StatusCode, msg: str):
        self._count(client, code, msg)
        context.abort(code, msg)

    # ---------------------------------------------------------------- RPCs
    def Hello(self, request, context):
        c = int(request.client)
        if c not in self.allocation:
            self._refuse(context, c, grpc.StatusCode.INVALID_ARGUMENT, f"client: {c} is not one of {self.clients}")
        if self.key is not None and not secrets.compare_digest(request.key.encode(), self.key.encode()):
            self._refuse(context, c, grpc.StatusCode.PERMISSION_DENIED,
                         "key: not this server's key (the drafters of `run` get it from run; a `server` writes "
                         "it to its --key-file, which a drafter reads)")
        if request.vocab_size and request.vocab_size != self.verifier.vocab_size:
            self._refuse(context, c, grpc.StatusCode.INVALID_ARGUMENT,
                         f"vocab_size: draft has {request.vocab_size}, target has {self.verifier.vocab_size}")
        with self.cond:
            live = c in self._clients or self.stopped.is_set()
            if not live:
                self._epochs += 1
                token = secrets.token_hex(16)
                self._clients[c] = _Client(token, self._epochs, last_reply=time.monotonic())
                self.active.add(c)
                self.known.add(c)
                self.finished.discard(c)
                self.ended.pop(c, None)
                if not self.barrier_open:   # the first round waits for it; a late joiner, from its first request
                    self.rounds.add(c)
                now = time.monotonic()
                self.first_hello = now if self.first_hello is None else self.first_hello
                self.last_seen[c] = self.last_activity = now
                self.cond.notify_all()
        if live:
            if self.stopped.is_set():
                self._refuse(context, c, grpc.StatusCode.UNAVAILABLE, "server stopping")
            self._refuse(context, c, grpc.StatusCode.ALREADY_EXISTS,
                         f"client: {c} is live (said Hello, not Bye yet); one process per client id")
        return pb.HelloReply(draft_length=self.allocation[c], vocab_size=self.verifier.vocab_size,
                             target_model=self.target_name, token=token, max_draft=self.max_draft,
                             max_positions=self.max_positions, t_server=time.monotonic())

    def _owner(self, c: int, token: str) -> _Client | None:
        cl = self._clients.get(c)
        return cl if cl is not None and token and secrets.compare_digest(cl.token, token) else None

    def Bye(self, request, context):
        c = int(request.client)
        with self.cond:
            cl = self._owner(c, request.token)
            if cl is not None:
                why = "aborted: said Bye before its last round" + (" with a request in flight" if cl.busy else "")
                self._end(c, why, finished=bool(request.finished))
        if cl is None:
            self._refuse(context, c, grpc.StatusCode.PERMISSION_DENIED,
                         f"token: not the token Hello gave client {c} (or its Hello ended)")
        return pb.ByeReply()

    def Verify(self, request, context):
        arrival = time.monotonic()
        c = int(request.client)
        refused = None
        with self.cond:   # the cheap checks first: no payload is parsed for a call refused anyway
            cl = self._owner(c, request.token)
            if cl is None:
                refused = (grpc.StatusCode.PERMISSION_DENIED,
                           f"token: not the token Hello gave client {c} (say Hello first; a drop or Bye ends it)")
            elif self.stopped.is_set():
                refused = (grpc.StatusCode.UNAVAILABLE, "server stopping")
            elif cl.busy:
                refused = (grpc.StatusCode.FAILED_PRECONDITION,
                           f"session: client {c} has a request in flight (one at a time)")
            else:
                cl.reserved = True
        if refused:
            self._refuse(context, c, *refused)
        try:
            slot = self._parse(request, arrival, cl)
        except (ValueError, _Refused) as err:
            with self.cond:
                cl.reserved = False
                self.last_seen[c] = arrival   # refused, but alive (e.g. retrying a new session while memory is full)
            code, msg = (err.code, err.msg) if isinstance(err, _Refused) else (grpc.StatusCode.INVALID_ARGUMENT, str(err))
            self._refuse(context, c, code, msg)
        with self.cond:
            cl.reserved = False
            if self._clients.get(c) is not cl or self.stopped.is_set():
                refused = (grpc.StatusCode.CANCELLED, f"client: {c} ended while its request was read")
            else:
                if cl.session != request.session:   # the client moved on to its next prompt
                    if cl.key:
                        self._close(cl.key)
                    cl.session, cl.key = request.session, slot.request.session
                cl.slot, cl.last_round, cl.t_sent = slot, int(request.round), float(request.t_sent)
                if cl.verified:
                    self._gaps = (self._gaps + [arrival - cl.last_reply])[-64:]
                self.rounds.add(c)
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

    def _parse(self, r, arrival: float, cl: _Client) -> _Slot:
        """The checked slot of request ``r`` of client ``cl`` (reserved by the caller: its session
        cannot change meanwhile); raises ValueError (or _Refused) naming the field."""
        req = request_from_wire(r, self.verifier.vocab_size, self.max_draft)
        if r.session in cl.evicted:
            raise _Refused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                           f"session: {r.session!r} was evicted (the server's session memory, "
                           f"{self.max_cache_bytes / 1e6:g} MB, was full); start a new session with the whole context")
        if int(r.round) <= cl.last_round:
            raise ValueError(f"round: must increase from request to request, got {r.round} after {cl.last_round}")
        if r.slo_class and not (float(r.slo_class).is_integer() and 1 <= r.slo_class <= MAX_SLO_CLASS):
            raise ValueError(f"slo_class: must be 0 (none) or a whole number of tok/s in 1..{MAX_SLO_CLASS}, "
                             f"got {r.slo_class}")
        if r.t_sent < cl.t_sent:
            raise ValueError(f"t_sent: {r.t_sent} is earlier than this client's previous request's "
                             f"({cl.t_sent}); it may not decrease within a Hello")
        key = cl.key if r.session == cl.session else f"{int(r.client)}.{cl.epoch}/{r.session}"
        sess = self.verifier.sessions.get(key)
        if sess is None and not req.new_tokens:
            raise ValueError(f"session: {r.session!r} is unknown and sends no prompt (new_tokens empty)")
        if sess is None:
            self._admit(cl, key, len(req.new_tokens) + len(req.draft_ids))
        req.session, req.stream = key, r.session
        self.verifier.check(req)
        expect = self._expect.get(key)
        if expect is not None and req.new_tokens[0] != expect:
            raise ValueError(f"new_tokens: a follow-up starts with the last verdict's token {expect}, "
                             f"got {req.new_tokens[0]}")
        held = len(sess.tokens) if sess is not None else 0
        total = held + len(req.new_tokens) + len(req.draft_ids)
        if self.max_positions and total > self.max_positions:
            raise ValueError(f"draft_ids: the session would reach {total} positions, the target has "
                             f"{self.max_positions} ({held} held + {len(req.new_tokens)} new + "
                             f"{len(req.draft_ids)} drafted)")
        s = len(req.draft_ids)
        cached = self.verifier.cached_length(key) if self.verifier.use_cache else 0
        n_new = len(req.new_tokens) + s + (0 if self.verifier.use_cache else held)
        pend = Pending(client=int(r.client), session=key, round=int(r.round),
                       arrival=arrival - self.t0, n_draft=s, n_new=n_new, n_cached=cached,
                       slo_class=int(r.slo_class) if r.slo_class else None, payload_bytes=r.ByteSize())
        if pend.slo_class:
            # eq (6): the device's drafting time is in the request, the network time is the uplink
            # just measured (same clock on loopback), taken twice for the reply
            alpha = float(r.alpha) if r.alpha > 0 else 1.0
            up = min(max(arrival - float(r.t_sent), 0.0), self.client_timeout) if r.t_sent else 0.0
            pend.deadline = pend.arrival + slo.budget(alpha, s, pend.slo_class, float(r.t_draft), 2 * up)
            pend.expected_tokens = slo.expected_tokens(alpha, s)
        return _Slot(pend, req, float(r.t_sent), float(r.t_draft), r.ByteSize())

    # ---------------------------------------------------------------- the scheduling thread
    def _fail(self, slots: list[_Slot], code: grpc.StatusCode, msg: str) -> None:
        for s in slots:
            s.error = (code, msg)
            cl = self._clients.get(s.pending.client)
            if cl is not None and cl.slot is s:
                cl.slot = None
            s.done.set()

    def _drop_dead(self, now: float) -> float:
        """Drop clients silent for ``client_timeout`` with no request in flight; returns when the next
        one would fall due."""
        due = float("inf")
        for c in sorted(self._clients):
            if self._clients[c].busy:
                continue
            since = now - self.last_seen.get(c, now)
            if since > self.client_timeout:
                self._end(c, f"dropped: no request for {self.client_timeout:g} s")
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
                if self.stop_when_done and (self.finished | self.given_up) >= everyone \
                        and not self._clients and not self.queue:
                    break  # every client finished, or its process was given up
                idle = 0.0 if self.drafters_loading else now - self.last_activity
                if idle > self.idle_timeout:
                    self._event(-1, f"stopped: idle for {self.idle_timeout:g} s (no Hello or request)")
                    break
                wake = min(wake, self.idle_timeout - idle)
                batch = []
                if not self.barrier_open and (self.known >= everyone or (
                        self.first_hello is not None and now - self.first_hello > self.client_timeout)):
                    self.barrier_open = True   # and stays open: a late joiner never closes it again
                if self.queue and not self.barrier_open:  # the first round waits for every client's Hello
                    wake = min(wake, self.client_timeout - (now - (self.first_hello or now)))
                elif self.queue:
                    given = list(self.queue)
                    pending, active = [s.pending for s in given], frozenset(self.rounds)
                    try:
                        batch = self.former.form(pending, now - self.t0, active)
                        late = self._late(now, given) if not batch else set()
                        if late:   # the round waited long enough for them: it goes on without them
                            batch = self.former.form(pending, now - self.t0, active - late)
                    except Exception as err:  # the former's bug fails the requests it was given, not the server
                        self._policy_failed("batch former", err, given)
                        continue
                    if batch and late:
                        self._record_late(late, now - self.t0 - min(p.arrival for p in pending))
                    if not batch:
                        waited = now - self.t0 - min(p.arrival for p in pending)
                        wake = min(wake, POLL, max(self._round_wait() - waited, 1e-3))
                trim = not batch and not self.queue and self._trim_due
                if trim:
                    self._trim_due = False
                elif not batch:
                    self.cond.wait(timeout=max(wake, 1e-3))
                    continue
                else:
                    chosen = {id(p) for p in batch}
                    slots = [s for s in self.queue if id(s.pending) in chosen]
                    self.queue = [s for s in self.queue if id(s.pending) not in chosen]
                    self._busy = slots
            if trim:   # idle, and a session ended since the last trim
                trim_heap()
                continue
            self._verify(slots)
            with self.cond:
                self._busy = []

    def _round_wait(self) -> float:
        """How long a round waits for a missing client (and how long a session may go without a request
        before it counts as idle): ``round_wait``, or ``ROUND_WAIT_FACTOR`` times the median gap between a
        reply and the client's next request over recent rounds (at least ``ROUND_WAIT_FLOOR``, at most
        ``client_timeout``; ``client_timeout`` before any gap was seen)."""
        if self.round_wait is not None:
            return self.round_wait
        if not self._gaps:
            return self.client_timeout
        med = sorted(self._gaps)[len(self._gaps) // 2]
        return min(self.client_timeout, max(ROUND_WAIT_FLOOR, ROUND_WAIT_FACTOR * med))

    def _late(self, now: float, given: list[_Slot]) -> set[int]:
        """The clients a round may go on without: they owe a request (live, none in flight) while the
        oldest queued request has waited longer than the round wait."""
        waited = now - self.t0 - min(s.pending.arrival for s in given)
        if waited <= self._round_wait():
            return set()
        return {c for c in self.rounds if c in self._clients and not self._clients[c].busy}

    def _record_late(self, late: set[int], waited: float) -> None:
        """A round went on without ``late``: each is reported (bounded rows), and dropped once it was late
        more than ``max_late_rounds`` rounds in a row."""
        self.late_rounds += 1
        for c in sorted(late):
            cl = self._clients[c]
            cl.missed += 1
            if cl.missed > 1:
                continue
            cl.late += 1
            self._bounded_event(c, f"late: a round went on without client {c} after {waited:.3g} s "
                                   f"(round wait {self._round_wait():.3g} s; {cl.late} late in a row)")
            if cl.late > self.max_late_rounds:
                self._end(c, f"dropped: late for {cl.late} rounds in a row (round wait {self._round_wait():.3g} s)")

    def _policy_failed(self, what: str, err: Exception, slots: list[_Slot]) -> None:
        label = getattr(self.former if what == "batch former" else self.allocator, "label", "")
        msg = f"{what} {label} failed: {type(err).__name__}: {err}"
        self.policy_errors.append(msg)
        for s in slots:
            self._event(s.pending.client, f"error: INTERNAL: {msg}")
        with self.cond:
            self.queue = [s for s in self.queue if s not in slots]
            self._fail(slots, grpc.StatusCode.INTERNAL, msg)

    def _passes(self, slots: list[_Slot]) -> list[list[_Slot]]:
        """The batch as forward passes of at most ``max_pass_tokens`` context tokens each (cached + fed;
        a request larger than that alone in its own pass), in the former's order."""
        out, size = [[]], 0
        for s in slots:
            n = s.pending.n_cached + s.pending.n_new
            if out[-1] and size + n > self.max_pass_tokens:
                out.append([])
                size = 0
            out[-1].append(s)
            size += n
        return out

    def _run_passes(self, slots: list[_Slot]) -> tuple[dict[int, object], dict[int, Exception]]:
        """Verify ``slots`` pass by pass; a pass that raises is retried one request at a time, so that
        only a request that raises alone fails. Returns ({id(slot): Result}, {id(slot): error})."""
        results, errors = {}, {}
        for chunk in self._passes(slots):
            try:
                for s, r in zip(chunk, self.verifier.verify([s.request for s in chunk])):
                    results[id(s)] = r
                self.passes += 1
                continue
            except Exception as err:  # noqa: BLE001 - one bad request must not fail its batch
                if len(chunk) == 1:
                    errors[id(chunk[0])] = err
                    continue
            for s in chunk:
                try:
                    results[id(s)] = self.verifier.verify([s.request])[0]
                    self.passes += 1
                except Exception as err:  # noqa: BLE001
                    errors[id(s)] = err
        return results, errors

    def _verify(self, slots: list[_Slot]) -> None:
        t_start, cpu0 = time.monotonic(), time.thread_time()
        results, errors = self._run_passes(slots)
        t_verify = time.monotonic() - t_start
        t_verify_cpu = time.thread_time() - cpu0   # this thread's CPU time: t_verify less what others took
        if errors:
            with self.cond:
                for s in slots:
                    if id(s) in errors:
                        err = errors[id(s)]
                        self.request_errors += 1
                        msg = (f"verification of this request failed (the rest of its batch was verified): "
                               f"{type(err).__name__}: {err}")
                        self._event(s.pending.client, f"error: INTERNAL: {msg}")
                        if s.ended:
                            self._close(s.pending.session)
                        self._fail([s], grpc.StatusCode.INTERNAL, msg)
            slots = [s for s in slots if id(s) not in errors]
            if not slots:
                return
        outcomes = [Outcome(s.pending.client, s.pending.n_draft, results[id(s)].accepted,
                            results[id(s)].accept_prob_sum) for s in slots]
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
        answered = []
        for s in slots:
            p, r = s.pending, results[id(s)]
            reply = pb.VerifyReply(accepted=r.accepted, token=r.token, bonus=r.bonus,
                                   next_draft_length=int(self.allocation.get(p.client, 0)), batch=batch,
                                   t_arrival=p.arrival + self.t0, t_start=t_start, t_verify=t_verify,
                                   accept_prob_sum=r.accept_prob_sum)
            reply.t_reply = time.monotonic()
            with self.cond:
                if s.ended:   # its client ended during the pass: free the session, answer CANCELLED
                    self._close(p.session)
                    self._fail([s], grpc.StatusCode.CANCELLED,
                               f"client {p.client} ended while this request was verified")
                    continue
                self._expect[p.session] = r.token
                self._last_used[p.session] = reply.t_reply
                s.reply = reply
                self.log.append(dict(system="real", policy=self.label, batch=batch, round=p.round,
                                     client=p.client, S=p.n_draft, accepted=r.accepted, tokens=r.accepted + 1,
                                     t_draft=s.t_draft, t_receive=last - first,
                                     t_queue=t_start - self.t0 - p.arrival, t_verify=t_verify,
                                     bytes_up=s.bytes_up, bytes_down=reply.ByteSize(),
                                     arrival=p.arrival, start=t_start - self.t0, end=reply.t_reply - self.t0,
                                     slo_class=p.slo_class, deadline=p.deadline, event="",
                                     up=p.arrival + self.t0 - s.t_sent if s.t_sent else float("nan"),
                                     accept_prob_sum=r.accept_prob_sum,
                                     n_new=p.n_new, n_cached=p.n_cached, t_verify_cpu=t_verify_cpu))
                self.last_seen[p.client] = time.monotonic()
                cl = self._clients.get(p.client)
                if cl is not None and cl.slot is s:
                    cl.slot = None
                    cl.verified += 1
                    cl.last_reply = reply.t_reply
                    cl.late = cl.late if cl.missed else 0
                    cl.missed = 0
                answered.append(s)
        with self.cond:
            self._evict()   # before the replies go out: a client never sees a cache over the cap
        for s in answered:
            s.done.set()

    def _bytes_per_token(self) -> float:
        """KV-cache bytes of one cached token (0 without a cache)."""
        if not self.verifier.use_cache:
            return 0.0
        held = [(s.nbytes, len(s.tokens)) for s in self.verifier.sessions.values() if s.nbytes]
        if held:
            return sum(b for b, _ in held) / max(1, sum(n for _, n in held))
        cfg = self.verifier.model.config
        heads = getattr(cfg, "num_attention_heads", 1)
        kv = getattr(cfg, "num_key_value_heads", None) or heads
        dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
        elem = next(self.verifier.model.parameters()).element_size()
        return 2.0 * cfg.num_hidden_layers * kv * dim * elem

    def _admit(self, cl: _Client, key: str, n_tokens: int) -> None:
        """A new session of ``n_tokens`` tokens for ``cl``: room is made by evicting idle sessions; refused
        (``RESOURCE_EXHAUSTED``, "retry") when active sessions hold the memory. A session alone always fits."""
        with self.cond:
            per_token = self._bytes_per_token()
            need = n_tokens * per_token
            others = sum(self.verifier.cache_bytes(k) for k in self._last_used if k != cl.key)
            others += per_token * sum(s.pending.n_new for s in self.queue + self._busy   # admitted, not verified yet
                                      if s.pending.session not in self._last_used)
            if others == 0 or others + need <= self.max_cache_bytes:
                return
            others = self._evict(others + need, exclude=cl) - need
            if others > 0 and others + need > self.max_cache_bytes:
                raise _Refused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"session: the server's session memory ({self.max_cache_bytes / 1e6:g} MB) is full "
                               f"of active sessions ({others / 1e6:.1f} MB held, this one needs {need / 1e6:.1f} MB); "
                               f"nothing of this client's was lost: retry this request shortly")

    def _evict(self, total: float | None = None, exclude: _Client | None = None) -> float:
        """While the sessions' caches hold more than ``max_cache_bytes`` (``total``: what they would hold),
        end idle sessions: of clients with no request in flight that sent nothing for longer than the
        round wait, those over their client's share (``max_cache_bytes`` / clients) first, then the least
        recently used (the client's next request on it: RESOURCE_EXHAUSTED). An active session is never
        evicted. Returns what the caches (would) hold then."""
        if total is None:
            total = sum(self.verifier.cache_bytes(k) for k in self._last_used)
        if total <= self.max_cache_bytes:
            return total
        now, wait = time.monotonic(), self._round_wait()
        share = self.max_cache_bytes / max(1, len(self.clients))
        idle = sorted((self.verifier.cache_bytes(cl.key) <= share, self._last_used[cl.key], c)
                      for c, cl in self._clients.items()
                      if cl.key in self._last_used and not cl.busy and cl is not exclude
                      and now - max(cl.last_reply, self.last_seen.get(c, 0.0)) > wait)
        for _, _, c in idle:
            if total <= self.max_cache_bytes:
                break
            cl = self._clients[c]
            total -= self.verifier.cache_bytes(cl.key)
            self._close(cl.key)
            cl.evicted.add(cl.session)
            self._bounded_event(c, f"evicted: session {cl.session!r}, idle for over {wait:.3g} s (the sessions' "
                                   f"caches held over {self.max_cache_bytes / 1e6:g} MB)")
            cl.session = cl.key = ""
            self.evictions += 1
            self._trim_due = True
        return total
