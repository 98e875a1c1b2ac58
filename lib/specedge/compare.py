"""The comparison contract: what a paper states next to what we measured, each row of one kind.

Each notebook writes ``figures/<key>/comparison.csv`` (columns ``COLUMNS``) and, when it compares
its own parts with each other, ``figures/<key>/checks.csv`` (columns ``CHECK_COLUMNS``). Every row
of ``comparison.csv`` is one ``kind``:

- ``reproduction``: a number or claim the paper states against what our implementation measured or
  computed (``models``: on the ``zoo``, the ``real pair`` or the ``paper``'s own inputs). It is
  ``match``/``trend`` only if its null -- no effect, the baseline's own value, or the value a
  trivial method gives for a level -- fails the same test: ``add`` needs the ``null`` value and
  refuses a tolerance that also accepts it; ``claim`` needs ``null_claim``, the same predicate on
  the null's values, and refuses one that holds. A row whose null cannot be stated is not a
  reproduction.
- ``analytic``: our implementation of the paper's closed form on the paper's own inputs; it can fail
  only through a formula error, so it is counted apart.
- ``setting``: a design input, a size chosen to match, arithmetic on the paper's own numbers:
  context shown next to the results it feeds, with no status.

A *check* -- ours against ours (twin vs real, replay vs run, bounds) -- is never a comparison row:
``Comparison.check`` writes it to ``checks.csv`` with its own pass/fail and no paper value.

``deviates`` and ``not-reproducible`` name a ``cause`` (``CAUSES``) and a note. Nothing excuses a
row: :func:`validate` re-checks every rule on a written file (``load_all`` and a test run it over
every committed file). The README's results table is generated from these files
(``python -m specedge.compare --update-readme``); a test fails when it is stale.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import papers, paths
from .claims import Claim
from .plotting import write_csv

COLUMNS = ["artifact", "quantity", "kind", "models", "paper", "reproduced", "unit", "tolerance", "status",
           "cause", "note", "predicate", "evidence", "null", "null_evidence", "statements", "paper_source",
           "feasible", "window", "sibling"]
CHECK_COLUMNS = ["check", "quantity", "ours", "reference", "unit", "tolerance", "passed", "note"]
KINDS = ("reproduction", "analytic", "setting")
MODELS = ("zoo", "real pair", "paper", "")
STATUSES = ("match", "trend", "deviates", "not-reproducible")
STATED = ("deviates", "not-reproducible")  # the only statuses a caller may state; both need a cause
CAUSES = ("models", "hardware", "paper-ambiguity", "our-reading", "unexplained")
START, END = "<!-- results:start -->", "<!-- results:end -->"
MIN_CAUSE = 20  # characters: a stated status needs a note naming a mechanism, not "n/a"
EPS = 1e-12
# where the paper column comes from: printed in the paper, reconstructed from its formulas (the text lost it),
# or read off a figure. Rows on recovered or read values are counted apart, never as agreement with the paper.
PAPER_SOURCES = ("stated", "recovered", "read-from-figure")
# the feasible range of a quantity by its unit, where the unit fixes it; others are declared per row (feasible=)
FEASIBLE = {"fraction": (0.0, 1.0), "rate": (0.0, 1.0), "probability": (0.0, 1.0)}
MAX_WINDOW_SHARE = 0.25   # a reproduction whose acceptance window covers more of its feasible range cannot match
# "X is best" predicates (claims.RANKING): a null that ties by construction cannot pass
RANKING = ("argmax_is", "argmin_is", "interval_argmax_is")
# a setting is an input, never a value measured on this host (a measurement is a row with a status)
MEASURED = re.compile(r"measured here|measured on this|this CPU|this host|this machine", re.I)
# a not-reproducible row that shows a computed outcome: the test ran (it is deviates, unless code found it
# cannot tell the statement from its null or its window is too wide, or the value is a stand-in on other hardware)
RAN = re.compile(r"^\s*(-?[0-9.]+(e-?[0-9]+)?|-?inf|∞|undefined|unbounded)\s*$", re.I)
# notes of the not-reproducible rows code makes: a null that also holds, a window too wide, a margin within the twin's
# validated error (``experiments.serving_validation.twin_verdicts.judged``)
UNDECIDABLE = ("the null ", "the acceptance window ", "the twin's validated error")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _clean(x):
    """Numbers without float noise (0.6204999999999999 -> 0.6205); other values unchanged."""
    if isinstance(x, float) and math.isfinite(x):
        return float(f"{x:.10g}")
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):  # numpy scalars
        try:
            return _clean(x.item())
        except (TypeError, ValueError):
            return x
    return x


def _float(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def range_text(r: tuple[float, float] | None) -> str:
    """``(0, 1)`` -> ``"0..1"`` (``inf`` for an open end); ``None`` -> ``""``."""
    return "" if r is None else f"{_clean(float(r[0])):g}..{_clean(float(r[1])):g}"


def parse_range(text: str) -> tuple[float, float] | None:
    """``"0..1"`` -> ``(0.0, 1.0)``; ``""`` -> None; anything else a ValueError."""
    text = str(text).strip()
    if not text:
        return None
    lo, sep, hi = text.partition("..")
    try:
        out = float(lo), float(hi)
    except ValueError:
        out = None
    if not sep or out is None or math.isnan(out[0]) or math.isnan(out[1]) or out[0] > out[1]:
        raise ValueError(f"a range reads 'low..high' with low <= high (e.g. '0..1', '1..inf'), got {text!r}")
    return out


def window_share(window: tuple[float, float] | None, feasible: tuple[float, float] | None) -> float | None:
    """The share of the ``feasible`` range of a quantity that its acceptance ``window`` covers (0 for an unbounded
    range, None when either is undeclared): a window covering most of what the quantity can be cannot fail."""
    if window is None or feasible is None:
        return None
    lo, hi = feasible
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0.0
    if hi <= lo:
        raise ValueError(f"feasible range {feasible} is empty")
    return max(0.0, min(hi, window[1]) - max(lo, window[0])) / (hi - lo)


def null_tolerance(paper: float, null: float, cap: float) -> float:
    """A tolerance that rejects the null: half the paper's effect ``|paper - null|``, at most ``cap``
    (e.g. a speedup of 1.04x gets 0.02, so 1.0x, no effect, cannot match it)."""
    if not (_is_number(paper) and _is_number(null) and _is_number(cap) and cap >= 0):
        raise ValueError(f"null_tolerance needs finite paper, null and cap >= 0, got {paper!r}, {null!r}, {cap!r}")
    return float(f"{min(cap, abs(paper - null) / 2):.6g}")


def unless_null_holds(row: dict) -> dict:
    """A row (``extend``'s keyword arguments) unchanged, unless it would pass and so would its null: a claim
    whose ``claim`` and ``null_claim`` both hold, or a number (``paper``, ``reproduced``, ``tolerance``, ``null``,
    no ``bound``) whose tolerance accepts both. Then the run cannot tell the statement from its null, and the row
    becomes a stated ``not-reproducible`` (cause ``our-reading``) showing both, instead of an error. For drivers
    whose data (a smaller CI-scale run, a measured file) decide whether a row can fail."""
    c, n = row.get("claim"), row.get("null_claim")
    if isinstance(c, Claim) and isinstance(n, Claim):
        if not (c.holds and n.holds):
            return row
        why, shown = f"the null also holds ({n.name}: {n.evidence})", row.get("reproduced", c.evidence)
    else:
        p, r, tol, null = (_clean(row.get(k)) for k in ("paper", "reproduced", "tolerance", "null"))
        if row.get("bound") or not all(_is_number(x) for x in (p, r, tol, null)) \
                or abs(p - r) > tol + EPS or abs(p - null) > tol + EPS:
            return row
        why, shown = f"the null {null} is also within {p} ± {tol}", r
    out = {k: v for k, v in row.items()
           if k not in ("claim", "null_claim", "strength", "cause", "tolerance", "null", "bound", "feasible", "sibling")}
    note = f"{why}: this run cannot tell the statement from its null"
    out.update(status="not-reproducible", cause="our-reading", reproduced=shown,
               note=f"{note}; {row['note']}" if str(row.get("note", "")).strip() else note)
    return out


@dataclass(frozen=True)
class Cell:
    """How one column of a paper table meets ours in :meth:`Comparison.table`: ``how`` is ``"add"`` (a
    ``tolerance`` decides, as in ``add``) or a stated ``"deviates"`` / ``"not-reproducible"`` (with its
    ``cause``). ``tolerance``, ``null``, ``note`` and ``cause`` may be callables: ``tolerance(paper)``, ``null(row)``,
    ``note(row)``, ``cause(row)``; ``quantity`` is formatted with ``row`` and ``col``."""
    how: str = "add"
    unit: str = ""
    tolerance: float | Callable | None = None
    null: float | Callable | None = None
    note: str | Callable = ""
    quantity: str = "{row} {col}"
    kind: str = "reproduction"
    cause: str | Callable = ""
    models: str = ""
    feasible: tuple[float, float] | None = None
    sibling: str | Callable = ""
    paper_source: str = ""


def _empty(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or str(x).strip() in ("", "–", "-", "nan")


def _ties_by_construction(evidence: str) -> bool:
    """A null evidence that ties by construction: a tie for the top ("tie: a=1, b=1"), a constant series, no
    values ("rejected"), or a comparison of identical values ("mean diff +0 [+0, +0]") against any rival: it
    fails whatever the data."""
    e = str(evidence).removeprefix("fails: ").removeprefix("holds: ")
    if e.startswith(("tie", "constant", "rejected")):
        return True
    parts = re.findall(r"(?:tie|above|below|rejected)[^;]*", e)
    return bool(parts) and any(re.search(r"mean diff [+-]?0 \[[+-]?0, [+-]?0\]", p) or p.startswith("rejected")
                               for p in parts)


def _ran(reproduced, cause: str, note: str) -> bool:
    """A not-reproducible row whose test ran: it shows a computed outcome (a number, an unbounded ratio), is no
    stand-in on other hardware (cause hardware) and no row code found undecidable (``UNDECIDABLE``)."""
    return cause != "hardware" and bool(RAN.match(str(_clean(reproduced)))) \
        and not str(note).strip().startswith(UNDECIDABLE)


def _check_fields(where: str, kind: str, models: str, cause: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
    if models not in MODELS:
        raise ValueError(f"{where}: models must be one of {MODELS}, got {models!r}")
    if cause and cause not in CAUSES:
        raise ValueError(f"{where}: cause must be one of {CAUSES}, got {cause!r}")


def _refuse_extra(fn: str, where: str, kwargs: dict) -> None:
    if "status" in kwargs:
        raise TypeError(f"{where}: a status is decided by code, not passed to {fn}(); "
                        "use claim() for a predicate or state() for deviates/not-reproducible")
    if "null_why" in kwargs:
        raise TypeError(f"{where}: null_why is gone: nothing excuses a row. Give the computed null "
                        "(null= / null_claim=), or label the row analytic or setting, or make it a check()")
    if kwargs:
        raise TypeError(f"{fn}() got unexpected arguments {sorted(kwargs)}")


@dataclass
class Comparison:
    """Rows of one notebook's ``comparison.csv`` (and ``checks.csv``); every status is decided here, by code.

    - ``add``: a number against the paper's within ``tolerance`` -> ``match`` or ``deviates``.
    - ``claim``: a qualitative statement decided by a ``specedge.claims`` predicate -> ``strength``
      (``match``/``trend``) when it holds and its null does not, ``deviates`` when it does not hold.
    - ``analytic``: ``add``/``claim`` of the paper's closed form on the paper's own inputs.
    - ``setting``: an input or a size chosen to match: context, no status.
    - ``state``: the caller states ``deviates`` or ``not-reproducible`` with a cause and a note.
    - ``check``: ours against ours, into ``checks.csv``.
    Nobody types ``match`` or ``trend``.
    """
    key: str
    rows: list[dict] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)
    sources: dict | None = None   # statement id -> its paper_source (default: the key's data/coverage inventory)

    def paper_source(self, statements, given: str = "") -> str:
        """``given``, or what the row's statements say (``coverage.paper_sources``): ``recovered`` when one of
        them is, else ``read-from-figure`` when one is, else ``stated``."""
        if given:
            if given not in PAPER_SOURCES:
                raise ValueError(f"paper_source must be one of {PAPER_SOURCES}, got {given!r}")
            return given
        if self.sources is None:
            from . import coverage
            self.sources = coverage.paper_sources(self.key) if self.key in papers.MANIFEST.inventories else {}
        ids = statements.split() if isinstance(statements, str) else list(statements)
        found = {self.sources.get(i, "stated") for i in ids}
        return next((s for s in ("recovered", "read-from-figure") if s in found), "stated")

    def _sibling(self, name: str) -> dict:
        """The analytic row ``name`` (its quantity, or "artifact / quantity") written before this one."""
        hits = [r for r in self.rows if r["kind"] == "analytic"
                and name in (r["quantity"], f"{r['artifact']} / {r['quantity']}")]
        if len(hits) != 1:
            raise ValueError(f"sibling {name!r}: {len(hits)} analytic rows of that name written before it (need one: "
                             "write the paper's formula on the paper's inputs for the same cell first)")
        return hits[0]

    def _decide(self, where, status, note, cause, *, kind, window, feasible, sibling):
        """A reproduction's ``match``/``trend`` only stands when its analytic sibling agrees (else ``deviates``,
        cause paper-ambiguity) and its acceptance window covers at most ``MAX_WINDOW_SHARE`` of the quantity's
        feasible range (else ``not-reproducible``, cause our-reading). Returns (status, note, cause)."""
        if kind != "reproduction" or status not in ("match", "trend"):
            return status, note, cause
        if sibling:
            sib = self._sibling(sibling)
            if sib["status"] not in ("match", "trend"):
                why = (f"the paper's formula on the paper's inputs for the same cell ({sibling}: {sib['reproduced']} "
                       f"against {sib['paper']}) deviates, so this agreement rests on compensating differences")
                return "deviates", f"{why}; {note}" if note.strip() else why, "paper-ambiguity"
        share = window_share(window, feasible)
        if share is not None and share > MAX_WINDOW_SHARE + EPS:
            why = (f"the acceptance window {range_text(window)} covers {share:.0%} of the feasible {range_text(feasible)} "
                   f"(more than {MAX_WINDOW_SHARE:.0%}): the test could hardly fail")
            return "not-reproducible", f"{why}; {note}" if note.strip() else why, "our-reading"
        return status, note, cause

    def _row(self, artifact, quantity, paper, reproduced, unit, tolerance, status, note, *, kind, models,
             cause="", predicate="", evidence="", null=None, null_evidence="", statements="", paper_source="",
             feasible=None, window=None, sibling=""):
        if not str(artifact).strip() or not str(quantity).strip():
            raise ValueError("artifact and quantity must be non-empty")
        where = f"{artifact}/{quantity}"
        _check_fields(where, kind, models, cause)
        paper_source = self.paper_source(statements, paper_source)
        if status in STATED:
            if not cause:
                raise ValueError(f"{where}: status {status!r} needs a cause, one of {CAUSES}")
            if len(str(note).strip()) < MIN_CAUSE:
                raise ValueError(f"{where}: status {status!r} needs a note naming the mechanism "
                                 f"(at least {MIN_CAUSE} characters), got {note!r}")
        else:
            cause = ""  # a cause explains a deviation; a match has none
        if not isinstance(statements, str):
            statements = " ".join(statements)
        self.rows.append(dict(artifact=artifact, quantity=quantity, kind=kind, models=models, paper=_clean(paper),
                              reproduced=_clean(reproduced), unit=unit,
                              tolerance="" if tolerance is None else _clean(tolerance), status=status, cause=cause,
                              note=note, predicate=predicate, evidence=evidence,
                              null="" if null is None else _clean(null), null_evidence=null_evidence,
                              statements=statements, paper_source=paper_source, feasible=range_text(feasible),
                              window=range_text(window), sibling=sibling))
        return status

    def add(self, artifact: str, quantity: str, paper, reproduced, unit: str = "",
            tolerance: float | None = None, note: str = "", null: float | None = None, statements="",
            bound: str = "", kind: str = "reproduction", models: str = "", cause: str = "",
            feasible: tuple[float, float] | None = None, sibling: str = "", paper_source: str = "", **kwargs) -> str:
        """A number within ``tolerance`` of the paper's: ``match``; otherwise ``deviates`` (with a ``cause``
        and a ``note`` naming the mechanism).

        ``null`` (required for a reproduction): the value the null gives -- no effect (speedup 1.0, gain
        0), the baseline's own value, or for a level the value a trivial method gives. A ``match`` whose
        tolerance also accepts the null cannot fail and is refused.

        ``bound``: ``">="`` or ``"<="`` when ``reproduced`` is a censored value (a search that stopped at
        its cap): never a ``match``; ``deviates`` when even the bound lies beyond the tolerance on its
        side, else ``not-reproducible`` (the run cannot decide). Shown as "≥512".
        ``statements``: the id(s) of the paper's statements the row holds (``data/coverage/<key>.yaml``).
        ``feasible``: the quantity's feasible range (a rate (0, 1), τ (1, γ + 1), a ratio (0, inf)); default by
        ``unit`` (``FEASIBLE``). A match whose window ``paper ± tolerance`` covers more than a quarter of it is
        ``not-reproducible``. ``sibling``: the analytic row (the paper's formula on the paper's inputs for the same
        cell); a match is ``deviates`` when it deviates. ``paper_source``: default from the statements."""
        where = f"{artifact}/{quantity}"
        _refuse_extra("add", where, kwargs)
        if kind == "setting":
            raise ValueError(f"{where}: a setting has no status: use setting()")
        _check_fields(where, kind, models, cause)
        paper, reproduced = _clean(paper), _clean(reproduced)
        if not (_is_number(paper) and _is_number(reproduced)):
            raise ValueError(f"{where}: add() compares two finite numbers "
                             f"(got {paper!r} and {reproduced!r}); use claim() or state()")
        if not (_is_number(tolerance) and tolerance >= 0):
            raise ValueError(f"{where}: add() needs a tolerance >= 0, got {tolerance!r}")
        if null is not None and not _is_number(_clean(null)):
            raise ValueError(f"{where}: null must be a finite number, got {null!r}")
        if kind == "reproduction" and null is None:
            raise ValueError(f"{where}: a reproduction needs its null (no effect, the baseline's value, or the value "
                             "a trivial method gives); without one label the row analytic or setting")
        feasible = feasible if feasible is not None else FEASIBLE.get(unit)
        window = (paper - tolerance, paper + tolerance)
        fields = dict(kind=kind, models=models, cause=cause, null=null, statements=statements, feasible=feasible,
                      window=window, paper_source=paper_source)
        if bound:
            if bound not in (">=", "<="):
                raise ValueError(f"{where}: bound must be '', '>=' or '<=', got {bound!r}")
            beyond = reproduced > paper + tolerance + EPS if bound == ">=" else reproduced < paper - tolerance - EPS
            shown = ("≥" if bound == ">=" else "≤") + f"{reproduced:g}"
            why = f"censored: {shown}, a bound (the search stopped at its limit)"
            note = f"{note}; {why}" if note.strip() else why
            return self._row(artifact, quantity, paper, shown, unit, tolerance,
                             "deviates" if beyond else "not-reproducible", note, **fields)
        status = "match" if abs(paper - reproduced) <= tolerance + EPS else "deviates"
        if status == "deviates" and len(note.strip()) < MIN_CAUSE:
            raise ValueError(f"{where}: {reproduced} is outside {paper} ± {tolerance}: "
                             "give a note naming the mechanism (and a cause)")
        if status == "match" and kind == "reproduction" and abs(paper - _clean(null)) <= tolerance + EPS:
            raise ValueError(f"{where}: {paper} ± {tolerance} also accepts the null {null}: the row cannot fail: "
                             "tighten the tolerance or label the row analytic/setting")
        status, note, fields["cause"] = self._decide(where, status, note, cause, kind=kind, window=window,
                                                     feasible=feasible, sibling=sibling)
        return self._row(artifact, quantity, paper, reproduced, unit, tolerance, status, note, sibling=sibling, **fields)

    def claim(self, artifact: str, quantity: str, paper, claim: Claim, null_claim: Claim | None = None,
              unit: str = "", strength: str = "trend", note: str = "", reproduced=None, statements="",
              kind: str = "reproduction", models: str = "", cause: str = "", feasible: tuple[float, float] | None = None,
              sibling: str = "", paper_source: str = "", **kwargs) -> str:
        """A qualitative claim decided by a predicate: ``strength`` (``match`` or ``trend``) when it holds
        and, for a reproduction, ``null_claim`` -- the same predicate on the null's values -- does not;
        ``deviates`` (with a ``cause``) when it does not hold. ``reproduced`` defaults to the evidence.
        A ranking claim's null (``RANKING``: "X is best") is the strongest rival named best
        (``claims.strongest_alternative``): a null that ties by construction is refused. ``feasible``,
        ``sibling``, ``paper_source``: as in ``add`` (the window is the claim's, e.g. ``within``'s range)."""
        where = f"{artifact}/{quantity}"
        _refuse_extra("claim", where, kwargs)
        for name, c in (("claim", claim), ("null_claim", null_claim)):
            if c is not None and not isinstance(c, Claim):
                raise TypeError(f"{where}: {name} must be a specedge.claims.Claim, got {type(c).__name__}")
        if claim is None:
            raise TypeError(f"{where}: claim() takes a specedge.claims.Claim, got None")
        if strength not in ("match", "trend"):
            raise ValueError(f"{where}: strength must be 'match' or 'trend', got {strength!r}")
        if kind == "setting":
            raise ValueError(f"{where}: a setting has no status: use setting()")
        if kind == "reproduction" and null_claim is None:
            raise ValueError(f"{where}: a reproduction needs null_claim, the same predicate on the null's values "
                             "(no effect, the baseline, the trivial method); without one label it analytic or setting")
        if claim.holds and null_claim is not None and null_claim.holds:
            raise ValueError(f"{where}: the null also holds ({null_claim.name}: {null_claim.evidence}): "
                             "the row cannot fail: tighten the predicate (a margin) or label the row analytic/setting")
        if kind == "reproduction" and claim.name in RANKING and _ties_by_construction(null_claim.evidence):
            raise ValueError(f"{where}: the null of a ranking claim ties by construction ({null_claim.evidence}): it "
                             "cannot pass; name the strongest rival best instead (claims.strongest_alternative)")
        status = strength if claim.holds else "deviates"
        if not claim.holds:
            failed = f"{claim.name} fails: {claim.evidence}"
            note = f"{failed}; {note}" if note.strip() else failed
        feasible = feasible if feasible is not None else FEASIBLE.get(unit)
        window = claim.window
        status, note, cause = self._decide(where, status, note, cause, kind=kind, window=window, feasible=feasible,
                                           sibling=sibling)
        shown = claim.evidence if reproduced is None else reproduced
        null_evidence = "" if null_claim is None else \
            f"{'holds' if null_claim.holds else 'fails'}: {null_claim.evidence}"
        return self._row(artifact, quantity, paper, shown, unit, None, status, note, kind=kind, models=models,
                         cause=cause, predicate=claim.name, evidence=claim.evidence, null_evidence=null_evidence,
                         statements=statements, paper_source=paper_source, feasible=feasible, window=window,
                         sibling=sibling)

    def analytic(self, artifact: str, quantity: str, paper, reproduced=None, claim: Claim | None = None,
                 **kw) -> str:
        """The paper's closed form on the paper's own inputs: ``add`` (a number, ``tolerance=``) or, with
        ``claim``, ``claim``; no null (it can fail only through a formula error). ``models`` is ``paper``."""
        kw.setdefault("models", "paper")
        if claim is not None:
            return self.claim(artifact, quantity, paper, claim, kind="analytic", reproduced=reproduced, **kw)
        return self.add(artifact, quantity, paper, reproduced, kind="analytic", **kw)

    def setting(self, artifact: str, quantity: str, paper, value, unit: str = "", note: str = "",
                statements="", models: str = "", paper_source: str = "") -> str:
        """A design input, a size chosen to match or arithmetic on the paper's own numbers: shown as context
        next to the results it feeds, with no status (never counted). Refused for an empty value (a configuration
        not run is a coverage gap: ``state`` it not-reproducible) and for a value measured on this host (a
        measurement: ``add`` / ``state`` it with its cause)."""
        where = f"{artifact}/{quantity}"
        if _empty(value):
            raise ValueError(f"{where}: a setting needs its value; a configuration not run is a coverage gap "
                             "(state it not-reproducible with its cause)")
        if MEASURED.search(f"{quantity} {note}"):
            raise ValueError(f"{where}: a value measured on this host is a measurement, not a setting "
                             "(add() it against the paper's, or state() it deviates with cause hardware)")
        self._row(artifact, quantity, "" if paper is None else paper, value, unit, None, "", note, kind="setting",
                  models=models, statements=statements, paper_source=paper_source)
        return ""

    def state(self, artifact: str, quantity: str, paper, reproduced, status: str, note: str, cause: str = "",
              unit: str = "", statements="", kind: str = "reproduction", models: str = "", paper_source: str = "") -> str:
        """``deviates`` or ``not-reproducible``, stated with a ``cause`` (``CAUSES``) and a note naming it.
        ``not-reproducible`` means "could not be tested": it is refused for a row whose test ran (``reproduced`` a
        computed number or an unbounded ratio), unless the value is a stand-in measured on other hardware
        (cause ``hardware``): that row ``deviates``."""
        where = f"{artifact}/{quantity}"
        if status not in STATED:
            raise ValueError(f"{where}: only {STATED} can be stated; {status!r} must come from add() or claim()")
        if kind == "setting":
            raise ValueError(f"{where}: a setting has no status: use setting()")
        if status == "not-reproducible" and _ran(reproduced, cause, note):
            raise ValueError(f"{where}: the test ran (ours {reproduced!r}): a statement tested and not met deviates; "
                             "not-reproducible means it could not be tested")
        return self._row(artifact, quantity, paper, reproduced, unit, None, status, note, kind=kind, models=models,
                         cause=cause, statements=statements, paper_source=paper_source)

    def check(self, name: str, quantity: str, ours, reference, tolerance: float | None = None,
              claim: Claim | None = None, note: str = "", unit: str = "") -> bool:
        """Ours against ours (twin vs real, replay vs run, a bound, Monte Carlo vs closed form): a row of
        ``checks.csv``, passed when ``|ours - reference| <= tolerance`` or, with ``claim``, when it holds.
        ``ours`` defaults to the claim's evidence. Returns whether it passed."""
        where = f"check {name}/{quantity}"
        if not str(name).strip() or not str(quantity).strip():
            raise ValueError("check name and quantity must be non-empty")
        if (tolerance is None) == (claim is None):
            raise ValueError(f"{where}: give a tolerance or a claim (one of them)")
        if claim is not None:
            if not isinstance(claim, Claim):
                raise TypeError(f"{where}: claim must be a specedge.claims.Claim, got {type(claim).__name__}")
            passed, ours = bool(claim.holds), claim.evidence if ours is None else ours
            shown_tol = claim.name
        else:
            o, r = _clean(ours), _clean(reference)
            if not (_is_number(o) and _is_number(r)):
                raise ValueError(f"{where}: a tolerance compares two finite numbers, got {ours!r} and {reference!r}")
            if not (_is_number(tolerance) and tolerance >= 0):
                raise ValueError(f"{where}: tolerance must be >= 0, got {tolerance!r}")
            passed, shown_tol = abs(o - r) <= tolerance + EPS, _clean(tolerance)
        self.checks.append(dict(check=name, quantity=quantity, ours=_clean(ours), reference=_clean(reference),
                                unit=unit, tolerance=shown_tol, passed=passed, note=note))
        return passed

    def table(self, artifact: str, paper: pd.DataFrame, ours: pd.DataFrame, cells: Mapping[str, Cell],
              statements: Mapping | str | Callable) -> None:
        """One row per cell of a paper table against the same cell of ours: ``paper`` and ``ours`` share
        their index (the table's rows, compared in ``paper``'s order) and the columns named in ``cells``
        (compared in that order within a row). ``statements``: the statement id(s) of each row
        (``{row: ids}``), one format string with ``{row}`` / ``{col}``, or ``statements(row, col)``."""
        missing = [c for c in cells if c not in paper.columns or c not in ours.columns]
        if missing or not set(paper.index) <= set(ours.index):
            raise ValueError(f"{artifact}: paper and ours need the columns {missing or list(cells)} and ours every "
                             f"row of paper (missing rows {sorted(set(paper.index) - set(ours.index), key=str)})")
        rows = []
        for row in paper.index:
            for col, c in cells.items():
                ids = (statements(row, col) if callable(statements) else statements[row]
                       if isinstance(statements, Mapping) else statements.format(row=row, col=col))
                p = paper.at[row, col]
                r = dict(artifact=artifact, quantity=c.quantity.format(row=row, col=col), paper=p,
                         reproduced=ours.at[row, col], unit=c.unit, note=c.note(row) if callable(c.note) else c.note,
                         statements=ids, kind=c.kind, models=c.models, cause=c.cause(row) if callable(c.cause) else c.cause)
                if c.paper_source:
                    r["paper_source"] = c.paper_source
                if c.how == "add":
                    r.update(tolerance=c.tolerance(p) if callable(c.tolerance) else c.tolerance,
                             null=c.null(row) if callable(c.null) else c.null, feasible=c.feasible,
                             sibling=c.sibling(row, col) if callable(c.sibling) else c.sibling)
                else:
                    r["status"] = c.how
                rows.append(r)
        self.extend(rows)

    def extend(self, rows, paper: dict | None = None) -> list[str]:
        """Rows built from a paper table and a reproduced table (an experiment driver sets them side by
        side): each row is the keyword arguments of ``check`` (it has ``check``: the check's name),
        ``setting`` (kind ``setting``; ``reproduced`` is its value), ``claim`` (it has ``claim``), ``state``
        (it has ``status``) or ``add``; a row without ``paper`` takes ``paper[its first statement id]``
        (``coverage.paper_values``). Returns the statuses, in order (a setting's is "", a check's
        "passed"/"failed")."""
        out = []
        for r in (rows.to_dict("records") if isinstance(rows, pd.DataFrame) else rows):
            r = dict(r)
            if "check" in r:
                out.append("passed" if self.check(r.pop("check"), **r) else "failed")
                continue
            if "paper" not in r:
                ids = str(r.get("statements", "")).split() if isinstance(r.get("statements", ""), str) \
                    else list(r["statements"])
                if not ids or paper is None or ids[0] not in paper:
                    raise ValueError(f"{r.get('artifact')}/{r.get('quantity')}: no 'paper' value and no paper value "
                                     f"for its statement {ids[:1]} (pass paper=coverage.paper_values(key))")
                r["paper"] = paper[ids[0]]
            if r.get("kind") == "setting":
                r.pop("kind")
                if "reproduced" in r:
                    r["value"] = r.pop("reproduced")
                out.append(self.setting(**r))
                continue
            fn = self.claim if "claim" in r else self.state if "status" in r else self.add
            out.append(fn(**r))
        return out

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)

    def checks_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.checks, columns=CHECK_COLUMNS)

    def write(self, outdir: Path) -> Path:
        """``comparison.csv`` and, when there are checks, ``checks.csv`` (a stale one is removed)."""
        outdir = Path(outdir)
        checks = outdir / "checks.csv"
        if self.checks:
            write_csv(self.checks_frame(), checks)
        elif checks.exists():
            checks.unlink()
        return write_csv(self.frame(), outdir / "comparison.csv")


