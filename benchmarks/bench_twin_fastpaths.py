"""Benchmark (a script, not a test): what the twin's fast path buys, against the library call it replaces.

``uniform_ints.Ints`` re-implements ``Generator.integers(n)`` (the per-round index of a traced round, and
the outcome of a stop-rule round): it returns the library's numbers, so the logs are the same either way
(checked here, run by run). Cases:
the edge SD arena's full-scale sweep (every combination at every bandwidth, devices and mix, seed 0's runs:
``experiments.edge_sd_arena.runs.run_log``) and one point of li2026's WISP sweep. Per case and variant the CPU time
(``time.process_time``, the best of ``--repeats``), each variant's extra time over the shipped one, and
for the arena the share of its notebook's run time the fast path saves (the sweep's runs are the notebook's
time: the same points with 5 seeds, plus the capacity searches', run the same way); the prefix sums of the
traced rounds are numpy's own (``TraceAcceptance``).

    python benchmarks/bench_twin_fastpaths.py --out figures/bench/twin_fastpaths.csv
"""
from __future__ import annotations

import argparse
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

import report
from specedge.experiments.edge_sd_arena import runs as arena
from specedge.experiments.li2026 import serving_runs as li
from specedge.experiments.li2026 import realpair as li2026_realpair
from specedge.serving.sim import twin


class _LibraryInts:
    """The twin's ``Ints`` slot filled by numpy's own ``Generator.integers``."""

    def __init__(self, rng: np.random.Generator):
        self.integers = rng.integers


@contextmanager
def _variant(name: str):
    saved = twin.Ints
    if name == "library integers":
        twin.Ints = _LibraryInts
    try:
        yield
    finally:
        twin.Ints = saved


VARIANTS = ("shipped", "library integers")


def _arena_runs(every: int):
    """Seed 0's runs of the arena's full-scale sweep (every ``every``-th of them), twin combinations only."""
    scn = arena.load_scenario()
    pts = arena.arena_points(scn, 0)
    pts = [p for p in pts if p.seed == pts[0].seed and p.combo.system == "edge"][::every]
    acc = li2026_realpair.acceptance()

    def run(variant: str):
        acc._fast.clear()                # the per-round tables built inside the clock
        acc._controlled.clear()
        return [arena.run_log(p, acc) for p in pts]
    return f"arena sweep, seed 0 ({len(pts)} runs)", run


def _li2026_point():
    setting = li.SCENARIO.setting(horizon_s=25.0, warmup_s=5.0)
    point = li.SCENARIO.point("WISP", 64, None, "Qwen3-32B", seed=0, setting=setting)
    li.workload(point)
    return "li2026 WISP point, 64 devices", lambda variant: [li.run_log(point)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("build/bench/twin_fastpaths.csv"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--every", type=int, default=3, help="run every n-th arena point (1: all of seed 0's)")
    args = ap.parse_args(argv)
    rows = []
    for name, run in (_arena_runs(args.every), _li2026_point()):
        base_logs, times = None, {}
        for variant in VARIANTS:
            best = float("inf")
            for _ in range(args.repeats):
                with _variant(variant):
                    t0 = time.process_time()
                    logs = run(variant)
                    best = min(best, time.process_time() - t0)
            same = base_logs is None or all(a.equals(b) for a, b in zip(base_logs, logs))
            base_logs = logs if base_logs is None else base_logs
            times[variant] = best
            rows.append(dict(case=name, variant=variant, cpu_seconds=round(best, 4),
                             extra_pct=round(100 * (best / times["shipped"] - 1), 2), same_logs=same,
                             numpy=np.__version__, **report.host_columns("float64", 1)))
            print(f"{name:40s} {variant:17s} {best:8.2f} CPU-s  {100 * (best / times['shipped'] - 1):+6.1f} %  "
                  f"logs {'identical' if same else 'DIFFER'}", flush=True)
    report.save(rows, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
