"""The real serving system on the real pair, and its replay: one real-model point for the twin.

``python -m specedge.experiments.realpair_serving`` (needs ``make realpair``) runs one verification server
process holding the 1.5B target and one drafter process per client holding the 0.5B draft, gRPC on
127.0.0.1, greedy, the server pinned to core 0 and every drafter to core 1 (as the zoo's validation runs,
``serving_validation``), once per allocator, and writes the per-round log (``serving.real_logs``) to
``data/realpair/serving_runs.csv``; each client's output is checked token for token against the target's
own greedy autoregressive decoding. ``serve_replay`` compares those runs with their replays: each pass its
measured time (bookkeeping), and each pass predicted by eq (19) fitted on the other run.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .. import decoding, host
from ..serving import policies
from ..serving.metrics import verified
from ..zoo import DOMAINS
from ..zoo.realpair import DRAFT, TARGET

PIN = (0, 1)   # the server on core 0, every drafter on core 1 (as the zoo's validation runs)


def serve_workload(clients: int = 2, tokens: int = 24, capacity: int = 8, seed: int = 0):
    """The real serving runs' clients: client i drafts one prompt of zoo domain i (greedy)."""
    from ..serving.workload import ClientSpec, Workload
    return Workload(TARGET, tuple(ClientSpec(DRAFT, (DOMAINS[i % len(DOMAINS)],), 1, tokens, seed=seed)
                                  for i in range(clients)), capacity=capacity)


def serve(target, clients: int = 2, tokens: int = 24, capacity: int = 8, allocators=("goodspeed", "fixed"),
          seed: int = 0, pin=PIN, progress=print) -> pd.DataFrame:
    """Real multi-process serving runs on the pair (greedy), the server and the drafters pinned to one core
    each; raises if any client's tokens differ from the target's greedy autoregressive output (speculative
    decoding is exact, also across processes)."""
    from ..serving.run import prompt_stream, run_real

    wl = serve_workload(clients, tokens, capacity, seed)
    reference = [[decoding.autoregressive(target, p, tokens).tokens.tolist() for p in prompt_stream(spec)]
                 for spec in wl.clients]
    logs = []
    for name in allocators:
        t0 = time.perf_counter()
        log, outputs = run_real(wl, policies.former("sync"), policies.allocator(name, capacity=capacity, clients=clients, seed=seed), label=name, seed=seed,
                                target=target, rpc_timeout=600.0, idle_timeout=600.0, client_timeout=600.0, pin=pin)
        for c, want in enumerate(reference):
            if outputs[c] != want:
                raise AssertionError(f"{name}: client {c}: served {outputs[c]} != greedy AR {want}")
        ok = verified(log)
        progress(f"serve {name}: {clients} drafters, {int(ok.tokens.sum())} tokens in {time.perf_counter() - t0:.0f} s, "
                 f"acceptance {ok.accepted.sum() / max(ok.S.sum(), 1):.3f}; outputs equal greedy AR")
        logs.append(log.assign(n_clients=clients, capacity=capacity))
    return pd.concat(logs, ignore_index=True)


REPLAYS = ("measured passes", "eq (19) fitted on the other run")


def serve_replay(seed: int = 0) -> pd.DataFrame:
    """The committed real-pair serving runs against two replays, p50/p90/p99 per metric
    (``serving_validation.compare``), judged at the validation's 5 % / 10 % (``within``), column ``verify``:
    ``REPLAYS[0]`` takes each pass's measured time (``serving_validation.replay_measured``; with the runs' own
    rounds, only the queueing delay is modelled: bookkeeping); ``REPLAYS[1]`` predicts every pass with eq (19)
    fitted on the other run's passes (``runtime.fit_log_batches``), as the zoo's validation does."""
    from ..serving.replay import dispatch_latency, replay, turnaround_latency
    from ..serving.runtime import fit_log_batches, log_batches
    from . import serving_validation as sv
    from .realpair_card import load

    runs = load("serving_runs")
    runs["event"] = runs["event"].fillna("")
    logs = {pol: log.reset_index(drop=True) for pol, log in runs.groupby("policy", sort=False)}
    tables = []
    for verify in REPLAYS:
        pairs = {}
        for pol, log in logs.items():
            n, cap = int(log.n_clients.iloc[0]), int(log.capacity.iloc[0])
            tokens = int(verified(log).groupby("client").tokens.sum().max())
            args = (log, serve_workload(n, tokens, cap, seed), policies.former("sync"), policies.allocator(pol, capacity=cap, clients=n, seed=seed))
            d, t = float(np.median(dispatch_latency(log))), turnaround_latency(log)
            if verify == REPLAYS[0]:
                twin, _ = sv.replay_measured(*args, pol, d, t, seed)
            else:
                other = pd.concat([log_batches(g) for k, g in logs.items() if k != pol], ignore_index=True)
                twin = replay(*args, fit_log_batches(other, seed), label=pol, dispatch=d, turnaround=t, seed=seed)
            pairs[("realpair", pol, n)] = (log, twin)
        tables.append(sv.judge(sv.compare(pairs), sv.floor_s({k: v[0] for k, v in pairs.items()})).assign(verify=verify))
    return pd.concat(tables, ignore_index=True)


WAKE_UPS = ("median wake-up", "wake-up drawn per idle wake", "no wake-up")


def queueing_attribution(seed: int = 0, seeds: int = 5) -> pd.DataFrame:
    """The real-pair replay's queueing delay (each pass its measured time) against the real runs with the server's
    wake-up (``replay.dispatch_latency`` of the run) as the replay takes it (its median), drawn per idle wake from the
    measured values (the batch former's view of arrivals, ``serving.twin_attribution``) and left out: per policy,
    wake-up model and quantile, real, replay (``seeds`` seeds pooled) and their difference in % and in s."""
    from ..serving.replay import dispatch_latency, replay, turnaround_latency, MeasuredPasses
    from ..serving.runtime import fit_log_batches, log_batches
    from ..serving.twin_attribution import differences
    from .realpair_card import load

    runs = load("serving_runs")
    runs["event"] = runs["event"].astype(object).fillna("")
    rows = []
    for pol, log in runs.groupby("policy", sort=False):
        log = log.reset_index(drop=True)
        n, cap = int(log.n_clients.iloc[0]), int(log.capacity.iloc[0])
        wl = serve_workload(n, int(verified(log).groupby("client").tokens.sum().max()), cap, seed)
        dl, turn = dispatch_latency(log), turnaround_latency(log)
        for name, wake in zip(WAKE_UPS, (float(np.median(dl)), dl, 0.0)):
            logs = [replay(log, wl, policies.former("sync"), policies.allocator(pol, capacity=cap, clients=n, seed=seed),
                           MeasuredPasses(log, fit_log_batches(log_batches(log), seed)), label=pol, dispatch=wake,
                           turnaround=turn, seed=s) for s in range(seeds)]
            rows += [dict(policy=pol, n_clients=n, wake_up=name, **r) for r in differences(log, logs) if r["metric"] == "queue_s"]
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    import argparse

    import torch

    from ..serving import real_logs
    from ..zoo import load_model
    from .realpair_card import FILES

    ap = argparse.ArgumentParser(prog="python -m specedge.experiments.realpair_serving", description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of this process (the greedy reference)")
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="both models' weights; auto: bfloat16 where this CPU multiplies it natively, else float32")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    real_logs.save(serve(load_model(TARGET, host.torch_dtype(args.dtype)), clients=args.clients, tokens=args.tokens), FILES["serving_runs"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
