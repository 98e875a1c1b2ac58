"""Draft allocators: S(t+1) for every client (``interfaces.DraftAllocator``).

Plain objects with no clock and no I/O; the server and the twin call ``update`` once per
verified batch with that batch's outcomes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import numpy as np

from ...solvers.tran2025 import greedy
from ...registry import Registry
from ..interfaces import Outcome


def regreedy(start: list[int], alpha: list[float], weights: list[float], capacity: int,
             s_max: int | None = None) -> list[int]:
    """``solvers.tran2025.greedy(alpha, weights, capacity, s_max)``'s allocation, reached from ``start`` (the
    last round's) by moving single draft tokens: the allocator's fast copy (a round moves 0-2 tokens at 8
    clients, where the greedy makes C heap steps; ``tests/unit/test_twin_fastpaths.py`` compares them).

    The greedy hands out the C draft tokens of eq (5) in decreasing marginal gain w_i alpha_i^k (ties:
    lower client first), stopping at a gain <= 0: its allocation is the set of the C best (gain, client)
    keys with gain > 0. A per-client prefix is that set when every client's last kept key beats every
    client's next key, no kept gain is <= 0, and C tokens are given (or no positive next gain is left):
    moves restore that. Each client's gains must fall strictly with k, true for alpha <= 1 - 1e-9 while
    they stay normal floats; otherwise (near underflow) the greedy itself runs."""
    cap = s_max if s_max is not None else capacity
    if capacity <= 0 or cap <= 0:
        return [0] * len(alpha)
    low = min(alpha)
    if low <= 0.0:           # zero gains never count: the smallest positive alpha bounds the rest
        low = min((a for a in alpha if a > 0.0), default=1.0)
    if min(weights) * low ** cap < 1e-290:
        return greedy(alpha, weights, capacity, s_max)
    inf = math.inf
    s = list(start) if 0 <= min(start) and max(start) <= cap else [min(max(k, 0), cap) for k in start]
    # per client: the gain of its last kept token (inf: none kept) and of its next one (-inf: at the cap);
    # the worst kept is the lowest gain (ties: the higher client), the best next the highest (ties: the lower)
    kept = [w * a ** k if k > 0 else inf for a, w, k in zip(alpha, weights, s)]
    nxt = [w * a ** (k + 1) if k < cap else -inf for a, w, k in zip(alpha, weights, s)]
    last = len(s) - 1

    def move(i, d):          # client i gets d (+1 or -1) tokens more
        k = s[i] = s[i] + d
        a, w = alpha[i], weights[i]
        kept[i] = w * a ** k if k > 0 else inf
        nxt[i] = w * a ** (k + 1) if k < cap else -inf

    total = sum(s)
    while True:
        g, h = min(kept), max(nxt)
        if g != inf and (total > capacity or g <= 0.0):
            move(last - kept[::-1].index(g), -1)
            total -= 1
        elif h > 0.0 and total < capacity:
            move(nxt.index(h), 1)
            total += 1
        elif h > 0.0 and g <= h:   # a kept token no better than the best next one: swap them
            worst, best = last - kept[::-1].index(g), nxt.index(h)
            if g == h and worst < best:   # a tie the kept token's client wins (the lower client first)
                return s
            move(worst, -1)
            move(best, 1)
        else:
            return s


@dataclass
class FixedS:
    """Fixed-S baseline (tran2025 IV-B, "S_i = C/N"): every client drafts the same share every round.

    C/N is rarely an integer (8 clients, C = 20), so the whole budget is used: every client gets
    ``C // N`` and the first ``C % N`` clients one more (the honest baseline, sum S_i = C). With
    ``floor=True`` every client gets ``C // N`` and ``C % N`` slots stay idle (the literal reading,
    labelled "Fixed-S ⌊C/N⌋")."""
    capacity: int
    num_clients: int
    floor: bool = False
    label: str = ""
    _clients: list[int] = field(default_factory=list, repr=False)
    _fixed: dict[int, int] = field(default_factory=dict, repr=False)
    static: ClassVar[bool] = True     # ``update`` returns ``initial``'s mapping: a caller may skip it

    def __post_init__(self):
        if self.num_clients < 1 or self.capacity < self.num_clients:
            raise ValueError(f"FixedS: need capacity >= num_clients >= 1, got C={self.capacity}, "
                             f"N={self.num_clients}")
        if not self.label:
            self.label = "Fixed-S ⌊C/N⌋" if self.floor else "Fixed-S"

    @property
    def share(self) -> int:
        return self.capacity // self.num_clients

    def _shares(self) -> dict[int, int]:
        extra = 0 if self.floor else self.capacity - self.share * self.num_clients
        return {c: self.share + (1 if k < extra else 0) for k, c in enumerate(self._clients)}

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        self._clients = list(clients)
        self._fixed = self._shares()
        return dict(self._fixed)

    def update(self, outcomes: Sequence[Outcome]) -> dict[int, int]:
        return self._fixed      # the same mapping every round (computed once: callers read it)


@dataclass
class RandomS:
    """Random-S baseline (tran2025 IV-B): each round a uniformly random composition of C into N
    non-negative parts (sum S_i = C exactly; drawn by stars and bars), from a seeded generator."""
    capacity: int
    seed: int = 0
    label: str = "Random-S"
    _clients: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self):
        self._rng = np.random.default_rng(self.seed)

    def _draw(self) -> dict[int, int]:
        n = len(self._clients)
        bars = np.sort(self._rng.choice(self.capacity + n - 1, size=n - 1, replace=False))
        parts = np.diff(np.concatenate([[-1], bars, [self.capacity + n - 1]])) - 1
        return {c: int(s) for c, s in zip(self._clients, parts)}

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        self._clients = list(clients)
        return self._draw()

    def update(self, outcomes: Sequence[Outcome]) -> dict[int, int]:
        return self._draw()

ALLOCATORS = Registry("allocator")   # S(t+1) policies by name (``serving.policies``)
PAPER_BETA = 0.5   # tran2025 Sec IV-B3's smoothing of the goodput estimate X ("With beta = 0.5, the threshold T/beta ~ 400-600")


@dataclass
class GoodspeedAllocator:
    """GOODSPEED's gradient scheduler, Algorithm 1 (tran2025 Sec III-C).

    Per verified client: eq (3) alpha_i <- (1 - eta) alpha_i + eta * (1/S_i) sum_j min(1, p_j/q_j)
    (unchanged when S_i = 0: no draft, no evidence); eq (4) X_i <- (1 - beta) X_i + beta x_i(t) with
    x_i(t) = accepted + 1. Then eq (5) with U = log: weights 1/X_i, solved exactly
    (``solvers.tran2025.allocate``). ``alpha_hat`` and ``X`` are the estimates of Fig 2.
    """
    capacity: int
    eta: float = 0.1
    beta: float = 0.1
    alpha0: float = 0.5
    x0: float = 1.0
    s_max: int | None = None
    label: str = "GOODSPEED"
    alpha_hat: dict[int, float] = field(default_factory=dict)
    X: dict[int, float] = field(default_factory=dict)
    _sorted: list[int] | None = field(default=None, init=False, repr=False, compare=False)   # clients, sorted once
    _last: list[int] | None = field(default=None, init=False, repr=False, compare=False)     # their last S (regreedy's start)

    def __post_init__(self):
        for name in ("eta", "beta"):
            v = getattr(self, name)
            if not 0 < v < 1:
                raise ValueError(f"GoodspeedAllocator: {name} must lie in (0, 1), got {v!r}")
        if not 0 <= self.alpha0 < 1 or self.x0 <= 0 or self.capacity < 0:
            raise ValueError("GoodspeedAllocator: need 0 <= alpha0 < 1, x0 > 0, capacity >= 0")

    def _solve(self) -> dict[int, int]:
        clients, alpha_hat, top = self._sorted, self.alpha_hat, 1 - 1e-9
        if clients is None or len(clients) != len(alpha_hat):
            clients = self._sorted = sorted(alpha_hat)
            self._last = None
        a = [float(top if top < x else x) for x in map(alpha_hat.__getitem__, clients)]   # min(alpha_i, top)
        w = self.gradient_weights(clients)
        last = self._last
        self._last = last = (greedy(a, w, self.capacity, self.s_max) if last is None
                             else regreedy(last, a, w, self.capacity, self.s_max))
        return dict(zip(clients, last))

    def gradient_weights(self, clients: list[int]) -> list[float]:
        """Eq (5)'s weights U'(X_i) for U = log: 1 / X_i (a subclass with another utility overrides this)."""
        return [1.0 / float(x) for x in map(self.X.__getitem__, clients)]

    def initial(self, clients: Sequence[int]) -> dict[int, int]:
        self.alpha_hat = {c: self.alpha0 for c in clients}
        self.X = {c: self.x0 for c in clients}
        self._sorted = self._last = None
        return self._solve()

    def update(self, outcomes: Sequence[Outcome]) -> dict[int, int]:
        alpha_hat, X, eta, beta = self.alpha_hat, self.X, self.eta, self.beta
        keep_a, keep_x = 1 - eta, 1 - beta
        for o in outcomes:
            c, drafted = o.client, o.drafted
            if drafted > 0:
                alpha_hat[c] = keep_a * alpha_hat[c] + eta * (o.accept_prob_sum / drafted)
            X[c] = keep_x * X[c] + beta * o.tokens
        return self._solve()


@ALLOCATORS.register("GOODSPEED", "goodspeed")
def _goodspeed(capacity: int, eta: float = GoodspeedAllocator.eta, beta: float = GoodspeedAllocator.beta):
    return GoodspeedAllocator(capacity, eta=eta, beta=beta)


@ALLOCATORS.register("Fixed-S", "fixed")
def _fixed(capacity: int, clients: int):
    return FixedS(capacity, clients)


@ALLOCATORS.register("Fixed-S ⌊C/N⌋")
def _fixed_floor(capacity: int, clients: int):
    return FixedS(capacity, clients, floor=True)


@ALLOCATORS.register("Random-S", "random")
def _random(capacity: int, seed: int = 0):
    return RandomS(capacity, seed=seed)


def by_name(name: str, capacity: int, clients: int, seed: int = 0, **goodspeed):
    """A fresh allocator named ``name`` (``ALLOCATORS``; ``serving.policies`` holds every registered name) for
    ``clients`` clients sharing ``capacity`` draft tokens per pass; ``seed`` drives Random-S, ``goodspeed``
    (eta, beta) GOODSPEED's estimators."""
    return ALLOCATORS.build(name, capacity=capacity, clients=clients, seed=seed, **goodspeed)
