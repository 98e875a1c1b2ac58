"""The arena's figures (``notebooks/edge_sd_arena.ipynb``): each plots a table of ``experiments.edge_sd_arena.runs`` and
saves it with its data (``plotting.save``)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ... import plotting

NAMES = {"goodput_tok_s": "goodput per device (tok/s)", "slo_attainment": "SLO attainment", "jain": "Jain's index"}


def _mbps(b) -> str:
    return f"{b / 1e6:g}"


def regime(regime_map: pd.DataFrame, out) -> plt.Figure:
    """Per metric (rows) and device mix (columns): the winning combination at each (devices, bandwidth),
    coloured by its margin over the runner-up (%, one scale for all panels); '≈' marks a tie within the seeds'
    interval, '*' a margin beyond the twin's validated error on that metric, "k-way tie" k combinations with the
    same best mean (e.g. every response within its class)."""
    metrics, mixes = list(dict.fromkeys(regime_map.metric)), sorted(regime_map.mix.unique())
    vmax = max(float(regime_map.margin_pct.max()), 1.0)     # one colour scale for every panel
    fig, axes = plt.subplots(len(metrics), len(mixes), figsize=(6.5 * len(mixes), 2.6 * len(metrics)), squeeze=False)
    for i, m in enumerate(metrics):
        for j, mix in enumerate(mixes):
            d = regime_map[(regime_map.metric == m) & (regime_map.mix == mix)]
            pct = d.pivot(index="devices", columns="bandwidth_bps", values="margin_pct")
            label = d.assign(text=[(f"{k}-way tie" if k > 1 else f"{'≈ ' if v != 'wins' else ''}{w.replace(' / ', '/')}")
                                   + f"\n{p:+.1f} %{' *' if b else ''}"
                                   for w, k, v, p, b in zip(d.winner, d.n_best, d.verdict, d.margin_pct, d.beyond_twin_error)]).pivot(
                index="devices", columns="bandwidth_bps", values="text")
            sns.heatmap(pct, annot=label, fmt="", cmap="Greens", vmin=0, vmax=vmax, cbar=False, ax=axes[i, j],
                        annot_kws={"fontsize": 7}, linewidths=0.5)
            axes[i, j].set_xticklabels([_mbps(b) for b in pct.columns])
            axes[i, j].set_xlabel("link bandwidth (Mbit/s)")
            axes[i, j].set_ylabel("devices")
            axes[i, j].set_title(f"{NAMES.get(m, m)} — {mix} devices: winner, margin over runner-up")
    fig.tight_layout()
    plotting.save(fig, regime_map, out, "regime_map")
    return fig


def techniques(tmap: pd.DataFrame, out) -> plt.Figure:
    """Goodput gain (%) of each technique: the best combination with it on against the best with it off, 95 % intervals."""
    techs, mixes = list(dict.fromkeys(tmap.technique)), sorted(tmap.mix.unique())
    fig, axes = plt.subplots(1, len(techs), figsize=(4.5 * len(techs), 3.4), sharey=True, squeeze=False)
    for ax, tech in zip(axes[0], techs):
        d = tmap[tmap.technique == tech]
        groups = [(mix, n) for mix in mixes for n in sorted(d.devices.unique())]
        bws = sorted(d.bandwidth_bps.unique())
        width = 0.8 / len(groups)
        for k, (mix, n) in enumerate(groups):
            g = d[(d.mix == mix) & (d.devices == n)].set_index("bandwidth_bps").reindex(bws)
            x = np.arange(len(bws)) + (k - (len(groups) - 1) / 2) * width
            err = np.vstack([g.change_pct - g.change_low_pct, g.change_high_pct - g.change_pct])
            ax.bar(x, g.change_pct, width, yerr=np.nan_to_num(err), label=f"{mix}, N={n}", capsize=2)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_yscale("symlog", linthresh=10)      # gains of a few % beside the payload's +1000 %
        ax.set_xticks(range(len(bws)), [_mbps(b) for b in bws])
        ax.set_xlabel("link bandwidth (Mbit/s)")
        ax.set_title(f"{tech}: best on vs best off")
    axes[0, 0].set_ylabel("goodput gain (%)")
    axes[0, -1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    plotting.save(fig, tmap, out, "technique_map")
    return fig


def ablation(table: pd.DataFrame, out) -> plt.Figure:
    """The ablation at the reference point: change of goodput, SLO attainment and Jain's index vs the best."""
    metrics = ["goodput_tok_s", "slo_attainment", "jain"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(13, 0.45 * len(table) + 1.2), sharey=True)
    y = np.arange(len(table))
    for ax, m in zip(axes, metrics):
        base = table[m].iloc[0]
        pct = 100 * table[f"{m}_change"] / base
        err = 100 * np.vstack([table[f"{m}_change"] - table[f"{m}_change_low"], table[f"{m}_change_high"] - table[f"{m}_change"]]) / base
        ax.barh(y, pct, xerr=np.nan_to_num(err), color=sns.color_palette()[0], capsize=2)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xlabel(f"{NAMES[m]}: change vs best (%)")
    axes[0].set_yticks(y, [f"{v}\n({c})" for v, c in zip(table.variant, table.combination)], fontsize=7)
    axes[0].invert_yaxis()
    fig.tight_layout()
    plotting.save(fig, table, out, "ablation")
    return fig


