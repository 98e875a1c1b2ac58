"""WISP's SLO-aware batch former (li2026 Section 4.3, Algorithm 1) and its EDF-only ablation.

At a dispatch epoch t_k, for every queued request i: utility U_i = g_i / v_i (eq 16; g_i the expected
verified tokens of eq 5, v_i its verification time alone by the estimator), latest start time
LST_i = d_i - v_i - delta (eq 17). Critical requests (t_k >= LST_i) are admitted first in EDF order,
then the others by decreasing U_i; each tentative batch B' must satisfy the memory budget (eq 14,
sum m_j <= M) and the deadline constraint (eq 15, t_k + T_hat(B') <= min_{j in B'} d_j), and the batch
**stops growing at the first request that violates either** (no skipping ahead).

Feasibility is checked incrementally: eq (19) is additive in its three features, so the batch keeps
running sums of (N_linear, N_interactions, N_cached), its memory and its earliest deadline; each
FEASIBLEADD is O(1) and a decision is O(n log n) for n queued requests (the two sorts).

One reading the paper leaves open (stated here, tested): a request whose deadline has already become
unreachable (t_k + v_i > d_i, it cannot finish in time even alone) can never pass eq (15), so Algorithm 1
as printed would stop at it for ever — it is critical and has the earliest deadline — and dispatch
nothing again (the server idles with a non-empty queue). We admit such *late* requests at their EDF
place under the memory constraint only, and keep eq (15) for every request that can still meet its
deadline. Requests without an SLO (no deadline) are never critical.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .estimator import Estimator
from .interfaces import Pending


def _expected(p: Pending) -> float:
    return float(p.expected_tokens) if p.expected_tokens is not None else float(p.n_draft)


@dataclass
class _Batch:
    """Running state of a tentative batch: eq (19)'s sums, memory, earliest binding deadline."""
    est: Estimator
    memory_budget: float
    now: float
    lin: float = 0.0
    inter: float = 0.0
    cached: float = 0.0
    memory: float = 0.0
    d_min: float = math.inf

    def try_add(self, p: Pending, late: bool) -> bool:
        """FEASIBLEADD (Algorithm 1, lines 1-6); on success the request is added."""
        memory = self.memory + p.memory
        if memory > self.memory_budget:
            return False
        lin, inter, cached = self.lin + p.n_new, self.inter + (p.n_new + p.n_cached) * p.n_new, self.cached + p.n_cached
        d_min = self.d_min if (late or p.deadline is None) else min(self.d_min, p.deadline)
        if self.now + self.est.time(lin, inter, cached) > d_min:
            return False
        self.lin, self.inter, self.cached, self.memory, self.d_min = lin, inter, cached, memory, d_min
        return True


@dataclass
class WISPBatcher:
    """Algorithm 1. ``estimator``: eq (19) (an ``Estimator``); ``delta``: guard time (s);
    ``memory_budget``: M (bytes, as ``Pending.memory``); ``max_batch``: optional cap on requests."""
    estimator: Estimator
    delta: float = 0.0
    memory_budget: float = math.inf
    max_batch: int | None = None
    label: str = "WISP"
    density: bool = True          # False: the EDF-only ablation (every request in deadline order)

    def __post_init__(self):
        if not isinstance(self.estimator, Estimator):
            raise ValueError(f"estimator: expected a serving.estimator.Estimator, got {type(self.estimator).__name__}")
        if not self.delta >= 0:
            raise ValueError(f"delta: must be >= 0 s, got {self.delta!r}")
        if not self.memory_budget > 0:
            raise ValueError(f"memory_budget: must be > 0, got {self.memory_budget!r}")
        if self.max_batch is not None and (not isinstance(self.max_batch, int) or self.max_batch < 1):
            raise ValueError(f"max_batch: must be a positive int or None, got {self.max_batch!r}")

    def order(self, queue: Sequence[Pending], now: float) -> tuple[list[tuple[Pending, bool]], int]:
        """The candidates in admission order, each with its 'late' flag, and how many are critical."""
        crit, non = [], []
        for p in queue:
            v = self.estimator.v_hat(p)
            if p.deadline is not None and now >= p.deadline - v - self.delta:      # eq (17)
                crit.append((p.deadline, p.arrival, p.client, p, now + v > p.deadline))
            elif self.density:
                non.append((-_expected(p) / v, p.arrival, p.client, p))             # eq (16), decreasing
            else:
                non.append((p.deadline if p.deadline is not None else math.inf, p.arrival, p.client, p))
        crit.sort(key=lambda t: t[:3])
        non.sort(key=lambda t: t[:3])
        return [(t[3], t[4]) for t in crit] + [(t[3], False) for t in non], len(crit)

    def form(self, queue: Sequence[Pending], now: float, active: frozenset[int]) -> list[Pending]:
        batch = _Batch(self.estimator, self.memory_budget, now)
        chosen: list[Pending] = []
        candidates, _ = self.order(queue, now)
        for p, late in candidates:                      # lines 17-33: stop at the first violation
            if self.max_batch is not None and len(chosen) >= self.max_batch:
                break
            if not batch.try_add(p, late):
                break
            chosen.append(p)
        if not chosen and candidates and candidates[0][0].memory > self.memory_budget:
            p = candidates[0][0]
            raise ValueError(f"request of client {p.client}: memory {p.memory:g} exceeds the budget {self.memory_budget:g}")
        return chosen


def EDFOnly(estimator: Estimator, delta: float = 0.0, memory_budget: float = math.inf,
            max_batch: int | None = None) -> WISPBatcher:
    """The ablation: Algorithm 1's feasibility checks with every request in deadline order (no value
    density)."""
    return WISPBatcher(estimator, delta, memory_budget, max_batch, label="EDF-only", density=False)
