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
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .. import hardware, paths, sweep
from ..serving import centralized, metrics
from ..serving.allocation import FixedS, GoodspeedAllocator
from ..serving.as2_allocation import AS2Allocator
from ..serving.batching import FCFS, SyncRounds
from ..serving.estimator import Estimator
from ..serving.slo_weighted_allocation import SLOWeightedGoodspeed
from ..serving.twin import Times, simulate
from ..serving.wisp_batching import WISPBatcher
from ..serving.workload import ClientSpec, Workload
from . import li2026, li2026_realpair, tran2025
from .realpair_card import ALL_DOMAINS
from ..zoo.realpair import DRAFT, TARGET

SCENARIOS = paths.DATA / "scenarios"
DRAFTS = ("fixed", "goodspeed", "goodspeed-slo", "wisp-stop", "as2")
PAYLOADS = ("dense", "topk", "ids")
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
@dataclass(frozen=True)
class Scenario:
    """A scenario at one scale, as plain values (every worker gets the numbers, never a file name)."""
    name: str
    server: tuple[tuple[str, float], ...]            # eq (19)'s coefficients
    memory_gb: float
    delta_s: float
    noise: float
    device_classes: tuple[tuple[str, float], ...]    # class -> seconds per drafted token
    mixes: tuple[tuple[str, tuple[str, ...]], ...]
    rtt_s: float
    bandwidths: tuple[float, ...]
    temperature: float
    vocab_size: int
    top_k: int
    gamma: int
    prompt_tokens: int
    max_new_tokens: int
    slo_classes: tuple[int, ...]
    devices: tuple[int, ...]
    horizon_s: float
    warmup_s: float
    seeds: int
    reference: tuple[float, int, str]                # (bandwidth, devices, mix) of the ablation / Pareto front
    target_to_draft_bytes: float                     # AR on the edge: the target's s/token = the draft's x this
    capacity_attainment: float                       # capacity: the largest N whose SLO attainment reaches this
    capacity_max_devices: int                        # ... searched up to this N

    def mix(self, name: str) -> tuple[str, ...]:
        return dict(self.mixes)[name]

    def draft_s(self, device: int, mix: str) -> float:
        classes = self.mix(mix)
        return dict(self.device_classes)[classes[device % len(classes)]]

    def ar_s(self, device: int, mix: str) -> float:
        """Seconds per token of the target decoding alone on the device (AR on the edge; module docstring)."""
        return self.draft_s(device, mix) * self.target_to_draft_bytes


def _get(d: dict, key: str, file, where: str, kind="number", rule="positive"):
    if key not in d:
        raise hardware.ProfileError(file, f"{where}{key}", kind, missing=True)
    v = d[key]
    if kind == "number":
        hardware._rule(file, f"{where}{key}", v, rule)
    elif kind == "text" and not (isinstance(v, str) and v):
        raise hardware.ProfileError(file, f"{where}{key}", "a non-empty string", v)
    return v


def _numbers(d, key, file, where, rule="positive") -> tuple:
    v = _get(d, key, file, where, "list")
    if not isinstance(v, list) or not v:
        raise hardware.ProfileError(file, f"{where}{key}", "a non-empty list", v)
    for i, x in enumerate(v):
        hardware._rule(file, f"{where}{key}[{i}]", x, rule)
    return tuple(v)


def _device_class(file, name: str, spec) -> float:
    where = f"device_classes.{name}."
    spec = hardware._mapping(file, where[:-1], spec)
    if "s_per_token" in spec:
        _get(spec, "source", file, where, "text")
        return float(_get(spec, "s_per_token", file, where))
    prof = hardware.load_profile(_get(spec, "profile", file, where, "text"))
    runtime = _get(spec, "runtime", file, where, "text")
    if runtime not in prof.runtime:
        raise hardware.ProfileError(file, f"{where}runtime", f"a runtime model of {prof.name} {sorted(prof.runtime)}", runtime)
    kind, co = prof.kind(runtime), prof.coefficients(runtime)
    if kind == "per_token":
        return float(co["c_tok"])
    if kind == "draft_verify_comm":
        return float(co["T_d_s"]) / int(co["gamma"])
    raise hardware.ProfileError(file, f"{where}runtime", "a drafting model of kind per_token or draft_verify_comm",
                                f"{runtime} ({kind})")


