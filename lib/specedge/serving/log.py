"""The per-round log both serving systems write (``interfaces.LogRow``, its fields ``interfaces.LOG_COLUMNS``): how
it is made of rows, and the readers every wing shares.

- ``frame``: the log of a batch of ``LogRow``s (the twin's, the replay's, the centralized baseline's), converted
  column by column (the twin's log is made once per simulation: its cost is part of every run's);
  ``from_columns``: the log of whole columns (the vectorised twin's);
- ``verified``: the log's verified rounds (every metric and every driver selects rounds through it);
- ``parse_batch`` / ``packed_products``: a verification profile's ``batch`` column ('L_new:L_cached ...') back
  into pairs, and the query-key products a dense kernel computes on such a packed row;
- ``real_rounds``: per client, a real run's verified rounds with the quantities the replay takes from them
  (``sim.replay``'s module docstring);
- ``dispatch_latency`` / ``turnaround_latency``: a real server's wake-up on an arrival when idle, and its time
  between back-to-back passes, per batch.
"""
from __future__ import annotations

from typing import Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from .interfaces import LOG_COLUMNS, LogRow

_BLOCK = 512   # rows ``frame`` reads together: one block's values stay in the CPU's cache across its columns


def frame(rows: Sequence[tuple], exact: Mapping[str, type] | None = None, constant: Collection[str] = ()) -> pd.DataFrame:
    """The log (``LOG_COLUMNS``) of ``rows`` (``LogRow``s: tuples in its fields' order), as
    ``pd.DataFrame(rows, columns=LOG_COLUMNS)`` builds it, column by column: a column of Python floats (ints) only
    becomes float64 (int64) at once, any other is left to pandas' inference, as from rows. ``exact``: fields whose
    values are all of one Python type (``int`` or ``float``) by their producer's construction, converted without
    looking at each value; ``constant``: fields holding one value in every row by construction (the system, the run's
    label), its first value repeated (which pandas infers as from the rows). Rows are read ``_BLOCK`` at a time
    (each block's columns converted while its values are at hand), the blocks' arrays joined at the end."""
    if not rows:
        return pd.DataFrame(rows, columns=LOG_COLUMNS)
    exact = exact or {}
    unknown = sorted((set(exact) | set(constant)) - set(LOG_COLUMNS))
    if unknown:
        raise ValueError(f"exact / constant: {unknown} are not fields of LogRow ({LOG_COLUMNS})")
    typed = [{int: np.int64, float: float}[exact[name]] if name in exact else None for name in LOG_COLUMNS]
    skip = [name in constant for name in LOG_COLUMNS]
    kinds = [set() for _ in LOG_COLUMNS]     # per column: the Python types of its values
    blocks = [[] for _ in LOG_COLUMNS]       # per column and block: (its values, their array or None)
    for a in range(0, len(rows), _BLOCK):
        for j, col in enumerate(zip(*rows[a: a + _BLOCK])):
            if skip[j]:
                continue
            if typed[j] is not None:
                blocks[j].append((col, np.array(col, typed[j])))
                continue
            kind = set(map(type, col))
            kinds[j] |= kind
            blocks[j].append((col, np.array(col, float) if kind == {float} else
                              np.array(col, np.int64) if kind == {int} else None))
    data = {}
    for j, name in enumerate(LOG_COLUMNS):
        if skip[j]:
            data[name] = [rows[0][j]] * len(rows)
        elif typed[j] is not None or kinds[j] in ({float}, {int}):
            data[name] = np.concatenate([arr for _, arr in blocks[j]])
        else:
            data[name] = [v for col, _ in blocks[j] for v in col]
    return pd.DataFrame(data)


def from_columns(**columns) -> pd.DataFrame:
    """The log (``LOG_COLUMNS``) of whole columns named by ``LogRow``'s fields, each an array or one value for every
    row (every field given exactly once: ``LogRow``'s own keywords check it)."""
    return pd.DataFrame(LogRow(**columns)._asdict())


def verified(log: pd.DataFrame) -> pd.DataFrame:
    """The verified rounds of a serving log (rows whose ``event`` is empty; the other rows record drops,
    refusals and errors), in the log's order. The one definition of "a round of the log"."""
    return log[log["event"] == ""]


