"""A twin's open settings fitted to one set of stated numbers, then judged on the others.

A paper that leaves some of its settings unstated (request lengths, device speeds, ...) still states
results that depend on them. ``fit`` chooses those settings by a small, documented grid search on one set
of stated numbers (the *fit* targets) and nothing else; every other stated number is then predicted with
the fitted settings and no further tuning (the *held-out* rows, the reproductions).

- ``fit(evaluate, grid, targets)``: every combination of ``grid`` (name -> candidate values, searched in
  the given order) is one candidate; ``evaluate(candidates) -> [{quantity: value}, ...]`` computes them all
  at once (one parallel, cached sweep); the candidate of least ``loss`` wins, the first one on a tie, so the
  fit is as deterministic as ``evaluate``.
- ``loss``: the mean squared log ratio reproduced / stated over the targets (a relative misfit, the same
  for 2x too high and 2x too low); a non-positive reproduced value is an infinite misfit.
- ``error(paper, reproduced)``: the signed relative error (reproduced - paper) / |paper|, or the plain
  difference where the paper states 0 (a relative error is then undefined; ``error_kind`` says which).
- ``fit_interior``: ``fit``, and while the best candidate lies at an end of a setting's range, that range
  extended one step beyond it (the step of its two end values: geometric for positive values) and the search
  rerun, up to ``rounds`` times; it says which settings end interior (``Fit.interior``).
- ``open_grid``: the grid of a table of open settings (role ``fit``, candidates per scale).
- ``table(...)``: the committed record, one row per fitted setting and per stated number (``COLUMNS``).
- ``summary``: per table, the median |relative error| of the held-out numbers, an undefined error (a zero
  denominator, an infinite or missing ratio) counted as an infinite miss, never dropped.
- ``stated``: which fitted settings a paper's statement inventory gives a value for (a number the paper states
  is an input, never fitted).
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

COLUMNS = ("setting", "value", "range_searched", "role", "paper", "reproduced", "error", "error_kind")
ROLES = ("fit", "held-out")


def error(paper: float, reproduced: float) -> float:
    """(reproduced - paper) / |paper|, or reproduced - paper where paper is 0."""
    paper, reproduced = float(paper), float(reproduced)
    return reproduced - paper if paper == 0 else (reproduced - paper) / abs(paper)


def error_kind(paper: float) -> str:
    return "absolute" if float(paper) == 0 else "relative"


def loss(reproduced: Mapping[str, float], targets: Mapping[str, float]) -> float:
    """Mean squared log ratio of ``reproduced`` to ``targets`` over the targets' quantities."""
    missing = sorted(set(targets) - set(reproduced))
    if missing:
        raise KeyError(f"reproduced: no value for the targets {missing}")
    total = 0.0
    for q, p in targets.items():
        r = float(reproduced[q])
        if not (math.isfinite(r) and r > 0):
            return math.inf
        total += math.log(r / float(p)) ** 2
    return total / len(targets)


def candidates(grid: Mapping[str, Sequence]) -> list[dict]:
    """Every combination of ``grid``'s values, the last name varying fastest."""
    if not grid or any(len(v) == 0 for v in grid.values()):
        raise ValueError(f"grid: need at least one setting and one value per setting, got {dict(grid)!r}")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def open_grid(settings: pd.DataFrame, scale: str, types: Mapping[str, type]) -> dict[str, list]:
    """The ``grid`` of an open-settings table (columns ``setting``, ``role`` and ``{scale}_grid``: the candidates,
    space-separated): its role ``fit`` settings and their candidates at ``scale``, each cast by ``types[setting]``."""
    col = f"{scale}_grid"
    if col not in settings:
        raise ValueError(f"scale: the open settings have no column {col!r} (have {list(settings.columns)})")
    return {r.setting: [types[r.setting](float(v)) for v in getattr(r, col).split()]
            for r in settings.query("role == 'fit'").itertuples()}


@dataclass(frozen=True)
class Fit:
    values: dict            # the fitted settings
    loss: float
    reproduced: dict        # the fit targets' values at ``values``
    searched: pd.DataFrame  # every candidate: its settings, each target's value and the loss
    grid: dict | None = None        # the ranges searched (``fit_interior``: as extended)
    interior: dict | None = None    # setting -> the best value lies strictly inside its range searched


def fit(evaluate: Callable[[list[dict]], list[Mapping[str, float]]], grid: Mapping[str, Sequence],
        targets: Mapping[str, float]) -> Fit:
    """The candidate of ``grid`` whose ``evaluate`` values best match ``targets`` (``loss``; the first on a tie)."""
    if not targets:
        raise ValueError("targets: need at least one stated number to fit")
    bad = {q: p for q, p in targets.items() if not (math.isfinite(float(p)) and float(p) > 0)}
    if bad:
        raise ValueError(f"targets: a fit target must be a finite number > 0 (log ratio), got {bad}")
    cands = candidates(grid)
    got = list(evaluate(cands))
    if len(got) != len(cands):
        raise ValueError(f"evaluate: returned {len(got)} results for {len(cands)} candidates")
    losses = [loss(g, targets) for g in got]
    best = min(range(len(cands)), key=lambda i: (losses[i], i))
    searched = pd.DataFrame([{**c, **{q: float(g[q]) for q in targets}, "loss": l}
                             for c, g, l in zip(cands, got, losses)])
    values = dict(cands[best])
    return Fit(values, losses[best], {q: float(got[best][q]) for q in targets}, searched, {n: list(v) for n, v in grid.items()},
               {n: _inside(grid[n], values[n]) for n in grid})


