"""Coverage: which of the numbers and claims a paper states have a reproduction (or analytic) row in its ``comparison.csv``.

Two inventory formats. The **statement inventory** lists every number
and claim the paper states, each with an id, its quoted text and where it stands; each comparison row
names the statement id(s) it holds (column ``statements``), and :func:`check_statements` reports
statements no row holds and rows that hold no statement::

    paper: zhu2025
    source: arXiv 2510.11331
    statements:
      - id: fig9a-44.9
        where: Sec IV-C, Fig 9(a)
        text: "the proposed scheme reduces latency by 44.9% compared with the uniform allocation scheme"
      - id: table2-settings                 # a setting the reproduction uses, not a result:
        where: Table II
        text: "K 100, ..."
        input: "profile zhu2025_paper"       # where it is used (no row needed)
      - id: p1-equal-finish                  # true by construction: a test asserts it (no row)
        where: Sec III-A
        text: "..."
        test: tests/unit/test_zhu2025.py::test_optimal_bandwidth_equalises_finish_times
    beyond: [alg1-fixed-l]                   # ids rows may name for studies beyond the paper

The older **artefact counts** (papers not re-read yet) follow.

REPRODUCTION.md's contract is one comparison row per number the paper states. This module counts
it instead of claiming it: ``data/coverage/<key>.yaml`` lists, per artefact of the paper (a table, a
figure, a theorem), how many numbers/claims the paper's text states there (read from
``papers/*.txt`` by hand, with a note saying what was counted); the rows of
``figures/<key>/comparison.csv`` whose ``artifact`` is one of the artefact's labels are counted
against it. An artefact is covered up to its stated count (extra rows on one artefact do not make
up for a missing one); rows under no listed label are reported as beyond the paper.

Inventory format (validated on load)::

    paper: zheng2025
    source: arXiv 2509.04576
    artifacts:
      - name: Table I
        stated: 15
        counted: "gamma* for 3 alpha x 5 L, the '–' cells included"
        rows: [Table I]        # comparison.csv artifact labels; default [name]
        side: drafting         # optional tag (li2026: drafting / serving) to report separately

Run ``python -m specedge.coverage`` (``make coverage``) for the per-paper table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from specedge import papers, paths

_KEYS = {"name", "stated", "counted", "rows", "side"}
_STATEMENT_KEYS = {"id", "where", "text", "input", "test", "side", "paper", "source"}
# where a statement's value comes from (``compare.PAPER_SOURCES``): printed, reconstructed from the paper's
# formulas because the text lost it, or read off a figure
SOURCES = ("stated", "recovered", "read-from-figure")


def load_inventory(key: str, root: Path | None = None) -> dict:
    """The validated inventory of output folder ``key``: the one ``data/papers.yaml`` names for it, or
    ``<root>/<key>.yaml`` when ``root`` is given."""
    inventories = papers.MANIFEST.inventories
    if key not in inventories:
        raise ValueError(f"key must be one of {tuple(inventories)} (the output folders with an inventory in "
                         f"{papers.MANIFEST.path}), got {key!r}")
    path = Path(root) / f"{key}.yaml" if root else inventories[key]
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the coverage inventory of {key} is committed with the "
                                "repository (data/coverage/), restore it from git")
    inv = yaml.safe_load(path.read_text())
    if isinstance(inv, dict) and inv.get("paper") == key and "statements" in inv:
        return _check_statement_inventory(inv, path)
    if not isinstance(inv, dict) or inv.get("paper") != key or not isinstance(inv.get("artifacts"), list):
        raise ValueError(f"{path}: expected a mapping with 'paper: {key}' and an 'artifacts' list")
    seen = set()
    for i, a in enumerate(inv["artifacts"]):
        where = f"{path}: artifacts[{i}]"
        if not isinstance(a, dict) or not {"name", "stated", "counted"} <= set(a) or set(a) - _KEYS:
            raise ValueError(f"{where}: expected keys name, stated, counted (optional rows, side), got {a!r}")
        if not isinstance(a["stated"], int) or isinstance(a["stated"], bool) or a["stated"] < 0:
            raise ValueError(f"{where} ({a['name']}): 'stated' must be an integer >= 0, got {a['stated']!r}")
        a.setdefault("rows", [a["name"]])
        a.setdefault("side", "")
        if not isinstance(a["rows"], list) or not a["rows"]:
            raise ValueError(f"{where} ({a['name']}): 'rows' must be a non-empty list of artifact labels")
        dup = seen & set(a["rows"])
        if dup:
            raise ValueError(f"{where} ({a['name']}): artifact label(s) {sorted(dup)} listed twice")
        seen |= set(a["rows"])
    return inv


def paper_values(key: str, root: Path | None = None) -> dict:
    """``{statement id: the paper's value}`` of every statement of ``key``'s inventory that states one
    (key ``paper``): notebooks read the paper's numbers from here instead of typing them."""
    inv = load_inventory(key, root)
    if "statements" not in inv:
        raise ValueError(f"{key}: its inventory is an artefact count, not a statement inventory (no paper values)")
    return {st["id"]: st["paper"] for st in inv["statements"] if "paper" in st}


def paper_sources(key: str, root: Path | None = None) -> dict:
    """``{statement id: its source}`` (``SOURCES``) of ``key``'s statement inventory ({} for an artefact count)."""
    inv = load_inventory(key, root)
    return {st["id"]: st["source"] for st in inv.get("statements", [])}


def paper_range(value) -> tuple[float, float]:
    """A range a paper states, as its inventory writes it (``paper: "5-25"``): ``(5.0, 25.0)``."""
    lo, sep, hi = str(value).partition("-")
    try:
        out = float(lo), float(hi)
    except ValueError:
        out = None
    if not sep or out is None or out[0] > out[1]:
        raise ValueError(f"paper range must read 'low-high' with low <= high (e.g. '5-25'), got {value!r}")
    return out


def _check_statement_inventory(inv: dict, path: Path) -> dict:
    sts = inv["statements"]
    if not isinstance(sts, list) or not sts:
        raise ValueError(f"{path}: 'statements' must be a non-empty list")
    seen = set()
    for i, st in enumerate(sts):
        where = f"{path}: statements[{i}]"
        if not isinstance(st, dict) or not {"id", "where", "text"} <= set(st) or set(st) - _STATEMENT_KEYS:
            raise ValueError(f"{where}: expected keys id, where, text (optional input, test, side, paper, source), got {st!r}")
        if not str(st["text"]).strip() or not str(st["where"]).strip():
            raise ValueError(f"{where} ({st['id']}): 'text' quotes the paper and 'where' names its place; both non-empty")
        if " " in str(st["id"]) or st["id"] in seen:
            raise ValueError(f"{where}: id {st['id']!r} must be unique and contain no spaces")
        if st.setdefault("source", "stated") not in SOURCES:
            raise ValueError(f"{where} ({st['id']}): 'source' must be one of {SOURCES}, got {st['source']!r}")
        if "input" in st and "test" in st:
            raise ValueError(f"{where} ({st['id']}): a statement is an input or held by a test, not both")
        seen.add(st["id"])
        st.setdefault("side", "")
    beyond = inv.setdefault("beyond", [])
    if not isinstance(beyond, list) or set(beyond) & seen:
        raise ValueError(f"{path}: 'beyond' must list ids of studies beyond the paper, none of them a statement id")
    return inv


def row_statements(comparison: pd.DataFrame) -> list[list[str]]:
    """The statement ids each row names (column ``statements``, space-separated; [] when absent)."""
    col = comparison["statements"] if "statements" in comparison.columns else pd.Series([""] * len(comparison))
    return [str(v).split() for v in col.fillna("")]


def check_statements(inventory: dict, comparison: pd.DataFrame, tests_root: Path | None = None) -> dict:
    """Statements against rows: ``unheld`` (a result no row holds), ``unlabelled`` (rows naming no
    statement), ``unknown`` (ids rows name that the inventory lacks), ``missing_tests`` (a statement's
    test that does not exist). All empty: the notebook's rows and its inventory agree."""
    ids = {st["id"]: st for st in inventory["statements"]}
    named = row_statements(comparison)
    held = {i for ids_ in named for i in ids_}
    labels = comparison["artifact"] + " / " + comparison["quantity"]
    root = Path(tests_root or paths.ROOT)
    missing_tests = []
    for st in inventory["statements"]:
        if "test" in st:
            file, _, name = str(st["test"]).partition("::")
            f = root / file
            if not name or not f.exists() or f"def {name}(" not in f.read_text():
                missing_tests.append(f"{st['id']}: {st['test']}")
    return dict(
        unheld=[i for i, st in ids.items() if i not in held and "input" not in st and "test" not in st],
        unlabelled=[lab for lab, n in zip(labels, named) if not n],
        unknown=sorted({i for n in named for i in n} - set(ids) - set(inventory["beyond"])),
        missing_tests=missing_tests)


COVERING = ("reproduction", "analytic")   # the row kinds that cover a statement: they could have come out otherwise


def statement_table(inventory: dict, comparison: pd.DataFrame) -> pd.DataFrame:
    """One line per statement: how it is held and the number of rows naming it. ``held_by``: ``reproduction``
    or ``analytic`` (a row of that kind names it: covered), else ``setting`` (only settings name it), ``input``,
    ``test`` or ``NONE``. A comparison without a ``kind`` column counts every row as a reproduction."""
    named = row_statements(comparison)
    kinds = (comparison["kind"].fillna("").tolist() if "kind" in comparison.columns else ["reproduction"] * len(named))
    out = []
    for st in inventory["statements"]:
        held = [k for ids, k in zip(named, kinds) if st["id"] in ids]
        how = next((k for k in (*COVERING, "setting") if k in held), None) or \
            ("input" if "input" in st else "test" if "test" in st else "rows" if held else "NONE")
        out.append(dict(id=st["id"], where=st["where"], side=st["side"], held_by=how, rows=len(held)))
    return pd.DataFrame(out)


def load_comparison(key: str, figures: Path | None = None) -> pd.DataFrame:
    """The rows of ``figures/<key>/comparison.csv`` and of a paper's further notebooks
    (``figures/<key>_<part>/comparison.csv``) that have no inventory of their own (li2026_serving has one)."""
    root = Path(figures or paths.FIGURES)
    path = root / key / "comparison.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: `make figures` builds it (its notebook writes it)")
    parts = [path, *sorted(p for p in root.glob(f"{key}_*/comparison.csv") if p.parent.name not in papers.MANIFEST.inventories)]
    return pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in parts], ignore_index=True)


