"""What every benchmark writes beside its numbers: the host columns and the CSV, named on the console."""
from __future__ import annotations

import os
import platform
from pathlib import Path

import pandas as pd

from specedge import profiling


def host_columns() -> dict:
    """The CPU, the Python and the load when the row was measured (a busy machine reads slower)."""
    return dict(cpu=profiling.cpu_name(), python=platform.python_version(), load_avg=round(os.getloadavg()[0], 2))


def save(rows, out: str | Path | None) -> pd.DataFrame:
    """``rows`` (a frame or a list of dicts) as a CSV at ``out`` (its folder made; nothing when None)."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out, index=False)
        print(f"-> {out}")
    return frame
