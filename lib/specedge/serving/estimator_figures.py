"""Figures of the verifier's measured latency (li2026 Sec 3.2, 4.4): batch interference (``verify_profiling``'s
solo / batched requests) and eq (19) fits (``estimator.fit``): predicted against measured batch latency per target
with the y = x line, and the absolute error by regime.
"""
from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .. import plotting


def fit_figures(fits: Mapping, out, identity_stem: str, error_stem: str) -> pd.DataFrame:
    """Predicted against measured batch latency per target (``fits``: target -> an ``estimator.fit`` result with
    ``predictions``), saved as ``identity_stem``, and the absolute error by regime and target, saved as
    ``error_stem``; returns the test and train predictions with their absolute error (ms)."""
    if not fits:
        raise ValueError("fits: need at least one target's fit")
    pred = pd.concat([f.predictions.assign(target=t) for t, f in fits.items()], ignore_index=True)
    fig, axes = plt.subplots(1, len(fits), figsize=(4.5 * len(fits), 3.6), squeeze=False)
    for ax, (t, g) in zip(axes[0], pred.groupby("target")):
        sns.scatterplot(data=g, x="measured", y="predicted", hue="split", style="regime", ax=ax, s=18)
        lim = [0, 1.05 * max(g.measured.max(), g.predicted.max())]
        ax.plot(lim, lim, "k--", lw=0.8, label="y = x")
        ax.set(xlim=lim, ylim=lim, title=f"{t} target", xlabel="measured batch latency (s)", ylabel="predicted (s)")
    plotting.save(fig, pred, out, identity_stem)
    fig, ax = plt.subplots(figsize=(5, 3.4))
    pred["abs_error_ms"] = 1000 * (pred.predicted - pred.measured).abs()
    sns.boxplot(data=pred, x="regime", y="abs_error_ms", hue="target", ax=ax)
    ax.set(xlabel="regime", ylabel="absolute error (ms)")
    plotting.save(fig, pred[["target", "split", "regime", "measured", "predicted", "abs_error_ms"]], out, error_stem)
    return pred


def interference_figure(frame: pd.DataFrame, out, stem: str) -> pd.DataFrame:
    """Verification latency of request A alone, B alone and both batched over A's length, per target (``frame``:
    target, a_length, case, seconds), saved as ``stem``; returns seconds per (target, a_length) x case with what B
    inherits (batched / solo B) and the batched / solo A ratio."""
    cases = ["Solo A", "Solo B", "Batched A+B"]
    if not set(cases) <= set(frame["case"]):
        raise ValueError(f"frame: needs the cases {cases}, got {sorted(frame['case'].unique())}")
    g = sns.relplot(data=frame, x="a_length", y="seconds", hue="case", col="target", kind="line", marker="o",
                    height=3.2, aspect=1.2, facet_kws=dict(sharey=False, sharex=False), hue_order=cases)
    g.set_axis_labels("length of request A (new tokens)", "verification latency (s)")
    plotting.save(g.figure, frame, out, stem)
    w = frame.pivot_table(index=["target", "a_length"], columns="case", values="seconds")
    w["B inherits (batched / solo B)"] = w["Batched A+B"] / w["Solo B"]
    w["batched / solo A"] = w["Batched A+B"] / w["Solo A"]
    return w
