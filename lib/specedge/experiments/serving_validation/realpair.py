"""The real serving system on the real pair, and its replay: one real-model point for the twin.

``python -m specedge.experiments.serving_validation.realpair`` (needs ``make realpair``) runs one verification server
process holding the 1.5B target and one drafter process per client holding the 0.5B draft, gRPC on
127.0.0.1, greedy, the server pinned to core 0 and every drafter to core 1 (as the zoo's validation runs,
``serving_validation``), once per allocator, and writes the per-round log (``serving.real.real_logs``) to
``data/realpair/serving_runs.csv``; each client's output is checked token for token against the target's
own greedy autoregressive decoding. ``--backend llamacpp`` drafts on llama.cpp instead, with the draft's
Q4_K_M GGUF file (``make llamacpp``; ``specedge.llamacpp``), the edge's own runtime; with both backends
(``--backend transformers llamacpp``) the runs go, one after the other under the same conditions, to
``data/realpair/serving_runs_llamacpp.csv`` with a ``backend`` column. ``serve_replay`` compares those runs
with their replays: each pass its measured time (bookkeeping), and each pass predicted by eq (19) fitted on
the other runs.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ... import decoding, host, paths
from ...serving import policies
from ...serving.log import verified
from ...zoo.corpus import DOMAINS
from ...zoo.realpair import DRAFT, TARGET

PIN = (0, 1)   # the server on core 0, every drafter on core 1 (as the zoo's validation runs)
# the drafter's runtimes: transformers holds the float32 safetensors of `make realpair`; llama.cpp the Q4_K_M GGUF
# file that `make realpair` joined and checked (the shipped weights, before any conversion)
BACKENDS = {"transformers": "float32, transformers", "llamacpp": "Q4_K_M GGUF, llama.cpp"}


def default_gguf() -> Path:
    """The draft's Q4_K_M GGUF file as `make realpair` joins and checks it, in ``models/``."""
    return paths.MODELS / f"{DRAFT}.gguf"

DRAFTS_PER_CLIENT = 4   # C = 4 N: Fixed-S gives every client γ = 4, the pair's traced window


def serve_workload(clients: int = 2, tokens: int = 24, capacity: int = 8, seed: int = 0):
    """The real serving runs' clients: client i drafts one prompt of zoo domain i (greedy)."""
    from ...serving.workload import ClientSpec, Workload
    return Workload(TARGET, tuple(ClientSpec(DRAFT, (DOMAINS[i % len(DOMAINS)],), 1, tokens, seed=seed)
                                  for i in range(clients)), capacity=capacity)


def serve(target, clients: int = 2, tokens: int = 24, capacity: int = 8, allocators=("goodspeed", "fixed"),
          seed: int = 0, pin=PIN, progress=print, backend: str = "transformers", gguf=None,
          reference: dict | None = None) -> pd.DataFrame:
    """Real multi-process serving runs on the pair (greedy), the server and the drafters pinned to one core
    each; raises if any client's tokens differ from the target's greedy autoregressive output (speculative
    decoding is exact, also across processes and runtimes). ``backend`` (``BACKENDS``): the drafters' runtime,
    ``gguf`` the draft's file for llama.cpp (default ``default_gguf()``). ``reference``: {prompt: greedy tokens}, filled and reused across
    calls (the target's own decoding of a prompt is computed once). The log gets ``n_clients``, ``capacity``,
    ``backend`` and ``load_1min`` (the host's load when each run started)."""
    from ...serving.real.drafter import prompt_stream
    from ...serving.real.run import run_real

    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {sorted(BACKENDS)}, got {backend!r}")
    wl = serve_workload(clients, tokens, capacity, seed)
    reference = {} if reference is None else reference

    def greedy(p: list[int]) -> list[int]:
        if (tuple(p), tokens) not in reference:
            reference[(tuple(p), tokens)] = decoding.autoregressive(target, p, tokens).tokens.tolist()
        return reference[(tuple(p), tokens)]

    want = [[greedy(p) for p in prompt_stream(spec)] for spec in wl.clients]
    logs = []
    for name in allocators:
        t0, load = time.perf_counter(), os.getloadavg()[0]
        log, outputs = run_real(wl, policies.former("sync"), policies.allocator(name, capacity=capacity, clients=clients, seed=seed), label=name, seed=seed,
                                target=target, rpc_timeout=600.0, idle_timeout=600.0, client_timeout=600.0, pin=pin,
                                draft_gguf=(gguf or default_gguf()) if backend == "llamacpp" else None)
        for c, ref in enumerate(want):
            if outputs.get(c) != ref:
                raise AssertionError(f"{name} ({backend} drafters): client {c}: served {outputs.get(c)} != greedy AR {ref}")
        ok = verified(log)
        progress(f"serve {name}: {clients} {backend} drafters, {int(ok.tokens.sum())} tokens in {time.perf_counter() - t0:.0f} s, "
                 f"acceptance {ok.accepted.sum() / max(ok.S.sum(), 1):.3f}, drafting p50 {1e3 * ok.t_draft_cpu.median():.1f} ms CPU "
                 f"per round; outputs equal greedy AR")
        logs.append(log.assign(n_clients=clients, capacity=capacity, backend=backend, load_1min=load))
    return pd.concat(logs, ignore_index=True)


