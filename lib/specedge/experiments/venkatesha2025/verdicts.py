"""The rules deciding the FSD simulation's claims (venkatesha2025 Sec 7) on the sweeps of ``early_exit.sim``:
``queue_policies`` (Table 7), ``threads_sweep`` (Fig 4a), ``gamma_sweep`` (Fig 4b); the notebook words the row and
its note.

- Table 7: ``misses_fall_with_threads``, ``server_priority_helps``, ``server_priority_gain_shrinks``,
  ``client_priority_helps``;
- Fig 4a: ``miss_rate_falls``, ``speedup_rises``, ``plateau_threads`` (the fewest threads reaching 95 %
  of the speedup gain of the most threads);
- Fig 4b: ``fsd_gain_grows_with_gamma``, ``first_gamma_below`` (the smallest γ at which AR->SD drops
  below 1x).

A verdict returns a ``claims.Claim``; bad evidence (too few points, NaN) fails it, never passes it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ... import claims
from ...claims import Claim


# ------------------------------------------------------------------------------------ Table 7 verdicts
def _grid(t7: pd.DataFrame):
    """Miss rates indexed by (client, server, threads), the client and server queues in order of
    appearance and the thread counts ascending; ValueError unless every combination occurs once."""
    need = {"client", "server", "threads", "miss_rate"}
    if not need <= set(t7.columns):
        raise ValueError(f"Table 7 frame needs columns {sorted(need)}, got {list(t7.columns)}")
    clients, servers = list(dict.fromkeys(t7.client)), list(dict.fromkeys(t7.server))
    threads = sorted(set(t7.threads))
    if len(t7) != len(clients) * len(servers) * len(threads) or t7.duplicated(["client", "server", "threads"]).any():
        raise ValueError("Table 7 frame must hold every (client, server, threads) combination exactly once")
    return t7.set_index(["client", "server", "threads"]).miss_rate, clients, servers, threads


def _needs(values: list, name: str, kind: str):
    if name not in values:
        raise ValueError(f"Table 7 frame has no {kind} queue {name!r} (has {values})")


def misses_fall_with_threads(t7: pd.DataFrame, client: str = "priority", server: str = "priority") -> Claim:
    """Table 7: with ``client``/``server`` queues the miss rate falls strictly with every added thread count."""
    m7, clients, servers, threads = _grid(t7)
    _needs(clients, client, "client")
    _needs(servers, server, "server")
    return claims.strictly_decreasing([m7[client, server, k] for k in threads])


def server_priority_helps(t7: pd.DataFrame) -> Claim:
    """Table 7: server priority misses strictly less than server FIFO, for every client queue and thread count."""
    m7, clients, servers, threads = _grid(t7)
    _needs(servers, "priority", "server")
    _needs(servers, "fifo", "server")
    return claims.all_of({f"{cq} {k}T": m7[cq, "priority", k] < m7[cq, "fifo", k] for cq in clients for k in threads})


def server_priority_gain_shrinks(t7: pd.DataFrame) -> Claim:
    """Table 7: the server-priority gain (FIFO misses minus priority misses) is strictly smaller at the most
    threads than at the fewest, for every client queue."""
    m7, clients, servers, threads = _grid(t7)
    _needs(servers, "priority", "server")
    _needs(servers, "fifo", "server")
    if len(threads) < 2:
        return Claim("all_of", False, f"rejected: one thread count ({threads})")
    lo, hi = threads[0], threads[-1]
    return claims.all_of({cq: (m7[cq, "fifo", lo] - m7[cq, "priority", lo]) > (m7[cq, "fifo", hi] - m7[cq, "priority", hi])
                          for cq in clients})


def client_priority_helps(t7: pd.DataFrame) -> Claim:
    """Table 7: client priority misses strictly less than every other client queue, for every server queue
    and thread count."""
    m7, clients, servers, threads = _grid(t7)
    _needs(clients, "priority", "client")
    others = [cq for cq in clients if cq != "priority"]
    return claims.all_of({f"{sq} {k}T vs {cq}": m7["priority", sq, k] < m7[cq, sq, k]
                          for sq in servers for k in threads for cq in others})


# ------------------------------------------------------------------------------------ Fig 4a verdicts
def _curve(frame: pd.DataFrame, x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
    if not {x, y} <= set(frame.columns):
        raise ValueError(f"frame needs columns {x!r} and {y!r}, got {list(frame.columns)}")
    if frame[x].duplicated().any():
        raise ValueError(f"frame has repeated {x} values: one row per {x}")
    f = frame.sort_values(x, kind="stable")
    return f[x].to_numpy(), f[y].to_numpy(dtype=float)


def _threads(k) -> str:
    return f"{k} thread" + ("" if k == 1 else "s")


def miss_rate_falls(f4a: pd.DataFrame) -> Claim:
    """Fig 4a "cache-miss rate falls with threads": it never rises from one thread count to the next, and
    the most threads miss strictly less than the fewest (a flat curve fails)."""
    th, miss = _curve(f4a, "threads", "miss_rate")
    if len(th) < 2:
        return Claim("all_of", False, f"rejected: {len(th)} thread count(s)")
    return claims.all_of({"never rises with a thread": bool(np.all(np.diff(miss) <= 0)),
                          f"{th[-1]} threads below {_threads(th[0])}": bool(miss[-1] < miss[0])})


def speedup_rises(f4a: pd.DataFrame, tolerance: float = 0.01) -> Claim:
    """Fig 4a "speedup SD->FSD rises with threads": the most threads strictly faster than the fewest, and no
    step to the next thread count loses more than ``tolerance`` (relative; simulation noise) of the speedup."""
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must lie in [0, 1), got {tolerance!r}")
    th, spd = _curve(f4a, "threads", "speedup_sd_fsd")
    if len(th) < 2:
        return Claim("all_of", False, f"rejected: {len(th)} thread count(s)")
    return claims.all_of({f"{th[-1]} threads above {_threads(th[0])}": bool(spd[-1] > spd[0]),
                          f"never falls by more than {100 * tolerance:g} % with a thread":
                              bool(np.all(np.diff(spd) >= -tolerance * spd[:-1]))})


def plateau_threads(f4a: pd.DataFrame, share: float = 0.95) -> float:
    """Fig 4a's plateau: the fewest threads whose SD->FSD speedup gain over the fewest threads reaches
    ``share`` of the gain at the most threads. NaN when there is no gain (or fewer than two points)."""
    if not 0 < share <= 1:
        raise ValueError(f"share must lie in (0, 1], got {share!r}")
    th, spd = _curve(f4a, "threads", "speedup_sd_fsd")
    if len(th) < 2:
        return float("nan")
    gain = spd - spd[0]
    return float(th[np.argmax(gain >= share * gain[-1])]) if gain[-1] > 0 else float("nan")


# ------------------------------------------------------------------------------------ Fig 4b verdicts
def fsd_gain_grows_with_gamma(f4b: pd.DataFrame) -> Claim:
    """Fig 4b "the SD->FSD gain grows with γ": the speedup at the largest γ strictly above that at the smallest."""
    g, spd = _curve(f4b, "gamma", "speedup_sd_fsd")
    if len(g) < 2:
        return Claim("above", False, f"rejected: {len(g)} gamma value(s)")
    return claims.above(float(spd[-1]), float(spd[0]))


def first_gamma_below(f4b: pd.DataFrame, column: str = "speedup_ar_sd", level: float = 1.0) -> float | None:
    """The smallest γ at which ``column`` is below ``level`` (Fig 4b: AR->SD under 1x "only for γ > 5");
    None when it never is."""
    g, y = _curve(f4b, "gamma", column)
    below = g[y < level]
    return float(below.min()) if len(below) else None
