"""specedge.timing: the one definition of a measurement (warm-ups, samples, fastest, summary)."""
import time

import numpy as np
import pytest

from specedge import timing


def test_samples_run_warmups_untimed_then_keep_every_timed_call():
    calls = []

    def once():
        calls.append(len(calls))
        return float(len(calls))          # 1, 2, 3, ... : the k-th call "takes" k seconds

    t = timing.samples(once, repeats=3, warmup=2)
    assert len(calls) == 5
    assert t.tolist() == [3.0, 4.0, 5.0]  # the two warm-ups are not among the samples
    assert timing.fastest(iter([9.0, 4.0, 2.0, 7.0]).__next__, repeats=3, warmup=1) == 2.0


def test_summary_reports_the_fastest_sample_and_the_spread():
    s = timing.summary([0.3, 0.1, 0.2, 0.6])
    assert s["seconds"] == 0.1 and s["max"] == 0.6 and s["runs"] == 4
    assert s["median"] == pytest.approx(0.25) and s["mean"] == pytest.approx(0.3)
    assert s["std"] == pytest.approx(np.std([0.3, 0.1, 0.2, 0.6], ddof=1))
    assert s["cv"] == pytest.approx(s["std"] / 0.3)
    assert timing.summary([0.5]) | {} == dict(seconds=0.5, median=0.5, mean=0.5, std=0.0, max=0.5, cv=0.0, runs=1)


@pytest.mark.parametrize("bad", [[], [0.1, float("nan")], [[0.1, 0.2]], [0.1, float("inf")]])
def test_summary_refuses_empty_or_non_finite_samples(bad):
    with pytest.raises(ValueError, match="finite seconds"):
        timing.summary(bad)


@pytest.mark.parametrize("repeats, warmup, message", [(0, 1, "repeats"), (2.5, 1, "repeats"), (3, -1, "warmup")])
def test_samples_refuse_bad_counts_before_running(repeats, warmup, message):
    ran = []
    with pytest.raises(ValueError, match=message):
        timing.samples(lambda: ran.append(1) or 0.0, repeats, warmup)
    assert ran == []


def test_stopwatch_times_its_block_even_when_it_raises():
    with timing.stopwatch() as t:
        time.sleep(0.02)
    assert 0.02 <= t.seconds < 10.0
    with pytest.raises(RuntimeError):
        with timing.stopwatch() as t2:
            raise RuntimeError("inside")
    assert t2.seconds >= 0
