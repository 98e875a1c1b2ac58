"""The comparison contract: one row per number a paper states, next to ours.

Each notebook writes ``figures/<key>/comparison.csv`` with the columns of ``COLUMNS``; the README's
results table is generated from all of them (``python -m specedge.compare --update-readme``), and a
test fails when the README is stale. ``status`` is ``match``, ``trend``, ``deviates`` or
``not-reproducible``; anything but ``match`` must say why in ``note``.

The null test: a ``match`` must be able to fail. Each number row names ``null``, the reproduced
value of "no effect" (speedup 1.0, gain 0, the baseline's own value), and ``add`` refuses a ``match``
whose tolerance also accepts it, unless ``null_why`` says why that is correct (e.g. "a level, not an
effect"). Claims that one thing is above another need a margin (``claims.above(..., margin=)``).
``python -m specedge.compare --null-check`` runs the test over every committed ``comparison.csv``.
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

COLUMNS = ["artifact", "quantity", "paper", "reproduced", "unit", "tolerance", "status", "note",
           "predicate", "evidence", "null", "null_why", "statements"]
OPTIONAL = ("predicate", "evidence", "null", "null_why", "statements")  # absent from files written before they existed
COMPARATIVE = ("above", "below", "argmax_is", "argmin_is")  # "A above B": a match needs a margin
# comparison files whose rows predate the null test, with the issue that brings them to it
NULL_PENDING: dict[str, str] = {}
STATUSES = ("match", "trend", "deviates", "not-reproducible")
STATED = ("deviates", "not-reproducible")  # the only statuses a caller may state
PAPERS = {  # key -> title, in the README's order
    "zheng2025": "TK-SLT: top-K sparse logits transmission",
    "zhu2025": "Pipelined SD over heterogeneous edge networks",
    "tran2025": "GOODSPEED: fair goodput scheduling",
    "li2026": "WISP: SLO-aware distributed SD",
    "venkatesha2025": "Early-exit pre-drafting (FSD)",
    "model_zoo": "Embedded model zoo (acceptance)",
}
START, END = "<!-- results:start -->", "<!-- results:end -->"
MIN_CAUSE = 20  # characters: a stated status needs a note naming a cause, not "n/a"


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


def null_tolerance(paper: float, null: float, cap: float) -> float:
    """A tolerance that rejects the null: half the paper's effect ``|paper - null|``, at most ``cap``
    (e.g. a speedup of 1.04x gets 0.02, so 1.0x, no effect, cannot match it)."""
    if not (_is_number(paper) and _is_number(null) and _is_number(cap) and cap >= 0):
        raise ValueError(f"null_tolerance needs finite paper, null and cap >= 0, got {paper!r}, {null!r}, {cap!r}")
    return float(f"{min(cap, abs(paper - null) / 2):.6g}")


@dataclass(frozen=True)
class Cell:
    """How one column of a paper table meets ours in :meth:`Comparison.table`: ``how`` is ``"add"`` (a
    ``tolerance`` decides, as in ``add``) or a stated ``"deviates"`` / ``"not-reproducible"``. ``tolerance``,
    ``null`` and ``note`` may be callables: ``tolerance(paper)``, ``null(row)``, ``note(row)``; ``quantity``
    is formatted with ``row`` and ``col``."""
    how: str = "add"
    unit: str = ""
    tolerance: float | Callable | None = None
    null: float | Callable | None = None
    null_why: str = ""
    note: str | Callable = ""
    quantity: str = "{row} {col}"


@dataclass
class Comparison:
    """Rows of one notebook's ``comparison.csv``; every status is decided here, by code.

    - ``add``: a number against the paper's number within a stated ``tolerance`` -> ``match`` or
      ``deviates`` (with the note saying why it deviates, when it does).
    - ``claim``: a qualitative statement decided by a predicate of ``specedge.claims`` -> ``match``
      or ``trend`` (the caller says which the claim is worth) when it holds, ``deviates`` when not;
      the predicate's name and evidence go into the row.
    - ``state``: the caller states ``deviates`` or ``not-reproducible`` with a note naming a cause.
    Nobody types ``match`` or ``trend``.
    """
    key: str
    rows: list[dict] = field(default_factory=list)

    def _row(self, artifact, quantity, paper, reproduced, unit, tolerance, status, note,
             predicate="", evidence="", null=None, null_why="", statements=""):
        if not str(artifact).strip() or not str(quantity).strip():
            raise ValueError("artifact and quantity must be non-empty")
        if not isinstance(statements, str):
            statements = " ".join(statements)
        self.rows.append(dict(artifact=artifact, quantity=quantity, paper=_clean(paper),
                              reproduced=_clean(reproduced), unit=unit,
                              tolerance="" if tolerance is None else _clean(tolerance),
                              status=status, note=note, predicate=predicate, evidence=evidence,
                              null="" if null is None else _clean(null), null_why=null_why,
                              statements=statements))
        return status

    def add(self, artifact: str, quantity: str, paper, reproduced, unit: str = "",
            tolerance: float | None = None, note: str = "", null: float | None = None,
            null_why: str = "", statements="", bound: str = "", **kwargs) -> str:
        """A number within ``tolerance`` of the paper's: ``match``; otherwise ``deviates`` (and
        ``note`` must then say why).

        ``bound``: ``">="`` or ``"<="`` when ``reproduced`` is a censored value (e.g. a capacity search
        that stopped at its cap): never a ``match``; ``deviates`` when even the bound lies beyond the
        tolerance on its side, else ``not-reproducible`` (the run cannot decide). Shown as "≥512".

        ``null`` is the value "no effect" would reproduce (speedup 1.0, gain 0, the baseline's own
        value). A ``match`` whose tolerance also accepts the null is refused unless ``null_why`` says
        why that is correct; give ``null_why`` alone for a level that has no null. ``statements``:
        the id(s) of the paper's statements the row holds (``data/coverage/<key>.yaml``)."""
        if "status" in kwargs:
            raise TypeError(f"{artifact}/{quantity}: a status is decided by code, not passed to add(); "
                            "use claim() for a predicate or state() for deviates/not-reproducible")
        if kwargs:
            raise TypeError(f"add() got unexpected arguments {sorted(kwargs)}")
        paper, reproduced = _clean(paper), _clean(reproduced)
        if not (_is_number(paper) and _is_number(reproduced)):
            raise ValueError(f"{artifact}/{quantity}: add() compares two finite numbers "
                             f"(got {paper!r} and {reproduced!r}); use claim() or state()")
        if not (_is_number(tolerance) and tolerance >= 0):
            raise ValueError(f"{artifact}/{quantity}: add() needs a tolerance >= 0, got {tolerance!r}")
        if null is not None and not _is_number(_clean(null)):
            raise ValueError(f"{artifact}/{quantity}: null must be a finite number, got {null!r}")
        if bound:
            if bound not in (">=", "<="):
                raise ValueError(f"{artifact}/{quantity}: bound must be '', '>=' or '<=', got {bound!r}")
            beyond = reproduced > paper + tolerance + 1e-12 if bound == ">=" else reproduced < paper - tolerance - 1e-12
            shown = ("≥" if bound == ">=" else "≤") + f"{reproduced:g}"
            why = f"censored: {shown}, a bound (the search stopped at its limit)"
            if beyond and len(note.strip()) < MIN_CAUSE:
                raise ValueError(f"{artifact}/{quantity}: {shown} is outside {paper} ± {tolerance}: "
                                 "give a note naming the cause")
            note = f"{note}; {why}" if note.strip() else why
            return self._row(artifact, quantity, paper, shown, unit, tolerance,
                             "deviates" if beyond else "not-reproducible", note, null=null, null_why=null_why,
                             statements=statements)
        status = "match" if abs(paper - reproduced) <= tolerance + 1e-12 else "deviates"
        if status == "deviates" and len(note.strip()) < MIN_CAUSE:
            raise ValueError(f"{artifact}/{quantity}: {reproduced} is outside {paper} ± {tolerance}: "
                             "give a note naming the cause")
        if status == "match" and null is not None and abs(paper - _clean(null)) <= tolerance + 1e-12 \
                and not null_why.strip():
            raise ValueError(f"{artifact}/{quantity}: {paper} ± {tolerance} also accepts the null {null} "
                             "(no effect): tighten the tolerance or say in null_why why that is correct")
        return self._row(artifact, quantity, paper, reproduced, unit, tolerance, status, note,
                         null=null, null_why=null_why, statements=statements)

    def claim(self, artifact: str, quantity: str, paper, claim: Claim, unit: str = "",
              strength: str = "trend", note: str = "", reproduced=None, null_why: str = "",
              statements="") -> str:
        """A qualitative claim decided by a predicate: ``strength`` (``match`` or ``trend``) when
        it holds, ``deviates`` when it does not. ``reproduced`` defaults to the evidence. A
        ``match`` on "A above B" (``COMPARATIVE`` predicates) needs the predicate's margin, or
        ``null_why`` saying why a bare ordering is enough (``null_flags`` checks it)."""
        if not isinstance(claim, Claim):
            raise TypeError(f"{artifact}/{quantity}: claim() takes a specedge.claims.Claim, "
                            f"got {type(claim).__name__}")
        if strength not in ("match", "trend"):
            raise ValueError(f"strength must be 'match' or 'trend', got {strength!r}")
        status = strength if claim.holds else "deviates"
        if not claim.holds:
            cause = f"{claim.name} fails: {claim.evidence}"
            note = f"{cause}; {note}" if note.strip() else cause
        shown = claim.evidence if reproduced is None else reproduced
        return self._row(artifact, quantity, paper, shown, unit, None, status, note,
                         claim.name, claim.evidence, null_why=null_why, statements=statements)

    def state(self, artifact: str, quantity: str, paper, reproduced, status: str, note: str,
              unit: str = "", statements="") -> str:
        """``deviates`` or ``not-reproducible``, stated with a note that names the cause."""
        if status not in STATED:
            raise ValueError(f"{artifact}/{quantity}: only {STATED} can be stated; "
                             f"{status!r} must come from add() or claim()")
        if len(note.strip()) < MIN_CAUSE:
            raise ValueError(f"{artifact}/{quantity}: status {status!r} needs a note naming a cause "
                             f"(a mechanism or a number), got {note!r}")
        return self._row(artifact, quantity, paper, reproduced, unit, None, status, note, statements=statements)

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
                         statements=ids)
                if c.how == "add":
                    r.update(tolerance=c.tolerance(p) if callable(c.tolerance) else c.tolerance,
                             null=c.null(row) if callable(c.null) else c.null, null_why=c.null_why)
                else:
                    r["status"] = c.how
                rows.append(r)
        self.extend(rows)

    def extend(self, rows, paper: dict | None = None) -> list[str]:
        """Rows built from a paper table and a reproduced table (an experiment driver sets them side by
        side): each row is the keyword arguments of ``claim`` (it has ``claim``), ``state`` (it has
        ``status``) or ``add``; a row without ``paper`` takes ``paper[its first statement id]``
        (``coverage.paper_values``). Returns the statuses, in order."""
        out = []
        for r in (rows.to_dict("records") if isinstance(rows, pd.DataFrame) else rows):
            r = dict(r)
            if "paper" not in r:
                ids = str(r.get("statements", "")).split() if isinstance(r.get("statements", ""), str) \
                    else list(r["statements"])
                if not ids or paper is None or ids[0] not in paper:
                    raise ValueError(f"{r.get('artifact')}/{r.get('quantity')}: no 'paper' value and no paper value "
                                     f"for its statement {ids[:1]} (pass paper=coverage.paper_values(key))")
                r["paper"] = paper[ids[0]]
            fn = self.claim if "claim" in r else self.state if "status" in r else self.add
            out.append(fn(**r))
        return out

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)

    def write(self, outdir: Path) -> Path:
        return write_csv(self.frame(), Path(outdir) / "comparison.csv")


