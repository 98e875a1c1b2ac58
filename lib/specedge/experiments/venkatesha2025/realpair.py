"""venkatesha2025 on the real pair (Qwen2.5-Coder 0.5B drafting for 1.5B): an offline measuring step.

``python -m specedge.experiments.venkatesha2025.realpair`` (``make realpair-exits``; after ``make realpair``; never in
CI) runs resumable stages (``STAGES``) on the 28-layer target in the dtype ``host.auto_dtype`` picks and writes the small
files the notebook reads into ``data/venkatesha2025/realpair/`` (the ~50 MB adapters stay in the git-ignored ``build/``):
``adapters``: the paper's 27 adapters sized to its 1.48 %, trained and checked on zoo corpus records
(``early_exit.offline.build``) -> ``adapters.json``, ``exit_agreement.csv.gz``; ``traces``: real greedy SD rounds (γ = 4)
on held-out prompts of each Table 6 benchmark's stand-in with every exit's outcome -> ``ee_rounds.csv.gz``,
``round_times.csv``; ``times``: the pair's passes -> ``pass_times.csv``; ``concurrent``: the threaded FSD run beside the
simulation -> ``concurrent_vs_sim.csv``; ``gammas``: Fig 4b, ``traces`` and ``times`` at γ = 2, 6, 8
(``early_exit.draft_length.collect``) -> ``ee_rounds_gamma.csv.gz``, ``pass_times_gamma.csv``.
``section`` builds the notebook's real-pair frames and rows from those files.
"""
from __future__ import annotations

import argparse
import json
import sys

import pandas as pd
import torch

from ... import claims, early_exit, host, paths, zoo
from ...early_exit import concurrent, draft_length, offline, sim
from ...early_exit.passes import pair_passes
from ...hardware import load_profile
from ...plotting import write_csv
from ...zoo import corpus
from ...zoo.realpair import DRAFT, TARGET
from . import verdicts as vx
from .runs import BENCHMARKS

OUT = paths.DATA / "venkatesha2025" / "realpair"
CACHE = paths.BUILD / "venkatesha2025_realpair"
PARAM_FRACTION = 0.0148          # Table 2: 101M trainable parameters of the 7B Vicuna, 1.48 %
GAMMAS = (2, 6, 8)               # Fig 4b's sweep; γ = 4 is the ``traces`` stage's run
SETTINGS = dict(train_per_domain=12, context=256, held_per_domain=2, held_context=64, epochs=3, batch=128,
                negatives=2048, lr=1e-3, topk=32, gamma=4, prompts_per_benchmark=3, max_new=48, seed=0)


