"""Absolute repository paths, so notebooks run from any working directory.

nbmake executes a notebook in its own folder, papermill in the caller's; every path the library
hands out is therefore anchored at the repository root, never at the current directory.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
PROFILES = DATA / "profiles"
ZOO = DATA / "zoo"
CORPUS = DATA / "corpus"
FIGURES = ROOT / "figures"
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
TIMINGS = BUILD / "timings"   # git-ignored: how long the make commands and the notebooks took (tools/timings.py)
MODELS = ROOT / "models"     # git-ignored: the real pair's converted weights (make realpair)

SCALES = ("ci", "full")


def scale_from_env(default: str = "full") -> str:
    """The run scale: ``SPECEDGE_SCALE`` if set (nbmake runs CI scale this way), else ``default``."""
    scale = os.environ.get("SPECEDGE_SCALE", default)
    check_scale(scale)
    return scale


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return scale


def output_dir(key: str, scale: str = "full", profile=None, default_profile: str | None = None) -> Path:
    """Where a notebook writes its figures, tables and ``comparison.csv``.

    Full scale on the notebook's default profile writes the committed ``figures/<key>/``; another
    profile gets its own sub-folder ``figures/<key>/profile-<its name>/``. ``profile`` is the loaded
    profile (anything with a ``name``) or its name; a path gives its file stem, which a valid profile's
    name equals (``hardware.load_profile`` checks that), so nothing is loaded again here.
    CI scale always writes under the git-ignored ``build/ci/`` so a test run never touches committed figures.
    """
    check_scale(scale)
    base = FIGURES if scale == "full" else BUILD / "ci" / "figures"
    out = base / key
    if profile is not None:
        name = getattr(profile, "name", None) or Path(str(profile)).stem
        if name != default_profile:
            out = out / f"profile-{name}"
    out.mkdir(parents=True, exist_ok=True)
    return out
