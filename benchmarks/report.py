"""What every benchmark writes beside its numbers: the host columns and the CSV, named on the console.

Every committed ``figures/bench/*.csv`` carries ``HOST`` (``tests/unit/test_bench_csvs.py``): the CPU model, its
widest vector/matrix unit, the dtype the timed arithmetic runs in and the threads it ran on, beside the Python, the
torch build and the load when the row was measured (a busy machine reads slower).
"""
from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

import pandas as pd

from specedge import host

HOST = ("cpu", "isa", "dtype", "threads")     # the columns no benchmark CSV goes without
DTYPES = ("float32", "bfloat16", "float16", "float64",
          "Q4_K_M", "F32")    # the last two: GGUF weight formats, as llama.cpp runs them (bench_llamacpp.py)


def host_columns(dtype: str, threads: int) -> dict:
    """The host of a row: CPU model, ISA, native bfloat16, ``dtype`` (what the timed arithmetic runs in: a torch
    dtype, or ``float64`` for numpy/Python code), ``threads``, and the Python, torch and 1-minute load average."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype: one of {DTYPES}, got {dtype!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads: an integer >= 1, got {threads!r}")
    return dict(**host.describe(dtype, threads), python=platform.python_version(), torch=metadata.version("torch"),
                load_avg=round(os.getloadavg()[0], 2))


def save(rows, out: str | Path | None) -> pd.DataFrame:
    """``rows`` (a frame or a list of dicts) as a CSV at ``out`` (its folder made; nothing when None); rows without
    the host columns are refused before anything is written."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    if missing := [c for c in HOST if c not in frame.columns]:
        raise ValueError(f"{out or 'benchmark rows'}: no host columns {missing} (add report.host_columns(dtype, threads))")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out, index=False, float_format="%.6g", lineterminator="\n")
        print(f"-> {out}")
    return frame
