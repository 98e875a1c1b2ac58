"""WISP's serving twin driven by the real pair (issue 22): Qwen2.5-Coder 0.5B devices drafting for the 1.5B.

The same systems, settings and runtime model as ``experiments.li2026`` (the paper's eq (19) verifier of
Qwen3-32B, 50 tok/s devices, SLO classes 2/4/6/8 tok/s); only what depends on how a draft and a target
behave changes: every device drafts with the real pair's 0.5B, its per-position acceptance is drawn from
the real pair's committed traces (``realpair_twin.twin_traces``: 8 domains × T ∈ {0, 1}, window 4), and
its stop rule is the MLP retrained on those traces (``data/predictor/realpair``). The traces' window is
4 drafts, so K = 4 here (the zoo's runs use K = 8; ``zoo_setting`` gives the zoo the same K for a
like-for-like comparison). Device i drafts on domains i and i + 4 of the pair's eight.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import pandas as pd

from .. import claims, paths
from . import li2026 as ex
from .realpair_card import ALL_DOMAINS, TRACES
from ..zoo.realpair import DRAFT, TARGET

WINDOW = 4   # the real pair's traced window (realpair_card live, γ = 4)
PREDICTORS = paths.DATA / "predictor" / "realpair"
# the files a sweep point reads: their content is part of its cache key (``sweep.point_version``)
SWEEP_INPUTS = (TRACES, PREDICTORS / "mlp.json", PREDICTORS / "mlp.safetensors")


@lru_cache(maxsize=None)
def acceptance():
    """The real pair's traces with its retrained MLP as the stop rule ``mlp``."""
    from .. import predictor
    from ..serving.twin import TraceAcceptance
    from .realpair_twin import twin_traces

    return TraceAcceptance(twin_traces(), target=TARGET, stop_rules={"mlp": predictor.load(PREDICTORS, "mlp")})


def setting(base: ex.Setting | None = None) -> ex.Setting:
    """``base`` (default ``li2026.Setting()``) with K = the real pair's window."""
    return replace(base or ex.Setting(), window=WINDOW)


def run_log(point: ex.Point) -> pd.DataFrame:
    """The per-round log of ``point`` with the real pair's devices and traces (``li2026.run_log``)."""
    if point.setting.window > WINDOW:
        raise ValueError(f"point.setting.window: the real pair's traces hold {WINDOW} drafts per round, "
                         f"got K = {point.setting.window} (use realpair.setting())")
    acc = acceptance()
    wl = ex.workload(point, drafts=(DRAFT,), domains=ALL_DOMAINS, acc=acc, target=TARGET)
    return ex.run_log(point, wl, acc)


def run_point(point: ex.Point) -> dict:
    """One sweep row (``li2026.run_point``'s columns) of ``point`` on the real pair."""
    return ex.run_point(point, run_log(point))


def device_alpha(controlled: bool, temperature: float = 0.0) -> float:
    """The α a real-pair device reports (eq 5) with or without the MLP's stop rule, over the eight domains."""
    return ex.alpha(DRAFT, controlled, WINDOW, temperature, acc=acceptance(), domains=ALL_DOMAINS)


# --------------------------------------------------------------------------- the serving notebook's §9
NOTE = (f"the twin with the real pair's traces and retrained MLP, K = {WINDOW}, 50 tok/s devices, the paper's eq (19) "
        "Qwen3-32B verifier")
WHO = " (real pair Qwen2.5-Coder 0.5B->1.5B, twin)"


def points(base: ex.Setting, loads, n3: int, seeds) -> list[ex.Point]:
    """The §9 runs on ``setting(base)``, each with every seed: WISP and FCFS at Table 1's ``loads``, centralized
    and WISP at Table 3's load ``n3``, WISP with N = 16 and the predictor OFF / ON (Table 6)."""
    st = setting(base)
    return ([ex.Point(s, n, None, seed=k, setting=st) for s in ("WISP", "FCFS") for n in loads for k in seeds]
            + [ex.Point(s, n3, None, seed=k, setting=st) for s in ("Centralized", "WISP") for k in seeds]
            + [ex.Point("WISP", 16, None, predictor=p, seed=k, setting=st) for p in (False, True) for k in seeds])


def tables(rows: pd.DataFrame, loads, n3: int):
    """From ``points``' sweep rows: Table 1 (violation rate per (devices, system) x class, pooled over seeds),
    Table 3's mean goodput per system and Table 6's mean goodput per predictor OFF / ON."""
    t1 = ex.per_class(rows[rows.devices.isin(loads) & rows.predictor], ["system", "devices"])
    table1 = t1.pivot_table(index=["devices", "system"], columns="speed", values="violation_rate")
    good = rows[(rows.devices == n3) & rows.predictor].groupby("system").goodput.mean()
    t6 = rows[rows.devices == 16].groupby("predictor").goodput.mean()
    return table1, good, t6


def comparison_rows(rows: pd.DataFrame, loads, n3: int) -> list[dict]:
    """Table 1's, Table 3's and Table 6's claims on the real pair (``Comparison.extend`` rows), each decided over
    the seeds of ``rows`` (``points``' sweep rows)."""
    # imported here: the sweep's workers import this module for run_point, and need none of the notebook's plotting
    from .li2026_serving_figures import SEEDS, at_or_below_fcfs, by_seed

    good, t6 = by_seed(rows[(rows.devices == n3) & rows.predictor], "system"), by_seed(rows[rows.devices == 16], "predictor")
    return [dict(artifact="Table 1" + WHO, quantity=f"WISP at or below FCFS in every class, below in at least one ({SEEDS})", paper="yes",
                 strength="trend", claim=at_or_below_fcfs(rows[rows.predictor], loads),
                 note=f"mixed classes, N = {', '.join(map(str, loads))}; {NOTE}", statements="fig7-wisp-shifts"),
            dict(artifact="Table 3" + WHO, quantity=f"goodput ordered centralized < WISP ({SEEDS})", paper="yes", strength="trend",
                 claim=claims.interval_ordered({"centralized": good["Centralized"], "WISP": good["WISP"]}),
                 note=f"N = {n3}, mixed classes; {NOTE}", statements="sec52-goodput-higher"),
            dict(artifact="Table 6" + WHO, quantity=f"the predictor raises WISP's goodput (N = 16; {SEEDS})", paper="yes", strength="trend",
                 claim=claims.interval_ordered({"OFF": t6[False], "ON": t6[True]}),
                 note=f"{100 * (t6[True].mean() / t6[False].mean() - 1):+.1f} %; device alpha {device_alpha(False):.3f} (fixed window) -> "
                      f"{device_alpha(True):.3f} (the MLP's stops); {NOTE}", statements="table6-on-16")]
