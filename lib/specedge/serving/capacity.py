"""System capacity (li2026 eq 20): Cap(tau) = max{N : Pr[token speed < tau] <= epsilon}, by bisection.

``bisect(f, lo, hi, epsilon)`` takes ``f(N) -> (violations, trials)`` (e.g. responses slower than their
class, out of all responses decided in a run with N devices) and assumes the violation rate grows with
N, as eq (20)'s definition does; it needs O(log(hi - lo)) evaluations of ``f``. A point with no trials
counts as violating (nothing was served in time to judge). If even ``lo`` violates, the capacity is
``lo - 1``; if ``hi`` does not, it is ``hi`` and ``saturated`` says the search bound was the limit: the
capacity is censored, a lower bound ("at least hi"), never a value to compare as if it were measured.

``guess``: a first upper bracket (e.g. the N at which the server's throughput cannot serve every device
its class speed), tried before ``hi``: if it violates, the search bisects below it and never runs the
(expensive) points near ``hi``; if it does not, the bracket doubles until a point violates or ``hi`` is
reached. The answer is the same as without it whenever the violation rate grows with N.

``wilson(k, n)`` is the Wilson score interval of a violation rate (scipy's binomial test gives the
same interval as ``proportion_ci(method="wilson")``).
"""
from __future__ import annotations

from typing import Callable

from scipy import stats


def rate(violations: int, trials: int) -> float:
    return violations / trials if trials > 0 else 1.0


def bisect(f: Callable[[int], tuple[int, int]], lo: int, hi: int, epsilon: float, *,
           guess: int | None = None, return_info: bool = False):
    """The largest N in [lo, hi] with rate(f(N)) <= epsilon (lo - 1 if none)."""
    if not (isinstance(lo, int) and isinstance(hi, int)) or lo < 1 or hi < lo:
        raise ValueError(f"lo, hi: need integers 1 <= lo <= hi, got lo={lo!r}, hi={hi!r}")
    if guess is not None and (not isinstance(guess, int) or guess < 1):
        raise ValueError(f"guess: need a positive integer or None, got {guess!r}")
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon: must lie in [0, 1), got {epsilon!r}")
    seen: dict[int, float] = {}

    def ok(n: int) -> bool:
        if n not in seen:
            seen[n] = rate(*f(n))
        return seen[n] <= epsilon

    good, bad = lo, hi
    if guess is not None and ok(lo):
        bad = min(max(guess, lo), hi)
        while ok(bad) and bad < hi:        # the guess was no bracket: widen it
            good, bad = bad, min(2 * bad, hi)
    if not ok(lo):
        cap, saturated = lo - 1, False
    elif ok(bad):                          # bad == hi here
        cap, saturated = hi, True
    else:
        # ok(good), not ok(bad)
        while bad - good > 1:
            mid = (good + bad) // 2
            if ok(mid):
                good = mid
            else:
                bad = mid
        cap, saturated = good, False
    if return_info:
        return cap, dict(saturated=saturated, evaluated=dict(sorted(seen.items())))
    return cap


def wilson(violations: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of violations / trials."""
    if trials < 1 or not 0 <= violations <= trials:
        raise ValueError(f"need 0 <= violations <= trials and trials >= 1, got {violations}/{trials}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: must lie in (0, 1), got {confidence!r}")
    ci = stats.binomtest(int(violations), int(trials)).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)

