"""Batch formers: which queued verification requests go into the next forward pass.

Plain objects (``interfaces.BatchFormer``): no clock, no I/O, so the real server and the SimPy twin
run the same instance. WISP's SLO-aware former (Algorithm 1) lives in its own module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ...registry import Registry
from ..interfaces import Pending

FORMERS = Registry("former")   # batch formers by name (``serving.policies``)


@dataclass
class SyncRounds:
    """GOODSPEED's synchronous rounds (Algorithm 1, steps 2-3): wait until every active client has a
    request queued, then verify all of them in one pass (the wait is the paper's receiving time)."""
    label: str = "sync"

    def form(self, queue: Sequence[Pending], now: float, active: frozenset[int]) -> list[Pending]:
        if not active or len(queue) < len(active):   # fewer requests than clients: someone is missing
            return []
        first: dict[int, Pending] = {}
        for req in queue:
            first.setdefault(req.client, req)
        if not active <= first.keys():
            return []
        return [first[c] for c in sorted(active)]


@dataclass
class FCFS:
    """First come, first served: everything queued, oldest first, up to ``max_batch`` requests
    (SLED's static batching when the verifier recomputes prefixes; ``None``: no limit) and within
    ``memory_budget`` (bytes of KV, ``Pending.memory``: the same constraint as WISP's eq (14)); the
    batch stops at the first request that does not fit, as Algorithm 1's does."""
    max_batch: int | None = None
    label: str = "FCFS"
    memory_budget: float = math.inf

    def __post_init__(self):
        if self.max_batch is not None and (not isinstance(self.max_batch, int) or self.max_batch < 1):
            raise ValueError(f"FCFS: max_batch must be a positive int or None, got {self.max_batch!r}")
        if not self.memory_budget > 0:
            raise ValueError(f"FCFS: memory_budget must be > 0 bytes, got {self.memory_budget!r}")

    def form(self, queue: Sequence[Pending], now: float, active: frozenset[int]) -> list[Pending]:
        ordered = sorted(queue, key=lambda r: (r.arrival, r.client, r.round))
        if self.max_batch is not None:
            ordered = ordered[: self.max_batch]
        if self.memory_budget == math.inf:
            return ordered
        used = 0.0
        for k, r in enumerate(ordered):
            used += r.memory
            if used > self.memory_budget:
                if k == 0:
                    raise ValueError(f"request of client {r.client}: memory {r.memory:g} exceeds the budget "
                                     f"{self.memory_budget:g}")
                return ordered[:k]
        return ordered


@FORMERS.register("sync")
def _sync():
    return SyncRounds()


@FORMERS.register("fcfs")
def _fcfs(memory_budget: float = math.inf, label: str = FCFS.label):
    return FCFS(memory_budget=memory_budget, label=label)     # label: e.g. li2026's "SLED" (FCFS, no prefix cache)
