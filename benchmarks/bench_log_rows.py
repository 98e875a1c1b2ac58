"""Benchmark (a script, not a test): what the twin's log row costs. Making one row (``timeit``, in the same process,
the representations alternately, the fastest of ``--repeats``): the tuple in ``LogRow``'s order the twin makes once a
round's reply is in (``serving.interfaces.LogRow``, turned into the log by ``serving.log.frame``) against the
positional 21-item list the twin used to fill in place (``t_round`` and ``t_send`` by index once the reply was in),
``LogRow(...)`` by position and by keyword, and a slots dataclass filled in place; each one's extra over the list as a
share of the shipped twin's wall time per simulated round, measured here too (the fastest of ``--repeats`` runs of each
case: sync rounds, GOODSPEED's setting, Fixed-S and GOODSPEED allocators, trace-driven acceptance, at 8 and 64
clients; FCFS batches of at most 4 at 16 clients with SLO classes, deadlines in every row).

    python benchmarks/bench_log_rows.py --out figures/bench/log_rows.csv
"""
from __future__ import annotations

import argparse
import math
import time
import timeit
from dataclasses import dataclass
from pathlib import Path

import report
from specedge.serving.interfaces import LOG_COLUMNS, LogRow, Times
from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.sim import twin
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.workload import ClientSpec, Workload


# --------------------------------------------------------------------------- making one row, the representations
@dataclass(slots=True)
class _SlotsRow:
    """A mutable row with named fields (a representation measured, not shipped)."""
    system: str
    policy: str
    batch: int
    round: int
    client: int
    S: int
    accepted: int
    tokens: int
    t_draft: float
    t_receive: float
    t_queue: float
    t_verify: float
    t_send: float
    t_round: float
    bytes_up: int
    bytes_down: int
    arrival: float
    start: float
    end: float
    slo_class: int | None
    deadline: float | None
    event: str


BASELINE, SHIPPED = "positional list, filled in place", "LogRow-ordered tuple at the reply"
_VALUES = dict(LogRow=LogRow, SlotsRow=_SlotsRow, new=tuple.__new__, label="p", b=1, r=2, c=3, s=4, n=2, tok=3, td=0.1,
               first=0.5, last=1.0, start=1.2, arr=0.9, tv=0.01, pb=72, bd=50, end=1.3, slo=None, dl=None, tr=0.5, ts=1e-3)
_MAKE = {   # statement -> one row made as the twin makes it (the two fields known once the reply is in: ``tr``, ``ts``)
    "positional list, filled in place": "row = [label, b, r, c, s, n, tok, td, last - first, start - arr, tv, 0.0, 0.0, "
                                        "pb, bd, arr, start, end, slo, dl, '']; row[12] = tr; row[11] = ts",
    "LogRow-ordered tuple at the reply": "row = ('twin', label, b, r, c, s, n, tok, td, last - first, start - arr, tv, "
                                         "ts, tr, pb, bd, arr, start, end, slo, dl, '')",
    "LogRow(...) positional at the reply": "row = LogRow('twin', label, b, r, c, s, n, tok, td, last - first, start - arr, "
                                           "tv, ts, tr, pb, bd, arr, start, end, slo, dl, '')",
    "LogRow(...) by keyword at the reply": "row = LogRow(system='twin', policy=label, batch=b, round=r, client=c, S=s, "
                                           "accepted=n, tokens=tok, t_draft=td, t_receive=last - first, "
                                           "t_queue=start - arr, t_verify=tv, t_send=ts, t_round=tr, bytes_up=pb, "
                                           "bytes_down=bd, arrival=arr, start=start, end=end, slo_class=slo, "
                                           "deadline=dl, event='')",
    "slots dataclass, filled in place": "row = SlotsRow('twin', label, b, r, c, s, n, tok, td, last - first, "
                                        "start - arr, tv, 0.0, 0.0, pb, bd, arr, start, end, slo, dl, ''); "
                                        "row.t_round = tr; row.t_send = ts",
}


