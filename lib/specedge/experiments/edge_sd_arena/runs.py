"""The edge speculative-decoding arena: every technique on one workload, one set of devices, one server.

A **scenario** (``data/scenarios/<name>.yaml``, ``load_scenario``: ``serving.scenario``) names the devices, the link,
the verification server, the workload (the real Qwen2.5-Coder 0.5B -> 1.5B pair's traces) and the **policy** of
every option below by registry name (``policies:``). A **combination** picks one option per technique, composed
in the serving twin (``serving.sim.twin.simulate``):

==============  ==========================================================================================
technique       options (the first is "off", the ablation's baseline)
==============  ==========================================================================================
draft length    ``fixed`` γ; ``goodspeed`` (tran2025 Alg 1, ``allocation.GoodspeedAllocator``, budget C = γN);
                ``goodspeed-slo`` (the plug-in: ``slo_weighted_allocation``, weights = SLO class);
                ``wisp-stop`` (li2026's stop at the first predicted rejection, the MLP retrained on the pair);
                ``as2`` (zheng2025's AS² per device, ``as2_allocation``: γ* of its α̂ and its cost L incl. the payload)
uplink payload  ``dense`` rows of |V| float32; ``topk`` TK-SLT's K (index, prob) pairs; ``ids`` token ids only
                (exact for greedy verification only) — sizes are the wire codec's own messages (``codec``)
batch former    ``sync`` GOODSPEED's rounds; ``fcfs``; ``wisp`` li2026 Algorithm 1 (``wisp_batching``)
==============  ==========================================================================================

plus two references: ``centralized`` (every token decoded on the server, continuously batched) and ``AR on the
edge`` (every token decoded by the target on the device, ``Scenario.ar_s``: derived, not measured; docs/arena.md
says why, and why FSD pre-drafting is not composed). Goodput is named apart: ``goodput_tok_s`` (per-device tok/s,
GOODSPEED's) and ``goodput_slo_rps`` (responses/s within their SLO class). Every point (``Point``) is a pure
function of plain values, run by ``specedge.sweep``; ``run_point`` returns its row (``serving.analysis.metrics.fleet``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ... import sweep
from ...serving.analysis import client_mix, metrics
from ...serving import acceptance_sources, scenario
from ...serving.timemodels import time_models
from ...serving.real.codec import PAYLOADS
from ...serving.timemodels.estimator import Estimator
from ...serving.scenario import Scenario
from ...serving.interfaces import Times
from ...serving.sim.twin import simulate
from ...serving.workload import Workload

DRAFTS = ("fixed", "goodspeed", "goodspeed-slo", "wisp-stop", "as2")
FORMERS = ("sync", "fcfs", "wisp")
TECHNIQUES = {"draft": DRAFTS, "payload": PAYLOADS, "former": FORMERS}
CENTRALIZED = "centralized"
AR_EDGE = "AR on the edge"
REFERENCES = (CENTRALIZED, AR_EDGE)
# metric -> +1 (higher is better) / -1; NaN where a metric does not apply (the reference systems have no passes
# of drafts; centralized serving sends no drafts uplink, AR on the edge nothing at all: 0 bytes)
METRICS = {"goodput_tok_s": 1, "goodput_min_tok_s": 1, "jain": 1, "slo_attainment": 1, "goodput_slo_rps": 1,
           "tokens_per_pass": 1, "uplink_bytes_per_token": -1, "ttft_s": -1, "ttft_max_s": -1, "tpot_s": -1,
           "tpot_max_s": -1}
PAIR = "realpair"    # the acceptance source the arena's devices draft on (``serving.acceptance_sources``)
SWEEP_INPUTS = acceptance_sources.source(PAIR).sweep_inputs


# --------------------------------------------------------------------------- the scenario
PAIRS = {PAIR: acceptance_sources.source(PAIR).window}   # the traced pairs with a retrained stop rule, and their window


def load_scenario(name_or_path="arena_default", scale: str = "full") -> Scenario:
    """The scenario ``data/scenarios/<name>.yaml`` (or a path), checked (``serving.scenario.load``: a policy for every
    option of ``DRAFTS`` and ``FORMERS``), its workload on the real pair's traces; at ``scale="ci"`` with its ``ci:`` values."""
    return scenario.load(name_or_path, scale, windows=PAIRS, options={"draft": DRAFTS, "former": FORMERS})