def print_claims(frame: pd.DataFrame, on: str = "the zoo") -> None:
    """Print a comparison frame's ``claim:`` rows by outcome: which hold ``on`` (match, trend), which do not
    (deviates), which are not reproducible here."""
    cl = frame[frame.quantity.str.startswith("claim: ")]
    for title, keep in ((f"holds on {on}", ("match", "trend")), (f"does not hold on {on}", ("deviates",)),
                        ("not reproducible here", ("not-reproducible",))):
        sel = cl[cl.status.isin(keep)]
        print(f"{title} ({len(sel)}):")
        for _, c in sel.iterrows():
            print(f"  [{c.status}] {c.artifact}: {c.quantity[len('claim: '):]} -- paper {c.paper}, {on.removeprefix('the ')} {c.reproduced}")


def _analytic_status(df: pd.DataFrame) -> dict[str, str]:
    """Each analytic row's status by its quantity and by "artifact / quantity" (the names a ``sibling`` uses)."""
    ana = df[df["kind"] == "analytic"]
    return {**dict(zip(ana["quantity"], ana["status"])),
            **{f"{a} / {q}": st for a, q, st in zip(ana["artifact"], ana["quantity"], ana["status"])}}


def _row_ranges(r) -> tuple[tuple | None, tuple | None, str]:
    try:
        return parse_range(r["feasible"]), parse_range(r["window"]), ""
    except ValueError as e:
        return None, None, str(e)