def packed_products(pairs) -> int:
    """Query-key products a dense kernel computes on the packed row: sum(L_new) x sum(L_total)."""
    return sum(n for n, _ in pairs) * sum(n + c for n, c in pairs)


def parse_batch(encoded: str) -> list[tuple[int, int]]:
    """'L_new:L_cached ...' back into pairs."""
    return [tuple(int(x) for x in part.split(":")) for part in encoded.split()]


NEEDED = ("client", "round", "S", "accepted", "tokens", "t_draft", "t_verify", "t_send", "up", "arrival",
          "start", "end", "n_new", "n_cached")


def drafting_began(rows: pd.DataFrame) -> pd.Series:
    """Each round's drafting start on the server's clock: its request's arrival less its uplink and its drafting."""
    return rows["arrival"] - rows["up"] - rows["t_draft"]


def real_rounds(log: pd.DataFrame) -> dict[int, pd.DataFrame]:
    """Per client, its verified rounds in order with the replayed quantities (``sim.replay``'s module docstring):
    ``start`` of the client's first round, ``gap`` before each later one, ``down`` after each."""
    missing = [c for c in NEEDED if c not in log.columns]
    if missing:
        raise ValueError(f"log: missing columns {missing}; a real run's log has them "
                         "(serving.real.run.run_real; older logs lack n_new/n_cached)")
    rows = verified(log).sort_values(["client", "round"])
    if rows.empty:
        raise ValueError("log: no verified rounds to replay")
    out = {}
    for c, r in rows.groupby("client"):
        r = r.reset_index(drop=True).copy()
        r["down"] = (r["end"] - r["start"] - r["t_verify"]).clip(lower=0) + r["t_send"]
        t_recv = r["start"] + r["t_verify"] + r["down"]
        began = drafting_began(r)
        r["gap"] = (began - t_recv.shift(1)).fillna(began.iloc[0]).clip(lower=0)
        if "accept_prob_sum" not in r:
            r["accept_prob_sum"] = r["accepted"].astype(float)
        out[int(c)] = r
    return out


def dispatch_latency(log: pd.DataFrame) -> np.ndarray:
    """Per batch that found the server idle (its previous pass ended before the batch's last request
    arrived): seconds from that arrival to the pass's start."""
    rows = verified(log)
    b = rows.groupby("batch").agg(start=("start", "first"), last=("arrival", "max"), end=("end", "max")).sort_index()
    idle = b["end"].shift(1).fillna(-np.inf) < b["last"]
    return (b["start"] - b["last"])[idle & (b["start"] >= b["last"])].to_numpy(float)


def prompt_lengths(log: pd.DataFrame) -> dict[int, tuple[int, ...]]:
    """Per client, the tokens of each of its prompts in its stream's order, as the server verified them: a session's
    first verification holds its prompt and its drafts (``n_new - S`` of a round with nothing cached)."""
    rows = verified(log)
    missing = [c for c in ("n_new", "n_cached") if c not in rows]
    if missing:
        raise ValueError(f"log: missing columns {missing}; a real run's log has them (older logs lack n_new/n_cached)")
    first = rows[rows["n_cached"] == 0].sort_values(["client", "round"])
    return {int(c): tuple(int(x) for x in (g["n_new"] - g["S"])) for c, g in first.groupby("client")}


def running_pass(start: np.ndarray, stop: np.ndarray, t: np.ndarray, at_start: bool = True
                 ) -> tuple[np.ndarray, np.ndarray]:
    """For each time of ``t``: the latest pass started before it, or at it where ``at_start`` (its index into ``start``,
    sorted; -1: none), and whether ``t`` lies in it, before its ``stop``. A pass runs from its start to its stop; the logs' times are in
    microseconds, so a time can equal a pass's start, and ``at_start`` says whether that time is in the pass: yes for a
    request reaching the server as a pass begins (it waits for it), no for a request stamped as its own pass begins
    (it opened the pass: a server without a wake-up starts a pass at the instant its request arrives)."""
    t = np.asarray(t, float)
    i = np.searchsorted(start, t, side="right" if at_start else "left") - 1
    if not len(start):                  # no pass: none running
        return i, np.zeros(len(t), bool)
    return i, (i >= 0) & (t < stop[np.clip(i, 0, None)])


