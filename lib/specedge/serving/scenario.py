"""A serving scenario from plain data: ``data/scenarios/<name>.yaml``, checked, as plain values.

A scenario names the verification server (a profile's eq (19) model, its memory and guard time, the noise of
its true pass time, the target's KV shape), device classes (seconds per drafted token, from a profile's
runtime entry: ``time_models.draft_time``, or stated with its source), fleets (``mixes``: device i takes class
mix[i % len(mix)]), the link (RTT, bandwidths), the workload (the traced pair, temperature, vocabulary, top-K,
γ, prompt and response lengths, SLO classes, closed-loop arrivals), the policies (``policies:``: the verify and
draft time models, and per option of a driver its allocator or batch former, each by registry name with its
parameters: ``serving.policies``), a sweep grid (with a smaller ``ci:`` one) and the capacity level and bound. A
scenario *refers to* hardware profiles for every number a paper or a measurement gives and states the few none
gives. Every key, its type, unit and default, is declared once in ``scenario_schema``; ``load`` checks a file
against it before any work, built by keywords: every error names the file and the key (``ScenarioError``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from .. import hardware, paths
from ..solvers.zheng2025 import measured_cost
from .sim import centralized
from . import acceptance_sources, policies, scenario_schema as schema
from .timemodels import time_models
from .real.codec import payload_bytes
from .interfaces import Times
from .timemodels.estimator import COEFFICIENTS
from .scenario_schema import ScenarioError
from .timemodels.time_models import DEVICE_KINDS, draft_time
from .policies.wisp_batching import READINGS
from .workload import ClientSpec, DraftRule, Workload

SCENARIOS = paths.DATA / "scenarios"


@dataclass(frozen=True)
class Policy:
    """One option's policy: its registry name (``serving.policies``), its parameters, and for a draft-length
    option the device's drafting rule (``DraftRule``: fixed, server or predictor:<stop rule>)."""
    name: str
    params: tuple[tuple[str, float], ...] = ()
    rule: DraftRule | None = None

    def build(self, kind: str, **context):
        """A fresh policy object: ``serving.policies.build`` with its parameters and the caller's ``context``."""
        return policies.build(kind, self.name, **dict(self.params), **context)


@dataclass(frozen=True)
class Scenario:
    """A scenario at one scale, as plain values (every worker gets the numbers, never a file name); the keys and
    units of its file: ``scenario_schema``."""
    name: str
    server: tuple[tuple[str, float], ...]            # eq (19)'s coefficients
    memory_gb: float
    delta_s: float | None                            # None: no former of the scenario takes a guard time
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
    pair: str = "realpair"                           # the acceptance source (``acceptance_sources``) devices draft on

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


def _device_class(file, name: str, spec) -> float:
    """A device class's seconds per drafted token: stated (with its source) or a profile's drafting model."""
    where = f"device_classes.{name}."
    if isinstance(spec, dict) and "s_per_token" in spec:
        return float(schema.read(file, where, spec, schema.DEVICE_STATED)["s_per_token"])
    if not (isinstance(spec, dict) and "profile" in spec):
        raise ScenarioError(file, where[:-1], "s_per_token (s/token) with its source, or a profile and its runtime", spec)
    spec = schema.read(file, where, spec, schema.DEVICE_PROFILE)
    prof = hardware.load_profile(spec["profile"])
    runtime = spec["runtime"]
    if runtime not in prof.runtime:
        raise ScenarioError(file, f"{where}runtime", f"a runtime model of {prof.name} {sorted(prof.runtime)}", runtime)
    if prof.kind(runtime) not in DEVICE_KINDS:
        raise ScenarioError(file, f"{where}runtime", f"a drafting model of kind {' or '.join(DEVICE_KINDS.names())}",
                            f"{runtime} ({prof.kind(runtime)})")
    return draft_time(prof, runtime).s_per_token