def _inside(values: Sequence, v) -> bool:
    return len(values) > 2 and min(values) < v < max(values)


def _beyond(values: Sequence, low: bool):
    """One step past an end of a sorted range of numbers: the ratio of its two end values for positive ones,
    else their difference; of the values' type (an int rounded, at least 1 away)."""
    v = sorted(values)
    a, b = (v[0], v[1]) if low else (v[-1], v[-2])
    new = a * a / b if a > 0 and b > 0 else 2 * a - b
    if isinstance(a, int):
        new = int(round(new))
        new = min(new, a - 1) if low else max(new, a + 1)
        if low and new < 1:
            return None
    return type(a)(new)


def fit_interior(evaluate: Callable[[list[dict]], list[Mapping[str, float]]], grid: Mapping[str, Sequence],
                 targets: Mapping[str, float], rounds: int = 4) -> Fit:
    """``fit``; while the best value of a setting (of two or more numeric candidates) is an end of its range, the
    range extended one step past that end (``_beyond``) and everything searched again (``evaluate`` sees every
    candidate each time: a cached runner reruns nothing), at most ``rounds`` times. ``Fit.grid`` holds the final
    ranges, ``Fit.interior`` which settings end strictly inside theirs (a value at an end after ``rounds``
    extensions is not identified by the targets)."""
    grid = {n: sorted(v) for n, v in grid.items()}
    result = fit(evaluate, grid, targets)
    for _ in range(rounds):
        grown = False
        for n, v in grid.items():
            if len(v) < 2 or result.interior[n]:
                continue
            low = result.values[n] == v[0]
            new = _beyond(v, low)
            if new is not None and new not in v and new > 0:
                grid[n] = sorted(v + [new])
                grown = True
        if not grown:
            break
        result = fit(evaluate, grid, targets)
    return result


def describe_range(values: Sequence) -> str:
    return " ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)


def table(result: Fit, grid: Mapping[str, Sequence], targets: Mapping[str, float],
          held_out: Mapping[str, tuple[float, float]], current: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The calibration record: the fitted settings (role ``fit``, their value and the range searched), the
    fit targets (role ``fit``: stated, reproduced at the fit, error) and every held-out stated number
    (``held_out``: quantity -> (paper, reproduced); role ``held-out``). ``current``: a quantity's value
    under the settings before the fit, added with its error (``reproduced_current``, ``error_current``)."""
    rows = [dict(setting=n, value=result.values[n], range_searched=describe_range(grid[n]), role="fit") for n in grid]
    rows += [dict(setting=q, role="fit", paper=float(p), reproduced=result.reproduced[q],
                  error=error(p, result.reproduced[q]), error_kind=error_kind(p)) for q, p in targets.items()]
    rows += [dict(setting=q, role="held-out", paper=float(p), reproduced=float(r), error=error(p, r),
                  error_kind=error_kind(p)) for q, (p, r) in held_out.items()]
    t = pd.DataFrame(rows, columns=list(COLUMNS))
    if current is not None:
        t["reproduced_current"] = [float(current[q]) if q in current else float("nan") for q in t.setting]
        t["error_current"] = [error(p, r) if pd.notna(p) else float("nan") for p, r in zip(t.paper, t.reproduced_current)]
    return t


def miss_median(errors) -> float:
    """The median |error|, an undefined one (NaN: a zero denominator, a missing value; or infinite) counted as an
    infinite miss; NaN only for no errors at all."""
    e = pd.Series(errors, dtype=float).abs()
    return float(e.fillna(math.inf).median()) if len(e) else math.nan


def summary(record: pd.DataFrame) -> pd.DataFrame:
    """Per table (a held-out quantity's name up to its colon): the median |relative error| at the fit and,
    when the record has them, under the settings before it (``miss_median``: an undefined error is a miss),
    with the count of held-out numbers and of undefined errors at the fit."""
    rel = record[(record.role == "held-out") & (record.error_kind == "relative")]
    cols = [c for c in ("error", "error_current") if c in rel]
    g = rel.groupby(rel.setting.str.split(":").str[0])
    out = g[cols].agg(miss_median)
    out["held_out"] = g.size()
    out["undefined"] = g["error"].agg(lambda e: int((~np.isfinite(e.to_numpy(float))).sum()))
    return out


def stated(settings: pd.DataFrame, statements: Sequence[Mapping]) -> dict[str, list[str]]:
    """For every setting of ``settings`` (columns ``setting``, ``unit``, ``paper_terms``: the phrases the paper
    would name it by, ``|``-separated), the ids of ``statements`` (an inventory's, with ``id`` and ``text``) whose
    text names it and gives a number in its unit within the same sentence: a stated value."""
    out = {}
    for r in settings.itertuples():
        terms = [t.strip() for t in str(r.paper_terms).split("|") if t.strip()]
        number = re.compile(r"\d+(?:\.\d+)?\s*\(?\s*" + re.escape(str(r.unit)).replace("tokens/s", "(?:tokens/s|tok/s)") + r"\b",
                            re.IGNORECASE)
        hits = []
        for s in statements:
            for sentence in re.split(r"(?<=[.;])\s", str(s.get("text", ""))):
                if any(t.lower() in sentence.lower() for t in terms) and number.search(sentence):
                    hits.append(str(s["id"]))
                    break
        out[r.setting] = hits
    return out
