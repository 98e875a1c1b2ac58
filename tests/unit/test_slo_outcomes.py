"""SLO outcomes per class (``serving.analysis.slo_outcomes``): violation and deadline-miss rates, one policy's gap
over another's, real against a twin."""
import numpy as np
import pandas as pd
import pytest

from specedge.serving.analysis import slo_outcomes as so


def _log(rounds, event=None):
    """A log of (slo_class, tokens, t_round, end, deadline) rows."""
    df = pd.DataFrame(rounds, columns=["slo_class", "tokens", "t_round", "end", "deadline"])
    return df.assign(event=event if event is not None else [""] * len(df))


def test_by_class_rates_and_pooled_row():
    # class 10: 2 tok in 0.1 s = 20 tok/s (met), 1 tok in 0.2 s = 5 (violated); class 40: 1 tok in 0.05 s = 20 (violated)
    log = _log([(10, 2, 0.1, 1.0, 2.0), (10, 1, 0.2, 3.0, 2.5), (40, 1, 0.05, 4.0, 4.0), (40, 3, 0.05, 5.0, np.nan)])
    t = so.by_class([log]).set_index("slo_class")
    assert list(t.index) == ["10", "40", so.ALL]
    assert t.loc["10", "rounds"] == 2 and t.loc["10", "violation_pct"] == 50.0
    assert t.loc["40", "violation_pct"] == 50.0            # 3 tok in 0.05 s = 60 tok/s meets 40
    assert t.loc["10", "deadline_miss_pct"] == 50.0        # 3.0 > 2.5; 1.0 <= 2.0
    assert t.loc["40", "deadline_miss_pct"] == 0.0         # ending at the deadline meets it; NaN deadline not counted
    assert t.loc[so.ALL, "rounds"] == 4 and t.loc[so.ALL, "violation_pct"] == 50.0
    assert t.loc[so.ALL, "deadline_miss_pct"] == pytest.approx(100 / 3)


def test_by_class_pools_logs_and_skips_unverified_rows():
    a = _log([(10, 1, 1.0, 1.0, 0.0)])                      # violated, missed
    b = _log([(10, 5, 0.1, 1.0, 2.0), (10, 1, 9.0, 9.0, 0.0)], event=["", "dropped"])
    t = so.by_class([a, b]).set_index("slo_class")
    assert t.loc["10", "rounds"] == 2 and t.loc["10", "violation_pct"] == 50.0 and t.loc["10", "deadline_miss_pct"] == 50.0


def test_by_class_no_deadlines_and_bad_input():
    t = so.by_class([_log([(10, 1, 1.0, 1.0, np.nan)])])
    assert t["deadline_miss_pct"].isna().all()
    with pytest.raises(ValueError, match="at least one log"):
        so.by_class([])
    with pytest.raises(ValueError, match="no verified rounds"):
        so.by_class([_log([(10, 1, 1.0, 1.0, 0.0)], event=["dropped"])])
    with pytest.raises(ValueError, match="slo_class"):
        so.by_class([_log([(np.nan, 1, 1.0, 1.0, 0.0)])])


def _table(rows):
    return pd.DataFrame(rows, columns=["paper", "policy", "n_clients", "repeat", "side", "slo_class",
                                       "violation_pct", "deadline_miss_pct"])


def test_policy_gap_is_asymmetric_and_drops_unpaired_groups():
    t = _table([("p", "WISP", 2, 1, "real", "all", 10.0, 5.0), ("p", "FCFS", 2, 1, "real", "all", 30.0, 5.0),
                ("p", "WISP", 4, 1, "real", "all", 10.0, 1.0)])              # N = 4 has no FCFS run
    g = so.policy_gap(t, "WISP", "FCFS")
    assert len(g) == 1 and g.violation_pct_gap.iloc[0] == -20.0 and g.deadline_miss_pct_gap.iloc[0] == 0.0
    assert so.policy_gap(t, "FCFS", "WISP").violation_pct_gap.iloc[0] == 20.0
    with pytest.raises(ValueError, match="more than one row"):
        so.policy_gap(pd.concat([t, t]), "WISP", "FCFS")


def test_gap_summary_real_against_twin_run_by_run():
    rows = []
    for r, (real, twin) in enumerate([(-20.0, -10.0), (-10.0, -16.0), (-30.0, -25.0)], start=1):
        rows += [("p", "WISP", 8, r, "real", "all", 50 + real, 0.0), ("p", "FCFS", 8, r, "real", "all", 50.0, 0.0),
                 ("p", "WISP", 8, r, "twin", "all", 50 + twin, 0.0), ("p", "FCFS", 8, r, "twin", "all", 50.0, 0.0)]
    s = so.gap_summary(so.policy_gap(_table(rows), "WISP", "FCFS"))
    assert len(s) == 1
    row = s.iloc[0]
    assert row.side == "twin" and row.repeats == 3
    assert (row.real_mean, row.real_min, row.real_max) == (-20.0, -30.0, -10.0)
    assert row.twin_mean == pytest.approx(-17.0) and row.error == pytest.approx(3.0)
    assert row.worst_run_error == 10.0


def test_responses_by_class_and_the_twins_error_per_run_and_per_response():
    # client 0 (class 10): a response of 4 tokens in 0.2 s (20 tok/s, met), then 4 in 0.8 s (5 tok/s, violated);
    # client 1 (class 40): 4 tokens in 0.2 s (20 tok/s, violated), then 2 tokens of a response still running
    rows = [(0, 10, 2, 0.1, 0.1), (0, 10, 2, 0.1, 0.2), (0, 10, 4, 0.8, 1.0), (1, 40, 4, 0.2, 0.2), (1, 40, 2, 0.1, 0.3)]
    log = pd.DataFrame(rows, columns=["client", "slo_class", "tokens", "t_round", "end"]).assign(
        event="", t_send=0.0, deadline=np.nan)
    t = so.by_class([log], max_new_tokens=4).set_index("slo_class")
    assert t.loc["10", "responses"] == 2 and t.loc["10", "response_violations"] == 1
    assert t.loc["10", "response_violation_pct"] == 50.0
    assert t.loc["40", "responses"] == 1 and t.loc["40", "response_violation_pct"] == 100.0     # the running one left out
    assert t.loc[so.ALL, "responses"] == 3 and t.loc[so.ALL, "response_violations"] == 2
    assert "responses" not in so.by_class([log]).columns
    # the twin's error: per run of its rounds, or per policy and N of its responses, the runs pooled
    cols = ["policy", "n_clients", "repeat", "side", "slo_class", "violation_pct", "responses", "response_violations"]
    out = pd.DataFrame([("P", 8, 1, "real", "80", 60.0, 6, 6), ("P", 8, 2, "real", "80", 70.0, 6, 3),
                        ("P", 8, 1, "twin", "80", 90.0, 30, 27), ("P", 8, 2, "twin", "80", 95.0, 30, 27),
                        ("P", 8, 1, "real", so.ALL, 0.0, 6, 0), ("P", 8, 1, "twin", so.ALL, 100.0, 30, 30)], columns=cols)
    assert so.twin_error(out, "twin") == 30.0                       # run 1: 90 - 60; the pooled row never
    assert so.run_errors(out, "twin").to_dict() == {"80": 30.0, so.ALL: 100.0}      # per class, the pooled row kept
    assert so.twin_error(out, "twin", "response") == pytest.approx(90.0 - 75.0)   # 54 / 60 against 9 / 12
    assert np.isnan(so.twin_error(out, "other")) and np.isnan(so.twin_error(out, "other", "response"))
    with pytest.raises(ValueError, match="level"):
        so.twin_error(out, "twin", "token")