def _policy(file, where: str, spec, section: str) -> Policy:
    """``policies.<section>.<option>``: its registry name (an error lists the known names), the draft section's
    drafting rule, and every parameter its builder takes (a non-negative number)."""
    kind, key, extra = schema.POLICY_SECTIONS[section]
    if not isinstance(spec, dict):
        raise ScenarioError(file, where, "a mapping", spec)
    if key not in spec:
        raise ScenarioError(file, f"{where}.{key}", f"a {kind} of serving.policies", missing=True)
    known = policies.KINDS[kind]
    name = schema.spec(key, "text").check(file, f"{where}.", spec[key])
    if name not in known:
        raise ScenarioError(file, f"{where}.{key}", f"a {kind} of serving.policies, one of {known.names()}", name)
    fields = (schema.spec(key, "text"), *(schema.spec(k, "text") for k in extra),
              *(schema.spec(k, rule="nonnegative", default=None) for k in sorted(known.takes(name))))
    values = schema.read(file, f"{where}.", spec, fields)
    try:
        rule = DraftRule(values["rule"]) if "rule" in extra else None
    except ValueError:
        raise ScenarioError(file, f"{where}.rule", "fixed, server or predictor:<stop rule>", values["rule"]) from None
    return Policy(name, tuple((k, float(v)) for k, v in spec.items() if k not in (key, *extra)), rule)


def _policies(file, pol: dict, options: Mapping[str, tuple]) -> dict:
    """The ``policies:`` section as ``Scenario`` fields (verify_model, draft_model, drafts, formers), checked: a
    policy for every option the caller runs (``options``)."""
    pol = schema.read(file, "policies.", pol, schema.POLICIES)
    out = {}
    for key, kind in (("verify_model", "verify model"), ("draft_model", "device model")):
        if pol[key] not in policies.KINDS[kind]:
            raise ScenarioError(file, f"policies.{key}", f"a {kind} of serving.policies, one of "
                                f"{policies.KINDS[kind].names()}", pol[key])
        out[key] = pol[key]
    for section, field in (("draft", "drafts"), ("former", "formers")):
        if not pol[section]:
            raise ScenarioError(file, f"policies.{section}", "at least one option", pol[section])
        out[field] = tuple((str(o), _policy(file, f"policies.{section}.{o}", spec, section)) for o, spec in pol[section].items())
        wanted = set(options.get(section, ())) - set(dict(out[field]))
        if wanted:
            raise ScenarioError(file, f"policies.{section}", f"a policy for every option {list(options[section])}",
                                f"no policy for {sorted(wanted)}")
    return out


def _needs(file, formers, stated: dict) -> None:
    """Per-option requirements (``scenario_schema.NEEDS``): what the builders of the chosen ``formers`` (registry
    names) take, stated (``stated``: key -> its value in the file, None where absent)."""
    takes = set().union(*(policies.KINDS["former"].takes(name) for name in formers))
    for keyword, (key, expected, ok) in schema.NEEDS.items():
        value = stated[key]
        if keyword in takes and not ok(value):
            raise ScenarioError(file, key, f"{expected}: a former of the scenario takes {keyword!r}", value,
                                missing=value is None)


# the sections a fleet-serving scenario (the arena's) reads
ARENA = ("server", "device_classes", "mixes", "link", "workload", "policies", "sweep", "ci", "ar_on_the_edge", "capacity")


def path(name_or_path) -> Path:
    p = Path(name_or_path)
    return p if p.suffix in (".yaml", ".yml") else SCENARIOS / f"{name_or_path}.yaml"