def runs(name: str = "serving_runs") -> dict[tuple[str, str, int], pd.DataFrame]:
    """The committed real-pair serving runs ``name`` (a ``zoo.realpair.FILES`` key) by run: {(setting, allocator,
    clients): log}; the setting is ``"realpair"``, or ``"realpair, <backend> drafter"`` in a file with several
    drafter backends."""
    from ...zoo.realpair import load

    frame = load(name)
    frame["event"] = frame["event"].astype(object).fillna("")
    by = ["policy", "n_clients"] + (["backend"] if "backend" in frame else [])
    out = {}
    for key, log in frame.groupby(by, sort=False):
        pol, n, *backend = key
        out[(f"realpair, {backend[0]} drafter" if backend else "realpair", pol, int(n))] = log.reset_index(drop=True)
    return out


REPLAYS = ("measured passes", "eq (19) fitted on the other run")


def serve_replay(seed: int = 0, name: str = "serving_runs") -> pd.DataFrame:
    """The committed real-pair serving runs ``name`` (``runs``) against two replays, p50/p90/p99 per metric
    (``validation.compare``), judged at the validation's 5 % / 10 % (``within``), column ``verify``:
    ``REPLAYS[0]`` takes each pass's measured time (``validation.replay_measured``; with the runs' own
    rounds, only the queueing delay is modelled: bookkeeping); ``REPLAYS[1]`` predicts every pass with eq (19)
    fitted on the other runs' passes (``runtime.fit_log_batches``), as the zoo's validation does."""
    from ...serving.log import dispatch_latency, turnaround_latency
    from ...serving.sim.replay import replay
    from ...serving.timemodels.runtime import fit_log_batches, log_batches
    from ...serving.analysis import validation

    logs = runs(name)
    tables = []
    for verify in REPLAYS:
        pairs = {}
        for key, log in logs.items():
            _, pol, n = key
            cap = int(log.capacity.iloc[0])
            tokens = int(verified(log).groupby("client").tokens.sum().max())
            args = (log, serve_workload(n, tokens, cap, seed), policies.former("sync"), policies.allocator(pol, capacity=cap, clients=n, seed=seed))
            d, t = float(np.median(dispatch_latency(log))), turnaround_latency(log)
            if verify == REPLAYS[0]:
                twin, _ = validation.replay_measured(*args, pol, d, t, seed)
            else:
                other = pd.concat([log_batches(g) for k, g in logs.items() if k != key], ignore_index=True)
                twin = replay(*args, fit_log_batches(other, seed), label=pol, dispatch=d, turnaround=t, seed=seed)
            pairs[key] = (log, twin)
        tables.append(validation.judge(validation.compare(pairs), validation.floor_s({k: v[0] for k, v in pairs.items()})).assign(verify=verify))
    return pd.concat(tables, ignore_index=True)


WAKE_UPS = ("median wake-up", "wake-up drawn per idle wake", "no wake-up")


def queueing_attribution(seed: int = 0, seeds: int = 5, name: str = "serving_runs") -> pd.DataFrame:
    """The real-pair replay's queueing delay (each pass its measured time) against the real runs ``name``
    (``runs``) with the server's wake-up (``replay.dispatch_latency`` of the run) as the replay takes it (its
    median), drawn per idle wake from the measured values (the batch former's view of arrivals,
    ``serving.analysis.twin_attribution``) and left out: per run, wake-up model and quantile, real, replay (``seeds``
    seeds pooled) and their difference in % and in s; a file with several drafter backends adds ``setting``."""
    from ...serving.log import dispatch_latency, turnaround_latency
    from ...serving.sim.replay import replay, MeasuredPasses
    from ...serving.timemodels.runtime import fit_log_batches, log_batches
    from ...serving.analysis.twin_attribution import differences

    rows = []
    for (setting, pol, n), log in runs(name).items():
        cap = int(log.capacity.iloc[0])
        wl = serve_workload(n, int(verified(log).groupby("client").tokens.sum().max()), cap, seed)
        dl, turn = dispatch_latency(log), turnaround_latency(log)
        tag = {} if setting == "realpair" else {"setting": setting}
        for wake_name, wake in zip(WAKE_UPS, (float(np.median(dl)), dl, 0.0)):
            logs = [replay(log, wl, policies.former("sync"), policies.allocator(pol, capacity=cap, clients=n, seed=seed),
                           MeasuredPasses(log, fit_log_batches(log_batches(log), seed)), label=pol, dispatch=wake,
                           turnaround=turn, seed=s) for s in range(seeds)]
            rows += [dict(**tag, policy=pol, n_clients=n, wake_up=wake_name, **r) for r in differences(log, logs)
                     if r["metric"] == "queue_s"]
    return pd.DataFrame(rows)


