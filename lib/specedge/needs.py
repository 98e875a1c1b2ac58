"""What each notebook needs from its hardware profile, checked before any work.

A profile provides runtime models (``runtime.<name>`` with numeric coefficients), links and constants
(``specedge.hardware``); a notebook with a ``profile`` parameter needs some of them. ``NEEDS`` states
that once per notebook; ``missing(notebook, profile)`` lists what a profile lacks (file, key path, what
was expected), ``check`` raises with that list — notebooks call it in their parameter cell, before an
output folder exists — and ``usable`` tells the runner which notebooks ``make figures PROFILE=x`` can
run (it skips the others and says why).

A coefficient rule is ``"positive"``, ``"nonnegative"`` or ``"number"``; a constant rule is ``int``
(a positive integer), ``float`` (a number) or ``list`` (a list of numbers). Constants listed under
``optional_constants`` are checked only when present (zhu2025 takes missing ones from its paper
profile).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import hardware
from .hardware import _is_number


@dataclass(frozen=True)
class Need:
    runtime: dict[str, dict[str, str]] = field(default_factory=dict)   # model -> coefficient -> rule
    links: tuple[str, ...] = ()
    constants: dict[str, type] = field(default_factory=dict)
    optional_constants: dict[str, type] = field(default_factory=dict)


_FSD = {k: "positive" for k in ("gamma", "T_d_s", "T_t_s", "T_c_s", "threads")}
_ZHU_CONSTANTS = {"num_users": int, "noise_power_dbm": float, "tx_power_w": float, "path_loss_db": float,
                  "cell_radius_m": float, "max_output_len": int, "max_input_len": int, "max_speculation_len": int}

NEEDS: dict[str, Need] = {
    "zheng2025_tk_slt": Need(runtime={"relative_cost": {"slm_over_llm": "nonnegative",
                                                        "uplink_full_over_llm": "nonnegative"}}),
    "zhu2025_edge_sd": Need(runtime={"draft": {"c1": "positive", "c2": "nonnegative"},
                                     "verify": {"c1": "positive", "c2": "nonnegative"}},
                            optional_constants=_ZHU_CONSTANTS),
    "venkatesha2025_early_exit": Need(runtime={f"{client}_{pair}": _FSD for client in ("jetson", "rtx")
                                               for pair in ("vicuna68m_vicuna7b", "vicuna160m_vicuna13b",
                                                            "vicuna68m_llama2_7b")}),
    "tran2025_goodspeed": Need(runtime={"verify": {"c0": "nonnegative", "c_tok": "positive"},
                                        "draft_small": {"c_tok": "positive"}, "draft_large": {"c_tok": "positive"}},
                               links=("draft_to_verifier",)),
    "li2026_wisp_serving": Need(runtime={"verify": {"a": "nonnegative", "b_compute": "nonnegative",
                                                    "b_read": "nonnegative", "c": "number"}}),
}

_RULES = {"positive": lambda v: v > 0, "nonnegative": lambda v: v >= 0, "number": lambda v: True}


def _constant_ok(value, kind) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if kind is list:
        return isinstance(value, list) and len(value) > 0 and all(_is_number(x) for x in value)
    return _is_number(value)


def missing(notebook: str, profile) -> list[str]:
    """What ``profile`` (a name, a path or a loaded ``Profile``) lacks for ``notebook``; [] if nothing."""
    if notebook not in NEEDS:
        raise KeyError(f"notebook {notebook!r} declares no profile needs; known: {sorted(NEEDS)}")
    prof = profile if isinstance(profile, hardware.Profile) else hardware.load_profile(profile)
    need, out = NEEDS[notebook], []
    for model, coefficients in need.runtime.items():
        if model not in prof.runtime:
            out.append(f"runtime.{model}: missing")
            continue
        have = prof.coefficients(model)
        for key, rule in coefficients.items():
            if key not in have:
                out.append(f"runtime.{model}.{key}: missing")
            elif not _RULES[rule](have[key]):
                out.append(f"runtime.{model}.{key}: expected a {rule} number, got {have[key]!r}")
    out += [f"links.{name}: missing" for name in need.links if name not in prof.links]
    for table, required in ((need.constants, True), (need.optional_constants, False)):
        for key, kind in table.items():
            if key not in prof.constants:
                if required:
                    out.append(f"constants.{key}: missing")
            elif not _constant_ok(prof.constants[key], kind):
                what = {int: "a positive integer", float: "a number", list: "a list of numbers"}[kind]
                out.append(f"constants.{key}: expected {what}, got {prof.constants[key]!r}")
    return out


def check(notebook: str, profile) -> hardware.Profile:
    """The loaded profile, or a ``ValueError`` naming its file and every key ``notebook`` needs from it."""
    prof = profile if isinstance(profile, hardware.Profile) else hardware.load_profile(profile)
    gaps = missing(notebook, prof)
    if gaps:
        where = prof.path or prof.name
        raise ValueError(f"{where}: profile {prof.name!r} cannot serve {notebook}: " + "; ".join(gaps))
    return prof


def usable(profile) -> dict[str, list[str]]:
    """For every notebook with needs: what ``profile`` lacks for it ([] = it can run on it)."""
    prof = profile if isinstance(profile, hardware.Profile) else hardware.load_profile(profile)
    return {nb: missing(nb, prof) for nb in NEEDS}