def load(name_or_path, scale: str = "full", *, windows: Mapping[str, int] | None = None,
         options: Mapping[str, tuple] = {}) -> Scenario:
    """The scenario ``data/scenarios/<name>.yaml`` (or a path), checked against ``scenario_schema``; at
    ``scale="ci"`` with its ``ci:`` values. ``windows``: the traced pairs a workload may name, each with its traced
    window (γ may not exceed it; default: every source of ``acceptance_sources``); ``options``: per policies section ("draft", "former"), the options the caller runs
    (each needs a policy). Errors name the file and the key (``scenario_schema.ScenarioError``)."""
    paths.check_scale(scale)
    windows = acceptance_sources.windows() if windows is None else windows
    file = _existing(name_or_path)
    data = schema.sections(file, schema.load_yaml(file), ARENA)
    if data["name"] != file.stem:
        raise ScenarioError(file, "name", f"the file stem {file.stem!r}", data["name"])
    pol = _policies(file, data["policies"], options)
    srv = schema.read(file, "server.", data["server"], schema.SERVER)
    _needs(file, [p.name for _, p in pol["formers"]], {"server.delta_s": srv["delta_s"], "policies.verify_model": pol["verify_model"]})
    prof = hardware.load_profile(srv["profile"])
    if srv["runtime"] not in prof.runtime or prof.kind(srv["runtime"]) != pol["verify_model"]:
        raise ScenarioError(file, "server.runtime", f"a runtime model of {prof.name} of kind {pol['verify_model']} "
                            "(policies.verify_model)", srv["runtime"])
    target = schema.read(file, "server.target.", srv["target"], schema.TARGET)
    classes = {n: _device_class(file, n, s) for n, s in data["device_classes"].items()}
    mixes = {}
    for n, m in data["mixes"].items():
        if not isinstance(m, list) or not m or set(m) - set(classes):
            raise ScenarioError(file, f"mixes.{n}", f"a non-empty list of device classes {sorted(classes)}", m)
        mixes[n] = tuple(m)
    link = schema.read(file, "link.", data["link"], schema.LINK)
    wl = schema.read(file, "workload.", data["workload"], schema.WORKLOAD)
    if wl["pair"] not in windows:
        raise ScenarioError(file, "workload.pair", f"one of {sorted(windows)} (the traced pairs with a retrained "
                            "stop rule)", wl["pair"])
    if wl["arrivals"] != "closed":
        raise ScenarioError(file, "workload.arrivals", "'closed' (the twin's devices run responses back to back)",
                            wl["arrivals"])
    if wl["gamma"] > windows[wl["pair"]]:
        raise ScenarioError(file, "workload.gamma", f"at most the traces' window ({windows[wl['pair']]}: "
                            "WISP's stop rule drafts within it)", wl["gamma"])
    if wl["temperature"] not in (0.0, 1.0):
        raise ScenarioError(file, "workload.temperature", "0 or 1 (the pair's traced temperatures)", wl["temperature"])
    sweep = schema.read(file, "sweep.", data["sweep"], schema.SWEEP)
    ci = schema.read(file, "ci.", data["ci"], schema.CI)
    sw, where = ({**sweep, **{k: v for k, v in ci.items() if v is not None}}, "ci.") if scale == "ci" else (sweep, "sweep.")
    ref = schema.read(file, f"{where}reference.", sw["reference"], schema.REFERENCE)
    bandwidths = tuple(float(b) for b in (sw["bandwidth_bps"] or link["bandwidth_bps"]))
    reference = (float(ref["bandwidth_bps"]), int(ref["devices"]), ref["mix"])
    if reference[0] not in bandwidths or reference[1] not in sw["devices"] or reference[2] not in mixes:
        raise ScenarioError(file, f"{where}reference", "a point of the sweep (bandwidth, devices, mix)", sw["reference"])
    if not sw["warmup_s"] < sw["horizon_s"]:
        raise ScenarioError(file, f"{where}warmup_s", f"below horizon_s = {float(sw['horizon_s'])}", sw["warmup_s"])
    ar = schema.read(file, "ar_on_the_edge.", data["ar_on_the_edge"], schema.AR_ON_THE_EDGE)
    cap = schema.read(file, "capacity.", data["capacity"], schema.CAPACITY)
    if not 0 < cap["attainment"] <= 1:
        raise ScenarioError(file, "capacity.attainment", "a fraction of responses in (0, 1]", cap["attainment"])
    return Scenario(
        name=data["name"], server=tuple((k, float(prof.coefficients(srv["runtime"])[k])) for k in COEFFICIENTS),
        memory_gb=float(srv["memory_gb"]), delta_s=None if srv["delta_s"] is None else float(srv["delta_s"]),
        noise=float(srv["noise"]), device_classes=tuple(classes.items()), mixes=tuple(mixes.items()),
        rtt_s=float(link["rtt_s"]), bandwidths=bandwidths, temperature=float(wl["temperature"]),
        vocab_size=wl["vocab_size"], top_k=wl["top_k"], gamma=wl["gamma"], prompt_tokens=wl["prompt_tokens"],
        max_new_tokens=wl["max_new_tokens"], slo_classes=tuple(wl["slo_classes"]), devices=tuple(sw["devices"]),
        horizon_s=float(sw["horizon_s"]), warmup_s=float(sw["warmup_s"]), seeds=sw["seeds"], reference=reference,
        target_to_draft_bytes=float(ar["target_to_draft_bytes"]), capacity_attainment=float(cap["attainment"]),
        # the search's bound: the sweep's (or ci's) capacity_max_devices, else capacity.max_devices
        capacity_max_devices=sw["capacity_max_devices"] or cap["max_devices"],
        pair=wl["pair"], kv_bytes_per_token=hardware.kv_bytes_per_token(**{k: target[k] for k in ("layers", "kv_heads", "head_dim", "dtype_bytes")}),
        **pol)


