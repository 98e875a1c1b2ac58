"""Figures of the rejection predictor any of its users draws: acceptance against each token statistic and their
Pearson r (li2026 Figs 2-3), the row-normalised confusion matrices (Fig 10), Theorem 1's expected waste over FP (App A),
the families' FPR at the paper's operating points over split seeds (Table 4), device goodput over wasted drafting (Fig 1).
"""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ... import plotting
from ...predictor.dataset import STATS
from ...predictor.models import FAMILIES, LABELS
from ...predictor.operating import UNPENALISED
from ...predictor.waste import FPS

UNITS = dict(max_prob="confidence (max prob)", entropy="entropy (nats)", margin="top-2 margin (prob)",
             logit_std="logit std (logit units)")


def statistic_figures(fig2: pd.DataFrame, fig3: pd.DataFrame, out, suffix: str = "", drafts: Sequence[str] = ()) -> pd.DataFrame:
    """Fig 2 (acceptance per decile of each statistic) and Fig 3 (Pearson r), saved under stems ending in
    ``suffix``; returns the pooled Pearson r per statistic and temperature."""
    g = sns.relplot(data=fig2, x="value", y="acceptance", hue="temperature", col="statistic", kind="line",
                    marker="o", facet_kws=dict(sharex=False), height=2.8, aspect=1.0)
    for ax, s in zip(g.axes.flat, STATS):
        ax.set_title(s)
        ax.set_xlabel(UNITS[s])
    g.axes.flat[0].set_ylabel("acceptance rate")
    plotting.save(g.figure, fig2, out, "fig2_stats_vs_acceptance" + suffix)
    g3 = sns.catplot(data=fig3, x="statistic", y="pearson_r", hue="draft", hue_order=["all", *drafts],
                     col="temperature", kind="bar", height=3.2, aspect=1.1)
    g3.set_titles("{col_name}")
    for ax in g3.axes.flat:
        ax.axhline(0, color="k", lw=0.8)
    g3.axes.flat[0].set_ylabel("Pearson r with acceptance")
    plotting.save(g3.figure, fig3, out, "fig3_pearson" + suffix)
    return fig3[fig3.draft == "all"].pivot(index="statistic", columns="temperature", values="pearson_r")


def confusion_figure(table10: pd.DataFrame):
    """The row-normalised confusion matrix of each predictor; returns the figure and its data."""
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.2), sharey=True)
    rows = []
    for k, (ax, (_, c)) in enumerate(zip(axes, table10.iterrows())):
        m = np.array([[c.TN_pct, c.FP_pct], [c.FN_pct, c.TP_pct]]) / 100
        sns.heatmap(m, annot=True, fmt=".2f", vmin=0, vmax=1, cmap="Blues", cbar=False, ax=ax,
                    xticklabels=["pred rejected", "pred accepted"], yticklabels=["rejected", "accepted"])
        ax.set_title(c.predictor)
        ax.set_xlabel("prediction")
        ax.set_ylabel("true class" if k == 0 else "")
        ax.tick_params(labelleft=k == 0)
        rows += [dict(predictor=c.predictor, true=t, pred=p, fraction=m[i, j])
                 for i, t in enumerate(["rejected", "accepted"]) for j, p in enumerate(["rejected", "accepted"])]
    fig.tight_layout()
    return fig, pd.DataFrame(rows)


def theorem1_figure(thm: pd.DataFrame, points: pd.DataFrame):
    """The curves of ``waste.theorem1_curves`` with E[W] at predictors' (Rec1, FPR) points, ``source`` "paper Table 4" hollow."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for rec1, g in thm.groupby("rec1"):
        ax.plot(g.fp, g.closed_form, label=f"closed form, Rec$_1$={rec1}")
        ax.errorbar(g.fp, g.monte_carlo, yerr=2 * g.mc_se, fmt="o", ms=3, color=ax.lines[-1].get_color())
    g = thm[thm.rec1 == 0.95]
    ax.plot(g.fp, g.closed_form_inclusive, ":", color="grey", label="inclusive rule (flagged token sent), Rec$_1$=0.95")
    ax.plot(FPS, thm.groupby("fp").bound_eq31.first(), "k--", label="bound eq (31)")
    markers = dict(zip((LABELS[f] for f in FAMILIES), "*^sD"))
    for _, p in points.iterrows():
        hollow = p.source == "paper Table 4"
        ax.scatter(p.FPR, p.expected_waste, marker=markers[p.predictor], s=70, zorder=5, edgecolors="k",
                   facecolors="none" if hollow else "k", label=f"{p.predictor}, {p.source}")
    ax.set_xlabel("false-alarm rate at the first rejection FP")
    ax.set_ylabel("E[W] (wasted draft tokens / round)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def operating_fpr_figure(summaries, paper_fpr):
    """FPR at the paper's operating points: per pair (``drafting.operating_summary`` frames by name) the seed mean and its
    95 % t-interval per family, the MLP without the penalty beside them; ``paper_fpr`` (family label -> FPR, the
    paper's Table 4) as black marks."""
    families = [LABELS[f] for f in FAMILIES]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    names, width = [*families, UNPENALISED], 0.8 / len(summaries)
    for k, (pair, s) in enumerate(summaries.items()):
        f = s[s.metric == "FPR"].set_index("predictor").reindex(names)
        ax.bar(np.arange(len(names)) + (k - (len(summaries) - 1) / 2) * width, f["mean"], width, label=pair,
               yerr=[f["mean"] - f["low"], f["high"] - f["mean"]], capsize=3)
    ax.scatter(np.arange(len(families)), pd.Series(paper_fpr).reindex(families), marker="_", s=400, c="k", zorder=5,
               label="paper (Table 4)")
    ax.set_xticks(np.arange(len(names)), [n.replace(", ", ",\n") for n in names], fontsize=8)
    ax.set_ylabel("FPR on rejected tokens (fraction)")
    ax.set_title("the paper's operating points: MLP class-weighted BCE at 0.5, trees at 0.5 (95 % t over split seeds)", fontsize=9)
    ax.set_ylim(0, 1.2)
    ax.legend(fontsize=8, ncol=3, loc="upper center")
    fig.tight_layout()
    return fig


def waste_goodput_figure(rounds: pd.DataFrame, seed: int, alpha: float, title: str, **title_kw):
    """Each round's device goodput over its wasted draft tokens (li2026 Fig 1; ``rounds``: mode, wasted, goodput),
    jittered by mode, and the mean goodput per wasted count; ``title`` is formatted with the Pearson r. Returns the
    figure, the means (goodput, rounds per wasted count) and r."""
    summary = rounds.groupby("wasted").agg(goodput=("goodput", "mean"), rounds=("goodput", "size")).reset_index()
    r = float(np.corrcoef(rounds.wasted, rounds.goodput)[0, 1])
    fig, ax = plt.subplots(figsize=(6, 4))
    np.random.seed(seed)  # seaborn's strip jitter draws from numpy's global generator
    sns.stripplot(data=rounds, x="wasted", y="goodput", hue="mode", alpha=alpha, size=3, ax=ax, dodge=True)
    ax.plot(np.arange(len(summary)), summary.goodput, "k-o", label="mean")
    ax.set_xlabel("wasted draft tokens per round W")
    ax.set_ylabel("device goodput (tokens/s)")
    ax.set_title(title.format(r=r), **title_kw)
    ax.legend(fontsize=8)
    return fig, summary, r
