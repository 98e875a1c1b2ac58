"""Claims over several parts and seeds: at or below in every part (``interval_at_most_every``), the seeds'
samples per group (``by_seed``), and the null of "lowest / highest" (``null_like_median``)."""
import numpy as np
import pandas as pd
import pytest

from specedge import claims


def test_at_most_every_part_needs_no_part_above_and_one_below():
    below, tie, above = ([0.1, 0.2, 0.1], [0.5, 0.6, 0.5]), ([0.5, 0.4, 0.6], [0.5, 0.5, 0.5]), ([0.9, 0.8, 0.9], [0.1, 0.2, 0.1])
    c = claims.interval_at_most_every({"8 tok/s": below, "2 tok/s": tie})
    assert c.holds and c.evidence.startswith("below in 1, tie in 1, above or undecided in 0 of 2; 8 tok/s below")
    assert not claims.interval_at_most_every({"a": tie, "b": tie})              # the seeds cannot tell them apart
    c = claims.interval_at_most_every({"a": below, "b": above})
    assert not c and "above or undecided in 1 of 2; b above" in c.evidence
    assert not claims.interval_at_most_every({"a": ([0.1], [0.5])})             # one seed: no interval
    assert not claims.interval_at_most_every({})


def test_by_seed_orders_each_groups_values_by_seed_and_marks_a_missing_seed():
    rows = pd.DataFrame(dict(system=["W", "F", "W", "F", "W"], seed=[1, 0, 0, 1, 2], goodput=[11.0, 20.0, 10.0, 21.0, 12.0]))
    got = claims.by_seed(rows, "system", "goodput")
    np.testing.assert_array_equal(got["W"], [10.0, 11.0, 12.0])
    np.testing.assert_array_equal(got["F"][:2], [20.0, 21.0])
    assert np.isnan(got["F"][2])                                              # F has no seed 2: NaN fails a paired claim
    assert not claims.interval_above(got["W"], got["F"])


def test_null_like_median_moves_only_the_named_entry():
    values = {"a": 1.0, "b": 5.0, "c": 3.0, "d": 4.0}
    assert claims.null_like_median(values, "a") == {"a": 4.0, "b": 5.0, "c": 3.0, "d": 4.0}
    assert list(claims.null_like_median(values, "c")) == ["a", "b", "c", "d"] and values["a"] == 1.0
    assert not claims.argmin_is(claims.null_like_median(values, "a"), "a")
    with pytest.raises(ValueError, match="need 'z'"):
        claims.null_like_median(values, "z")