def _comparison_problems(df: pd.DataFrame) -> list[str]:
    out = []
    siblings = _analytic_status(df)
    for i, r in df.iterrows():
        def bad(why, r=r, i=i):
            out.append(f"row {i + 2} ({r['artifact']} / {r['quantity']}): {why}")
        kind, status, cause = r["kind"], r["status"], r["cause"]
        if kind not in KINDS:
            bad(f"kind {kind!r} is not one of {KINDS}")
            continue
        if r["models"] not in MODELS:
            bad(f"models {r['models']!r} is not one of {MODELS}")
        if r["paper_source"] not in PAPER_SOURCES:
            bad(f"paper_source {r['paper_source']!r} is not one of {PAPER_SOURCES}")
        feasible, window, why = _row_ranges(r)
        if why:
            bad(why)
        if kind == "setting":
            if status or cause:
                bad("a setting has no status and no cause (it is context, never counted)")
            if _empty(r["reproduced"]):
                bad("a setting with no value: a configuration not run is a coverage gap (not-reproducible)")
            if MEASURED.search(f"{r['quantity']} {r['note']}"):
                bad("a setting measured on this host: a measurement has a status (deviates with cause hardware)")
            continue
        if status not in STATUSES:
            bad(f"status {status!r} is not one of {STATUSES}")
            continue
        if status in STATED:
            if cause not in CAUSES:
                bad(f"{status} needs a cause, one of {CAUSES} (got {cause!r})")
            if len(r["note"].strip()) < MIN_CAUSE:
                bad(f"{status} needs a note naming the mechanism")
            if status == "not-reproducible" and _ran(r["reproduced"], cause, r["note"]):
                bad(f"not-reproducible although its test ran (ours {r['reproduced']!r}): it deviates")
            continue
        if cause:
            bad(f"a {status} has no cause (got {cause!r})")
        if kind == "reproduction":
            share = window_share(window, feasible)
            if share is not None and share > MAX_WINDOW_SHARE + 1e-9:
                bad(f"its window {r['window']} covers {share:.0%} of the feasible {r['feasible']} "
                    f"(more than {MAX_WINDOW_SHARE:.0%}): it cannot be {status}")
            if feasible is None and not why and r["unit"] in FEASIBLE:
                bad(f"unit {r['unit']!r} has the feasible range {FEASIBLE[r['unit']]}, not declared")
            if r["sibling"].strip():
                sib = siblings.get(r["sibling"])
                if sib is None:
                    bad(f"its sibling {r['sibling']!r} is no analytic row of this file")
                elif sib not in ("match", "trend"):
                    bad(f"its analytic sibling {r['sibling']!r} is {sib}: it cannot be {status}")
            if r["predicate"] in RANKING and _ties_by_construction(r["null_evidence"]):
                bad(f"the null of a ranking claim ties by construction ({r['null_evidence']}): it cannot pass")
        paper, repro, tol, null = (_float(r[c]) for c in ("paper", "reproduced", "tolerance", "null"))
        if r["tolerance"].strip():                      # a number row (add)
            if paper is None or repro is None or tol is None:
                bad("a number row needs numeric paper, reproduced and tolerance")
                continue
            if abs(paper - repro) > tol + 1e-9:
                bad(f"{status} although {repro} is outside {paper} ± {tol}")
            if kind == "reproduction":
                if null is None:
                    bad(f"a {status} reproduction without a computed null")
                elif abs(paper - null) <= tol + 1e-9:
                    bad(f"cannot fail: {paper} ± {tol} also accepts the null {null}")
                elif paper == 0 and not r["statements"].strip():
                    bad("paper 0 with no statement: a placeholder for ours-vs-ours (make it a check)")
        elif r["predicate"].strip():                    # a claim row
            if kind == "reproduction":
                if not r["null_evidence"].strip():
                    bad(f"a {status} reproduction without the null's evidence (null_claim)")
                elif not r["null_evidence"].startswith("fails"):
                    bad(f"cannot fail: its null also holds ({r['null_evidence']})")
        else:
            bad(f"a {status} with neither a tolerance nor a predicate: nothing decided it")
    return out


