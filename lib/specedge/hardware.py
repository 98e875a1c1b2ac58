"""Hardware profiles: devices, links and fitted runtime coefficients, as validated YAML data.

A profile lives in ``data/profiles/<name>.yaml``. The papers' published constants are profiles like
any other (``zhu2025_paper``, ``venkatesha2025_paper``, ...); measured profiles are written by the
profiling routines of later notebooks. Loading validates every key and fails with an error that
names the file, the key and what was expected.

Schema (all numbers in SI units; the key suffix names the unit)::

    name: str                     # equals the file stem
    source: str                   # where the numbers come from (paper table, or the measuring run)
    description: str              # optional
    measured: {device: str, date: str, csv?: str, ...}   # optional: present on measured profiles;
                                  # csv names the raw measurements next to the file (<name>_measurements.csv)
    devices:  {<name>: {description?, peak_flops?, memory_bandwidth_Bps?, memory_bytes?}}
    links:    {<name>: {rate_bps? | bandwidth_hz?, latency_s?, description?}}
    runtime:  {<name>: {model: str, kind?: str, <coefficient>: number, ..., unit?: str, description?: str,
                        fit?: {r2, points, ...}}}   # e.g. T = c1*F*b + c2; fit: goodness of a measured fit
    constants: {<name>: number | str | list of numbers}           # paper-specific settings

What a profile provides is its runtime models, each of a *kind* (``KINDS``: the coefficients the
kind's formula needs, with their signs), its links and its constants. A runtime entry names its kind
with ``kind:`` (the committed profiles do); without one, a ``model:`` that is a kind's formula (spacing
aside) gives the kind (so the eq (17) fits and zoo pass times ``make profiles`` writes are typed), and
an entry of neither is a free table of numbers. Loading checks every coefficient a kind needs and the
type of every constant named in ``CONSTANTS``; what each notebook needs from a profile is stated in
:mod:`specedge.needs`.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import paths

DEVICE_KEYS = {"peak_flops", "memory_bandwidth_Bps", "memory_bytes"}
LINK_KEYS = {"rate_bps", "bandwidth_hz", "latency_s"}
REQUIRED = ("name", "source", "devices", "links", "runtime")
OPTIONAL = ("description", "measured", "constants")
RUNTIME_TEXT = ("model", "kind", "description", "unit", "fit")       # the non-coefficient keys of a runtime entry

# value rules of coefficients and constants: rule -> (test of a finite number, what is expected)
RULES = {"positive": (lambda v: v > 0, "a positive number"),
         "nonnegative": (lambda v: v >= 0, "a non-negative number"),
         "number": (lambda v: True, "a finite number"),
         "count": (lambda v: isinstance(v, int) and v >= 1, "a positive integer")}


@dataclass(frozen=True)
class Kind:
    """A runtime model's formula, the coefficients it needs and, when present, checks (rules of RULES)."""
    formula: str
    needs: dict[str, str]
    optional: dict[str, str] = field(default_factory=dict)


KINDS = {
    # zhu2025 eq (17); measured by specedge.profiling (F: FLOPs of one sequence, b: batch size)
    "linear_batch": Kind("T = c1*F*b + c2", {"c1": "positive", "c2": "nonnegative"}),
    # tran2025: one batched verification pass, per verified token; drafting per token
    "affine_tokens": Kind("T = c0 + c_tok*tokens", {"c0": "nonnegative", "c_tok": "positive"}),
    "per_token": Kind("T = c_tok*S", {"c_tok": "positive"}),
    # li2026 eq (19), affine in new tokens, attention interactions and cached tokens; the fitted
    # intercept c may be negative
    "affine_interactions": Kind("T = a*N_linear + b_compute*N_interactions + b_read*N_cached + c",
                          {"a": "nonnegative", "b_compute": "nonnegative", "b_read": "nonnegative", "c": "number"}),
    # zheng2025 eq (6): cost relative to one LLM pass, affine in the top-K size sent uplink
    "affine_topk": Kind("L(K) = slm_over_llm + uplink_full_over_llm * K / vocab_size",
                          {"slm_over_llm": "nonnegative", "uplink_full_over_llm": "nonnegative"}),
    # venkatesha2025 Table 5: one SD round = drafting gamma tokens + one verification + communication
    "draft_verify_comm": Kind("T_round = T_d_s + T_t_s + T_c_s", {"gamma": "count", "T_d_s": "positive", "T_t_s": "positive",
                                              "T_c_s": "nonnegative"},
                          {"c": "positive", "threads": "count", "max_memory_bytes": "positive"}),
    # zheng2025 measure: zoo forward-pass times
    "pass_times": Kind("seconds per forward pass, batch 1, 64 cached tokens",
                       {"decode_s": "positive", "verify5_s": "positive"}),
}

# earlier names of kinds (named for one paper), still read from older profiles
KIND_ALIASES = {"wisp_features": "affine_interactions", "relative_cost": "affine_topk",
                "round_timings": "draft_verify_comm"}

