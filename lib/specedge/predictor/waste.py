"""Wasted drafting of the trained predictors (li2026 Theorem 1, App A) measured three ways: the closed form and
its Monte Carlo over FP (``theorem1_curves``), the controller's live rounds (``theorem1_live``) and each stop rule
replayed on fixed-window traces (``theorem1_real``); ``rate`` and ``waste`` are WISP's acceptance rate and eq (7)'s
wasted draft tokens per round of a frame of rounds.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import sampling
from .controller import replay_stop_rule
from .intervals import bootstrap_statistic
from .models import LABELS
from .theorem1 import expected_waste, simulate_waste, waste_bound
from .traces import position_acceptance


def filled_alpha(traces: pd.DataFrame, window: int) -> np.ndarray:
    """alpha_i of the fixed-window traces, positions never reached filled with the mean."""
    alpha = position_acceptance(traces, window)
    return np.where(np.isnan(alpha), np.nanmean(alpha), alpha)


FPS = np.linspace(0, 1, 11)


def by_fpr(frame: pd.DataFrame, fpr: str = "FPR") -> pd.DataFrame:
    """The rows that have an FPR, lowest FPR first (ties keep their order)."""
    return frame.dropna(subset=[fpr]).sort_values(fpr, kind="stable")


def theorem1_curves(alpha: np.ndarray, window: int, n_mc: int, seed: int) -> pd.DataFrame:
    """E[W] over FP for Rec1 in {0.8, 0.95, 1}: closed form (exclusive and inclusive rule), Monte Carlo with
    its standard error, and eq (31)'s bound."""
    rows = []
    for rec1 in (0.8, 0.95, 1.0):
        for fp in FPS:
            mc = simulate_waste(alpha, window, rec1, fp, n=n_mc, seed=seed)
            rows.append(dict(kind="curve", rec1=rec1, fp=fp, closed_form=expected_waste(alpha, window, rec1, fp),
                             closed_form_inclusive=expected_waste(alpha, window, rec1, fp, inclusive=True),
                             monte_carlo=mc["waste"], mc_se=mc["waste_se"], bound_eq31=waste_bound(alpha, window, fp)))
    return pd.DataFrame(rows)


def rate(f: pd.DataFrame) -> float:
    """Draft acceptance rate of rounds ``f``: accepted / drafted (WISP's definition)."""
    return sampling.acceptance_rate(f.accepted.to_numpy(), f.drafted.to_numpy())


def waste(f: pd.DataFrame) -> float:
    """Wasted draft tokens per round of rounds ``f`` (eq 7: drafted - accepted)."""
    return float((f.drafted - f.accepted).mean())


def theorem1_live(runs: pd.DataFrame, table4: pd.DataFrame, alpha_t: np.ndarray, window: int):
    """Measured wasted draft tokens per round of each live mode next to the closed form at the predictor's test
    (Rec1, FPR); and per draft and mode."""
    op = table4.set_index("predictor")[["Rec1", "FPR"]]
    live_w = pd.DataFrame([dict(predictor=mode, wasted_per_round=waste(f), drafted_per_round=float(f.drafted.mean()),
                                acceptance=rate(f)) for mode, f in runs.groupby("mode", sort=False)])
    live_w = live_w.merge(op, left_on="predictor", right_index=True, how="left")
    live_w["closed_form"] = [np.nan if np.isnan(f) else expected_waste(alpha_t, window, r1, f)
                             for r1, f in zip(live_w.Rec1, live_w.FPR)]
    per_draft = runs.groupby(["draft", "mode"]).apply(waste, include_groups=False).unstack("mode")
    return live_w, per_draft