def scenario_path(name_or_path) -> Path:
    p = Path(name_or_path)
    return p if p.suffix in (".yaml", ".yml") else SCENARIOS / f"{name_or_path}.yaml"


def load_scenario(name_or_path="arena_default", scale: str = "full") -> Scenario:
    """The scenario ``data/scenarios/<name>.yaml`` (or a path), checked; at ``scale="ci"`` with its ``ci:`` values.
    Errors name the file and the key (``hardware.ProfileError``)."""
    paths.check_scale(scale)
    file = scenario_path(name_or_path)
    if not file.exists():
        raise FileNotFoundError(f"no arena scenario {str(name_or_path)!r} (looked for {file}); "
                                f"available: {sorted(p.stem for p in SCENARIOS.glob('*.yaml'))}")
    data = hardware._mapping(file, "<top level>", yaml.load(file.read_text(), Loader=hardware._Loader))
    for key in ("name", "source", "server", "device_classes", "mixes", "link", "workload", "sweep", "ci"):
        _get(data, key, file, "", "text" if key in ("name", "source") else "mapping")
    if data["name"] != file.stem:
        raise hardware.ProfileError(file, "name", f"the file stem {file.stem!r}", data["name"])
    srv = hardware._mapping(file, "server", data["server"])
    prof = hardware.load_profile(_get(srv, "profile", file, "server.", "text"))
    runtime = _get(srv, "runtime", file, "server.", "text")
    if runtime not in prof.runtime or prof.kind(runtime) != "affine_interactions":
        raise hardware.ProfileError(file, "server.runtime", f"a runtime model of {prof.name} of kind affine_interactions "
                                    "(eq 19: WISP's former needs its estimate)", runtime)
    classes = {n: _device_class(file, n, s) for n, s in hardware._mapping(file, "device_classes", data["device_classes"]).items()}
    mixes = {}
    for n, m in hardware._mapping(file, "mixes", data["mixes"]).items():
        if not isinstance(m, list) or not m or set(m) - set(classes):
            raise hardware.ProfileError(file, f"mixes.{n}", f"a non-empty list of device classes {sorted(classes)}", m)
        mixes[n] = tuple(m)
    link, wl = hardware._mapping(file, "link", data["link"]), hardware._mapping(file, "workload", data["workload"])
    if wl.get("pair") != "realpair":
        raise hardware.ProfileError(file, "workload.pair", "'realpair' (the only traced pair with a retrained stop rule)", wl.get("pair"))
    if wl.get("arrivals") != "closed":
        raise hardware.ProfileError(file, "workload.arrivals", "'closed' (the twin's devices run responses back to back)",
                                    wl.get("arrivals"))
    if int(_get(wl, "gamma", file, "workload.", rule="count")) > li2026_realpair.WINDOW:
        raise hardware.ProfileError(file, "workload.gamma", f"at most the traces' window ({li2026_realpair.WINDOW}: "
                                    "WISP's stop rule drafts within it)", wl["gamma"])
    temperature = float(_get(wl, "temperature", file, "workload.", rule="nonnegative"))
    if temperature not in (0.0, 1.0):
        raise hardware.ProfileError(file, "workload.temperature", "0 or 1 (the pair's traced temperatures)", temperature)
    sw = {**hardware._mapping(file, "sweep", data["sweep"]),
          **(hardware._mapping(file, "ci", data["ci"]) if scale == "ci" else {})}
    where = "ci." if scale == "ci" else "sweep."
    ref = hardware._mapping(file, f"{where}reference", _get(sw, "reference", file, where, "mapping"))
    devices = tuple(int(d) for d in _numbers(sw, "devices", file, where, "count"))
    bandwidths = _numbers(sw if "bandwidth_bps" in sw else link, "bandwidth_bps", file, where if "bandwidth_bps" in sw else "link.")
    reference = (float(_get(ref, "bandwidth_bps", file, f"{where}reference.")), int(_get(ref, "devices", file, f"{where}reference.", rule="count")),
                 _get(ref, "mix", file, f"{where}reference.", "text"))
    if reference[0] not in bandwidths or reference[1] not in devices or reference[2] not in mixes:
        raise hardware.ProfileError(file, f"{where}reference", "a point of the sweep (bandwidth, devices, mix)", ref)
    horizon, warmup = float(_get(sw, "horizon_s", file, where)), float(_get(sw, "warmup_s", file, where, rule="nonnegative"))
    if not warmup < horizon:
        raise hardware.ProfileError(file, f"{where}warmup_s", f"below horizon_s = {horizon}", warmup)
    ar = hardware._mapping(file, "ar_on_the_edge", _get(data, "ar_on_the_edge", file, "", "mapping"))
    ar_ratio = float(_get(ar, "target_to_draft_bytes", file, "ar_on_the_edge."))
    cap = hardware._mapping(file, "capacity", _get(data, "capacity", file, "", "mapping"))
    attainment = float(_get(cap, "attainment", file, "capacity."))
    if not 0 < attainment <= 1:
        raise hardware.ProfileError(file, "capacity.attainment", "a fraction of responses in (0, 1]", attainment)
    # the search's bound: the sweep's (or ci's) capacity_max_devices, else capacity.max_devices
    src, key, at = (sw, "capacity_max_devices", where) if "capacity_max_devices" in sw else (cap, "max_devices", "capacity.")
    max_devices = int(_get(src, key, file, at, rule="count"))
    return Scenario(data["name"], tuple((k, float(prof.coefficients(runtime)[k])) for k in li2026.EQ19),
                    float(_get(srv, "memory_gb", file, "server.")), float(_get(srv, "delta_s", file, "server.", rule="nonnegative")),
                    float(_get(srv, "noise", file, "server.", rule="nonnegative")), tuple(classes.items()), tuple(mixes.items()),
                    float(_get(link, "rtt_s", file, "link.", rule="nonnegative")), tuple(float(b) for b in bandwidths), temperature,
                    int(_get(wl, "vocab_size", file, "workload.", rule="count")), int(_get(wl, "top_k", file, "workload.", rule="count")),
                    int(_get(wl, "gamma", file, "workload.", rule="count")), int(_get(wl, "prompt_tokens", file, "workload.", rule="count")),
                    int(_get(wl, "max_new_tokens", file, "workload.", rule="count")),
                    tuple(int(c) for c in _numbers(wl, "slo_classes", file, "workload.", "count")), devices, horizon, warmup,
                    int(_get(sw, "seeds", file, where, rule="count")), reference, ar_ratio, attainment, max_devices)