def _existing(name_or_path) -> Path:
    file = path(name_or_path)
    if not file.exists():
        raise FileNotFoundError(f"no scenario {str(name_or_path)!r} (looked for {file}); "
                                f"available: {sorted(p.stem for p in SCENARIOS.glob('*.yaml'))}")
    return file


@dataclass(frozen=True)
class Fleet:
    """The clients of one verification server (``scenario_schema.FLEET``): ``clients`` of them, ``capacity`` (C) draft
    tokens per pass, responses of ``max_new_tokens``, client i drafting with ``drafts[i % len(drafts)]``;
    ``paper_models``: what the fleet stands in for."""
    name: str
    paper_models: str
    clients: int
    capacity: int
    max_new_tokens: int
    drafts: tuple[str, ...]


def fleets(name_or_path, run: str) -> list[Fleet]:
    """The fleets that run ``run`` of the scenario ``data/scenarios/<name>.yaml`` (or a path) lists (its ``runs:``),
    in order, checked against ``scenario_schema`` (every fleet, every run) before any work."""
    file = _existing(name_or_path)
    data = schema.sections(file, schema.load_yaml(file), ("fleets", "runs"))
    if data["name"] != file.stem:
        raise ScenarioError(file, "name", f"the file stem {file.stem!r}", data["name"])
    declared = {}
    for name, spec in data["fleets"].items():
        v = schema.read(file, f"fleets.{name}.", spec, schema.FLEET)
        if v["capacity"] < v["clients"]:
            raise ScenarioError(file, f"fleets.{name}.capacity", f"at least one draft token per client ({v['clients']})",
                                v["capacity"])
        declared[str(name)] = Fleet(name=str(name), paper_models=v["paper_models"], clients=v["clients"],
                                    capacity=v["capacity"], max_new_tokens=v["max_new_tokens"], drafts=tuple(v["drafts"]))
    runs = schema.read(file, "runs.", data["runs"], tuple(schema.spec(str(k), "texts") for k in data["runs"]))
    for r, names in runs.items():
        for name in names:
            if name not in declared:
                raise ScenarioError(file, f"runs.{r}", f"fleets of the scenario {sorted(declared)}", name)
    if run not in runs:
        raise ScenarioError(file, f"runs.{run}", "the fleets of a run the caller reads", missing=True)
    return [declared[name] for name in runs[run]]


@dataclass(frozen=True)
class Setup:
    """A setting of real runs at N clients (``scenario_schema.SETUP``): C = ``capacity_per_client`` x N, client i
    drafting with ``drafts[i % len(drafts)]``, each policy its batch former and allocator (``Policy``: by registry
    name, the allocator's with the clients' drafting rule)."""
    name: str
    capacity_per_client: int
    drafts: tuple[str, ...]
    policies: tuple[tuple[str, tuple[Policy, Policy]], ...]     # policy -> (former, allocator)
    slo_classes: tuple[int, ...] | None = None                   # client i's class (tok/s): slo_classes[i % len]
    campaign: str = ""                                           # its own runs' file (stem), else the common ones

    def policy(self, name: str) -> tuple[Policy, Policy]:
        table = dict(self.policies)
        if name not in table:
            raise ValueError(f"policy: expected one of {list(table)} for {self.name}, got {name!r}")
        return table[name]


