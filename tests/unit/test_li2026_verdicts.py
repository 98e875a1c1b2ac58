"""li2026 (WISP, drafting side): the rules and thresholds that decide the notebook's claims (known answers)."""
import math

import pandas as pd
import pytest

from specedge.experiments.li2026 import drafting_verdicts as V
from specedge.predictor.waste import by_fpr

NAN = float("nan")


# ------------------------------------------------------------------ Figs 2-3
def test_pearson_direction_uses_the_papers_sign_and_threshold():
    assert V.pearson_direction(0.25, "max_prob").holds
    assert V.pearson_direction(-0.21, "entropy").evidence == "0.21 > 0.05"
    assert not V.pearson_direction(0.21, "entropy").holds             # reversed
    assert not V.pearson_direction(-0.035, "logit_std").holds         # too weak
    assert not V.pearson_direction(0.05, "margin").holds              # at the threshold: not above
    assert not V.pearson_direction(NAN, "margin").holds
    with pytest.raises(ValueError, match="statistic"):
        V.pearson_direction(0.3, "perplexity")


def _bins(acc_by_t, statistic="max_prob"):
    rows = [dict(statistic=statistic, temperature=t, value=float(i), acceptance=a)
            for t, accs in acc_by_t.items() for i, a in enumerate(accs)]
    other = [dict(statistic="entropy", temperature="both", value=float(i), acceptance=-i) for i in range(5)]
    return pd.DataFrame(rows + other)


def test_decile_spearman_and_monotone_rule():
    rho = V.decile_spearman(_bins({"T = 1": [0.5, 0.4, 0.3, 0.2, 0.1], "T = 0 (greedy)": [0.1, 0.2, 0.3, 0.4, 0.5],
                                   "both": [0.1, 0.3, 0.2, 0.4, 0.5]}), "max_prob")
    assert list(rho) == ["T = 0 (greedy)", "T = 1", "both"]          # sorted labels
    assert rho["T = 0 (greedy)"] == pytest.approx(1.0) and rho["T = 1"] == pytest.approx(-1.0)
    assert rho["both"] == pytest.approx(0.9)
    assert V.monotone_over_deciles(rho["both"], "max_prob").holds
    assert not V.monotone_over_deciles(rho["T = 1"], "max_prob").holds
    assert V.monotone_over_deciles(-0.7, "entropy").holds
    assert not V.monotone_over_deciles(0.6, "max_prob").holds          # at the threshold: not above
    flat = V.decile_spearman(_bins({"both": [0.3] * 5}), "max_prob")
    assert math.isnan(flat["both"]) and not V.monotone_over_deciles(flat["both"], "max_prob").holds
    with pytest.raises(ValueError, match="columns"):
        V.decile_spearman(pd.DataFrame(dict(value=[1.0])), "max_prob")


def test_falls_short_lists_weak_reversed_and_nan():
    assert V.falls_short({"a": 0.2, "b": 0.05, "c": NAN, "d": -0.3}, "max_prob", 0.1) == ["b", "c", "d"]
    assert V.falls_short({"a": -0.2, "b": -0.1}, "entropy", V.WEAK_PEARSON) == []
    assert V.falls_short({}, "margin", 0.6) == []


# ------------------------------------------------------------------ Table 4
def test_lowest_fpr_strength_depends_on_the_margin():
    clear = V.lowest_fpr({"MLP": 0.20, "LightGBM": 0.30, "RF": 0.28}, "MLP")
    assert clear.claim.holds and clear.strength == "match" and clear.lead == pytest.approx(0.08)
    close = V.lowest_fpr({"MLP": 0.5703, "LightGBM": 0.6032, "RF": 0.5987}, "MLP")
    assert close.claim.holds and close.strength == "trend" and close.lead == pytest.approx(0.0284)
    beaten = V.lowest_fpr({"MLP": 0.4038, "LightGBM": 0.2892, "RF": 0.2057}, "MLP")
    assert not beaten.claim.holds and beaten.claim.evidence.startswith("RF") and beaten.lead < 0
    tie = V.lowest_fpr({"MLP": 0.2, "RF": 0.2}, "MLP")
    assert not tie.claim.holds and tie.claim.evidence.startswith("tie")
    assert not V.lowest_fpr({"MLP": NAN, "RF": 0.2}, "MLP").claim.holds
    assert V.lowest_fpr({"MLP": 0.1, "RF": 0.2}, "MLP", margin=0.2).strength == "trend"
    with pytest.raises(ValueError, match="MLP"):
        V.lowest_fpr({"RF": 0.2, "XGB": 0.3}, "MLP")


# ------------------------------------------------------------------ Table 5
def _t5(on=(0.35, 0.60, 0.89, 0.53), off=(0.15, 0.38, 0.51, 0.38), w_on=(0.4, 0.3, 0.1, 0.4), w_off=(4.5, 3.6, 2.9, 4.1)):
    t = pd.DataFrame(dict(OFF=off, ON=on, wasted_per_round_OFF=w_off, wasted_per_round_ON=w_on),
                     index=pd.Index(["xs", "s", "m", "l"], name="draft"))
    t["improvement_pct"] = 100 * (t.ON / t.OFF - 1)
    return t