def _check_problems(df: pd.DataFrame) -> list[str]:
    out = []
    for i, r in df.iterrows():
        where = f"row {i + 2} ({r['check']} / {r['quantity']})"
        if r["passed"] not in ("True", "False"):
            out.append(f"{where}: passed must be True or False, got {r['passed']!r}")
            continue
        o, ref, tol = (_float(r[c]) for c in ("ours", "reference", "tolerance"))
        if o is not None and ref is not None and tol is not None and (abs(o - ref) <= tol + 1e-9) != (r["passed"] == "True"):
            out.append(f"{where}: passed={r['passed']} but |{o} - {ref}| vs tolerance {tol} says otherwise")
        if not str(r["tolerance"]).strip():
            out.append(f"{where}: a check needs a tolerance or a predicate that decided it")
    return out


def problems(df: pd.DataFrame) -> list[str]:
    """Every rule a written ``comparison.csv`` (columns ``COLUMNS``) or ``checks.csv`` (``CHECK_COLUMNS``)
    breaks, one line each; values as read with ``dtype=str, keep_default_na=False``. Rules: the exact
    columns (no ``null_why``); known kind, models, status, cause; a setting with no status; a
    deviates/not-reproducible with a cause and a note; a match/trend reproduction whose computed null
    fails its predicate (a number's null outside the tolerance, a claim's null evidence failing); a
    match within its tolerance; no ``paper`` 0 placeholder; a check whose pass/fail its tolerance decides."""
    df = df.fillna("").astype(str)
    cols = list(df.columns)
    if "check" in cols:
        if cols != CHECK_COLUMNS:
            return [f"columns {cols} are not {CHECK_COLUMNS}"]
        return _check_problems(df)
    if cols != COLUMNS:
        extra, missing = sorted(set(cols) - set(COLUMNS)), sorted(set(COLUMNS) - set(cols))
        return [f"columns differ from COLUMNS: unknown {extra}, missing {missing}" + ("" if extra or missing
                                                                                      else " (order)")]
    return _comparison_problems(df)


