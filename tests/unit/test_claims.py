"""Claim predicates: each passes on clear evidence and rejects constant series, ties, NaN and
empty input (the ways a hand-typed `trend` used to slip through)."""
import math

import pytest

from specedge import claims


@pytest.mark.parametrize("pred,good,bad", [
    (claims.strictly_increasing, [1, 2, 3], [1, 3, 2]),
    (claims.strictly_decreasing, [3, 2, 1], [3, 1, 2]),
])
def test_monotone(pred, good, bad):
    assert pred(good).holds and not pred(bad).holds
    for rejected in ([], [5.0], [2, 2, 2], [1, 2, 2], [1, math.nan, 3], [1, math.inf]):
        c = pred(rejected)
        assert not c.holds, rejected
    assert pred([2, 2, 2]).evidence.startswith("constant")
    assert "NaN" in pred([1, math.nan]).evidence
    assert pred([]).evidence == "rejected: empty"


def test_ordered_and_labels():
    c = claims.ordered([1, 2, 3], ["a", "b", "c"])
    assert c.holds and c.evidence == "a=1 < b=2 < c=3"
    assert not claims.ordered([1, 1, 3]).holds          # tie
    assert not claims.ordered([]).holds
    assert not claims.ordered([1, math.nan]).holds
    with pytest.raises(ValueError, match="labels"):
        claims.ordered([1, 2], ["a"])


def test_correlation_sign():
    x = [1, 2, 3, 4, 5]
    assert claims.correlation_sign(x, [2, 4, 5, 8, 9], +1, 0.9).holds
    assert not claims.correlation_sign(x, [2, 4, 5, 8, 9], -1).holds
    assert not claims.correlation_sign(x, [1, 3, 2, 5, 4], +1, 0.95).holds   # too weak
    assert not claims.correlation_sign(x, [3, 3, 3, 3, 3], +1).holds          # constant
    assert not claims.correlation_sign([], [], +1).holds
    assert not claims.correlation_sign(x, [1, 2, math.nan, 4, 5], +1).holds
    with pytest.raises(ValueError, match="sign"):
        claims.correlation_sign(x, x, 0)


def test_argmax_argmin_within_and_bounds():
    assert claims.argmax_is({"a": 1, "b": 3}, "b").holds
    assert not claims.argmax_is({"a": 3, "b": 3}, "b").holds                 # tie for the top
    assert not claims.argmin_is({"a": 1, "b": math.nan}, "a").holds
    assert not claims.argmax_is({}, "a").holds
    with pytest.raises(ValueError, match="expected key"):
        claims.argmax_is({"a": 1}, "z")
    assert claims.within(40, 34, 54).holds and not claims.within(60, 34, 54).holds
    assert not claims.within(math.nan, 0, 1).holds
    assert claims.below(0.05, 0.1).holds and not claims.below(0.1, 0.1).holds
    assert claims.above(2, 1).holds and not claims.above(math.nan, 1).holds
    assert claims.all_of({"x": True, "y": True}).holds
    assert not claims.all_of({"x": True, "y": False}).holds and not claims.all_of({}).holds


def test_comparative_predicates_take_a_margin():
    """The claim "A above B" must be able to fail on noise: the lead has to exceed the margin."""
    assert claims.above(2.189, 2.187).holds                      # a bare ordering passes on 0.002
    assert not claims.above(2.189, 2.187, margin=0.05).holds     # not beyond a 0.05 margin
    assert claims.above(2.5, 2.187, margin=0.05).holds
    assert "margin 0.05" in claims.above(2.5, 2.187, margin=0.05).evidence
    assert not claims.below(0.99, 1.0, margin=0.02).holds and claims.below(0.9, 1.0, margin=0.02).holds
    top = {"GOODSPEED": 2.189, "Fixed-S": 2.187, "Random-S": 1.855}
    assert claims.argmax_is(top, "GOODSPEED").holds
    c = claims.argmax_is(top, "GOODSPEED", margin=0.01)
    assert not c.holds and c.evidence.startswith("GOODSPEED by 0.002") and c.margin == 0.01
    assert claims.argmin_is({"a": 1.0, "b": 1.5}, "a", margin=0.4).holds
    assert not claims.argmin_is({"a": 1.0, "b": 1.3}, "a", margin=0.4).holds
    with pytest.raises(ValueError, match="margin"):
        claims.above(1, 0, margin=-1)


