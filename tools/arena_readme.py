"""docs/arena.md's results block, from the arena's committed tables: ``make readme`` (and ``make figures``) run
``python tools/arena_readme.py``, which rewrites the text between the markers with the sentences of
``specedge.experiments.edge_sd_arena.results.readme_sentences``."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from specedge import paths
from specedge.compare import rewrite_block
from specedge.experiments.edge_sd_arena.results import FIGURES, readme_sentences

README_START, README_END = "<!-- arena:start -->", "<!-- arena:end -->"
DOC = paths.ROOT / "docs" / "arena.md"


def readme_block(folder: Path = FIGURES) -> str:
    tmap, regime = pd.read_csv(folder / "technique_map.csv"), pd.read_csv(folder / "regime_map.csv")
    cap = pd.read_csv(folder / "capacity.csv") if (folder / "capacity.csv").exists() else None
    return ("Generated from `figures/edge_sd_arena/technique_map.csv`, `regime_map.csv` and `capacity.csv` "
            "(`notebooks/edge_sd_arena.ipynb`, the twin on the real pair's traces; `make readme` rewrites it): "
            + " ".join(readme_sentences(tmap, regime, cap)))


def update_readme(readme=DOC, check: bool = False) -> bool:
    """Rewrite (or with ``check`` only compare) the arena block of ``readme`` (``DOC``); True when it is/was stale."""
    return rewrite_block(readme, readme_block(), README_START, README_END, check)


if __name__ == "__main__":
    print("docs/arena.md results " + ("updated" if update_readme() else "already current"))
