"""WISP's serving-side experiments (li2026 Sections 3.1, 5.2, 5.3, 5.4.1) on the serving layer's twin.

Its systems share one set of devices, traces and runtime model, and differ only where the paper says (each
system's former, cache and drafting rule: the scenario ``data/scenarios/li2026_serving.yaml``, ``SCENARIO``):

=============  =====================  ======================  ======================================
system         drafting               verifier cache          batch former
=============  =====================  ======================  ======================================
SLED           fixed window K         none (recompute)        FCFS
FCFS           predictor stop (<= K)  prefix cache            FCFS          (Table 1 / Fig 7 baseline)
WISP           predictor stop (<= K)  prefix cache            Algorithm 1 (``wisp_batching``)
EDF-only       predictor stop (<= K)  prefix cache            EDF ablation
WISP-stop      predictor stop (<= K)  prefix cache            Algorithm 1, late requests as printed (``wisp-stop``)
WISP-drop      predictor stop (<= K)  prefix cache            Algorithm 1, late requests left out (``wisp-drop``)
WISP-continue  predictor stop (<= K)  prefix cache            Algorithm 1, utility phase after a critical stop
Centralized    none: the server decodes every token, continuously batched (``serving.sim.centralized``)
=============  =====================  ======================  ======================================

Each point of a sweep is a pure function of a plain ``serving.scenario.Point`` (``run_point``; built by
``SCENARIO.point``), so ``specedge.sweep`` can cache and fan them out. What the paper leaves open is listed, each with the sentence that leaves it open,
in ``data/li2026/serving_open_settings.csv`` (``open_settings``): the prompt length and the server's KV memory
are fitted to Table 3's three goodputs (``calibrate``, a grid search), the rest kept at the scenario's values (``SCENARIO.base``).
What the paper states is an input: the devices draft at 50 tokens/s ("the device spends a growing fraction of
its fixed drafting capacity (50 tokens/s)", Sec 3.2).

- response length 128 tokens, a 20 ms round trip (10 ms each way), window K = γ = 8;
- devices cycle through the zoo's four drafts (the paper's Qwen3-0.6B/1.7B/4B/8B) and six domains, with
  per-position acceptance drawn from the zoo's traces (``twin.TraceAcceptance``); the predictor is the
  committed MLP (``data/predictor``);
- the verifier's time is the eq (19) estimator of the chosen target, times a log-normal factor whose
  spread is the estimator's relative error (``noise``), so the scheduler's estimate is not an oracle;
- KV memory: Qwen3-32B's 256 KiB per token (64 layers x 8 KV heads x 128 x 2 x bf16) within ``memory_gb``
  (``kv_budget``: Qwen3-14B's lighter weights leave it 36 GB more), for every system: a verification
  batch's KV within it (eq 14) for WISP, EDF-only, FCFS and SLED, the running responses' KV for
  centralized serving (``centralized.simulate``'s ``memory_budget``: its batch limit).
"""
from __future__ import annotations

from dataclasses import replace as _dc_replace
from typing import Mapping

import numpy as np
import pandas as pd

from ... import hardware, paths
from ...serving.timemodels import calibration, time_models
from ...serving.analysis import capacity, client_mix, metrics
from ...serving.sim import centralized
from ...serving import acceptance_sources, policies, scenario
from ...serving.policies.allocation import FixedS
from ...serving.analysis.capacity import Curve
from ...serving.timemodels.estimator import COEFFICIENTS, Estimator
from ...serving.timemodels.shape_scaling import scale_coefficients, weight_bytes
from ...serving.interfaces import Times
from ...serving.scenario import Point, Setting
from ...serving.sim.engine import gc_paused
from ...serving.sim.twin import TraceAcceptance, simulate
from ...serving.workload import ClientSpec, Workload

# the systems, the targets' shapes, the SLO classes and the setting of every sweep point (``serving.scenario``'s
# ``Setting`` and ``Point``, checked against ``scenario_schema`` when this module is imported)
SCENARIO = scenario.sweep_scenario("li2026_serving")
CLASSES = SCENARIO.slo_classes
DRAFTS = ("draft-xs", "draft-s", "draft-m", "draft-l")
DOMAINS = ("chat", "code", "math", "qa", "sql", "summarize")


def kv_bytes_per_token(model: str) -> float:
    """Bytes of ``model``'s bf16 KV cache per token (``hardware.kv_bytes_per_token`` of its shape in ``SCENARIO``)."""
    a = SCENARIO.target(model)
    return hardware.kv_bytes_per_token(a["layers"], a["kv_heads"], a["head_dim"])


