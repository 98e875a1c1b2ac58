"""GOODSPEED (tran2025): the per-round draft allocation of eq (5), and the optimum x* of problem (1).

- ``goodput(alpha, S)``: mu_i = (1 - alpha^(S+1)) / (1 - alpha), expected tokens of a round (Sec III-B);
  it is ``sampling.expected_tokens_per_round``.
- ``allocate(alpha, weights, capacity, s_max)``: eq (5), max sum_i w_i mu_i(S_i) s.t. sum S_i <= C,
  S_i integer >= 0. Separable and concave in each S_i (the marginal gain of the (s+1)-th token is
  w_i alpha_i^(s+1), decreasing in s), so giving the C slots one by one to the largest marginal gain is
  optimal; ties go to the lower client index. ``brute_force_allocate`` checks it on small cases.
- ``optimum(alpha, capacity)``: x* = argmax sum_i log x_i over the goodput region X (eq 2), the convex
  hull of mu(k) over all allocations k. Frank-Wolfe whose linear step is eq (5) itself with weights
  grad U(x) = 1/x; the duality gap grad U(x)^T (mu(k) - x) certifies U(x*) - U(x) <= gap.
- ``optimum_per_second(alpha, capacity, round_time)``: the same over goodput per second, where a round
  with allocation k takes ``round_time(k)`` seconds (rounds take longer when sum S or the slowest
  drafter grows): the region is the convex hull of mu(k)/T(k) under time-sharing, x = sum phi_k mu(k) /
  sum phi_k T(k); solved by Frank-Wolfe on the rounds' time shares.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..sampling import expected_tokens_per_round


def _check(alpha, capacity) -> np.ndarray:
    a = np.asarray(alpha, dtype=float).ravel()
    if a.size == 0 or np.any(~np.isfinite(a)) or np.any((a < 0) | (a >= 1)):
        raise ValueError(f"alpha: need values in [0, 1), got {alpha}")
    if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 0:
        raise ValueError(f"capacity: need an integer >= 0, got {capacity!r}")
    return a


def goodput(alpha, s) -> np.ndarray:
    """mu_i(S_i): expected tokens (accepted + 1) of a round with S_i drafts, i.i.d. acceptance."""
    return np.asarray(expected_tokens_per_round(np.asarray(alpha, float), np.asarray(s, float)), float)


def allocate(alpha: Sequence[float], weights: Sequence[float], capacity: int,
             s_max: int | None = None) -> np.ndarray:
    """Eq (5) solved exactly: greedy on marginal gains w_i alpha_i^(s+1) (concave => optimal)."""
    a = _check(alpha, capacity)
    w = np.asarray(weights, dtype=float).ravel()
    if w.shape != a.shape or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"weights: need {a.size} finite values >= 0, got {weights}")
    return np.array(greedy(a.tolist(), w.tolist(), int(capacity), s_max), dtype=int)


def greedy(alpha: list[float], weights: list[float], capacity: int, s_max: int | None = None) -> list[int]:
    """Eq (5)'s greedy on plain floats (``allocate`` without its checks: the allocator's hot path,
    whose alpha and weights are valid by construction)."""
    cap = s_max if s_max is not None else capacity
    s = [0] * len(alpha)
    heap = [(-w * a, i) for i, (a, w) in enumerate(zip(alpha, weights)) if cap > 0]
    heapq.heapify(heap)
    replace, pop = heapq.heapreplace, heapq.heappop
    for _ in range(capacity):
        if not heap:
            break
        gain, i = heap[0]
        if -gain <= 0:
            break  # no client gains from another draft token
        k = s[i] = s[i] + 1
        # the client's next token in place of this one (one entry per client: keys are unique, so the
        # order of the pops is that of pop-then-push)
        if k < cap:
            replace(heap, (-weights[i] * alpha[i] ** (k + 1), i))
        else:
            pop(heap)
    return s


def brute_force_allocate(alpha, weights, capacity: int) -> tuple[np.ndarray, float]:
    """Best allocation over every k with sum S <= C (small cases only), and its objective."""
    a = _check(alpha, capacity)
    w = np.asarray(weights, float)
    best, best_val = None, -np.inf
    for k in itertools.product(range(capacity + 1), repeat=a.size):
        if sum(k) <= capacity:
            val = float(w @ goodput(a, k))
            if val > best_val + 1e-12:
                best, best_val = np.array(k), val
    return best, best_val


@dataclass
class Optimum:
    x: np.ndarray            # x* (tokens per round, or per second)
    utility: float           # sum log x*
    gap: float               # certified bound on U(x*) - utility
    iterations: int


def _frank_wolfe(vertex: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, tol: float,
                 max_iter: int) -> Optimum:
    x = x0.astype(float)
    gap = np.inf
    for t in range(max_iter):
        g = 1.0 / x
        v = vertex(g)
        d = v - x
        gap = float(g @ d)
        if gap <= tol:
            break
        # exact line search on sum log(x + step d) over [0, 1] (concave: bisection on the derivative)
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if np.sum(d / (x + mid * d)) > 0:
                lo = mid
            else:
                hi = mid
        x = x + lo * d
    return Optimum(x, float(np.sum(np.log(x))), max(gap, 0.0), t + 1)


def optimum(alpha: Sequence[float], capacity: int, tol: float = 1e-7, max_iter: int = 20000) -> Optimum:
    """x* of problem (1) with U = sum log, over the goodput region of eq (2) (tokens per round)."""
    a = _check(alpha, capacity)
    n = a.size
    if capacity < 0:
        raise ValueError("capacity: must be >= 0")
    x0 = goodput(a, np.full(n, capacity // n))
    return _frank_wolfe(lambda g: goodput(a, allocate(a, g, capacity)), x0, tol, max_iter)


def optimum_per_second(alpha: Sequence[float], capacity: int, round_time: Callable[[np.ndarray], float],
                       tol: float = 1e-7, max_iter: int = 20000) -> Optimum:
    """x* over goodput per second: allocations time-share, a round with k lasting round_time(k) s.

    The region {sum phi_k mu(k) / sum phi_k T(k)} is the convex hull of the points mu(k)/T(k) (a
    time-share of rounds), so the linear step is max_k g^T mu(k)/T(k), found by enumerating the
    allocations (small N and C only: a ValueError says when there are too many)."""
    a = _check(alpha, capacity)
    n = a.size
    allocs = _allocations(n, capacity)
    pts = np.array([goodput(a, k) / round_time(np.array(k)) for k in allocs])
    x0 = pts[[i for i, k in enumerate(allocs) if len(set(k)) == 1 and sum(k) == n * (capacity // n)][0]]
    return _frank_wolfe(lambda g: pts[int(np.argmax(pts @ g))], x0, tol, max_iter)


def _allocations(n: int, capacity: int, limit: int = 2_000_000) -> list[tuple[int, ...]]:
    from math import comb
    count = comb(capacity + n, n)
    if count > limit:
        raise ValueError(f"capacity/num clients: {count} allocations to enumerate (limit {limit})")
    return [k for k in itertools.product(range(capacity + 1), repeat=n) if sum(k) <= capacity]


def utility(x) -> float:
    """U(x) = sum_i log x_i (proportional fairness, tran2025 Sec III-B)."""
    x = np.asarray(x, float)
    if np.any(x <= 0):
        raise ValueError("utility: goodputs must be > 0")
    return float(np.sum(np.log(x)))