@dataclass(frozen=True)
class Setups:
    """The setups of a scenario's real runs, at the sizes N it runs, with each scale's prompts and tokens."""
    sizes: tuple[int, ...]
    run_size: tuple[tuple[str, tuple[int, int]], ...]            # scale -> (prompts per domain, tokens per prompt)
    setups: tuple[tuple[str, Setup], ...]

    def size(self, scale: str) -> tuple[int, int]:
        return dict(self.run_size)[paths.check_scale(scale)]


def setups(name_or_path) -> Setups:
    """The real runs' setups of the scenario ``data/scenarios/<name>.yaml`` (or a path), checked against
    ``scenario_schema`` (every setup, every policy by registry name) before any work."""
    file = _existing(name_or_path)
    data = schema.sections(file, schema.load_yaml(file), ("validation", "setups"))
    if data["name"] != file.stem:
        raise ScenarioError(file, "name", f"the file stem {file.stem!r}", data["name"])
    val = schema.read(file, "validation.", data["validation"], schema.VALIDATION)
    sizes = {sc: schema.read(file, f"validation.{sc}.", val[sc], schema.RUN_SIZE) for sc in ("full", "ci")}
    out = []
    for name, spec in data["setups"].items():
        where = f"setups.{name}"
        st = schema.read(file, f"{where}.", spec, schema.SETUP)
        if not st["policies"]:
            raise ScenarioError(file, f"{where}.policies", "at least one policy", st["policies"])
        pols = []
        for pol, pspec in st["policies"].items():
            p = schema.read(file, f"{where}.policies.{pol}.", pspec, schema.SETUP_POLICY)
            pols.append((str(pol), (_policy(file, f"{where}.policies.{pol}.former", p["former"], "former"),
                                    _policy(file, f"{where}.policies.{pol}.allocator", p["allocator"], "draft"))))
        out.append((str(name), Setup(name=str(name), capacity_per_client=st["capacity_per_client"],
                                     drafts=tuple(st["drafts"]), policies=tuple(pols),
                                     slo_classes=None if st["slo_classes"] is None else tuple(st["slo_classes"]),
                                     campaign=st["campaign"])))
    return Setups(sizes=tuple(val["sizes"]),
                  run_size=tuple((sc, (v["prompts_per_domain"], v["max_new_tokens"])) for sc, v in sizes.items()),
                  setups=tuple(out))


# --------------------------------------------------------------------------- a serving sweep's points
@dataclass(frozen=True)
class System:
    """Where a serving system differs (``scenario_schema.SYSTEM``): its batch former (``policies.former``'s name;
    None: centralized serving, the server decoding every token), the verifier's prefix cache, and whether its
    devices may stop drafting by the predictor (else a fixed window γ)."""
    former: str | None
    prefix_cache: bool
    predictor: bool


@dataclass(frozen=True)
class Setting:
    """The values one sweep point runs under, each under the schema's key and in its unit
    (``scenario_schema.SETTING``); a scenario's own by default (``SweepScenario.setting``)."""
    s_per_token: float                # a device's seconds per drafted token
    rtt_s: float                      # the link's round trip (half of it each way)
    prompt_tokens: int
    max_new_tokens: int
    gamma: int                        # K, also the predictor's maximum
    temperature: float
    noise: float                      # relative spread of the true verification time around eq (19)
    delta_s: float | None             # WISP's guard time
    memory_gb: float
    horizon_s: float                  # simulated seconds per run
    warmup_s: float                   # seconds discarded at the start (steady state)
    profile: str                      # hardware profile holding eq (19)'s coefficients (runtime.verify)
    # those coefficients, carried into every sweep worker (and its cache key) so that no worker loads the
    # profile again (``SweepScenario.setting(profile=...)``); empty: load ``profile`` by name or path
    verify: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Point:
    """One sweep point, a plain configuration (``specedge.sweep`` caches it and hands it to its workers):
    ``system`` at ``devices`` devices, each of SLO class ``slo_class`` (None: mixed classes, drawn per seed),
    serving ``target``, drafting by the predictor where the system does (``predictor``), its ``seed`` and
    ``setting``. ``SweepScenario.point`` builds one, its names checked against the scenario."""
    system: str
    devices: int
    slo_class: int | None
    target: str
    predictor: bool
    seed: int
    setting: Setting

    def __post_init__(self):
        if not isinstance(self.devices, int) or isinstance(self.devices, bool) or self.devices < 1:
            raise ValueError(f"devices: must be a positive int, got {self.devices!r}")


