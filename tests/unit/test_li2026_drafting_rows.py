"""WISP's drafting-side rows (``experiments.li2026.drafting``, ``experiments.li2026.drafting_waste``): the notebook's
calls on the committed traces, predictors and latency measurement (no model run), with values recomputed here; and
the Table 5, Table 11, Theorem 1 and Fig 1 rules at their ties (ON equal to OFF, a gain lead of exactly the margin,
a forest as slow as another family, 1 ms exactly, a waste tie in FPR order)."""
import numpy as np
import pandas as pd
import pytest

from specedge import compare, coverage
from specedge.predictor import dataset, models, operating, persistence, theorem1, traces as pred_traces
from specedge.experiments.li2026 import drafting as D
from specedge.experiments.li2026 import drafting_waste as W
from specedge.experiments.li2026 import drafting_figures as PF, drafting_verdicts as verdicts
from specedge.predictor import waste


@pytest.fixture(scope="module")
def paper():
    return coverage.paper_values("li2026")


def _row(cmp, artifact, start):
    rows = [r for r in cmp.rows if r["artifact"] == artifact and r["quantity"].startswith(start)]
    assert len(rows) == 1, [r["quantity"] for r in cmp.rows if r["artifact"] == artifact]
    return rows[0]


# ------------------------------------------------------------------------------ pure helpers
def test_statement_ids_of_a_cell():
    assert D.t4_ids(D.MLP, "Rec1") == "table4-mlp"
    assert D.t4_ids("XGBoost", "Rec1") == "table4-xgboost sec54-trees-operating-point appB1-false-negatives"
    assert D.t4_ids("XGBoost", "Acc") == "table4-xgboost"
    assert D.t10_ids(D.MLP, "TN_pct") == "table10-mlp appB1-mlp-rejected"
    assert D.t10_ids("LightGBM", "FP_pct") == "table10-lightgbm appB1-trees-fpr"
    assert D.t10_ids("LightGBM", "FN_pct") == "table10-lightgbm appB1-false-negatives"
    # Spec also holds FPR and Table 10's TN % / FP %, each id once, in first-seen order
    assert D.t4_distinct_ids(D.MLP, "Spec") == "table4-mlp table10-mlp appB1-mlp-rejected"
    assert D.t4_distinct_ids("XGBoost", "BalAcc") == "table4-xgboost"


def test_paper_fpr_ratio_by_hand(paper):
    t4 = D.paper_table4(paper)
    assert list(t4.columns) == D.COLS and list(t4.index) == list(D.PID)
    trees = [p for p in D.PID if p != D.MLP]
    assert D.paper_fpr_ratio(paper) == round(sum(t4.FPR[p] for p in trees) / 3 / t4.FPR[D.MLP], 2)


# ------------------------------------------------------------------------------ the notebook's calls on committed data
@pytest.fixture(scope="module")
def committed(paper, tmp_path_factory):
    out = tmp_path_factory.mktemp("li2026")
    meta = persistence.require_committed()
    traces = pred_traces.load_trace_data()
    data = dataset.build_dataset(traces)
    splits = dataset.data_splits(data, meta["split_seed"])
    preds = {f: persistence.load(persistence.PREDICTORS, f) for f in models.FAMILIES}
    table4, table10, _, equal = operating.evaluate_at_thresholds(preds, splits["test"])
    real_meta, real_traces = persistence.load_realpair()
    real, real_splits = dataset.committed_split(real_traces, real_meta)
    real_preds = {f: persistence.load(persistence.REALPAIR, f) for f in models.FAMILIES}
    return dict(out=out, meta=meta, traces=traces, data=data, splits=splits, preds=preds, table4=table4, equal=equal,
                real_meta=real_meta, real_traces=real_traces, real=real, real_splits=real_splits, real_preds=real_preds)


