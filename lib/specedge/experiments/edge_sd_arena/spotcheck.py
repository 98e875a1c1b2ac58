"""The arena's real-run spot check: a few arena points run for real on this CPU, beside the twin.

``measure`` (``python -m specedge.experiments.edge_sd_arena.spotcheck measure``, under ``make profiles``; wall-clock
times are committed to ``REAL_RUNS``, never measured by a notebook) runs the real system (``serving.real.run.run_real``)
pinned as the twin's validation runs are, at each combination of ``COMBOS`` for N in ``SIZES`` devices behind an
emulated edge link at the scenario's RTT and ``BANDWIDTH``; the zoo's pair, greedy, γ = 4 (docs/arena.md says
why not the real pair). ``compare`` computes the twin's prediction of the same points as the twin is validated
(``serving_validation``): the **replay**, the replay with each pass its measured time (``MEASURED``) and the
**stochastic twin**; per point and metric (p50, ``serving.analysis.validation.metric_values``) the difference from the
real run in %, judged against the twin's validated error for that metric (``serving.analysis.twin_error``); ``outside``
names the measured mechanism of each row beyond it (``mechanisms``), and ``spotcheck`` is the notebook's section.
SLO attainment here is the validation's per-device share of rounds meeting the class (eq 4's speed), not the
arena's per-response attainment.
"""
from __future__ import annotations

import dataclasses
import os
from functools import lru_cache

import numpy as np
import pandas as pd

from ... import paths, zoo
from ...serving import acceptance_sources
from ...serving.real import real_logs
from ...serving.analysis import client_mix, twin_error, validation
from ...serving import scenario as serving_scenario
from ...serving.real.drafter import Link
from ...serving.timemodels.estimator import Estimator, zoo_fit
from ...serving.log import verified
from ...serving.sim.replay import mismatches, replay
from ...serving.real.drafter import PROMPT_TOKENS
from ...serving.real.run import run_real
from ...serving.scenario import Scenario
from ...serving.workload import Workload
from . import runs as arena
from ..serving_validation import runs as sv
from .results import replay_error_pct, stochastic_error_pct

COMBOS = (arena.Combination("fixed", "dense", "sync"), arena.Combination("fixed", "ids", "fcfs"),
          arena.Combination("wisp-stop", "ids", "wisp"))
SIZES = (2, 8)
BANDWIDTH = 1e7                 # bit/s: the scenario's slowest link, where the payload matters
DRAFT, TARGET = "draft-xs", "target-m"
ZOO = "zoo"                     # the acceptance source of the zoo's pairs (``serving.acceptance_sources``)
PAPER = "arena"                 # the runs' key (paper, combination, N) beside the validation's (serving_validation.load_real_runs)
REAL_RUNS = paths.DATA / "arena" / "spotcheck_runs.csv"
COMMAND = "python -m specedge.experiments.edge_sd_arena.spotcheck measure"
METRICS = {"goodput_tok_s": "goodput_tok_s", "round_time_s": "round_time", "slo_attainment": "slo_attainment"}
MEASURED = "replay, measured passes"


@lru_cache(maxsize=None)
def scenario(seed: int = 0) -> Scenario:
    """The arena scenario with this machine's server: WISP's former decides with eq (19) fitted on the zoo
    target's profile (``timemodels.estimator.zoo_fit``, its guard time δ), no memory bound (as the validation runs),
    the zoo's vocabulary for the payload's bytes."""
    fit = zoo_fit(seed)
    vocab = int(zoo.load_model(DRAFT).config.vocab_size)
    return dataclasses.replace(arena.load_scenario(), server=tuple((k, float(v)) for k, v in dataclasses.asdict(fit.estimator).items()),
                               memory_gb=1e3, delta_s=float(fit.delta), noise=0.0, vocab_size=vocab)


def point(combo: arena.Combination, n: int, scn: Scenario, bandwidth: float = BANDWIDTH, seed: int = 0) -> arena.Point:
    if combo.system != "edge" or combo.draft not in ("fixed", "goodspeed", "wisp-stop"):
        raise ValueError(f"combo: the spot check runs edge combinations with draft fixed, goodspeed or wisp-stop "
                         f"(AS² needs the devices' speeds before the run), got {combo.label!r}")
    return arena.Point(combo, float(bandwidth), int(n), scn.mixes[0][0], seed, scn)


