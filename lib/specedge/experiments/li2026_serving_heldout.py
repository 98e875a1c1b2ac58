"""Every held-out statement of li2026's abstract and Secs 5.2-5.4, as numbers for ``calibration.table``.

The calibration (``li2026.calibrate``) fits the open settings to Table 3; everything else the paper states is
held out. ``held_out`` gives each held-out statement over every class and target the paper states it for, as
quantity -> (paper, reproduced): the stated numbers (``li2026_serving_figures.stated_numbers``: Tables 1, 2, 6),
the abstract's "up to" capacity speedups (an infinite ratio, a baseline serving no device, is reproduced as
inf: an undefined error, a miss) and each claim per class / target as 1 (holds) against the paper's 1:

- Sec 5.2.1: WISP has the highest capacity (10 % margin over the runner-up), per target and class; its speedup
  over each baseline grows as the class tightens, per target and baseline (undefined if a ratio is);
- Sec 5.3: per class, the share of Fig 7's loads (where either system violates) at which WISP's violation rate
  is at or below FCFS's over the seeds (paired 95 % interval); WISP's knee at a larger N than FCFS's (undefined
  where neither has one); the largest gain in a tight class (6 or 8 tok/s); Fig 8: most missed deadlines
  compute-dominant (eq 21);
- Sec 5.4.1: the predictor's gain grows with N (Table 6).

``runner_up_candidates``: the next best candidates of a fit, whose held-out predictions show how much each
verdict depends on the fit.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import claims
from ..serving import capacity, metrics
from . import li2026 as ex
from .li2026_serving_figures import stated_numbers

TAG = {"Qwen3-32B": "32b", "Qwen3-14B": "14b"}
BASES = ("SLED", "Centralized")


def _flag(holds) -> float:
    return math.nan if holds is None else float(bool(holds))


def capacity_claims(paper: dict, cap: pd.DataFrame, censored: pd.DataFrame, targets) -> dict:
    """Sec 5.2.1's and the abstract's capacity statements from Table 2 (``cap``: (target, system) x speed)."""
    out = {}
    ratios = {}
    for t in targets:
        for sp in ex.CLASSES:
            col = {s: (claims.AtLeast(cap.loc[(t, s), sp]) if censored.loc[(t, s), sp] else float(cap.loc[(t, s), sp]))
                   for s in ("SLED", "Centralized", "WISP")}
            runner = max(float(v) for k, v in col.items() if k != "WISP")
            out[f"Sec 5.2.1: WISP has the highest capacity, {t}, {sp} tok/s (1: holds)"] = (
                1.0, _flag(claims.argmax_is(col, "WISP", margin=round(0.1 * runner, 1)).holds))
            for b in BASES:
                base = float(cap.loc[(t, b), sp])
                ratios[(t, b, sp)] = float(cap.loc[(t, "WISP"), sp]) / base if base > 0 else math.inf
        for b in BASES:
            got = [ratios[(t, b, sp)] for sp in ex.CLASSES]
            out[f"Sec 5.2.1: WISP speedup vs {b} grows as the class tightens, {t} (1: holds)"] = (
                1.0, _flag(None if not all(map(math.isfinite, got)) else claims.strictly_increasing(got).holds))
    for b in BASES:
        out[f"Abstract: largest capacity speedup vs {b}, both targets, every class"] = (
            paper[f"abstract-capacity-{b.lower()}"], max(v for k, v in ratios.items() if k[1] == b))
    return out


def load_claims(raw7: pd.DataFrame, fig7: pd.DataFrame, epsilon: float, wisp: str = "WISP") -> dict:
    """Sec 5.3's statements from Fig 7's sweep (``raw7``: sweep rows with every seed, ``fig7``: pooled rates per
    system, devices, speed) for the system ``wisp`` (a reading of Algorithm 1) against FCFS."""
    out = {}
    v = metrics.per_class(raw7[raw7.system.isin([wisp, "FCFS"])], ["system", "devices", "seed"], ex.CLASSES).pivot_table(
        index=["devices", "speed", "seed"], columns="system", values="violation_rate", dropna=False)
    knee = capacity.knees(fig7[fig7.system.isin([wisp, "FCFS"])], epsilon)
    pooled = fig7.pivot_table(index=["speed", "devices"], columns="system", values="violation_rate")
    for sp in ex.CLASSES:
        flags = []
        for n, g in v.xs(sp, level="speed").groupby(level="devices"):
            if (g[wisp].fillna(0) > 0).any() or (g.FCFS.fillna(0) > 0).any():
                flags.append(claims.interval_at_most(g[wisp].to_numpy(), g.FCFS.to_numpy()).holds)
        out[f"Sec 5.3: share of loads where {wisp} violates at most as FCFS, {sp} tok/s"] = (
            1.0, float(np.mean(flags)) if flags else math.nan)
        kw, kf = knee.loc[(wisp, sp)], knee.loc[("FCFS", sp)]
        out[f"Sec 5.3: {wisp}'s knee at a larger N than FCFS's, {sp} tok/s (1: holds)"] = (
            1.0, math.nan if math.isinf(kw) and math.isinf(kf) else float(kw > kf))
    gain = (pooled.FCFS - pooled[wisp]).groupby(level="speed").mean()
    out[f"Sec 5.3: {wisp}'s largest gain over FCFS in a tight class (6 or 8 tok/s) (1: holds)"] = (
        1.0, float(int(gain.idxmax()) in (6, 8)))
    return out


def held_out(paper: dict, table1: pd.DataFrame, cap: pd.DataFrame, censored: pd.DataFrame, t6: pd.DataFrame, targets,
             raw7: pd.DataFrame | None = None, fig7: pd.DataFrame | None = None, att: pd.DataFrame | None = None,
             epsilon: float = 0.05) -> dict:
    """Every held-out statement (module docstring) as quantity -> (paper, reproduced); Fig 7's and Fig 8's only
    when their runs are given."""
    out = stated_numbers(paper, table1, cap, t6)
    out |= capacity_claims(paper, cap, censored, targets)
    if raw7 is not None:
        out |= load_claims(raw7, fig7, epsilon)
    if att is not None:
        share = float((att[att.violated].label == "compute-dominant").mean()) if att.violated.any() else math.nan
        out["Sec 5.3: most missed deadlines compute-dominant, eq (21) (1: holds)"] = (1.0, _flag(None if math.isnan(share) else share > 0.5))
    imp = [float(t6.loc[n, "improvement_pct"]) for n in (2, 4, 8, 16)]
    out["Sec 5.4.1: the predictor's gain grows with N (1: holds)"] = (1.0, _flag(claims.strictly_increasing(imp).holds))
    return out


def runner_up_candidates(searched: pd.DataFrame, names, k: int = 2) -> list[dict]:
    """The ``k`` candidates after the best one of a fit's ``searched`` table (least loss first, the first on a tie),
    as {setting: value} plus their ``loss`` and ``rank`` (2, 3, ...)."""
    order = searched.reset_index(drop=True).sort_values("loss", kind="stable")
    kinds = {n: type(getattr(ex.Setting(), n)) for n in names}
    return [dict({n: kinds[n](r[n]) for n in names}, loss=float(r["loss"]), rank=i + 2)
            for i, (_, r) in enumerate(order.iloc[1:1 + k].iterrows())]


def as_wisp(cap: pd.DataFrame, system: str) -> pd.DataFrame:
    """Table 2 (``cap``: (target, system) x speed) with ``system``'s capacities in WISP's rows (a reading of
    Algorithm 1 judged by WISP's statements)."""
    c = cap.drop(index="WISP", level="system")
    w = cap.xs(system, level="system", drop_level=False).rename(index={system: "WISP"}, level="system")
    return pd.concat([c[~c.index.get_level_values("system").str.startswith("WISP-")], w]).sort_index()


def verdicts(paper: dict, cap: pd.DataFrame, censored: pd.DataFrame, targets, raw7: pd.DataFrame, fig7: pd.DataFrame,
             epsilon: float, systems) -> pd.DataFrame:
    """Per reading of Algorithm 1 (``systems``: WISP and its ``WISP-*`` readings): its value of every capacity and
    load claim (``capacity_claims``, ``load_claims``: 1 holds, 0 fails, a share for the load comparison, NaN
    undefined) and the abstract's largest speedups, one column per system."""
    cols = {}
    for s in systems:
        got = capacity_claims(paper, as_wisp(cap, s), as_wisp(censored, s), targets)
        got |= {k.replace(f"{s}'s", "WISP's").replace(f"where {s} ", "where WISP "): v
                for k, v in load_claims(raw7, fig7, epsilon, wisp=s).items()}
        cols[s] = {k: r for k, (_, r) in got.items()}
        cols.setdefault("paper", {k: p for k, (p, _) in got.items()})
    return pd.DataFrame(cols)[["paper", *systems]]
