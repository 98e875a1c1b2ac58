"""A deadline-aware GOODSPEED (the arena's plug-in demo): one ``DraftAllocator``, written from outside.

GOODSPEED (tran2025 Algorithm 1) maximises U = sum_i log x_i: each round it solves eq (5) with gradient
weights 1/X_i (``allocation.GoodspeedAllocator``). Weighting the utility by each client's SLO class,
U = sum_i w_i log x_i, only changes those weights to w_i / X_i: a client of a tighter token-speed class
(w_i its class speed) is given draft slots until its smoothed goodput X_i is w_i times larger. Everything
else is GOODSPEED's own object: its estimates (eqs 3-4) and its eq (5) solver. Equal weights give
GOODSPEED's allocation exactly (tests/unit/test_arena.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .allocation import ALLOCATORS, GoodspeedAllocator


@dataclass(kw_only=True)
class SLOWeightedGoodspeed(GoodspeedAllocator):
    """``SLOWeightedGoodspeed(capacity, weights={client: w_i}, ...)``: GOODSPEED with eq (5)'s weights w_i / X_i."""
    weights: Mapping[int, float] = field(default_factory=dict)   # client -> w_i > 0 (e.g. its SLO class, tok/s)
    label: str = "GOODSPEED-SLO"

    def __post_init__(self):
        super().__post_init__()
        bad = {c: w for c, w in self.weights.items() if not w > 0}
        if bad:
            raise ValueError(f"SLOWeightedGoodspeed.weights: must be > 0, got {bad}")

    def gradient_weights(self, clients: list[int]) -> list[float]:
        """U'(X_i) for U = sum_i w_i log X_i: w_i / X_i."""
        return [float(self.weights[c]) / float(self.X[c]) for c in clients]

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        missing = sorted(set(clients) - set(self.weights))
        if missing:
            raise ValueError(f"SLOWeightedGoodspeed.weights: no weight for clients {missing}")
        return super().initial(clients)


@ALLOCATORS.register("goodspeed-slo")
def _goodspeed_slo(capacity: int, weights, beta: float = GoodspeedAllocator.beta):
    return SLOWeightedGoodspeed(capacity, weights=weights, beta=beta)