def describe(scn: Scenario) -> pd.DataFrame:
    """The scenario as a table: one row per device class, with the link, server and workload it meets."""
    return pd.DataFrame([dict(device_class=k, ms_per_draft_token=1e3 * v, tok_per_s=1 / v,
                              ar_target_tok_per_s=1 / (v * scn.target_to_draft_bytes),
                              in_mixes=", ".join(m for m, c in scn.mixes if k in c)) for k, v in scn.device_classes])


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
@lru_cache(maxsize=None)
def payload_bytes(payload: str, s: int, vocab: int, top_k: int) -> int:
    """Bytes of one request carrying ``s`` drafted tokens, as the wire codec encodes it (``codec.request_to_wire``):
    ids only (T = 0's message), TK-SLT's top-K rows, or dense rows of the whole vocabulary."""
    import torch

    from ..serving.codec import request_to_wire
    from ..serving.verifier import Request
    if payload not in PAYLOADS:
        raise ValueError(f"payload: expected one of {PAYLOADS}, got {payload!r}")
    q = None if payload == "ids" or s == 0 else torch.full((s, vocab), 1.0 / vocab)
    req = Request("c0-p0", [vocab - 1], [vocab - 1] * s, q, 1.0 if q is not None else 0.0)
    msg = request_to_wire(req, client=0, round=0, token="t" * 32, top_k=top_k if payload == "topk" else None,
                          vocab=vocab, slo_class=8.0, t_draft=0.1, alpha=0.5)
    return int(msg.ByteSize())


