"""li2026 (WISP), wasted drafting: the paper's rows on the stop-at-first-predicted-rejection controller behind
``notebooks/li2026_wisp.ipynb`` (the accuracy side, Tables 4, 8, 10, 11 and Figs 2-3, is ``drafting``).

- Theorem 1 (App A): ``theorem1_points`` (the closed form at our and the paper's (Rec1, FPR)), ``theorem1_rows``;
  live ``theorem1_live_rows``; the real pair's ``theorem1_real_rows`` (curves and measurements: ``predictor.waste``);
- Table 5 (Sec 5.4.1): ``table5_rows`` on the zoo drafts' live runs, ``table5_real_rows`` on the real pair's replay;
- Fig 1 (Sec 3.2): ``fig1`` / ``fig1_rows`` on the live rounds, ``fig1_real`` / ``fig1_real_rows`` on the replay,
  device goodput by ``device_goodput``.

Rows name the statement ids they hold; statuses are decided by ``compare``.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ... import claims
from ...predictor import controller, theorem1
from ...compare import Comparison, null_tolerance
from ...predictor.waste import by_fpr
from . import device_goodput, drafting_figures as predictor_figures, drafting_verdicts as verdicts
from .drafting import ACCEPT_NONE, QWEN, REAL, WHO, paper_table4

PROMPT_LEN = 96  # P.zoo_prompts truncates prompts to their last 96 tokens; the cached context is approximate


def theorem1_points(table4: pd.DataFrame, paper: Mapping, alpha: np.ndarray, window: int) -> pd.DataFrame:
    """E[W] by the closed form at our predictors' test (Rec1, FPR) and at the paper's Table 4 ones."""
    ours = table4[["predictor", "Rec1", "FPR"]].assign(source="ours (test split)")
    t4 = paper_table4(paper)
    paper_pts = pd.DataFrame([dict(predictor=k, Rec1=r.Rec1, FPR=r.FPR, source="paper Table 4") for k, r in t4.iterrows()])
    points = pd.concat([ours, paper_pts], ignore_index=True)
    points["expected_waste"] = [theorem1.expected_waste(alpha, window, r1, f) for r1, f in zip(points.Rec1, points.FPR)]
    return points


def theorem1_rows(cmp: Comparison, points: pd.DataFrame, n_ours: int) -> None:
    """Theorem 1 by the closed form: our trained predictors' E[W] in FPR order (the first ``n_ours`` points)."""
    ours = points.iloc[:n_ours]
    cmp.claim("Theorem 1", "claim: trained predictors, lower FPR -> lower E[W] (closed form, E[W] in FPR order)", "holds",
              verdicts.waste_rises_with_fpr(ours.assign(w=ours.expected_waste.to_numpy()), "w"),
              strength="match", statements="thm1-monotone", kind="analytic", models="zoo", cause="our-reading",
              note="the paper's closed form eq (25) at our predictors' test (Rec1, FPR) (analytic); the predictors also differ "
                   "in Rec1, which the theorem holds fixed")


def theorem1_live_rows(cmp: Comparison, live_w: pd.DataFrame, per_draft: pd.DataFrame) -> None:
    """Theorem 1 live: measured waste per round in the predictors' test-FPR order, pooled over drafts (and how
    many drafts keep that order alone)."""
    trained = by_fpr(live_w)   # the four trained predictors, lowest test FPR first
    agree = verdicts.drafts_in_fpr_order(per_draft, trained.predictor)
    cmp.claim("Theorem 1", "claim: live, lower FPR -> fewer wasted draft tokens per round (pooled over drafts)", "holds",
              verdicts.waste_rises_with_fpr(live_w, "wasted_per_round"), strength="match", statements="thm1-monotone",
              # the null: waste that does not depend on the predictor (every predictor at the mean)
              null_claim=verdicts.waste_rises_with_fpr(live_w.assign(wasted_per_round=live_w.wasted_per_round.mean()),
                                                       "wasted_per_round"), models="zoo", cause="our-reading",
              note=f"same order for {agree} of {len(per_draft)} drafts separately; the predictors also differ in Rec1; "
                   + "W per round by predictor: " + ", ".join(f"{p} {w:.2f} (FPR {f:.2f})" for p, f, w in
                                                             zip(trained.predictor, trained.FPR, trained.wasted_per_round)))


