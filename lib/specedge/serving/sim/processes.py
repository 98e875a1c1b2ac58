"""The serving simulation's two processes, written once: a client (a drafter with one request in flight) and
the verification server. The twin (``twin.simulate``) and the replay (``replay.replay``) run these same
processes on ``engine.EventLoop``; they differ only in where a client's rounds come from (its ``rounds``):

- ``twin.ModelledRounds``: drafting, link and reply times from time models, outcomes drawn from traces;
- ``replay.LoggedRounds``: a real run's measured times and outcomes, round by round.

A client's ``rounds`` object gives its rounds as a generator, ``feed()``, that the client process drives: it
yields the client's own seconds before a round (only where ``gaps`` is true: the replay's time between rounds),
then the round's drafting + uplink seconds (or, on the drafters' shared core, ``SharedCore`` or ``SlicedCore``: (CPU
work before the send, uplink seconds, CPU work once the reply is in, done before the next round drafts: a real round
ends when its reply is in, the drafter commits it after)); it is sent the time the request reaches the server and yields the
``Pending`` request; it is sent (the verdict, the round's seconds) once the reply is in the client's hands and
goes on to the next round, or yields None when the client's stream ended. The server asks the client's
``verdict(p, b, start, end, tv, first, last)`` for its answer to a verified request (the value the client is
sent, the accepted count and eq (3)'s sum for the allocator, the seconds until the reply reaches the client);
``after_reply`` is None where those seconds hold the reply's whole way back, else the seconds the client still
waits once woken. A generator keeps a client's state in its locals: the twin's rounds cost what its inline
process cost.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Callable

import numpy as np

from .engine import NORMAL, EventLoop
from ..interfaces import BatchFormer, DraftAllocator, Outcome, Pending


class Simulation:
    """What the processes share: the loop, the queue of requests, the clients still drafting, the
    allocation the allocator last gave, the server while it waits for a request, its latest pass (for a request's
    wait for the server's intake during one: ``interfaces.Times.intake``, and what the requests taken in during it
    add to it: ``interfaces.Times.steal``), and the stop flag."""

    def __init__(self, allocator: DraftAllocator, n_clients: int, core_slice: float | None = None,
                 core_queued: bool = False, core_speed: Callable[[float], float] | None = None,
                 wake_first: bool = False, starts=None, intake: Callable[[float], float] | None = None,
                 wake: Callable[[int], tuple[float, float]] | None = None, wake_stamps: bool = False,
                 core_period: Callable[[], float] | None = None, steal: Callable[[], float] | None = None):
        self.loop = EventLoop()
        self.starts = starts        # seconds before each client's first round (``interfaces.Times.starts``), or None
        self.intake = intake        # a request's wait for the server's intake during a pass (``Times.intake``), or None
        self.passing = (0.0, 0.0)   # the server's latest pass: (its start, its end)
        self.steal = steal          # the seconds a request taken in during a pass adds to it (``Times.steal``), or None
        self.stolen = 0.0           # what the requests taken in during the running pass added to it, not yet run
        self.wake = wake            # a reply's way and its client's wait in hand, given the others busy (``Times.wake``), or None
        self.busy = 0               # clients busy on the drafters' side: from their reply's pass end to their request's arrival
        self.in_hand: dict[int, float] = {}   # per client, its drawn wait from its reply in hand to its next drafting
        # ``wake`` read on the drafters' own clocks only (``Times.wake_stamps``): per client, (when its reply is in its
        # hands on its clock, its wait in hand), drawn as its pass ends
        self.wake_stamps = bool(wake_stamps)
        self.stamp: dict[int, tuple[float, float]] = {}
        self.queue: list[Pending] = []
        self.active: set[int] = set()
        self.alloc = dict(allocator.initial(list(range(n_clients))))
        self.idle: list = []        # the server's process while it waits for a request (empty while it works)
        self.stopped = False
        self.clients: dict[int, Client] = {}
        # used only by clients whose rounds yield (work, uplink): processor sharing, or time slices of ``core_slice`` s
        self.core = (SharedCore(self.loop) if core_slice is None else
                     WakeFirstCore(self.loop, core_slice) if wake_first else SlicedCore(self.loop, core_slice))
        if core_speed is not None and core_period is not None:
            raise ValueError("core_speed, core_period: one of the two (the core's slowness per time, or per busy period)")
        if core_speed is not None:  # the core's slowness when a job is added: its work scaled by it
            self.core = _Slowed(self.core, core_speed)
        elif core_period is not None:   # the same, drawn once per busy period of the core
            self.core = _PeriodSlowed(self.core, core_period)
        # a client's post-reply work and next drafting as one job on the core, its round from when it first runs
        self.core_queued = bool(core_queued)

    def notify(self):
        """Wake the waiting server now, where SimPy schedules the succeeded event it waits on."""
        if self.idle:
            self.loop.wake(self.idle.pop(), None)

    def run(self, server: "Server", rounds, until: float | None = None):
        """A client process for each rounds object of ``rounds`` (a list, or a mapping client -> rounds, in
        its order), then the server's, run to the end (or ``until`` seconds)."""
        items = rounds.items() if isinstance(rounds, dict) else enumerate(rounds)
        self.clients = {i: Client(self, i, r) for i, r in items}
        self.active.update(self.clients)
        for c in self.clients.values():
            self.loop.process(c.gen)
        server.gen = server.process()
        self.loop.process(server.gen)
        self.loop.run(until=until)


