"""Acceptance sources by name: what a scenario's workload names (``workload.pair``) to say how its drafts are
accepted. A source is a traced pair of models: its per-position acceptance traces (the twin's
``TraceAcceptance``), the traced window (drafts per round: γ may not exceed it), its stop rules by name (WISP's
predictors trained on those traces, which a ``predictor:<name>`` drafting rule stops by), its drafts, target and
domains, and the files a sweep point that reads it depends on (part of its cache key).

===========  ==========================================================  ======  ====================================
name         traces                                                      window  stop rules
===========  ==========================================================  ======  ====================================
``zoo``      the zoo's pairs (``data/traces/li2026_traces.csv.gz``)       8       ``mlp`` (``data/predictor``)
``realpair`` Qwen2.5-Coder 0.5B -> 1.5B (``zoo.realpair``), T in {0, 1}   4       ``mlp`` retrained on its traces
===========  ==========================================================  ======  ====================================
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from .. import paths
from ..zoo import realpair
from .sim.twin import TRACES, TraceAcceptance


@dataclass(frozen=True)
class Source:
    """A traced pair: its traces' file, window, stop rules' folder (each rule a committed predictor in it), the
    target whose rows the twin reads, its drafts and domains."""
    traces: Path
    window: int
    predictors: Path
    stop_rules: tuple[str, ...]
    target: str
    drafts: tuple[str, ...]
    domains: tuple[str, ...]

    @property
    def sweep_inputs(self) -> tuple[Path, ...]:
        """The files a run on this source reads: the traces and every stop rule's weights."""
        return (self.traces, *(self.predictors / f"{r}.{ext}" for r in self.stop_rules for ext in ("json", "safetensors")))


SOURCES = {
    "zoo": Source(TRACES, 8, paths.DATA / "predictor", ("mlp",), "target-m", ("draft-xs", "draft-s", "draft-m", "draft-l"),
                  ("chat", "code", "math", "qa", "sql", "summarize")),
    "realpair": Source(realpair.TRACES, 4, paths.DATA / "predictor" / "realpair", ("mlp",), realpair.TARGET,
                       (realpair.DRAFT,), realpair.ALL_DOMAINS),
}


def source(name: str) -> Source:
    if name not in SOURCES:
        raise ValueError(f"acceptance source: expected one of {sorted(SOURCES)}, got {name!r}")
    return SOURCES[name]


def windows() -> dict[str, int]:
    """Every source's traced window (what a scenario's γ is checked against)."""
    return {name: s.window for name, s in SOURCES.items()}


def traces(name: str) -> pd.DataFrame | Path:
    """The source's traces as the twin reads them: the zoo's file, or the real pair's committed traces named by
    the pair (``draft``/``target`` = its short names)."""
    if name == "realpair":
        return realpair.load("traces").assign(draft=realpair.DRAFT, target=realpair.TARGET)
    return source(name).traces


@lru_cache(maxsize=None)
def acceptance(name: str) -> TraceAcceptance:
    """The source's ``TraceAcceptance`` with its stop rules loaded by name (loaded once per process)."""
    from ..predictor import persistence

    s = source(name)
    return TraceAcceptance(traces(name), target=s.target, stop_rules={r: persistence.load(s.predictors, r) for r in s.stop_rules})
