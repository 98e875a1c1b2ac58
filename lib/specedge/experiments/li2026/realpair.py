"""WISP's serving twin driven by the real pair: Qwen2.5-Coder 0.5B devices drafting for the 1.5B.

The same systems, runtime model and setting as ``experiments.li2026.serving_runs`` (its scenario) (the paper's eq (19) verifier of
Qwen3-32B, SLO classes 2/4/6/8 tok/s; the notebook passes the settings fitted to Table 3, drafting speed
included); only what depends on how a draft and a target behave changes: every device drafts with the real
pair's 0.5B, its per-position acceptance is drawn from the real pair's committed traces
(``serving.acceptance_sources``' ``realpair``: 8 domains x T in {0, 1}, window 4), and its stop rule is the MLP retrained on
those traces (``predictor.persistence.REALPAIR``). The traces' window is 4 drafts, so K = γ = 4 here (``setting``; the zoo's
runs use γ = 8). Device i drafts on domains i and i + 4 of the pair's eight.
"""
from __future__ import annotations

import pandas as pd

from . import serving_runs as ex
from ...serving.scenario import Point, Setting
from ...zoo.realpair import ALL_DOMAINS
from ...serving import acceptance_sources
from ...zoo.realpair import DRAFT, TARGET

WINDOW = acceptance_sources.source("realpair").window   # the real pair's traced window (realpair_card live, γ = 4)
# the files a sweep point reads: their content is part of its cache key (``sweep.point_version``)
SWEEP_INPUTS = acceptance_sources.source("realpair").sweep_inputs


def acceptance():
    """The real pair's traces with its retrained MLP as the stop rule ``mlp`` (``acceptance_sources``' ``realpair``)."""
    return acceptance_sources.acceptance("realpair")


def setting(base: Setting | None = None) -> Setting:
    """``base`` (default: the scenario's, ``li2026.SCENARIO.base``) with γ = K = the real pair's window."""
    return ex.SCENARIO.setting(base, gamma=WINDOW)


def run_log(point: Point) -> pd.DataFrame:
    """The per-round log of ``point`` with the real pair's devices and traces (``li2026.run_log``)."""
    if point.setting.gamma > WINDOW:
        raise ValueError(f"point.setting.gamma: the real pair's traces hold {WINDOW} drafts per round, "
                         f"got K = {point.setting.gamma} (use realpair.setting())")
    acc = acceptance()
    wl = ex.workload(point, drafts=(DRAFT,), domains=ALL_DOMAINS, acc=acc, target=TARGET)
    return ex.run_log(point, wl, acc)


def run_point(point: Point) -> dict:
    """One sweep row (``li2026.run_point``'s columns) of ``point`` on the real pair."""
    return ex.run_point(point, run_log(point))


def device_alpha(controlled: bool, temperature: float = 0.0) -> float:
    """The α a real-pair device reports (eq 5) with or without the MLP's stop rule, over the eight domains."""
    return ex.alpha(DRAFT, controlled, WINDOW, temperature, acc=acceptance(), domains=ALL_DOMAINS)