@dataclass(frozen=True)
class SweepScenario:
    """A serving sweep's scenario (``scenario_schema``'s ``SYSTEM``, ``SHAPE`` and ``SETTING`` sections): its
    systems, Algorithm 1's readings (reading -> system), the targets' shapes, the SLO classes, the acceptance
    source its devices draft on (``pair``) and the setting every point runs under unless told otherwise."""
    name: str
    file: str
    systems: tuple[tuple[str, System], ...]
    readings: tuple[tuple[str, str], ...]
    targets: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    slo_classes: tuple[int, ...]
    pair: str
    base: Setting

    @property
    def system_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.systems)

    def system(self, name: str) -> System:
        table = dict(self.systems)
        if name not in table:
            raise ValueError(f"system: expected one of {self.system_names} (scenario {self.name}), got {name!r}")
        return table[name]

    def reading(self, name: str) -> str:
        """The system of Algorithm 1's reading ``name`` of a late request."""
        table = dict(self.readings)
        if name not in table:
            raise ValueError(f"reading: expected one of {list(table)} (scenario {self.name}), got {name!r}")
        return table[name]

    def target(self, name: str) -> dict[str, int]:
        """The shape of target ``name`` (config.json: layers, hidden, heads, kv_heads, head_dim, intermediate)."""
        table = dict(self.targets)
        if name not in table:
            raise ValueError(f"target: expected one of {sorted(table)} (scenario {self.name}), got {name!r}")
        return dict(table[name])

    def setting(self, base: Setting | None = None, *, profile=None, **values) -> Setting:
        """``base`` (default: the scenario's) with ``values`` changed, each checked against its declaration
        (``scenario_schema.SETTING``: an unknown name with the nearest known one, a wrong type or a value outside
        its rule is a ``ScenarioError``); ``profile`` (loaded, or a name or path): its name, and eq (19)'s
        coefficients carried in ``verify``."""
        base = self.base if base is None else base
        fields = tuple(replace(fd, default=getattr(base, fd.key)) for fds in schema.SETTING.values() for fd in fds)
        values = {k: v.item() if isinstance(v, np.generic) else v for k, v in values.items()}   # a table's numbers
        got = schema.read(f"{self.file} (a setting's values)", "", values, fields)
        got = {fd.key: _typed(fd, got[fd.key]) for fd in fields}
        if profile is not None:
            prof = hardware.as_profile(profile)
            co = prof.coefficients("verify")
            got.update(profile=prof.name, verify=tuple((k, float(co[k])) for k in COEFFICIENTS))
        return replace(base, **got)

    def point(self, system: str, devices: int, slo_class: int | None = None, target: str | None = None, *,
              predictor: bool = True, seed: int = 0, setting: Setting | None = None) -> Point:
        """A sweep point of ``system`` (one of the scenario's) at ``devices`` devices of class ``slo_class`` (one of
        its SLO classes, None: mixed), serving ``target`` (one of its targets; default the first), under
        ``setting`` (default the scenario's)."""
        self.system(system)
        if slo_class is not None and slo_class not in self.slo_classes:
            raise ValueError(f"slo_class: expected one of {self.slo_classes} or None, got {slo_class!r}")
        target = self.targets[0][0] if target is None else target
        self.target(target)
        return Point(system, devices, slo_class, target, predictor, seed, self.base if setting is None else setting)