def paper_coefficients(target: str = "Qwen3-32B", profile="li2026_paper") -> dict[str, float]:
    """Eq (19)'s coefficients for Qwen3-32B from ``profile`` (Table 12's in ``li2026_paper``); Qwen3-14B's
    carried to its shape (``shape_scaling``: the paper gives none for it). ``profile``: eq (19)'s coefficients themselves
    (a mapping, as a ``Setting`` carries them), a loaded profile, or a profile's name or path."""
    shape = SCENARIO.target(target)
    co = profile if isinstance(profile, Mapping) else hardware.as_profile(profile).coefficients("verify")
    if target == "Qwen3-32B":
        return {k: float(co[k]) for k in COEFFICIENTS}
    return scale_coefficients(co, SCENARIO.target("Qwen3-32B"), shape)


# the files a sweep point reads: their content is part of its cache key (``sweep.point_version``)
SWEEP_INPUTS = acceptance_sources.source(SCENARIO.pair).sweep_inputs


def acceptance() -> TraceAcceptance:
    """The scenario's traces with their stop rules (``acceptance_sources``' ``zoo``: the committed MLP as ``mlp``)."""
    return acceptance_sources.acceptance(SCENARIO.pair)


def alpha(draft: str, controlled: bool, window: int = 8, temperature: float = 0.0, draws: int = 4000,
          acc: TraceAcceptance | None = None, domains=DOMAINS) -> float:
    """Eq (5)'s alpha a device reports (``client_mix.reported_alpha``) on ``acc`` (default: the zoo's ``acceptance()``)."""
    return client_mix.reported_alpha(acceptance() if acc is None else acc, draft, controlled, window, temperature, draws,
                                     domains)


def classes_for(point: Point) -> list[int]:
    if point.slo_class is not None:
        return [point.slo_class] * point.devices
    rng = np.random.default_rng(np.random.SeedSequence([point.seed, 11]))
    return [int(x) for x in rng.choice(CLASSES, size=point.devices)]


