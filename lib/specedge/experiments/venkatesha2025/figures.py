"""venkatesha2025's Fig 6 (eq 9 heatmaps with the paper's and our points; Figs 4a/4b and the exit agreement are
``early_exit.figures``). It returns the matplotlib figure; the notebook saves it with its data (``plotting.save``)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

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