def validate(df: pd.DataFrame, name: str = "comparison") -> pd.DataFrame:
    """``df`` unchanged when :func:`problems` finds nothing; else a ValueError listing every problem."""
    found = problems(df)
    if found:
        raise ValueError(f"{name}: {len(found)} invalid row(s):\n  " + "\n  ".join(found))
    return df


def _read(csv: Path) -> pd.DataFrame:
    return pd.read_csv(csv, dtype=str, keep_default_na=False)


def _load(name: str, columns: list[str], figures_dir: Path, check: bool) -> pd.DataFrame:
    """Every committed ``figures/<key>/<name>`` (top level: the default profile), each validated unless
    ``check`` is False, with a column ``key`` naming its folder."""
    frames = [(validate(df, str(csv)) if check else df).assign(key=csv.parent.name)
              for csv in sorted(Path(figures_dir).glob(f"*/{name}")) for df in [_read(csv)]]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns + ["key"])


def load_all(figures_dir: Path = paths.FIGURES, check: bool = True) -> pd.DataFrame:
    """All committed comparison files, validated (``validate``) unless ``check`` is False."""
    return _load("comparison.csv", COLUMNS, figures_dir, check)


def load_checks(figures_dir: Path = paths.FIGURES, check: bool = True) -> pd.DataFrame:
    """All committed ``checks.csv``, validated, with a column ``key``."""
    return _load("checks.csv", CHECK_COLUMNS, figures_dir, check)