class SharedCore:
    """One processor the drafters share (the real runs pin every drafter to one core): a drafting of ``work``
    seconds of CPU progresses at 1 / (the number of draftings in progress), processor sharing, so that drafters
    drafting together finish together, each later than alone. ``add(gen, work)``: the client ``gen`` is woken
    when its work is done, sent the time its job first ran (here: when it was added, every job runs at once). A completion is scheduled as the loop's sleeping generator (an object with ``send``);
    one made stale by a later arrival is dropped (its ``token`` no longer the current one)."""

    def __init__(self, loop: EventLoop):
        self.loop, self.jobs, self.last, self.token = loop, {}, 0.0, 0
        self.started: dict = {}

    def _advance(self):
        now, jobs = self.loop.now, self.jobs
        if jobs:
            done = (now - self.last) / len(jobs)
            for g in jobs:
                jobs[g] -= done
        self.last = now

    def _schedule(self):
        self.token += 1
        if self.jobs:
            first = min(self.jobs.values())
            delay = max(first, 0.0) * len(self.jobs)
            heapq.heappush(self.loop._heap, (self.loop.now + delay, NORMAL, next(self.loop._seq), _Done(self, self.token), None))

    def idle(self) -> bool:
        return not self.jobs

    def add(self, gen, work: float):
        self._advance()
        self.jobs[gen] = float(work)
        self.started[gen] = self.loop.now
        self._schedule()

    def done(self, token: int):
        if token != self.token:
            return
        self._advance()
        finished = [g for g, w in self.jobs.items() if w <= 1e-12]
        for g in finished:
            del self.jobs[g]
            self.loop.wake(g, self.started.pop(g))
        self._schedule()


# The drafters' core as the kernel runs it: the real runs' drafters are processes pinned to one core under Linux's
# fair scheduler, which runs one at a time for a slice. Its length is the kernel's, not fitted: the real runs were
# measured on Linux 6.18 (EEVDF), whose base slice is ``sysctl_sched_base_slice`` = 0.75 ms normalised
# (kernel/sched/fair.c, ``normalized_sysctl_sched_base_slice = 750000ULL``), scaled at boot by
# ``get_update_sysctl_factor()`` = 1 + ilog2(min(online CPUs, 8)) under the default logarithmic
# ``sched_tunable_scaling``: 2 online CPUs give 1.5 ms (the same rule scaled CFS's ``sched_min_granularity_ns``
# before 6.6). This host exposes neither ``/sys/kernel/debug/sched/base_slice_ns`` nor a ``/proc/sys/kernel/sched_*``
# slice to read back, so the value is the kernel's documented default for its CPU count.
KERNEL_BASE_SLICE_S = 0.75e-3


