"""Every committed benchmark CSV names its host: CPU model, ISA, dtype and threads (``benchmarks/report.py``), and
every benchmark writes through ``report.save``, which refuses rows without them."""
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from specedge import host, paths

BENCH = paths.ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))
import report  # noqa: E402

ISAS = ("AMX-BF16", "AVX512-BF16", "AVX-512", "AVX2", "other")


def committed() -> list[Path]:
    return sorted((paths.FIGURES / "bench").glob("*.csv"))


@pytest.mark.parametrize("path", committed(), ids=lambda p: p.name)
def test_every_committed_benchmark_csv_has_the_host_columns(path):
    frame = pd.read_csv(path)
    missing = [c for c in report.HOST if c not in frame.columns]
    assert not missing, f"{path.name}: no {missing} (rerun its benchmark; rows go through report.save)"
    assert frame[list(report.HOST)].notna().all().all(), f"{path.name}: empty host cells"
    assert frame.isa.isin(ISAS).all() and frame.dtype.isin(report.DTYPES).all(), path.name
    assert (frame.threads >= 1).all(), path.name


def test_the_twin_speed_is_measured_by_one_benchmark():
    """One benchmark per quantity: client-rounds per CPU-second is bench_twin.py's (twin_speed.csv) alone."""
    writers = [p.name for p in BENCH.glob("*.py") if "client_rounds_per_s" in p.read_text()]
    assert writers == ["bench_twin.py"]
    assert not (paths.FIGURES / "bench" / "serving_twin.csv").exists()


def test_benchmarks_write_their_csvs_through_report_save():
    """No benchmark writes a CSV itself (the host check would be skipped)."""
    own = {"mutation_check.py", "report.py"}
    for p in sorted(BENCH.glob("*.py")):
        if p.name not in own:
            assert not re.search(r"\.to_csv\(|csv\.writer", p.read_text()), f"{p.name} writes a CSV without report.save"


def test_save_refuses_rows_without_their_host_and_writes_them_with_it(tmp_path):
    out = tmp_path / "b.csv"
    with pytest.raises(ValueError, match=r"no host columns \['isa', 'dtype', 'threads'\]"):
        report.save([dict(case="x", seconds=1.0, cpu="some CPU")], out)
    assert not out.exists()
    frame = report.save([dict(case="x", seconds=1.0, **report.host_columns("float32", 2))], out)
    back = pd.read_csv(out)
    assert back.loc[0, "dtype"] == "float32" and back.loc[0, "threads"] == 2 and back.loc[0, "isa"] == host.isa()
    assert list(back.columns) == list(frame.columns)


@pytest.mark.parametrize("dtype, threads", [("auto", 1), ("fp32", 1), ("float32", 0), ("float32", True), ("float32", 1.0)])
def test_host_columns_name_a_resolved_dtype_and_a_thread_count(dtype, threads):
    with pytest.raises(ValueError):
        report.host_columns(dtype, threads)
