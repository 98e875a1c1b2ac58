"""Per-round series of a serving log (real or twin alike): the log utility of each client's running goodput and
when it settles, the server's wall-time split (with its total), one sync round's seconds under a time model, moving
bands of a goodput estimate and of the realised goodput, the share of goodput peaks inside them, and an estimate's
distance to a target per round."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ... import sampling
from ..interfaces import Pending
from ..log import verified


def utility_curve(log: pd.DataFrame) -> pd.Series:
    """U(x̄(T)) = sum_i log x̄_i(T), x̄_i(T) the mean tokens per round of client i over batches 1..T."""
    rows = verified(log)
    x = rows.pivot_table(index="batch", columns="client", values="tokens", aggfunc="sum").fillna(0.0)
    xbar = x.cumsum().div(np.arange(1, len(x) + 1), axis=0)
    return np.log(xbar.where(xbar > 0)).sum(axis=1, min_count=x.shape[1])


def utility_frame(log: pd.DataFrame, **labels) -> pd.DataFrame:
    """``utility_curve`` as a long frame: the ``labels`` as columns, then iteration (1, 2, ...) and utility."""
    u = utility_curve(log)
    return pd.DataFrame(dict(**labels, iteration=np.arange(1, len(u) + 1), utility=u.to_numpy()))


def utility_while_all_active(log: pd.DataFrame) -> tuple[int, float]:
    """(T, U(x̄(T))) at T = the last batch before the first client leaves (a client that ends its prompts
    early is absent from later batches, and its running goodput would then fall for no reason of the policy)."""
    x = verified(log).pivot_table(index="batch", columns="client", values="tokens", aggfunc="sum")
    full = x.notna().all(axis=1).to_numpy()
    t = len(full) if full.all() else int(np.argmin(full))
    if t == 0:
        raise ValueError("log: no batch holds every client")
    xbar = x.iloc[:t].mean()
    return t, float(np.log(xbar).sum())


def stabilisation(curve: pd.Series, rel: float = 0.01) -> int:
    """First iteration after which the curve stays within ``rel`` of its final value."""
    final = curve.iloc[-1]
    outside = np.flatnonzero(np.abs(curve.to_numpy() - final) > rel * abs(final))
    return int(outside[-1] + 2) if outside.size else 1


def expected_goodput(log: pd.DataFrame, alpha, skip: int, window: int) -> np.ndarray:
    """Each client's mean over rounds skip .. skip + window - 1 of mu_i(S_i(t)), the expected tokens of a round
    given its draft length under i.i.d. acceptance ``alpha`` (``sampling.expected_tokens_per_round``): the
    conditional mean of the realised goodput, without the acceptance draws' noise."""
    alpha = np.asarray(alpha, float)
    rows = log[(log["event"] == "") & (log["batch"] >= skip)]
    s = rows.pivot_table(index="batch", columns="client", values="S", aggfunc="sum").reindex(columns=range(len(alpha)))
    if len(s) != window or s.isna().any().any():
        raise ValueError(f"window: the run has {len(s)} complete rounds after {skip}, not {window} (workload too short)")
    return sampling.expected_tokens_per_round(alpha[None, :], s.to_numpy(float)).mean(axis=0)


def time_split(log: pd.DataFrame) -> dict[str, float]:
    """The wall-time split of a run, from the server's view, per batch b: receiving = start_b - end_(b-1)
    (waiting for drafts until the batch is assembled), verification = the pass, sending = the slowest reply's
    time on the link. Seconds, summed over batches."""
    rows = verified(log)
    b = rows.groupby("batch").agg(start=("start", "first"), verify=("t_verify", "first"),
                                  end=("end", "max"), send=("t_send", "max"), first=("arrival", "min"))
    prev_end = b["end"].shift(1).fillna(b["first"].iloc[0] - rows["t_draft"].max() if len(b) else 0.0)
    receiving = float((b["start"] - prev_end).clip(lower=0).sum())
    return dict(receiving=receiving, verification=float(b["verify"].sum()), sending=float(b["send"].sum()))


def with_total(splits: pd.DataFrame) -> pd.DataFrame:
    """A frame of ``time_split`` rows with their sum added as ``total`` (in place; returned)."""
    splits["total"] = splits[["receiving", "verification", "sending"]].sum(axis=1)
    return splits


def sync_round_seconds(times, k) -> float:
    """One synchronous round's seconds under ``times`` (``interfaces.Times``) when client i drafts ``k[i]`` tokens: the
    slowest drafter, the longest request on the link, the batched pass over every client and the reply."""
    batch = [Pending(client=i, session="", round=0, arrival=0.0, n_draft=int(s), n_new=int(s) + 1) for i, s in enumerate(k)]
    return (max(times.draft[i](int(s)) for i, s in enumerate(k)) + times.up(0, int(max(k))) + times.verify(batch)
            + times.down(0))


def moving(series: pd.Series, window: int = 10) -> tuple[pd.Series, pd.Series]:
    """Moving average and moving std (an MA filter of ``window`` rounds)."""
    r = series.rolling(window, min_periods=1)
    return r.mean(), r.std().fillna(0.0)


def estimate_bands(estimate: pd.DataFrame, log: pd.DataFrame, window: int = 10) -> pd.DataFrame:
    """An allocator's per-round estimate ``X`` (a frame of batch, client, X) beside the realised tokens of the
    log's verified rounds, with moving averages and stds of both (``moving``): real_ma/real_std, est_ma/est_std."""
    real = verified(log)[["batch", "client", "tokens"]]
    frame = estimate.merge(real, on=["batch", "client"]).sort_values(["client", "batch"])
    parts = []
    for _, d in frame.groupby("client"):
        (m_real, s_real), (m_est, s_est) = moving(d.tokens.astype(float), window), moving(d.X, window)
        parts.append(d.assign(real_ma=m_real.to_numpy(), real_std=s_real.to_numpy(), est_ma=m_est.to_numpy(), est_std=s_est.to_numpy()))
    return pd.concat(parts)


def estimate_distance(estimate: pd.DataFrame, target, **labels) -> pd.DataFrame:
    """‖X(t) − target‖ per round of an allocator's estimates (a frame of batch, client, X; ``target`` one value per
    client, in client order): the ``labels`` as columns, then iteration (batch + 1) and distance."""
    X = estimate.pivot(index="batch", columns="client", values="X")
    return pd.DataFrame(dict(**labels, iteration=X.index + 1, distance=np.linalg.norm(X.to_numpy() - target, axis=1)))


def peaks_in_bands(frame: pd.DataFrame) -> float:
    """Share of the observed goodput peaks inside either of two shaded bands.

    ``frame``: one row per (client, batch) with the observed ``tokens`` and the bands' centres and half
    widths ``real_ma``/``real_std`` and ``est_ma``/``est_std`` (``moving``). A peak is a round whose
    observed goodput exceeds the round before and is at least the round after (per client). NaN when there
    is no peak.
    """
    inside = []
    for _, d in frame.sort_values("batch").groupby("client"):
        t = d.tokens.to_numpy(float)
        i = np.flatnonzero((t[1:-1] > t[:-2]) & (t[1:-1] >= t[2:])) + 1
        p = d.iloc[i]
        band = lambda c, w: (p.tokens >= p[c] - p[w]) & (p.tokens <= p[c] + p[w])
        inside += (band("real_ma", "real_std") | band("est_ma", "est_std")).tolist()
    return float(np.mean(inside)) if inside else float("nan")
