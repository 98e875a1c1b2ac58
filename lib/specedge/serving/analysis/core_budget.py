"""The drafters' core, round by round: what work it was charged and how long it had, real runs and the twin alike.

In synchronous rounds (GOODSPEED's setting: the server verifies once every client's request is in) a round's time
on the drafters' side runs from the first reply of the previous batch reaching a drafter to the last request of
this batch reaching the server; on one core it cannot be shorter than the CPU work charged in it. ``core_rounds``
holds, per verified round of one client, the timestamps (on the server's clock) and the round's CPU:

- ``left``: the reply left the server; ``received``: it reached the drafter; ``drafted``: the round's drafting
  began; ``arrival``: its request reached the server; ``cpu``: the drafter's CPU for the round (drafting, the
  request, taking the reply in and committing it), ``draft_cpu``: its drafting's.

``real_core_rounds`` reads them from a real run's log (``received`` = ``end`` + ``t_send``, ``drafted`` =
``received`` - ``t_round``, ``cpu`` = ``t_client_cpu``), ``twin_core_rounds`` from the twin's log and the draws its
``Times`` made (``Recorder``). ``budget`` gives per batch the CPU charged (Σ over its rounds) and its window on the
core; ``cycles`` per round the seconds from the previous reply to this one, split at the drafting's start.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..interfaces import Times
from ..log import verified

COLUMNS = ["batch", "client", "round", "left", "received", "drafted", "arrival", "cpu", "draft_cpu"]


def _check(rounds: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in COLUMNS if c not in rounds.columns]
    if missing:
        raise ValueError(f"rounds: missing columns {missing}; expected {COLUMNS} (real_core_rounds / twin_core_rounds)")
    return rounds.sort_values(["client", "round"]).reset_index(drop=True)


def budget(rounds: pd.DataFrame) -> pd.DataFrame:
    """Per batch whose every round has a previous round of its client: ``clients``, ``cpu`` and ``draft_cpu`` (Σ over
    its rounds), ``window`` (from the earliest ``received`` of its clients' previous rounds to its latest
    ``arrival``) and ``busy`` = cpu / window (above 1: more work charged than one core could do in the window).
    A batch with a client's first round has no window (nothing before it on the core) and is left out."""
    r = _check(rounds)
    r = r.assign(prev_received=r.groupby("client")["received"].shift(1))
    r = r.assign(first=r["prev_received"].isna())
    out = r.groupby("batch", sort=True).agg(clients=("client", "size"), cpu=("cpu", "sum"),
                                            draft_cpu=("draft_cpu", "sum"), opened=("prev_received", "min"),
                                            closed=("arrival", "max"), first=("first", "any"))
    out = out[~out.pop("first").astype(bool)]
    out["window"] = out["closed"] - out["opened"]
    out["busy"] = out["cpu"] / out["window"]
    return out.drop(columns=["opened", "closed"]).reset_index()


def cycles(rounds: pd.DataFrame) -> pd.DataFrame:
    """Per round after a client's first, seconds from its previous reply to: this reply reaching it (``cycle``), this
    round's drafting's start (``in_hand``; from the previous reply leaving the server: ``delay``); and of the round
    itself: ``t_round`` (drafting's start to the reply in, the compared round time) and ``reply`` (the reply leaving
    the server to reaching the drafter). ``cycle`` = ``in_hand`` + ``t_round``."""
    r = _check(rounds)
    prev = r.groupby("client")[["left", "received"]].shift(1)
    out = r.assign(delay=r["drafted"] - prev["left"], in_hand=r["drafted"] - prev["received"],
                   cycle=r["received"] - prev["received"], t_round=r["received"] - r["drafted"],
                   reply=r["received"] - r["left"])
    return out.loc[prev["left"].notna(), ["batch", "client", "round", "delay", "in_hand", "cycle", "t_round",
                                          "reply"]].reset_index(drop=True)


def real_core_rounds(log: pd.DataFrame) -> pd.DataFrame:
    """``core_rounds`` of a real run's log (columns ``end``, ``t_send``, ``t_round``, ``t_client_cpu``,
    ``t_draft_cpu``; ``cpu`` is NaN where the log predates ``t_client_cpu``)."""
    v = verified(log)
    received = v["end"] + v["t_send"]
    return pd.DataFrame({
        "batch": v["batch"].to_numpy(int), "client": v["client"].to_numpy(int), "round": v["round"].to_numpy(int),
        "left": v["end"].to_numpy(float), "received": received.to_numpy(float),
        "drafted": (received - v["t_round"]).to_numpy(float), "arrival": v["arrival"].to_numpy(float),
        "cpu": (v["t_client_cpu"] if "t_client_cpu" in v else pd.Series(np.nan, index=v.index)).to_numpy(float),
        "draft_cpu": v["t_draft_cpu"].to_numpy(float)})


class Recorder:
    """The draws a shared-core ``Times`` (``measured_times.times(..., shared_core=True)``) makes, per client in
    order: ``wrap(times)`` returns the same model recording each round's work before the send (``draft``), once the
    reply is in (``post``) and the reply's delay. The twin draws ``down(c)`` twice per verified round (the delay, when
    the server answers, then the logged ``t_send``, when the client resumes): the first of each pair is the delay."""

    def __init__(self, share_before: float = 1.0):
        self.share = share_before   # measured_times.split's share of the CPU besides drafting charged before the send
        self.draft, self.post, self.down = {}, {}, {}

    def wrap(self, times: Times) -> Times:
        if not times.shared_core:
            raise ValueError("times: a shared-core model (shared_core=True) is needed: its draws are CPU work")

        def rec(store, c, f):
            def g(*a):
                v = float(f(*a))
                store.setdefault(c, []).append(v)
                return v
            return g
        post = times.post or (lambda c: 0.0)
        return replace(times, draft=[rec(self.draft, c, f) for c, f in enumerate(times.draft)],
                       post=lambda c: rec(self.post, c, post)(c), down=lambda c: rec(self.down, c, times.down)(c),
                       send=None)


def twin_core_rounds(log: pd.DataFrame, rec: Recorder) -> pd.DataFrame:
    """``core_rounds`` of a twin's log (``twin.simulate`` with ``rec.wrap``'s ``Times``): the reply left at the pass's
    end (``end``), reached the drafter the recorded delay later; the drafting began ``t_round`` before that (the
    twin's round runs from the drafting's start, after the previous reply's work, to its reply); ``cpu`` is the
    round's work before the send plus its work once the reply is in; ``draft_cpu`` that less the CPU besides drafting
    (the work once the reply is in is ``1 - share`` of it)."""
    v = verified(log).sort_values(["client", "round"])
    parts = []
    for c, r in v.groupby("client"):
        n = len(r)
        draft = np.asarray(rec.draft.get(c, [])[:n], float)
        post = np.asarray(rec.post.get(c, [])[:n], float)
        delay = np.asarray(rec.down.get(c, [])[0:2 * n:2], float)
        if min(len(draft), len(post), len(delay)) < n:
            raise ValueError(f"rec: client {c} has {n} verified rounds but fewer recorded draws; wrap the Times "
                             "the twin ran with")
        other = post / (1 - rec.share) if rec.share < 1 else np.zeros(n)
        received = r["end"].to_numpy(float) + delay
        parts.append(pd.DataFrame({
            "batch": r["batch"].to_numpy(int), "client": int(c), "round": r["round"].to_numpy(int),
            "left": r["end"].to_numpy(float), "received": received, "drafted": received - r["t_round"].to_numpy(float),
            "arrival": r["arrival"].to_numpy(float), "cpu": draft + post, "draft_cpu": draft + post - other}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
