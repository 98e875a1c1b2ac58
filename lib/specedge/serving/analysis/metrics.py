"""Metrics of a serving log (``interfaces.LOG_COLUMNS``), one definition each, alike for the real run and
the twin; every experiment driver reads a log through them.

- ``verified``: the log's verified rounds (every metric below, and every driver, selects rounds through it);
- ``client_goodput``: tokens per second of each client over its own active span;
- ``responses`` / ``response_violations``: one row per response and whether it met its SLO class (li2026
  Sec 5.3); an iteration's violation (li2026 eq 4) is ``slo.violations``;
- ``steady``: the verified rounds past a warm-up; ``slo_summary``: one run's violations (overall, per class) and
  goodput over its steady window; ``per_class``: violation rates per SLO class from such rows, pooled;
- ``deadline_attribution``: each verification's miss and its cause, queue- or compute-dominant (li2026 eq 21);
- ``jain``: Jain's fairness index J(x) = (sum x_i)^2 / (n sum x_i^2), 1/n (one client gets all) to 1 (equal);
- ``tokens_per_pass``: committed tokens per verification forward pass (the server's yield of a pass);
- ``uplink_bytes_per_token``: request bytes on the uplink per committed token;
- ``first_token_times``: per response, time to first token (TTFT) and time per output token (TPOT) —
  TTFT = the response's first round, from its start (the device starts drafting, or sends its prompt) to
  the reply that delivers its first committed tokens; TPOT = (completion - first delivery) / (tokens - 1),
  over complete responses only. A round delivers all its committed tokens at once (the reply), so in a
  closed loop where every round follows the last one's reply, completion - first delivery is the sum of
  the later rounds' ``t_round``. The responses themselves (which rows belong to which response, its start
  and its seconds) are ``responses``' — this adds the split, not a second grouping.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import slo
from ..log import verified
from ..timegrid import ns


def jain(values) -> float:
    """Jain's fairness index of non-negative values (e.g. per-device goodputs)."""
    x = np.asarray(values, float).ravel()
    if x.size == 0 or not np.isfinite(x).all() or (x < 0).any():
        raise ValueError(f"values: need one or more finite non-negative numbers, got {x.tolist()[:8]}")
    if not x.any():
        raise ValueError("values: all zero, Jain's index is undefined")
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))


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
    """``responses`` (``responses`` of ``log``: client, start, tokens, seconds, complete)
    with ``ttft`` (s: the ``t_round`` of the response's first round, the log row of that client whose start,
    reply received - round time as ``responses`` computes it, is the response's) and ``tpot`` (s per token
    after the first: (seconds - ttft) / (tokens - 1); NaN for an incomplete or one-token response)."""
    rows = _rounds(log)
    first = pd.DataFrame(dict(client=rows["client"].to_numpy(), start=round_starts(rows),
                              ttft=rows["t_round"].to_numpy()))
    out = responses.merge(first.drop_duplicates(["client", "start"]), on=["client", "start"], how="left", validate="many_to_one")
    if out["ttft"].isna().any():
        raise ValueError("responses: a response whose start is no round of the log (not responses of this log?)")
    later = out["tokens"] > 1
    out["tpot"] = np.where(out["complete"].astype(bool) & later, (out["seconds"] - out["ttft"]) / (out["tokens"] - 1).where(later, 1), np.nan)
    return out


def client_first_token_times(log: pd.DataFrame, max_new_tokens: int, warmup: float, horizon: float) -> pd.DataFrame:
    """Per client: the mean TTFT over its responses started at or after ``warmup``, the mean TPOT over those
    of them complete by ``horizon`` (``first_token_times`` of ``responses``)."""
    r = first_token_times(log, responses(log, max_new_tokens, horizon))
    return r[r["start"] >= warmup].groupby("client")[["ttft", "tpot"]].mean()