def _typed(fd: schema.Field, value):
    """A checked value as its declaration's Python type (a count an int, a number a float)."""
    if value is None:
        return None
    return int(value) if fd.type == "count" else float(value) if fd.type == "number" else value


# the sections a serving sweep's scenario (WISP's) reads
SWEEP = ("systems", "readings", "targets", "server", "device", "link", "workload", "sweep")


def sweep_scenario(name_or_path) -> SweepScenario:
    """The serving sweep of the scenario ``data/scenarios/<name>.yaml`` (or a path), checked against
    ``scenario_schema`` before any work: every system's former by registry name (with what its builder takes:
    ``NEEDS``), every reading of Algorithm 1, every target's shape, and the setting's values under their keys and
    units. Errors name the file and the key (``ScenarioError``)."""
    file = _existing(name_or_path)
    data = schema.sections(file, schema.load_yaml(file), SWEEP)
    if data["name"] != file.stem:
        raise ScenarioError(file, "name", f"the file stem {file.stem!r}", data["name"])
    systems = {}
    for name, spec in data["systems"].items():
        v = schema.read(file, f"systems.{name}.", spec, schema.SYSTEM)
        known = policies.KINDS["former"]
        if v["former"] is not None and v["former"] not in known:
            raise ScenarioError(file, f"systems.{name}.former", f"a former of serving.policies, one of {known.names()}, "
                                "or null (centralized serving)", v["former"])
        systems[str(name)] = System(**v)
    if not systems:
        raise ScenarioError(file, "systems", "at least one system", data["systems"])
    readings = schema.read(file, "readings.", data["readings"], tuple(schema.spec(r, "text", default=None) for r in READINGS))
    readings = {r: system for r, system in readings.items() if system is not None}
    for r, system in readings.items():
        if system not in systems or systems[system].former is None:
            raise ScenarioError(file, f"readings.{r}", f"a system of the scenario with a batch former {sorted(systems)}", system)
    targets = {str(t): schema.read(file, f"targets.{t}.", spec, schema.SHAPE) for t, spec in data["targets"].items()}
    if not targets:
        raise ScenarioError(file, "targets", "at least one target's shape", data["targets"])
    srv = schema.read(file, "server.", data["server"], schema.SWEEP_SERVER)
    dev = schema.read(file, "device.", data["device"], schema.DEVICE_STATED)
    link = schema.read(file, "link.", data["link"], schema.SWEEP_LINK)
    wl = schema.read(file, "workload.", data["workload"], schema.SWEEP_WORKLOAD)
    run = schema.read(file, "sweep.", data["sweep"], schema.SWEEP_RUN)
    _needs(file, [s.former for s in systems.values() if s.former is not None],
           {"server.delta_s": srv["delta_s"], "policies.verify_model": "affine_interactions"})
    prof = hardware.load_profile(srv["profile"])
    if "verify" not in prof.runtime or prof.kind("verify") != "affine_interactions":
        raise ScenarioError(file, "server.profile", "a profile whose runtime.verify is eq (19) (kind affine_interactions)",
                            srv["profile"])
    windows = acceptance_sources.windows()
    if wl["pair"] not in windows:
        raise ScenarioError(file, "workload.pair", f"one of {sorted(windows)} (the traced pairs with a stop rule)", wl["pair"])
    if wl["gamma"] > windows[wl["pair"]]:
        raise ScenarioError(file, "workload.gamma", f"at most the traces' window ({windows[wl['pair']]})", wl["gamma"])
    if not run["warmup_s"] < run["horizon_s"]:
        raise ScenarioError(file, "sweep.warmup_s", f"below horizon_s = {float(run['horizon_s'])}", run["warmup_s"])
    stated = {**dev, **link, **srv, **wl, **run}
    base = Setting(**{fd.key: _typed(fd, stated[fd.key]) for fds in schema.SETTING.values() for fd in fds})
    return SweepScenario(name=data["name"], file=str(file), systems=tuple(systems.items()),
                         readings=tuple(readings.items()),
                         targets=tuple((t, tuple(sh.items())) for t, sh in targets.items()),
                         slo_classes=tuple(wl["slo_classes"]), pair=wl["pair"], base=base)


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
