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

from . import paths
from .claims import Claim
from .plotting import write_csv

COLUMNS = ["artifact", "quantity", "kind", "models", "paper", "reproduced", "unit", "tolerance", "status",
           "cause", "note", "predicate", "evidence", "null", "null_evidence", "statements"]
CHECK_COLUMNS = ["check", "quantity", "ours", "reference", "unit", "tolerance", "passed", "note"]
KINDS = ("reproduction", "analytic", "setting")
MODELS = ("zoo", "real pair", "paper", "")
STATUSES = ("match", "trend", "deviates", "not-reproducible")
STATED = ("deviates", "not-reproducible")  # the only statuses a caller may state; both need a cause
CAUSES = ("models", "hardware", "paper-ambiguity", "our-reading", "unexplained")
PAPERS = {  # key -> title, in the README's order
    "zheng2025": "TK-SLT: top-K sparse logits transmission",
    "zhu2025": "Pipelined SD over heterogeneous edge networks",
    "tran2025": "GOODSPEED: fair goodput scheduling",
    "li2026": "WISP: SLO-aware distributed SD",
    "li2026_serving": "WISP: SLO-aware distributed SD (serving side)",
    "venkatesha2025": "Early-exit pre-drafting (FSD)",
    "model_zoo": "Embedded model zoo (acceptance)",
}
START, END = "<!-- results:start -->", "<!-- results:end -->"
MIN_CAUSE = 20  # characters: a stated status needs a note naming a mechanism, not "n/a"
EPS = 1e-12


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
    out = {k: v for k, v in row.items() if k not in ("claim", "null_claim", "strength", "cause", "tolerance", "null", "bound")}
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

    def _row(self, artifact, quantity, paper, reproduced, unit, tolerance, status, note, *, kind, models,
             cause="", predicate="", evidence="", null=None, null_evidence="", statements=""):
        if not str(artifact).strip() or not str(quantity).strip():
            raise ValueError("artifact and quantity must be non-empty")
        where = f"{artifact}/{quantity}"
        _check_fields(where, kind, models, cause)
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
                              statements=statements))
        return status

    def add(self, artifact: str, quantity: str, paper, reproduced, unit: str = "",
            tolerance: float | None = None, note: str = "", null: float | None = None, statements="",
            bound: str = "", kind: str = "reproduction", models: str = "", cause: str = "", **kwargs) -> str:
        """A number within ``tolerance`` of the paper's: ``match``; otherwise ``deviates`` (with a ``cause``
        and a ``note`` naming the mechanism).

        ``null`` (required for a reproduction): the value the null gives -- no effect (speedup 1.0, gain
        0), the baseline's own value, or for a level the value a trivial method gives. A ``match`` whose
        tolerance also accepts the null cannot fail and is refused.

        ``bound``: ``">="`` or ``"<="`` when ``reproduced`` is a censored value (a search that stopped at
        its cap): never a ``match``; ``deviates`` when even the bound lies beyond the tolerance on its
        side, else ``not-reproducible`` (the run cannot decide). Shown as "≥512".
        ``statements``: the id(s) of the paper's statements the row holds (``data/coverage/<key>.yaml``)."""
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
        fields = dict(kind=kind, models=models, cause=cause, null=null, statements=statements)
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
        return self._row(artifact, quantity, paper, reproduced, unit, tolerance, status, note, **fields)

    def claim(self, artifact: str, quantity: str, paper, claim: Claim, null_claim: Claim | None = None,
              unit: str = "", strength: str = "trend", note: str = "", reproduced=None, statements="",
              kind: str = "reproduction", models: str = "", cause: str = "", **kwargs) -> str:
        """A qualitative claim decided by a predicate: ``strength`` (``match`` or ``trend``) when it holds
        and, for a reproduction, ``null_claim`` -- the same predicate on the null's values -- does not;
        ``deviates`` (with a ``cause``) when it does not hold. ``reproduced`` defaults to the evidence."""
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
        status = strength if claim.holds else "deviates"
        if not claim.holds:
            failed = f"{claim.name} fails: {claim.evidence}"
            note = f"{failed}; {note}" if note.strip() else failed
        shown = claim.evidence if reproduced is None else reproduced
        null_evidence = "" if null_claim is None else \
            f"{'holds' if null_claim.holds else 'fails'}: {null_claim.evidence}"
        return self._row(artifact, quantity, paper, shown, unit, None, status, note, kind=kind, models=models,
                         cause=cause, predicate=claim.name, evidence=claim.evidence, null_evidence=null_evidence,
                         statements=statements)

    def analytic(self, artifact: str, quantity: str, paper, reproduced=None, claim: Claim | None = None,
                 **kw) -> str:
        """The paper's closed form on the paper's own inputs: ``add`` (a number, ``tolerance=``) or, with
        ``claim``, ``claim``; no null (it can fail only through a formula error). ``models`` is ``paper``."""
        kw.setdefault("models", "paper")
        if claim is not None:
            return self.claim(artifact, quantity, paper, claim, kind="analytic", reproduced=reproduced, **kw)
        return self.add(artifact, quantity, paper, reproduced, kind="analytic", **kw)

    def setting(self, artifact: str, quantity: str, paper, value, unit: str = "", note: str = "",
                statements="", models: str = "") -> str:
        """A design input, a size chosen to match or arithmetic on the paper's own numbers: shown as context
        next to the results it feeds, with no status (never counted)."""
        self._row(artifact, quantity, "" if paper is None else paper, value, unit, None, "", note, kind="setting",
                  models=models, statements=statements)
        return ""

    def state(self, artifact: str, quantity: str, paper, reproduced, status: str, note: str, cause: str = "",
              unit: str = "", statements="", kind: str = "reproduction", models: str = "") -> str:
        """``deviates`` or ``not-reproducible``, stated with a ``cause`` (``CAUSES``) and a note naming it."""
        if status not in STATED:
            raise ValueError(f"{artifact}/{quantity}: only {STATED} can be stated; "
                             f"{status!r} must come from add() or claim()")
        if kind == "setting":
            raise ValueError(f"{artifact}/{quantity}: a setting has no status: use setting()")
        return self._row(artifact, quantity, paper, reproduced, unit, None, status, note, kind=kind, models=models,
                         cause=cause, statements=statements)

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
                if c.how == "add":
                    r.update(tolerance=c.tolerance(p) if callable(c.tolerance) else c.tolerance,
                             null=c.null(row) if callable(c.null) else c.null)
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