def client_goodput(log: pd.DataFrame) -> pd.Series:
    """Tokens per second of each client over its own active span: from the start of its first round
    (first arrival minus that round's drafting) to its last reply. The same definition for real and
    twin logs (the real run's clock also counts process start-up, which this span leaves out)."""
    rows = verified(log).sort_values(["client", "round"])
    first = rows.groupby("client").first()
    span = rows.groupby("client")["end"].max() - (first["arrival"] - first["t_draft"])
    return rows.groupby("client")["tokens"].sum() / span


def responses(log: pd.DataFrame, max_new_tokens: int, horizon: float) -> pd.DataFrame:
    """One row per response (Sec 5.3: "a request is counted as an SLO violation if its achieved
    end-to-end token speed (including queueing and verification) falls below its class requirement"):
    client, start (s), tokens, seconds, speed (tok/s), complete. Every device runs its responses back
    to back, so a response's time is the sum of its rounds' ``t_round``. A response still running at
    ``horizon`` is kept (complete=False) with the time it has taken so far."""
    rows = verified(log).sort_values(["client", "end"], kind="stable")
    client, tok = rows["client"].to_numpy(), rows["tokens"].to_numpy()
    t_round, cls = rows["t_round"].to_numpy(), rows["slo_class"].to_numpy()
    start = round_starts(rows)
    out = []
    if len(rows):
        first = np.flatnonzero(np.r_[True, client[1:] != client[:-1]])   # each client's first row
        head = np.repeat(first, np.diff(np.r_[first, len(tok)]))        # per row: its client's first row
        made = np.cumsum(tok) - np.r_[0, np.cumsum(tok)][head]          # the client's tokens so far
        resp = (made - tok) // max_new_tokens                           # the response each row belongs to
        new = np.r_[True, (client[1:] != client[:-1]) | (resp[1:] != resp[:-1])]
        bounds = np.r_[np.flatnonzero(new), len(tok)].tolist()
        for a, b in zip(bounds[:-1], bounds[1:]):                       # one response: rows a..b-1
            t0, n = float(start[a]), int(tok[a:b].sum())
            done = n >= max_new_tokens
            secs = float(t_round[a:b].sum()) if done else horizon - t0
            out.append((int(client[a]), t0, n, secs, n / secs if secs > 0 else np.inf, done, cls[head[a]]))
    return pd.DataFrame(out, columns=["client", "start", "tokens", "seconds", "speed", "complete", "slo_class"])


def response_violations(log: pd.DataFrame, max_new_tokens: int, warmup: float, horizon: float) -> pd.DataFrame:
    """Responses started after ``warmup`` whose outcome is known by ``horizon``: complete ones, and
    running ones already slower than their class (max_new_tokens / s_c seconds passed). Adds
    ``violated``. (Dropping the undecided running ones keeps long responses from being censored away
    only when they are already late, which is exactly when their verdict is known.)"""
    r = responses(log, max_new_tokens, horizon)
    r = r[r["start"] >= warmup].copy()
    cls = r["slo_class"].astype(float)
    late = ~r["complete"] & (ns(r["seconds"]) >= ns(max_new_tokens / cls))
    r = r[r["complete"] | late].copy()
    r["violated"] = (~r["complete"]) | slo.slower(r["tokens"], r["seconds"], r["slo_class"].astype(float))
    return r


def steady(log: pd.DataFrame, warmup: float) -> pd.DataFrame:
    """The verified rounds that started at or after ``warmup`` (s): the steady state of a run."""
    rows = verified(log)
    return rows[rows["start"] >= warmup]


def deadline_attribution(log: pd.DataFrame, window: int = 50, tau: float = 1.5) -> pd.DataFrame:
    """Fig 8: every verification event with its t_queue, t_verify, whether it missed its deadline
    (C_i > d_i, eq 12) and, for misses, eq (21)'s label: ``compute-dominant`` when
    rho = t_verify / MA_W(t_verify) > tau (MA over the ``window`` previous batches), else
    ``queue-dominant``."""
    if window < 1 or tau <= 0:
        raise ValueError(f"window must be >= 1 and tau > 0, got window={window}, tau={tau}")
    ev = verified(log)
    ev = ev[ev["deadline"].notna()].copy()
    per_batch = ev.groupby("batch")["t_verify"].first().sort_index()
    ma = per_batch.shift(1).rolling(window, min_periods=1).mean()
    ev["rho"] = ev["t_verify"] / ev["batch"].map(ma)
    ev["violated"] = ns(ev["end"]) > ns(ev["deadline"])
    ev["label"] = np.where(~ev["violated"], "met",
                           np.where(ev["rho"] > tau, "compute-dominant", "queue-dominant"))
    return ev[["batch", "client", "slo_class", "t_queue", "t_verify", "rho", "violated", "label"]]