def workload(point: Point, drafts=DRAFTS, domains=DOMAINS, acc: TraceAcceptance | None = None,
             target: str = "target-m") -> Workload:
    """The point's devices: device i drafts with ``drafts[i % len]`` on domains i and i + len/2 of ``domains``,
    reporting the α of its drafting rule over the traces ``acc`` (default: the zoo's)."""
    st = point.setting
    system = SCENARIO.system(point.system)
    controlled = point.predictor and system.predictor
    clients, n = [], len(domains)
    for i, c in enumerate(classes_for(point)):
        draft = drafts[i % len(drafts)]
        clients.append(ClientSpec(draft, (domains[i % n], domains[(i + n // 2) % n]), 1,
                                  st.max_new_tokens, st.gamma, "predictor:mlp" if controlled else "fixed",
                                  st.temperature, c, alpha(draft, controlled, st.gamma, st.temperature, acc=acc,
                                                           domains=domains),
                                  st.prompt_tokens, seed=point.seed))
    return Workload(target, tuple(clients), capacity=10**9, cache=system.prefix_cache,
                    kv_bytes_per_token=kv_bytes_per_token(point.target))


def estimator(point: Point) -> Estimator:
    st = point.setting
    return Estimator.from_coefficients(**paper_coefficients(point.target, dict(st.verify) or st.profile))


def kv_budget(point: Point) -> float:
    """Bytes of KV the server holds: ``memory_gb`` beside Qwen3-32B's weights; a smaller target's bf16 weights
    leave the difference free as well (Qwen3-14B: 36 GB more)."""
    return point.setting.memory_gb * 1e9 + (weight_bytes(SCENARIO.target("Qwen3-32B")) - weight_bytes(SCENARIO.target(point.target)))


def former(point: Point, est: Estimator):
    """The point's batch former (``policies.former`` by the system's name), within ``kv_budget``: the registry hands
    each builder the keywords it takes (WISP's the estimate and guard time; FCFS its log label, e.g. SLED)."""
    return policies.former(SCENARIO.system(point.system).former, estimator=est, delta=point.setting.delta_s,
                           memory_budget=kv_budget(point), label=point.system)


def times(point: Point, est: Estimator) -> Times:
    """The point's step times: k draft passes of ``s_per_token`` seconds each, taken as the stated rate 1 /
    ``s_per_token`` tokens/s (``time_models.DraftRate``; a round the stop rule ended takes one pass more than its S
    tokens: ``interfaces.Times``), eq (19) with the setting's noise, half of ``rtt_s`` each way."""
    st = point.setting
    return time_models.times([time_models.DraftRate(1 / st.s_per_token)] * point.devices, time_models.Latency(st.rtt_s / 2),
                             time_models.noisy(est, st.noise, point.seed))


def run_log(point: Point, wl: Workload | None = None, acc=None, wrap=None) -> pd.DataFrame:
    """The per-round log of one point (``interfaces.LOG_COLUMNS``); ``wl`` and ``acc`` (default: the zoo's
    ``workload(point)`` and ``acceptance()``) let another pair's devices and traces run the same systems;
    ``wrap(former) -> former`` stands between the twin and the point's batch former (e.g. to record its
    decisions)."""
    st = point.setting
    est = estimator(point)
    wl = workload(point) if wl is None else wl
    if SCENARIO.system(point.system).former is None:
        with gc_paused():
            return centralized.simulate(wl, time_models.noisy(est, st.noise, point.seed), until=st.horizon_s, rtt=st.rtt_s,
                                        memory_budget=kv_budget(point))
    f = former(point, est)
    return simulate(wl, f if wrap is None else wrap(f), FixedS(st.gamma * point.devices, point.devices), times(point, est),
                    acceptance() if acc is None else acc, until=st.horizon_s, seed=point.seed, label=point.system)


def run_point(point: Point, log: pd.DataFrame | None = None) -> dict:
    """One sweep row: the point's configuration and ``metrics.slo_summary`` of its run over the steady window;
    of ``log`` when given (the point's run on another pair), else of ``run_log(point)``."""
    st = point.setting
    log = run_log(point) if log is None else log
    return dict(system=point.system, devices=point.devices, slo_class=point.slo_class, target=point.target,
                predictor=point.predictor, seed=point.seed,
                **metrics.slo_summary(log, st.max_new_tokens, st.warmup_s, st.horizon_s, CLASSES))


# --------------------------------------------------------------------------- the open settings, fitted to Table 3
OPEN_SETTINGS = paths.DATA / "li2026" / "serving_open_settings.csv"
TABLE3 = ("SLED", "Centralized", "WISP")
T3 = "Table 3: {} goodput (tokens/s)"     # a fit target's name (calibration.csv)


def open_settings() -> pd.DataFrame:
    """Every setting the paper leaves open: its current value, whether Table 3 fits it (role ``fit``, with the
    candidates searched at each scale) or it is kept, and the paper's sentence that leaves it open."""
    return pd.read_csv(OPEN_SETTINGS, dtype=str, keep_default_na=False)


def calibration_grid(scale: str) -> dict[str, list]:
    """The fitted settings (``open_settings`` role ``fit``) and their candidates at ``scale`` ("ci" or "full")."""
    if scale not in ("ci", "full"):
        raise ValueError(f"scale: expected 'ci' or 'full', got {scale!r}")
    return calibration.open_grid(open_settings(), scale, {k: type(v) for k, v in vars(SCENARIO.base).items()})


def table3_points(setting: Setting, n3: int, seeds) -> list[Point]:
    """Table 3's runs: SLED, centralized serving and WISP at ``n3`` devices of mixed classes, each seed."""
    return [SCENARIO.point(s, n3, None, seed=k, setting=setting) for s in TABLE3 for k in seeds]


def fits(setting: Setting, target: str = "Qwen3-32B") -> bool:
    """Whether one whole response (prompt + ``max_new_tokens``) of ``target`` fits the KV memory ``memory_gb``
    leaves it: else centralized serving can hold no response and a candidate of the calibration is infeasible
    (an infinite loss, never run)."""
    return kv_bytes_per_token(target) * (setting.prompt_tokens + setting.max_new_tokens) <= kv_budget(
        SCENARIO.point("SLED", 1, target=target, setting=setting))


def calibrate(setting: Setting, grid: dict, targets: dict, n3: int, seeds, run, rounds: int = 4) -> calibration.Fit:
    """``grid``'s settings (on ``setting``) fitted to Table 3's goodputs (``targets``: ``T3`` of a system -> tokens/s),
    each candidate's goodputs the mean over ``seeds`` of its runs at ``n3`` devices, every candidate's points
    one ``run(points)`` (a sweep runner); a range whose best value is at its end is extended and searched again
    (``calibration.fit_interior``, up to ``rounds`` times). Centralized serving has no drafting: its points keep
    ``setting``'s drafting speed, so one run serves every drafting speed. A candidate whose KV memory cannot hold
    one response (``fits``) is infeasible: an infinite loss, never run. ``Fit.searched`` adds each candidate's
    loss on each seed alone (``loss_seed<k>``: how far one seed's fit would move)."""
    good: dict = {}

    def points(st: Setting) -> list[Point]:
        return [_dc_replace(p, setting=SCENARIO.setting(st, s_per_token=setting.s_per_token)) if p.system == "Centralized" else p
                for p in table3_points(st, n3, seeds)]

    def evaluate(cands: list[dict]) -> list[dict]:
        per = [points(SCENARIO.setting(setting, **c)) if fits(SCENARIO.setting(setting, **c)) else [] for c in cands]
        unique = [p for p in dict.fromkeys(p for ps in per for p in ps) if p not in good]
        if unique:
            good.update(zip(unique, run(unique).goodput, strict=True))
        return [{T3.format(s): float(np.mean([good[p] for p in ps if p.system == s])) if ps else np.nan for s in TABLE3}
                for ps in per]

    fit = calibration.fit_interior(evaluate, grid, targets, rounds)
    for k in seeds:
        fit.searched[f"loss_seed{k}"] = [
            calibration.loss({T3.format(s): good[p] for p in points(SCENARIO.setting(setting, **c)) if p.seed == k for s in [p.system]},
                             targets) if fits(SCENARIO.setting(setting, **c)) else np.inf
            for c in fit.searched[list(fit.grid)].to_dict("records")]
    return fit


# --------------------------------------------------------------------------- tables from sweep rows


def throughput_bound(point: Point, epsilon: float) -> float:
    """``capacity.throughput_bound`` of the point's system and class: every request at a response's mean context
    (prompt + max_new_tokens / 2), the traced rounds of each of ``DRAFTS`` under the system's drafting rule."""
    if point.slo_class is None:
        raise ValueError("point.slo_class: a capacity search needs one class for every device")
    st, system = point.setting, SCENARIO.system(point.system)
    rounds = None if system.former is None else [
        client_mix.round_sums(acceptance(), d, point.predictor and system.predictor, st.gamma, st.temperature,
                              domains=DOMAINS) for d in DRAFTS]
    return capacity.throughput_bound(estimator(point), st.prompt_tokens + st.max_new_tokens / 2, point.slo_class, epsilon,
                                     rounds, system.prefix_cache)


def throughput_guess(point: Point, epsilon: float) -> int:
    """A capacity search's first upper bracket (``capacity.search``'s ``guess``, presumed to violate, so the
    search skips the large N): ``throughput_bound`` rounded up to ``capacity.grid`` (at most 12.5 % above)."""
    return capacity.grid(throughput_bound(point, epsilon))


def capacity_of(curve: Curve) -> dict:
    """One capacity search (``capacities`` of one curve, its points run here, read from / written to
    ``curve.point_cache`` when set)."""
    return capacities([curve], rows=True)[0]


def capacities(curves: list[Curve], run=None, decisive: float | None = capacity.DECISIVE, rows: bool = False):
    """Eq (20)'s searches of ``curves`` (``capacity.capacities``: in lockstep, each round's points one call
    ``run(points, run_point)``, a point decided on its first seed where its Wilson interval at ``decisive`` lies
    on one side of epsilon) of the pooled response-level violation rate, bracketed first by ``throughput_guess``
    and widened up to ``curve.hi`` (reaching it: ``censored``, a lower bound). Without ``run`` the points run
    here, through the sweep cache ``curve.point_cache`` when set (``rows``: as dicts)."""
    table = capacity.capacities(curves, _point, run_point, _guess, run, decisive, _point_cost)
    return table if rows else pd.DataFrame(table)


def _point(curve: Curve, n: int, seed: int) -> Point:
    return SCENARIO.point(curve.system, n, curve.slo_class, curve.target, seed=seed, setting=curve.setting)


def _guess(curve: Curve) -> int:
    return throughput_guess(SCENARIO.point(curve.system, 1, curve.slo_class, curve.target, setting=curve.setting), curve.epsilon)


def _point_cost(point: Point) -> float:
    """A point's expected cost, for ordering a round's points: its devices (centralized serving's token
    steps are cheaper to simulate)."""
    return point.devices * (1.0 if SCENARIO.system(point.system).former else 0.3)


def curves(systems, targets, classes, *, epsilon: float, seeds: int, seed: int, setting: Setting, hi: int,
           point_cache: str = "", resolution: float = 0.0) -> list[Curve]:
    """Table 2's searches: one per (target, system, class), in that order."""
    return [Curve(s, t, c, epsilon, seeds, seed, hi, setting, str(point_cache), resolution) for t in targets
            for s in systems for c in classes]


def capacity_table(systems, targets, classes, *, epsilon: float, seeds: int, seed: int, setting: Setting,
                   hi: int, run, point_cache: str = "", resolution: float = 0.0) -> pd.DataFrame:
    """Table 2: one capacity search per (target, system, class) (``capacities``), their points run by
    ``run`` (a sweep runner); ``resolution``: where each search stops."""
    return capacities(curves(systems, targets, classes, epsilon=epsilon, seeds=seeds, seed=seed, setting=setting,
                             hi=hi, point_cache=point_cache, resolution=resolution), run)