def test_table8_and_the_statistics_claims(committed, paper):
    c, cmp = committed, compare.Comparison("li2026")
    table8 = dataset.dataset_summary(c["data"])
    D.table8(cmp, paper, table8, c["data"], c["traces"], c["meta"], c["meta"]["window"])
    total = _row(cmp, "Table 8", "total samples")
    assert total["reproduced"] == len(c["data"]) and total["kind"] == "setting"
    frac = _row(cmp, "Table 8", "accepted fraction")
    assert frac["reproduced"] == round(100 * c["data"].label.mean(), 2)
    assert _row(cmp, "Table 8", "feature dimension")["reproduced"] == len(dataset.FEATURES)
    fig2, fig3 = dataset.statistic_views(c["data"])
    pooled = PF.statistic_figures(fig2, fig3, c["out"], drafts=pred_traces.draft_order(c["traces"]))
    D.stat_claims(cmp, fig2, pooled)
    fig3_rows = [r for r in cmp.rows if r["artifact"] == "Fig 3"]
    assert len(fig3_rows) == len(verdicts.SIGNS) == len([r for r in cmp.rows if r["artifact"] == "Fig 2"])
    for s, sign in verdicts.SIGNS.items():   # a row holds exactly when the signed r clears 0.05
        r = next(x for x in fig3_rows if f"({s})" in x["quantity"])
        assert (r["status"] != "deviates") is bool(sign * pooled.loc[s, "both"] > 0.05)


def test_table4_sensitivity_and_table11_rows(committed, paper):
    c, cmp = committed, compare.Comparison("li2026")
    D.table4(cmp, paper, c["table4"], c["equal"], accepted_share=float(c["splits"]["test"].label.mean()))
    art = "Table 4" + D.SENS
    cells = [r for r in cmp.rows if r["artifact"] == art and not r["quantity"].startswith("claim")]
    assert len(cells) == len(D.PID) * len(D.DISTINCT)
    ours = c["table4"].set_index("predictor")
    ratio = _row(cmp, art, "claim: mean tree FPR / MLP FPR")
    trees = [p for p in D.PID if p != D.MLP]
    assert ratio["reproduced"] == round(float(ours.FPR[trees].mean() / ours.FPR[D.MLP]), 2)
    low = _row(cmp, art, "claim: the MLP has the lowest FPR")
    assert (low["status"] != "deviates") is bool(ours.FPR[D.MLP] < ours.FPR[trees].min())
    lat = pd.read_csv(persistence.PREDICTORS / "latency.csv")
    D.table11(cmp, paper, lat)
    assert len([r for r in cmp.rows if r["artifact"] == "Table 11" and not r["quantity"].startswith("claim")]) == 2 * 4 * 7
    mean = lat.set_index("predictor")["mean"]
    rf = _row(cmp, "Table 11", "claim: the random forest is the slowest")
    assert (rf["status"] != "deviates") is bool(mean.idxmax() == "Random Forest")


def _lat(means):
    stats = {s: list(means) for s in D.STATS_T11}
    return pd.DataFrame(dict(predictor=D.T11_ORDER, **stats))


@pytest.mark.parametrize("means, rf_slowest, sub_ms", [
    ((0.3, 0.5, 2.0, 0.4), True, True),
    ((0.3, 2.0, 2.0, 0.4), False, False),     # a forest as slow as LightGBM: a tie is not the slowest
    ((0.3, 1.0, 2.0, 0.4), True, False),      # 1 ms exactly is not under 1 ms
    ((0.3, 0.999, 2.0, 0.4), True, True),
])
def test_table11_claims_at_their_ties(paper, means, rf_slowest, sub_ms):
    cmp = compare.Comparison("li2026")
    D.table11(cmp, paper, _lat(means))
    assert (_row(cmp, "Table 11", "claim: the random forest")["status"] != "deviates") is rf_slowest
    assert (_row(cmp, "Table 11", "claim: XGBoost, LightGBM")["status"] != "deviates") is sub_ms


def test_the_real_pair_rows(committed, paper):
    c, cmp = committed, compare.Comparison("li2026")
    t8 = D.table8_real(cmp, paper, c["real"], c["real_meta"], 31.5)
    frac = _row(cmp, "Table 8" + D.WHO, "accepted fraction")
    assert frac["reproduced"] == round(100 * float(c["real"].label.mean()), 2) and "the zoo's 31.5 %" in frac["note"]
    assert int(t8["count"][0]) == len(c["real"])
    side, t4, t10 = D.table4_real(cmp, paper, c["preds"], c["splits"]["test"], c["real_preds"], c["real_splits"]["test"], 20, 0)
    fpr = t4.set_index("predictor").FPR
    ratio = _row(cmp, "Table 4" + D.WHO + D.SENS, "claim: mean tree FPR / MLP FPR")
    assert ratio["reproduced"] == round(float(fpr[[p for p in D.PID if p != D.MLP]].mean() / fpr[D.MLP]), 2)
    assert len(t10) == len(D.PID)
    op = pd.read_csv(persistence.PREDICTORS / "operating_points.csv")
    fig = D.fpr_figure(paper, {"zoo": D.table4_paper_op(cmp, paper, op)})
    assert fig is not None


