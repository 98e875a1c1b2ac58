"""Speedup against the draft length γ on measured traces (venkatesha2025 Fig 4b), with prompt-bootstrap intervals.

On a measured pair every γ has its own traces (drafting γ tokens changes what is accepted and which exits agree) and,
for this CPU, its own passes. ``sweep`` evaluates each γ under each timing source (``sim.timing_sources``) by the FSD
simulation (``sim.simulate``), with ``paired_interval`` the interval of a difference between two γ.
``collect`` measures the traces and passes at each γ (resumable per γ).

Intervals resample whole prompts, the same draws at every γ (the prompts are the same at every γ): the simulation runs
the prompts one after another and the sources' queues (priority) draw no random numbers, so each prompt's share of the
simulated time is its own, and a replicate's time is the sum of its prompts' shares.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ..plotting import write_csv
from . import collect_trace_frames, sim
from .passes import pair_passes

__all__ = ["collect", "sequences_by_prompt", "sweep", "paired_interval"]

KEYS = ("speedup_ar_sd", "speedup_sd_fsd", "tau", "stated_miss_rate")


def _append(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([f for f in (old, new) if len(f)], ignore_index=True).sort_values("gamma", kind="stable")


def collect(draft, ee, prompts: Mapping, max_new: int, gammas, eos_token_id, rounds_file: Path, passes_file: Path,
            progress: bool = True) -> pd.DataFrame:
    """At each γ of ``gammas``: ``collect_trace_frames`` over ``prompts`` (group -> prompts) and the pair's passes
    (``passes.pair_passes``), appended with a ``gamma`` column to ``rounds_file`` and ``passes_file`` after each γ; a γ
    already in a file is not rerun there. Returns every γ's rounds."""
    if not gammas or any(isinstance(g, bool) or int(g) != g or g < 1 for g in gammas):
        raise ValueError(f"gammas must be integers >= 1, got {gammas!r}")
    rounds, passes = (pd.read_csv(f) if Path(f).exists() else pd.DataFrame(columns=["gamma"]) for f in (rounds_file, passes_file))
    log = (lambda m: tqdm.write(f"[gamma sweep] {m}")) if progress else None
    todo = [g for g in gammas if g not in set(rounds.gamma) or g not in set(passes.gamma)]
    for g in tqdm(todo, desc="gamma sweep", disable=not progress):
        t0 = time.perf_counter()
        if g not in set(rounds.gamma):
            r, _ = collect_trace_frames(draft, ee, prompts, max_new, g, eos_token_id, log=log)
            rounds = _append(rounds, r.assign(gamma=g)[["gamma", *r.columns]])
            rounds.to_csv(rounds_file, index=False, float_format="%.10g", lineterminator="\n")
        if g not in set(passes.gamma):
            p = pd.DataFrame([dict(quantity=k, value=v, gamma=g) for k, v in pair_passes(draft, ee, g).items()])
            passes = _append(passes, p)
            write_csv(passes[["quantity", "value", "gamma"]], passes_file)
        if log:
            log(f"gamma {g}: {time.perf_counter() - t0:.0f} s")
    return rounds


def sequences_by_prompt(rounds: pd.DataFrame) -> tuple[list[str], list]:
    """One γ's ``traces_frame`` rows (``benchmark``, ``sequence``, ...) as (prompt names, ``RoundTrace`` sequences), the
    prompts in order of first appearance."""
    key = rounds.benchmark.astype(str) + "/" + rounds.sequence.astype(str)
    names = list(dict.fromkeys(key))
    frame = rounds.assign(sequence=key.map({k: i for i, k in enumerate(names)}))
    return names, sim.traces_from_frame(frame)


def _per_prompt(seqs, src) -> dict[str, np.ndarray]:
    """Per prompt: simulated SD and FSD seconds, AR seconds, tokens, rounds, and the rounds no exit agrees with."""
    sd, fsd = sim.simulate(seqs, src["sd"], "sd"), sim.simulate(seqs, src["fsd"], "fsd")
    out = {}
    for name, res in (("sd", sd), ("fsd", fsd)):
        ends = res.log.groupby("sequence").end_s.max().sort_index().to_numpy()
        out[name] = np.diff(np.concatenate([[0.0], ends]))
    out["tokens"] = np.array([sum(r.tokens for r in s) for s in seqs], dtype=float)
    cfg = src["sd"]
    out["ar"] = out["tokens"] * (cfg.T_t + cfg.T_c if src["ar_token_s"] is None else src["ar_token_s"])
    out["rounds"] = np.array([len(s) for s in seqs], dtype=float)
    out["misses"] = np.array([sim.stated_miss_rate([s]) * len(s) for s in seqs])
    out["fsd_miss_rate"] = np.array(fsd.miss_rate)
    return out


