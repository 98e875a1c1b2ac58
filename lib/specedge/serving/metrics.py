"""Metrics of a serving log (``interfaces.LOG_COLUMNS``) not defined elsewhere: one definition each, alike
for the real run and the twin.

Defined elsewhere, and used as they are: per-client goodput in tokens/s (``experiments.tran2025.client_goodput``),
an iteration's SLO violation (``slo.violations``, li2026 eq 4) and a response's (``experiments.li2026.
response_violations``, Sec 5.3).

- ``verified``: the log's verified rounds (every metric below, and every driver, selects rounds through it);
- ``jain``: Jain's fairness index J(x) = (sum x_i)^2 / (n sum x_i^2), 1/n (one client gets all) to 1 (equal);
- ``tokens_per_pass``: committed tokens per verification forward pass (the server's yield of a pass);
- ``uplink_bytes_per_token``: request bytes on the uplink per committed token;
- ``first_token_times``: per response, time to first token (TTFT) and time per output token (TPOT) —
  TTFT = the response's first round, from its start (the device starts drafting, or sends its prompt) to
  the reply that delivers its first committed tokens; TPOT = (completion - first delivery) / (tokens - 1),
  over complete responses only. A round delivers all its committed tokens at once (the reply), so in a
  closed loop where every round follows the last one's reply, completion - first delivery is the sum of
  the later rounds' ``t_round``. The responses themselves (which rows belong to which response, its start
  and its seconds) are ``experiments.li2026.responses``' — this adds the split, not a second grouping.
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


def verified(log: pd.DataFrame) -> pd.DataFrame:
    """The verified rounds of a serving log (rows whose ``event`` is empty; the other rows record drops,
    refusals and errors), in the log's order. The one definition of "a round of the log"."""
    return log[log["event"] == ""]


def _rounds(log: pd.DataFrame) -> pd.DataFrame:
    rows = verified(log)
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


def round_starts(rows: pd.DataFrame) -> np.ndarray:
    """When each logged round began at its device: the reply received (``end`` + ``t_send``) minus its ``t_round``."""
    return (rows["end"] + rows["t_send"] - rows["t_round"]).to_numpy()


def first_token_times(log: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """``responses`` (``experiments.li2026.responses`` of ``log``: client, start, tokens, seconds, complete)
    with ``ttft`` (s: the ``t_round`` of the response's first round, the log row of that client whose start,
    reply received - round time as ``responses`` computes it, is the response's) and ``tpot`` (s per token
    after the first: (seconds - ttft) / (tokens - 1); NaN for an incomplete or one-token response)."""
    rows = _rounds(log)
    first = pd.DataFrame(dict(client=rows["client"].to_numpy(), start=round_starts(rows),
                              ttft=rows["t_round"].to_numpy()))
    out = responses.merge(first.drop_duplicates(["client", "start"]), on=["client", "start"], how="left", validate="many_to_one")
    if out["ttft"].isna().any():
        raise ValueError("responses: a response whose start is no round of the log (not li2026.responses of this log?)")
    later = out["tokens"] > 1
    out["tpot"] = np.where(out["complete"].astype(bool) & later, (out["seconds"] - out["ttft"]) / (out["tokens"] - 1).where(later, 1), np.nan)
    return out
