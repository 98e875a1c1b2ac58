"""Claims over seeds: "A above B" only when the paired interval clears zero; a tie is a tie."""
import numpy as np
import pytest

from specedge import claims


def test_mean_interval_is_the_student_t_interval():
    m, lo, hi = claims.mean_interval([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and lo == pytest.approx(2.5 - 3.182446 * np.std([1, 2, 3, 4], ddof=1) / 2, rel=1e-5)
    assert hi - m == pytest.approx(m - lo)
    assert np.isnan(claims.mean_interval([1.0])[1])
    with pytest.raises(ValueError, match="values"):
        claims.mean_interval([])


def test_interval_above_needs_the_interval_to_clear_zero():
    a = [2.13, 2.11, 2.19, 2.08, 2.15]
    # a one-seed margin of +0.002 with spread across seeds is a tie, not "above"
    tie = claims.interval_above(a, [2.12, 2.14, 2.16, 2.10, 2.13])
    assert not tie and tie.evidence.startswith("tie")
    win = claims.interval_above(np.array(a) + 0.1, a)
    assert win and win.evidence.startswith("above")
    lose = claims.interval_above(a, np.array(a) + [0.1, 0.12, 0.09, 0.11, 0.1])
    assert not lose and lose.evidence.startswith("below")
    assert not claims.interval_above([1.0], [0.0])                  # one seed: no interval
    assert not claims.interval_above([1.0, 2.0], [0.0])             # unpaired
    assert not claims.interval_above([np.nan, 1.0], [0.0, 0.0])


def test_interval_argmax_fails_on_any_tie():
    base = np.array([2.1, 2.2, 2.15, 2.05])
    vals = {"GOODSPEED": base + 0.05, "Fixed-S": base + [0.06, 0.03, 0.07, 0.04], "Random-S": base - 0.3}
    c = claims.interval_argmax_is(vals, "GOODSPEED")
    assert not c and "vs Fixed-S: tie" in c.evidence and "vs Random-S: above" in c.evidence
    assert claims.interval_argmax_is({"GOODSPEED": base + 0.5, "Random-S": base}, "GOODSPEED")
    assert not claims.interval_argmax_is({"GOODSPEED": base}, "GOODSPEED")


def test_interval_at_most_holds_on_a_tie_and_fails_only_when_the_interval_clears_zero():
    # one seed's single violation (1 of 224 responses) against none: one pooled path says "above", the seeds a tie
    wisp, fcfs = [1 / 224, 0.0, 0.0], [0.0, 0.0, 0.0]
    assert not (np.mean(wisp) <= np.mean(fcfs))                      # the old single-path test fails it
    tie = claims.interval_at_most(wisp, fcfs)
    assert tie and tie.evidence.startswith("tie")
    assert claims.interval_at_most([0.0, 0.0, 0.0], fcfs).evidence.startswith("tie")   # all equal: a tie, no interval width
    below = claims.interval_at_most([0.01, 0.03, 0.02], [0.27, 0.29, 0.35])
    assert below and below.evidence.startswith("below")
    above = claims.interval_at_most([0.35, 0.15, 0.22], [0.18, 0.0, 0.05])
    assert not above and above.evidence.startswith("above")
    assert not claims.interval_at_most([0.1], [0.2])                  # one seed: no interval
    assert not claims.interval_at_most([np.nan, 0.1], [0.2, 0.2])


def test_interval_ordered_needs_every_neighbouring_pair_above():
    base = np.array([920.4, 919.2, 921.6])
    c = claims.interval_ordered({"SLED": base - 600, "Centralized": base, "WISP": base + 150})
    assert c and c.evidence.count("above") == 2
    tie = claims.interval_ordered({"OFF": base, "ON": base + [3.0, -2.0, 1.0]})
    assert not tie and "tie" in tie.evidence
    assert not claims.interval_ordered({"OFF": base, "ON": base - 5})
    assert not claims.interval_ordered({"only": base})
