"""Draft allocators: S(t+1) for every client (``interfaces.DraftAllocator``).

Plain objects with no clock and no I/O; the server and the twin call ``update`` once per
verified batch with that batch's outcomes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .interfaces import Outcome


@dataclass
class FixedS:
    """Fixed-S baseline: every client drafts ``S_i = C // N`` tokens every round (tran2025 IV-B)."""
    capacity: int
    num_clients: int
    label: str = "Fixed-S"
    _clients: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self):
        if self.num_clients < 1 or self.capacity < self.num_clients:
            raise ValueError(f"FixedS: need capacity >= num_clients >= 1, got C={self.capacity}, "
                             f"N={self.num_clients}")

    @property
    def share(self) -> int:
        return self.capacity // self.num_clients

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        self._clients = list(clients)
        return {c: self.share for c in self._clients}

    def update(self, outcomes: Sequence[Outcome]) -> dict[int, int]:
        return {c: self.share for c in self._clients}