def table5_rows(cmp: Comparison, paper: Mapping, t5: pd.DataFrame, setting: str) -> None:
    """Table 5 row by row (zoo drafts in the Qwen3 slots, ordered by size) and Sec 5.4.1's claims."""
    for (d, row), off, on, qwen in zip(t5.iterrows(), paper["table5-off"], paper["table5-on"], QWEN):
        note = f"zoo draft {d} ({row.draft_params / 1e6:.1f}M parameters) in the slot of Qwen3-{qwen} (ordered by size); {setting}"
        cmp.add("Table 5", f"{d} acceptance, predictor OFF", off, round(float(row.OFF), 3), "", tolerance=0.1,
                note=f"{note}; {ACCEPT_NONE}", null=0.0, statements="table5-off", models="zoo", cause="models")
        cmp.add("Table 5", f"{d} acceptance, predictor ON", on, round(float(row.ON), 3), "", note=note,
                null=round(float(row.OFF), 3),   # no effect: ON reproduces our OFF, so the tolerance must reject it
                tolerance=null_tolerance(on, round(float(row.OFF), 3), 0.1), statements="table5-on", models="zoo", cause="models")
    no_effect = t5.assign(ON=t5.OFF, improvement_pct=0.0, wasted_per_round_ON=t5.wasted_per_round_OFF)   # the null: ON = OFF
    cmp.claim("Table 5", "claim: the predictor raises draft acceptance for every draft", "holds",
              verdicts.raises_acceptance(t5), null_claim=verdicts.raises_acceptance(no_effect), strength="match",
              statements="table5-on", models="zoo", cause="models")
    cmp.claim("Table 5", "claim: the largest relative gain is for the smallest draft (gains by draft)", t5.index[0],
              verdicts.largest_gain_for_smallest(t5, margin=verdicts.GAIN_MARGIN),
              # the null: the strongest other draft has the largest gain (the same test naming it; a no-effect null ties)
              null_claim=claims.argmax_is(t5.improvement_pct.round(2).to_dict(), claims.strongest_alternative(
                  t5.improvement_pct.round(2).to_dict(), t5.index[0]), margin=verdicts.GAIN_MARGIN), strength="match",
              statements="table5-smaller-gains", models="zoo", cause="models")
    cmp.claim("Table 5", "claim: gains are larger for smaller drafts (gain by draft, smallest first)",
              " > ".join(f"{g:.1f}" for g in paper["table5-improvement"]), verdicts.gains_shrink_with_size(t5), strength="trend",
              null_claim=verdicts.gains_shrink_with_size(no_effect), statements="table5-smaller-gains", models="zoo", cause="models",
              note="the paper: smaller drafts align less with the target, so stopping early helps them more")
    spread = (f"fixed-window acceptance is lower on the zoo (OFF {t5.OFF.min():.2f}-{t5.OFF.max():.2f} "
              f"vs the paper's {min(paper['table5-off']):.2f}-{max(paper['table5-off']):.2f}), so cutting the window's tail gains more")
    for (d, g), p_gain, qwen in zip(t5.improvement_pct.items(), paper["table5-improvement"], QWEN):
        cmp.add("Table 5", f"{d} relative acceptance improvement (Qwen3-{qwen} slot)", p_gain, round(float(g), 1), "%",
                tolerance=10.0, note=spread, null=0.0, statements="table5-improvement", models="zoo", cause="models")
    cmp.claim("Table 5", "claim: the controller cuts wasted draft tokens per round for every draft", "holds",
              verdicts.cuts_waste(t5), null_claim=verdicts.cuts_waste(no_effect), strength="match", statements="sec54-reduces-waste",
              models="zoo", cause="models",
              reproduced=f"OFF {t5.wasted_per_round_OFF.min():.2f}-{t5.wasted_per_round_OFF.max():.2f}, "
                         f"ON {t5.wasted_per_round_ON.min():.2f}-{t5.wasted_per_round_ON.max():.2f} tokens")


def table5_real_rows(cmp: Comparison, paper: Mapping, t5: pd.DataFrame, who: str, replayed: str) -> None:
    """The real pair's replayed Table 5 in the Qwen3-0.6B slot, and the two claims on it."""
    r = t5.iloc[0]
    off, on = float(r.OFF), float(r.ON)
    rp = dict(models="real pair", cause="models")
    cmp.add("Table 5" + who, "acceptance, predictor OFF (Qwen3-0.6B slot)", paper["table5-off"][0], round(off, 3), "",
            tolerance=0.1, statements="table5-off", null=0.0, note=f"the fixed window as traced; {replayed}; {ACCEPT_NONE}", **rp)
    cmp.add("Table 5" + who, "acceptance, predictor ON (Qwen3-0.6B slot)", paper["table5-on"][0], round(on, 3), "", note=replayed,
            null=round(off, 3), tolerance=null_tolerance(paper["table5-on"][0], round(off, 3), 0.1), statements="table5-on", **rp)
    cmp.add("Table 5" + who, "relative acceptance improvement (Qwen3-0.6B slot)", paper["table5-improvement"][0],
            round(float(r.improvement_pct), 1), "%", tolerance=10.0, null=0.0, statements="table5-improvement",
            note=f"95 % prompt bootstrap [{r.improvement_low:.1f}, {r.improvement_high:.1f}] %; {replayed}", **rp)
    no_effect = t5.assign(ON=t5.OFF, wasted_per_round_ON=t5.wasted_per_round_OFF)   # the null: ON = OFF
    cmp.claim("Table 5" + who, "claim: the predictor raises draft acceptance", "holds", verdicts.raises_acceptance(t5),
              null_claim=verdicts.raises_acceptance(no_effect), strength="match", note=replayed, statements="table5-on", **rp)
    cmp.claim("Table 5" + who, "claim: the controller cuts wasted draft tokens per round", "holds", verdicts.cuts_waste(t5),
              null_claim=verdicts.cuts_waste(no_effect), strength="match",
              reproduced=f"OFF {r.wasted_per_round_OFF:.2f}, ON {r.wasted_per_round_ON:.2f} tokens",
              note=replayed, statements="sec54-reduces-waste", **rp)