REPLY_BYTES = 50   # a VerifyReply (accepted, token, bonus, next S, batch, 5 doubles): the twin's default


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
    return Workload(TARGET, clients, capacity=scn.gamma * point.devices,
                    kv_bytes_per_token=li2026.kv_bytes_per_token("Qwen3-32B"))


def times(point: Point, verify) -> Times:
    """Drafting at the device class's seconds per token; each link RTT/2 + size / bandwidth each way."""
    scn, bw, c = point.scenario, point.bandwidth_bps, point.combo
    if c.payload == "ids" and scn.temperature > 0:
        raise ValueError(f"payload 'ids': token ids alone verify only greedy decoding; the scenario has T = {scn.temperature:g}")
    if c.payload == "topk" and scn.temperature > 0:
        raise ValueError("payload 'topk' at T > 0: its acceptance is not traced per position (only the mean "
                         "α(K) of data/realpair/topk_acceptance.csv); not in this slice")
    size = lambda s: payload_bytes(c.payload, int(s), scn.vocab_size, scn.top_k)
    half = scn.rtt_s / 2
    return Times(draft=[lambda s, t=scn.draft_s(i, point.mix): s * t for i in range(point.devices)], verify=verify,
                 up=lambda i, s: half + 8 * size(s) / bw, down=lambda i: half + 8 * REPLY_BYTES / bw,
                 bytes_up=size, bytes_down=REPLY_BYTES, send=lambda i: 8 * REPLY_BYTES / bw)


def as2_costs(point: Point) -> dict[int, float]:
    """zheng2025 eq (6) per device: L_i = (T_SLM,i + T_V) / T_LLM (``solvers.zheng2025.measured_cost``), T_SLM,i its
    seconds per drafted token, T_V the uplink of one drafted token's distribution (dense: |V| float32; top-K: K
    float32 + K int32; ids: none, the eq neglects token ids), T_LLM one standalone decoding step of the target
    (eq 19: one new token at a response's mean context, prompt + max_new_tokens / 2)."""
    from ..solvers.zheng2025 import measured_cost
    scn, p = point.scenario, point.combo.payload
    ctx = scn.prompt_tokens + scn.max_new_tokens / 2
    t_llm = Estimator.from_coefficients(**dict(scn.server)).time(1, ctx + 1, ctx)
    k, bits = {"dense": (scn.vocab_size, 32), "topk": (scn.top_k, 64), "ids": (0, 32)}[p]
    return {i: float(measured_cost(k, scn.draft_s(i, point.mix), t_llm, point.bandwidth_bps, bits))
            for i in range(point.devices)}


def allocator(point: Point, wl: Workload):
    c, cap = point.combo, wl.capacity
    if c.draft == "as2":
        return AS2Allocator(as2_costs(point))
    if c.draft == "goodspeed":
        return GoodspeedAllocator(cap, beta=tran2025.BETA)
    if c.draft == "goodspeed-slo":
        return SLOWeightedGoodspeed(cap, weights={i: float(s.slo_class) for i, s in enumerate(wl.clients)}, beta=tran2025.BETA)
    return FixedS(cap, point.devices)     # fixed γ and WISP's stop rule draft on the device: the allocation is unused


def former(point: Point, est: Estimator):
    scn, name = point.scenario, point.combo.former
    budget = scn.memory_gb * 1e9
    if name == "sync":
        return SyncRounds()
    if name == "fcfs":
        return FCFS(memory_budget=budget)
    return WISPBatcher(est, delta=scn.delta_s, memory_budget=budget)