def _stats(p: dict[str, np.ndarray], idx) -> dict[str, np.ndarray]:
    """``KEYS`` from per-prompt sums over the prompts ``idx`` (one row of indices per replicate)."""
    s = {k: p[k][idx].sum(-1) for k in ("sd", "fsd", "ar", "tokens", "rounds", "misses")}
    return dict(speedup_ar_sd=s["ar"] / s["sd"], speedup_sd_fsd=s["sd"] / s["fsd"], tau=s["tokens"] / s["rounds"],
                stated_miss_rate=s["misses"] / s["rounds"])


def sweep(rounds: pd.DataFrame, passes: pd.DataFrame, prof, local, columns=(), n_boot: int = 1000,
          seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig 4b per timing source and γ: ``rounds`` (``traces_frame`` rows with ``gamma`` and ``benchmark`` columns) and
    ``passes`` (``passes.pair_passes`` rows with a ``gamma`` column) -> (one row per source x γ: the speedups AR->SD
    and SD->FSD, τ and the paper's cache-miss rate, each with its 95 % prompt-bootstrap interval ``_low``/``_high``,
    FSD's simulated miss rate, timings in ms; the replicates, one row per source x γ x replicate)."""
    gammas = sorted(int(g) for g in rounds.gamma.unique())
    if len(gammas) < 2:
        raise ValueError(f"a gamma sweep needs at least 2 gamma values, got {gammas}")
    missing = sorted(set(gammas) - {int(g) for g in passes.gamma})
    if missing:
        raise ValueError(f"passes lack gamma {missing} (pass_times with a gamma column expected for every gamma of rounds)")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    names = None
    rows, reps = [], []
    for g in gammas:
        prompt_names, seqs = sequences_by_prompt(rounds[rounds.gamma == g])
        if names is None:
            names = prompt_names
            idx = np.random.default_rng(seed).integers(0, len(names), (n_boot, len(names)))
        elif prompt_names != names:
            raise ValueError(f"gamma {g} has prompts {prompt_names}, gamma {gammas[0]} {names}: the same prompts expected")
        sources = sim.timing_sources(passes[passes.gamma == g], prof, local, gamma=g, columns=columns)
        for source, src in sources.items():
            p = _per_prompt(seqs, src)
            point, boot = _stats(p, np.arange(len(names))), _stats(p, idx)
            row = dict(source=source, gamma=g, T_d_ms=1e3 * src["sd"].T_d, T_t_sd_ms=1e3 * src["sd"].T_t,
                       T_t_fsd_ms=1e3 * src["fsd"].T_t, threads=src["fsd"].threads)
            for k in KEYS:
                row.update({k: float(point[k]), f"{k}_low": float(np.percentile(boot[k], 2.5)),
                            f"{k}_high": float(np.percentile(boot[k], 97.5))})
            rows.append(dict(row, miss_rate=float(p["fsd_miss_rate"]), T_c_ms=1e3 * src["sd"].T_c,
                             stated_avg_ee_depth=sim.stated_average_early_exit(seqs) / seqs[0][0].n_layers,
                             rounds=int(p["rounds"].sum()), prompts=len(names)))
            reps.append(pd.DataFrame(dict(source=source, gamma=g, replicate=np.arange(n_boot),
                                          speedup_ar_sd=boot["speedup_ar_sd"], speedup_sd_fsd=boot["speedup_sd_fsd"])))
    return pd.DataFrame(rows), pd.concat(reps, ignore_index=True)


def paired_interval(reps: pd.DataFrame, column: str, a: int, b: int) -> tuple[float, float]:
    """95 % interval of ``column`` at γ = b minus at γ = a over the paired replicates."""
    w = reps.pivot(index="replicate", columns="gamma", values=column)
    d = (w[b] - w[a]).to_numpy()
    return float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))