def adapters(target, tok, dtype, s, progress=True) -> early_exit.EarlyExits:
    """Stages 1-3 (``early_exit.offline.build``, resumable): hidden states, trained adapters, held-out agreement."""
    torch.manual_seed(s["seed"])
    ee = early_exit.EarlyExits(target, param_fraction=PARAM_FRACTION, per_layer=1)
    train = [r for d in corpus.DOMAINS for r in corpus.load("train", d)[: s["train_per_domain"]]]
    held = [r for d in corpus.DOMAINS for r in zoo.eval_records(d, s["held_per_domain"])]
    train_ids, held_ids = offline.token_records(tok, train, s["context"]), offline.token_records(tok, held, s["held_context"])
    card, agree = offline.build(ee, train_ids, held_ids, [r["domain"] for r in held], CACHE, dict(target=TARGET, dtype=dtype),
                                progress=progress, group_column="domain",
                                **{k: s[k] for k in ("topk", "epochs", "batch", "negatives", "lr", "seed")})
    OUT.mkdir(parents=True, exist_ok=True)
    agree.to_csv(OUT / "exit_agreement.csv.gz", index=False, float_format="%.10g", lineterminator="\n")
    meta = dict(card, target=TARGET, settings=s, **host.describe(dtype))
    (OUT / "adapters.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return ee


def _prompts(tok, s):
    n = s["prompts_per_benchmark"]
    return {b: [tok(p, add_special_tokens=False)["input_ids"] for p in zoo.eval_prompts(d, (part + 1) * n)[part * n:]]
            for b, (d, part) in BENCHMARKS.items()}


def traces(draft, ee, tok, s, progress=True) -> pd.DataFrame:
    """Stage 4: SD rounds with every exit's outcome per benchmark, their pass times, and the pair's pass times."""
    rounds, times = early_exit.collect_trace_frames(draft, ee, _prompts(tok, s), s["max_new"], s["gamma"], tok.eos_token_id,
                                                    log=(lambda m: print(f"[realpair-exits] {m}", flush=True)) if progress else None)
    OUT.mkdir(parents=True, exist_ok=True)
    meta = json.loads((OUT / "adapters.json").read_text())
    meta["traces"] = {k: s[k] for k in ("gamma", "prompts_per_benchmark", "max_new")}
    (OUT / "adapters.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    rounds.to_csv(OUT / "ee_rounds.csv.gz", index=False, float_format="%.10g", lineterminator="\n")
    write_csv(times, OUT / "round_times.csv")
    return rounds


def concurrent_check(draft, ee, tok, s, clients=("rtx",), n_prompts=2, max_new=24, time_scale=15.0,
                     threads=3) -> pd.DataFrame:
    """Stage 5: the threaded FSD run beside the simulation on the same prompts (HumanEval's stand-in, the paper's timings
    of the 68M/7B set with ``threads`` pre-drafting threads, Table 7's smallest), the simulation over five seeds."""
    prof = load_profile("venkatesha2025_paper")
    prompts = _prompts(tok, dict(s, prompts_per_benchmark=n_prompts))["HumanEval"]
    tr = early_exit.collect_traces(draft, ee, prompts, max_new, gamma=s["gamma"], eos_token_id=tok.eos_token_id)
    frame = pd.concat([concurrent.against_simulation(draft, ee, prompts, max_new, cfg, tr, time_scale).assign(client=c)
                       for c in clients for cfg in [sim.FSDConfig.from_profile(prof, f"{c}_vicuna68m_vicuna7b", threads=threads)]],
                      ignore_index=True)
    frame = frame[["client", *frame.columns[:-1]]]
    write_csv(frame, OUT / "concurrent_vs_sim.csv")
    return frame


# ------------------------------------------------------------------------------------ reading (the notebook)
FILES = ("adapters.json", "exit_agreement.csv.gz", "ee_rounds.csv.gz", "round_times.csv", "pass_times.csv",
         "concurrent_vs_sim.csv", "ee_rounds_gamma.csv.gz", "pass_times_gamma.csv")
FIG4B_COLUMN = ("rtx", "vicuna68m_vicuna7b")   # the paper's timings of Figs 4a/4b (as for the zoo)


def load_outputs(folder=OUT) -> dict:
    """The committed outputs of this module (``FILES``), by name; a missing one is an error naming it."""
    missing = [f for f in FILES if not (folder / f).exists()]
    if missing:
        raise FileNotFoundError(f"{[str(folder / f) for f in missing]} missing: `make realpair-exits` writes them "
                                "(python -m specedge.experiments.venkatesha2025.realpair, after `make realpair`)")
    out = {f: pd.read_csv(folder / f) for f in FILES if f.endswith((".csv", ".csv.gz"))}
    out["adapters.json"] = json.loads((folder / "adapters.json").read_text())
    return out


def section(cmp, paper, prof, local, zoo_avg: pd.DataFrame, base: sim.FSDConfig, paper_t7, n_boot: int = 1000,
            threads=range(1, 31), seed: int = 0) -> dict:
    """The notebook's real-pair section from the committed files: every frame, and the rows of Table 2, Table 6
    (``tables.realpair``), Table 7 and Fig 4a (GSM8K's stand-in on ``base``, as for the zoo), Fig 4b
    (every prompt, ``early_exit.draft_length``) and the threaded run's check. ``zoo_avg``: the zoo's Table 6 average;
    ``paper_t7``: ``venkatesha2025_tables.paper_table7``."""
    from . import tables as vt
    rp = load_outputs()
    meta, rounds, cc = rp["adapters.json"], rp["ee_rounds.csv.gz"], rp["concurrent_vs_sim.csv"]
    out = dict(exit_agreement=offline.agreement_table(rp["exit_agreement.csv.gz"], n_boot, seed),
               model_quantities=sim.stated_intervals(rounds, n_boot, seed), concurrent_vs_sim=cc)
    traces = {b: sim.traces_from_frame(g) for b, g in rounds.groupby("benchmark", sort=False)}   # BENCHMARKS' order
    out["table6"] = sim.evaluate_sources(traces, sim.timing_sources(rp["pass_times.csv"], prof, local, columns=vt.COLUMNS))
    vt.realpair(cmp, paper, meta, out["model_quantities"], out["table6"], zoo_avg)
    tr, prefix = traces["GSM8K"], f"{vt.REAL}: "
    n_exits = tr[0][0].n_layers - 1
    t7 = sim.queue_policies(tr, base, paper_t7, threads=(3, 5, 10))
    t7["paper"] = [p / 100 for row in paper_t7.values() for p in row]
    vt.table7(cmp, t7, n_exits, base.T_d, models="real pair", prefix=prefix)
    out["table7_queue_policies"], out["fig4a_threads"] = t7, sim.threads_sweep(tr, base, threads)
    vt.fig4a(cmp, paper, out["fig4a_threads"], n_exits, models="real pair", prefix=prefix)
    f4b = pd.concat([rounds.assign(gamma=meta["traces"]["gamma"]), rp["ee_rounds_gamma.csv.gz"]], ignore_index=True)
    f4b_passes = pd.concat([rp["pass_times.csv"], rp["pass_times_gamma.csv"]], ignore_index=True)
    out["fig4b_gamma"], reps = draft_length.sweep(f4b, f4b_passes, prof, local, [FIG4B_COLUMN], n_boot, seed)
    claims_rows(cmp, paper["fig4b-below-1-after-5"], out["fig4b_gamma"], reps, f"{vt.REAL}, ")
    lo, hi, checks = cc.miss_rate_sim.min(), cc.miss_rate_sim.max(), int(cc.checks_sim.iloc[0])
    cmp.check("FSD simulation", f"{vt.REAL}: threaded run's cache-miss rate against the simulation's (seeds {lo:.3f}-{hi:.3f}), "
              f"within the seeds' range and one round of {checks}", round(float(cc.miss_rate_concurrent.iloc[0]), 4),
              round(float(cc.miss_rate_sim.mean()), 4), tolerance=round((hi - lo) / 2 + 1 / checks, 4), unit="fraction",
              note=f"RTX Vicuna-68M/7B timings with {int(cc.threads.iloc[0])} threads, x{cc.time_scale.iloc[0]:g} in time; "
                   f"SD->FSD {cc.speedup_sd_fsd_concurrent.iloc[0]:.2f}x in the threaded run against "
                   f"{cc.speedup_sd_fsd_sim.mean():.2f}x simulated: the pre-drafting threads, the client's own drafting and "
                   "the server's 27 full-vocabulary exits share this machine's two cores, which the simulation does not model")
    out["summary"] = (f"{meta['exits']} exits, bottleneck {meta['bottleneck']}, {meta['trainable_params']:,} trainable parameters "
                      f"({100 * meta['param_fraction']:.3f} % of {meta['target_params']:,}); {meta['epochs']} epochs over "
                      f"{meta['train_positions']} positions in {meta['train_seconds'] / 60:.1f} min ({meta['dtype']}, {meta['cpu']})")
    return out


def mechanism(f: pd.DataFrame) -> str:
    """What decides one timing source's curves (rows of ``early_exit.draft_length.sweep`` for one source), in
    numbers: how long before the final the earliest agreeing exit is ready, what a pre-draft of γ tokens needs, FSD's
    own verification where it pays for the exits, and the cost of a drafted token against a verification (c)."""
    a, b = f.iloc[0], f.iloc[-1]
    slack = [(1 - x.stated_avg_ee_depth) * x.T_t_sd_ms for x in (a, b)]
    need = [x.gamma * x.T_d_ms + x.T_c_ms / 2 for x in (a, b)]
    out = (f"; mechanism: the earliest agreeing exit sits at {a.stated_avg_ee_depth:.2f}-{b.stated_avg_ee_depth:.2f} of the "
           f"depth, {slack[0]:.0f}-{slack[1]:.0f} ms before the verification ends, and a pre-draft needs gamma T_d + T_c/2 = "
           f"{need[0]:.0f}-{need[1]:.0f} ms (gamma = {a.gamma}-{b.gamma})")
    if b.T_t_fsd_ms > b.T_t_sd_ms:
        out += (f"; FSD's verification computes every exit's full-vocabulary head on the gamma + 1 positions: "
                f"{a.T_t_fsd_ms:.0f}-{b.T_t_fsd_ms:.0f} ms against SD's {a.T_t_sd_ms:.0f}-{b.T_t_sd_ms:.0f} ms")
    return out + (f"; a drafted token costs c = {a.T_d_ms / a.T_t_sd_ms:.2f} of a verification and tau grows "
                  f"{a.tau:.2f}-{b.tau:.2f}")


def claims_rows(cmp, below_after: float, frame: pd.DataFrame, reps: pd.DataFrame, prefix: str, models: str = "real pair"):
    """Fig 4b's three claims (the zoo's ``fig4b-*`` statements) per timing source of ``sweep``: the SD->FSD gain grows
    with γ, AR->SD falls at large γ, AR->SD below 1x only for γ > ``below_after``; each null: the smallest γ's values at
    every γ. Each note ends with the source's ``mechanism``."""
    kw = dict(strength="trend", models=models, cause="models")
    for source, f in frame.groupby("source", sort=False):
        f, r = f.sort_values("gamma"), reps[reps.source == source]
        first, last, g = f.iloc[0], f.iloc[-1], f.gamma.to_numpy()
        flat = f.assign(speedup_sd_fsd=first.speedup_sd_fsd, speedup_ar_sd=first.speedup_ar_sd)
        name, why = f"{prefix}{source}: ", mechanism(f)
        lo, hi = draft_length.paired_interval(r, "speedup_sd_fsd", g[0], g[-1])
        cmp.claim("Fig 4b", f"{name}SD->FSD gain grows with gamma (largest vs smallest gamma)", "increasing",
                  vx.fsd_gain_grows_with_gamma(f), null_claim=vx.fsd_gain_grows_with_gamma(flat), statements="fig4b-fsd-grows",
                  note=f"{first.speedup_sd_fsd:.3f}x at gamma = {g[0]}, {last.speedup_sd_fsd:.3f}x at {g[-1]}; difference's 95 % "
                       f"prompt-bootstrap interval [{lo:.3f}, {hi:.3f}]; null: the smallest gamma's at every gamma" + why, **kw)
        ar = f.set_index("gamma").speedup_ar_sd
        peak = int(ar.idxmax())
        lo, hi = draft_length.paired_interval(r, "speedup_ar_sd", peak, g[-1]) if peak != g[-1] else (0.0, 0.0)
        cmp.claim("Fig 4b", f"{name}AR->SD falls at large gamma (largest gamma below the peak)", "decreasing",
                  claims.below(float(ar.iloc[-1]), float(ar.max())),
                  null_claim=claims.below(float(first.speedup_ar_sd), float(first.speedup_ar_sd)), statements="fig4b-ar-sd-falls",
                  note=f"peak {ar.max():.3f}x at gamma = {peak}, {ar.iloc[-1]:.3f}x at gamma = {g[-1]}; largest minus peak, 95 % "
                       f"prompt-bootstrap interval [{lo:.3f}, {hi:.3f}]; null: the smallest gamma's at every gamma" + why, **kw)
        g_below = vx.first_gamma_below(f, "speedup_ar_sd", 1.0)
        span = ", ".join(f"{x.speedup_ar_sd:.2f}x [{x.speedup_ar_sd_low:.2f}, {x.speedup_ar_sd_high:.2f}] at {x.gamma}"
                         for x in f.itertuples())
        if g_below is not None:
            g_null = vx.first_gamma_below(flat, "speedup_ar_sd", 1.0)
            cmp.claim("Fig 4b", f"{name}AR->SD falls below 1x only for gamma > 5 (smallest such gamma)", f"gamma > {below_after:g}",
                      claims.above(g_below, below_after), statements="fig4b-below-1-after-5",
                      null_claim=claims.above(float(g[0]) if g_null is not None else float("nan"), below_after),
                      note=f"AR->SD {span} (95 % prompt-bootstrap intervals); null: the smallest gamma's at every gamma" + why, **kw)
        else:
            cmp.state("Fig 4b", f"{name}AR->SD falls below 1x for gamma > 5", f"gamma > {below_after:g}",
                      f"never (gamma <= {g[-1]})", "deviates", statements="fig4b-below-1-after-5", models=models, cause="models",
                      note=f"AR->SD {span} (95 % prompt-bootstrap intervals)" + why)


STAGES = ("adapters", "traces", "times", "concurrent", "gammas")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="venkatesha2025 on the real pair: adapters, exit agreement, EE traces")
    # no `choices=`: with nargs="*", argparse (3.11) checks the default list as one value against them and refuses a bare call
    ap.add_argument("stages", nargs="*", metavar="STAGE", help=f"stages to run, in this order: {', '.join(STAGES)} (default: all)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: one core of a shared machine)")
    ap.add_argument("--gammas", type=int, nargs="+", default=list(GAMMAS), help="Fig 4b's γ values (stage gammas)")
    for k, v in SETTINGS.items():
        ap.add_argument(f"--{k.replace('_', '-')}", type=type(v), default=v)
    args = ap.parse_args(argv)
    if unknown := [x for x in args.stages if x not in STAGES]:
        ap.error(f"unknown stage(s) {unknown}; choose from {', '.join(STAGES)}")
    args.stages = args.stages or list(STAGES)
    torch.set_num_threads(args.threads)
    s = {k: getattr(args, k) for k in SETTINGS}
    dtype = host.resolve_dtype("auto")
    draft, target, tok = zoo.load_pair(DRAFT, TARGET, getattr(torch, dtype))
    draft, target = draft.eval(), target.eval()
    if "adapters" in args.stages:
        ee = adapters(target, tok, dtype, s)
    else:
        ee, _ = early_exit.load(target, CACHE / "adapters")
    if "traces" in args.stages:
        traces(draft, ee, tok, s)
    if "times" in args.stages:   # the pair's passes at the traces' γ
        g = s["gamma"]
        print(write_csv(pd.DataFrame([dict(quantity=k, value=v, gamma=g) for k, v in pair_passes(draft, ee, g).items()]),
                        OUT / "pass_times.csv").read_text())
    if "concurrent" in args.stages:
        print(concurrent_check(draft, ee, tok, s).to_string(index=False))
    if "gammas" in args.stages:   # Fig 4b: the traces and times stages at each γ, resumable per γ
        draft_length.collect(draft, ee, _prompts(tok, s), s["max_new"], args.gammas, tok.eos_token_id,
                             OUT / "ee_rounds_gamma.csv.gz", OUT / "pass_times_gamma.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
