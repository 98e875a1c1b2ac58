"""The event loop every simulation runs on (``serving.sim.engine``): SimPy's order (time, priority, sequence), the
three ways a process waits (a sleep, an event, a wake), ``run(until)`` stopping before an event *at* ``until``,
and the collector restored as it was."""
import gc

import pytest

from specedge.serving.sim.engine import EventLoop, gc_paused
from specedge.serving.interfaces import Times


def test_sleeps_interleave_by_time_then_by_scheduling_order():
    loop, seen = EventLoop(), []

    def proc(name, naps):
        for d in naps:
            yield float(d)
            seen.append((loop.now, name))

    loop.process(proc("a", [1, 1]))
    loop.process(proc("b", [2, 0.5]))
    loop.run()
    # both wake at 2.0: b scheduled its 2 s sleep at t = 0, a its second 1 s sleep at t = 1, so b goes first
    assert seen == [(1.0, "a"), (2.0, "b"), (2.0, "a"), (2.5, "b")]


def test_an_event_resumes_its_waiters_with_its_value_when_it_succeeds():
    loop, seen = EventLoop(), []
    ev = loop.event()

    def waiter(name):
        got = yield ev
        seen.append((loop.now, name, got))

    def trigger():
        yield 3.0
        ev.succeed("v")

    loop.process(waiter("w1"))
    loop.process(waiter("w2"))
    loop.process(trigger())
    loop.run()
    assert seen == [(3.0, "w1", "v"), (3.0, "w2", "v")] and ev.triggered


def test_waiting_on_an_already_processed_event_resumes_at_once_with_its_value():
    loop, seen = EventLoop(), []
    ev = loop.event()
    ev.succeed(7)

    def late():
        yield 1.0
        got = yield ev          # processed at t = 0: no wait
        seen.append((loop.now, got))
        got = yield loop.timeout(0.5)
        seen.append((loop.now, got))

    loop.process(late())
    loop.run()
    assert seen == [(1.0, 7), (1.5, None)]


def test_wake_resumes_a_parked_generator_with_a_value_after_its_delay():
    loop, seen = EventLoop(), []

    def parked():
        got = yield None
        seen.append((loop.now, got))
        got = yield None        # parked again: nobody wakes it, the run ends
        seen.append(("never", got))

    g = parked()

    def waker():
        yield 1.0
        loop.wake(g, "hello", delay=2.0)

    loop.process(g)
    loop.process(waker())
    loop.run()
    assert seen == [(3.0, "hello")]


def test_a_process_start_comes_before_a_timeout_due_at_the_same_instant():
    loop, seen = EventLoop(), []
    ev = loop.timeout(0.0)     # scheduled first, NORMAL priority

    def waiter():
        yield ev
        seen.append("timeout")

    def starter():
        seen.append("started")
        yield 0.0

    loop.process(waiter())     # both starts are URGENT: they run before the earlier-scheduled timeout
    loop.process(starter())
    loop.run()
    assert seen == ["started", "timeout"]


def test_run_until_stops_before_an_event_at_until_and_sets_the_clock():
    loop, seen = EventLoop(), []

    def ticks():
        for _ in range(5):
            yield 1.0
            seen.append(loop.now)

    loop.process(ticks())
    loop.run(until=3.0)
    assert seen == [1.0, 2.0] and loop.now == 3.0    # the tick due at exactly 3.0 has not run
    loop.run(until=3.5)
    assert seen == [1.0, 2.0, 3.0] and loop.now == 3.5
    loop.run()
    assert seen == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_times_defaults_cost_nothing_on_the_link_and_count_bytes():
    t = Times(draft=[lambda k: 0.1 * k], verify=lambda b: 1.0)
    assert (t.up(0, 3), t.down(0), t.bytes_up(3), t.bytes_down, t.send, t.shared_core) == (0.0, 0.0, 64, 50, None, False)


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_paused_restores_the_collector_as_it_was(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError):
            with gc_paused():
                raise RuntimeError("inside")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