def drafting(name: str = "serving_runs_llamacpp") -> pd.DataFrame:
    """Per run of ``name`` (``runs``): rounds, tokens, acceptance (accepted / drafted), tokens/s per client (its
    tokens over its summed round times, the median over clients), round time p50/p90, verification p50 and the
    drafters' own drafting time per round (CPU and wall, p50), with the load at the run's start."""
    rows = []
    for (setting, pol, n), log in runs(name).items():
        ok = verified(log)
        per_client = ok.groupby("client").apply(lambda g: g.tokens.sum() / g.t_round.sum(), include_groups=False)
        rows.append(dict(setting=setting, policy=pol, n_clients=n, rounds=len(ok), tokens=int(ok.tokens.sum()),
                         acceptance=ok.accepted.sum() / ok.S.sum(), tokens_per_s=float(per_client.median()),
                         round_p50_s=ok.t_round.median(), round_p90_s=ok.t_round.quantile(0.9),
                         verify_p50_s=ok.t_verify.median(), draft_cpu_p50_s=ok.t_draft_cpu.median(),
                         draft_wall_p50_s=ok.t_draft.median(),
                         load_1min=float(log.load_1min.iloc[0]) if "load_1min" in log else float("nan")))
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    import argparse

    import torch

    from ... import zoo
    from ...serving.real import real_logs
    from ...zoo.realpair import FILES

    ap = argparse.ArgumentParser(prog="python -m specedge.experiments.serving_validation.realpair", description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[2], help="drafters per run (several: one run each)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--allocators", nargs="+", choices=("goodspeed", "fixed"), default=["goodspeed", "fixed"])
    ap.add_argument("--backend", nargs="+", choices=sorted(BACKENDS), default=["transformers"],
                    help="the drafters' runtime(s): transformers (float32) and/or llamacpp (the Q4_K_M GGUF file "
                         "--gguf; make llamacpp)")
    ap.add_argument("--gguf", type=Path, default=None,
                    help=f"the draft's GGUF file for llamacpp (default models/{DRAFT}.gguf, from make realpair)")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"the log (default {FILES['serving_runs']} for transformers alone, else "
                         f"{FILES['serving_runs_llamacpp']})")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of this process (the greedy reference)")
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="the target's weights; auto: bfloat16 where this CPU multiplies it natively, else float32 "
                         "(the transformers drafters are float32)")
    args = ap.parse_args(argv)
    for flag in ("tokens", "threads"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag} must be >= 1, got {getattr(args, flag)}")
    if min(args.clients) < 1:
        ap.error(f"--clients must be >= 1 each, got {args.clients}")
    for name in (TARGET, DRAFT):   # the draft's directory holds the tokenizer every backend encodes prompts with
        try:
            zoo.resolve(name)
        except FileNotFoundError as err:
            ap.error(str(err))
    args.gguf = args.gguf or default_gguf()
    if "llamacpp" in args.backend:
        from ...llamacpp import check_drafter
        try:
            check_drafter(args.gguf)
        except (ValueError, FileNotFoundError, ImportError) as err:
            ap.error(f"--gguf: {err}")
    out = args.out or FILES["serving_runs" if args.backend == ["transformers"] else "serving_runs_llamacpp"]
    torch.set_num_threads(args.threads)
    target, reference, logs = zoo.load_model(TARGET, host.torch_dtype(args.dtype)), {}, []
    for n in args.clients:
        for backend in args.backend:
            logs.append(serve(target, clients=n, tokens=args.tokens, capacity=DRAFTS_PER_CLIENT * n,
                              allocators=args.allocators, backend=backend, gguf=args.gguf, reference=reference))
    log = pd.concat(logs, ignore_index=True)
    if args.backend == ["transformers"]:
        log = log.drop(columns="backend")   # one backend: the file's format of the transformers runs
    else:
        log = log.assign(target_dtype=str(target.dtype).removeprefix("torch."))
    print(f"{len(log)} rows -> {real_logs.save(log, out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
