"""compare's null rules at their telling inputs: a row's null is judged against the paper's value (not ours), at the
tolerance's edge inclusive, and a tolerance that rejects the null is half the effect whatever its sign."""
import pytest

from specedge import claims, compare


def _num(**kw):
    return dict(dict(artifact="T", quantity="rate", paper=10.0, reproduced=10.75, tolerance=1.0, null=9.25), **kw)


def test_the_null_is_judged_against_the_papers_value_not_ours():
    # ours 10.75 and the null 9.25 both lie within 10 +- 1 of the paper; ours is 1.5 from the null
    out = compare.unless_null_holds(_num())
    assert out["status"] == "not-reproducible" and out["cause"] == "our-reading"
    assert out["note"] == "the null 9.25 is also within 10.0 ± 1.0: this run cannot tell the statement from its null"
    assert "null" not in out and "tolerance" not in out and out["reproduced"] == 10.75
    # the null 1.25 from the paper but 0.25 from ours: the row can fail, it stays
    assert compare.unless_null_holds(_num(reproduced=9.5, null=11.25)) == _num(reproduced=9.5, null=11.25)


def test_the_tolerance_edge_counts_as_within_for_ours_and_the_null():
    assert compare.unless_null_holds(_num(reproduced=11.0, null=9.0))["status"] == "not-reproducible"
    assert "status" not in compare.unless_null_holds(_num(reproduced=11.0, null=8.75))
    assert "status" not in compare.unless_null_holds(_num(reproduced=11.25, null=9.0))     # ours outside: deviates
    assert "status" not in compare.unless_null_holds(_num(bound="upper"))                  # a bound: its own rule
    assert "status" not in compare.unless_null_holds(_num(null=None))


def test_a_claim_row_changes_only_when_both_hold_and_keeps_its_note():
    yes, no = claims.above(2.0, 1.0), claims.above(0.5, 1.0)
    row = dict(artifact="T", quantity="q", paper="yes", claim=yes, null_claim=yes, strength="trend", note="why")
    out = compare.unless_null_holds(row)
    assert out["note"] == f"the null also holds (above: {yes.evidence}): this run cannot tell the statement from its null; why"
    assert out["reproduced"] == yes.evidence and "claim" not in out and "strength" not in out
    assert compare.unless_null_holds(dict(row, null_claim=no)) == dict(row, null_claim=no)
    assert compare.unless_null_holds(dict(row, claim=no)) == dict(row, claim=no)


def test_null_tolerance_is_half_the_effect_on_either_side_and_zero_without_one():
    assert compare.null_tolerance(0.5, 1.0, 1.0) == compare.null_tolerance(1.5, 1.0, 1.0) == 0.25
    assert compare.null_tolerance(1.0, 1.0, 0.3) == 0.0
    assert compare.null_tolerance(3.0, 1.0, 0.0) == 0.0
    with pytest.raises(ValueError, match="cap >= 0"):
        compare.null_tolerance(3.0, 1.0, -0.1)
