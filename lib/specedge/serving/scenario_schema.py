"""The scenario language's schema: every key a scenario file (``data/scenarios/<name>.yaml``) may hold, declared
once, each with its type, unit, default and when it is required; ``read`` checks one section against it before
any work starts.

One name and one unit per quantity in every scenario, the unit in the key's suffix: ``_s`` seconds, ``_bps``
bit/s, ``_gb`` 1e9 bytes, ``s_per_token`` seconds per drafted token. A key of the same quantity in another unit
(``rtt_ms``) is named as such, with the schema's key.

Requirements follow the options a scenario chooses (``NEEDS``): a batch former that takes WISP's guard time
needs ``server.delta_s``, one that takes an estimate needs ``policies.verify_model`` of kind eq (19); a
draft-length option needs its device's drafting rule (``serving.workload.DraftRule``). Every error is a
``ScenarioError`` naming the file and the key, with what was expected.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import hardware


class ScenarioError(hardware.ProfileError):
    """A scenario file that does not follow the schema: ``file``, ``key`` and what was expected."""


class _Required:
    def __repr__(self):
        return "required"


REQUIRED = _Required()


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# a field's type: (test of a value, what is expected)
TYPES = {
    "number": (_number, "a finite number"),
    "count": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "a positive integer"),
    "text": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "mapping": (lambda v: isinstance(v, dict), "a mapping"),
    "numbers": (lambda v: isinstance(v, list) and bool(v) and all(_number(x) for x in v), "a non-empty list of numbers"),
    "counts": (lambda v: isinstance(v, list) and bool(v) and all(TYPES["count"][0](x) for x in v),
               "a non-empty list of positive integers"),
    "texts": (lambda v: isinstance(v, list) and bool(v) and all(TYPES["text"][0](x) for x in v),
              "a non-empty list of names"),
    "flag": (lambda v: isinstance(v, bool), "true or false"),
    "name or none": (lambda v: v is None or (isinstance(v, str) and bool(v)), "a name, or null"),
}


@dataclass(frozen=True)
class Field:
    """One key of a section: its type (``TYPES``), unit (SI, "" for counts, names and ratios), value rule
    (``hardware.RULES``, for numbers), default (``REQUIRED``: none) and meaning."""
    key: str
    type: str
    unit: str = ""
    rule: str = ""
    default: Any = REQUIRED
    doc: str = ""

    def check(self, file, where: str, value):
        ok, expected = TYPES[self.type]
        if not ok(value):
            raise ScenarioError(file, f"{where}{self.key}", expected + (f" ({self.unit})" if self.unit else ""), value)
        if self.rule:
            test, expected = hardware.RULES[self.rule]
            for i, x in enumerate(value if isinstance(value, list) else [value]):
                if not test(x):
                    at = f"[{i}]" if isinstance(value, list) else ""
                    raise ScenarioError(file, f"{where}{self.key}{at}", expected + (f" ({self.unit})" if self.unit else ""), x)
        return value


def spec(key, type="number", unit="", rule="positive", default=REQUIRED, doc="") -> Field:
    return Field(key, type, unit, rule if type in ("number", "numbers") else "", default, doc)


# the unit suffixes a key may carry: a key of the same stem in another unit is an error that names the schema's key
UNITS = ("_s", "_ms", "_us", "_min", "_bps", "_kbps", "_mbps", "_gbps", "_gb", "_mb", "_bytes", "_tok_s",
         "_s_per_token", "_ms_per_token", "_hz")


def _stem(key: str) -> str:
    return next((key[: -len(u)] for u in sorted(UNITS, key=len, reverse=True) if key.endswith(u)), key)


def read(file, where: str, data, fields: tuple[Field, ...]) -> dict:
    """The section ``data`` at ``where`` (e.g. ``"server."``) checked against ``fields``: a missing required key,
    an unknown one (the nearest known key; a known quantity in another unit names the schema's key and unit), a
    value of the wrong type or outside its rule each raise ``ScenarioError``; returns every field, defaults filled."""
    if not isinstance(data, dict):
        raise ScenarioError(file, where.rstrip(".") or "<top level>", "a mapping", data)
    known = {fd.key: fd for fd in fields}
    for k in data:       # an unknown key first: a misspelt key, or one in another unit, is named with the schema's
        if k not in known:
            raise ScenarioError(file, f"{where}{k}", unknown_key(str(k), known))
    for fd in fields:
        if fd.default is REQUIRED and fd.key not in data:
            raise ScenarioError(file, f"{where}{fd.key}", fd.doc or TYPES[fd.type][1], missing=True)
    return {k: fd.check(file, where, data[k]) if k in data else fd.default for k, fd in known.items()}


# other names for a quantity the schema declares (the papers' words, a runtime model's): name -> (the schema's key,
# how to convert a value)
SYNONYMS = {"latency": ("rtt_s", "the round trip: twice the one-way latency"),
            "window": ("gamma", "K, the drafts per round"),
            "draft_rate": ("s_per_token", "1 / the rate in tokens/s"),
            "tok_per_s": ("s_per_token", "1 / the rate in tokens/s")}


def unknown_key(key: str, known: dict[str, Field]) -> str:
    """What an unknown key was expected to be: the schema's key of its quantity (another unit or another name),
    else the keys."""
    if key in SYNONYMS and SYNONYMS[key][0] in known:
        to, how = SYNONYMS[key]
        unit = f" in {known[to].unit}" if known[to].unit else ""
        return f"{to!r}{unit} ({how}; one name and one unit per quantity)"
    same = [k for k in known if _stem(k) == _stem(key) and k != key]
    if same:
        unit = f" in {known[same[0]].unit}" if known[same[0]].unit else ""
        return f"{same[0]!r}{unit} (one name and one unit per quantity: convert {key!r})"
    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f"one of {sorted(known)}" + (f" (did you mean {close[0]!r}?)" if close else "")


def load_yaml(file: Path) -> dict:
    """The parsed scenario file (YAML 1.2 floats such as ``1.0e9``), its top level a mapping."""
    data = hardware.read_yaml(file)
    if not isinstance(data, dict):
        raise ScenarioError(file, "<top level>", "a mapping", data)
    return data


# --------------------------------------------------------------------------- the sections
SECTIONS = ("server", "device_classes", "mixes", "link", "workload", "policies", "sweep", "ci", "ar_on_the_edge",
            "capacity", "fleets", "runs", "validation", "setups", "systems", "readings", "targets", "device")
# a scenario names itself and its source; each kind of run requires the sections it reads (``sections``)
TOP = (spec("name", "text", doc="the file stem"), spec("source", "text", doc="where the numbers come from"),
       *(spec(k, "mapping", default=None) for k in SECTIONS))
SERVER = (spec("profile", "text", doc="a hardware profile holding the verifier's time model"),
          spec("runtime", "text", doc="its runtime model of kind policies.verify_model"),
          spec("memory_gb", unit="GB", doc="the KV memory every former and centralized serving hold within"),
          spec("delta_s", unit="s", rule="nonnegative", default=None, doc="WISP's guard time (a former that takes delta)"),
          spec("noise", rule="nonnegative", doc="the log-normal spread of the true pass time around the model"),
          spec("target", "mapping", doc="the target's KV shape"))
TARGET = (spec("model", "text"), *(spec(k, "count") for k in ("layers", "kv_heads", "head_dim", "dtype_bytes")))
DEVICE_PROFILE = (spec("profile", "text"), spec("runtime", "text", doc="a drafting runtime model of the profile"))
DEVICE_STATED = (spec("s_per_token", unit="s/token"), spec("source", "text", doc="where the stated speed comes from"))
LINK = (spec("rtt_s", unit="s", rule="nonnegative"), spec("bandwidth_bps", "numbers", unit="bit/s"))
WORKLOAD = (spec("pair", "text", doc="a traced pair with a retrained stop rule"),
            spec("temperature", rule="nonnegative"), spec("vocab_size", "count"), spec("top_k", "count"), spec("gamma", "count"),
            spec("prompt_tokens", "count"), spec("max_new_tokens", "count"), spec("slo_classes", "counts", unit="tok/s"),
            spec("arrivals", "text", doc="'closed'"))
REFERENCE = (spec("bandwidth_bps", unit="bit/s"), spec("devices", "count"), spec("mix", "text"))
SWEEP = (spec("devices", "counts"), spec("horizon_s", unit="s"), spec("warmup_s", unit="s", rule="nonnegative"), spec("seeds", "count"),
         spec("reference", "mapping"), spec("bandwidth_bps", "numbers", unit="bit/s", default=None),
         spec("capacity_max_devices", "count", default=None))
CI = tuple(Field(fd.key, fd.type, fd.unit, fd.rule, None, fd.doc) for fd in SWEEP)   # each key overrides the sweep's
AR_ON_THE_EDGE = (spec("target_to_draft_bytes", doc="the target's weights over the draft's"),)
CAPACITY = (spec("attainment", doc="a fraction of responses in (0, 1]"), spec("max_devices", "count"))
POLICIES = (spec("verify_model", "text"), spec("draft_model", "text"), spec("draft", "mapping"), spec("former", "mapping"))

# per policies section: its registry kind, the key naming the policy, and its other non-parameter keys
POLICY_SECTIONS = {"draft": ("allocator", "allocator", ("rule",)), "former": ("former", "former", ())}

# per-option requirements: a keyword a chosen former's builder takes -> the key the scenario must then state,
# what it must be, and the test of its value
NEEDS = {"delta": ("server.delta_s", "WISP's guard time (s)", lambda v: v is not None),
         "estimator": ("policies.verify_model", "affine_interactions (eq 19, whose estimate the former decides with)",
                       lambda v: v == "affine_interactions")}

FLEET = (spec("paper_models", "text", default="", doc="the paper's models the fleet stands in for"),
         spec("clients", "count", doc="N: the clients of one verification server"),
         spec("capacity", "count", doc="C: draft tokens per verification pass, summed over the clients"),
         spec("max_new_tokens", "count", doc="tokens per response"),
         spec("drafts", "texts", doc="client i drafts with drafts[i % len(drafts)]"))

VALIDATION = (spec("sizes", "counts", doc="N: the clients of each real run"), spec("full", "mapping"), spec("ci", "mapping"))
RUN_SIZE = (spec("prompts_per_domain", "count"), spec("max_new_tokens", "count"))
SETUP = (spec("capacity_per_client", "count", doc="C / N: draft tokens per verification pass per client"),
         spec("drafts", "texts", doc="client i drafts with drafts[i % len(drafts)]"),
         spec("policies", "mapping", doc="policy -> its batch former and allocator by registry name"),
         spec("slo_classes", "counts", unit="tok/s", default=None, doc="client i's SLO class, slo_classes[i % len], cycled "
              "(none: no classes)"),
         spec("campaign", "text", default="", doc="measured on its own (its runs' file under data/serving_validation/): "
              "the file's stem; empty: the settings' common files"))
SETUP_POLICY = (spec("former", "mapping"), spec("allocator", "mapping"))


# a serving sweep (WISP's, ``li2026_serving.yaml``): its systems and targets, and the values every sweep point
# runs under, each quantity under the key (and unit) the sections above declare for it
SYSTEM = (spec("former", "name or none", doc="its batch former by registry name (null: centralized serving, the "
               "server decoding every token)"),
          spec("prefix_cache", "flag", doc="whether the verifier reuses a prefix's KV"),
          spec("predictor", "flag", doc="whether its devices may stop drafting by the predictor (else a fixed window γ)"))
SHAPE = tuple(spec(k, "count") for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate"))


def pick(fields: tuple[Field, ...], *keys: str) -> tuple[Field, ...]:
    """The declarations of ``keys`` in ``fields`` (a section above): a section of another kind of scenario that
    holds some of the same quantities declares them by these, never again."""
    known = {fd.key: fd for fd in fields}
    return tuple(known[k] for k in keys)


SWEEP_SERVER = pick(SERVER, "profile", "memory_gb", "delta_s", "noise")
SWEEP_LINK = pick(LINK, "rtt_s")
SWEEP_WORKLOAD = pick(WORKLOAD, "pair", "temperature", "gamma", "prompt_tokens", "max_new_tokens", "slo_classes")
SWEEP_RUN = pick(SWEEP, "horizon_s", "warmup_s")
# the values of one sweep point (``serving.scenario.Setting``): section -> its keys, each a ``Setting`` field
SETTING = {"device": pick(DEVICE_STATED, "s_per_token"), "link": SWEEP_LINK, "server": SWEEP_SERVER,
           "workload": pick(WORKLOAD, "temperature", "gamma", "prompt_tokens", "max_new_tokens"), "sweep": SWEEP_RUN}


def sections(file, data, needed: tuple[str, ...]) -> dict:
    """The top level of a scenario file checked (``TOP``), with every section of ``needed`` present."""
    top = read(file, "", data, TOP)
    for k in needed:
        if top[k] is None:
            raise ScenarioError(file, k, "a mapping (a section this scenario's runs read)", missing=True)
    return top