# --------------------------------------------------------------------------- combinations and points
@dataclass(frozen=True)
class Combination:
    """One option per technique (``TECHNIQUES``), or a reference system (``system``: ``REFERENCES``)."""
    draft: str = "fixed"
    payload: str = "dense"
    former: str = "sync"
    system: str = "edge"

    def __post_init__(self):
        if self.system not in ("edge",) + REFERENCES:
            raise ValueError(f"system: expected 'edge' or one of {REFERENCES}, got {self.system!r}")
        for tech, options in TECHNIQUES.items():
            if getattr(self, tech) not in options:
                raise ValueError(f"{tech}: expected one of {options}, got {getattr(self, tech)!r}")

    @property
    def label(self) -> str:
        return self.system if self.system in REFERENCES else f"{self.draft} / {self.payload} / {self.former}"

    def switched_off(self, technique: str) -> "Combination":
        """The combination with ``technique`` at its baseline option (the first of ``TECHNIQUES``)."""
        return dataclasses.replace(self, **{technique: TECHNIQUES[technique][0]})


def combinations(drafts=DRAFTS, payloads=PAYLOADS, formers=FORMERS, centralized_reference: bool = True) -> list[Combination]:
    """Every edge combination of the options given, then (``centralized_reference``) both reference systems."""
    out = [Combination(d, p, f) for d in drafts for p in payloads for f in formers]
    return out + ([Combination(system=r) for r in REFERENCES] if centralized_reference else [])


def from_label(label: str) -> Combination:
    if label in REFERENCES:
        return Combination(system=label)
    return Combination(*label.split(" / "))


@dataclass(frozen=True)
class Point:
    combo: Combination
    bandwidth_bps: float
    devices: int
    mix: str
    seed: int
    scenario: Scenario


def points(scn: Scenario, combos, seeds: list[int]) -> list[Point]:
    """Every (combination, bandwidth, devices, mix, seed) of the scenario's sweep."""
    return [Point(c, b, n, m, s, scn) for b in scn.bandwidths for n in scn.devices for m, _ in scn.mixes
            for c in combos for s in seeds]


REGIME_DRAFTS = ("fixed", "goodspeed", "wisp-stop", "as2")
PLUG_IN = "goodspeed-slo"


def arena_points(scn: Scenario, seed: int = 0) -> list[Point]:
    """The notebook's sweep: every combination of ``REGIME_DRAFTS`` x payloads x formers and both reference
    systems at every point, ``scn.seeds`` seeds spawned from ``seed``; the plug-in (``PLUG_IN``) with every
    payload and former at the reference point only (its ablation row)."""
    seeds = sweep.seeds(seed, scn.seeds)
    b, n, m = scn.reference
    plug = [Point(c, b, n, m, s, scn) for c in combinations((PLUG_IN,), centralized_reference=False) for s in seeds]
    return points(scn, combinations(REGIME_DRAFTS), seeds) + plug


