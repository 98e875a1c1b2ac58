"""A deadline-aware GOODSPEED (issue 20's plug-in demo): one ``DraftAllocator``, written from outside.

GOODSPEED (tran2025 Algorithm 1) maximises U = sum_i log x_i: each round it solves eq (5) with gradient
weights 1/X_i (``allocation.GoodspeedAllocator``). Weighting the utility by each client's SLO class,
U = sum_i w_i log x_i, only changes those weights to w_i / X_i: a client of a tighter token-speed class
(w_i its class speed) is given draft slots until its smoothed goodput X_i is w_i times larger. The
estimates (eqs 3-4) are GOODSPEED's own object's; the solver is ``solvers.tran2025.greedy``. Equal
weights give GOODSPEED's allocation exactly (tests/test_arena.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..solvers.tran2025 import greedy
from .allocation import GoodspeedAllocator
from .interfaces import Outcome


@dataclass
class SLOWeightedGoodspeed:
    capacity: int
    weights: Mapping[int, float]          # client -> w_i > 0 (e.g. its SLO class, tok/s)
    eta: float = 0.1
    beta: float = 0.1
    s_max: int | None = None
    label: str = "GOODSPEED-SLO"
    base: GoodspeedAllocator = field(init=False, repr=False)

    def __post_init__(self):
        bad = {c: w for c, w in self.weights.items() if not w > 0}
        if bad:
            raise ValueError(f"SLOWeightedGoodspeed.weights: must be > 0, got {bad}")
        self.base = GoodspeedAllocator(self.capacity, eta=self.eta, beta=self.beta, s_max=self.s_max)

    def _solve(self) -> dict[int, int]:
        clients, b = sorted(self.base.alpha_hat), self.base
        a = [float(min(b.alpha_hat[c], 1 - 1e-9)) for c in clients]
        w = [float(self.weights[c]) / float(b.X[c]) for c in clients]
        return dict(zip(clients, greedy(a, w, self.capacity, self.s_max)))

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        missing = sorted(set(clients) - set(self.weights))
        if missing:
            raise ValueError(f"SLOWeightedGoodspeed.weights: no weight for clients {missing}")
        self.base.initial(clients)
        return self._solve()

    def update(self, outcomes: Sequence[Outcome]) -> dict[int, int]:
        self.base.update(outcomes)        # eqs (3)-(4): GOODSPEED's estimates (its own allocation unused)
        return self._solve()
