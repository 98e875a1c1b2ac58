"""What flows between drafters, the server and its schedulers, and the two policy protocols.

A scheduler never sees tensors, sockets or clocks: the real server (``server``) and the SimPy
twin (``twin``) both describe each queued verification request as a ``Pending``, pass the current
time in seconds as ``now``, and report each verification back as an ``Outcome``. That is what lets
one policy object run unchanged in both. Both write the same per-round log, a ``LogRow`` per round.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Protocol, Sequence, runtime_checkable


@dataclass
class Pending:
    """One queued verification request, as a scheduler sees it.

    ``n_new`` counts the tokens the verifier must feed for it (tokens of the session it has not
    cached yet plus the drafted ones); ``n_cached`` the session's tokens already in its prefix cache
    (0 without a cache, e.g. SLED, or on a cold start). Times are seconds on the caller's clock.
    """
    client: int                      # index of the drafter
    session: str                     # one session per prompt being generated
    round: int                       # the client's round counter (0, 1, ...)
    arrival: float                   # when the server received it (a_i)
    n_draft: int                     # S: drafted tokens in this request (may be 0)
    n_new: int                       # tokens to feed: unseen committed/prompt tokens + drafts
    n_cached: int = 0                # tokens of the session already in the verifier's cache
    slo_class: int | None = None     # WISP token-speed class (tok/s), None when no SLO
    deadline: float | None = None    # d_i = a_i + tau_c (WISP eq 12), None when no SLO
    expected_tokens: float | None = None  # g_i: expected tokens this verification yields
    memory: float = 0.0              # m_i: bytes of KV this request needs (WISP eq 14)
    payload_bytes: int = 0           # request size on the wire
    key: int = field(default=-1)     # server-side handle, opaque to schedulers


@dataclass
class Outcome:
    """What one verification gave one client (the allocator's input, GOODSPEED line 14)."""
    client: int
    drafted: int                     # S_i(t)
    accepted: int                    # accepted draft tokens (0..drafted)
    accept_prob_sum: float           # sum_j min(1, p_j(s_j)/q_j(s_j)) over the drafted tokens (eq 3)
    finished: bool = False           # the client's session ended with this round

    @property
    def tokens(self) -> int:
        """Realised goodput x_i(t): accepted tokens plus the correction/bonus token (eq 4)."""
        return self.accepted + 1


@runtime_checkable
class BatchFormer(Protocol):
    """Which queued requests go into the next forward pass.

    ``form`` is called whenever the verifier is idle and the queue changed (an arrival, a client
    leaving, a verification ending). It returns the requests to verify now, or an empty list to
    wait for the next event. ``active`` is the set of clients still generating (a wait-for-all
    former needs it); it never blocks and never mutates ``queue``.
    """

    def form(self, queue: Sequence[Pending], now: float, active: frozenset[int]) -> list[Pending]:
        ...


@runtime_checkable
class DraftAllocator(Protocol):
    """S(t+1) for every client: the next draft length the server sends back with each reply."""

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        ...

    def update(self, outcomes: Sequence[Outcome]) -> dict[int, int]:
        """Take one round's outcomes (one per client verified) and return the next allocation
        for every client the allocator knows about."""
        ...


@runtime_checkable
class VerifyTimeModel(Protocol):
    """Seconds for one batched verification forward pass of ``batch``."""

    def __call__(self, batch: Sequence[Pending]) -> float:
        ...


@dataclass
class Times:
    """Seconds of each step. ``draft[c](k)``: client c's k draft-model passes (``sim.twin``'s module docstring: S
    tokens, plus the judged position when a stop rule ended the round); ``verify(batch)``: one
    batched verification; ``up(c, s)`` / ``down(c)``: the request and the reply on the link (the
    client's wait: latency + transmission); ``send(c)``: the server's own time putting the reply on
    the link (the log's ``t_send``, what the real server measures; ``None``: ``down(c)``); ``shared_core``: ``draft[c](k)`` is CPU work on one core every
    drafter shares (``processes.SharedCore``: processor sharing), not seconds of a device of its own; then ``post(c)``
    (``None``: none) is client c's CPU work on that core once its reply is in (taking it in, committing it), done
    before its next drafting and outside the round's time, drawn with the round's ``draft[c]``; ``core_slice``: that
    core's discipline, None for processor sharing, else seconds of a round-robin time slice (``processes.SlicedCore``);
    ``core_queued``: client c's ``post(c)`` and its next drafting are one job on that core, and the round's time counts
    from when the job first runs (its wait for the core before it, outside the round), not from when the post-reply
    work is done; ``core_speed(t)``: (None: 1) the shared core's slowness at time t, a factor on the work of every
    job added to it then, common to all the drafters on it (``measured_times``: the machine's state, measured);
    ``core_period()``: (None: none; not with ``core_speed``) the same slowness drawn once per busy period of that core:
    a value drawn when a job is added to the idle core, held for every job added while it stays busy;
    ``wake_first``: with ``core_slice``, that core serves a job added to it (a drafter woken) first, alone, for a slice
    once the running jobs' slice ends, and the rest of the time processor-shared (``processes.WakeFirstCore``);
    ``starts``: (None: every client at 0, the server's queue open at once) seconds after the run's first client each
    client starts its first round, the server opening its queue once the last has started (the real runs' start
    barrier: ``serving.real.server`` waits for every drafter's Hello, and the drafter processes load one after
    another); ``intake(into)``: (None: none) the seconds a request that reaches the server ``into`` seconds after the
    start of the pass running then waits before the server takes it in (the real server's handler thread shares its
    core, and the interpreter, with the pass: ``serving.log.intake_delays``); ``wake(busy)``: (None: ``down``, and the
    next drafting as soon as ``post`` is done) on the shared core, the seconds from a pass's end until its reply is in
    the client's hands and from then until its next drafting may begin (its ``post`` work on the core meanwhile), when
    ``busy`` other clients are busy on the drafters' side (the real drafters wait for their one core:
    ``serving.log.wake_waits``); ``wake_stamps``: ``wake``'s draws are read on the drafters' own clocks only, where
    the real drafters stamp a round's start and end, and the work on the core runs as without them: a round ends when
    its reply is in the drafter's hands on its clock (the pass's end plus the drawn way, not before the reply
    came), and the next begins once the drawn wait in hand has passed (not before the core took its drafting up, nor
    so late that its work could not be done in time). On one core the real drafters whose replies come in at the
    same time take them in one after another, turn by turn, and those served last catch up on the core: their
    requests arrive as those of processor sharing, their rounds start and end late on their clocks. ``host``: (None:
    none) the host's state that the other draws read (``timemodels.host_state.Process``), given the simulation's
    clock (its ``bind``) before the run starts; ``steal()``: (None: none) the seconds a request the server takes in
    during a pass adds to that pass (the real server's handler thread runs on the pass's core:
    ``serving.log.pass_intakes``)."""
    draft: Sequence[Callable[[int], float]]
    verify: Callable[[Sequence[Pending]], float]
    up: Callable[[int, int], float] = lambda c, s: 0.0
    down: Callable[[int], float] = lambda c: 0.0
    bytes_up: Callable[[int], int] = lambda s: 40 + 8 * s
    bytes_down: int = 50
    send: Callable[[int], float] | None = None
    shared_core: bool = False
    post: Callable[[int], float] | None = None
    core_slice: float | None = None
    core_queued: bool = False
    core_speed: Callable[[float], float] | None = None
    core_period: Callable[[], float] | None = None
    wake_first: bool = False
    starts: Sequence[float] | None = None
    intake: Callable[[float], float] | None = None
    wake: Callable[[int], tuple[float, float]] | None = None
    wake_stamps: bool = False
    host: object | None = None
    steal: Callable[[], float] | None = None


REPLY_BYTES = 50   # a VerifyReply (accepted, token, bonus, next S, batch, 5 doubles): the twin's default


class LogRow(NamedTuple):
    """One row of the per-round log: one verified (client, round), written alike by the real run, the twin, the
    replay and the centralized baseline (one row per generated token there); the log's columns are these fields
    in this order (``LOG_COLUMNS``). ``serving.log.frame`` makes the log of a batch of rows. Seconds are on the
    run's own clock (0 when it started); a field a system cannot know holds 0 / NaN / empty (its module says
    which)."""
    system: str                 # "real", "twin", "replay"
    policy: str                 # allocator / batch former label, e.g. "GOODSPEED", "Fixed-S", "WISP"
    batch: int                  # index of the verification batch (forward pass) the request went into
    round: int                  # the client's round counter (0, 1, ...)
    client: int                 # index of the drafter
    S: int                      # tokens drafted this round (the allocated draft length, or fewer)
    accepted: int               # tokens of the S drafts accepted
    tokens: int                 # tokens committed this round (accepted + 1, fewer at the end of a session)
    t_draft: float              # s: the drafter's drafting time this round
    t_receive: float            # s: from the batch's first arrival to its last (GOODSPEED's receiving time)
    t_queue: float              # s: this request's wait from its arrival to the batch start
    t_verify: float             # s: the batch's verification forward pass (+ acceptance)
    t_send: float               # s: the server replying (serialisation + send) to this client
    t_round: float              # s: the client's wall time for the round, draft start to reply received
    bytes_up: int               # bytes: the request's payload
    bytes_down: int             # bytes: the reply's payload
    arrival: float              # s: the request reached the server
    start: float                # s: the batch's verification started
    end: float                  # s: the reply was sent
    slo_class: int | None       # tok/s: the client's WISP token-speed class, empty without an SLO
    deadline: float | None      # s: the request's deadline (WISP eq 12), empty without an SLO
    event: str                  # "" for a verified round; "dropped: <why>" / "error: <field>" rows say what happened


# The per-round log's columns: ``LogRow``'s fields, in its order.
LOG_COLUMNS = list(LogRow._fields)
