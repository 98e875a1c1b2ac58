"""Benchmark of the twin's speed: simulated client-rounds per CPU-second at 8 and 64 clients.

Sync rounds (GOODSPEED's setting: Fixed-S and GOODSPEED allocators, trace-driven acceptance), the same
in the vectorised model (``serving.sim.twin_vectorised``: statistically equivalent, not identical), WISP's
batch former (li2026's sweep point: predictor-controlled drafting, mixed SLO classes, eq 19 verifier) and
a point of Table 2's largest capacity search (1137 devices), each the best of ``--repeats`` runs of CPU
time (``time.process_time``: other processes on the machine slow a run down less than its wall clock).
Writes one row per case.

    python benchmarks/bench_twin.py --out figures/bench/twin_speed.csv
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path


import report
from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.interfaces import Times
from specedge.serving.sim.twin import TraceAcceptance, simulate
from specedge.serving.sim.twin_vectorised import simulate_sync
from specedge.serving.workload import ClientSpec, Workload
from specedge.experiments.li2026 import serving_runs as li


def _sync(n: int, policy: str, acc, vectorised: bool = False):
    wl = Workload("target-m", tuple(ClientSpec(("draft-xs", "draft-s")[i % 2], ("code", "math"), 2, 150)
                                    for i in range(n)), capacity=2 * n + n // 2)
    times = Times([lambda s: 0.004 * s] * n, AffineTokens(0.009, 6e-5))
    alloc = lambda: FixedS(wl.capacity, n) if policy == "Fixed-S" else GoodspeedAllocator(wl.capacity, beta=0.5)
    if vectorised:   # 10x the rounds: its per-run setup would dominate 16,000 client-rounds
        return lambda: simulate_sync(wl, alloc(), 0.004, times.verify, acc, rounds=160_000 // n, seed=0)
    return lambda: simulate(wl, SyncRounds(), alloc(), times, acc, rounds=16_000 // n, seed=0)


def _wisp(n: int, slo_class: int | None = None, target: str = "Qwen3-32B", horizon: float | None = None):
    setting = li.SCENARIO.setting(horizon_s=25.0 * 64 / n if horizon is None else horizon, warmup_s=5.0)
    point = li.SCENARIO.point("WISP", n, slo_class, target, seed=0, setting=setting)
    li.workload(point)                    # the devices' alphas and the traces are loaded outside the clock
    return lambda: li.run_log(point)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("build/bench/twin_speed.csv"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    acc = TraceAcceptance()
    cases = [(f"sync rounds, {p}", n, _sync(n, p, acc)) for n in (8, 64) for p in ("Fixed-S", "GOODSPEED")]
    cases += [(f"vectorised sync rounds, {p}", n, _sync(n, p, acc, True)) for n in (8, 64) for p in ("Fixed-S", "GOODSPEED")]
    cases += [("WISP former (li2026 point)", n, _wisp(n)) for n in (8, 64)]
    # a point of Table 2's largest search (Qwen3-14B, 2 tok/s, near its capacity): batches of ~400 requests
    cases += [("WISP former (Table 2 point, 14B, 2 tok/s)", 1137, _wisp(1137, 2, "Qwen3-14B", 40.0))]
    rows = []
    for name, n, fn in cases:
        best, rounds = float("inf"), 0
        for _ in range(args.repeats):
            t0 = time.process_time()
            log = fn()
            best, rounds = min(best, time.process_time() - t0), len(log)
        rows.append(dict(case=name, clients=n, client_rounds=rounds, cpu_seconds=round(best, 4),
                         client_rounds_per_s=round(rounds / best), **report.host_columns("float64", 1)))
        print(f"{name:32s} N={n:3d}: {rounds / best:10,.0f} client-rounds/s ({rounds} in {best:.2f} CPU-s)")
    report.save(rows, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