def intake_delays(log: pd.DataFrame) -> np.ndarray:
    """Per request that reached the server while a pass ran: (seconds it reached it after the pass's start, seconds
    from then until the server took it in), shape (k, 2). The real server stamps a request's arrival when its gRPC
    handler first runs, a thread of the process whose scheduling thread runs the passes on the same core: a request
    can wait for it. It reached the server at its send (``arrival - up``) plus the run's link, the median ``up`` of the
    requests sent while the server was idle (neither in a pass nor replying to one); the rest of its ``up`` is the
    wait (negative: a link shorter than the median)."""
    rows = verified(log)
    if rows.empty or "up" not in rows:
        return np.zeros((0, 2))
    b = rows.groupby("batch").agg(start=("start", "first"), tv=("t_verify", "first"), end=("end", "max")).sort_values("start")
    start, tv, busy = (b[c].to_numpy(float) for c in ("start", "tv", "end"))
    up = rows["up"].to_numpy(float)
    sent = rows["arrival"].to_numpy(float) - up
    idle = ~running_pass(start, busy, sent)[1]
    if not (idle & np.isfinite(up)).any():
        return np.zeros((0, 2))
    reached = sent + float(np.median(up[idle & np.isfinite(up)]))
    j, inside = running_pass(start, start + tv, reached)
    inside &= np.isfinite(up)
    j = np.clip(j, 0, None)
    return np.column_stack([(reached - start[j])[inside], (rows["arrival"].to_numpy(float) - reached)[inside]])


def wake_waits(log: pd.DataFrame) -> np.ndarray:
    """Per verified round that its client follows with another: (the other clients busy on the drafters' side when its
    pass ended, the seconds from then until the reply was in the drafter's hands, the seconds from then until the
    drafter's next drafting began), shape (k, 3). A client is busy from its previous pass's end (its first round: its
    drafting's start) until its request reaches the server: drafting, committing, or waiting for its reply or for the
    core; the real drafters, one core between them, take their reply in and start drafting later the more of them
    are busy (``real_rounds``' ``down`` and ``gap``)."""
    rounds = real_rounds(log)
    opens, closes, ends, after = [], [], [], []
    for r in rounds.values():
        end = (r["start"] + r["t_verify"]).to_numpy(float)
        began = drafting_began(r).to_numpy(float)
        opens.append(np.concatenate([began[:1], end[:-1]]))
        closes.append(r["arrival"].to_numpy(float))
        ends.append(end[:-1])
        after.append(np.column_stack([r["down"].to_numpy(float)[:-1], r["gap"].to_numpy(float)[1:]]))
    opens, closes, ends = np.sort(np.concatenate(opens)), np.sort(np.concatenate(closes)), np.concatenate(ends)
    # busy at t: intervals opened at or before t and not closed; the client's own next round opens at t
    busy = np.searchsorted(opens, ends, side="right") - np.searchsorted(closes, ends, side="right") - 1
    return np.column_stack([busy, np.concatenate(after)]) if len(ends) else np.zeros((0, 3))


def _synchronous(rows: pd.DataFrame, n: int, by: str):
    """The passes (``batch``) of ``rows`` that hold one row of each of ``n`` clients, each sorted by ``by`` (ties: in
    the log's order)."""
    for _, b in rows.groupby("batch"):
        if len(b) == n:
            yield b.sort_values(by, kind="stable")


def batch_order(log: pd.DataFrame) -> np.ndarray:
    """Per pass that verified one request of every client of the run (a synchronous round), its requests in the order
    they arrived: (their place in that order, from 0; the seconds from the batch's first drafting start to this
    request's; the seconds from this request's drafting start to its arrival), shape (k, 3). On one core a drafter woken
    later by its reply starts later; whether it then arrives later by as much tells the core's discipline (processor
    sharing from the start of each: as much later, or later still for more work)."""
    rows = verified(log)
    missing = [c for c in ("up", "t_draft") if c not in rows.columns]
    if missing:
        raise ValueError(f"log: missing columns {missing}; a real run's log has them")
    n = rows["client"].nunique()
    rows = rows.assign(began=drafting_began(rows))
    out = []
    for b in _synchronous(rows, n, "arrival"):
        began = b["began"].to_numpy(float)
        out.append(np.column_stack([np.arange(n), began - began.min(), b["arrival"].to_numpy(float) - began]))
    return np.concatenate(out) if out else np.zeros((0, 3))


