"""Edge cases of the predicates that decide comparison rows: exact ties, values exactly at a threshold or
margin, asymmetric and empty inputs, censored values. Each case is one a plausible one-character bug
(``>`` for ``>=``, a tie let through, a bound made exclusive) would flip."""
import math

import pytest

from specedge import claims as c


@pytest.mark.parametrize("value, bound, margin, holds", [
    (1.0, 1.0, None, False),          # a tie is not "above"
    (1.0 + 1e-12, 1.0, None, True),
    (1.5, 1.0, 0.5, False),           # exactly at the margin: the lead must exceed it
    (1.5 + 1e-9, 1.0, 0.5, True),
    (0.9, 1.0, 0.0, False),
    (-1.0, -2.0, 0.0, True),          # negative values
])
def test_above_at_its_threshold(value, bound, margin, holds):
    assert c.above(value, bound, margin).holds is holds
    assert c.below(-value, -bound, margin).holds is holds       # the mirror image


@pytest.mark.parametrize("value, holds", [(0.34, True), (0.54, True), (0.3399999, False), (0.5400001, False)])
def test_within_includes_its_ends(value, holds):
    assert c.within(value, 0.34, 0.54).holds is holds


def test_within_refuses_a_reversed_range_and_rejects_nan():
    with pytest.raises(ValueError, match="low <= high"):
        c.within(0.5, 0.6, 0.4)
    assert not c.within(float("nan"), 0, 1).holds


@pytest.mark.parametrize("values, holds", [
    ([1, 2, 3], True), ([1, 2, 2], False), ([3, 3], False), ([1], False), ([], False), ([1, float("nan")], False),
    ([1, c.AtLeast(2)], True),        # a lower bound on the larger side decides
    ([c.AtLeast(1), 2], False),       # on the smaller side it could overtake
])
def test_strictly_increasing_ties_singletons_and_bounds(values, holds):
    assert c.strictly_increasing(values).holds is holds


def test_argmax_tie_at_the_top_fails_even_for_the_expected_key():
    tie = c.argmax_is({"a": 2.0, "b": 2.0, "c": 1.0}, "a")
    assert not tie.holds and tie.evidence.startswith("tie: ")         # the row says why: a tie, not a loss
    assert c.argmax_is({"a": 2.0, "b": 1.0}, "a", margin=0.5).holds
    assert not c.argmax_is({"a": 2.0, "b": 1.5}, "a", margin=0.5).holds      # lead exactly the margin
    assert not c.argmin_is({"a": 1.0, "b": 1.0}, "a").holds
    assert c.argmax_is({"a": 1.0}, "a").holds                               # alone: nothing to beat
    assert not c.argmax_is({}, "a").holds
    with pytest.raises(ValueError, match="expected key"):
        c.argmax_is({"a": 1.0}, "z")


def test_argmax_undecided_by_anothers_lower_bound():
    assert not c.argmax_is({"a": 5.0, "b": c.AtLeast(1.0)}, "a").holds      # b's true value may exceed 5
    assert c.argmax_is({"a": c.AtLeast(5.0), "b": 1.0}, "a").holds          # a's excess only widens its lead


def test_correlation_sign_edges():
    assert not c.correlation_sign([1, 2, 3], [5, 5, 5], +1).holds          # constant: no sign
    assert not c.correlation_sign([1, 2], [1, 2], +1).holds                 # two points: no evidence
    assert c.correlation_sign([1, 2, 3], [1, 2, 3], +1, min_abs=1.0).holds  # |r| = 1 meets min_abs = 1
    assert not c.correlation_sign([1, 2, 3], [3, 2, 1], +1).holds
    with pytest.raises(ValueError, match="x has 3 values, y has 2"):
        c.correlation_sign([1, 2, 3], [1, 2], +1)


def test_all_of_empty_fails_and_one_false_fails():
    assert not c.all_of({}).holds
    assert not c.all_of({"a": True, "b": False}).holds
    assert c.all_of({"a": True}).holds


def test_interval_claims_on_ties_and_asymmetric_inputs():
    same = [1.0, 2.0, 3.0, 4.0]
    assert not c.interval_above(same, same).holds                   # identical seeds: a tie
    assert c.interval_at_most(same, same).holds                     # a tie is "at most"
    assert not c.interval_above([2.0, 3.0], [1.0]).holds            # unpaired: rejected
    assert not c.interval_at_most([2.0, 3.0], [1.0]).holds
    assert not c.interval_above([2.0], [1.0]).holds                 # one seed: no interval
    up = [x + 1 + 0.01 * (-1) ** i for i, x in enumerate(same)]
    assert c.interval_above(up, same).holds and not c.interval_at_most(up, same).holds
    assert not c.interval_ordered({"a": same}).holds


def test_mean_interval_one_value_and_bad_confidence():
    m, lo, hi = c.mean_interval([2.0])
    assert m == 2.0 and math.isnan(lo) and math.isnan(hi)
    with pytest.raises(ValueError, match="confidence"):
        c.mean_interval([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError, match="empty"):
        c.mean_interval([])
