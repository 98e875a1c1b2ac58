"""Batch formers: which queued verification requests go into the next forward pass.

Plain objects (``interfaces.BatchFormer``): no clock, no I/O, so the real server and the SimPy twin
run the same instance. WISP's SLO-aware former (Algorithm 1) lives in its own module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .interfaces import Pending


@dataclass
class SyncRounds:
    """GOODSPEED's synchronous rounds (Algorithm 1, steps 2-3): wait until every active client has a
    request queued, then verify all of them in one pass (the wait is the paper's receiving time)."""
    label: str = "sync"

    def form(self, queue: Sequence[Pending], now: float, active: frozenset[int]) -> list[Pending]:
        if not active:
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
    (SLED's static batching when the verifier recomputes prefixes; ``None``: no limit)."""
    max_batch: int | None = None
    label: str = "FCFS"

    def __post_init__(self):
        if self.max_batch is not None and (not isinstance(self.max_batch, int) or self.max_batch < 1):
            raise ValueError(f"FCFS: max_batch must be a positive int or None, got {self.max_batch!r}")

    def form(self, queue: Sequence[Pending], now: float, active: frozenset[int]) -> list[Pending]:
        ordered = sorted(queue, key=lambda r: (r.arrival, r.client, r.round))
        return ordered if self.max_batch is None else ordered[: self.max_batch]
