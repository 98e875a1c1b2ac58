"""Benchmark of a whole WISP Table 2 in the twin (3 systems x 4 classes x 2 targets, one capacity
bisection each, 3 seeds per point): wall time with 1 and with 2 loky workers, same process, no cache
(prints numbers; `make bench` commits them to figures/bench/wisp_table2.csv). The rows of the two runs
must be identical (the sweep is a pure function of its configurations). It measures the sweep's cost:
at short horizons the capacities are not Table 2's (a 128-token response at 2 tok/s does not finish in
20 s), so only the notebook's full-scale run reproduces the table.

    python benchmarks/bench_wisp_table2.py --out figures/bench/wisp_table2.csv            # the notebook's setting
    python benchmarks/bench_wisp_table2.py --horizon 30 --warmup 5 --targets Qwen3-32B   # a quicker measurement
"""
from __future__ import annotations

import argparse
import os

import pandas as pd

import report
from specedge import sweep, timing
from specedge.experiments.li2026 import serving_runs as ex


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=0.05)
    ap.add_argument("--hi", type=int, default=512)
    ap.add_argument("--horizon", type=float, default=ex.SCENARIO.base.horizon_s)
    ap.add_argument("--warmup", type=float, default=ex.SCENARIO.base.warmup_s)
    ap.add_argument("--targets", nargs="+", default=["Qwen3-32B", "Qwen3-14B"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    setting = ex.SCENARIO.setting(horizon_s=args.horizon, warmup_s=args.warmup)
    rows, tables = [], {}
    for n_jobs in (1, 2):
        run = lambda configs, fn=ex.run_point: sweep.run(fn, configs, backend="loky", n_jobs=n_jobs,  # noqa: E731
                                                         cache_dir=None, progress=False)
        with timing.stopwatch() as t:
            tables[n_jobs] = ex.capacity_table(["SLED", "Centralized", "WISP"], args.targets, ex.CLASSES,
                                               epsilon=args.epsilon, seeds=args.seeds, seed=0, setting=setting,
                                               hi=args.hi, run=run)
        dt = t.seconds
        evaluated = int(tables[n_jobs]["evaluated"].str.split().str.len().sum())   # N values simulated
        rows.append(dict(n_jobs=n_jobs, seconds=round(dt, 1), curves=len(tables[n_jobs]), seeds=args.seeds,
                         targets=" ".join(args.targets), horizon_s=args.horizon, n_evaluated=evaluated, cores=os.cpu_count(),
                         **report.host_columns("float64", n_jobs)))
        print(f"Table 2 with {n_jobs} worker(s): {dt:.1f} s ({len(tables[n_jobs])} bisections)")
    same = tables[1].equals(tables[2])
    df = pd.DataFrame(rows)
    df["speedup_vs_1"] = round(df.seconds.iloc[0] / df.seconds, 2)
    df["identical_rows"] = same
    print(f"speedup with 2 workers: {df.speedup_vs_1.iloc[1]:.2f}x; identical rows: {same}")
    print(tables[2].pivot_table(index=["target", "system"], columns="speed", values="capacity"))
    report.save(df, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
