"""zheng2025's AS² (Algorithm 2) as a server-side ``DraftAllocator``: each client's draft length for its next round
is ``solvers.zheng2025.as2(α̂_i, L_i)``, α̂_i its running i.i.d. estimate (``running_alpha``, eq 12) over its
verified rounds and L_i its relative cost (eq 6: drafting plus the uplink of one drafted token, per LLM pass).
Where L_i >= 1 no draft length beats the standalone LLM (S(γ) <= 1 for every γ): γ = 0, the server then
decodes one token per round for that client. No capacity is shared: each client's γ is its own (TK-SLT's
single-device model), unlike GOODSPEED's budget C.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ...solvers.zheng2025 import as2, running_alpha
from .allocation import ALLOCATORS
from ..interfaces import Outcome


class MonotoneAS2:
    """``as2(alpha, L)`` for one L, each value computed once: γ* does not fall as alpha grows (tested on a dense
    grid), so an alpha between two computed ones of equal γ* has that γ* too (exact, no interpolation)."""

    def __init__(self, L: float):
        self.L, self.alphas, self.gammas = L, [], []

    def __call__(self, alpha: float) -> int:
        i = bisect_left(self.alphas, alpha)
        if i < len(self.alphas) and self.alphas[i] == alpha:
            return self.gammas[i]
        if 0 < i < len(self.alphas) and self.gammas[i - 1] == self.gammas[i]:
            return self.gammas[i]
        g = as2(alpha, self.L)
        self.alphas.insert(i, alpha)
        self.gammas.insert(i, g)
        return g


@dataclass
class AS2Allocator:
    costs: Mapping[int, float]             # client -> L_i >= 0 (eq 6)
    alpha0: float = 0.5
    prior_tokens: float = 8.0
    label: str = "AS2"
    _sums: dict[int, list[float]] = field(default_factory=dict, repr=False)   # client -> [accepted, reached]
    _alloc: dict[int, int] = field(default_factory=dict, repr=False)
    _as2: dict[float, MonotoneAS2] = field(default_factory=dict, repr=False)              # L -> its γ*(alpha)

    def __post_init__(self):
        bad = {c: v for c, v in self.costs.items() if not v >= 0}
        if bad or not 0 < self.alpha0 < 1:
            raise ValueError(f"AS2Allocator: need costs L_i >= 0 and 0 < alpha0 < 1, got {bad or self.alpha0}")

    def _gamma(self, c: int) -> int:
        L = self.costs[c]
        if not L < 1:
            return 0
        f = self._as2.get(L) or self._as2.setdefault(L, MonotoneAS2(L))
        return f(running_alpha(*self._sums[c], self.alpha0, self.prior_tokens))

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        missing = sorted(set(clients) - set(self.costs))
        if missing:
            raise ValueError(f"AS2Allocator.costs: no relative cost for clients {missing}")
        self._sums = {c: [0.0, 0.0] for c in clients}
        self._alloc = {c: self._gamma(c) for c in clients}
        return dict(self._alloc)

    def update(self, outcomes: Sequence[Outcome]) -> dict[int, int]:
        for o in outcomes:
            s = self._sums[o.client]
            s[0] += o.accepted
            s[1] += min(o.accepted + 1, o.drafted)
            self._alloc[o.client] = self._gamma(o.client)
        return self._alloc


@ALLOCATORS.register("as2")
def _as2(costs):
    return AS2Allocator(costs)