def fig1(ablation: pd.DataFrame, draft_rate: float, seed: int):
    """Fig 1: per round, wasted draft tokens against the modelled device goodput (``device_goodput``); returns
    the figure, its data and the Pearson r."""
    fig, f1, _, r1 = _fig1(ablation, draft_rate, seed, 0.3, "Pearson r = {r:.2f}")
    return fig, f1[["draft", "mode", "prompt", "round", "drafted", "accepted", "wasted", "goodput"]], r1


def _fig1(rounds: pd.DataFrame, draft_rate: float, seed: int, alpha: float, title: str, **title_kw):
    """Fig 1's figure of ``rounds`` (mode OFF / ON): each round's goodput over its wasted tokens, their mean;
    ``title`` is formatted with the Pearson r. Returns the figure, the rounds with goodput, the means and r."""
    f1 = device_goodput.round_goodput(rounds, draft_rate, prompt_len=PROMPT_LEN)
    f1 = f1[f1.drafted > 0]
    fig, summary, r1 = predictor_figures.waste_goodput_figure(f1, seed, alpha, title, **title_kw)
    return fig, f1, summary, r1


def fig1_rows(cmp: Comparison, f1: pd.DataFrame, who: str = "",
              note: str = "modelled device time (50 tok/s drafting + the paper's verifier estimator eq 19), zoo models; partly by "
                          "construction: a wasted token adds drafting time and commits nothing") -> None:
    """Sec 3.2's claim on Fig 1: more wasted drafting, lower device goodput."""
    # modelled device time: a wasted token adds drafting time and commits nothing, so the sign follows from eq (19)'s
    # model on our rounds: analytic
    cmp.claim("Fig 1" + who, "claim: more wasted drafting, lower device goodput (Pearson r)", "negative",
              claims.correlation_sign(f1.wasted, f1.goodput, -1), strength="trend", statements="fig1-negative", note=note,
              kind="analytic", models="real pair" if who else "zoo", cause="our-reading")


def fig1_real(real_traces: pd.DataFrame, replay: pd.DataFrame, draft_rate: float, seed: int):
    """Fig 1 on the real pair from its replayed test-prompt rounds (no model run); returns the figure, its
    data and the mean goodput per wasted count."""
    rounds, keys = controller.replayed_rounds(replay, real_traces)
    fig, f1, summary, _ = _fig1(rounds, draft_rate, seed, 0.4, REAL + ": Pearson r = {r:.2f}", fontsize=9)
    return fig, f1[keys + ["mode", "drafted", "accepted", "wasted", "goodput"]], summary


def fig1_real_rows(cmp: Comparison, f1: pd.DataFrame, replay: pd.DataFrame) -> None:
    fig1_rows(cmp, f1, WHO, f"{len(f1)} replayed rounds of the real pair's {replay.key.nunique()} test prompts (fixed window and "
                            "the MLP's cut), T = 0 and 1; modelled device time (50 tok/s drafting + the paper's verifier estimator "
                            "eq 19); partly by construction: a wasted token adds drafting time and commits nothing")


def theorem1_real_rows(cmp: Comparison, thm: pd.DataFrame, replay: pd.DataFrame) -> None:
    """Theorem 1 on the real pair: E[W] in FPR order, by the closed form and replayed."""
    order = "; ".join(f"{r.predictor}: FPR {r.FPR:.3f}, Rec1 {r.Rec1:.3f}, E[W] {r.closed_form:.3f}, replayed W "
                      f"{r.replayed_wasted_per_round:.3f}" for r in thm.itertuples())
    cmp.claim("Theorem 1" + WHO, "claim: trained predictors, lower FPR -> lower E[W] (closed form, E[W] in FPR order)", "holds",
              verdicts.waste_rises_with_fpr(thm, "closed_form"), strength="match", kind="analytic", models="real pair",
              cause="our-reading",
              note=f"the real pair's alpha_i and its predictors' test (Rec1, FPR); they also differ in Rec1, which the theorem "
                   f"holds fixed; {order}", statements="thm1-monotone")
    cmp.claim("Theorem 1" + WHO, "claim: replayed, lower FPR -> fewer wasted draft tokens per round", "holds",
              verdicts.waste_rises_with_fpr(thm, "replayed_wasted_per_round"), strength="match", models="real pair",
              null_claim=verdicts.waste_rises_with_fpr(thm.assign(replayed_wasted_per_round=thm.replayed_wasted_per_round.mean()),
                                                       "replayed_wasted_per_round"), cause="our-reading",
              note=f"each predictor's stop rule replayed on the {len(replay)} fixed-window rounds of the "
                   f"{replay.key.nunique()} test prompts (T = 0 and 1); {order}", statements="thm1-monotone")
