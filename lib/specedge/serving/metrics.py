"""Metrics of a serving log (``interfaces.LOG_COLUMNS``) not defined elsewhere: one definition each, alike
for the real run and the twin.

Defined elsewhere, and used as they are: per-client goodput in tokens/s (``experiments.tran2025.client_goodput``),
an iteration's SLO violation (``slo.violations``, li2026 eq 4) and a response's (``experiments.li2026.
response_violations``, Sec 5.3).

- ``jain``: Jain's fairness index J(x) = (sum x_i)^2 / (n sum x_i^2), 1/n (one client gets all) to 1 (equal);
- ``tokens_per_pass``: committed tokens per verification forward pass (the server's yield of a pass);
- ``uplink_bytes_per_token``: request bytes on the uplink per committed token.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def jain(values) -> float:
    """Jain's fairness index of non-negative values (e.g. per-device goodputs)."""
    x = np.asarray(values, float).ravel()
    if x.size == 0 or not np.isfinite(x).all() or (x < 0).any():
        raise ValueError(f"values: need one or more finite non-negative numbers, got {x.tolist()[:8]}")
    if not x.any():
        raise ValueError("values: all zero, Jain's index is undefined")
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))


def _rounds(log: pd.DataFrame) -> pd.DataFrame:
    rows = log[log["event"] == ""]
    if rows.empty:
        raise ValueError("log: no verified rounds")
    return rows


def tokens_per_pass(log: pd.DataFrame) -> float:
    """Committed tokens (accepted drafts + the correction/bonus token) per verification pass (``batch``)."""
    rows = _rounds(log)
    return float(rows["tokens"].sum()) / rows["batch"].nunique()


def uplink_bytes_per_token(log: pd.DataFrame) -> float:
    """Request payload bytes (``bytes_up``) per committed token."""
    rows = _rounds(log)
    return float(rows["bytes_up"].sum()) / float(rows["tokens"].sum())