def slo_summary(log: pd.DataFrame, max_new_tokens: int, warmup: float, horizon: float, classes) -> dict:
    """One run's SLO outcome over its steady window (``warmup``, ``horizon``]: response-level violations
    (``response_violations``: eq 20's trials) overall and per class c of ``classes`` (``responses_{c}``,
    ``violations_{c}``: what ``per_class`` pools), the iteration-level violation rate (eq 4, ``slo.violations``
    of the ``steady`` rounds) and system goodput (committed tokens per second of the window)."""
    if not horizon > warmup >= 0:
        raise ValueError(f"warmup, horizon: need 0 <= warmup < horizon, got {warmup!r}, {horizon!r}")
    resp = response_violations(log, max_new_tokens, warmup, horizon)
    it = steady(log, warmup)
    row = dict(responses=int(len(resp)), violations=int(resp["violated"].sum()),
               violation_rate=float(resp["violated"].mean()) if len(resp) else np.nan, iterations=int(len(it)),
               iteration_violation_rate=float(slo.violations(it).mean()) if len(it) else np.nan,
               goodput=float(it["tokens"].sum()) / (horizon - warmup))
    for c in classes:
        r = resp[resp["slo_class"].astype(float) == c]
        row[f"responses_{c}"], row[f"violations_{c}"] = int(len(r)), int(r["violated"].sum())
    return row


def per_class(rows: pd.DataFrame, by: list[str], classes) -> pd.DataFrame:
    """Violation rate per SLO class (speed) of ``classes`` from rows with ``responses_{c}`` and ``violations_{c}``
    per class c (a sweep's rows of mixed-class runs), pooled within each group of ``by`` (e.g. over seeds)."""
    out = []
    for key, g in rows.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        for c in classes:
            n, v = int(g[f"responses_{c}"].sum()), int(g[f"violations_{c}"].sum())
            out.append(dict(zip(by, key), speed=c, responses=n, violations=v,
                            violation_rate=v / n if n else np.nan))
    return pd.DataFrame(out)


def fleet(log: pd.DataFrame, devices: int, max_new_tokens: int, warmup: float, horizon: float) -> dict:
    """A fleet's run in one row: per-device goodput (``client_goodput``, a device that committed nothing 0: the mean,
    the slowest device's, Jain's index), SLO attainment (responses started after ``warmup`` meeting their class,
    ``response_violations``: ``violations`` of ``responses`` decided), request goodput (``goodput_slo_rps``:
    responses/s within their class over the horizon after warm-up), TTFT and TPOT (``client_first_token_times``:
    the mean over devices of each device's mean, and the worst device's)."""
    gp = client_goodput(log).reindex(range(devices), fill_value=0.0)
    resp = response_violations(log, max_new_tokens, warmup, horizon)
    ft = client_first_token_times(log, max_new_tokens, warmup, horizon)
    return dict(goodput_tok_s=float(gp.mean()), goodput_min_tok_s=float(gp.min()), jain=jain(gp),
                slo_attainment=float(1 - resp["violated"].mean()) if len(resp) else np.nan,
                goodput_slo_rps=float((~resp["violated"]).sum()) / (horizon - warmup), responses=len(resp),
                violations=int(resp["violated"].sum()), ttft_s=float(ft.ttft.mean()), ttft_max_s=float(ft.ttft.max()),
                tpot_s=float(ft.tpot.mean()), tpot_max_s=float(ft.tpot.max()))
