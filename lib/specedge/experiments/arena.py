"""The edge speculative-decoding arena: every technique on one workload, one set of devices, one server.

A **scenario** (``data/scenarios/<name>.yaml``, ``load_scenario``) names device classes (draft seconds per
token from hardware profiles), the link (RTT, a sweep of bandwidths), the verification server (a profile's
eq (19) model, li2026 Table 12) and the workload (the real Qwen2.5-Coder 0.5B -> 1.5B pair's acceptance
traces, SLO classes, closed-loop arrivals). A **combination** picks one option per technique, each the
repository's own implementation, composed in the serving twin (``serving.twin.simulate``):

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

plus two references: ``centralized`` (every token decoded on the server, continuously batched:
``serving.centralized``) and ``AR on the edge`` (every token decoded by the target on the device, nothing on
the link: ``serving.centralized``'s loop run on each device alone, one device, one sequence, its step the
target's seconds per token on that device class, ``Scenario.ar_s``).

**AR on the edge's runtime model is derived, not measured**: it is the server's target (Qwen3-32B, whose eq (19)
times the server), so that every system serves the same model, and no profile gives its speed on a phone, a
Jetson or an L4. Decoding one token at batch 1 reads every weight once (memory-bandwidth bound, the same
derivation as ``tran2025_paper``'s ``draft_small``/``draft_large``), so on one device the target takes the
class's draft seconds per token times the ratio of their weights, the scenario's
``ar_on_the_edge.target_to_draft_bytes`` (Qwen3-32B / Qwen3-0.6B: 54.7). Optimistic: such weights fit in none of
these devices but an L4 at 4 bits, and the Jetson's draft number is venkatesha2025's 68M draft's; the prompt's
prefill is priced as one such pass (a lower bound where prefill is compute bound, e.g. a phone).

**FSD pre-drafting (venkatesha2025) is not composed, deliberately.** What it changes in a round: while the
server verifies, each early exit's outcome streams to the device, which pre-drafts the next round after it;
when the final outcome matches a finished pre-draft (a cache hit) the next round's drafting time is hidden.
The twin cannot model that honestly with the repository's own pieces: (1) the hit rate is a property of the
target's early-exit adapters against the draft, and adapters exist only for the zoo's targets
(``early_exit.EarlyExits``, ``data/zoo/adapters/``), not for the real pair's 1.5B target whose traces drive
the arena (its traces hold no early-exit outcomes); borrowing the zoo's miss rate would be imitation;
(2) whether a pre-draft finishes depends on this round's verification time, the exits' downlink
messages and the device's pre-drafting threads (``early_exit.sim``), while ``serving.twin`` prices a round's
drafting before its verification and carries one reply per round — it needs a hook (the next round's draft
time as a function of the previous round's verification and its exits), to be added by the twin's owner;
(3) the adapters' own verification cost is measured only on this machine's zoo targets. Not in this slice
either: top-K's effect on acceptance at T > 0 (only its mean α(K) is measured, not per position), a shared
uplink medium.

Goodput is named apart in every table: ``goodput_tok_s`` (per-device committed tokens/s, GOODSPEED's) and
``goodput_slo_rps`` (responses/s that met their SLO class, the serving literature's request goodput).

Every point (``Point``: combination x bandwidth x devices x mix x seed) is a pure function of plain values,
run by ``specedge.sweep``; ``run_point`` returns one row of metrics, each defined once (``serving.metrics``,
``serving.metrics.client_goodput``, ``serving.metrics.response_violations``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import sweep
from ..serving import centralized, metrics, policies, scenario, time_models
from ..serving.allocation import PAPER_BETA
from ..serving.codec import PAYLOADS, payload_bytes
from ..serving.estimator import Estimator
from ..serving.scenario import Scenario
from ..serving.twin import Times, simulate
from ..serving.workload import ClientSpec, Workload
from ..solvers.zheng2025 import measured_cost
from ..zoo.realpair import DRAFT, TARGET
from . import li2026_realpair
from .realpair_card import ALL_DOMAINS

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
SWEEP_INPUTS = li2026_realpair.SWEEP_INPUTS


# --------------------------------------------------------------------------- the scenario
PAIRS = {"realpair": li2026_realpair.WINDOW}   # the traced pairs with a retrained stop rule, and their window


def load_scenario(name_or_path="arena_default", scale: str = "full") -> Scenario:
    """The scenario ``data/scenarios/<name>.yaml`` (or a path), checked (``serving.scenario.load``), its
    workload on the real pair's traces; at ``scale="ci"`` with its ``ci:`` values."""
    return scenario.load(name_or_path, scale, windows=PAIRS)


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
    reporting the α of its drafting rule (eq 5)."""
    scn, c = point.scenario, point.combo
    rule = {"fixed": "fixed", "wisp-stop": "predictor:mlp"}.get(c.draft, "server")
    alpha = li2026_realpair.device_alpha(rule.startswith("predictor"), scn.temperature)
    n = len(ALL_DOMAINS)
    clients = tuple(ClientSpec(DRAFT, (ALL_DOMAINS[i % n], ALL_DOMAINS[(i + n // 2) % n]), 1, scn.max_new_tokens,
                               scn.gamma, rule, scn.temperature, scn.slo_classes[i % len(scn.slo_classes)], alpha,
                               scn.prompt_tokens, seed=point.seed) for i in range(point.devices))
    return Workload(TARGET, clients, capacity=scn.gamma * point.devices, kv_bytes_per_token=scn.kv_bytes_per_token)


def times(point: Point, verify) -> Times:
    """Drafting at the device class's seconds per token; each device's link RTT/2 + the wire codec's bytes /
    bandwidth each way (``serving.time_models``)."""
    scn, bw, c = point.scenario, point.bandwidth_bps, point.combo
    if c.payload == "ids" and scn.temperature > 0:
        raise ValueError(f"payload 'ids': token ids alone verify only greedy decoding; the scenario has T = {scn.temperature:g}")
    if c.payload == "topk" and scn.temperature > 0:
        raise ValueError("payload 'topk' at T > 0: its acceptance is not traced per position (only the mean "
                         "α(K) of data/realpair/topk_acceptance.csv); not in this slice")
    link = time_models.Link(scn.rtt_s, bw, lambda s: payload_bytes(c.payload, int(s), scn.vocab_size, scn.top_k))
    drafts = [time_models.DraftTime(scn.draft_s(i, point.mix)) for i in range(point.devices)]
    return time_models.times(drafts, link, verify)


def as2_costs(point: Point) -> dict[int, float]:
    """zheng2025 eq (6) per device: L_i = (T_SLM,i + T_V) / T_LLM (``solvers.zheng2025.measured_cost``), T_SLM,i its
    seconds per drafted token, T_V the uplink of one drafted token's distribution (dense: |V| float32; top-K: K
    float32 + K int32; ids: none, the eq neglects token ids), T_LLM one standalone decoding step of the target
    (eq 19: one new token at a response's mean context, prompt + max_new_tokens / 2)."""
    scn, p = point.scenario, point.combo.payload
    ctx = scn.prompt_tokens + scn.max_new_tokens / 2
    t_llm = Estimator.from_coefficients(**dict(scn.server)).time(1, ctx + 1, ctx)
    k, bits = {"dense": (scn.vocab_size, 32), "topk": (scn.top_k, 64), "ids": (0, 32)}[p]
    return {i: float(measured_cost(k, scn.draft_s(i, point.mix), t_llm, point.bandwidth_bps, bits))
            for i in range(point.devices)}


# each draft option's allocator (``serving.policies``): fixed γ and WISP's stop rule draft on the device, the
# allocation is unused
ALLOCATOR = {"fixed": "fixed", "goodspeed": "goodspeed", "goodspeed-slo": "goodspeed-slo", "wisp-stop": "fixed", "as2": "as2"}


def allocator(point: Point, wl: Workload):
    """The draft option's allocator, GOODSPEED's at tran2025's β (``allocation.PAPER_BETA``), the SLO-weighted one
    weighting each device by its class, AS² with its eq (6) costs (``as2_costs``: computed for AS² alone, which
    needs the server's standalone step time)."""
    return policies.allocator(ALLOCATOR[point.combo.draft], capacity=wl.capacity, clients=point.devices, beta=PAPER_BETA,
                              weights={i: float(s.slo_class) for i, s in enumerate(wl.clients)},
                              costs=as2_costs(point) if ALLOCATOR[point.combo.draft] == "as2" else None)   # its inputs only then


def former(point: Point, est: Estimator):
    """The batch former by name (``serving.policies``), within the server's memory; WISP's on eq (19)."""
    scn = point.scenario
    return policies.former(point.combo.former, estimator=est, delta=scn.delta_s, memory_budget=scn.memory_gb * 1e9)


def run_log(point: Point, acceptance=None) -> pd.DataFrame:
    """The per-round log of one point (``interfaces.LOG_COLUMNS``) by its system (``SYSTEMS``); ``acceptance``
    replaces the pair's traces."""
    scn = point.scenario
    est = Estimator.from_coefficients(**dict(scn.server))
    return SYSTEMS[point.combo.system](point, workload(point), est, time_models.noisy(est, scn.noise, point.seed), acceptance)


def edge_log(point: Point, wl: Workload, est: Estimator, verify, acceptance=None) -> pd.DataFrame:
    """Speculative decoding at the edge: the twin with the combination's former, allocator and link."""
    acc = li2026_realpair.acceptance() if acceptance is None else acceptance
    return simulate(wl, former(point, est), allocator(point, wl), times(point, verify), acc, until=point.scenario.horizon_s,
                    seed=point.seed, label=point.combo.label)


def centralized_log(point: Point, wl: Workload, est: Estimator, verify, acceptance=None) -> pd.DataFrame:
    """Every token decoded on the server, continuously batched within its memory (``serving.centralized``)."""
    scn = point.scenario
    return centralized.simulate(wl, verify, until=scn.horizon_s, rtt=scn.rtt_s, memory_budget=scn.memory_gb * 1e9)


def ar_edge_log(point: Point, wl: Workload, est=None, verify=None, acceptance=None) -> pd.DataFrame:
    """AR on the edge: each device decodes its own responses with the target, one token per step of
    ``Scenario.ar_s`` seconds, back to back, nothing on the link (``serving.centralized.on_device``), its log
    rows renumbered to the device."""
    scn = point.scenario
    logs = [centralized.on_device(TARGET, scn.ar_s(i, point.mix), spec.prompt_tokens, spec.max_new_tokens, spec.slo_class,
                                  scn.horizon_s, AR_EDGE).assign(client=i) for i, spec in enumerate(wl.clients)]
    return pd.concat(logs, ignore_index=True)


SYSTEMS = {"edge": edge_log, CENTRALIZED: centralized_log, AR_EDGE: ar_edge_log}   # system -> its log of one point


def measure(point: Point, log: pd.DataFrame) -> dict:
    """The row of metrics of one run (``METRICS``): per-device goodput (``goodput_tok_s``: tok/s over each
    device's span: mean, the slowest device, Jain's index), SLO attainment (responses started after warm-up
    meeting their class, li2026 Sec 5.3; ``violations`` of ``responses`` decided), request goodput
    (``goodput_slo_rps``: responses/s within their SLO), TTFT and TPOT (``metrics.client_first_token_times``: the mean over
    devices of each device's mean, and the worst device's), committed tokens per pass, uplink bytes per token
    (AR on the edge: no server pass, nothing on the link)."""
    scn = point.scenario
    gp = metrics.client_goodput(log).reindex(range(point.devices), fill_value=0.0)
    resp = metrics.response_violations(log, scn.max_new_tokens, scn.warmup_s, scn.horizon_s)
    ft = metrics.client_first_token_times(log, scn.max_new_tokens, scn.warmup_s, scn.horizon_s)
    edge = point.combo.system == "edge"
    return dict(combination=point.combo.label, draft=point.combo.draft if edge else "", payload=point.combo.payload if edge else "",
                former=point.combo.former if edge else "", bandwidth_bps=point.bandwidth_bps, devices=point.devices,
                mix=point.mix, seed=point.seed, goodput_tok_s=float(gp.mean()), goodput_min_tok_s=float(gp.min()), jain=metrics.jain(gp),
                slo_attainment=float(1 - resp["violated"].mean()) if len(resp) else np.nan,
                goodput_slo_rps=float((~resp["violated"]).sum()) / (scn.horizon_s - scn.warmup_s), responses=len(resp),
                violations=int(resp["violated"].sum()), ttft_s=float(ft.ttft.mean()), ttft_max_s=float(ft.ttft.max()),
                tpot_s=float(ft.tpot.mean()), tpot_max_s=float(ft.tpot.max()),
                tokens_per_pass=metrics.tokens_per_pass(log) if edge else np.nan,
                uplink_bytes_per_token=metrics.uplink_bytes_per_token(log) if edge else 0.0 if point.combo.system == AR_EDGE else np.nan)


def run_point(point: Point) -> dict:
    return measure(point, run_log(point))


__all__ = ["Scenario", "load_scenario", "Combination", "combinations", "from_label", "Point", "points",
           "arena_points", "regime_rows", "payload_bytes", "as2_costs", "workload", "times", "allocator", "former", "run_log", "measure", "run_point",
           "METRICS", "TECHNIQUES", "CENTRALIZED"]