# constants with one meaning in every profile that has them (zhu2025's Table II is read by code)
CONSTANTS = {"num_users": "count", "max_output_len": "count", "max_input_len": "count",
             "max_speculation_len": "count", "vocab_size": "count", "bits_per_probability": "count",
             "noise_power_dbm": "number", "path_loss_db": "number", "tx_power_w": "positive",
             "cell_radius_m": "positive"}


class _Loader(yaml.SafeLoader):
    """PyYAML follows YAML 1.1, where ``1.0e9`` (no exponent sign) is a string; accept it as a float."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9_]+|[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"),
    list("-+0123456789."))


class ProfileError(ValueError):
    """A profile file that does not follow the schema."""

    def __init__(self, file, key: str, expected: str, got: Any = None, missing: bool = False):
        self.file, self.key = file, key
        msg = f"{file}: key '{key}'{' missing' if missing else ''}: expected {expected}"
        if got is not None:
            msg += f", got {got!r}"
        super().__init__(msg)


@dataclass(frozen=True)
class Profile:
    name: str
    source: str
    devices: dict[str, dict]
    links: dict[str, dict]
    runtime: dict[str, dict]
    constants: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    measured: dict | None = None
    path: Path | None = None

    def kind(self, runtime: str) -> str | None:
        """The kind of runtime model ``runtime`` (a key of ``KINDS``), None for a free table of numbers."""
        self.coefficients(runtime)          # an unknown runtime model: the error that lists the known ones
        return runtime_kind(self.runtime[runtime])

    def coefficients(self, runtime: str) -> dict[str, float]:
        """The numeric coefficients of runtime model ``runtime`` (e.g. ``{'c1': .., 'c2': ..}``)."""
        if runtime not in self.runtime:
            raise KeyError(f"profile {self.name!r} has no runtime model {runtime!r}; "
                           f"it has {sorted(self.runtime)}")
        return {k: v for k, v in self.runtime[runtime].items() if _is_number(v)}

    def constant(self, key: str):
        if key not in self.constants:
            raise KeyError(f"profile {self.name!r} has no constant {key!r}; it has {sorted(self.constants)}")
        return self.constants[key]

    def link(self, name: str) -> dict:
        if name not in self.links:
            raise KeyError(f"profile {self.name!r} has no link {name!r}; it has {sorted(self.links)}")
        return self.links[name]

    def to_dict(self) -> dict:
        d = {"name": self.name, "source": self.source}
        if self.description:
            d["description"] = self.description
        if self.measured:
            d["measured"] = self.measured
        d.update(devices=self.devices, links=self.links, runtime=self.runtime)
        if self.constants:
            d["constants"] = self.constants
        return d


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _mapping(file, key, value) -> dict:
    if not isinstance(value, dict):
        raise ProfileError(file, key, "a mapping", value)
    return value


def _rule(file, key, value, rule, why="") -> None:
    test, expected = RULES[rule]
    if not (_is_number(value) and test(value)):
        raise ProfileError(file, key, expected + why, value)


def runtime_kind(spec: dict) -> str | None:
    """An entry's ``kind:``, else the kind whose formula its ``model:`` is (spacing aside), else None."""
    if "kind" in spec:
        kind = spec["kind"]
        return KIND_ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    model = str(spec.get("model", "")).replace(" ", "")
    return next((k for k, kind in KINDS.items() if kind.formula.replace(" ", "") == model), None)


def _check_kind(file, name: str, spec: dict) -> None:
    kind = runtime_kind(spec)
    if kind is None:
        return
    if not isinstance(kind, str) or kind not in KINDS:
        raise ProfileError(file, f"runtime.{name}.kind", "one of " + ", ".join(KINDS), kind)
    why = f" (needed by the {kind!r} model, {KINDS[kind].formula})"
    for k, rule in KINDS[kind].needs.items():
        if k not in spec:
            raise ProfileError(file, f"runtime.{name}.{k}", RULES[rule][1] + why, missing=True)
        _rule(file, f"runtime.{name}.{k}", spec[k], rule, why)
    for k, rule in KINDS[kind].optional.items():
        if k in spec:
            _rule(file, f"runtime.{name}.{k}", spec[k], rule, f" (in a {kind!r} model)")