def _causes(g: pd.DataFrame) -> str:
    counts = g.loc[g["status"] == "deviates", "cause"].value_counts()
    return ", ".join(f"{c} {counts[c]}" for c in CAUSES if c in counts) or "–"


def results_table(figures_dir: Path = paths.FIGURES) -> str:
    """Markdown, leading with what could have failed: per paper the reproductions (on the zoo / the real
    pair / the paper's own inputs) by status, the analytic rows, the deviations by cause; then, on their
    own lines, the settings (context) and the checks (ours against ours) with how many passed."""
    df, checks = load_all(figures_dir), load_checks(figures_dir)
    if df.empty:
        return "_No comparison files yet: run `make figures`._"
    order = {k: i for i, k in enumerate(papers.MANIFEST.folders)}     # the manifest's order
    keys = sorted(set(df["key"]) | set(checks["key"]), key=lambda k: (order.get(k, len(order)), k))
    lines = ["Reproductions: a number or claim the paper states against ours, green only when its null "
             "(no effect, the baseline, a trivial method) fails the same test. Analytic: the paper's closed "
             "form on its own inputs. Rows whose paper value was recovered from the paper's formulas or read off "
             "a figure are counted apart (never as agreement with the paper).", "",
             "| paper | reproductions (zoo / real pair / paper's inputs / no model) | match | trend | deviates "
             "| deviates by cause | not reproducible | analytic (agree / all) | on recovered or read values (agree / all) |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|"]
    tot = {s: 0 for s in ("n", "ana", "ana_ok", "apart", "apart_ok", *STATUSES)}
    counted = df[df["kind"] != "setting"]
    apart_all = counted[counted["paper_source"] != "stated"]
    df = df[(df["kind"] == "setting") | (df["paper_source"] == "stated")]
    for key in keys:
        sub = df[df["key"] == key]
        apart = apart_all[apart_all["key"] == key]
        apart_ok = int(apart["status"].isin(("match", "trend")).sum())
        tot["apart"] += len(apart)
        tot["apart_ok"] += apart_ok
        rep, ana = sub[sub["kind"] == "reproduction"], sub[sub["kind"] == "analytic"]
        counts, by = rep["status"].value_counts(), rep["models"].value_counts()
        ana_ok = int(ana["status"].isin(("match", "trend")).sum())
        where = " / ".join(str(by.get(m, 0)) for m in MODELS)
        lines.append(f"| [{key}](figures/{key}/comparison.csv) | {len(rep)} ({where}) | "
                     + " | ".join(str(counts.get(s, 0)) for s in STATUSES[:3])
                     + f" | {_causes(rep)} | {counts.get(STATUSES[3], 0)} | {ana_ok} / {len(ana)} | {apart_ok} / {len(apart)} |")
        tot["n"] += len(rep)
        tot["ana"] += len(ana)
        tot["ana_ok"] += ana_ok
        for s in STATUSES:
            tot[s] += int(counts.get(s, 0))
    allrep = df[df["kind"] == "reproduction"]
    lines.append(f"| **all** | **{tot['n']}** | " + " | ".join(f"**{tot[s]}**" for s in STATUSES[:3])
                 + f" | {_causes(allrep)} | **{tot[STATUSES[3]]}** | **{tot['ana_ok']} / {tot['ana']}** "
                 f"| **{tot['apart_ok']} / {tot['apart']}** |")
    settings = df[df["kind"] == "setting"]["key"].value_counts()
    lines += ["", "Settings (inputs, sizes chosen to match, arithmetic on the paper's own numbers; context, "
              "no status): " + (", ".join(f"{k} {settings[k]}" for k in keys if k in settings) or "none") + ".",
              "Checks (ours against ours: twin vs real, replay vs run, bounds; `checks.csv`): "
              + (", ".join(f"{k} {int((g['passed'] == 'True').sum())} of {len(g)} pass"
                           for k, g in ((k, checks[checks['key'] == k]) for k in keys) if len(g)) or "none") + "."]
    return "\n".join(lines)