def run_log(point: Point, acceptance=None) -> pd.DataFrame:
    """The per-round log of one point (``interfaces.LOG_COLUMNS``); ``acceptance`` replaces the pair's traces."""
    scn = point.scenario
    est = Estimator.from_coefficients(**dict(scn.server))
    verify = li2026.noisy(est, scn.noise, point.seed)
    wl = workload(point)
    if point.combo.system == CENTRALIZED:
        return centralized.simulate(wl, verify, until=scn.horizon_s, rtt=scn.rtt_s, memory_budget=scn.memory_gb * 1e9)
    if point.combo.system == AR_EDGE:
        return ar_edge_log(point, wl)
    acc = li2026_realpair.acceptance() if acceptance is None else acceptance
    return simulate(wl, former(point, est), allocator(point, wl), times(point, verify), acc, until=scn.horizon_s,
                    seed=point.seed, label=point.combo.label)


def ar_edge_log(point: Point, wl: Workload) -> pd.DataFrame:
    """AR on the edge: each device decodes its own responses with the target, one token per step of
    ``Scenario.ar_s`` seconds (its prompt's prefill one such step), back to back, nothing on the link —
    ``serving.centralized``'s loop with one device and no round trip, its log rows renumbered to the device."""
    scn = point.scenario
    logs = [_ar_device_log(scn.ar_s(i, point.mix), spec.prompt_tokens, spec.max_new_tokens, spec.slo_class, scn.horizon_s).assign(client=i)
            for i, spec in enumerate(wl.clients)]
    return pd.concat(logs, ignore_index=True)


@lru_cache(maxsize=64)
def _ar_device_log(s_per_token: float, prompt_tokens: int, max_new_tokens: int, slo_class, horizon_s: float) -> pd.DataFrame:
    """One device's AR log (deterministic: it depends on nothing else, so devices alike share it)."""
    one = Workload(TARGET, (ClientSpec(TARGET, max_new_tokens=max_new_tokens, slo_class=slo_class, prompt_tokens=prompt_tokens),),
                   capacity=1)
    return centralized.simulate(one, lambda batch: s_per_token, until=horizon_s, rtt=0.0, label=AR_EDGE)


def first_token_times(point: Point, log: pd.DataFrame) -> pd.DataFrame:
    """Per device: mean TTFT over its responses started after warm-up, mean TPOT over those complete by the
    horizon (``serving.metrics.first_token_times`` of ``serving.metrics.responses``)."""
    scn = point.scenario
    r = metrics.first_token_times(log, metrics.responses(log, scn.max_new_tokens, scn.horizon_s))
    return r[r["start"] >= scn.warmup_s].groupby("client")[["ttft", "tpot"]].mean()


def measure(point: Point, log: pd.DataFrame) -> dict:
    """The row of metrics of one run (``METRICS``): per-device goodput (``goodput_tok_s``: tok/s over each
    device's span: mean, the slowest device, Jain's index), SLO attainment (responses started after warm-up
    meeting their class, li2026 Sec 5.3; ``violations`` of ``responses`` decided), request goodput
    (``goodput_slo_rps``: responses/s within their SLO), TTFT and TPOT (``first_token_times``: the mean over
    devices of each device's mean, and the worst device's), committed tokens per pass, uplink bytes per token
    (AR on the edge: no server pass, nothing on the link)."""
    scn = point.scenario
    gp = metrics.client_goodput(log).reindex(range(point.devices), fill_value=0.0)
    resp = metrics.response_violations(log, scn.max_new_tokens, scn.warmup_s, scn.horizon_s)
    ft = first_token_times(point, log)
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


__all__ = ["Scenario", "load_scenario", "describe", "Combination", "combinations", "from_label", "Point", "points",
           "arena_points", "regime_rows", "payload_bytes", "as2_costs", "workload", "times", "allocator", "former", "run_log", "measure", "run_point",
           "METRICS", "TECHNIQUES", "CENTRALIZED"]