def pareto(front: pd.DataFrame, out) -> plt.Figure:
    """Goodput vs Jain's index per combination (colour: SLO attainment); the edge combinations' 3-objective
    front ringed and numbered, the numbers named in a key beside the axes (labels on the points overlapped
    where the front's points crowd), the reference systems as a star (centralized) and a diamond (AR on the edge)."""
    fig, (ax, key) = plt.subplots(1, 2, figsize=(12.5, 5.2), gridspec_kw=dict(width_ratios=[2, 1]))
    refs = {"centralized": ("*", 260), "AR on the edge": ("D", 110)}
    edge = front[~front.combination.isin(list(refs))]
    sc = ax.scatter(edge.goodput_tok_s, edge.jain, c=edge.slo_attainment, cmap="viridis", vmin=0, vmax=1, s=30)
    for name, (marker, size) in refs.items():
        ref = front[front.combination == name]
        ax.scatter(ref.goodput_tok_s, ref.jain, c=ref.slo_attainment, cmap="viridis", vmin=0, vmax=1, marker=marker, s=size,
                   edgecolors="k", label=f"reference: {name}")
    on = front[front.front].sort_values("goodput_tok_s", ascending=False)
    ax.scatter(on.goodput_tok_s, on.jain, facecolors="none", edgecolors="r", s=120, label="edge Pareto front (3 objectives)")
    # one label per cluster of front points that would print on top of each other (within 2 % of the x range
    # and 3 % of the y range of the cluster's first point), e.g. "5–8", put to the right of its cluster, else to
    # the left, else above: the first side with no other cluster near it
    x, y = on.goodput_tok_s.to_numpy(), on.jain.to_numpy()
    dx, dy = 0.02 * np.ptp(front.goodput_tok_s.dropna()), 0.03 * np.ptp(front.jain.dropna())
    clusters: list[list[int]] = []
    for i in range(len(on)):
        home = next((c for c in clusters if abs(x[i] - x[c[0]]) <= dx and abs(y[i] - y[c[0]]) <= dy), None)
        home.append(i) if home is not None else clusters.append([i])
    centres = [(x[c].mean(), y[c].mean()) for c in clusters]
    for c, (cx, cy) in zip(clusters, centres):
        near = [(ox - cx, oy - cy) for ox, oy in centres if (ox, oy) != (cx, cy) and abs(oy - cy) <= 3 * dy]
        if not any(0 < u <= 4 * dx for u, _ in near):
            xytext, ha = (10, -3), "left"
        elif not any(-4 * dx <= u < 0 for u, _ in near):
            xytext, ha = (-10, -3), "right"
        else:
            xytext, ha = (0, 10), "center"
        ks = [i + 1 for i in c]
        text = f"{ks[0]}–{ks[-1]}" if len(ks) > 2 and ks == list(range(ks[0], ks[-1] + 1)) else ", ".join(map(str, ks))
        ax.annotate(text, (cx, cy), fontsize=8, color="r", ha=ha, xytext=xytext, textcoords="offset points")
    key.axis("off")
    lines = [f"{k:>2}  {r.combination.replace(' / ', '/')}  ({r.goodput_tok_s:.1f} tok/s, J = {r.jain:.3f}, SLO {r.slo_attainment:.2f})"
             for k, r in enumerate(on.itertuples(), 1)]
    key.text(0, 1, "edge Pareto front\n(draft / payload / former)\n\n" + "\n".join(lines), va="top", ha="left", fontsize=8,
             family="monospace", transform=key.transAxes)
    fig.colorbar(sc, ax=ax, label="SLO attainment")
    ax.set_xlabel("goodput per device (tok/s)")
    ax.set_ylabel("Jain's fairness index")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    plotting.save(fig, front, out, "pareto")
    return fig