def _comparison_problems(df: pd.DataFrame) -> list[str]:
    out = []
    for i, r in df.iterrows():
        def bad(why, r=r, i=i):
            out.append(f"row {i + 2} ({r['artifact']} / {r['quantity']}): {why}")
        kind, status, cause = r["kind"], r["status"], r["cause"]
        if kind not in KINDS:
            bad(f"kind {kind!r} is not one of {KINDS}")
            continue
        if r["models"] not in MODELS:
            bad(f"models {r['models']!r} is not one of {MODELS}")
        if kind == "setting":
            if status or cause:
                bad("a setting has no status and no cause (it is context, never counted)")
            continue
        if status not in STATUSES:
            bad(f"status {status!r} is not one of {STATUSES}")
            continue
        if status in STATED:
            if cause not in CAUSES:
                bad(f"{status} needs a cause, one of {CAUSES} (got {cause!r})")
            if len(r["note"].strip()) < MIN_CAUSE:
                bad(f"{status} needs a note naming the mechanism")
            continue
        if cause:
            bad(f"a {status} has no cause (got {cause!r})")
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
    order = {k: i for i, k in enumerate(PAPERS)}
    keys = sorted(set(df["key"]) | set(checks["key"]), key=lambda k: (order.get(k, len(order)), k))
    lines = ["Reproductions: a number or claim the paper states against ours, green only when its null "
             "(no effect, the baseline, a trivial method) fails the same test. Analytic: the paper's closed "
             "form on its own inputs.", "",
             "| paper | reproductions (zoo / real pair / paper's inputs / no model) | match | trend | deviates "
             "| deviates by cause | not reproducible | analytic (agree / all) |",
             "|---|---|---:|---:|---:|---|---:|---:|"]
    tot = {s: 0 for s in ("n", "ana", "ana_ok", *STATUSES)}
    for key in keys:
        sub = df[df["key"] == key]
        rep, ana = sub[sub["kind"] == "reproduction"], sub[sub["kind"] == "analytic"]
        counts, by = rep["status"].value_counts(), rep["models"].value_counts()
        ana_ok = int(ana["status"].isin(("match", "trend")).sum())
        where = " / ".join(str(by.get(m, 0)) for m in MODELS)
        lines.append(f"| [{key}](figures/{key}/comparison.csv) | {len(rep)} ({where}) | "
                     + " | ".join(str(counts.get(s, 0)) for s in STATUSES[:3])
                     + f" | {_causes(rep)} | {counts.get(STATUSES[3], 0)} | {ana_ok} / {len(ana)} |")
        tot["n"] += len(rep)
        tot["ana"] += len(ana)
        tot["ana_ok"] += ana_ok
        for s in STATUSES:
            tot[s] += int(counts.get(s, 0))
    allrep = df[df["kind"] == "reproduction"]
    lines.append(f"| **all** | **{tot['n']}** | " + " | ".join(f"**{tot[s]}**" for s in STATUSES[:3])
                 + f" | {_causes(allrep)} | **{tot[STATUSES[3]]}** | **{tot['ana_ok']} / {tot['ana']}** |")
    settings = df[df["kind"] == "setting"]["key"].value_counts()
    lines += ["", "Settings (inputs, sizes chosen to match, arithmetic on the paper's own numbers; context, "
              "no status): " + (", ".join(f"{k} {settings[k]}" for k in keys if k in settings) or "none") + ".",
              "Checks (ours against ours: twin vs real, replay vs run, bounds; `checks.csv`): "
              + (", ".join(f"{k} {int((g['passed'] == 'True').sum())} of {len(g)} pass"
                           for k, g in ((k, checks[checks['key'] == k]) for k in keys) if len(g)) or "none") + "."]
    return "\n".join(lines)


