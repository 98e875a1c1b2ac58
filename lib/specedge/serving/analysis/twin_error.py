"""The twin's validated error: how far it was from the real system, per metric and setting.

The notebooks that validate the twin (``serving.analysis.validation``) commit per metric and quantile the difference of
the twin from the real gRPC system in % (``twin_vs_real.csv``: the replay against the real run;
``stochastic_vs_replay.csv``: the stochastic twin against the replay; ``stochastic_vs_real.csv``: the stochastic
twin against held-out real runs, per setting). ``largest_pct`` reads a metric's largest |difference| at p50 over such
tables, ``stochastic_pct`` the stochastic twin's validated error of one setting, ``judge`` adds to a table of new differences that error and whether each
lies within it, ``lowest_real`` the lowest real value the error was measured at (where it is known to hold),
``margin_error`` the error a verdict's margin in a metric is judged against: in % of the metric, or for a violation
rate (``POINTS``) in percentage points, measured where the classes bind (``BINDING``: ``violation_points``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ... import paths

VALIDATION = (paths.FIGURES / "tran2025" / "twin_vs_real.csv", paths.FIGURES / "li2026_serving" / "twin_vs_real.csv")
STOCHASTIC = tuple(f.with_name("stochastic_vs_replay.csv") for f in VALIDATION)
# the stochastic twin against the real runs, per setting (``stochastic_vs_real.csv``: per held-out run, twin kind
# (``twin_attribution.COMPONENTS``), metric and quantile)
SETTINGS = {"tran2025": paths.FIGURES / "tran2025" / "stochastic_vs_real.csv",
            "li2026": paths.FIGURES / "li2026_serving" / "stochastic_vs_real.csv"}
# the stochastic twin against real runs whose SLO classes bind (WISP's setting with its classes x 10, a campaign of its
# own: ``experiments.serving_validation.runs.binding_section``): per run as ``SETTINGS``' tables, and per run, side and
# class its violation rate (``slo_binding_outcomes.csv``, ``serving.analysis.slo_outcomes.by_class``)
BINDING = {"li2026": paths.FIGURES / "li2026_serving" / "slo_binding_vs_real.csv"}
# the validated twin; the same with each seed's times drawn from every held-out run pooled (not one run's), before
# that with its core's slowness drawn per 0.1 s (not per busy period), and before that with its drafters' wake-up not
# read on their own clocks
LENGTHS = ("stochastic twin (prompt and position, held-out, shared drafter core of measured speed, staggered start, "
           "server intake, prompts' own lengths)")
STAMPS = LENGTHS[:-1] + ", drafters' wake-up on their clocks)"
PERIODS = STAMPS[:-1] + ", core's slowness per busy period)"
VALIDATED = PERIODS[:-1] + ", one held-out run's state per seed)"
DOMAIN_IID = "stochastic twin (domain i.i.d., this run's medians)"


def stochastic_pct(metric: str, setting: str, twin: str = VALIDATED, quantile: str = "p50", files=SETTINGS,
                   repeats=(0,)) -> float:
    """The stochastic twin's validated error in ``setting`` (a key of ``SETTINGS``): the largest |twin - real| (%) at
    ``quantile`` of ``metric`` over that setting's held-out real runs of ``repeats`` (default the committed runs,
    repeat 0; None: every repeat, runs measured under heavier load from other processes), for the twin kind ``twin``
    (the validated one, or the domain-i.i.d. twin the sweeps run: ``DOMAIN_IID``); NaN if the table does not compare
    the metric."""
    if setting not in files:
        raise ValueError(f"setting: expected one of {sorted(files)}, got {setting!r}")
    v = pd.read_csv(files[setting])
    v = v[(v.metric == metric) & (v["quantile"] == quantile) & (v.component == twin)]
    if repeats is not None and "repeat" in v:
        v = v[v["repeat"].isin(list(repeats))]
    return float(v.diff_pct.abs().max()) if len(v) else np.nan


def _p50(metric: str, files) -> pd.DataFrame:
    v = pd.concat([pd.read_csv(f) for f in files])
    return v[(v.metric == metric) & (v["quantile"] == "p50")]


def largest_pct(metric: str, files=VALIDATION) -> float:
    """The largest |twin - real| (%) at p50 of the validation metric ``metric`` over ``files``; NaN if none compares it."""
    v = _p50(metric, files)
    return float(v.diff_pct.abs().max()) if len(v) else np.nan


def lowest_real(metric: str, files=VALIDATION) -> float:
    """The lowest real p50 of ``metric`` in ``files``: the error was measured at and above it."""
    v = _p50(metric, files)
    return float(v["real"].min()) if len(v) else np.nan


def judge(table: pd.DataFrame, error) -> pd.DataFrame:
    """``table`` (columns ``metric``, ``twin_mode``, ``diff_pct``) with |diff_pct|, the error of each row's metric
    and mode (``error(metric, twin_mode)``, %) and ``within`` (|diff| <= that error)."""
    err = [error(m, t) for m, t in zip(table["metric"], table["twin_mode"])]
    return table.assign(abs_diff_pct=table["diff_pct"].abs(), twin_error_pct=err, within=table["diff_pct"].abs() <= err)


# --------------------------------------------------------------------------- the error a margin is judged against
# metrics a serving row's margin can be in: a validation metric (``stochastic_vs_real.csv``), or one computed from
# per-client goodput: a capacity or a knee (a number of devices: a twin E % off in each device's goodput serves about
# E % more or fewer of them at the same rate), Fig 4's utility (a sum of the logs of per-client goodputs) and GOODSPEED's
# distance to x* (in per-client goodput)
FROM_GOODPUT = ("capacity", "utility", "goodput_distance")
# metrics whose error is unmeasured: the real runs' missed deadlines are not labelled by eq (21) against the twin's, so
# a share of them has no validated error, and a verdict on one is undecided (a tie), never "beyond error"
UNMEASURED = ("missed_deadline_share",)
# metrics measured where the classes bind (``BINDING``): per-client SLO attainment in % of itself, as every metric of
# ``SETTINGS``' tables; a violation rate in percentage points (``violation_points``: a rate's error does not scale
# with the rate near 0 or 100 %), and every margin in it in points too
FROM_BINDING = ("slo_attainment", "slo_violation_rate")
POINTS = ("slo_violation_rate",)


def unit(metric: str) -> str:
    """The unit of ``metric``'s validated error and of a margin judged against it: "points" (``POINTS``) or "%"."""
    return "points" if metric in POINTS else "%"


