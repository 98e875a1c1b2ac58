"""Measurements for venkatesha2025 on this machine, written to data/ (the notebook only reads them).

    python -m specedge.experiments.venkatesha2025.measure                 # everything below (~10 min on 2 CPU cores)
    python -m specedge.experiments.venkatesha2025.measure --only table9

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
import sys

import pandas as pd
import torch

from ... import hardware, paths
from ...plotting import write_csv
from ...solvers.venkatesha2025 import MODEL_SETS
from ...early_exit import concurrent, passes
from ...early_exit.zoo_adapters import load_sets

OUT = paths.DATA / "venkatesha2025"
BATCHES = (1, 2, 3, 4, 8, 12, 16, 32, 64)
SOURCE = "python -m specedge.experiments.venkatesha2025.measure (venkatesha2025 Table 5 layout, zoo models)"


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
    sets = load_sets(MODEL_SETS)
    if not sets:
        raise SystemExit("no zoo model set is built: run `make zoo` first")
    OUT.mkdir(parents=True, exist_ok=True)
    if "table9" in todo:
        first = next(iter(sets.values()))
        t9 = passes.batch_latency(first[2], first[3].target, BATCHES)
        t9.insert(0, "target", first[1])
        t9.insert(1, "draft", first[0])
        print(t9.to_string(index=False))
        write_csv(t9, OUT / "table9_batch_latency.csv")
    if "profile" in todo:
        p = passes.local_profile(sets, "cpu_local_fsd", source=SOURCE)
        print(pd.DataFrame(p.runtime).T.to_string())
    if "concurrent" in todo:
        prof = hardware.load_profile("venkatesha2025_paper")
        cc = concurrent.against_simulation_by_domain(sets, prof, n_prompts=args.prompts, max_new=args.max_new, time_scale=args.time_scale)
        print(cc[["set", "client", "domain", "miss_rate_sim", "miss_rate_concurrent",
                  "speedup_sd_fsd_sim", "speedup_sd_fsd_concurrent"]].round(3).to_string(index=False))
        write_csv(cc, OUT / "concurrent_vs_sim.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