def render_readme(text: str, table: str, start: str = START, end: str = END) -> str:
    """``text`` with the block between the markers ``start`` ... ``end`` replaced by ``table``."""
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"README has no {start} ... {end} block")
    return pattern.sub(lambda _: f"{start}\n{table}\n{end}", text)


def rewrite_block(readme: Path, block: str, start: str, end: str, check: bool = False) -> bool:
    """Rewrite (or with ``check`` only compare) the README's block between ``start`` and ``end`` with ``block``;
    True when it is/was stale (the generated blocks of ``realpair_readme`` and ``arena_results``)."""
    text = Path(readme).read_text()
    new = render_readme(text, block, start, end)
    if new != text and not check:
        Path(readme).write_text(new)
    return new != text


def update_readme(readme: Path = paths.ROOT / "README.md", figures_dir: Path = paths.FIGURES) -> bool:
    """Rewrite the README's results block; return True when it changed."""
    return rewrite_block(readme, results_table(figures_dir), START, END)


def readme_is_fresh(readme: Path = paths.ROOT / "README.md", figures_dir: Path = paths.FIGURES) -> bool:
    text = Path(readme).read_text()
    return render_readme(text, results_table(figures_dir)) == text


def validate_all(figures_dir: Path = paths.FIGURES) -> list[str]:
    """:func:`problems` of every comparison.csv and checks.csv under ``figures_dir`` (profile folders too)."""
    out = []
    for csv in sorted([*Path(figures_dir).rglob("comparison.csv"), *Path(figures_dir).rglob("checks.csv")]):
        out += [f"{csv.relative_to(figures_dir)}: {p}" for p in problems(_read(csv))]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update-readme", action="store_true", help="rewrite README.md's results table")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md's table is stale")
    ap.add_argument("--validate", action="store_true",
                    help="list every rule a committed comparison.csv / checks.csv breaks; exit 1 when one does")
    args = ap.parse_args(argv)
    if args.validate:
        found = validate_all()
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