def _beside(setting: str, stem: str, files=SETTINGS):
    """The table ``stem`` of ``setting``'s runs whose classes bind, beside its ``files`` table (a
    ``stochastic_vs_real.csv``, the same prefix to its name), or None where the setting has none (``BINDING``)."""
    if setting not in files:
        raise ValueError(f"setting: expected one of {sorted(files)}, got {setting!r}")
    if setting not in BINDING:
        return None
    if "stochastic_vs_real" not in files[setting].name:
        raise ValueError(f"{files[setting]}: expected a stochastic_vs_real.csv (its tables of runs whose classes bind "
                         "lie beside it)")
    path = files[setting].with_name(files[setting].name.replace("stochastic_vs_real", stem))
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing; the li2026_wisp_serving notebook's validation section writes it")
    return path


def binding_file(setting: str, files=SETTINGS):
    """``setting``'s table of the twin against runs whose classes bind (``BINDING``'s name), or None where it has none."""
    return _beside(setting, BINDING[setting].stem if setting in BINDING else "", files)


def violation_points(setting: str, twin: str = DOMAIN_IID, files=SETTINGS, level: str = "response") -> float:
    """The twin's validated error of a class's SLO violation rate in ``setting``, in percentage points, on the runs whose
    classes bind (``slo_binding_outcomes.csv``; ``slo_outcomes.twin_error``): per response (Sec 5.3's violation, the
    rate WISP's Table 1 and Fig 7 count), each policy and N's runs and the twin's seeds pooled, or per run of its rounds
    (``level`` "round", eq 4); for the twin kind ``twin``; NaN where the setting has none."""
    from .slo_outcomes import twin_error

    path = _beside(setting, "slo_binding_outcomes", files)
    if path is None:
        return np.nan
    t = pd.read_csv(path, dtype={"slo_class": str})
    need = {"response": ["responses", "response_violations"], "round": ["violation_pct"]}.get(level, [])
    if missing := [c for c in need if c not in t.columns]:
        raise ValueError(f"{path}: no column {missing} (written by an older version); the li2026_wisp_serving "
                         "notebook's validation section writes it anew")
    return twin_error(t, twin, level)


def margin_error(metric: str, setting: str, twin: str = DOMAIN_IID, files=SETTINGS) -> tuple[float, str]:
    """The error a margin in ``metric`` is judged against in ``setting`` (in ``unit(metric)``), and what it is: the
    stochastic twin's validated error of the metric (``stochastic_pct`` of the twin kind ``twin``: the sweeps run
    ``DOMAIN_IID``), of per-client goodput for a metric computed from it (``FROM_GOODPUT``), or measured where the
    classes bind (``FROM_BINDING``: NaN in a setting without such runs); NaN for an ``UNMEASURED`` metric."""
    if metric in UNMEASURED:
        if setting not in files:
            raise ValueError(f"setting: expected one of {sorted(files)}, got {setting!r}")
        return np.nan, f"{metric}: unmeasured (the real runs' missed deadlines are not labelled by eq (21))"
    if metric in FROM_BINDING:
        path = binding_file(setting, files)
        if path is None:
            return np.nan, f"{metric}: unmeasured (no real runs of this setting with SLO classes)"
        where = "on the real runs whose classes bind"
        if metric in POINTS:
            return (violation_points(setting, twin, files), f"{metric}, per response, {where} (each policy and N's runs "
                    "pooled), in percentage points")
        return stochastic_pct(metric, setting, twin, files={setting: path}, repeats=None), f"{metric}, {where}"
    source = "goodput_tok_s" if metric in FROM_GOODPUT else metric
    err = stochastic_pct(source, setting, twin, files=files)
    what = source if source == metric else f"{source}, which {metric} is computed from"
    return err, what
