"""Committed logs of real serving runs: wall-clock timings are measured by an explicit step (``make
profiles``) and written here, and notebooks read them, so rerunning a notebook never changes its
outputs (GOODSPEED's and WISP's real runs both go through these three functions)."""
from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import Callable

import pandas as pd


def save(df: pd.DataFrame, out) -> Path:
    """Write a real run's log, tagged with the CPU and the Python version it was measured with."""
    from ...host import cpu_name

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.assign(device=cpu_name(), python=platform.python_version()).round(6).to_csv(out, index=False)
    return out


def read(path, command: str) -> pd.DataFrame:
    """A committed log of real runs; a missing file names ``command``, the step that measures it."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{path} is missing: `make profiles` measures it ({command})")
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    df["event"] = df["event"].astype(object).fillna("")   # an all-empty column reads as float
    return df


def load(path, command: str) -> dict[str, pd.DataFrame]:
    """The committed log by policy (``read``)."""
    df = read(path, command)
    return {pol: g.reset_index(drop=True) for pol, g in df.groupby("policy", sort=False)}


def measure_main(description: str, measure: Callable[[str, int], pd.DataFrame], default_out, argv=None) -> int:
    """``python -m <module> measure [--out F] [--seed N]``: run ``measure("full", seed)`` and save it."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("cmd", choices=["measure"])
    ap.add_argument("--out", default=str(default_out))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    df = measure("full", args.seed)
    print(f"{len(df)} rows -> {save(df, args.out)}")
    return 0
