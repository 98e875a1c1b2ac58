"""A serving scenario from plain data: ``data/scenarios/<name>.yaml``, checked, as plain values.

A scenario names the verification server (a profile's eq (19) model, its memory and guard time, the noise of
its true pass time, the target's KV shape), device classes (seconds per drafted token, from a profile's
runtime entry: ``time_models.draft_time``, or stated with its source), fleets (``mixes``: device i takes class
mix[i % len(mix)]), the link (RTT, bandwidths), the workload (the traced pair, temperature, vocabulary, top-K,
γ, prompt and response lengths, SLO classes, closed-loop arrivals), the policies (``policies:``: the verify and
draft time models, and per option of a driver its allocator or batch former, each by registry name with its
parameters: ``serving.policies``), a sweep grid (with a smaller ``ci:`` one) and the capacity level and bound. A scenario *refers to* hardware profiles for every number a paper or a
measurement gives and states the few none gives. ``load`` checks it before any work: every error names the
file and the key (``hardware.ProfileError``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pandas as pd
import yaml

from .. import hardware, paths
from ..solvers.zheng2025 import measured_cost
from .sim import centralized
from . import policies
from .timemodels import time_models
from .real.codec import payload_bytes
from .interfaces import Times
from .timemodels.estimator import COEFFICIENTS
from .timemodels.time_models import DEVICE_KINDS, draft_time
from .workload import ClientSpec, Workload

SCENARIOS = paths.DATA / "scenarios"


@dataclass(frozen=True)
class Policy:
    """One option's policy: its registry name (``serving.policies``), its parameters, and for a draft-length
    option the device's drafting rule (``ClientSpec.draft_rule``: fixed, server or predictor:<stop rule>)."""
    name: str
    params: tuple[tuple[str, float], ...] = ()
    rule: str = ""

    def build(self, kind: str, **context):
        """A fresh policy object: ``serving.policies.build`` with its parameters and the caller's ``context``."""
        return policies.build(kind, self.name, **dict(self.params), **context)


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
    kv_bytes_per_token: float = 0.0                  # the server target's KV cache per token (server.target)
    verify_model: str = "affine_interactions"        # the server's time model (``policies`` kind "verify model")
    draft_model: str = "per_token"                   # the devices' drafting time model ("device model")
    drafts: tuple[tuple[str, Policy], ...] = ()      # draft-length option -> its allocator and drafting rule
    formers: tuple[tuple[str, Policy], ...] = ()     # batch-former option -> its former

    def mix(self, name: str) -> tuple[str, ...]:
        return dict(self.mixes)[name]

    def policy(self, kind: str, option: str) -> Policy:
        """The policy of option ``option`` of ``kind`` ("draft" or "former"); an error lists the scenario's options."""
        table = dict(self.drafts if kind == "draft" else self.formers)
        if option not in table:
            raise ValueError(f"scenario {self.name}: policies.{kind}: no option {option!r} (have {sorted(table)})")
        return table[option]

    def draft_s(self, device: int, mix: str) -> float:
        classes = self.mix(mix)
        return dict(self.device_classes)[classes[device % len(classes)]]

    def ar_s(self, device: int, mix: str) -> float:
        """Seconds per token of the target decoding alone on the device (``target_to_draft_bytes``)."""
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
    if prof.kind(runtime) not in DEVICE_KINDS:
        raise hardware.ProfileError(file, f"{where}runtime", f"a drafting model of kind {' or '.join(DEVICE_KINDS.names())}",
                                    f"{runtime} ({prof.kind(runtime)})")
    return draft_time(prof, runtime).s_per_token


def _kv_bytes_per_token(file, srv: dict) -> float:
    """The server target's KV cache bytes per token (``hardware.kv_bytes_per_token`` of ``server.target``'s shape)."""
    t = hardware._mapping(file, "server.target", _get(srv, "target", file, "server.", "mapping"))
    _get(t, "model", file, "server.target.", "text")
    shape = {k: int(_get(t, k, file, "server.target.", rule="count")) for k in ("layers", "kv_heads", "head_dim", "dtype_bytes")}
    return hardware.kv_bytes_per_token(**shape)


RULES = ("fixed", "server")   # a drafting rule: these, or predictor:<stop rule>