def regime_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the full grid (the plug-in ran at the reference point only)."""
    return rows[rows.draft != PLUG_IN]


# --------------------------------------------------------------------------- one run
def workload(point: Point) -> Workload:
    """Device i: the pair's 0.5B draft on domains i and i + 4 of the pair's eight, SLO class i mod 4 (tok/s),
    drafting by its option's rule (``policies.draft``), reporting that rule's α (eq 5)."""
    scn, src = point.scenario, acceptance_sources.source(point.scenario.pair)
    rule = scn.policy("draft", point.combo.draft).rule
    alpha = client_mix.reported_alpha(acceptance_sources.acceptance(scn.pair), src.drafts[0], rule.stops,
                                      src.window, scn.temperature, domains=src.domains)
    clients = scenario.clients(scn, point.devices, src.drafts[0], src.domains, rule, alpha, point.seed)
    return Workload(src.target, clients, capacity=scn.gamma * point.devices, kv_bytes_per_token=scn.kv_bytes_per_token)


def times(point: Point, verify) -> Times:
    """Drafting at the device class's seconds per token; each device's link RTT/2 + the wire codec's bytes /
    bandwidth each way (``serving.scenario.times``)."""
    return scenario.times(point.scenario, point.devices, point.mix, point.combo.payload, point.bandwidth_bps, verify)


def as2_costs(point: Point) -> dict[int, float]:
    """zheng2025 eq (6)'s cost L_i per device at the point's payload and bandwidth (``serving.scenario.as2_costs``)."""
    return scenario.as2_costs(point.scenario, point.devices, point.mix, point.combo.payload, point.bandwidth_bps)


def allocator(point: Point, wl: Workload):
    """The draft option's allocator by its policy (``serving.scenario.allocator``: weights, AS²'s costs)."""
    return scenario.allocator(point.scenario, point.combo.draft, wl, point.mix, point.combo.payload, point.bandwidth_bps)


def former(point: Point, est: Estimator):
    """The former option's batch former by its policy (``serving.scenario.former``), WISP's on eq (19)."""
    return scenario.former(point.scenario, point.combo.former, est)


def run_log(point: Point, acceptance=None) -> pd.DataFrame:
    """The per-round log of one point (``interfaces.LOG_COLUMNS``) by its system: the twin with the combination's
    former, allocator and link (``acceptance`` replaces the pair's traces), centralized serving or AR on the edge."""
    scn, c = point.scenario, point.combo
    est, wl = scenario.estimator(scn), workload(point)
    verify = time_models.noisy(est, scn.noise, point.seed)
    if c.system == CENTRALIZED:
        return scenario.centralized_log(scn, wl, verify)
    if c.system == AR_EDGE:
        return ar_edge_log(point, wl)
    acc = acceptance_sources.acceptance(scn.pair) if acceptance is None else acceptance
    return simulate(wl, former(point, est), allocator(point, wl), times(point, verify), acc, until=scn.horizon_s,
                    seed=point.seed, label=c.label)


def ar_edge_log(point: Point, wl: Workload) -> pd.DataFrame:
    """AR on the edge: each device decodes its own responses with the target (``serving.scenario.on_device_log``)."""
    return scenario.on_device_log(point.scenario, wl, point.mix, AR_EDGE)


def measure(point: Point, log: pd.DataFrame) -> dict:
    """The row of metrics of one run (``METRICS``): the fleet's (``serving.analysis.metrics.fleet``: per-device goodput,
    SLO attainment per response (li2026 Sec 5.3), request goodput, TTFT and TPOT), committed tokens per pass,
    uplink bytes per token (AR on the edge: no server pass, nothing on the link)."""
    scn, c = point.scenario, point.combo
    edge = c.system == "edge"
    return dict(combination=c.label, draft=c.draft if edge else "", payload=c.payload if edge else "",
                former=c.former if edge else "", bandwidth_bps=point.bandwidth_bps, devices=point.devices, mix=point.mix,
                seed=point.seed, **metrics.fleet(log, point.devices, scn.max_new_tokens, scn.warmup_s, scn.horizon_s),
                tokens_per_pass=metrics.tokens_per_pass(log) if edge else np.nan,
                uplink_bytes_per_token=metrics.uplink_bytes_per_token(log) if edge else 0.0 if c.system == AR_EDGE else np.nan)


def run_point(point: Point) -> dict:
    return measure(point, run_log(point))


__all__ = ["load_scenario", "Combination", "combinations", "from_label", "Point", "points",
           "arena_points", "regime_rows", "as2_costs", "workload", "times", "allocator", "former", "run_log", "measure", "run_point",
           "METRICS", "TECHNIQUES", "CENTRALIZED"]