def load_all(figures_dir: Path = paths.FIGURES) -> pd.DataFrame:
    """All committed comparison files (top level of each paper folder, i.e. default profile)."""
    frames = []
    for csv in sorted(Path(figures_dir).glob("*/comparison.csv")):
        df = pd.read_csv(csv, dtype=str, keep_default_na=False)
        for col in OPTIONAL:
            if col not in df.columns:
                df[col] = ""
        missing = set(COLUMNS) - set(df.columns)
        if missing:
            raise ValueError(f"{csv}: missing columns {sorted(missing)}")
        bad = set(df["status"]) - set(STATUSES)
        if bad:
            raise ValueError(f"{csv}: unknown status {sorted(bad)}")
        frames.append(df.assign(key=csv.parent.name))
    if not frames:
        return pd.DataFrame(columns=COLUMNS + ["key"])
    return pd.concat(frames, ignore_index=True)


def null_flags(df: pd.DataFrame) -> pd.DataFrame:
    """The ``match`` rows of comparison rows (``load_all``'s columns) that fail the null test: a number
    row with no null and no ``null_why``, or whose tolerance accepts its null without a ``null_why``;
    a claim on "A above B" with no margin in its evidence and no ``null_why``. Adds a ``why`` column."""
    out = []
    for _, r in df[df["status"] == "match"].iterrows():
        excused = bool(str(r["null_why"]).strip())
        why = ""
        if str(r["tolerance"]).strip():          # a number row, from add()
            if not str(r["null"]).strip():
                why = "" if excused else "no null and no null_why"
            elif abs(float(r["paper"]) - float(r["null"])) <= float(r["tolerance"]) + 1e-12 and not excused:
                why = f"{r['paper']} ± {r['tolerance']} accepts the null {r['null']}"
        elif r["predicate"] in COMPARATIVE and "margin" not in str(r["evidence"]) and not excused:
            why = f"{r['predicate']} without a margin"
        if why:
            out.append({**r.to_dict(), "why": why})
    return pd.DataFrame(out, columns=list(df.columns) + ["why"])


