"""The twin validated against the real serving system (issue 18): pinned real runs and their replay.

Real runs (``measure``, under ``make profiles``; wall-clock times are committed to ``REAL_RUNS``, never
measured by a notebook): the gRPC server pinned to one core and every drafter to the other
(``run_real(pin=PIN)``), so that verification and drafting do not contend for a core, for
N in ``SIZES`` clients and

- tran2025 (GOODSPEED's setting): synchronous rounds, allocators GOODSPEED and Fixed-S, C = 6 N
  (Table I's 4 clients / C = 24), every client on draft-xs over two domains;
- li2026 (WISP's setting): batch formers WISP (Algorithm 1 on the eq (19) fit of the zoo target) and
  FCFS, drafters with the MLP stop rule and SLO classes 8 / 4 / 2 tok/s (``li2026_real``'s devices,
  cycled).

The replay (``serving.replay``) re-runs each real run's own outcomes through the same policy objects
with a verify-time model fitted on the other runs' batches (leave one run out), and ``metrics`` computes
the compared quantities with one definition for both systems: per-round time, queueing delay,
per-client goodput and (WISP's setting) per-client SLO attainment, at p50 / p90 / p99.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import paths

SIZES = (1, 2, 4, 8)
PIN = (0, 1)                 # server on core 0, drafters on core 1
REAL_RUNS = paths.DATA / "serving_validation" / "real_runs.csv"
POLICIES = {"tran2025": ("GOODSPEED", "Fixed-S"), "li2026": ("WISP", "FCFS")}
QUANTILES = (50, 90, 99)


def _size(scale: str) -> tuple[int, int]:
    """(prompts per domain, tokens per prompt)."""
    return (2, 48) if scale == "full" else (1, 12)


def workload(paper: str, n: int, scale: str = "full", seed: int = 0):
    """The clients of one real run (module docstring)."""
    from ..serving.workload import ClientSpec, Workload

    prompts, tokens = _size(scale)
    if paper == "tran2025":
        from . import tran2025 as t

        cfg = t.Config(f"{n} clients, C={6 * n}", "zoo", n, 6 * n, tokens, ("draft-xs",))
        return t.workload(cfg, prompts, tokens, seed=seed)
    if paper == "li2026":
        from . import li2026 as ex
        from .li2026_real import CLASSES

        k = len(CLASSES)
        return Workload("target-m", tuple(
            ClientSpec(ex.DRAFTS[i % k], (ex.DOMAINS[i % len(ex.DOMAINS)],), prompts, tokens, 8, "predictor:mlp",
                       0.0, CLASSES[i % k], ex.alpha(ex.DRAFTS[i % k], True), seed=seed) for i in range(n)),
            capacity=8 * n, cache=True)
    raise ValueError(f"paper: expected one of {sorted(POLICIES)}, got {paper!r}")


def policies(paper: str, policy: str, n: int, seed: int = 0):
    """(batch former, allocator) of a run: fresh objects, the same classes in the real run and the replay."""
    from ..serving.allocation import FixedS
    from ..serving.batching import FCFS, SyncRounds

    if paper == "tran2025":
        from . import tran2025 as t

        wl = workload(paper, n, "ci")
        cfg = t.Config("", "", n, wl.capacity, 1, ("draft-xs",))
        return SyncRounds(), t.allocator(policy, cfg, seed)
    if policy == "FCFS":
        return FCFS(), FixedS(8 * n, n)
    if policy == "WISP":
        from ..serving.wisp_batching import WISPBatcher
        from .li2026_real import fitted

        fit = fitted(seed)
        return WISPBatcher(fit.estimator, delta=fit.delta, memory_budget=1e12), FixedS(8 * n, n)
    raise ValueError(f"policy: expected one of {POLICIES[paper]} for {paper}, got {policy!r}")


def measure(scale: str = "full", seed: int = 0, sizes=SIZES) -> pd.DataFrame:
    """Every real run, pinned (module docstring); one table with columns paper and n_clients added."""
    from ..serving.run import run_real

    logs = []
    for paper, pols in POLICIES.items():
        for n in sizes:
            for pol in pols:
                former, alloc = policies(paper, pol, n, seed)
                log, _ = run_real(workload(paper, n, scale, seed), former, alloc, label=pol, seed=seed, pin=PIN)
                if (log["event"] != "").any():
                    raise RuntimeError(f"real run {paper} {pol} N={n}: unexpected events "
                                       f"{log[log['event'] != ''].event.tolist()}")
                print(f"{paper} {pol} N={n}: {len(log)} rounds, {log['end'].max():.1f} s", flush=True)
                logs.append(log.assign(paper=paper, n_clients=n))
    return pd.concat(logs, ignore_index=True)


def load_real_runs(path=REAL_RUNS) -> dict[tuple[str, str, int], pd.DataFrame]:
    """The committed pinned runs by (paper, policy, N)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: `make profiles` measures it "
                                "(python -m specedge.experiments.serving_validation measure)")
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    df["event"] = df["event"].fillna("")
    return {(p, pol, int(n)): g.reset_index(drop=True)
            for (p, pol, n), g in df.groupby(["paper", "policy", "n_clients"], sort=False)}


if __name__ == "__main__":
    from ..serving import real_logs

    raise SystemExit(real_logs.measure_main("measure the pinned real runs the twin is validated against",
                                            measure, REAL_RUNS))
