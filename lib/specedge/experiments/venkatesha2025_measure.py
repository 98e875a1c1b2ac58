"""Measurements for venkatesha2025 on this machine, written to data/ (the notebook only reads them).

    python -m specedge.experiments.venkatesha2025_measure                 # everything below (~10 min on 2 CPU cores)
    python -m specedge.experiments.venkatesha2025_measure --only table9

- ``table9``: forward latency vs batch size (1..64) of a zoo target verifying γ + 1 = 5 tokens and of a
  zoo draft drafting one token, both after a cached 64-token context (Table 9) ->
  ``data/venkatesha2025/table9_batch_latency.csv``.
- ``profile``: this machine as a Table 5 row per model set (T_d for γ = 4 tokens, T_t a verification
  pass with all early exits evaluated, c, T_c = measured localhost TCP round trip of a 1 kB message,
  threads = CPU cores) -> ``data/profiles/cpu_local_fsd.yaml``.
- ``concurrent``: the FSD protocol run for real (``early_exit.concurrent``) on the zoo next to its simulation
  (``early_exit.sim``) on the same prompts, per model set, client timing and domain ->
  ``data/venkatesha2025/concurrent_vs_sim.csv``.

Timings are the fastest of repeats (``specedge.timing``); the machine is shared, so expect a few percent of noise.
"""
from __future__ import annotations

import argparse
import os
import sys
from datetime import date

import pandas as pd
import torch
from tqdm.auto import tqdm

from .. import early_exit, hardware, paths, profiling
from ..plotting import write_csv
from ..solvers.venkatesha2025 import MODEL_SETS
from ..early_exit import concurrent, sim
from ..early_exit.passes import batch_latency, draft_time, verify_time

OUT = paths.DATA / "venkatesha2025"
BATCHES = (1, 2, 3, 4, 8, 12, 16, 32, 64)


def _load_sets():
    from .. import zoo
    sets = {}
    for name, (dname, tname) in MODEL_SETS.items():
        if not ((paths.ZOO / dname / "card.json").exists() and (early_exit.ADAPTERS / tname / "meta.json").exists()):
            print(f"[measure] {name}: {dname}/{tname} or its adapters not built yet (make zoo), skipped")
            continue
        draft, target, tok = zoo.load_pair(dname, tname)
        ee, _ = early_exit.load(target, early_exit.ADAPTERS / tname)
        sets[name] = (dname, tname, draft, ee, tok)
    return sets


def local_profile(sets, name: str = "cpu_local_fsd", gamma: int = 4) -> hardware.Profile:
    rtt = profiling.loopback_rtt()
    runtime = {}
    for set_name, (dname, tname, draft, ee, _) in sets.items():
        td, tt = draft_time(draft, gamma), verify_time(ee, gamma)
        runtime[f"cpu_{set_name}"] = dict(model=f"zoo {dname}/{tname} on this CPU (Table 5 layout)", kind="draft_verify_comm",
                                          gamma=gamma,
                                          T_d_s=round(td, 6), T_t_s=round(tt, 6), c=round(td / gamma / tt, 4),
                                          T_c_s=round(rtt, 6), threads=os.cpu_count() or 1)
    data = dict(name=name, source="python -m specedge.experiments.venkatesha2025_measure (venkatesha2025 Table 5 layout, zoo models)",
                description="This machine as both client and server: drafting gamma = 4 tokens (T_d_s), one "
                            "verification pass with all early exits (T_t_s), localhost TCP round trip of 1 kB (T_c_s).",
                measured=dict(device=f"CPU, {os.cpu_count()} cores, torch {torch.__version__}, "
                                     f"{torch.get_num_threads()} threads", date=str(date.today())),
                devices={"cpu": {"description": "this machine"}}, links={}, runtime=runtime)
    hardware.save_profile(data)
    return hardware.load_profile(name)


def concurrent_vs_sim(sets, prof, clients=("jetson", "rtx"), domains=None, n_prompts: int = 2,
                      max_new: int = 32, time_scale: float = 0.2, seed: int = 0) -> pd.DataFrame:
    from .. import zoo
    domains = list(zoo.DOMAINS if domains is None else domains)
    rows = []
    jobs = [(s, c, d) for s in sets for c in clients for d in domains]
    for set_name, client, domain in tqdm(jobs, desc="concurrent vs simulated"):
        _, _, draft, ee, tok = sets[set_name]
        prompts = [tok(p)["input_ids"] if isinstance(p, str) else p for p in zoo.eval_prompts(domain, n_prompts)]
        traces = early_exit.collect_traces(draft, ee, prompts, max_new, progress=False)
        cfg = sim.FSDConfig.from_profile(prof, f"{client}_{set_name}", seed=seed)
        sim_sd, sim_fsd = sim.simulate(traces, cfg, "sd"), sim.simulate(traces, cfg, "fsd")
        real_sd = concurrent.run(draft, ee, prompts, max_new, cfg, "sd", time_scale=time_scale)
        real_fsd = concurrent.run(draft, ee, prompts, max_new, cfg, "fsd", time_scale=time_scale)
        rows.append(dict(set=set_name, client=client, domain=domain, prompts=len(prompts), tokens=sim_fsd.tokens,
                         checks=sim_fsd.checks, threads=cfg.threads, time_scale=time_scale,
                         miss_rate_sim=sim_fsd.miss_rate, miss_rate_concurrent=real_fsd.miss_rate,
                         partial_sim=sim_fsd.partial_hits, partial_concurrent=real_fsd.partial_hits,
                         speedup_sd_fsd_sim=sim_sd.time_s / sim_fsd.time_s,
                         speedup_sd_fsd_concurrent=real_sd.time_s / real_fsd.time_s,
                         sd_time_sim_s=sim_sd.time_s, sd_time_concurrent_s=real_sd.time_s,
                         fsd_time_sim_s=sim_fsd.time_s, fsd_time_concurrent_s=real_fsd.time_s))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="venkatesha2025 measurements on this machine (writes data/)")
    ap.add_argument("--only", choices=("table9", "profile", "concurrent"), nargs="*", default=None)
    ap.add_argument("--prompts", type=int, default=2, help="prompts per domain for the concurrent run")
    ap.add_argument("--max-new", type=int, default=32)
    ap.add_argument("--time-scale", type=float, default=0.2)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads for the timings (1: a shared 2-core machine oversubscribes otherwise)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    todo = set(args.only or ("table9", "profile", "concurrent"))
    sets = _load_sets()
    if not sets:
        raise SystemExit("no zoo model set is built: run `make zoo` first")
    OUT.mkdir(parents=True, exist_ok=True)
    if "table9" in todo:
        first = next(iter(sets.values()))
        t9 = batch_latency(first[2], first[3].target, BATCHES)
        t9.insert(0, "target", first[1])
        t9.insert(1, "draft", first[0])
        print(t9.to_string(index=False))
        write_csv(t9, OUT / "table9_batch_latency.csv")
    if "profile" in todo:
        p = local_profile(sets)
        print(pd.DataFrame(p.runtime).T.to_string())
    if "concurrent" in todo:
        prof = hardware.load_profile("venkatesha2025_paper")
        cc = concurrent_vs_sim(sets, prof, n_prompts=args.prompts, max_new=args.max_new, time_scale=args.time_scale)
        print(cc[["set", "client", "domain", "miss_rate_sim", "miss_rate_concurrent",
                  "speedup_sd_fsd_sim", "speedup_sd_fsd_concurrent"]].round(3).to_string(index=False))
        write_csv(cc, OUT / "concurrent_vs_sim.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