def _making(repeats: int, number: int = 200_000) -> dict[str, float]:
    """Microseconds to make one row, per representation (the fastest of ``repeats``, alternately)."""
    best = dict.fromkeys(_MAKE, math.inf)
    for _ in range(repeats):
        for name, stmt in _MAKE.items():
            best[name] = min(best[name], timeit.timeit(stmt, globals=_VALUES, number=number) / number * 1e6)
    return best


# --------------------------------------------------------------------------- the cases
def _sync(n: int, policy: str, acc):
    wl = Workload("target-m", tuple(ClientSpec(("draft-xs", "draft-s")[i % 2], ("code", "math"), 2, 150)
                                    for i in range(n)), capacity=2 * n + n // 2)
    times = Times([lambda s: 0.004 * s] * n, AffineTokens(0.009, 6e-5), up=lambda c, s: 1e-4 * (c + 1) + 1e-5 * s,
                  down=lambda c: 2e-4)
    alloc = lambda: FixedS(wl.capacity, n) if policy == "Fixed-S" else GoodspeedAllocator(wl.capacity, beta=0.5)
    return lambda: twin.simulate(wl, SyncRounds(), alloc(), times, acc, rounds=32_000 // n, seed=0)


def _fcfs(n: int, acc):
    wl = Workload("target-m", tuple(ClientSpec(("draft-xs", "draft-s")[i % 2], ("code", "math"), 2, 150,
                                               slo_class=(5, 10)[i % 2], alpha=0.7) for i in range(n)),
                  capacity=2 * n)
    times = Times([lambda s, i=i: 0.004 * (1 + i % 3) * s for i in range(n)], AffineTokens(0.009, 6e-5),
                  up=lambda c, s: 1e-3 + 1e-5 * s, down=lambda c: 1e-3)
    return lambda: twin.simulate(wl, FCFS(max_batch=4), GoodspeedAllocator(wl.capacity, beta=0.5), times, acc,
                                 rounds=8_000, seed=0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("build/bench/log_rows.csv"))
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    acc = twin.TraceAcceptance()
    cases = [(f"sync rounds, {p}", n, _sync(n, p, acc)) for n in (8, 64) for p in ("Fixed-S", "GOODSPEED")]
    cases += [("FCFS (max batch 4), SLO classes", 16, _fcfs(16, acc))]
    rows = []
    for name, n, run in cases:
        wall = cpu = math.inf
        for _ in range(args.repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            log = run()
            wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
        if list(log.columns) != LOG_COLUMNS:
            raise SystemExit(f"{name}: the twin's log has columns {list(log.columns)}, expected LOG_COLUMNS")
        rounds = len(log)
        rows.append(dict(case=name, clients=n, rounds=rounds, variant=SHIPPED,
                         wall_us_per_round=round(1e6 * wall / rounds, 3), cpu_us_per_round=round(1e6 * cpu / rounds, 3),
                         **report.host_columns("float64", 1)))
        print(f"{name:34s} N={n:3d} the twin {1e6 * wall / rounds:7.3f} us/round wall ({1e6 * cpu / rounds:7.3f} CPU)",
              flush=True)
    making = _making(args.repeats)
    per_round = min(r["wall_us_per_round"] for r in rows if r["variant"] == SHIPPED)
    base = making[BASELINE]
    for variant, us in making.items():
        rows.append(dict(case="making one row", variant=variant, wall_us_per_round=round(us, 4),
                         wall_vs_positional_list=round(us / base, 4), extra_pct_of_twin_round=round(100 * (us - base) / per_round, 2),
                         **report.host_columns("float64", 1)))
        print(f"making one row: {variant:38s} {1e3 * us:6.0f} ns  ({100 * (us - base) / per_round:+5.1f} % of the "
              f"fastest twin round, {per_round:.2f} us)", flush=True)
    report.save(rows, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
