"""Expected wasted drafting (li2026): Theorem 1 (App A, eqs (22)-(34))

``expected_waste(alpha, k_max, rec1, fp)`` is E[W] in closed form for a window whose per-position
conditional acceptances are ``alpha`` and a predictor that says "accept" with probability ``rec1``
on accepted tokens and ``fp`` on rejected ones (independently); ``waste_bound`` is the paper's
bound (31); ``simulate_waste`` the Monte Carlo of the same process. Lower ``fp`` => lower E[W].
"""
from __future__ import annotations

import numpy as np


# --------------------------------------------------------------------------- Theorem 1
def _alpha_vector(alpha, k_max: int) -> np.ndarray:
    if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 1:
        raise ValueError(f"k_max must be an integer >= 1, got {k_max!r}")
    a = np.broadcast_to(np.asarray(alpha, dtype=float), (k_max,)).copy()
    if ((a < 0) | (a > 1)).any():
        raise ValueError("alpha must lie in [0, 1] (per-position conditional acceptance)")
    return a


def _check_prob(x, name):
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {x}")
    return float(x)


def first_rejection_pmf(alpha, k_max: int) -> np.ndarray:
    """P(R = r) for r = 1..k_max, eq (23), when position i is accepted w.p. alpha_i given i-1 were."""
    a = _alpha_vector(alpha, k_max)
    survive = np.concatenate([[1.0], np.cumprod(a)[:-1]])
    return survive * (1 - a)


def expected_waste(alpha, k_max: int, rec1: float, fp: float, fp_after: float | None = None,
                   inclusive: bool = False) -> float:
    """E[W_θ] (eq (26)) in closed form under the stop-at-first-predicted-rejection rule.

    Position i is accepted w.p. ``alpha[i]`` given i-1 were; the predictor says "accept" (Ẑ = 1) w.p.
    ``rec1`` on an accepted token, ``fp`` on the first rejected one (FP_θ(r), eq (30)) and
    ``fp_after`` (default ``fp``) on the positions after it, independently. Exclusive rule (eq (25)):
    drafting stops before the first Ẑ = 0, so on {R = r} with Ẑ_1..Ẑ_{r-1} = 1,
    W = Ẑ_r (1 + #consecutive Ẑ = 1 after r, capped at k_max - r). ``inclusive``: the token with the
    first Ẑ = 0 is still sent (``StopAtFirstPredictedRejection(exclusive=False)``), adding one wasted
    token when Ẑ_r = 0.
    """
    pmf = first_rejection_pmf(alpha, k_max)
    rec1, fp = _check_prob(rec1, "rec1"), _check_prob(fp, "fp")
    g = fp if fp_after is None else _check_prob(fp_after, "fp_after")
    total = 0.0
    for r in range(1, k_max + 1):
        reach = rec1 ** (r - 1)  # predictor let the accepted prefix through
        tail = 1.0 + sum(g ** j for j in range(1, k_max - r + 1))
        if inclusive:
            # Ẑ_r = 0: the rejected token itself is sent; Ẑ_r = 1: W = 1 + run of Ẑ = 1 then (if a
            # Ẑ = 0 comes before k_max) one more sent token.
            run = sum(g ** j for j in range(1, k_max - r + 1))
            stop_tok = sum(g ** (j - 1) * (1 - g) for j in range(1, k_max - r + 1))
            w = (1 - fp) * 1.0 + fp * (1.0 + run + stop_tok)
        else:
            w = fp * tail
        total += pmf[r - 1] * reach * w
    return float(total)


def waste_bound(alpha, k_max: int, fp) -> float:
    """The paper's bound (31): Σ_r (k_max - r + 1) P(R = r) FP_θ(r) (``fp`` scalar or per r)."""
    pmf = first_rejection_pmf(alpha, k_max)
    fp = np.broadcast_to(np.asarray(fp, dtype=float), (k_max,))
    r = np.arange(1, k_max + 1)
    return float(((k_max - r + 1) * pmf * fp).sum())


def simulate_waste(alpha, k_max: int, rec1: float, fp: float, n: int = 100_000, seed: int = 0,
                   fp_after: float | None = None, inclusive: bool = False) -> dict[str, float]:
    """Monte Carlo of one speculate-verify iteration per sample (App A's process), vectorised.

    Returns mean wasted tokens W, its standard error, mean drafted K_θ and mean accepted
    min(K_θ, L).
    """
    a = _alpha_vector(alpha, k_max)
    rec1, fp = _check_prob(rec1, "rec1"), _check_prob(fp, "fp")
    g = fp if fp_after is None else _check_prob(fp_after, "fp_after")
    rng = np.random.default_rng(seed)
    acc = rng.random((n, k_max)) < a  # A_i, conditional on the prefix: only used up to R
    pos = np.arange(1, k_max + 1)
    first_rej = np.argmax(~acc, axis=1) + 1
    R = np.where((~acc).any(axis=1), first_rej, k_max + 1)
    L = R - 1
    u = rng.random((n, k_max))
    p_one = np.where(pos[None, :] < R[:, None], rec1, np.where(pos[None, :] == R[:, None], fp, g))
    z = u < p_one  # Ẑ_i = 1 means "predict accepted"
    first_zero = np.where((~z).any(axis=1), np.argmax(~z, axis=1) + 1, k_max + 1)
    K = first_zero - 1  # eq (25)
    if inclusive:
        K = np.minimum(first_zero, k_max)
    W = np.maximum(K - L, 0)
    return dict(waste=float(W.mean()), waste_se=float(W.std(ddof=1) / np.sqrt(n)),
                drafted=float(K.mean()), accepted=float(np.minimum(K, L).mean()))