def test_table5_verdicts():
    t = _t5()
    assert V.raises_acceptance(t).evidence == "all 4 hold" and V.cuts_waste(t).holds
    assert V.largest_gain_for_smallest(t).holds
    assert not V.gains_shrink_with_size(t).holds                       # m gains more than s
    assert V.gains_shrink_with_size(_t5(on=(0.40, 0.55, 0.62, 0.44))).holds
    worse = _t5(on=(0.35, 0.30, 0.89, 0.53))
    assert V.raises_acceptance(worse).evidence == "fails for 1 of 4: s"
    assert not V.cuts_waste(_t5(w_on=(0.4, 3.6, 0.1, 0.4))).holds     # a tie is no cut
    assert not V.raises_acceptance(_t5(on=(0.35, NAN, 0.89, 0.53))).holds


def test_table5_largest_gain_compares_at_printed_precision():
    t = _t5()
    t["improvement_pct"] = [50.004, 50.001, 20.0, 10.0]               # 50.00 and 50.00: a tie
    assert not V.largest_gain_for_smallest(t).holds
    t["improvement_pct"] = [50.0, 60.0, 20.0, 10.0]
    assert not V.largest_gain_for_smallest(t).holds
    t["improvement_pct"] = [51.0, 50.0, 20.0, 10.0]                  # ahead by 1 pp: within a 2 pp margin
    assert V.GAIN_MARGIN == 2.0 and not V.largest_gain_for_smallest(t, margin=V.GAIN_MARGIN).holds
    assert V.largest_gain_for_smallest(t, margin=0.5).holds and V.largest_gain_for_smallest(t).holds
    t["improvement_pct"] = [52.0, 50.0, 20.0, 10.0]                  # exactly the margin: not more than it
    assert not V.largest_gain_for_smallest(t, margin=V.GAIN_MARGIN).holds
    t["improvement_pct"] = [54.0, 50.0, 44.7, 34.0]                  # the paper's own gains pass, margin named
    c = V.largest_gain_for_smallest(t, margin=V.GAIN_MARGIN)
    assert c.holds and c.margin == 2.0 and "margin 2" in c.evidence
    assert V.largest_gain_for_smallest(t.iloc[:0]).evidence == "rejected: empty"
    assert V.gains_shrink_with_size(t.iloc[:0]).evidence == "rejected: empty"
    with pytest.raises(ValueError, match="improvement_pct"):
        V.gains_shrink_with_size(t.drop(columns="improvement_pct"))


# ------------------------------------------------------------------ Theorem 1
def _curves():
    rows = []
    for rec1 in (0.8, 1.0):
        for fp in (0.0, 0.5, 1.0):
            w = rec1 * fp
            rows.append(dict(rec1=rec1, fp=fp, closed_form=w, closed_form_inclusive=w + 0.1, bound_eq31=w + 0.2,
                             monte_carlo=w + 0.01, mc_se=0.005))
    return pd.DataFrame(rows)


def test_theorem1_curve_verdicts():
    c = _curves()
    assert V.waste_nondecreasing_in_fp(c).evidence == "all 4 hold"
    assert V.waste_nondecreasing_in_fp(c.iloc[::-1]).holds             # read in FP order
    bad = c.copy()
    bad.loc[(bad.rec1 == 1.0) & (bad.fp == 1.0), "closed_form"] = 0.2
    assert V.waste_nondecreasing_in_fp(bad).evidence == "fails for 1 of 4: Rec1=1.0, closed_form"
    assert V.waste_nondecreasing_in_fp(c, ("closed_form_inclusive",)).evidence == "all 2 hold"
    assert not V.waste_nondecreasing_in_fp(c[c.fp == 0.0]).holds        # one point per curve
    assert not V.waste_nondecreasing_in_fp(c.assign(closed_form=NAN)).holds
    assert V.waste_within_bound(c).evidence == "all 6 hold"
    assert V.waste_within_bound(c.assign(bound_eq31=c.closed_form)).holds   # equal is within
    over = V.waste_within_bound(c.assign(bound_eq31=c.closed_form - 0.01 * (c.fp == 0.5)))
    assert over.evidence == "fails for 2 of 6: Rec1=0.8, FP=0.5, Rec1=1.0, FP=0.5"
    assert V.mc_deviation(c) == pytest.approx(2.0)
    assert V.mc_deviation(c.assign(mc_se=0.0, monte_carlo=c.closed_form)) == 0.0


def test_waste_rises_with_fpr_and_per_draft_agreement():
    live = pd.DataFrame(dict(predictor=["OFF", "MLP", "LGBM", "RF"], FPR=[NAN, 0.40, 0.20, 0.30],
                             wasted_per_round=[3.0, 0.6, 0.1, 0.3]))
    assert by_fpr(live).predictor.tolist() == ["LGBM", "RF", "MLP"]
    ok = V.waste_rises_with_fpr(live, "wasted_per_round")
    assert ok.holds and ok.evidence == "0.1 < 0.3 < 0.6"
    assert not V.waste_rises_with_fpr(live.assign(wasted_per_round=[3.0, 0.6, 0.1, 0.7]), "wasted_per_round").holds
    assert not V.waste_rises_with_fpr(live.assign(wasted_per_round=[3.0, 0.3, 0.1, 0.3]), "wasted_per_round").holds
    assert V.waste_rises_with_fpr(live.iloc[:1], "wasted_per_round").evidence == "rejected: empty"
    per_draft = pd.DataFrame({"LGBM": [0.1, 0.2, 0.3, NAN], "RF": [0.2, 0.2, 0.1, 0.2], "MLP": [0.3, 0.2, 0.4, 0.3]},
                             index=["xs", "s", "m", "l"])
    order = by_fpr(live).predictor
    assert V.drafts_in_fpr_order(per_draft, order) == 2                # xs strictly, s by ties; m breaks, l has NaN
    with pytest.raises(ValueError, match="OFF"):
        V.drafts_in_fpr_order(per_draft, ["OFF", "MLP"])
