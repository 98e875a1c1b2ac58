"""Benchmark of WISP's batch former (li2026 Algorithm 1): microseconds per dispatch decision over the
queue length (prints numbers; `make bench` commits them to figures/bench/wisp_scheduler.csv).

Each decision is ``WISPBatcher.form(queue, now, active)`` on a queue of n pending requests with
mixed SLO classes, cached lengths and deadlines drawn so that part of the queue is critical
(eq 17). The same queues go through FCFS (a slice of the queue) in the same process as the baseline.
The estimator holds the paper's Qwen3-32B coefficients (Table 12), the memory budget WISP's 14 GB.
The paper reports no number for this; a decision must stay far below one verification (~10-100 ms).

    python benchmarks/bench_wisp_scheduler.py --out figures/bench/wisp_scheduler.csv
"""
from __future__ import annotations

import argparse

import numpy as np

import report
from specedge import timing
from specedge.serving import slo
from specedge.serving.policies.batching import FCFS
from specedge.serving.timemodels.estimator import Estimator
from specedge.serving.interfaces import Pending
from specedge.serving.policies.wisp_batching import EDFOnly, WISPBatcher

QUEUE_LENGTHS = (10, 20, 50, 100, 200, 500, 1000)


def queue(n: int, now: float, rng: np.random.Generator, est: Estimator) -> list[Pending]:
    """n requests: classes uniform over WISP's four, 1-8 drafts, 100-1,000 cached tokens, 128 KiB of KV
    per token, arrivals over the last second, deadlines from eq (12) (alpha 0.7, drafting at 50 tok/s,
    20 ms of network)."""
    out = []
    for i in range(n):
        cls = int(rng.choice(slo.CLASSES))
        k = int(rng.integers(1, 9))
        cached = int(rng.integers(100, 1001))
        arrival = now - float(rng.uniform(0.0, 1.0))
        out.append(Pending(client=i, session=f"s{i}", round=0, arrival=arrival, n_draft=k, n_new=k + 1,
                           n_cached=cached, slo_class=cls, expected_tokens=slo.expected_tokens(0.7, k),
                           deadline=slo.deadline(arrival, 0.7, k, cls, t_draft=k / 50, t_network=0.02),
                           memory=131072.0 * (cached + k + 1)))
    return out


def time_decisions(former, queues, now: float, active: frozenset[int], reps: int) -> tuple[float, float]:
    """Median and p90 of µs per decision over the queues (each timed ``reps`` times, best of)."""
    def once(q):
        with timing.stopwatch() as t:
            former.form(q, now, active)
        return t.seconds

    us = [1e6 * timing.fastest(lambda: once(q), reps, warmup=0) for q in queues]
    return float(np.median(us)), float(np.percentile(us, 90))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=20, help="random queues per length")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    est = Estimator.from_profile("li2026_paper")
    formers = {"WISP": WISPBatcher(est, delta=0.01, memory_budget=14e9),
               "EDF-only": EDFOnly(est, delta=0.01, memory_budget=14e9),
               "FCFS": FCFS()}
    rng = np.random.default_rng(args.seed)
    now = 100.0
    rows = []
    for n in QUEUE_LENGTHS:
        queues = [queue(n, now, rng, est) for _ in range(args.queues)]
        active = frozenset(range(n))
        sizes = [len(formers["WISP"].form(q, now, active)) for q in queues]
        base, _ = time_decisions(formers["FCFS"], queues, now, active, args.reps)
        for name, former in formers.items():
            med, p90 = time_decisions(former, queues, now, active, args.reps)
            rows.append(dict(former=name, queue=n, us_median=round(med, 2), us_p90=round(p90, 2),
                             vs_fcfs=round(med / base, 2), wisp_batch_median=float(np.median(sizes)),
                             **report.host_columns("float64", 1)))
            print(f"{name:9s} queue {n:5d}: {med:9.1f} µs/decision (p90 {p90:.1f}), {med / base:6.1f}x FCFS")
    report.save(rows, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
