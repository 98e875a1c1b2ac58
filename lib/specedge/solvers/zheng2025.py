"""zheng2025 (TK-SLT): speedup of distributed SD and the optimal draft length.

With acceptance rate α, draft length γ and relative cost L = T_SLM/T_LLM + T_V/T_LLM (drafting plus the
uplink of one draft distribution, per LLM pass), one draft/verify round costs T_LLM·(1 + γL), eq (7),
and yields (1 − α^{γ+1})/(1 − α) tokens in expectation, eq (12). Hence the speedup over the standalone
LLM, eq (11):

    S(γ) = (1 − α^{γ+1}) / ((1 − α)(1 + γL)).

Theorem 2 gives the real-valued maximiser with the Lambert W₋₁ branch (DERIVED in
``shared/notes/recovered-formulas.md``, the extraction lost eq (21)):

    γ₀ = [W₋₁(−α^{1/L − 1}/e) + 1] / ln α − 1/L,   requires L < 1,

and Algorithm 1 (ODLD) takes γ* = 1 if γ₀ < 1, else the better of ⌊γ₀⌋ and ⌈γ₀⌉. Algorithm 2 (AS²)
falls back to the standalone LLM when S(γ*) ≤ 1 (speculation helps iff α > L).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import lambertw


def _check_alpha(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if not np.all((a > 0) & (a < 1)):
        raise ValueError(f"alpha (acceptance rate) must lie in the open interval (0, 1), got {alpha!r}")
    return a


def _check_cost(L, strict_below_one: bool) -> np.ndarray:
    c = np.asarray(L, dtype=float)
    if not np.all(np.isfinite(c) & (c >= 0)):
        raise ValueError(f"L (relative cost) must be a finite number >= 0, got {L!r}")
    if strict_below_one and not np.all(c < 1):
        raise ValueError(f"L (relative cost) must be < 1 for an optimal draft length to exist "
                         f"(Theorem 2), got {L!r}")
    return c


def speedup(gamma, alpha, L) -> np.ndarray:
    """S(γ) of eq (11); broadcasts over ``gamma``, ``alpha`` and ``L``.

    Evaluated in exactly the paper's form, so the ties α = L at γ = 1 fall on the same side of 1 as
    the paper's Table I (a float64 test S < 1).
    """
    a = _check_alpha(alpha)
    c = _check_cost(L, strict_below_one=False)
    g = np.asarray(gamma, dtype=float)
    if np.any(g < 0):
        raise ValueError(f"gamma (draft length) must be >= 0, got {gamma!r}")
    return (1 - a ** (g + 1)) / ((1 - a) * (1 + g * c))


def _lambertw_m1_of_neg_exp(t: float) -> float:
    """W₋₁(−e^t) for t ≤ −1, also where e^t underflows (α → 0 makes t very negative).

    For t < −700 the fixed point w = t − ln(−w) of w·e^w = −e^t converges in a few steps.
    """
    if t > -700:
        return float(lambertw(-math.exp(t), k=-1).real)
    w = t - math.log(-t)
    for _ in range(50):
        w_next = t - math.log(-w)
        if abs(w_next - w) <= 1e-15 * abs(w):
            break
        w = w_next
    return w_next


def gamma_real(alpha: float, L: float) -> float:
    """Real-valued optimum γ₀ of eq (21) (DERIVED form), the root of α^{γ+1}[1 − (γ + 1/L) ln α] = 1."""
    a = float(_check_alpha(alpha))
    c = float(_check_cost(L, strict_below_one=True))
    if c == 0:
        return math.inf     # free drafting and uplink: longer drafts never cost anything
    ln_a = math.log(a)
    t = (1 / c - 1) * ln_a - 1          # ln of the magnitude of the argument −α^{1/L−1}/e
    w = _lambertw_m1_of_neg_exp(min(t, -1.0))
    return (w + 1) / ln_a - 1 / c


@dataclass(frozen=True)
class DraftLength:
    gamma: int          # γ* of Algorithm 1 (≥ 1)
    speedup: float      # S(γ*)
    gamma_real: float   # γ₀ before rounding
    speculate: bool     # Algorithm 2: use distributed SD (True) or the standalone LLM (False)


def odld(alpha: float, L: float) -> DraftLength:
    """Algorithm 1 (ODLD) with the decision of Algorithm 2 (AS²) attached.

    γ* = 1 if γ₀ < 1; otherwise whichever of ⌊γ₀⌋, ⌈γ₀⌉ has the larger S (the floor on ties).
    ``speculate`` is AS²'s test S(γ*) > 1.
    """
    g0 = gamma_real(alpha, L)
    if not math.isfinite(g0):
        raise ValueError(f"L (relative cost) = {L!r} gives an unbounded draft length; use L > 0")
    if g0 < 1:
        best = 1
    else:
        lo, hi = math.floor(g0), math.ceil(g0)
        best = lo if speedup(lo, alpha, L) >= speedup(hi, alpha, L) else hi
    s = float(speedup(best, alpha, L))
    return DraftLength(gamma=best, speedup=s, gamma_real=g0, speculate=s > 1)


def as2(alpha: float, L: float) -> int:
    """Algorithm 2 (AS²): the draft length to use, 0 meaning 'standalone LLM' (S* ≤ 1)."""
    d = odld(alpha, L)
    return d.gamma if d.speculate else 0


def brute_force(alpha: float, L: float, gamma_max: int | None = None) -> DraftLength:
    """Exhaustive maximisation of S(γ) over γ = 1..gamma_max (the reference for Algorithm 1)."""
    g0 = gamma_real(alpha, L)
    if gamma_max is None:
        gamma_max = int(max(64, 4 * math.ceil(g0) + 16))
    if gamma_max < 1:
        raise ValueError(f"gamma_max must be >= 1, got {gamma_max}")
    g = np.arange(1, gamma_max + 1)
    s = speedup(g, alpha, L)
    i = int(np.argmax(s))      # first maximum: the smaller γ on ties, like odld
    return DraftLength(gamma=int(g[i]), speedup=float(s[i]), gamma_real=g0, speculate=bool(s[i] > 1))


def relative_cost(topk, slm_over_llm: float, uplink_full_over_llm: float, vocab_size: int) -> np.ndarray:
    """L(K) = T_SLM/T_LLM + (K/|V|)·T_V,full/T_LLM: eqs (2), (3), (6) with a top-K payload of K FP16 values."""
    k = np.asarray(topk, dtype=float)
    if np.any((k < 1) | (k > vocab_size)):
        raise ValueError(f"topk must lie in 1..vocab_size={vocab_size}, got {topk!r}")
    return slm_over_llm + uplink_full_over_llm * k / vocab_size


def table1(alphas=(0.4, 0.6, 0.8), costs=(0.01, 0.1, 0.2, 0.4, 0.6)) -> "pd.DataFrame":
    """Table I: γ* by Algorithm 1 for each (α, L), '–' where the standalone LLM is faster (S* < 1)."""
    import pandas as pd
    rows = []
    for a in alphas:
        for c in costs:
            d = odld(a, c)
            rows.append(dict(alpha=a, L=c, gamma_real=d.gamma_real, gamma_star=d.gamma,
                             speedup=d.speedup, cell=str(d.gamma) if d.speedup >= 1 else "–"))
    return pd.DataFrame(rows)