def theorem1_real(real_traces: pd.DataFrame, meta: Mapping, real_preds: Mapping, table4: pd.DataFrame,
                  replay: pd.DataFrame) -> pd.DataFrame:
    """Theorem 1 on the real pair: per predictor, the closed form E[W] (eq 25) and eq (31)'s bound with the
    pair's alpha_i and the predictor's test (Rec1, FPR), beside its stop rule replayed on the test prompts'
    fixed-window rounds; lowest FPR first."""
    window = meta["window"]
    alpha = filled_alpha(real_traces, window)
    op = table4.set_index("predictor")[["Rec1", "FPR"]]
    in_test = real_traces.domain.str.cat(real_traces.prompt.astype(str), sep="/").isin(meta["split_prompts"]["test"])
    rows = []
    for fam, pred in real_preds.items():
        rp = replay_stop_rule(real_traces[in_test], pred)
        rec1, fpr = (float(op.loc[LABELS[fam], c]) for c in ("Rec1", "FPR"))
        rows.append(dict(predictor=LABELS[fam], Rec1=rec1, FPR=fpr,
                         closed_form=expected_waste(alpha, window, rec1, fpr),
                         bound_eq31=waste_bound(alpha, window, fpr),
                         replayed_wasted_per_round=float((rp.drafted_ON - rp.accepted_ON).mean()),
                         replayed_drafted_per_round=float(rp.drafted_ON.mean()),
                         replayed_acceptance=sampling.acceptance_rate(rp.accepted_ON.to_numpy(), rp.drafted_ON.to_numpy())))
    print(f"real pair alpha_i = {np.round(alpha, 3)} (K_max = {window}); fixed window wastes "
          f"{float((replay.drafted_OFF - replay.accepted_OFF).mean()):.2f} tokens per round")
    return by_fpr(pd.DataFrame(rows))


def ablation_summary(runs: pd.DataFrame, sizes: Mapping[str, int]):
    """Table 5's view of ``controller.ablation_over_drafts`` runs: acceptance OFF / ON (WISP's MLP), relative improvement and wasted tokens per
    round, one row per draft, smallest first; and the OFF/ON rounds (``ablation``)."""
    ablation = runs[runs["mode"].isin(["OFF", LABELS["mlp"]])].replace({"mode": {LABELS["mlp"]: "ON"}})
    by_size = sorted(sizes, key=sizes.get)  # smallest draft first
    t5 = ablation.groupby(["draft", "mode"]).apply(rate, include_groups=False).unstack("mode").reindex(by_size)[["OFF", "ON"]]
    t5.insert(0, "draft_params", [sizes[d] for d in t5.index])
    t5["improvement_pct"] = 100 * (t5.ON / t5.OFF - 1)
    w5 = ablation.groupby(["draft", "mode"]).apply(waste, include_groups=False).unstack("mode").reindex(by_size)
    t5["wasted_per_round_OFF"], t5["wasted_per_round_ON"] = w5.OFF, w5.ON
    return t5, ablation


def replay_summary(real_traces: pd.DataFrame, test_prompts: Sequence[str], mlp, label: str, n_boot: int, seed: int):
    """Table 5 of fixed-window traces (the real pair's), replayed (no model run: ``replay_stop_rule``) on its
    test prompts; the relative improvement with a 95 % prompt bootstrap. Returns the one-row table and the rounds."""
    in_test = real_traces.domain.str.cat(real_traces.prompt.astype(str), sep="/").isin(test_prompts)
    replay = replay_stop_rule(real_traces[in_test], mlp)
    replay["key"] = replay.domain + "/" + replay.prompt.astype(str)
    rate_of = lambda f, m: sampling.acceptance_rate(f[f"accepted_{m}"].to_numpy(), f[f"drafted_{m}"].to_numpy())
    gain_of = lambda f: 100 * (rate_of(f, "ON") / rate_of(f, "OFF") - 1)
    gain = bootstrap_statistic(replay, replay.key, gain_of, n=n_boot, seed=seed)
    t5 = pd.DataFrame([dict(draft=label, rounds=len(replay), prompts=replay.key.nunique(), OFF=rate_of(replay, "OFF"),
                            ON=rate_of(replay, "ON"), improvement_pct=gain[0], improvement_low=gain[1], improvement_high=gain[2],
                            wasted_per_round_OFF=float((replay.drafted_OFF - replay.accepted_OFF).mean()),
                            wasted_per_round_ON=float((replay.drafted_ON - replay.accepted_ON).mean()))]).set_index("draft")
    return t5, replay