def test_the_real_pairs_replay_rows(committed, paper):
    c, cmp = committed, compare.Comparison("li2026")
    t5, replay = waste.replay_summary(c["real_traces"], c["real_meta"]["split_prompts"]["test"], c["real_preds"]["mlp"],
                                      D.REAL, 20, 0)
    W.table5_real_rows(cmp, paper, t5, D.WHO, "replayed on the fixed-window rounds of the real pair's test prompts")
    r = t5.iloc[0]
    assert _row(cmp, "Table 5" + D.WHO, "acceptance, predictor OFF")["reproduced"] == round(float(r.OFF), 3)
    raised = _row(cmp, "Table 5" + D.WHO, "claim: the predictor raises")
    assert (raised["status"] != "deviates") is bool(r.ON > r.OFF)
    fig, f1, summary = W.fig1_real(c["real_traces"], replay, 50.0, 0)
    assert (f1.drafted > 0).all() and (f1.wasted == f1.drafted - f1.accepted).all()
    W.fig1_real_rows(cmp, f1, replay)
    rf1 = _row(cmp, "Fig 1" + D.WHO, "claim: more wasted drafting")
    assert (rf1["status"] != "deviates") is bool(np.corrcoef(f1.wasted, f1.goodput)[0, 1] < 0)
    t4, _ = models.evaluate(c["real_preds"], c["real_splits"]["test"])
    thm = waste.theorem1_real(c["real_traces"], c["real_meta"], c["real_preds"], t4, replay)
    W.theorem1_real_rows(cmp, thm, replay)
    closed = _row(cmp, "Theorem 1" + D.WHO, "claim: trained predictors")
    ordered = thm.sort_values("FPR", kind="stable").closed_form.to_numpy()
    assert (closed["status"] != "deviates") is bool((np.diff(ordered) > 0).all())


def test_theorem1_points_put_ours_first_and_the_papers_after(committed, paper):
    c, cmp = committed, compare.Comparison("li2026")
    alpha = waste.filled_alpha(c["traces"], c["meta"]["window"])
    pts = W.theorem1_points(c["table4"], paper, alpha, c["meta"]["window"])
    n = len(c["table4"])
    assert (pts.source[:n] == "ours (test split)").all() and (pts.source[n:] == "paper Table 4").all()
    r = pts.iloc[n]
    assert r.expected_waste == pytest.approx(theorem1.expected_waste(alpha, c["meta"]["window"], r.Rec1, r.FPR))
    W.theorem1_rows(cmp, pts, n)
    row = _row(cmp, "Theorem 1", "claim: trained predictors")
    ours = pts.iloc[:n].sort_values("FPR", kind="stable").expected_waste.to_numpy()
    assert row["kind"] == "analytic" and (row["status"] != "deviates") is bool((np.diff(ours) > 0).all())


# ------------------------------------------------------------------------------ the rules at their ties (synthetic)
DRAFTS = ["draft-xs", "draft-s", "draft-m", "draft-l"]


def _t5(off, on, gains, w_off, w_on):
    return pd.DataFrame(dict(OFF=off, ON=on, improvement_pct=gains, wasted_per_round_OFF=w_off, wasted_per_round_ON=w_on,
                             draft_params=[1e6, 2e6, 4e6, 8e6]), index=DRAFTS)


def _t5_status(paper, t5, start):
    cmp = compare.Comparison("li2026")
    W.table5_rows(cmp, paper, t5, "a test setting")
    return _row(cmp, "Table 5", start)["status"]


