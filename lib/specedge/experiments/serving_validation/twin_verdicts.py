"""Comparison rows judged against the twin's validated error (``serving.analysis.twin_error``): the rows of the serving
notebooks (tran2025, li2026) whose verdict the stochastic twin decides.

``judged`` keeps a row's verdict when its margin (``flip_pct``, ``ratio_pct``, ``utility_pct``: how far the twin's
number(s) must move to change it) lies beyond the error of its metric in its setting, and otherwise makes it a tie
decided by code (a ``not-reproducible`` row whose note opens with ``PREFIX``, one of ``compare.UNDECIDABLE``);
``quoted`` quotes the error in a row no margin of which can be judged against it.
"""
from __future__ import annotations

import numpy as np

from ...serving.analysis import twin_error
from ...serving.analysis.twin_error import DOMAIN_IID, SETTINGS

PREFIX = "the twin's validated error"   # a row this module decides a tie opens its note with it (``compare.UNDECIDABLE``)


def flip_pct(value: float, edges) -> float:
    """How far (%) ``value`` must move, relative to itself, to cross the nearest of ``edges`` (the verdict's decision
    boundaries, in ``value``'s units): 100 min |edge / value - 1|; inf when no edge is finite, NaN for a value of 0
    or not finite."""
    value = float(value)
    if not np.isfinite(value) or value == 0:
        return np.nan
    e = [float(x) for x in edges if np.isfinite(float(x))]
    return 100 * min(abs(x / value - 1) for x in e) if e else np.inf


def ratio_pct(a: float, b: float) -> float:
    """The margin (%) of ``a`` over ``b``: 100 |a / b - 1| (NaN where b is 0 or either is not finite)."""
    return flip_pct(b, [a])


def _error_text(err: float, what: str, setting: str, unit: str = "%") -> str:
    e = "unmeasured" if not np.isfinite(err) else f"{err:.1f} {unit}"
    return f"{PREFIX} in {setting}'s setting ({what}, the sweeps' twin, p50): {e}"


def quote(err: float, what: str, setting: str, margin: float, unit: str = "%") -> str:
    return f"{_error_text(err, what, setting, unit)}; the verdict's margin {margin:.1f} {unit}"


def judged(row: dict, margin_pct: float, metric: str, setting: str, twin: str = DOMAIN_IID, files=SETTINGS) -> dict:
    """A comparison row (``compare.Comparison.extend``'s keyword arguments) judged against the twin's validated
    error: ``margin_pct`` is how far the twin's number(s) must move to change the row's verdict, in the unit of
    ``metric``'s error (``twin_error.unit``: % for ``flip_pct``, ``ratio_pct``; percentage points for a violation rate). A margin at or below the error of ``metric`` in ``setting`` (``serving.analysis.twin_error.margin_error``),
    an unmeasured error or an undefined margin make the row a tie: a stated ``not-reproducible`` (cause ``models``)
    whose note opens with ``PREFIX``; otherwise the row keeps its verdict and its note quotes the error. A row already stated
    (it has a ``status``) is returned unchanged."""
    if "status" in row or "check" in row:
        return row
    err, what = twin_error.margin_error(metric, setting, twin, files)
    q = quote(err, what, setting, margin_pct, twin_error.unit(metric))
    note = str(row.get("note", "")).strip()
    if np.isfinite(err) and not np.isnan(margin_pct) and abs(margin_pct) > err:   # inf: no edge to cross
        return dict(row, note=f"{note}; {q}, beyond it" if note else f"{q}, beyond it")
    claim = row.get("claim")
    shown = row.get("reproduced", getattr(claim, "evidence", ""))
    out = {k: v for k, v in row.items()
           if k not in ("claim", "null_claim", "strength", "cause", "tolerance", "null", "bound", "feasible", "sibling")}
    why = (f"{q}: the verdict is undecided" if not np.isfinite(err) else
           f"{q}, no margin to judge against it: the verdict is undecided" if np.isnan(margin_pct) else
           f"{q}, within it: a tie the twin cannot decide")
    if claim is not None:
        why += f" (the claim {'holds' if claim.holds else 'fails'} in the twin: {claim.evidence})"
    out.update(status="not-reproducible", cause="models", reproduced=shown, note=f"{why}; {note}" if note else why)
    return out


def utility_pct(d_utility: float, clients: int) -> float:
    """A margin in U = sum_i log x̄_i (GOODSPEED's utility) as the uniform change of every client's goodput that
    moves U by as much: 100 (exp(|dU| / clients) - 1) (%)."""
    return 100 * float(np.expm1(abs(float(d_utility)) / clients)) if np.isfinite(d_utility) else np.nan


def quoted(row: dict, metric: str, setting: str, why: str, twin: str = DOMAIN_IID, files=SETTINGS) -> dict:
    """``row`` with the validated error of ``metric`` in ``setting`` quoted in its note and ``why`` no margin of the
    row can be judged against it (e.g. a ratio of the twin to itself that a uniform error cancels); its verdict stays."""
    if "status" in row or "check" in row:
        return row
    q = (f"{_error_text(*twin_error.margin_error(metric, setting, twin, files), setting, twin_error.unit(metric))}, "
         f"not a margin of this verdict: {why}")
    note = str(row.get("note", "")).strip()
    return dict(row, note=f"{note}; {q}" if note else q)