def _policy(file, where: str, spec, kind: str, key: str) -> Policy:
    """``policies.<section>.<option>``: ``key`` names a policy of ``kind`` (an error lists the known names), the
    draft section's ``rule`` a drafting rule, every other key a number its builder takes as a keyword."""
    spec = hardware._mapping(file, where, spec)
    name = _get(spec, key, file, f"{where}.", "text")
    known = policies.KINDS[kind]
    if name not in known:
        raise hardware.ProfileError(file, f"{where}.{key}", f"a {kind} of serving.policies, one of {known.names()}", name)
    rule = ""
    if kind == "allocator":
        rule = _get(spec, "rule", file, f"{where}.", "text")
        if rule not in RULES and not (rule.startswith("predictor:") and len(rule) > len("predictor:")):
            raise hardware.ProfileError(file, f"{where}.rule", "fixed, server or predictor:<stop rule>", rule)
    params = []
    for k, v in spec.items():
        if k in (key, "rule"):
            continue
        if k not in known.takes(name):
            raise hardware.ProfileError(file, f"{where}.{k}", f"a parameter of {kind} {name!r} {sorted(known.takes(name))}", v)
        hardware._rule(file, f"{where}.{k}", v, "nonnegative")
        params.append((k, float(v)))
    return Policy(name, tuple(params), rule)


def _policies(file, data: dict) -> dict:
    """The ``policies:`` section as ``Scenario`` fields (verify_model, draft_model, drafts, formers), checked."""
    pol = hardware._mapping(file, "policies", _get(data, "policies", file, "", "mapping"))
    out = {}
    for key, kind in (("verify_model", "verify model"), ("draft_model", "device model")):
        name = _get(pol, key, file, "policies.", "text")
        if name not in policies.KINDS[kind]:
            raise hardware.ProfileError(file, f"policies.{key}", f"a {kind} of serving.policies, one of "
                                        f"{policies.KINDS[kind].names()}", name)
        out[key] = name
    for section, kind, key, field in (("draft", "allocator", "allocator", "drafts"), ("former", "former", "former", "formers")):
        options = hardware._mapping(file, f"policies.{section}", _get(pol, section, file, "policies.", "mapping"))
        if not options:
            raise hardware.ProfileError(file, f"policies.{section}", "at least one option", options)
        out[field] = tuple((str(o), _policy(file, f"policies.{section}.{o}", spec, kind, key)) for o, spec in options.items())
    return out


def path(name_or_path) -> Path:
    p = Path(name_or_path)
    return p if p.suffix in (".yaml", ".yml") else SCENARIOS / f"{name_or_path}.yaml"