def kernel_slice(cpus: int = 2, base: float = KERNEL_BASE_SLICE_S) -> float:
    """The fair scheduler's slice (s) on a host of ``cpus`` online CPUs: ``base`` x (1 + floor(log2(min(cpus, 8))))."""
    if cpus < 1:
        raise ValueError(f"cpus: must be >= 1, got {cpus}")
    return base * (1 + (min(int(cpus), 8).bit_length() - 1))


DRAFTER_CORE_SLICE_S = kernel_slice(2)   # the real runs' host: 2 online CPUs (a 2-core AMD EPYC, Zen 4)


class SlicedCore:
    """One processor the drafters share, run in time slices of ``slice_s`` seconds, round-robin: the job at the head
    of the queue runs alone at full speed until its work is done or its slice ends with others waiting, then goes to
    the back; a new job joins the back. So drafters that start together finish one after another, a slice apart,
    where ``SharedCore`` (processor sharing, the limit of a slice towards 0) finishes them together. A job alone runs to
    its end; one arriving then cuts it at the end of the slice it is in. ``add(gen, work)`` as ``SharedCore``'s: the
    client is sent the time its job first ran (its wait in the queue before it is the time before that)."""

    def __init__(self, loop: EventLoop, slice_s: float):
        if not slice_s > 0:
            raise ValueError(f"slice_s: must be > 0 seconds, got {slice_s}")
        self.loop, self.slice, self.token = loop, float(slice_s), 0
        self.queue: deque = deque()     # [gen, work left when it last started running, first ran]; the head runs
        self.since = 0.0                # when the head started running
        self.until = 0.0                # when its run ends (its work done, or its slice)

    def _run(self, end: float):
        self.token += 1
        self.until = end
        heapq.heappush(self.loop._heap, (end, NORMAL, next(self.loop._seq), _Done(self, self.token), None))

    def _start(self):
        now = self.loop.now
        self.since = now
        head = self.queue[0]
        if head[2] is None:
            head[2] = now
        self._run(now + (min(head[1], self.slice) if len(self.queue) > 1 else head[1]))

    def idle(self) -> bool:
        return not self.queue

    def add(self, gen, work: float):
        q = self.queue
        q.append([gen, max(float(work), 0.0), None])
        if len(q) == 1:
            self._start()
        elif len(q) == 2:                                # the head ran alone: it keeps the slice it is in
            now, since = self.loop.now, self.since
            boundary = since + self.slice * ((now - since) // self.slice + 1)
            if boundary < self.until:
                self._run(boundary)

    def done(self, token: int):
        if token != self.token:
            return
        q = self.queue
        head = q.popleft()
        head[1] -= self.loop.now - self.since
        if head[1] <= 1e-12:
            self.loop.wake(head[0], head[2])
        else:
            q.append(head)
        if q:
            self._start()


class WakeFirstCore:
    """One processor the drafters share as the kernel's fair scheduler (EEVDF) serves a task that wakes: placed with the
    earliest deadline, it runs next, alone, for up to one slice (``slice_s``), then shares the core with the others
    (processor sharing, ``SharedCore``'s), and it does not cut the running ones short (``RUN_TO_PARITY``): they keep
    the core to the end of the slice they are in, slices counted from when they began running without a break. Jobs
    woken together take their first slices in the order they woke; the shared jobs stand still meanwhile.
    ``add(gen, work)`` as ``SharedCore``'s: the client is sent the time its job first ran (its first slice's start)."""

    def __init__(self, loop: EventLoop, slice_s: float):
        if not slice_s > 0:
            raise ValueError(f"slice_s: must be > 0 seconds, got {slice_s}")
        self.loop, self.slice, self.token = loop, float(slice_s), 0
        self.fresh: deque = deque()     # woken jobs in their order: [gen, work left, first ran, its slice's start]
        self.jobs: dict = {}            # the shared jobs: gen -> [work left, first ran]
        self.hold = None                # the woken head waits until then (the shared jobs' slice ends), or None
        self.since = 0.0                # when the shared jobs began running without a break
        self.last = 0.0                 # when the running work last advanced

    def _pool_runs(self) -> bool:
        return bool(self.jobs) and (not self.fresh or self.hold is not None)

    def _advance(self):
        now = self.loop.now
        dt = now - self.last
        if dt > 0:
            if self._pool_runs():
                done = dt / len(self.jobs)
                for j in self.jobs.values():
                    j[0] -= done
            elif self.fresh:
                self.fresh[0][1] -= dt
        self.last = now

    def _schedule(self):
        self.token += 1
        now, ends = self.loop.now, []
        if self.fresh and self.hold is None:
            head = self.fresh[0]
            if head[2] is None:
                head[2] = head[3] = now
            ends.append(now + max(min(head[1], self.slice - (now - head[3])), 0.0))
        if self.hold is not None:
            ends.append(self.hold)
        if self._pool_runs():
            ends.append(now + max(min(j[0] for j in self.jobs.values()), 0.0) * len(self.jobs))
        if ends:
            heapq.heappush(self.loop._heap, (min(ends), NORMAL, next(self.loop._seq), _Done(self, self.token), None))

    def idle(self) -> bool:
        return not self.fresh and not self.jobs

    def add(self, gen, work: float):
        self._advance()
        now = self.loop.now
        if not self.fresh and self.jobs:    # the shared jobs keep the core to the end of their slice
            self.hold = self.since + self.slice * ((now - self.since) // self.slice + 1)
        self.fresh.append([gen, max(float(work), 0.0), None, None])
        self._schedule()

    def done(self, token: int):
        if token != self.token:
            return
        self._advance()
        now, pool_ran = self.loop.now, self._pool_runs()
        if pool_ran:
            for g in [g for g, j in self.jobs.items() if j[0] <= 1e-12]:
                self.loop.wake(g, self.jobs.pop(g)[1])
        if self.hold is not None and (now >= self.hold - 1e-15 or not self.jobs):
            self.hold = None                # the slice is over, or nothing shares the core: the woken head runs
        elif self.fresh and self.hold is None:
            head = self.fresh[0]
            if head[1] <= 1e-12:
                self.fresh.popleft()
                self.loop.wake(head[0], head[2])
            elif now - head[3] >= self.slice - 1e-12:   # its slice is over: it shares the core from now
                self.fresh.popleft()
                self.jobs[head[0]] = [head[1], head[2]]
        if self._pool_runs() and not pool_ran:
            self.since = now
        self._schedule()


class _Slowed:
    """A drafters' core (``SharedCore``, ``SlicedCore`` or ``WakeFirstCore``) whose speed varies in time: a job added at t does
    ``speed(t)`` times its work (the machine's state when the drafting starts, common to every drafter on the core)."""
    __slots__ = ("core", "speed", "loop")

    def __init__(self, core, speed: Callable[[float], float]):
        self.core, self.speed, self.loop = core, speed, core.loop

    def add(self, gen, work: float):
        self.core.add(gen, work * self.speed(self.loop.now))


class _PeriodSlowed:
    """A drafters' core whose speed is drawn once per busy period: a job added to the idle core draws ``draw()``, and
    every job added while the core stays busy does that many times its work (the drafters that share the core at a
    time share its state)."""
    __slots__ = ("core", "draw", "value")

    def __init__(self, core, draw: Callable[[], float]):
        self.core, self.draw, self.value = core, draw, 1.0

    def add(self, gen, work: float):
        if self.core.idle():
            self.value = self.draw()
        self.core.add(gen, work * self.value)


class _Done:
    """A scheduled completion of ``SharedCore`` or ``SlicedCore`` on the loop's heap: resumed like a generator, it
    ends at once."""
    __slots__ = ("core", "token")

    def __init__(self, core, token: int):
        self.core, self.token = core, token

    def send(self, _):
        self.core.done(self.token)
        raise StopIteration


class Client:
    """A drafter: draft a round (its rounds' ``feed``), send it, wait for the verdict, commit it, repeat
    until its rounds end or the simulation stops."""
    __slots__ = ("sim", "idx", "rounds", "gen")

    def __init__(self, sim: Simulation, idx: int, rounds):
        self.sim, self.idx, self.rounds = sim, idx, rounds
        self.gen = self.process()

    def process(self):
        sim, rounds = self.sim, self.rounds
        loop, queue, idle, wake = sim.loop, sim.queue, sim.idle, sim.loop.wake
        gaps, after = rounds.gaps, rounds.after_reply   # after: None, or seconds to wait once woken
        feed = rounds.feed()
        send = feed.send
        out = next(feed)                         # the first round's first sleep
        queued, intake = sim.core_queued, sim.intake
        post = 0.0                               # the shared core's work once the last reply was in
        if sim.starts is not None and sim.starts[self.idx] > 0:
            yield float(sim.starts[self.idx])    # the client starts later than the run's first
        sim.busy += 1
        received = loop.now                      # when the last reply was in its hands
        stamps, stamp = sim.wake_stamps, sim.stamp
        seen, hand = received, None              # on the drafter's own clock (``Times.wake_stamps``): the last reply
                                                 # in its hands (then this round's drafting start), its wait in hand
        while not sim.stopped:
            if gaps:
                yield out                        # the client's own time before the round
                out = next(feed)
            t0 = loop.now
            if type(out) is tuple:               # (work on the drafters' shared core, the uplink, work once the reply is in)
                if queued:                       # the last reply's work and this drafting as one job: the round
                    sim.core.add(self.gen, post + out[0])   # starts when it first runs (sent by the core)
                    t0 = yield None
                else:
                    if post > 0:                 # the last reply taken in and committed, before this round drafts
                        sim.core.add(self.gen, post)
                        yield None
                        t0 = loop.now
                    if sim.in_hand:              # and not before the drawn wait in hand has passed
                        rest = received + sim.in_hand.pop(self.idx, 0.0) - loop.now
                        if rest > 0:
                            yield rest
                            t0 = loop.now
                    sim.core.add(self.gen, out[0])
                    yield None
                    if stamps:                   # on its clock the drafting began once the wait in hand had passed,
                        # not before the core took it up, nor later than leaves its work's time before it is done
                        seen = t0 if hand is None else max(t0, min(seen + hand, loop.now - out[0]))
                out, post = out[1], out[2]
            yield out                            # drafting, then the uplink
            if intake is not None:               # reached the server during a pass: it waits for the server's intake
                began, ends = sim.passing
                if began <= loop.now < ends:     # a pass runs from its start to its end (``log.running_pass``)
                    wait = intake(loop.now - began)
                    if wait > 0:
                        yield wait
            if sim.steal is not None:            # taken in during a pass: its handler's CPU is taken from the pass
                began, ends = sim.passing
                if began < loop.now < ends:      # as ``log.pass_intakes`` counts the real runs'
                    sim.stolen += sim.steal()
            queue.append(send(loop.now))         # the request, as the server receives it
            sim.busy -= 1
            if idle:
                wake(idle.pop(), None)
            value = yield None                   # woken by the server with its verdict
            if after is not None:
                yield after()
            received = loop.now
            if stamps:                           # the reply in its hands on its clock: not before it came
                began, (at, hand) = seen, stamp.pop(self.idx, (received, None))
                seen = max(received, at)
                out = send((value, seen - began))
            else:
                out = send((value, loop.now - t0))   # the round committed: the next round's first sleep
            if out is None:                      # its stream ended
                sim.busy -= 1
                sim.active.discard(self.idx)
                sim.notify()
                return


class Server:
    """The verification server: form a batch of the queue (the batch former, given ``now`` and the clients
    still drafting), verify it (``verify``: its seconds), answer each request (its client's ``verdict``),
    give the outcomes to the allocator, repeat while a client drafts. ``barrier``: seconds before it opens
    its queue (None: at once); ``dispatch``: seconds it takes to start on an arrival after waiting for one (one value, or
    values drawn by ``rng`` per wake-up);
    ``turnaround``: seconds between passes, one value or values drawn by ``rng`` per pass; ``rounds``: stop
    the simulation after that many batches; ``on_batch(batch, allocation)`` after each batch."""

    def __init__(self, sim: Simulation, former: BatchFormer, allocator: DraftAllocator, verify: Callable, *,
                 barrier: float | None = None, dispatch: float = 0.0, turnaround=None, rng=None,
                 rounds: int | None = None, on_batch=None):
        self.sim, self.former, self.allocator, self.verify = sim, former, allocator, verify
        self.barrier, self.dispatch, self.turnaround, self.rng = barrier, dispatch, turnaround, rng
        self.rounds, self.on_batch = rounds, on_batch
        self.batches = 0
        self.gen = None

    def process(self):
        sim = self.sim
        loop, queue, active, alloc, clients = sim.loop, sim.queue, sim.active, sim.alloc, sim.clients
        push, heap, seq = heapq.heappush, loop._heap, loop._seq
        verify, form, allocator, on_batch, rounds = self.verify, self.former.form, self.allocator, self.on_batch, self.rounds
        static = getattr(allocator, "static", False)    # update() returns initial()'s mapping every round
        turns = self.turnaround
        verdicts = {i: c.rounds.verdict for i, c in clients.items()}
        woken = sim.wake                                 # a reply's way and the wait in hand, drawn (or None)
        gens = {i: c.gen for i, c in clients.items()}
        if self.barrier is not None:
            yield float(self.barrier)
        now_active = frozenset(active)
        b = 0
        while active and not sim.stopped:
            if len(now_active) != len(active):           # clients only ever leave
                now_active = frozenset(active)
            batch = form(list(queue), loop.now, now_active) if queue else []
            if not batch:
                sim.idle.append(self.gen)
                yield None
                wake = self._dispatch()
                if wake > 0:
                    yield wake
                continue
            if len(batch) == len(queue):                 # a batch is a subset of the queue: all of it
                queue.clear()
            else:
                chosen = {p.client for p in batch}       # one request in flight per client
                queue[:] = [p for p in queue if p.client not in chosen]
            start = loop.now
            tv = verify(batch)
            sim.passing = (start, start + float(tv))
            yield float(tv)
            if sim.steal is not None:                    # the pass runs on for what the requests taken in took
                while sim.stolen > 0:
                    extra, sim.stolen = sim.stolen, 0.0
                    sim.passing = (start, loop.now + extra)
                    yield extra
                tv = loop.now - start
            arrivals = [p.arrival for p in batch]
            first, last = min(arrivals), max(arrivals)
            outcomes = []
            now = loop.now
            sim.busy += len(batch)                       # its clients busy from now, taking their replies in
            for p in batch:
                c = p.client
                value, n, aps, delay = verdicts[c](p, b, start, now, tv, first, last)
                if woken is not None and sim.wake_stamps:   # the same, read on the drafter's clock only
                    way, hand = woken(sim.busy - 1)
                    sim.stamp[c] = (now + way, hand)
                elif woken is not None:                  # the reply's way and the wait in hand, as busy as now
                    delay, sim.in_hand[c] = woken(sim.busy - 1)
                if not static:
                    outcomes.append(Outcome(c, p.n_draft, n, aps))
                # the client resumes ``delay`` seconds from now: pushed directly, which orders as SimPy's
                # succeed-then-timeout unless the server's next sleep ends at exactly that time (the only thing
                # scheduled in between). Nothing else is scheduled while a batch is answered.
                push(heap, (now + delay, NORMAL, next(seq), gens[c], value))
            if not static:
                alloc.update(allocator.update(outcomes))
            if on_batch is not None:
                on_batch(b, dict(alloc))
            b += 1
            self.batches = b
            if rounds is not None and b >= rounds:
                sim.stopped = True
            if turns is not None:
                turn = float(turns[0] if len(turns) == 1 else turns[self.rng.integers(len(turns))])
                if turn > 0:
                    yield turn


    def _dispatch(self) -> float:
        """Seconds from an arrival to the start of work after waiting: ``dispatch``, or one of its values drawn."""
        d = self.dispatch
        if np.ndim(d) == 0:
            return float(d)
        return float(d[0] if len(d) == 1 else d[self.rng.integers(len(d))])


def turnarounds(turnaround) -> np.ndarray:
    """``turnaround`` as a non-empty array of seconds (none measured: one of 0 s)."""
    turns = np.atleast_1d(np.asarray(turnaround, float))
    return turns if len(turns) else np.zeros(1)
