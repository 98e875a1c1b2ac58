"""venkatesha2025's figures: Fig 6 (eq 9 heatmaps with the paper's and our points), Figs 4a and 4b (the speedup and
cache-miss rate over pre-drafting threads and over the draft length) and each exit's agreement with the final layer.
Each returns the matplotlib figure; the notebook saves it with its data (``plotting.save``)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...solvers import venkatesha2025 as v


def fig6(grid: pd.DataFrame, points: pd.DataFrame):
    """Eq 9's SD->FSD speedup over (rho, c) for gamma = 4, 7, 10, the OPT-66B line and the points
    (``who`` = "paper (Jetson)" or "ours")."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharey=True)
    for ax, g in zip(axes, (4, 7, 10)):
        sub = grid[grid.gamma == g]
        piv = sub.pivot(index="c", columns="rho", values="speedup")
        im = ax.pcolormesh(piv.columns, piv.index, piv.values, cmap="viridis", shading="nearest", vmin=1, vmax=11)
        cs = ax.contour(piv.columns, piv.index, piv.values, levels=[1.5, 2, 3, 5], colors="white", linewidths=0.8)
        ax.clabel(cs, fmt="%.1fx", fontsize=7)
        ax.axhline(v.FIG6_C, color="gold", lw=2, label="c = 0.30 (OPT-66B, Jetson)")
        for who, marker in (("paper (Jetson)", "o"), ("ours", "^")):
            p = points[points.who == who]
            if len(p):
                ax.scatter(p.rho, p.c, marker=marker, s=45, edgecolor="k", facecolor="w" if who == "ours" else "tab:red",
                           label=who, zorder=3)
        ax.set_title(f"γ = {g}")
        ax.set_xlabel("cache-miss rate ρ (fraction)")
    axes[0].set_ylabel("latency ratio c = T_d / T_t")
    axes[0].legend(loc="upper right", fontsize=7)
    fig.colorbar(im, ax=axes, label="speedup SD → FSD (×)")
    return fig


def threads_figure(f4a: pd.DataFrame):
    """SD->FSD speedup and cache-miss rate against the number of pre-drafting threads (``early_exit.sim.threads_sweep``)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(f4a.threads, f4a.speedup_sd_fsd, "o-", label="speedup SD → FSD")
    ax.set_xlabel("early-exit threads")
    ax.set_ylabel("speedup (×)")
    ax2 = ax.twinx()
    ax2.plot(f4a.threads, 100 * f4a.miss_rate, "s--", color="tab:orange", label="cache miss")
    ax2.set_ylabel("cache-miss rate (%)")
    ax2.grid(False)
    fig.legend(loc="upper center", ncol=2, fontsize=8)
    return fig


def gamma_figure(f4b: pd.DataFrame):
    """AR->SD and SD->FSD speedups against the draft length gamma (``early_exit.sim.gamma_sweep``)."""
    long = f4b.melt(id_vars="gamma", value_vars=["speedup_ar_sd", "speedup_sd_fsd"], var_name="speedup", value_name="x")
    long["speedup"] = long.speedup.map({"speedup_ar_sd": "AR → SD", "speedup_sd_fsd": "SD → FSD"})
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    sns.lineplot(data=long, x="gamma", y="x", hue="speedup", marker="o", ax=ax)
    ax.axhline(1, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("draft tokens γ")
    ax.set_ylabel("speedup (×)")
    return fig


def exit_agreement_figure(agree: pd.DataFrame):
    """Per exit (fraction of depth): agreement of the exit's argmax with the final layer's, trained adapters vs the logit
    lens, with the 95 % intervals of ``early_exit.offline.agreement_table``."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for kind, label in (("adapters", "early exit (adapter)"), ("lens", "logit lens (no adapter)")):
        a = agree[agree.kind == kind]
        ax.plot(a.depth, 100 * a.agreement, "o-", ms=3, label=label)
        ax.fill_between(a.depth, 100 * a.low, 100 * a.high, alpha=0.25)
    ax.set_xlabel("exit depth (layer / 28)")
    ax.set_ylabel("agreement with the final exit (%)")
    ax.legend(fontsize=8)
    return fig


def gamma_sources_figure(f4b: pd.DataFrame):
    """AR->SD and SD->FSD speedups against the draft length γ, one panel per timing source, with the 95 %
    prompt-bootstrap intervals of ``early_exit.draft_length.sweep``."""
    sources = list(dict.fromkeys(f4b.source))
    fig, axes = plt.subplots(1, len(sources), figsize=(3.6 * len(sources), 3.4), sharey=False, squeeze=False)
    for ax, source in zip(axes[0], sources):
        f = f4b[f4b.source == source].sort_values("gamma")
        for col, label, marker in (("speedup_ar_sd", "AR → SD", "o"), ("speedup_sd_fsd", "SD → FSD", "s")):
            ax.plot(f.gamma, f[col], marker=marker, label=label)
            ax.fill_between(f.gamma, f[f"{col}_low"], f[f"{col}_high"], alpha=0.25)
        ax.axhline(1, color="grey", lw=0.8, ls="--")
        ax.set_title(source, fontsize=9)
        ax.set_xlabel("draft tokens γ")
        ax.set_xticks(f.gamma)
    axes[0][0].set_ylabel("speedup (×)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig
