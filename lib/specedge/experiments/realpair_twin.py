"""The real pair's committed traces as the serving twins' input: a real spread of α across
clients and domains for GOODSPEED's twin (``tran2025`` notebook) and WISP's (``li2026_realpair``)."""
from __future__ import annotations

import pandas as pd

from ..zoo.realpair import DRAFT, TARGET
from .realpair_card import ALL_DOMAINS, load


def twin_traces() -> pd.DataFrame:
    """The real pair's committed traces in the twins' format (``serving.sim.twin.TraceAcceptance``): every drafted
    position of the live γ = 4 rounds, named by the pair (``draft``/``target`` = the short names)."""
    return load("traces").assign(draft=DRAFT, target=TARGET)


def twin_workload(clients: int, capacity: int, max_tokens: int, seed: int = 0, temperature: float = 0.0):
    """GOODSPEED's workload on the real pair: client i drafts on domains i and i + 4 (mod 8) of the pair's
    eight, in that order (the zoo workload's switch of domain half-way, with the pair's spread of α)."""
    from ..serving.workload import ClientSpec, Workload
    n = len(ALL_DOMAINS)
    return Workload(TARGET, tuple(ClientSpec(DRAFT, (ALL_DOMAINS[i % n], ALL_DOMAINS[(i + n // 2) % n]), 1, max_tokens,
                                             temperature=temperature, seed=seed) for i in range(clients)),
                    capacity=capacity)