def workload(p: arena.Point):
    """Device i: the zoo's draft-xs on domains i and i + 3 (``serving_validation``'s full-scale prompts and
    tokens), the arena's γ and drafting rule, SLO class of the validation's WISP devices (8 / 4 / 2 tok/s)."""
    scn, (prompts, tokens), domains = p.scenario, sv.SCENARIO.size("full"), acceptance_sources.source(ZOO).domains
    rule = scn.policy("draft", p.combo.draft).rule
    alpha = client_mix.reported_alpha(acceptance_sources.acceptance(ZOO), DRAFT, rule.stops, scn.gamma,
                                      domains=domains)
    clients = serving_scenario.clients(scn, p.devices, DRAFT, domains, rule, alpha, p.seed, offset=3, prompts=prompts,
                                       max_new_tokens=tokens, classes=sv.CLASSES, prompt_tokens=PROMPT_TOKENS)
    return Workload(TARGET, clients, capacity=scn.gamma * p.devices, cache=True,
                    top_k=scn.top_k if p.combo.payload == "topk" else None)


def policies(p: arena.Point, wl):
    """Fresh (batch former, allocator) of the point's combination: the arena's own (``arena.former``,
    ``arena.allocator``), on this machine's eq (19)."""
    return arena.former(p, Estimator.from_coefficients(**dict(p.scenario.server))), arena.allocator(p, wl)


def measure(scale: str = "full", seed: int = 0, combos=COMBOS, sizes=SIZES) -> pd.DataFrame:
    """Every real run, pinned (module docstring); one table with the run's key and link added."""
    scn, logs = scenario(seed), []
    for combo in combos:
        for n in sizes:
            p = point(combo, n, scn, seed=seed)
            wl = workload(p)
            load = os.getloadavg()[0]
            log, _ = run_real(wl, *policies(p, wl), label=combo.label, seed=seed, pin=sv.PIN,
                              link=Link(scn.rtt_s / 2, p.bandwidth_bps), greedy_rows=combo.payload != "ids")
            if (log["event"] != "").any():
                raise RuntimeError(f"real run {combo.label} N={n}: unexpected events {log[log['event'] != ''].event.tolist()}")
            print(f"{combo.label} N={n}: {len(log)} rounds, {log['end'].max():.1f} s", flush=True)
            logs.append(log.assign(paper=PAPER, n_clients=n, bandwidth_bps=p.bandwidth_bps, rtt_s=scn.rtt_s, load_1min=load))
    return pd.concat(logs, ignore_index=True)


def check_runs(df: pd.DataFrame, path) -> pd.DataFrame:
    """The committed runs' schema (``serving.analysis.validation.check_runs``: every column the replay and this check read,
    positive sizes and link parameters) and a known combination per run; errors name the file and the column."""
    validation.check_runs(df, path, COMMAND, {"n_clients": 1, "bandwidth_bps": 1, "rtt_s": 0})
    for label in df["policy"].unique():
        try:
            arena.from_label(str(label))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path}: column 'policy': {label!r} is not an arena combination ({err})") from None
    return df


def load_runs(path=REAL_RUNS) -> dict[tuple[str, str, int], pd.DataFrame]:
    """The committed spot-check runs by (``PAPER``, combination label, N), checked (``check_runs``)."""
    df = check_runs(real_logs.read(path, COMMAND), path)
    return {(p, pol, int(n)): g.reset_index(drop=True)
            for (p, pol, n), g in df.groupby(["paper", "policy", "n_clients"], sort=False)}