def validate(data: Any, file="<profile>") -> Profile:
    """Check ``data`` (a parsed YAML document) against the schema and build a :class:`Profile`."""
    data = _mapping(file, "<top level>", data)
    for key in REQUIRED:
        if key not in data:
            raise ProfileError(file, key, "present (required keys: " + ", ".join(REQUIRED) + ")")
    unknown = set(data) - set(REQUIRED) - set(OPTIONAL)
    if unknown:
        raise ProfileError(file, sorted(unknown)[0], "one of " + ", ".join(REQUIRED + OPTIONAL))
    for key in ("name", "source"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise ProfileError(file, key, "a non-empty string", data[key])

    for dev, spec in _mapping(file, "devices", data["devices"]).items():
        spec = _mapping(file, f"devices.{dev}", spec)
        for k, v in spec.items():
            if k == "description":
                continue
            if k not in DEVICE_KEYS:
                raise ProfileError(file, f"devices.{dev}.{k}", "one of " + ", ".join(sorted(DEVICE_KEYS | {'description'})))
            _rule(file, f"devices.{dev}.{k}", v, "positive")

    for name, spec in _mapping(file, "links", data["links"]).items():
        spec = _mapping(file, f"links.{name}", spec)
        for k in spec:  # an unknown key first: a typo of 'bandwidth_hz' is named as such, with the fix
            if k not in LINK_KEYS | {"description"}:
                import difflib
                close = difflib.get_close_matches(str(k), sorted(LINK_KEYS | {"description"}), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ProfileError(file, f"links.{name}.{k}", "one of " + ", ".join(sorted(LINK_KEYS | {'description'}))
                                   + f"; '{k}' is not a known key{hint}")
        if not ({"rate_bps", "bandwidth_hz"} & set(spec)):
            raise ProfileError(file, f"links.{name}", "a 'rate_bps' or a 'bandwidth_hz' entry")
        for k, v in spec.items():
            if k == "description":
                continue
            _rule(file, f"links.{name}.{k}", v, "nonnegative" if k == "latency_s" else "positive")

    for name, spec in _mapping(file, "runtime", data["runtime"]).items():
        spec = _mapping(file, f"runtime.{name}", spec)
        if not isinstance(spec.get("model"), str):
            raise ProfileError(file, f"runtime.{name}.model", "a string naming the runtime model, e.g. 'T = c1*F*b + c2'",
                               spec.get("model"))
        for k, v in spec.items():
            if k not in RUNTIME_TEXT and not _is_number(v):
                raise ProfileError(file, f"runtime.{name}.{k}", "a finite number", v)
        _check_kind(file, name, spec)

    constants = _mapping(file, "constants", data.get("constants", {}) or {})
    for k, v in constants.items():
        ok = _is_number(v) or isinstance(v, str) or (isinstance(v, list) and all(_is_number(x) for x in v))
        if not ok:
            raise ProfileError(file, f"constants.{k}", "a number, a string or a list of numbers", v)
        if k in CONSTANTS:
            _rule(file, f"constants.{k}", v, CONSTANTS[k])
    measured = data.get("measured")
    if measured is not None:
        measured = _mapping(file, "measured", measured)
        if "device" not in measured:
            raise ProfileError(file, "measured.device", "the device the profile was measured on")

    return Profile(name=data["name"], source=data["source"], devices=data["devices"], links=data["links"],
                   runtime=data["runtime"], constants=constants, description=data.get("description", ""),
                   measured=measured, path=Path(file) if file != "<profile>" else None)


def profile_path(name_or_path: str | Path) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml"):
        return p if p.is_absolute() else (Path.cwd() / p)
    return paths.PROFILES / f"{name_or_path}.yaml"


def list_profiles() -> list[str]:
    return sorted(p.stem for p in paths.PROFILES.glob("*.yaml"))


_PARSED: dict[Path, tuple[tuple[int, int], Any]] = {}


def _parsed(path: Path):
    """The YAML of ``path``, parsed once per version of the file (its mtime and size): a sweep loads the same
    profile for each of thousands of points, and parsing is 50x the validation. A deep copy each call."""
    stat = path.stat()
    key = (stat.st_mtime_ns, stat.st_size)
    hit = _PARSED.get(path)
    if hit is None or hit[0] != key:
        _PARSED[path] = hit = (key, read_yaml(path))
    return copy.deepcopy(hit[1])


def read_yaml(path: Path):
    """A YAML file as profiles and scenarios are read (``1.0e9`` a float); an unparsable one names the file."""
    with open(path) as f:
        try:
            return yaml.load(f, Loader=_Loader)
        except yaml.YAMLError as e:
            raise ProfileError(path, "<top level>", f"valid YAML ({e})") from e


def load_profile(name_or_path: str | Path) -> Profile:
    """Load and validate a profile by name (``data/profiles/<name>.yaml``) or by path."""
    path = profile_path(name_or_path)
    if not path.exists():
        raise FileNotFoundError(f"no hardware profile {str(name_or_path)!r} (looked for {path}); "
                                f"available: {', '.join(list_profiles())}")
    prof = validate(_parsed(path), file=path)
    if prof.name != path.stem:
        raise ProfileError(path, "name", f"the file stem {path.stem!r}", prof.name)
    return prof


def as_profile(profile: Profile | str | Path) -> Profile:
    """``profile`` itself when it is loaded already, else loaded by name or path: code that receives a
    profile takes the object the caller loaded once (a copy's name names no file in data/profiles/)."""
    return profile if isinstance(profile, Profile) else load_profile(profile)


def save_profile(profile: Profile | dict, path: Path | None = None) -> Path:
    """Validate and write a profile (measured profiles are written this way)."""
    data = profile.to_dict() if isinstance(profile, Profile) else profile
    path = Path(path) if path else paths.PROFILES / f"{data['name']}.yaml"
    validate(data, file=path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        yaml.safe_dump(data, f, sort_keys=False, width=100)
    return path


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, dtype_bytes: int = 2) -> float:
    """Bytes of a transformer's KV cache per token: a key and a value of ``kv_heads`` x ``head_dim`` per layer."""
    return float(layers * kv_heads * head_dim * 2 * dtype_bytes)
