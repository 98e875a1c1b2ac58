"""The arena's capacity: how many devices a combination serves at a given SLO attainment.

capacity = the largest fleet size N (devices drawn from the scenario's mix, as in the sweep) whose SLO
attainment — the fraction of responses meeting their class (``experiments.edge_sd_arena.runs.measure``, li2026 Sec 5.3),
every seed's responses pooled — is at least the scenario's ``capacity.attainment``: li2026 eq (20)'s
Cap(τ) = max{N : Pr[response slower than its class] <= ε} with ε = 1 - attainment, found by
``serving.analysis.capacity.bisect`` (used as it is) between 1 and ``capacity.max_devices``. A capacity that reaches
the bound is ``censored`` (at least that many); one below 1 (0) means even a single device misses the level.
The bisection presumes the violation rate grows with N; its first upper bracket (``guess``) is the smallest N
of the sweep's grid that misses the level in the sweep's own rows (none if none does: ``max_devices`` is then
run first, and a combination that meets the level there is censored after two evaluations), and it stops
within ``RESOLUTION`` of the capacity (``info["resolution"]``).

Each evaluation of N runs ``experiments.edge_sd_arena.runs.run_point`` at the same ``Point`` s the sweep runs (same seeds),
through ``specedge.sweep``'s cache: N of the sweep's grid is read back, not rerun.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import pandas as pd

from ... import sweep
from ...serving.analysis import capacity
from ...serving.scenario import Scenario
from .runs import Combination, Point, from_label, run_point

RESOLUTION = 1 / 8       # stop when the bracket is within 12.5 % of the capacity (serving.analysis.capacity's resolution)


@dataclass(frozen=True)
class Search:
    """One capacity search: a combination at a (bandwidth, mix) of a scenario, the sweep's seeds."""
    combo: Combination
    bandwidth_bps: float
    mix: str
    seed: int
    scenario: Scenario
    guess: int | None         # the first upper bracket, presumed to miss the level (serving.analysis.capacity.bisect)
    point_cache: str = ""     # the sweep's cache folder ("" none): points already run are read back


@lru_cache(maxsize=None)
def _version() -> str:
    return sweep.point_version(run_point)     # the key the notebook's sweep.run gives run_point's points


def capacity_of(search: Search) -> dict:
    """The capacity of one combination (module docstring), with the N evaluated and their pooled violations."""
    scn, evaluated = search.scenario, {}

    def f(n: int) -> tuple[int, int]:
        pts = [Point(search.combo, search.bandwidth_bps, int(n), search.mix, s, scn) for s in sweep.seeds(search.seed, scn.seeds)]
        if search.point_cache:
            rows = sweep.run(run_point, pts, backend="sequential", cache_dir=search.point_cache,
                             version=_version(), progress=False).to_dict("records")
        else:
            rows = [run_point(p) for p in pts]
        evaluated[int(n)] = v_t = (sum(r["violations"] for r in rows), sum(r["responses"] for r in rows))
        return v_t

    epsilon = 1 - scn.capacity_attainment
    cap, info = capacity.bisect(f, 1, scn.capacity_max_devices, epsilon, guess=search.guess, resolution=RESOLUTION,
                                return_info=True)
    v, t = evaluated.get(cap, (0, 0))
    return dict(combination=search.combo.label, bandwidth_bps=search.bandwidth_bps, mix=search.mix,
                attainment_level=scn.capacity_attainment, capacity=int(cap), censored=bool(info["saturated"]),
                resolution=int(info["resolution"]), attainment_at_capacity=1 - v / t if t else float("nan"),
                evaluated=" ".join(f"{n}:{a}/{b}" for n, (a, b) in sorted(evaluated.items())))


def first_bracket(rows: pd.DataFrame, label: str, bandwidth_bps: float, mix: str, scn: Scenario) -> int | None:
    """The smallest N of the sweep's ``rows`` (``runs.run_point``'s) where ``label`` at (bandwidth, mix) misses
    the attainment level, its seeds' responses pooled (at most ``capacity_max_devices``); None when it misses at none."""
    g = rows[(rows.combination == label) & (rows.bandwidth_bps == bandwidth_bps) & (rows.mix == mix)]
    pooled = g.groupby("devices")[["violations", "responses"]].sum()
    miss = pooled.index[[capacity.rate(int(v), int(t)) > 1 - scn.capacity_attainment for v, t in pooled.itertuples(index=False)]]
    return int(min(miss.min(), scn.capacity_max_devices)) if len(miss) else None


def capacity_table(labels, rows: pd.DataFrame, scn: Scenario, seed: int, *, run=None, point_cache: str = "") -> pd.DataFrame:
    """One search per combination label (e.g. the ablation's) at the scenario's reference bandwidth and mix,
    bracketed by the sweep's ``rows`` (``first_bracket``); ``run``: a sweep runner (``sweep.run`` with its
    backend), in-process when None."""
    bw, _, mix = scn.reference
    searches = [Search(from_label(label), bw, mix, seed, scn, first_bracket(rows, label, bw, mix, scn), str(point_cache))
                for label in dict.fromkeys(labels)]
    if run is None:
        return pd.DataFrame([capacity_of(s) for s in searches])
    return run(capacity_of, searches)


__all__ = ["Search", "capacity_of", "capacity_table", "first_bracket", "RESOLUTION"]