def _margin_noise(r) -> str:
    """How far a green row's null lies beyond its acceptance: for a number, |paper - null| in tolerances; for a
    claim, the margin or interval its evidence names."""
    paper, null, tol = (_float(r[c]) for c in ("paper", "null", "tolerance"))
    if paper is not None and null is not None and tol is not None:
        return f"null at {abs(paper - null) / tol:.1f} tolerances" if tol > 0 else "null outside a zero tolerance"
    found = re.findall(r"margin [^;)]+|\[[^\]]+\] \(\d+%[^)]*\)", str(r["evidence"]))
    return "; ".join(dict.fromkeys(found)) or "no margin (a strict predicate)"


def audit(figures_dir: Path = paths.FIGURES) -> pd.DataFrame:
    """Per green reproduction row (match / trend) of every committed comparison file: its null, the margin or
    noise that separates it from the null, its acceptance window's share of the feasible range, and its
    analytic sibling's status: what a reader checks the counts by."""
    rows = []
    for key, df in load_all(figures_dir, check=False).groupby("key", sort=False):
        siblings = _analytic_status(df)
        green = df[(df["kind"] == "reproduction") & df["status"].isin(("match", "trend"))]
        for _, r in green.iterrows():
            feasible, window, _ = _row_ranges(r)
            share = window_share(window, feasible)
            rows.append(dict(key=key, artifact=r["artifact"], quantity=r["quantity"], status=r["status"],
                             paper_source=r["paper_source"],
                             null=r["null"] if r["tolerance"].strip() else r["null_evidence"],
                             margin_noise=_margin_noise(r),
                             window_share="undeclared" if share is None else f"{share:.0%} of {r['feasible']}",
                             sibling=f"{r['sibling']}: {siblings.get(r['sibling'], 'missing')}" if r["sibling"] else "none"))
    return pd.DataFrame(rows, columns=["key", "artifact", "quantity", "status", "paper_source", "null",
                                       "margin_noise", "window_share", "sibling"])