def reply_order(log: pd.DataFrame) -> np.ndarray:
    """Per pass that verified one request of every client of the run (a synchronous round) and was followed by another
    round of each, its requests in the order their replies were in the drafters' hands: (their place in that order,
    from 0; the seconds from the pass's end until the reply was in hand; until the drafter's next drafting began; until
    its next request reached the server), shape (k, 4). On one core the drafters answered by one pass take their
    replies in one after another; whether the last ones' next requests come as much later tells how the core serves
    them (``serving.interfaces.Times.wake_stamps``)."""
    rounds = real_rounds(log)
    n = len(rounds)
    rows = []
    for r in rounds.values():
        end = (r["start"] + r["t_verify"]).to_numpy(float)
        hand = end + r["down"].to_numpy(float)
        began, arrival = drafting_began(r).to_numpy(float), r["arrival"].to_numpy(float)
        rows.append(np.column_stack([r["batch"].to_numpy(float)[:-1], end[:-1], hand[:-1], began[1:], arrival[1:]]))
    d = pd.DataFrame(np.concatenate(rows) if rows else np.zeros((0, 5)), columns=["batch", "end", "hand", "began", "arrival"])
    out = []
    for b in _synchronous(d, n, "hand"):
        e = b["end"].to_numpy(float)
        out.append(np.column_stack([np.arange(n), *(b[c].to_numpy(float) - e for c in ("hand", "began", "arrival"))]))
    return np.concatenate(out) if out else np.zeros((0, 4))


def turnaround_latency(log: pd.DataFrame) -> np.ndarray:
    """Per batch that had a request waiting when the previous pass ended: seconds from that pass's end
    to this batch's start."""
    rows = verified(log)
    b = rows.groupby("batch").agg(start=("start", "first"), tv=("t_verify", "first"), first=("arrival", "min")).sort_index()
    pass_end = (b["start"] + b["tv"]).shift(1)
    waiting = b["first"] < pass_end
    return (b["start"] - pass_end)[waiting].to_numpy(float)


def pass_intakes(log: pd.DataFrame) -> pd.DataFrame:
    """Per pass, in batch order (``runtime.log_batches``'): ``taken_in``, the requests the server took in while it
    ran (stamped after its start, before its end: the real server stamps a request's arrival when its gRPC handler
    runs, a thread on the pass's core), and ``off_core``, the seconds of the pass its thread did not run
    (``t_verify - t_verify_cpu``; NaN where the log has no ``t_verify_cpu``). The real runs' pass threads ran as
    long with or without a request taken in, and were off their core about 0.5 ms longer per pass with one
    (docs/twin-validation.md): the handler's CPU is taken from the pass."""
    rows = verified(log)
    rows = rows[rows["t_verify"].notna()]
    cpu = rows["t_verify_cpu"] if "t_verify_cpu" in rows else pd.Series(np.nan, index=rows.index)
    b = (rows.assign(cpu=cpu).groupby("batch", sort=True)
         .agg(start=("start", "first"), tv=("t_verify", "first"), cpu=("cpu", "first")))
    order = np.argsort(b["start"].to_numpy(float), kind="stable")
    start, stop = b["start"].to_numpy(float)[order], (b["start"] + b["tv"]).to_numpy(float)[order]
    j, inside = running_pass(start, stop, rows["arrival"].to_numpy(float), at_start=False)
    counts = np.bincount(j[inside], minlength=len(start)) if len(start) else np.zeros(0, int)
    taken = np.empty(len(start), int)
    taken[order] = counts
    return pd.DataFrame(dict(batch=b.index.to_numpy(), taken_in=taken,
                             off_core=(b["tv"] - b["cpu"]).to_numpy(float)))
