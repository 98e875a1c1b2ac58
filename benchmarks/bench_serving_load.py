"""Load benchmark of the real serving run: N drafter processes (default 32) against one server with the
zoo's smallest pair (target-m, draft-xs), greedy, Fixed-S, FCFS; prints the wall time, the peak memory
of the run (the server process plus every drafter, summed proportional set size, sampled every 0.5 s)
and the tokens of every client, and writes one CSV row. Not run by CI (minutes, GBs): run it by hand,

    python benchmarks/bench_serving_load.py --clients 32 --out figures/bench/serving_load.csv
"""
from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path


import report
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.real.run import DRAFTER_BYTES, available_memory, failed_clients, run_real, summary
from specedge.serving.workload import ClientSpec, Workload

DOMAINS = ("chat", "code", "math", "qa", "sql", "summarize")


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return out


def _forkservers() -> list[int]:
    """The multiprocessing forkserver is reparented; find it (and its drafters) by its command line."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    cmd = fh.read()
                with open(f"/proc/{d}/status") as fh:
                    ppid_line = [x for x in fh if x.startswith("PPid:")][0]
            except OSError:
                continue
            if b"multiprocessing.forkserver" in cmd and b"specedge.serving.real.drafter" in cmd \
                    and int(ppid_line.split()[1]) in (1, os.getpid()):
                pids.append(int(d))
    return pids


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    n = args.clients
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", (DOMAINS[i % 6],), 1, args.tokens) for i in range(n)),
                  capacity=2 * n)
    peak, stop = [0], threading.Event()

    def sample():
        while not stop.wait(0.5):
            pids = set(_tree(os.getpid()))
            for fs in _forkservers():
                pids |= set(_tree(fs))
            peak[0] = max(peak[0], sum(_pss(p) for p in pids))
    avail = available_memory()
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    log, outputs = run_real(wl, FCFS(), FixedS(2 * n, n), label="Fixed-S", idle_timeout=120.0, rpc_timeout=300.0)
    wall = time.perf_counter() - t0
    stop.set()
    t.join()
    ok = log[log.event == ""]
    failed = failed_clients(log)
    print(f"{n} drafters: {wall:.1f} s wall (model loading included), peak memory {peak[0] / 1e9:.2f} GB "
          f"(PSS of server + drafters; {avail / 1e9:.1f} GB were available; the up-front estimate is "
          f"{n * DRAFTER_BYTES / 1e9:.1f} GB), {int(ok.tokens.sum())} tokens, {len(outputs)} of {n} clients "
          f"finished, {len(failed)} failed, load average {os.getloadavg()[0]:.1f}")
    for line in summary(log, outputs, n)[:1]:
        print(line)
    short = [c for c in range(n) if sum(map(len, outputs.get(c, []))) != args.tokens]
    print("every client got its tokens" if not short else f"clients without all tokens: {short}")
    if args.out:
        row = dict(clients=n, tokens_per_client=args.tokens, wall_s=round(wall, 1), peak_pss_gb=round(peak[0] / 1e9, 2),
                   tokens=int(ok.tokens.sum()), finished=len(outputs), failed=len(failed),
                   round_p50_ms=round(1e3 * ok.t_round.quantile(.5), 1), round_p99_ms=round(1e3 * ok.t_round.quantile(.99), 1),
                   cores=os.cpu_count(), **report.host_columns("float32", 1))   # one torch thread per process
        report.save([row], args.out)
    return 0 if not short and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
