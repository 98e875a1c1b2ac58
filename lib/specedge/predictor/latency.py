"""Predictor inference latency (li2026): Latency (Table 11)

``measure_latency(predictor, x, trials=1000)``: single-sample wall time statistics. Only the explicit
step ``python -m specedge.predictor latency`` (or ``build``) calls it and writes
``data/predictor/latency.csv``; notebooks read that file.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from .. import timing
from .dataset import FEATURES


# --------------------------------------------------------------------------- Table 11
def measure_latency(predict, x, trials: int = 1000, warmup: int = 50) -> dict[str, float]:
    """Single-sample latency of ``predict(x_row)`` over ``trials`` calls, in ms (Table 11's columns)."""
    x = np.asarray(x, dtype=np.float32).reshape(-1, len(FEATURES))
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    rows = (x[k % len(x)][None] for k in itertools.count())

    def once():
        row = next(rows)
        with timing.stopwatch() as t:
            predict(row)
        return t.seconds

    ms = timing.samples(once, trials, warmup) * 1e3
    return dict(mean=ms.mean(), median=float(np.median(ms)), std=ms.std(ddof=1) if trials > 1 else 0.0,
                min=ms.min(), max=ms.max(), p95=float(np.percentile(ms, 95)),
                p99=float(np.percentile(ms, 99)))


def latency_table(preds: dict, x, trials: int = 1000, extra: dict | None = None) -> pd.DataFrame:
    """Table 11 on this machine: one row per predictor (``extra``: more name -> predict callables)."""
    rows = []
    calls = {p.label: p.predict_proba for p in preds.values()}
    calls.update(extra or {})
    for name, fn in calls.items():
        rows.append({"predictor": name, **measure_latency(fn, x, trials)})
    return pd.DataFrame(rows)
