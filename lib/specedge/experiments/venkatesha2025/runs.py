"""venkatesha2025: the zoo runs behind Table 6 (Table 2's adapters and agreement: ``early_exit.zoo_adapters``).

- ``table6_runs`` (Table 6): greedy SD with early-exit verification of each model set on held-out prompts of
  the zoo domain standing in for each benchmark (``early_exit.collect_traces``), then the FSD protocol
  simulated on every client's Table 5 timings (``early_exit.sim.evaluate``); ``variants`` re-simulates the
  same traces with options beyond the paper.
"""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from ... import early_exit, zoo
from ...early_exit import sim
from .tables import CLIENTS

# the paper's six benchmarks and the zoo domain standing in for each (MT-bench and Alpaca share the chat
# domain: MT-bench takes its first n_prompts held-out prompts, Alpaca the next n_prompts)
BENCHMARKS = {"MT-bench": ("chat", 0), "HumanEval": ("code", 0), "GSM8K": ("math", 0), "Alpaca": ("chat", 1),
              "CNN/DM": ("summarize", 0), "NQ": ("qa", 0)}
METRICS = ["speedup_ar_sd", "speedup_sd_fsd", "tau", "stated_miss_rate", "stated_avg_ee", "stated_avg_ee_depth", "miss_rate", "avg_hit_exit", "avg_hit_exit_depth", "avg_ee",
           "avg_ee_depth"]


def table6_runs(model_sets: Mapping[str, tuple[str, str]], prof, n_prompts: int, max_new: int, seed: int):
    """Traces per (model set, benchmark), the loaded models per set, and Table 6 per benchmark (one row per
    set x client x benchmark, ``sim.evaluate``'s metrics) with its average over the benchmarks."""
    traces, models = {}, {}
    for set_name, (dname, tname) in model_sets.items():
        draft, target, tok = zoo.load_pair(dname, tname)
        ee, _ = early_exit.load(target, early_exit.ADAPTERS / tname)
        models[set_name] = (draft, ee, tok)
        for bench, (domain, part) in BENCHMARKS.items():
            texts = zoo.eval_prompts(domain, (part + 1) * n_prompts)[part * n_prompts:]
            prompts = [tok(p)["input_ids"] for p in texts]
            traces[set_name, bench] = early_exit.collect_traces(draft, ee, prompts, max_new, gamma=4,
                                                                desc=f"{set_name}/{bench}")
    rows = []
    for (set_name, bench), tr in traces.items():
        for client in CLIENTS:
            cfg = sim.FSDConfig.from_profile(prof, f"{client}_{set_name}", seed=seed)
            rows.append(dict(set=set_name, pair="/".join(model_sets[set_name]), client=client, benchmark=bench,
                             domain=BENCHMARKS[bench][0], threads=cfg.threads, **sim.evaluate(tr, cfg)))
    t6 = pd.DataFrame(rows)
    avg = t6.groupby(["set", "client"], sort=False)[METRICS].mean().reset_index()
    return traces, models, t6, avg


def variants(traces: Mapping, prof, seed: int) -> pd.DataFrame:
    """Beyond the paper: skip exits whose outcome is already queued or pre-drafted (``dedupe``), and let a
    final whose pre-draft is still running wait for it (``running="wait"``: a partial hit); mean per set x client."""
    kinds = {"dedupe": dict(dedupe=True), "wait for a running pre-draft": dict(running="wait")}
    dd = pd.DataFrame([dict(variant=name, set=s_, client=c, benchmark=b,
                            **sim.evaluate(tr_, sim.FSDConfig.from_profile(prof, f"{c}_{s_}", seed=seed, **kw)))
                       for name, kw in kinds.items() for (s_, b), tr_ in traces.items() for c in CLIENTS])
    return dd.groupby(["variant", "set", "client"], sort=False)[["speedup_sd_fsd", "miss_rate"]].mean().reset_index()
