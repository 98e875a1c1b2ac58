"""The twin's validation runs: pinned real runs of two papers' settings, and their setups for ``serving.validation``.

Real runs (``measure``, under ``make profiles``; wall-clock times are committed to ``REAL_RUNS``, never
measured by a notebook): the gRPC server pinned to one core and every drafter to the other
(``run_real(pin=PIN)``), so that verification and drafting do not contend for a core, for
N in ``SIZES`` clients and

- tran2025 (GOODSPEED's setting): synchronous rounds, allocators GOODSPEED and Fixed-S, C = 6 N
  (Table I's 4 clients / C = 24), every client on draft-xs over two domains;
- li2026 (WISP's setting): batch formers WISP (Algorithm 1 on the eq (19) fit of the zoo target) and
  FCFS, drafters with the MLP stop rule and SLO classes 8 / 4 / 2 tok/s (``li2026_real``'s devices,
  cycled).

``SETUPS`` gives ``serving.validation`` each setting's clients and policy objects as data; ``section`` is a
notebook's Validation section (the replay and the stochastic twin against these runs, per metric and quantile).
"""
from __future__ import annotations

import pandas as pd

from .. import paths
from ..serving import policies as named, real_logs
from ..serving.allocation import FixedS
from ..serving.validation import (METRICS, QUANTILES, TOLERANCE, VERIFY, Setup, add_rows, compare, dispatch,  # noqa: F401
                                  draft_passes, drafting_time, figure, fit_times, floor_s, judge, mechanisms,
                                  metric_values, modelled_rounds, notes, per_pass, replay_measured, stochastic_note,
                                  stochastic_twin, turnaround, verify_model, worst)
from ..serving import validation as _validation
from ..serving.workload import Workload
from . import tran2025
from .li2026_real import devices, fitted

SIZES = (1, 2, 4, 8)
PIN = (0, 1)                 # server on core 0, drafters on core 1
REAL_RUNS = paths.DATA / "serving_validation" / "real_runs.csv"
POLICIES = {"tran2025": ("GOODSPEED", "Fixed-S"), "li2026": ("WISP", "FCFS")}
time_models = fit_times      # the name the paper drivers call


def _size(scale: str) -> tuple[int, int]:
    """(prompts per domain, tokens per prompt)."""
    return (2, 48) if scale == "full" else (1, 12)


def _tran2025_workload(n: int, scale: str = "full", seed: int = 0) -> Workload:
    """GOODSPEED's setting: N clients on draft-xs, C = 6 N (``tran2025.workload``)."""
    prompts, tokens = _size(scale)
    cfg = tran2025.Config(f"{n} clients, C={6 * n}", "zoo", n, 6 * n, tokens, ("draft-xs",))
    return tran2025.workload(cfg, prompts, tokens, seed=seed)


def _tran2025_policies(policy: str, n: int, seed: int = 0):
    """Synchronous rounds and tran2025's allocator ``policy`` (``tran2025.allocator``: its β)."""
    cfg = tran2025.Config("", "", n, _tran2025_workload(n, "ci").capacity, 1, ("draft-xs",))
    return named.former("sync"), tran2025.allocator(policy, cfg, seed)


def _li2026_workload(n: int, scale: str = "full", seed: int = 0) -> Workload:
    """WISP's setting: li2026_real's devices cycled (``li2026_real.devices``), C = 8 N."""
    return devices(n, *_size(scale), seed, capacity=8 * n)


# li2026's formers by policy: WISP on the zoo target's eq (19) fit, with no memory bound; FCFS as it comes
_LI2026_FORMERS = {"WISP": lambda seed: named.former("wisp", estimator=fitted(seed).estimator, delta=fitted(seed).delta,
                                                    memory_budget=1e12),
                   "FCFS": lambda seed: named.former("fcfs")}


def _li2026_policies(policy: str, n: int, seed: int = 0):
    """The batch former ``policy`` (``_LI2026_FORMERS``); every client drafts its own γ (``FixedS``, unused)."""
    if policy not in _LI2026_FORMERS:
        raise ValueError(f"policy: expected one of {POLICIES['li2026']} for li2026, got {policy!r}")
    return _LI2026_FORMERS[policy](seed), FixedS(8 * n, n)


SETUPS = {"tran2025": Setup(_tran2025_workload, _tran2025_policies), "li2026": Setup(_li2026_workload, _li2026_policies)}


def setup(paper: str) -> Setup:
    if paper not in SETUPS:
        raise ValueError(f"paper: expected one of {sorted(SETUPS)}, got {paper!r}")
    return SETUPS[paper]


def workload(paper: str, n: int, scale: str = "full", seed: int = 0) -> Workload:
    """The clients of one real run (module docstring)."""
    return setup(paper).workload(n, scale, seed)


def policies(paper: str, policy: str, n: int, seed: int = 0):
    """(batch former, allocator) of a run: fresh objects, the same classes in the real run and the replay."""
    return setup(paper).policies(policy, n, seed)


def measure(scale: str = "full", seed: int = 0, sizes=SIZES) -> pd.DataFrame:
    """Every real run, pinned (module docstring; ``serving.validation.measure``)."""
    return _validation.measure(SETUPS, POLICIES, sizes, scale, seed, PIN)


def load_real_runs(path=REAL_RUNS) -> dict[tuple[str, str, int], pd.DataFrame]:
    """The committed pinned runs by (paper, policy, N)."""
    return _validation.by_run(real_logs.read(path, "python -m specedge.experiments.serving_validation measure"))


def replay_run(runs: dict, key, verify: str = VERIFY[0], scale: str = "full", seed: int = 0, modelled: bool = False,
               model=None):
    """``serving.validation.replay_run`` of the run ``key`` = (paper, policy, N) in its paper's setup."""
    return _validation.replay_run(runs, key, setup(key[0]), verify, scale, seed, modelled, model)


def stochastic_run(runs: dict, key, acceptance, scale: str = "full", seed: int = 0, model=None) -> pd.DataFrame:
    """``serving.validation.stochastic_run`` of the run ``key`` in its paper's setup."""
    return _validation.stochastic_run(runs, key, setup(key[0]), acceptance, scale, seed, model)


def validation(runs: dict, paper: str, acceptance=None, scale: str = "full", seed: int = 0, sizes=SIZES):
    """``serving.validation.validation`` of ``paper``'s runs of N in ``sizes``, in its setup."""
    return _validation.validation(runs, paper, setup(paper), acceptance, scale, seed, sizes)


def section(paper: str, acceptance, out, scale: str = "full", seed: int = 0):
    """A notebook's Validation section for ``paper`` (``serving.validation.section``): the committed pinned runs
    (N in ``SIZES``, the first two at CI scale) against their replays and the stochastic twin."""
    return _validation.section(load_real_runs(), paper, setup(paper), acceptance, out, seed,
                               SIZES if scale == "full" else SIZES[:2])


if __name__ == "__main__":
    raise SystemExit(real_logs.measure_main("measure the pinned real runs the twin is validated against",
                                            measure, REAL_RUNS))
