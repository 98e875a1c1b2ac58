"""The engine every simulation here runs on: SimPy's event order on a plain heap, and the times it consumes.

- ``EventLoop``: processes are generators yielding a number of seconds to sleep, ``None`` to wait for a
  ``wake``, or an ``Event``; entries are keyed (time, priority, sequence) exactly as SimPy orders them (it
  replaced ``simpy.Environment`` with every log unchanged: tests/unit/test_twin_golden.py).
- ``Times`` (``interfaces``): the seconds of each step of a round (drafting, the link each way, a batched verification),
  built from named time models (``serving.timemodels.time_models``) or fitted to a real run (``serving.analysis.validation``).
- ``gc_paused``: Python's cyclic collector off while a simulation runs.

The client and server processes (``serving.sim.processes``) run here, for the twin (``twin.simulate``: times from
models, outcomes drawn from traces) and the replay (``replay.replay``: a real run's measured times and outcomes).
"""
from __future__ import annotations

import gc
import heapq
import itertools
import math
from contextlib import contextmanager


# --------------------------------------------------------------------------- the event loop
class Event:
    """An event of ``EventLoop``: SimPy's ``Event`` reduced to what the twin uses (``succeed``,
    ``triggered``, the generators waiting on it and the value they get)."""
    __slots__ = ("loop", "callbacks", "value", "triggered")

    def __init__(self, loop: "EventLoop"):
        self.loop, self.callbacks, self.value, self.triggered = loop, [], None, False

    def succeed(self, value=None):
        self.triggered, self.value = True, value
        self.loop.schedule(self, 0.0, NORMAL)


URGENT, NORMAL = 0, 1   # SimPy's priorities: a process start comes before timeouts and successes


class EventLoop:
    """A plain heap event loop with SimPy's order: entries keyed (time, priority, sequence), the
    sequence counting schedulings, so events at one time run in the order SimPy runs them (its
    ``eid`` also counts events the twin never waits on, e.g. a process ending, which shifts no
    relative order). Processes are generators yielding the events they wait for, as in SimPy, a
    number of seconds to sleep (SimPy's ``yield env.timeout(d)``), or ``None`` to wait for ``wake``
    (SimPy's ``yield ev`` on an event only its waker succeeds). A sleep and a wake put the generator
    itself on the heap, with its value, at the point where SimPy would schedule the timeout or the
    succeeded event, so the order is the same without the event objects."""

    def __init__(self):
        self.now = 0.0
        self._heap: list = []
        self._seq = itertools.count()

    def schedule(self, event: Event, delay: float, priority: int):
        heapq.heappush(self._heap, (self.now + delay, priority, next(self._seq), event, None))

    def wake(self, gen, value, delay: float = 0.0):
        """Resume ``gen`` (waiting after ``yield None``) with ``value`` after ``delay`` seconds: as
        succeeding its event now, when it would sleep ``delay`` at once (the sleep's place in the order
        moves from its resumption to now, ahead of anything scheduled between for the same instant:
        the caller makes sure nothing is, see ``simulate``)."""
        heapq.heappush(self._heap, (self.now + delay, NORMAL, next(self._seq), gen, value))

    def event(self) -> Event:
        return Event(self)

    def timeout(self, delay: float) -> Event:
        ev = Event(self)
        ev.triggered = True
        self.schedule(ev, delay, NORMAL)
        return ev

    def process(self, gen):
        start = Event(self)
        start.triggered = True
        start.callbacks.append(gen)
        self.schedule(start, 0.0, URGENT)

    def _resume(self, gen, value):
        push, heap, seq = heapq.heappush, self._heap, self._seq
        while True:
            try:
                nxt = gen.send(value)
            except StopIteration:
                return
            if type(nxt) is float:                 # a sleep: the generator waits on the heap itself
                push(heap, (self.now + nxt, NORMAL, next(seq), gen, None))
                return
            if nxt is None:                        # waits for ``wake``
                return
            if nxt.callbacks is not None:          # not processed yet: wait for it
                nxt.callbacks.append(gen)
                return
            value = nxt.value                      # already processed: resume at once, as SimPy does

    def run(self, until: float | None = None):
        """Process events in order; with ``until``, stop before the first event at or after it (SimPy
        schedules its stop event at ``until`` with urgent priority, ahead of the others there)."""
        heap, pop, push, seq, resume = self._heap, heapq.heappop, heapq.heappush, self._seq, self._resume
        end = math.inf if until is None else until
        while heap:
            if heap[0][0] >= end:
                self.now = until
                return
            now, _, _, target, value = pop(heap)
            self.now = now
            if type(target) is not Event:         # a sleeping or woken generator: ``_resume`` inline (keep both alike)
                while True:
                    try:
                        nxt = target.send(value)
                    except StopIteration:
                        break
                    if type(nxt) is float:
                        push(heap, (now + nxt, NORMAL, next(seq), target, None))
                        break
                    if nxt is None:
                        break
                    if nxt.callbacks is not None:
                        nxt.callbacks.append(target)
                        break
                    value = nxt.value
                continue
            callbacks, target.callbacks = target.callbacks, None
            for gen in callbacks:
                resume(gen, target.value)


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector off inside: a simulation allocates a few objects per round
    (freed by reference counting; its only cycles are its processes), and the collector's passes over
    the growing log cost 10-25 % of a run. Results do not depend on it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
