"""The comparison contract: one row per number a paper states, next to ours.

Each notebook writes ``figures/<key>/comparison.csv`` with the columns of ``COLUMNS``; the README's
results table is generated from all of them (``python -m specedge.compare --update-readme``), and a
test fails when the README is stale. ``status`` is ``match``, ``trend``, ``deviates`` or
``not-reproducible``; anything but ``match`` must say why in ``note``.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import paths
from .plotting import write_csv

COLUMNS = ["artifact", "quantity", "paper", "reproduced", "unit", "tolerance", "status", "note"]
STATUSES = ("match", "trend", "deviates", "not-reproducible")
PAPERS = {  # key -> title, in the README's order
    "zheng2025": "TK-SLT: top-K sparse logits transmission",
    "zhu2025": "Pipelined SD over heterogeneous edge networks",
    "tran2025": "GOODSPEED: fair goodput scheduling",
    "li2026": "WISP: SLO-aware distributed SD",
    "venkatesha2025": "Early-exit pre-drafting (FSD)",
    "model_zoo": "Embedded model zoo (acceptance)",
}
START, END = "<!-- results:start -->", "<!-- results:end -->"


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass
class Comparison:
    """Rows of one notebook's ``comparison.csv``.

    ``add`` decides ``status`` itself when both values are numbers and a tolerance is given
    (``match`` iff ``|paper - reproduced| <= tolerance``); otherwise the caller states it.
    """
    key: str
    rows: list[dict] = field(default_factory=list)

    def add(self, artifact: str, quantity: str, paper, reproduced, unit: str = "",
            tolerance: float | None = None, status: str | None = None, note: str = "") -> str:
        if status is None:
            if not (_is_number(paper) and _is_number(reproduced) and tolerance is not None):
                raise ValueError(f"{artifact}/{quantity}: give status= when values are not both "
                                 "numbers with a tolerance")
            status = "match" if abs(paper - reproduced) <= tolerance + 1e-12 else "deviates"
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        if status != "match" and not note.strip():
            raise ValueError(f"{artifact}/{quantity}: status {status!r} needs a note saying why")
        self.rows.append(dict(artifact=artifact, quantity=quantity, paper=paper,
                              reproduced=reproduced, unit=unit,
                              tolerance="" if tolerance is None else tolerance,
                              status=status, note=note))
        return status

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)

    def write(self, outdir: Path) -> Path:
        return write_csv(self.frame(), Path(outdir) / "comparison.csv")


def load_all(figures_dir: Path = paths.FIGURES) -> pd.DataFrame:
    """All committed comparison files (top level of each paper folder, i.e. default profile)."""
    frames = []
    for csv in sorted(Path(figures_dir).glob("*/comparison.csv")):
        df = pd.read_csv(csv, dtype=str, keep_default_na=False)
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


def render_readme(text: str, table: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"README has no {START} ... {END} block")
    return pattern.sub(lambda _: f"{START}\n{table}\n{END}", text)


def update_readme(readme: Path = paths.ROOT / "README.md", figures_dir: Path = paths.FIGURES) -> bool:
    """Rewrite the README's results block; return True when it changed."""
    text = Path(readme).read_text()
    new = render_readme(text, results_table(figures_dir))
    if new != text:
        Path(readme).write_text(new)
    return new != text


def readme_is_fresh(readme: Path = paths.ROOT / "README.md", figures_dir: Path = paths.FIGURES) -> bool:
    text = Path(readme).read_text()
    return render_readme(text, results_table(figures_dir)) == text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update-readme", action="store_true", help="rewrite README.md's results table")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md's table is stale")
    args = ap.parse_args(argv)
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