def test_table5_claims_hold_on_a_clear_table(paper):
    t5 = _t5([0.3, 0.4, 0.5, 0.6], [0.5, 0.55, 0.6, 0.65], [66.0, 37.5, 20.0, 8.3], [3.0] * 4, [2.0] * 4)
    for start in ("claim: the predictor raises", "claim: the largest relative gain", "claim: gains are larger",
                  "claim: the controller cuts"):
        assert _t5_status(paper, t5, start) != "deviates", start


@pytest.mark.parametrize("start, change", [
    ("claim: the predictor raises", dict(ON=[0.5, 0.4, 0.6, 0.65])),                 # ON = OFF for one draft
    ("claim: the controller cuts", dict(wasted_per_round_ON=[2.0, 3.0, 2.0, 2.0])),  # as many wasted
    ("claim: the largest relative gain", dict(improvement_pct=[39.5, 37.5, 20.0, 8.3])),   # a lead of exactly 2.0
    ("claim: gains are larger", dict(improvement_pct=[66.0, 20.0, 20.0, 8.3])),       # a tie down the rows
])
def test_table5_claims_fail_at_their_ties(paper, start, change):
    base = dict(off=[0.3, 0.4, 0.5, 0.6], on=[0.5, 0.55, 0.6, 0.65], gains=[66.0, 37.5, 20.0, 8.3], w_off=[3.0] * 4,
                w_on=[2.0] * 4)
    t5 = _t5(**base)
    for col, v in change.items():
        t5[col] = v
    assert _t5_status(paper, t5, start) == "deviates"


def test_table5_a_lead_just_above_the_margin_holds(paper):
    t5 = _t5([0.3, 0.4, 0.5, 0.6], [0.5, 0.55, 0.6, 0.65], [39.51, 37.5, 20.0, 8.3], [3.0] * 4, [2.0] * 4)
    assert _t5_status(paper, t5, "claim: the largest relative gain") != "deviates"


def test_theorem1_live_rows_count_drafts_in_fpr_order():
    live = pd.DataFrame(dict(predictor=["MLP", "XGBoost", "LightGBM", "Random Forest", "fixed window"],
                             FPR=[0.1, 0.2, 0.3, 0.4, np.nan], wasted_per_round=[1.0, 1.2, 1.4, 1.6, 3.0]))
    per_draft = pd.DataFrame({"MLP": [1.0, 1.0, 2.0], "XGBoost": [1.1, 1.0, 1.5], "LightGBM": [1.2, 1.0, 1.6],
                              "Random Forest": [1.3, 1.1, 1.7]}, index=["a", "b", "c"])
    cmp = compare.Comparison("li2026")
    W.theorem1_live_rows(cmp, live, per_draft)
    row = _row(cmp, "Theorem 1", "claim: live")
    # the fixed window (no FPR) is left out; drafts a and b keep the order (b's tie is not a break), c does not
    assert row["status"] != "deviates" and "same order for 2 of 3 drafts" in row["note"]
    tie = live.assign(wasted_per_round=[1.0, 1.2, 1.2, 1.6, 3.0])
    cmp = compare.Comparison("li2026")
    W.theorem1_live_rows(cmp, tie, per_draft)
    assert _row(cmp, "Theorem 1", "claim: live")["status"] == "deviates"


def test_fig1_drops_rounds_with_nothing_drafted_and_its_claim_follows_the_sign():
    rounds = pd.DataFrame(dict(draft="d", mode=["OFF", "OFF", "ON", "ON", "OFF"], prompt=0, round=[0, 1, 0, 1, 2],
                               drafted=[4, 4, 2, 3, 0], accepted=[1, 4, 2, 1, 0], position=[10, 20, 10, 20, 30]))
    fig, f1, r = W.fig1(rounds, 50.0, 0)
    assert len(f1) == 4 and f1.wasted.tolist() == [3, 0, 0, 2]
    # eq (19)'s verification time grows with the position: compare rounds at one position only
    assert f1.goodput.iloc[1] > f1.goodput.iloc[0]          # round 1 (W 0) beats round 0 (W 3) at more context
    cmp = compare.Comparison("li2026")
    W.fig1_rows(cmp, f1)
    assert (_row(cmp, "Fig 1", "claim: more wasted")["status"] != "deviates") is bool(r < 0)
    with pytest.raises(ValueError, match="draft_rate"):
        W.fig1(rounds, 0.0, 0)