def null_check(figures_dir: Path = paths.FIGURES) -> pd.DataFrame:
    """``null_flags`` over every committed comparison file, with the pending ones (``NULL_PENDING``)
    marked in a ``pending`` column."""
    flags = null_flags(load_all(figures_dir))
    return flags.assign(pending=flags["key"].map(NULL_PENDING).fillna(""))


def results_table(figures_dir: Path = paths.FIGURES) -> str:
    """Markdown: one line per paper and artefact with counts per status."""
    df = load_all(figures_dir)
    if df.empty:
        return "_No comparison files yet: run `make figures`._"
    order = {k: i for i, k in enumerate(PAPERS)}
    lines = ["| paper | artefact | rows | match | trend | deviates | not reproducible |",
             "|---|---|---:|---:|---:|---:|---:|"]
    keys = sorted(df["key"].unique(), key=lambda k: (order.get(k, len(order)), k))
    for key in keys:
        sub = df[df["key"] == key]
        for artifact, g in sub.groupby("artifact", sort=False):
            counts = g["status"].value_counts()
            lines.append(f"| [{key}](figures/{key}/comparison.csv) | {artifact} | {len(g)} | "
                         + " | ".join(str(counts.get(s, 0)) for s in STATUSES) + " |")
    total = df["status"].value_counts()
    lines.append(f"| **all** | | **{len(df)}** | "
                 + " | ".join(f"**{total.get(s, 0)}**" for s in STATUSES) + " |")
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update-readme", action="store_true", help="rewrite README.md's results table")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md's table is stale")
    ap.add_argument("--null-check", action="store_true",
                    help="list the match rows that fail the null test; exit 1 when one is not pending")
    args = ap.parse_args(argv)
    if args.null_check:
        flags = null_check()
        for _, r in flags.iterrows():
            print(f"{r.key}: {r.artifact} / {r.quantity}: {r.why}" + (f"  [pending: {r.pending}]" if r.pending else ""))
        open_ = int((flags["pending"] == "").sum())
        print(f"{len(flags)} match rows fail the null test, {open_} not pending")
        return 1 if open_ else 0
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