def test_a_censored_value_is_a_lower_bound_to_the_predicates():
    """A capacity search stopped at its cap reports "at least 512"; a claim may rest
    on it only where its unknown excess cannot reverse the order (before, 512 counted as a value: a
    "512 > 512" tie and argmax over two capped values)."""
    ge = claims.AtLeast
    assert claims.strictly_decreasing([ge(512), 300, 200]).holds              # the truth is only larger
    c = claims.strictly_decreasing([600, ge(512), 200])
    assert not c.holds and "undecided" in c.evidence and "≥512" in c.evidence
    assert claims.argmax_is({"WISP": ge(512), "SLED": 217}, "WISP").holds
    assert not claims.argmax_is({"WISP": 600, "Centralized": ge(512)}, "WISP").holds
    assert not claims.argmin_is({"SLED": ge(5), "WISP": 9}, "SLED").holds
    assert not claims.ordered([ge(5), 9]).holds and claims.ordered([5, ge(9)]).holds
    assert not claims.above(600, ge(512)).holds and not claims.below(ge(3), 9).holds


def test_a_censored_number_never_matches():
    from specedge import compare

    cmp = compare.Comparison("x")
    kw = dict(null=0, cause="our-reading")
    assert cmp.add("T", "a", 500, 512, "devices", tolerance=50, bound=">=", **kw) == "not-reproducible"
    assert cmp.add("T", "b", 100, 512, "devices", tolerance=25, bound=">=", note="the zoo's acceptance differs",
                   **kw) == "deviates"
    assert cmp.add("T", "c", 2.0, 1.5, "x", tolerance=0.5, bound="<=", **kw) == "not-reproducible"
    assert cmp.rows[0]["reproduced"] == "≥512" and "censored" in cmp.rows[0]["note"]
    with pytest.raises(ValueError, match="cause"):
        cmp.add("T", "e", 500, 512, "devices", tolerance=50, bound=">=", null=0)
    with pytest.raises(ValueError, match="bound"):
        cmp.add("T", "d", 1, 1, tolerance=1, bound="=", **kw)


def test_falls_with_needs_both_ends_apart_and_every_step_down():
    falls = {0.5: [0.30, 0.32, 0.31, 0.29], 0.1: [0.20, 0.22, 0.19, 0.21], 0.02: [0.10, 0.12, 0.11, 0.09]}
    c = claims.falls_with(falls, "d_falls", "β")
    assert c.holds and c.name == "d_falls" and c.evidence.startswith("β 0.5 vs 0.02: ")
    tie = {0.5: [0.30, 0.32, 0.31, 0.29], 0.02: [0.31, 0.30, 0.32, 0.30]}          # the ends' interval straddles 0
    assert not claims.falls_with(tie).holds
    bump = {0.5: [0.30, 0.32, 0.31, 0.29], 0.1: [0.35, 0.36, 0.34, 0.35], 0.02: [0.10, 0.12, 0.11, 0.09]}
    assert not claims.falls_with(bump).holds                                       # ends apart, a step up between
    one = claims.falls_with({0.5: [0.3, 0.3]}, x="β")
    assert not one.holds and "need two β values" in one.evidence


def test_median_null_and_is_lowest():
    import pandas as pd

    r = pd.Series({"ours": 1.0, "a": 3.0, "b": 5.0, "c": 10.0})
    assert claims.is_lowest(r, "ours") and not claims.is_lowest(r, "a")
    n = claims.median_null(r, "ours")
    assert n["ours"] == 5.0 and r["ours"] == 1.0                                   # a copy; the others' median
    assert not claims.is_lowest(n, "ours")
    assert claims.is_lowest(pd.Series({"ours": 2.0, "a": 2.0}), "ours")           # a tie counts as lowest


def test_log_slope_positive_reads_the_trend_over_seeds():
    """Per seed the slope of log value on log x: a falling trend with one step up between neighbours holds, a flat
    series (its slopes' interval around zero) and a rising one fail; bad input is rejected."""
    falls = {0.5: [0.30, 0.32, 0.31], 0.2: [0.22, 0.21, 0.20], 0.1: [0.23, 0.24, 0.22], 0.02: [0.10, 0.12, 0.11]}
    c = claims.log_slope_positive(falls, "d_falls", "β")
    assert c.holds and c.name == "d_falls" and "slope of log value on log β" in c.evidence and "above" in c.evidence
    flat = {0.5: [0.30, 0.31, 0.29], 0.1: [0.31, 0.29, 0.30], 0.02: [0.29, 0.30, 0.31]}
    assert not claims.log_slope_positive(flat).holds
    rises = {0.5: [0.1, 0.11, 0.1], 0.1: [0.2, 0.21, 0.19], 0.02: [0.3, 0.31, 0.29]}
    assert not claims.log_slope_positive(rises).holds and "below" in claims.log_slope_positive(rises).evidence
    assert claims.log_slope_positive({0.5: [0.3], 0.1: [0.2]}).evidence.startswith("rejected: need three")
    assert claims.log_slope_positive({0.5: [0.3, 0.3], 0.1: [0.2], 0.02: [0.1, 0.1]}).evidence.startswith("rejected: unequal")
    assert claims.log_slope_positive({0.5: [0.3], 0.1: [0.0], 0.02: [0.1]}).evidence.startswith("rejected: a value")
