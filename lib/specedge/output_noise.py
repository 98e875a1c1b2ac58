"""The declared noise of committed outputs, and the rule that keeps a committed value when it moved only by that noise.

Most committed numbers are exact functions of committed data and a seed. Those computed from float32 model outputs
are not: Intel's and AMD's float32 kernels (MKL, oneDNN) take vendor-specific code paths even at the same vector
width, so a logit differs by about 1e-7 relative between an Intel and an AMD host, and a mean over thousands of
positions by 1e-9 to 1e-6 (zheng2025's α(K)) or ~3e-7 (an exit's confidence summed in float32). Written with ten
significant digits that shows. ``DECLARED`` names, per output file and column, the relative noise of such values; one table for
the whole repository.

``settle(frame, path)`` gives a frame's declared columns the values that will be written: each at its ten written
digits, and where the committed CSV at ``path`` holds a value within the declared noise of the new one, that committed
value (so ``plotting.write_csv`` rewrites the same text);
a cell that moved beyond its noise keeps the new value and is reported, one line per cell, on stderr and in
``build/output_noise.log``. Only rows whose other cells are unchanged (the same text as written) are compared; a file
with other columns or another number of rows is written as computed and reported. Notebooks settle a frame where it
is computed, before anything is drawn or derived from it, so figures, derived tables and comparison rows follow the
values as written (``plotting.save`` refuses a figure's data that settling would change).

Values that are counts or ranks of float32 outputs (an exit's argmax agreement, a predictor's confusion counts, an
acceptance count) are not declared: they change only where two float32 values tie within their noise, and then
visibly, by a whole count.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from . import paths

FLOAT_FORMAT = "%.10g"        # what plotting.write_csv writes (ten significant digits)
# A mean over positions of a float32 model output (softmax probabilities, Σ min(p, q), a max probability),
# accumulated in float64: per value ~1e-7 relative between kernels; a mean moves by 4e-10 to 8e-7 (zheng2025's α(K)
# on the zoo pair with torch/MKL/oneDNN at AVX-512 instead of AVX2: a near-tie argmax at T = 0 moves a small α most).
FLOAT32_MEAN = 1e-5
# eq (11)'s speedup S(γ*) from such a mean: d ln S / d ln α stays below 10 for α < 0.95, γ ≤ 64.
FLOAT32_DERIVED = 1e-4
_ALPHA_AND_SPEEDUP = {"alpha": FLOAT32_MEAN, "speedup": FLOAT32_DERIVED}

# (paper folder, file name) -> {column: relative noise}; every other column of these files, and every other
# output, is exact (a function of committed data and a seed, or a count).
DECLARED: dict[tuple[str, str], dict[str, float]] = {
    # α(K) of eq (9), teacher-forced on the zoo pair's float32 logits, and what Table II / Fig 4 derive from it
    ("zheng2025", "fig3_alpha_vs_topk.csv"): {"alpha": FLOAT32_MEAN},
    ("zheng2025", "table2_relative_cost_gamma.csv"): _ALPHA_AND_SPEEDUP,
    ("zheng2025", "fig4_speedup_vs_topk.csv"): _ALPHA_AND_SPEEDUP,
    ("zheng2025", "fig4_speedup_by_domain.csv"): _ALPHA_AND_SPEEDUP,
    # each exit's mean max-softmax probability (eq 4) over held-out positions
    ("venkatesha2025", "table2_exit_agreement.csv"): {"confidence": FLOAT32_MEAN},
}
LOG = paths.BUILD / "output_noise.log"


def declared(path: Path) -> dict[str, float]:
    """The declared noise of the columns of the output at ``path`` (matched by its paper folder and file name,
    so a CI-scale or another profile's copy settles the same way); empty for an exact output."""
    path = Path(path)
    return next((cols for (key, name), cols in DECLARED.items() if path.name == name and key in path.parts[:-1]), {})


def _text(frame: pd.DataFrame) -> pd.DataFrame:
    """The cells of ``frame`` as ``plotting.write_csv`` writes them."""
    buf = io.StringIO()
    frame.to_csv(buf, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    buf.seek(0)
    return pd.read_csv(buf, dtype=str, keep_default_na=False)


def within(new: float, old: float, rtol: float) -> bool:
    """``new`` lies within ``rtol`` (relative) of ``old``; NaN equals NaN only."""
    if np.isnan(new) or np.isnan(old):
        return bool(np.isnan(new) and np.isnan(old))
    return abs(new - old) <= rtol * max(abs(new), abs(old))


def report(line: str) -> None:
    """A moved output, visibly: on stderr and appended to ``build/output_noise.log``."""
    print(f"[specedge] {line}", file=sys.stderr, flush=True)
    LOG.parent.mkdir(parents=True, exist_ok=True)
    with LOG.open("a") as f:
        f.write(line + "\n")


def _parse(text: str) -> float:
    return float(text) if text != "" else np.nan


def settle(frame: pd.DataFrame, path: Path, noise: dict[str, float] | None = None,
           log: Callable[[str], None] | None = report) -> pd.DataFrame:
    """``frame`` with its declared columns as they will be written: each value at its ten written digits, or the
    committed value of the CSV at ``path`` where it lies within its noise of that (a copy; ``frame`` is untouched).
    ``noise``: column -> relative noise (default: ``declared(path)``). Cells that moved beyond their noise, and a
    file that no longer has the frame's shape, are reported through ``log`` (None: silent) and take the new values."""
    path = Path(path)
    noise = declared(path) if noise is None else noise
    for col, rtol in noise.items():
        if not 0 <= rtol < 1:
            raise ValueError(f"{path.name}: noise of {col!r} must be a relative tolerance in [0, 1), got {rtol!r}")
    cols = [c for c in noise if c in frame.columns]
    if not cols or frame.empty:
        return frame
    new = _text(frame)
    out = frame.copy()
    values = {c: new[c].map(_parse).to_numpy(float, copy=True) for c in cols}     # what a figure drawn from the CSV shows
    if path.exists():
        _keep_committed(new, pd.read_csv(path, dtype=str, keep_default_na=False), values, noise, path, log or (lambda line: None))
    for c in cols:
        out[c] = values[c]
    return out


def _keep_committed(new: pd.DataFrame, old: pd.DataFrame, values: dict, noise: dict, path: Path, log) -> None:
    """Put into ``values`` (column -> written values) the committed value of each cell within its noise."""
    where = path.relative_to(paths.ROOT) if path.is_relative_to(paths.ROOT) else path
    if list(old.columns) != list(new.columns) or len(old) != len(new):
        log(f"{where}: rewritten as computed (columns or row count changed: {len(old)} x {list(old.columns)} -> "
            f"{len(new)} x {list(new.columns)})")
        return
    keys = [c for c in new.columns if c not in noise]
    same_row = (old[keys] == new[keys]).all(axis=1).to_numpy() if keys else np.ones(len(new), bool)
    if not same_row.all():
        log(f"{where}: {int((~same_row).sum())} of {len(new)} rows changed in their exact columns; those rows written as computed")
    for col, v in values.items():
        for i in np.flatnonzero(same_row & (old[col] != new[col]).to_numpy()):
            was = _parse(old[col].iat[i])
            if within(v[i], was, noise[col]):
                v[i] = was
            else:
                rel = abs(v[i] - was) / max(abs(v[i]), abs(was)) if np.isfinite([v[i], was]).all() else np.inf
                log(f"{where}: {col} on line {i + 2} moved {old[col].iat[i] or 'NaN'} -> {new[col].iat[i] or 'NaN'} "
                    f"(relative {rel:.1e}, beyond its declared noise {noise[col]:.0e})")


def settle_parts(parts: dict[str, pd.DataFrame], path: Path, column: str = "pair") -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """Frames written to one file with their name in ``column`` (``parts``: name -> frame, in order): the whole,
    settled (``settle``), and each part of it again without that column."""
    whole = settle(pd.concat([f.assign(**{column: name}) for name, f in parts.items()], ignore_index=True), path)
    return whole, [whole[whole[column] == name].drop(columns=column).reset_index(drop=True) for name in parts]


def check_settled(frame: pd.DataFrame, path: Path) -> None:
    """Raise unless ``frame`` is already what ``settle`` makes of it (a figure drawn from it shows the values written)."""
    kept = settle(frame, path, log=None)
    moved = [c for c in declared(path) if c in frame.columns
             and not np.array_equal(kept[c].to_numpy(float), frame[c].to_numpy(float), equal_nan=True)]
    if moved:
        raise ValueError(f"{path}: {moved} differ from the values written (ten digits, or the committed values within "
                         "their declared noise), so the figure would not show the CSV; settle the frame "
                         "(output_noise.settle) where it is computed, before drawing it")