def render_readme(text: str, table: str, start: str = START, end: str = END) -> str:
    """``text`` with the block between the markers ``start`` ... ``end`` replaced by ``table``."""
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"README has no {start} ... {end} block")
    return pattern.sub(lambda _: f"{start}\n{table}\n{end}", text)


def rewrite_block(readme: Path, block: str, start: str, end: str, check: bool = False) -> bool:
    """Rewrite (or with ``check`` only compare) the README's block between ``start`` and ``end`` with ``block``;
    True when it is/was stale (the generated blocks of ``tools/realpair_readme.py`` and ``tools/arena_readme.py``)."""
    text = Path(readme).read_text()
    new = render_readme(text, block, start, end)
    if new != text and not check:
        Path(readme).write_text(new)
    return new != text


def update_readme(readme: Path = paths.ROOT / "README.md", figures_dir: Path = paths.FIGURES) -> bool:
    """Rewrite the README's results block and its papers table (``data/papers.yaml``); True when one changed."""
    results = rewrite_block(readme, results_table(figures_dir), START, END)
    return rewrite_block(readme, papers.MANIFEST.readme_table(), papers.START, papers.END) or results


def readme_is_fresh(readme: Path = paths.ROOT / "README.md", figures_dir: Path = paths.FIGURES) -> bool:
    text = Path(readme).read_text()
    new = render_readme(render_readme(text, results_table(figures_dir)), papers.MANIFEST.readme_table(),
                        papers.START, papers.END)
    return new == text


def validate_all(figures_dir: Path = paths.FIGURES) -> list[str]:
    """:func:`problems` of every comparison.csv and checks.csv under ``figures_dir`` (profile folders too)."""
    out = []
    for csv in sorted([*Path(figures_dir).rglob("comparison.csv"), *Path(figures_dir).rglob("checks.csv")]):
        out += [f"{csv.relative_to(figures_dir)}: {p}" for p in problems(_read(csv))]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update-readme", action="store_true", help="rewrite README.md's results table and papers table")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md's table is stale")
    ap.add_argument("--validate", action="store_true",
                    help="list every rule a committed comparison.csv / checks.csv breaks; exit 1 when one does")
    ap.add_argument("--audit", action="store_true",
                    help="per green reproduction row: its null, margin / noise, window share and analytic sibling; "
                         "exit 1 when a committed file breaks a rule")
    ap.add_argument("--figures", type=Path, default=paths.FIGURES, help="the figures folder (default: the committed one)")
    args = ap.parse_args(argv)
    if args.audit:
        found = validate_all(args.figures)
        table = audit(args.figures)
        with pd.option_context("display.max_rows", None, "display.max_colwidth", 80, "display.width", 250):
            for key, g in table.groupby("key", sort=False):
                print(f"== {key}: {len(g)} green reproduction rows")
                print(g.drop(columns="key").to_string(index=False))
        print(f"{len(table)} green rows; " + (f"{len(found)} invalid rows:\n" + "\n".join(found) if found
                                              else "every committed file keeps every rule"))
        return 1 if found else 0
    if args.validate:
        found = validate_all(args.figures)
        print("\n".join(found) + ("\n" if found else "") + f"{len(found)} invalid rows")
        return 1 if found else 0
    if args.check:
        fresh = readme_is_fresh()
        print("README results table is " + ("current" if fresh else "STALE: run `make figures`"))
        return 0 if fresh else 1
    if args.update_readme:
        changed = update_readme()
        print("README results table " + ("updated" if changed else "already current"))
        return 0
    print(results_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