def load(name_or_path, scale: str = "full", *, windows: Mapping[str, int], options: Mapping[str, tuple] = {}) -> Scenario:
    """The scenario ``data/scenarios/<name>.yaml`` (or a path), checked; at ``scale="ci"`` with its ``ci:`` values.
    ``windows``: the traced pairs a workload may name, each with its traced window (γ may not exceed it);
    ``options``: per policies section ("draft", "former"), the options the caller runs (each needs a policy).
    Errors name the file and the key (``hardware.ProfileError``)."""
    paths.check_scale(scale)
    file = path(name_or_path)
    if not file.exists():
        raise FileNotFoundError(f"no scenario {str(name_or_path)!r} (looked for {file}); "
                                f"available: {sorted(p.stem for p in SCENARIOS.glob('*.yaml'))}")
    data = hardware._mapping(file, "<top level>", yaml.load(file.read_text(), Loader=hardware._Loader))
    for key in ("name", "source", "server", "device_classes", "mixes", "link", "workload", "policies", "sweep", "ci"):
        _get(data, key, file, "", "text" if key in ("name", "source") else "mapping")
    if data["name"] != file.stem:
        raise hardware.ProfileError(file, "name", f"the file stem {file.stem!r}", data["name"])
    pol = _policies(file, data)
    for section, wanted in options.items():
        have = dict(pol["drafts" if section == "draft" else "formers"])
        if set(wanted) - set(have):
            raise hardware.ProfileError(file, f"policies.{section}", f"a policy for every option {list(wanted)}",
                                        f"no policy for {sorted(set(wanted) - set(have))}")
    if pol["verify_model"] != "affine_interactions":
        raise hardware.ProfileError(file, "policies.verify_model", "affine_interactions (eq 19: WISP's former needs its "
                                    "estimate)", pol["verify_model"])
    srv = hardware._mapping(file, "server", data["server"])
    prof = hardware.load_profile(_get(srv, "profile", file, "server.", "text"))
    runtime = _get(srv, "runtime", file, "server.", "text")
    if runtime not in prof.runtime or prof.kind(runtime) != pol["verify_model"]:
        raise hardware.ProfileError(file, "server.runtime", f"a runtime model of {prof.name} of kind {pol['verify_model']} "
                                    "(policies.verify_model)", runtime)
    kv = _kv_bytes_per_token(file, srv)
    classes = {n: _device_class(file, n, s) for n, s in hardware._mapping(file, "device_classes", data["device_classes"]).items()}
    mixes = {}
    for n, m in hardware._mapping(file, "mixes", data["mixes"]).items():
        if not isinstance(m, list) or not m or set(m) - set(classes):
            raise hardware.ProfileError(file, f"mixes.{n}", f"a non-empty list of device classes {sorted(classes)}", m)
        mixes[n] = tuple(m)
    link, wl = hardware._mapping(file, "link", data["link"]), hardware._mapping(file, "workload", data["workload"])
    if wl.get("pair") not in windows:
        raise hardware.ProfileError(file, "workload.pair", f"one of {sorted(windows)} (the traced pairs with a retrained "
                                    "stop rule)", wl.get("pair"))
    if wl.get("arrivals") != "closed":
        raise hardware.ProfileError(file, "workload.arrivals", "'closed' (the twin's devices run responses back to back)",
                                    wl.get("arrivals"))
    window = windows[wl["pair"]]
    if int(_get(wl, "gamma", file, "workload.", rule="count")) > window:
        raise hardware.ProfileError(file, "workload.gamma", f"at most the traces' window ({window}: "
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
    return Scenario(data["name"], tuple((k, float(prof.coefficients(runtime)[k])) for k in COEFFICIENTS),
                    float(_get(srv, "memory_gb", file, "server.")), float(_get(srv, "delta_s", file, "server.", rule="nonnegative")),
                    float(_get(srv, "noise", file, "server.", rule="nonnegative")), tuple(classes.items()), tuple(mixes.items()),
                    float(_get(link, "rtt_s", file, "link.", rule="nonnegative")), tuple(float(b) for b in bandwidths), temperature,
                    int(_get(wl, "vocab_size", file, "workload.", rule="count")), int(_get(wl, "top_k", file, "workload.", rule="count")),
                    int(_get(wl, "gamma", file, "workload.", rule="count")), int(_get(wl, "prompt_tokens", file, "workload.", rule="count")),
                    int(_get(wl, "max_new_tokens", file, "workload.", rule="count")),
                    tuple(int(c) for c in _numbers(wl, "slo_classes", file, "workload.", "count")), devices, horizon, warmup,
                    int(_get(sw, "seeds", file, where, rule="count")), reference, ar_ratio, attainment, max_devices, kv, **pol)


# --------------------------------------------------------------------------- what a scenario builds
def estimator(scn: Scenario):
    """The server's time model (``policies.verify_model`` of its eq (19) coefficients): WISP's estimate."""
    return policies.build("verify model", scn.verify_model, coefficients=dict(scn.server))


def times(scn: Scenario, devices: int, mix: str, payload: str, bandwidth_bps: float, verify) -> Times:
    """The engine's ``Times`` of ``devices`` of ``mix``: drafting by ``policies.draft_model`` at each class's seconds
    per token, each device's own link (RTT/2 + the wire codec's ``payload`` bytes / bandwidth each way), ``verify``."""
    if payload == "ids" and scn.temperature > 0:
        raise ValueError(f"payload 'ids': token ids alone verify only greedy decoding; the scenario has T = {scn.temperature:g}")
    if payload == "topk" and scn.temperature > 0:
        raise ValueError("payload 'topk' at T > 0: its acceptance is not traced per position (only the mean "
                         "α(K) of data/realpair/topk_acceptance.csv); not in this slice")
    link = time_models.Link(scn.rtt_s, bandwidth_bps, lambda s: payload_bytes(payload, int(s), scn.vocab_size, scn.top_k))
    drafts = [policies.build("device model", scn.draft_model, coefficients={"c_tok": scn.draft_s(i, mix)})
              for i in range(devices)]
    return time_models.times(drafts, link, verify)


def clients(scn: Scenario, devices: int, draft: str, domains, rule: str, alpha, seed: int, *, offset: int | None = None,
            prompts: int = 1, max_new_tokens: int | None = None, classes=None, prompt_tokens: int | None = None) -> tuple:
    """``devices`` closed-loop drafters of ``draft``: device i on ``domains`` i and i + ``offset`` (default half
    of them), its SLO class ``classes[i % len(classes)]`` (default the scenario's), its drafting ``rule`` reporting
    ``alpha`` (eq 5), the scenario's γ, temperature, prompt and response lengths unless given."""
    n, offset = len(domains), len(domains) // 2 if offset is None else offset
    classes = scn.slo_classes if classes is None else classes
    return tuple(ClientSpec(draft, (domains[i % n], domains[(i + offset) % n]), prompts,
                            scn.max_new_tokens if max_new_tokens is None else max_new_tokens, scn.gamma, rule,
                            scn.temperature, classes[i % len(classes)], alpha,
                            scn.prompt_tokens if prompt_tokens is None else prompt_tokens, seed=seed) for i in range(devices))


def as2_costs(scn: Scenario, devices: int, mix: str, payload: str, bandwidth_bps: float) -> dict[int, float]:
    """zheng2025 eq (6) per device: L_i = (T_SLM,i + T_V) / T_LLM (``solvers.zheng2025.measured_cost``), T_SLM,i its
    seconds per drafted token, T_V the uplink of one drafted token's distribution (dense: |V| float32; top-K: K
    float32 + K int32; ids: none, the eq neglects token ids), T_LLM one standalone decoding step of the target
    (eq 19: one new token at a response's mean context, prompt + max_new_tokens / 2)."""
    ctx = scn.prompt_tokens + scn.max_new_tokens / 2
    t_llm = estimator(scn).time(1, ctx + 1, ctx)
    k, bits = {"dense": (scn.vocab_size, 32), "topk": (scn.top_k, 64), "ids": (0, 32)}[payload]
    return {i: float(measured_cost(k, scn.draft_s(i, mix), t_llm, bandwidth_bps, bits)) for i in range(devices)}


def allocator(scn: Scenario, option: str, wl: Workload, mix: str, payload: str, bandwidth_bps: float):
    """The draft option's allocator (``policies.draft``) for the devices of ``wl`` (of ``mix``, their requests in
    ``payload`` over ``bandwidth_bps``): budget ``wl.capacity``, each device weighted by its SLO class, AS²'s
    eq (6) costs (``as2_costs``: computed only for an allocator that takes them)."""
    pol, n = scn.policy("draft", option), len(wl.clients)
    costs = as2_costs(scn, n, mix, payload, bandwidth_bps) if "costs" in policies.KINDS["allocator"].takes(pol.name) else None
    return pol.build("allocator", capacity=wl.capacity, clients=n, costs=costs,
                     weights={i: float(s.slo_class) for i, s in enumerate(wl.clients)})


def former(scn: Scenario, option: str, est):
    """The former option's batch former (``policies.former``) within the server's memory; WISP's on ``est`` (eq 19)."""
    return scn.policy("former", option).build("former", estimator=est, delta=scn.delta_s, memory_budget=scn.memory_gb * 1e9)


def centralized_log(scn: Scenario, wl: Workload, verify) -> pd.DataFrame:
    """Every token decoded on the server, continuously batched within its memory (``serving.sim.centralized``)."""
    return centralized.simulate(wl, verify, until=scn.horizon_s, rtt=scn.rtt_s, memory_budget=scn.memory_gb * 1e9)


def on_device_log(scn: Scenario, wl: Workload, mix: str, label: str) -> pd.DataFrame:
    """Each device of ``mix`` decoding its own responses with the target alone, one token per ``Scenario.ar_s``
    seconds, back to back, nothing on the link (``centralized.on_device``), its rows renumbered to the device."""
    return pd.concat([centralized.on_device(wl.target, scn.ar_s(i, mix), spec.prompt_tokens, spec.max_new_tokens,
                                            spec.slo_class, scn.horizon_s, label).assign(client=i)
                      for i, spec in enumerate(wl.clients)], ignore_index=True)


def describe(scn: Scenario) -> pd.DataFrame:
    """The scenario as a table: one row per device class, with the link, server and workload it meets."""
    return pd.DataFrame([dict(device_class=k, ms_per_draft_token=1e3 * v, tok_per_s=1 / v,
                              ar_target_tok_per_s=1 / (v * scn.target_to_draft_bytes),
                              in_mixes=", ".join(m for m, c in scn.mixes if k in c)) for k, v in scn.device_classes])
