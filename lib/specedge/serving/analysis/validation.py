"""The twin validated against the real serving system: real runs against their replay and the stochastic twin.

LLMServingSim's habit, each metric compared separately with one definition on both sides (``metric_values``):
per-round time, queueing delay, per-client goodput and (with SLO classes) per-client SLO attainment, at
p50 / p90 / p99, judged at p50 5 % and p90 10 % (``TOLERANCE``; a queueing delay within the server's wake-up
time counts as 0, ``floor_s``).

- the **replay** (``serving.sim.replay``) re-runs each real run's own outcomes through fresh policy objects with a
  verify-time model fitted on the other runs' batches (leave one run out, ``VERIFY[0]``), or with each pass the
  run made its measured time (``VERIFY[1]``: the queueing and batching model alone);
- the **stochastic twin** (``twin.simulate``) draws acceptance from traces, drafting and link times from models
  fitted to the run (``fit_times``); its difference from the replay in two steps (``validation``): the time
  models alone (``modelled_rounds``), then the acceptance draws;
- ``mechanisms`` / ``notes``: the measured quantities a residual comes from, and its sentence.

A run is keyed (setting, policy, N); a ``Setup`` carries what a setting chooses (its clients, its policy
objects), so that nothing here switches on a setting's name.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import seaborn as sns

from ... import plotting
from ..timemodels import runtime
from .. import slo
from ...predictor.controller import draft_passes as controller_passes
from ..timemodels.estimator import features
from ..interfaces import LOG_COLUMNS
from .metrics import client_goodput
from ..log import verified
from ..log import NEEDED, dispatch_latency, real_rounds, turnaround_latency
from ..sim.replay import MeasuredPasses, mismatches, replay
from ..real.drafter import PROMPT_TOKENS
from ..real.run import run_real
from ..interfaces import Times
from ..sim.twin import simulate
from ..log import parse_batch


@dataclass(frozen=True)
class Setup:
    """What a setting of real runs chooses: ``workload(n, scale, seed)`` its N clients, ``policies(policy, n,
    seed)`` fresh (batch former, allocator) of a policy, the same classes in the real run and the replay."""
    workload: Callable
    policies: Callable


QUANTILES = (50, 90, 99)


METRICS = {"round_time_s": "round time", "queue_s": "queueing delay", "goodput_tok_s": "per-client goodput",
           "slo_attainment": "per-client SLO attainment"}


def metric_values(log: pd.DataFrame) -> dict[str, np.ndarray]:
    """The compared distributions, one definition for real and replay logs: per round its time (draft
    start to reply received) and queueing delay (arrival to the pass's start); per client its goodput
    (``serving.analysis.metrics.client_goodput``: tokens over its active span) and, with SLO classes, the share of its
    rounds that met the class (eq 4's speed, ``slo.violations``)."""
    r = verified(log)
    out = dict(round_time_s=r["t_round"].to_numpy(float), queue_s=r["t_queue"].to_numpy(float),
               goodput_tok_s=client_goodput(log).to_numpy(float))
    if pd.to_numeric(r["slo_class"], errors="coerce").notna().all():
        ok = ~slo.violations(r)
        out["slo_attainment"] = pd.Series(ok, index=r.index).groupby(r["client"]).mean().to_numpy(float)
    return out


def verify_model(runs: dict, key, seed: int = 0):
    """Eq (19) (``runtime.fit_log_batches``) fitted to every pinned run's batches but ``key``'s."""
    prof = pd.concat([runtime.log_batches(g) for k, g in runs.items() if k != key], ignore_index=True)
    return runtime.fit_log_batches(prof, seed)


def dispatch(runs: dict, key) -> float:
    """The server's wake-up latency (``replay.dispatch_latency``): median over every run but ``key``."""
    return float(np.median(np.concatenate([dispatch_latency(g) for k, g in runs.items() if k != key])))


def turnaround(runs: dict, key) -> np.ndarray:
    """The server's times between back-to-back passes (``replay.turnaround_latency``) in the other runs
    with ``key``'s number of clients (the server's gRPC threads, one per waiting client, compete with its
    scheduling thread for the GIL; 0 when none had back-to-back passes): the replay draws one per pass
    (bimodal: at once, or after the GIL's switch interval)."""
    same = [turnaround_latency(g) for k, g in runs.items() if k != key and k[2] == key[2]]
    return np.concatenate(same) if same else np.zeros(0)


VERIFY = ("eq (19), other runs", "measured passes, eq (19) of this run")


def replay_run(runs: dict, key, setup: Setup, verify: str = VERIFY[0], scale: str = "full", seed: int = 0,
               modelled: bool = False, model=None):
    """The replay of the real run ``key`` = (paper, policy, N) with fresh policy objects, the server's
    wake-up latency of the other runs and, as verification time, eq (19) fitted to the other runs'
    batches (``VERIFY[0]``, a prediction) or each pass the real run made its measured time and eq (19)
    fitted to this run's passes for any other batch (``VERIFY[1]``: the queueing and batching model
    alone, given the verifier's speed during this run); ``modelled``: the drafting, gap and link times
    replaced by the stochastic twin's models of them (``modelled_rounds``; with ``VERIFY[0]``); ``model``:
    ``verify_model(runs, key, seed)`` when the caller has it already. Returns
    (log, {"mismatched": rounds with another S, "rounds", "passes measured", "passes modelled"})."""
    if verify not in VERIFY:
        raise ValueError(f"verify: expected one of {VERIFY}, got {verify!r}")
    _, pol, n = key
    former, alloc = setup.policies(pol, n, seed)
    wl, d, t = setup.workload(n, scale, seed), dispatch(runs, key), turnaround(runs, key)
    if modelled and verify != VERIFY[0]:
        raise ValueError(f"modelled: the stochastic twin's time models go with verify={VERIFY[0]!r}, got {verify!r}")
    if verify == VERIFY[0]:
        model = verify_model(runs, key, seed) if model is None else model
        log = replay(runs[key], wl, former, alloc, model, label=pol, dispatch=d, turnaround=t, seed=seed,
                     rounds=modelled_rounds(runs[key], wl) if modelled else None)
    else:
        log, model = replay_measured(runs[key], wl, former, alloc, pol, d, t, seed)
    bad, total = mismatches(log)
    counts = {"mismatched": bad, "rounds": total}
    if verify == VERIFY[1]:
        counts.update({"passes measured": model.hits, "passes modelled": model.misses})
    return log, counts


def replay_measured(real: pd.DataFrame, wl, former, alloc, label: str, dispatch: float, turnaround, seed: int = 0):
    """The replay of the real run ``real`` (``serving.sim.replay``) with each pass it made its measured time and
    eq (19) fitted to its own passes for any other batch (``VERIFY[1]``); returns (log, the pass model,
    whose ``hits`` / ``misses`` count measured and modelled passes)."""
    model = MeasuredPasses(real, runtime.fit_log_batches(runtime.log_batches(real), seed))
    return replay(real, wl, former, alloc, model, label=label, dispatch=dispatch, turnaround=turnaround, seed=seed), model


def draft_passes(rounds: pd.DataFrame, spec) -> np.ndarray:
    """The draft-model passes the twin charges for each of a client's real ``rounds`` (``twin.simulate``):
    S, plus one where the client's stop rule ended the round before its window (the pass whose logits the
    rule judged; a round that the response's end capped below the window counts as one the rule ended,
    the rare exception), 0 where it drafted nothing."""
    passes = controller_passes(rounds["S"].to_numpy(int), spec.gamma, exclusive=spec.draft_rule.stops)
    return np.where(rounds["t_draft"].to_numpy(float) > 0, passes, 0)


def fit_times(rounds: dict[int, pd.DataFrame], wl) -> dict[int, dict]:
    """What the stochastic twin models of a real run where the replay keeps the measured values, per client of
    ``rounds`` (``replay.real_rounds`` of the run's log): drafting time e0 + e1 k for k draft passes (least
    squares over its rounds after the first, whose time includes the prompt; ``draft_passes``), its median gap
    between rounds, uplink and reply time."""
    out = {}
    for c, r in rounds.items():
        k, t = draft_passes(r, wl.clients[c]), r["t_draft"].to_numpy(float)
        later = (r["round"].to_numpy() > 0) & (k > 0)
        if np.unique(k[later]).size >= 2:
            e1, e0 = np.polyfit(k[later].astype(float), t[later], 1)
        else:
            e1, e0 = (float(np.median(t[later] / k[later])) if later.any() else 0.0), 0.0
        out[c] = dict(e0=max(float(e0), 0.0), e1=max(float(e1), 0.0),
                      gap=float(r["gap"].iloc[1:].median()) if len(r) > 1 else 0.0,
                      up=float(r["up"].median()), down=float(r["down"].median()))
    return out


@dataclass(frozen=True)
class FittedDraftTime:
    """A client's drafting time model fitted to a real run (``fit_times``): e0 + e1 k for k draft passes (0 passes:
    nothing drafted), then its median gap between rounds."""
    e0: float
    e1: float
    gap: float

    def __call__(self, k: int) -> float:
        return (self.e0 + self.e1 * k if k > 0 else 0.0) + self.gap


def drafting_time(m: dict, k: int) -> float:
    """Seconds of ``k`` draft passes under a client's ``fit_times`` entry (0 passes: nothing drafted)."""
    return m["e0"] + m["e1"] * k if k > 0 else 0.0


MODELLED = ("drafting", "gap", "link")


def modelled_rounds(log, wl, which=MODELLED) -> dict[int, pd.DataFrame]:
    """``replay.real_rounds(log)`` (or those rounds, given) with the times the stochastic twin models replaced by its
    models (``fit_times``; ``which`` of ``MODELLED``: drafting, the client's gap, the link): the replay of these keeps
    the real outcomes and measures the time models' share of the stochastic twin's difference from the replay."""
    bad = set(which) - set(MODELLED)
    if bad:
        raise ValueError(f"which: expected some of {MODELLED}, got {sorted(bad)}")
    rounds = real_rounds(log) if isinstance(log, pd.DataFrame) else log
    models, out = fit_times(rounds, wl), {}
    for c, r in rounds.items():
        m = models[c]
        k = draft_passes(r, wl.clients[c])
        swap = {}
        if "drafting" in which:
            swap["t_draft"] = [drafting_time(m, int(x)) for x in k]
        if "gap" in which:
            swap["gap"] = m["gap"]
        if "link" in which:
            swap.update(up=m["up"], down=m["down"])
        out[c] = r.assign(**swap)
    return out


def stochastic_run(runs: dict, key, setup: Setup, acceptance, scale: str = "full", seed: int = 0, model=None) -> pd.DataFrame:
    """The stochastic twin (``twin.simulate``: acceptance drawn from the traces) of the real run ``key``,
    with what the replay takes from the real run replaced by models of it (``fit_times``), the replay's
    verification model (``model``: ``verify_model(runs, key, seed)`` when the caller has it) and the same
    number of rounds."""
    _, pol, n = key
    wl = setup.workload(n, scale, seed)
    wl = replace(wl, clients=tuple(replace(c, prompt_tokens=PROMPT_TOKENS) for c in wl.clients))
    former, alloc = setup.policies(pol, n, seed)
    model = verify_model(runs, key, seed) if model is None else model
    return stochastic_twin(runs[key], wl, former, alloc, model, acceptance, label=pol, seed=seed)


def stochastic_twin(real: pd.DataFrame, wl, former, alloc, verify, acceptance, *, label: str = "", seed: int = 0,
                    up=None, down=None) -> pd.DataFrame:
    """``twin.simulate`` of the real run ``real`` (``wl``'s clients, fresh policy objects): drafting and gap from
    its ``fit_times``, verification by ``verify``, acceptance drawn from ``acceptance``, as many passes as the
    real run made; the link its measured median up / reply times unless ``up(c, s)`` / ``down(c)`` model it."""
    m = fit_times(real_rounds(real), wl)
    times = Times([FittedDraftTime(m[c]["e0"], m[c]["e1"], m[c]["gap"]) for c in range(len(wl.clients))], verify,
                  up=up or (lambda c, s: m[c]["up"]), down=down or (lambda c: m[c]["down"]))
    return simulate(wl, former, alloc, times, acceptance, rounds=int(real["batch"].nunique()), seed=seed, label=label)


def compare(pairs: dict) -> pd.DataFrame:
    """p50/p90/p99 of every metric, real vs the other system, per (paper, policy, N) of ``pairs``
    ((real log, other log)); ``diff_pct`` = 100 (other / real - 1)."""
    rows = []
    for (paper, pol, n), (real, other) in pairs.items():
        a, b = metric_values(real), metric_values(other)
        for m in a:
            for q in QUANTILES:
                x, y = float(np.percentile(a[m], q)), float(np.percentile(b[m], q))
                rows.append(dict(paper=paper, policy=pol, n_clients=n, metric=m, quantile=f"p{q}", real=x, twin=y,
                                 diff_pct=100 * (y / x - 1) if x else np.nan))
    return pd.DataFrame(rows)


def round_time_table(pairs: dict) -> pd.DataFrame:
    """p50/p90/p99 of the logged round time ``t_round`` (a centralized log's per-token interval) of each policy's
    (real log, twin log) in ``pairs``: one row per policy, system ("real" / "twin") and quantile."""
    rows = []
    for policy, (real, twin_log) in pairs.items():
        for name, lg in (("real", real), ("twin", twin_log)):
            r = verified(lg)
            if r.empty:
                raise ValueError(f"pairs[{policy!r}]: the {name} log has no verified rounds")
            for q in QUANTILES:
                rows.append(dict(policy=policy, system=name, quantile=f"p{q}", t_round_s=float(np.percentile(r["t_round"], q))))
    return pd.DataFrame(rows)


def centralized_twin(real_log: pd.DataFrame, prompt_tokens: Sequence[int], max_new_tokens: int,
                     target: str = "target-m") -> tuple[pd.DataFrame, pd.DataFrame]:
    """A real centralized run (one response of ``max_new_tokens`` per prompt of ``prompt_tokens`` tokens, generated
    together) against the twin's continuous batching with the run's median decode step (``centralized.step_time_of``)
    over as long: ``round_time_table`` of the token interval, and per quantile real, twin and twin_vs_real_pct."""
    from ..sim import centralized
    from ..workload import ClientSpec, Workload

    wl = Workload(target, tuple(ClientSpec(prompt_tokens=int(p), max_new_tokens=max_new_tokens) for p in prompt_tokens))
    twin = centralized.simulate(wl, centralized.step_time_of(real_log), until=float(real_log.end.max()))
    twin = twin[twin.groupby("client").cumcount() < max_new_tokens]   # the real run generates one response each
    table = round_time_table({"Centralized": (real_log, twin)})
    diff = table.pivot_table(index=["policy", "quantile"], columns="system", values="t_round_s")
    diff["twin_vs_real_pct"] = 100 * (diff.twin / diff.real - 1)
    return table, diff


TOLERANCE = {"p50": 5.0, "p90": 10.0}


def floor_s(runs: dict) -> float:
    """Below this many seconds a queueing delay is the server's wake-up (``replay.dispatch_latency``,
    its 90th percentile over every run): a difference within it is judged in absolute terms."""
    return float(np.percentile(np.concatenate([dispatch_latency(g) for g in runs.values()]), 90))


def judge(table: pd.DataFrame, floor: float) -> pd.DataFrame:
    """Adds ``within``: |diff_pct| within ``TOLERANCE`` of its quantile, or (queueing delay) the two
    values within ``floor`` seconds of each other; NaN for p99."""
    tol = table["quantile"].map(TOLERANCE)
    rel = table["diff_pct"].abs() <= tol
    small = (table["metric"] == "queue_s") & ((table["twin"] - table["real"]).abs() <= floor)
    return table.assign(within=(rel | small).where(tol.notna()))


def per_pass(log: pd.DataFrame) -> float:
    """Requests per verification pass (the batching the two systems formed: where they differ, so do
    the queueing delays)."""
    r = verified(log)
    return round(len(r) / r["batch"].nunique(), 3)


def validation(runs: dict, paper: str, setup: Setup, acceptance=None, scale: str = "full", seed: int = 0, sizes=None):
    """The two tables of the notebooks' Validation sections, for ``paper``'s runs of N in ``sizes``:
    (real vs replay, one block per ``VERIFY`` model; stochastic twin vs replay when ``acceptance`` is
    given, else None; counts: per run the replay's S mismatches, measured / modelled passes and the
    requests per pass of both systems, ``per_pass``); ``sizes``: the N to compare (None: every run's)."""
    keys = [k for k in runs if k[0] == paper and (sizes is None or k[2] in sizes)]
    if not keys:
        raise ValueError(f"runs: none of {paper} with N in {sizes} (have {sorted(runs)[:4]} ...)")
    floor = floor_s(runs)
    models = {k: verify_model(runs, k, seed) for k in keys}    # each fitted once, used by three runs
    blocks, counts, replays = [], [], {}
    for verify in VERIFY:
        pairs = {}
        for k in keys:
            log, c = replay_run(runs, k, setup, verify, scale, seed, model=models[k])
            pairs[k] = (runs[k], log)
            replays[k, verify] = log
            counts.append(dict(paper=k[0], policy=k[1], n_clients=k[2], verify=verify, **c,
                               per_pass_real=per_pass(runs[k]), per_pass_replay=per_pass(log)))
        blocks.append(compare(pairs).assign(verify=verify))
    real = judge(pd.concat(blocks, ignore_index=True), floor)
    stoch = None
    if acceptance is not None:
        pairs = {k: (replays[k, VERIFY[0]], stochastic_run(runs, k, setup, acceptance, scale, seed, model=models[k])) for k in keys}
        stoch = judge(compare(pairs), floor).rename(columns={"real": "replay", "twin": "stochastic"})
        # the stochastic twin's difference in two steps: its time models alone (the replay of the real
        # outcomes with modelled times), then its acceptance draws (stochastic vs that replay)
        steps = compare({k: (replays[k, VERIFY[0]], replay_run(runs, k, setup, VERIFY[0], scale, seed, modelled=True, model=models[k])[0])
                         for k in keys}).rename(columns={"twin": "modelled_times", "diff_pct": "time_models_pct"})
        on = ["paper", "policy", "n_clients", "metric", "quantile"]
        stoch = stoch.merge(steps[on + ["modelled_times", "time_models_pct"]], on=on, how="left", validate="1:1")
        stoch["acceptance_pct"] = 100 * (stoch["stochastic"] / stoch["modelled_times"] - 1)
    return real, stoch, pd.DataFrame(counts)


def measure(setups: Mapping[str, Setup], policies: Mapping[str, Sequence[str]], sizes, scale: str = "full", seed: int = 0,
            pin=None) -> pd.DataFrame:
    """Every real run (``run_real``, server and drafters pinned to the cores ``pin``): per setting of ``policies``
    (setting -> its policies), N in ``sizes`` and policy, its setup's clients and fresh policy objects; one table
    with columns paper (the setting), n_clients and load_1min (the host's load before the run) added."""
    logs = []
    for paper, pols in policies.items():
        for n in sizes:
            for pol in pols:
                former, alloc = setups[paper].policies(pol, n, seed)
                load = os.getloadavg()[0]
                log, _ = run_real(setups[paper].workload(n, scale, seed), former, alloc, label=pol, seed=seed, pin=pin)
                if (log["event"] != "").any():
                    raise RuntimeError(f"real run {paper} {pol} N={n}: unexpected events "
                                       f"{log[log['event'] != ''].event.tolist()}")
                print(f"{paper} {pol} N={n}: {len(log)} rounds, {log['end'].max():.1f} s", flush=True)
                logs.append(log.assign(paper=paper, n_clients=n, load_1min=load))
    return pd.concat(logs, ignore_index=True)


def by_run(df: pd.DataFrame) -> dict[tuple[str, str, int], pd.DataFrame]:
    """A table of real runs (``measure``'s) as one log per (paper, policy, N), in the table's order."""
    return {(p, pol, int(n)): g.reset_index(drop=True) for (p, pol, n), g in df.groupby(["paper", "policy", "n_clients"], sort=False)}


def section(runs: dict, paper: str, setup: Setup, acceptance, out, seed: int = 0, sizes=None):
    """A notebook's Validation section: ``paper``'s runs of N in ``sizes`` against their replays and the stochastic
    twin (``validation``), written to ``out`` (counts, ``mechanisms``, both figures); returns (real vs replay,
    stochastic vs replay, counts, the queueing floor ``floor_s``, mechanisms)."""
    val, stoch, counts = validation(runs, paper, setup, acceptance, seed=seed, sizes=sizes)
    floor, mech = floor_s(runs), mechanisms(runs)
    plotting.write_csv(counts, out / "twin_vs_real_counts.csv")
    plotting.write_csv(mech, out / "twin_vs_real_mechanisms.csv")
    plotting.save(figure(val).figure, val, out, "twin_vs_real")
    plotting.save(figure(stoch.assign(verify="stochastic")).figure, stoch, out, "stochastic_vs_replay")
    print(f"queueing delays within {1e3 * floor:.2f} ms are judged in absolute terms; S mismatches:",
          int(counts.mismatched.sum()), "of", int(counts.rounds.sum()), "replayed rounds")
    return val, stoch, counts, floor, mech


def mechanisms(runs: dict, keys=None) -> pd.DataFrame:
    """Per real run, the measured quantities the residuals come from: the verifier's passes against eq
    (19) fitted to the other runs (mean real / predicted), the residual spread of eq (19) fitted to the
    run's own passes, the server's wake-up (``dispatch_latency``) and time between back-to-back passes
    (``turnaround_latency``), the post-verification work per pass (replies, allocator), Python's GIL
    switch interval, and with CPU times logged the share of the wall time the verifier and the drafters
    got their core (CPU time / wall time). ``keys``: only these runs' rows (the fits still use every run)."""
    rows = []
    for k, g in runs.items():
        if keys is not None and k not in keys:
            continue
        prof = runtime.log_batches(g)
        x = [features(parse_batch(b)) for b in prof["batch"]]
        other, own = verify_model(runs, k), runtime.fit_log_batches(prof)
        pred_o = np.array([other.time(*f) for f in x])
        resid = prof["seconds"].to_numpy() - np.array([own.time(*f) for f in x])
        r = verified(g)
        b = r.groupby("batch").agg(start=("start", "first"), tv=("t_verify", "first"), end=("end", "max"))
        post = b["end"] - b["start"] - b["tv"]
        ta, dl = turnaround_latency(g), dispatch_latency(g)
        row = dict(paper=k[0], policy=k[1], n_clients=k[2], passes=len(prof),
                   pass_ms_mean=1e3 * prof["seconds"].mean(), pass_vs_eq19_other_runs=prof["seconds"].mean() / pred_o.mean(),
                   eq19_own_resid_ms_std=1e3 * resid.std(), dispatch_ms_p50=1e3 * np.median(dl) if len(dl) else np.nan,
                   turnaround_ms_mean=1e3 * ta.mean() if len(ta) else np.nan,
                   turnaround_ms_p90=1e3 * np.percentile(ta, 90) if len(ta) else np.nan,
                   post_verify_ms_p50=1e3 * post.median(), post_verify_ms_p90=1e3 * post.quantile(0.9),
                   gil_switch_interval_ms=1e3 * sys.getswitchinterval(),
                   load_1min=float(g["load_1min"].iloc[0]) if "load_1min" in g else np.nan)
        if "t_verify_cpu" in g:
            row["verifier_core_share"] = float(b["tv"].sum() and r.groupby("batch")["t_verify_cpu"].first().sum() / b["tv"].sum())
            row["drafter_core_share"] = float(r["t_draft_cpu"].sum() / r["t_draft"].sum())
        rows.append(row)
    return pd.DataFrame(rows)


def notes(mech: pd.DataFrame, counts: pd.DataFrame, paper: str, stoch: pd.DataFrame | None = None) -> dict[str, str]:
    """The measured mechanism behind each comparison's residual (``add_rows``' notes) for ``paper``'s runs,
    from ``mechanisms`` (twin_vs_real_mechanisms.csv), ``validation``'s counts (twin_vs_real_counts.csv)
    and its stochastic table's two steps (stochastic_vs_replay.csv: the time models alone, then the
    acceptance draws)."""
    m, c = mech[mech.paper == paper], counts[(counts.paper == paper) & (counts.verify == VERIFY[1])]
    ratio = m.pass_vs_eq19_other_runs
    far = m.loc[ratio.sub(1).abs().idxmax()]
    both = c.assign(d=(c.per_pass_replay / c.per_pass_real - 1).abs()).sort_values("d").iloc[-1]
    return {VERIFY[0]: f"the verifier's passes took {ratio.min():.2f}-{ratio.max():.2f}x eq (19) fitted to the other runs "
                       f"(farthest: {far.policy} N = {far.n_clients}; twin_vs_real_mechanisms.csv), at load {m.load_1min.min():.1f}-"
                       f"{m.load_1min.max():.1f}: the verifier got {m.verifier_core_share.min():.0%}-"
                       f"{m.verifier_core_share.max():.0%} of its core during its passes (CPU time / wall time)",
            VERIFY[1]: (f"the replay forms other batches than the real server: {both.policy} N = {both.n_clients} "
                        f"verified {both.per_pass_real:.2f} requests per pass in the real run and {both.per_pass_replay:.2f} in "
                        "the replay (twin_vs_real_counts.csv), whose" if both.d > 0 else
                        "the replay forms as many requests per pass as the real server in every run (twin_vs_real_counts.csv); its") +
                       " passes of batches the real run never formed come from "
                       f"eq (19) (residual std up to {m.eq19_own_resid_ms_std.max():.1f} ms); the drafters share one core, so "
                       "their measured drafting times carry the real run's timeline: a queueing delay below a millisecond "
                       f"moves with it (post-verification work p90 up to {m.post_verify_ms_p90.max():.1f} ms, Python's GIL "
                       f"switch interval {m.gil_switch_interval_ms.iloc[0]:.0f} ms between the scheduling and gRPC threads)",
            "stochastic": stochastic_note(stoch[stoch.paper == paper], m) if stoch is not None else
                          "the replay keeps each round's real drafting time (the drafters share one core: heavy-tailed) "
                          "and outcome; the stochastic twin draws acceptance (and stop-rule rounds) from other prompts' "
                          "traces and drafts in e0 + e1 k for k draft passes"}


def stochastic_note(stoch: pd.DataFrame, mech: pd.DataFrame) -> str:
    """The stochastic twin's p50 difference from the replay in its two steps (``validation``): the worst
    |difference| of the time models alone (queueing delay aside: sub-millisecond), with the drafters'
    core share of that run (``mechanisms``), and of the acceptance draws."""
    t = stoch[(stoch["quantile"] == "p50") & (stoch["metric"] != "queue_s")]
    w = t.loc[t["time_models_pct"].abs().idxmax()]
    a = t.loc[t["acceptance_pct"].abs().idxmax()]
    share = mech[(mech.policy == w.policy) & (mech.n_clients == w.n_clients)]["drafter_core_share"]
    return (f"in two steps (stochastic_vs_replay.csv, p50): the twin's time models alone (drafting e0 + e1 k for k draft "
            f"passes, median gap and link times, where the replay keeps each round's measured times) differ by up to "
            f"{abs(w.time_models_pct):.0f} % ({METRICS[w.metric]}, {w.policy} N = {w.n_clients}, whose drafters shared one "
            f"core, getting {float(share.iloc[0]):.0%} of it each: the twin gives every device its own processor, "
            f"{abs(t.loc[t.n_clients == t.n_clients.min(), 'time_models_pct']).max():.0f} % at N = {t.n_clients.min()}); "
            f"the acceptance drawn from other prompts' traces then moves it by up to {abs(a.acceptance_pct):.0f} % "
            f"({METRICS[a.metric]}, {a.policy} N = {a.n_clients})")


def figure(table: pd.DataFrame, hue: str = "verify"):
    """twin - real (%) per metric and N at p50 and p90, the tolerances as dashed lines."""
    d = table[table["quantile"].isin(list(TOLERANCE))].assign(
        metric=lambda t: t["metric"].map(METRICS), run=lambda t: t["policy"] + ", " + t[hue].astype(str))
    g = sns.catplot(data=d, x="n_clients", y="diff_pct", hue="run", col="metric", row="quantile", kind="point",
                    height=2.6, aspect=1.15, sharey=False, margin_titles=True, dodge=0.3)
    for (q, _), ax in g.axes_dict.items():
        for s in (-1, 1):
            ax.axhline(s * TOLERANCE[q], ls="--", lw=0.8, color="grey")
    g.set_titles(col_template="{col_name}", row_template="{row_name}")
    g.set_axis_labels("clients N", "twin − real (%)")
    return g


def worst(table: pd.DataFrame, quantile: str, floor: float) -> float:
    """The largest |diff_pct| at ``quantile`` over the table's rows, a queueing delay within ``floor``
    seconds of the real one counting as 0 (the server's wake-up time, ``floor_s``)."""
    t = table[table["quantile"] == quantile]
    other = "twin" if "twin" in t else "stochastic"
    base = "real" if "real" in t else "replay"
    small = (t["metric"] == "queue_s") & ((t[other] - t[base]).abs() <= floor)
    return float(t["diff_pct"].abs().where(~small, 0.0).max())


def add_rows(cmp, real: pd.DataFrame, stoch: pd.DataFrame | None, floor: float, what: str,
             notes: dict[str, str]) -> None:
    """The notebooks' validation checks (ours against ours, ``checks.csv``, never a paper value): per replay
    model, metric and quantile (p50 5 %, p90 10 %) the worst |difference| over every policy and N (``worst``)
    against no difference, then the stochastic twin against the replay. The replay that takes each pass's
    measured time is named bookkeeping: only its queueing and batching are modelled. ``notes``: the
    mechanism of a residual, by ``VERIFY`` model and "stochastic"."""
    blocks = [(("bookkeeping: " if v == VERIFY[1] else "") + f"replay vs real ({v})", real[real["verify"] == v],
               notes.get(v, "")) for v in VERIFY]
    if stoch is not None:
        blocks.append(("stochastic twin vs replay", stoch, notes.get("stochastic", "")))
    for name, t, note in blocks:
        base = "real" if "real" in t else "replay"
        for m in t["metric"].unique():
            label = METRICS[m]
            if m == "queue_s":
                label += f" (a difference within {1e3 * floor:.2f} ms, the server's wake-up time, counts as 0)"
            if m == "slo_attainment":   # near 1 on both sides when the classes are far below this CPU's speed
                label += f" (lowest p50 of the real runs {t.loc[(t.metric == m) & (t['quantile'] == 'p50'), base].min():.3f})"
            for q, tol in TOLERANCE.items():
                cmp.check(name, f"{label}, worst |difference| at {q} over {what}, N 1-8",
                          round(worst(t[t["metric"] == m], q, floor), 1), 0.0, tolerance=tol, note=note, unit="%")


def check_runs(df: pd.DataFrame, path, command: str, bounds: dict[str, float]) -> pd.DataFrame:
    """A committed file of real runs: every column the replay and the comparison read (``LOG_COLUMNS``,
    ``replay.NEEDED``, ``bounds``' columns), each of ``bounds`` numbers >= its bound; errors name the file,
    the column and the ``command`` that writes it."""
    missing = [c for c in dict.fromkeys([*LOG_COLUMNS, *NEEDED, *bounds]) if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing} (`{command}` writes them)")
    for col, low in bounds.items():
        v = pd.to_numeric(df[col], errors="coerce")
        if v.isna().any() or (v < low).any():
            raise ValueError(f"{path}: column {col!r}: expected numbers >= {low}, got {sorted(df[col].astype(str).unique())[:4]}")
    return df
