"""Coverage: how many of the numbers and claims a paper states have a row in its ``comparison.csv``.

REPRODUCTION.md's contract is one comparison row per number the paper states. This module counts
it instead of claiming it: ``data/coverage/<key>.yaml`` lists, per artefact of the paper (a table, a
figure, a theorem), how many numbers/claims the paper's text states there (read from
``papers/*.txt`` by hand, with a note saying what was counted); the rows of
``figures/<key>/comparison.csv`` whose ``artifact`` is one of the artefact's labels are counted
against it. An artefact is covered up to its stated count (extra rows on one artefact do not make
up for a missing one); rows under no listed label are reported as beyond the paper.

Inventory format (validated on load)::

    paper: zheng2025
    source: papers/zheng2025_tk_slt.txt
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

from specedge import paths

INVENTORY = paths.DATA / "coverage"
PAPERS = ("zhu2025", "tran2025", "zheng2025", "li2026", "venkatesha2025", "model_zoo")
_KEYS = {"name", "stated", "counted", "rows", "side"}


def load_inventory(key: str, root: Path | None = None) -> dict:
    """The validated inventory of paper ``key`` from ``<root>/<key>.yaml`` (root: ``data/coverage``)."""
    if key not in PAPERS:
        raise ValueError(f"key must be one of {PAPERS}, got {key!r}")
    path = Path(root or INVENTORY) / f"{key}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the coverage inventory of {key} is committed with the "
                                "repository (data/coverage/), restore it from git")
    inv = yaml.safe_load(path.read_text())
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


def load_comparison(key: str, figures: Path | None = None) -> pd.DataFrame:
    """The rows of ``figures/<key>/comparison.csv`` and of a paper's further notebooks
    (``figures/<key>_<part>/comparison.csv``, e.g. li2026's serving side)."""
    root = Path(figures or paths.FIGURES)
    path = root / key / "comparison.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: `make figures` builds it (its notebook writes it)")
    parts = [path, *sorted(root.glob(f"{key}_*/comparison.csv"))]
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


def report(keys=PAPERS, root: Path | None = None, figures: Path | None = None, detail: bool = False) -> pd.DataFrame:
    """One line per paper (and per side where the inventory tags sides): rows present vs stated."""
    lines = []
    for key in keys:
        table = count(load_inventory(key, root), load_comparison(key, figures))
        if detail:
            print(f"\n{key}\n{table.to_string(index=False)}")
        sides = [s for s in dict.fromkeys(table.side) if s]
        for side in [None, *sides]:
            s = summary(table, side)
            lines.append(dict(paper=key, side=side or "all", **s))
    return pd.DataFrame(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.coverage", description=__doc__.split("\n")[0])
    ap.add_argument("keys", nargs="*", default=list(PAPERS), help=f"papers (default all: {', '.join(PAPERS)})")
    ap.add_argument("--detail", action="store_true", help="print the per-artefact table of each paper")
    args = ap.parse_args(argv)
    for k in args.keys:
        if k not in PAPERS:
            ap.error(f"unknown paper {k!r}; choose from {', '.join(PAPERS)}")
    lines = report(args.keys, detail=args.detail)
    print(lines.to_string(index=False, formatters=dict(percent="{:.0f} %".format)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