def count(inventory: dict, comparison: pd.DataFrame) -> pd.DataFrame:
    """Per artefact: stated numbers, rows present, rows counted (``min(rows, stated)``); plus one
    ``(beyond the paper)`` line for rows under no listed label (stated 0, never counted)."""
    per_label = comparison["artifact"].value_counts()
    out, listed = [], set()
    for a in inventory["artifacts"]:
        n = int(sum(per_label.get(lbl, 0) for lbl in a["rows"]))
        listed |= set(a["rows"])
        out.append(dict(artifact=a["name"], side=a["side"], stated=a["stated"], rows=n,
                        covered=min(n, a["stated"])))
    extra = int(per_label[[lbl for lbl in per_label.index if lbl not in listed]].sum())
    out.append(dict(artifact="(beyond the paper)", side="", stated=0, rows=extra, covered=0))
    return pd.DataFrame(out)


def summary(table: pd.DataFrame, side: str | None = None) -> dict:
    """Stated, covered and percentage over the artefacts (of one ``side`` when given)."""
    t = table if side is None else table[table.side == side]
    stated, covered = int(t.stated.sum()), int(t.covered.sum())
    return dict(stated=stated, covered=covered, percent=100.0 * covered / stated if stated else float("nan"))


def report(keys=None, root: Path | None = None, figures: Path | None = None, detail: bool = False) -> pd.DataFrame:
    """One line per paper (and per side where the inventory tags sides): statements covered -- named by a
    reproduction or analytic row, one that could have come out otherwise -- against those stated, with the
    statements held only by settings or inputs and those held by tests apart (statement inventories); or rows
    present vs stated per artefact (artefact counts)."""
    lines = []
    for key in papers.MANIFEST.inventories if keys is None else keys:
        inv, comp = load_inventory(key, root), load_comparison(key, figures)
        if "statements" in inv:
            t, c = statement_table(inv, comp), check_statements(inv, comp)
            if detail:
                print(f"\n{key}\n{t.to_string(index=False)}")
            for what, items in c.items():
                for item in items:
                    print(f"{key}: {what}: {item}")
            covered = int(t.held_by.isin(COVERING).sum())
            lines.append(dict(paper=key, side="all", inventory="statements", stated=len(t), covered=covered,
                              percent=100.0 * covered / len(t),
                              settings_inputs=int(t.held_by.isin(("setting", "input")).sum()),
                              tests=int((t.held_by == "test").sum()), unlabelled_rows=len(c["unlabelled"])))
            continue
        table = count(inv, comp)
        if detail:
            print(f"\n{key}\n{table.to_string(index=False)}")
        sides = [s for s in dict.fromkeys(table.side) if s]
        for side in [None, *sides]:
            s = summary(table, side)
            lines.append(dict(paper=key, side=side or "all", inventory="artefact counts", **s,
                              unlabelled_rows=float("nan")))
    return pd.DataFrame(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.coverage", description=__doc__.split("\n")[0])
    known = list(papers.MANIFEST.inventories)
    ap.add_argument("keys", nargs="*", default=known, help=f"papers (default all: {', '.join(known)})")
    ap.add_argument("--detail", action="store_true", help="print the per-artefact table of each paper")
    args = ap.parse_args(argv)
    for k in args.keys:
        if k not in known:
            ap.error(f"unknown paper {k!r}; choose from {', '.join(known)}")
    lines = report(args.keys, detail=args.detail)
    print(lines.to_string(index=False, formatters=dict(percent="{:.0f} %".format)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