def twins(real: pd.DataFrame, key, others: dict, acceptance, scn: Scenario, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The twin's predictions of the real run ``real`` = ``key``'s (module docstring): the replay, the replay with
    each pass the run made its measured time (``MEASURED``: the queueing and batching model alone, given the
    verifier's speed during this run; ``validation.VERIFY[1]``) and the stochastic twin; ``others``: every
    pinned run of this machine, ``key``'s among them or not (the fits leave it out)."""
    _, label, n = key
    p = point(arena.from_label(label), n, scn, float(real["bandwidth_bps"].iloc[0]), seed)
    p = dataclasses.replace(p, scenario=dataclasses.replace(scn, rtt_s=float(real["rtt_s"].iloc[0])))
    wl, runs = workload(p), {**others, key: real}
    verify, d, t = validation.verify_model(runs, key, seed), validation.dispatch(runs, key), validation.turnaround(runs, key)
    link = arena.times(p, verify)
    return {"replay": replay(real, wl, *policies(p, wl), verify, label=label, dispatch=d, turnaround=t, seed=seed),
            MEASURED: validation.replay_measured(real, wl, *policies(p, wl), label, d, t, seed)[0],
            "stochastic": validation.stochastic_twin(real, wl, *policies(p, wl), verify, acceptance, label=label, seed=seed,
                                             up=link.up, down=link.down)}


def validated_error(metric: str, twin: str) -> float:
    """The twin's validated |error| (%) at p50 for ``metric`` (a key of ``METRICS``): the replay's against the
    real runs (``replay_error_pct``: its worst over both verification models), the stochastic twin's its own
    against held-out real runs (``stochastic_error_pct``: the twin kind the spot check runs, acceptance from the domain's
    traces, the worse of the two settings)."""
    if twin in ("replay", MEASURED):
        return replay_error_pct(METRICS[metric])
    if twin != "stochastic":
        raise ValueError(f"twin: expected 'replay', {MEASURED!r} or 'stochastic', got {twin!r}")
    return stochastic_error_pct(METRICS[metric])


def judge(table: pd.DataFrame, errors=None) -> pd.DataFrame:
    """Adds |diff_pct|, the twin's validated error of the row's metric and mode (``errors``: {(metric, twin):
    %}, default ``validated_error``) and ``within`` (|diff| <= that error): ``serving.analysis.twin_error.judge``."""
    return twin_error.judge(table, validated_error if errors is None else lambda m, t: errors.get((m, t), np.nan))


def predictions(runs: dict | None = None, acceptance=None, seed: int = 0, sizes=SIZES) -> dict:
    """{run key: {"replay": log, "stochastic": log}} for the spot-check runs (default: the committed ones,
    ``load_runs``) of N in ``sizes`` (``twins``; acceptance default: the zoo's traces with the MLP stop rule)."""
    runs = load_runs() if runs is None else runs
    keys = [k for k in runs if k[2] in sizes]
    if not keys:
        raise ValueError(f"sizes: no spot-check run with N in {sizes} (have {sorted({k[2] for k in runs})})")
    acceptance = acceptance_sources.acceptance(ZOO) if acceptance is None else acceptance
    scn, others = scenario(seed), sv.load_real_runs()
    return {k: twins(runs[k], k, others | {j: v for j, v in runs.items() if j != k}, acceptance, scn, seed) for k in keys}


def compare(runs: dict | None = None, acceptance=None, seed: int = 0, sizes=SIZES, errors=None,
            predicted: dict | None = None) -> pd.DataFrame:
    """Per spot-check run of N in ``sizes``, real vs the twin's replay and stochastic predictions (``predicted``,
    default ``predictions``) at p50 (``validation.compare``'s arithmetic) per metric of ``METRICS``,
    judged against the twin's validated error (``judge``)."""
    runs = load_runs() if runs is None else runs
    predicted = predictions(runs, acceptance, seed, sizes) if predicted is None else predicted
    t = pd.concat([validation.compare({key: (runs[key], log)}).assign(twin_mode=mode)
                   for key, logs in predicted.items() for mode, log in logs.items()], ignore_index=True)
    t = t[(t["quantile"] == "p50") & t["metric"].isin(list(METRICS))].rename(columns={"policy": "combination"})
    t = t.drop(columns=["paper", "quantile"]).reset_index(drop=True)
    return judge(t, errors)[["combination", "n_clients", "metric", "twin_mode", "real", "twin", "diff_pct", "abs_diff_pct",
                             "twin_error_pct", "within"]]


def mechanisms(runs: dict, predicted: dict) -> pd.DataFrame:
    """Per run, the quantities a difference comes from: drafted and accepted tokens per round, real beside the
    stochastic twin (the traces' acceptance vs this run's prompts), the round time's p90 on both (the twin's time
    models give every round the median gap and a fixed link), the uplink's median (the emulated link through gRPC
    vs the twin's link model of the same requests' bytes), requests per pass in the real run, the replay and the
    twin (``validation.per_pass``), the replay's rounds with another S, and from
    ``validation.mechanisms`` the verifier's passes against eq (19) of the other runs, its and the
    drafters' share of their cores and the machine's load when the run started."""
    rows = []
    for key, logs in predicted.items():
        real, st = (verified(g) for g in (runs[key], logs["stochastic"]))
        rows.append(dict(combination=key[1], n_clients=key[2], drafted_real=real["S"].mean(), drafted_twin=st["S"].mean(),
                         accepted_real=real["accepted"].mean(), accepted_twin=st["accepted"].mean(),
                         round_p90_ms_real=1e3 * real["t_round"].quantile(0.9), round_p90_ms_twin=1e3 * st["t_round"].quantile(0.9),
                         up_ms_real=1e3 * real["up"].median(),
                         up_ms_link=1e3 * (real["rtt_s"] / 2 + 8 * real["bytes_up"] / real["bandwidth_bps"]).median(),
                         per_pass_real=validation.per_pass(real), per_pass_replay=validation.per_pass(logs["replay"]),
                         per_pass_twin=validation.per_pass(st), replay_mismatched=mismatches(logs["replay"])[0]))
    m = validation.mechanisms({**sv.load_real_runs(), **runs}, keys=list(predicted)).rename(columns={"policy": "combination"})
    cols = ["pass_vs_eq19_other_runs", "verifier_core_share", "drafter_core_share", "load_1min"]
    return pd.DataFrame(rows).merge(m[["combination", "n_clients", *cols]], on=["combination", "n_clients"], how="left",
                                    validate="1:1")


def outside(table: pd.DataFrame, mech: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``compare`` outside the twin's validated error, each with the measured mechanism (``why``, from
    ``mechanisms``): the verifier's speed in that run for the replay (with the measured-pass replay's difference
    beside it), the acceptance draws and time models for the stochastic twin, and for SLO attainment where its
    error was measured."""
    out = []
    on = ["combination", "n_clients"]
    t = table.merge(mech, on=on, how="left", validate="m:1")
    floor = twin_error.lowest_real("slo_attainment")
    for r in t[~t["within"].astype(bool)].itertuples():
        same = t[(t.combination == r.combination) & (t.n_clients == r.n_clients) & (t.metric == r.metric)]
        measured = same.loc[same.twin_mode == MEASURED, "diff_pct"]
        why = []
        if r.metric == "slo_attainment":
            where = (f"its {r.twin_error_pct:.2f} % is measured on WISP's setting with classes that bind (another fleet "
                     "and classes)" if r.twin_mode == "stochastic" else
                     f"the validation's classes never bound (its lowest p50 {floor:.3f}), so its {r.twin_error_pct:.2f} % "
                     f"is measured at attainment {floor:.0f}")
            why.append(f"a threshold on each round's speed (tokens / round time against its class): {where}, while here "
                       f"the 8 tok/s class binds (real p50 {r.real:.3f})")
        if r.twin_mode == "stochastic":
            why.append(f"the twin drew {r.accepted_twin:.2f} accepted tokens per round against the run's {r.accepted_real:.2f} "
                       f"(traces of other prompts) and its time models narrow the rounds (p90 {r.round_p90_ms_twin:.0f} ms "
                       f"against {r.round_p90_ms_real:.0f} ms)")
        else:
            why.append(f"the real passes took {r.pass_vs_eq19_other_runs:.2f}x eq (19) fitted on the other runs (the "
                       f"verifier had {r.verifier_core_share:.0%} of its core, load {r.load_1min:.1f}): "
                       f"{r.per_pass_real:.2f} requests per pass against {r.per_pass_replay:.2f} in the replay"
                       + (f"; with the run's measured passes the replay differs by {measured.iloc[0]:+.1f} %" if len(measured) else ""))
        out.append(dict(combination=r.combination, n_clients=r.n_clients, metric=r.metric, twin_mode=r.twin_mode,
                        diff_pct=r.diff_pct, twin_error_pct=r.twin_error_pct, why="; ".join(why)))
    return pd.DataFrame(out, columns=["combination", "n_clients", "metric", "twin_mode", "diff_pct", "twin_error_pct", "why"])


def spotcheck(sizes=SIZES, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The notebook's section on the committed runs of N in ``sizes``: (``compare``'s table with, for each row
    outside the twin's validated error, its measured mechanism ``why`` from ``outside``; ``mechanisms``)."""
    runs = load_runs()
    pred = predictions(runs, seed=seed, sizes=sizes)
    table, mech = compare(runs, predicted=pred), mechanisms(runs, pred)
    on = ["combination", "n_clients", "metric", "twin_mode"]
    table = table.merge(outside(table, mech)[on + ["why"]], on=on, how="left", validate="1:1")
    return table.assign(why=table["why"].fillna("")), mech


if __name__ == "__main__":
    raise SystemExit(real_logs.measure_main("measure the arena's real-run spot check (pinned, emulated link)",
                                            measure, REAL_RUNS))

__all__ = ["COMBOS", "SIZES", "BANDWIDTH", "REAL_RUNS", "MEASURED", "measure", "check_runs", "load_runs", "twins",
           "predictions", "validated_error", "judge", "compare", "mechanisms", "outside", "spotcheck"]
