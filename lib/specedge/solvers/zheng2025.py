"""zheng2025 (TK-SLT): speedup of distributed SD and the optimal draft length.

With acceptance rate α, draft length γ and relative cost L = T_SLM/T_LLM + T_V/T_LLM (drafting plus the
uplink of one draft distribution, per LLM pass), one draft/verify round costs T_LLM·(1 + γL), eq (7),
and yields (1 − α^{γ+1})/(1 − α) tokens in expectation, eq (12). Hence the speedup over the standalone
LLM, eq (11):

    S(γ) = (1 − α^{γ+1}) / ((1 − α)(1 + γL)).

Theorem 2 gives the real-valued maximiser with the Lambert W₋₁ branch (eq (21), DERIVED here: its
printed form is not legible):

    γ₀ = [W₋₁(−α^{1/L − 1}/e) + 1] / ln α − 1/L,   requires L < 1,

and Algorithm 1 (ODLD) takes γ* = 1 if γ₀ < 1, else the better of ⌊γ₀⌋ and ⌈γ₀⌉. Algorithm 2 (AS²)
falls back to the standalone LLM when S(γ*) ≤ 1 (speculation helps iff α > L).

Pure functions, no I/O: the logits ``topk_alpha`` reads, the profiles behind ``Costs`` and AS² inside a live
decoding loop come from the paper's experiments (``experiments.zheng2025.figures``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import lambertw

if TYPE_CHECKING:
    import pandas as pd


_SCALARS = (int, float, np.integer, np.floating)


def _check_alpha(alpha, allow_zero: bool = False) -> np.ndarray:
    # a number is checked without building an array (AS² runs this every round of every device in the
    # serving twin); either way the value returned is float64, so the formulas below compute alike
    if isinstance(alpha, _SCALARS):
        a = np.float64(alpha)
        ok = ((a >= 0) if allow_zero else (a > 0)) and a < 1
    else:
        a = np.asarray(alpha, dtype=float)
        ok = np.all(((a >= 0) if allow_zero else (a > 0)) & (a < 1))
    if not ok:
        where = "[0, 1)" if allow_zero else "the open interval (0, 1)"
        raise ValueError(f"alpha (acceptance rate) must lie in {where}, got {alpha!r}")
    return a


def _check_cost(L, strict_below_one: bool) -> np.ndarray:
    if isinstance(L, _SCALARS):
        c = np.float64(L)
        ok, below = math.isfinite(c) and c >= 0, c < 1
    else:
        c = np.asarray(L, dtype=float)
        ok, below = np.all(np.isfinite(c) & (c >= 0)), np.all(c < 1)
    if not ok:
        raise ValueError(f"L (relative cost) must be a finite number >= 0, got {L!r}")
    if strict_below_one and not below:
        raise ValueError(f"L (relative cost) must be < 1 for an optimal draft length to exist "
                         f"(Theorem 2), got {L!r}")
    return c


def speedup(gamma, alpha, L) -> np.ndarray:
    """S(γ) of eq (11); broadcasts over ``gamma``, ``alpha`` and ``L``.

    Evaluated in exactly the paper's form, so the ties α = L at γ = 1 fall on the same side of 1 as
    the paper's Table I (a float64 test S < 1).
    """
    a = _check_alpha(alpha, allow_zero=True)      # alpha = 0: S = 1 / (1 + gamma L)
    c = _check_cost(L, strict_below_one=False)
    g = np.float64(gamma) if isinstance(gamma, _SCALARS) else np.asarray(gamma, dtype=float)
    if (g < 0) if g.ndim == 0 else np.any(g < 0):
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
    ``speculate`` is AS²'s test S(γ*) > 1. α = 0 (a draft that never agrees, e.g. an untrained
    pair): S(γ) = 1/(1 + γL) falls with γ, so γ* = 1 and AS² does not speculate.
    """
    if float(_check_alpha(alpha, allow_zero=True)) == 0:
        _check_cost(L, strict_below_one=True)
        return DraftLength(gamma=1, speedup=float(speedup(1, 0.0, L)), gamma_real=0.0, speculate=False)
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


def running_alpha(accepted: float, reached: float, alpha0: float, prior_tokens: float = 8.0) -> float:
    """AS²'s running i.i.d. estimate of eq (12): accepted / positions reached (a round reaches min(accepted + 1,
    drafted) positions), shrunk towards ``alpha0`` with the weight of ``prior_tokens`` positions, kept in (0, 1)."""
    a_hat = (accepted + prior_tokens * alpha0) / (reached + prior_tokens)
    return min(max(a_hat, 1e-6), 1 - 1e-6)


def as2_policy(alpha0: float, L: float, prior_tokens: float = 8.0):
    """AS² as a per-round draft-length policy for ``decoding`` (``gamma=``): each round's γ is
    ``as2(α̂, L)`` with α̂ = ``running_alpha`` over the row's rounds so far."""
    _check_alpha(alpha0)
    _check_cost(L, strict_below_one=True)

    def policy(row, rounds) -> int:
        acc = sum(r.accepted for r in rounds)
        reached = sum(min(r.accepted + 1, r.drafted) for r in rounds)
        return as2(running_alpha(acc, reached, alpha0, prior_tokens), L)

    return policy


def measured_cost(topk, t_slm: float, t_llm: float, rate_bps: float, bits_per_probability: int = 16) -> np.ndarray:
    """L(K) from measured pass times and an uplink rate: T_SLM/T_LLM + (time to send K probabilities)/T_LLM
    (eqs (2), (3), (6) with this machine's numbers; ``relative_cost`` is the same with the paper's ratios)."""
    if not (t_slm >= 0 and t_llm > 0):
        raise ValueError(f"pass times must be t_slm >= 0 and t_llm > 0 s, got {t_slm!r}, {t_llm!r}")
    return t_slm / t_llm + uplink_time(topk, rate_bps, bits_per_probability) / t_llm


def brute_force(alpha: float, L: float, gamma_max: int | None = None) -> DraftLength:
    """Exhaustive maximisation of S(γ) over γ = 1..gamma_max (the reference for Algorithm 1)."""
    g0 = gamma_real(alpha, L) if float(_check_alpha(alpha, allow_zero=True)) > 0 else 0.0
    if gamma_max is None:
        gamma_max = int(max(64, 4 * math.ceil(g0) + 16))
    if gamma_max < 1:
        raise ValueError(f"gamma_max must be >= 1, got {gamma_max}")
    g = np.arange(1, gamma_max + 1)
    s = speedup(g, alpha, L)
    i = int(np.argmax(s))      # first maximum: the smaller γ on ties, like odld
    return DraftLength(gamma=int(g[i]), speedup=float(s[i]), gamma_real=g0, speculate=bool(s[i] > 1))


def alpha_interval(gamma: int, L: float, tol: float = 1e-9) -> tuple[float, float]:
    """The acceptance rates α for which Algorithm 1 on cost ``L`` gives γ* = ``gamma`` with speculation paying
    (S* ≥ 1, not Table II's '–'): the interval [lo, hi), found by bisection (γ* grows with α at a fixed L).

    Reads Table II backwards: a printed γ* at a known L(K) bounds the α the paper must have measured.
    """
    if isinstance(gamma, bool) or int(gamma) != gamma or gamma < 1:
        raise ValueError(f"gamma (draft length) must be an integer >= 1, got {gamma!r}")
    _check_cost(L, strict_below_one=True)

    def first_alpha(g: int) -> float:          # the smallest α with γ* >= g and S* >= 1
        lo, hi = 1e-12, 1 - 1e-12
        if not (odld(hi, L).gamma >= g and odld(hi, L).speedup >= 1):
            return 1.0
        while hi - lo > tol:
            mid = (lo + hi) / 2
            d = odld(mid, L)
            lo, hi = (lo, mid) if d.gamma >= g and d.speedup >= 1 else (mid, hi)
        return hi

    return first_alpha(int(gamma)), first_alpha(int(gamma) + 1)


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


# --------------------------------------------------------------------------------------------------
# Measured part (Fig 3, Table II, Fig 4): acceptance under top-K drafts and the relative cost L(K).

def topk_alpha(q_logits, p_logits, ks, temperatures=(0.0, 1.0), draft_temperature: float = 1.0) -> "pd.DataFrame":
    """α(K) of eq (9) from the draft's and the target's logits at the same positions (lists of (n_i, V)).

    One row per (T, K): the mean over every position of Σ_x min(p_T(x), q_K(x)); K ≥ V is the full
    distribution.
    """
    import pandas as pd

    from .. import sampling
    vocab = int(p_logits[0].shape[-1])
    ks = [int(k) for k in ks]
    for k in ks:
        sampling.check_top_k(k, vocab)
    sums = {(t, k): 0.0 for t in temperatures for k in ks}
    n = 0
    for dl, tl in zip(q_logits, p_logits):
        n += dl.shape[0]
        p = {t: sampling.probs(tl, t) for t in temperatures}     # the target's side does not depend on K
        for k in ks:
            q = sampling.probs(dl, draft_temperature, None if k >= vocab else k)
            for t in temperatures:
                sums[(t, k)] += float(sampling.acceptance_probability(p[t], q).sum())
    return pd.DataFrame([dict(temperature=t, K=k, alpha=s / n, positions=n) for (t, k), s in sums.items()])


def uplink_time(topk, rate_bps: float, bits_per_probability: int = 16) -> np.ndarray:
    """T_V of eqs (2)-(3) for one draft distribution of K probabilities (token indices neglected)."""
    if not rate_bps > 0:
        raise ValueError(f"rate_bps must be > 0, got {rate_bps!r}")
    return np.asarray(topk, dtype=float) * bits_per_probability / rate_bps


def payload_bits(topk, vocab_size: int, value_bits: int = 16, index_bits: int = 0) -> np.ndarray:
    """D_V of eq (2): K values of ``value_bits`` each (the paper's FP16: 16), plus ``index_bits`` per value for
    a top-K payload (the paper neglects the indices, Sec II-B: "the index size is insignificant"; K = |V| is the
    dense distribution, which sends none)."""
    k = np.asarray(topk, dtype=float)
    if np.any((k < 1) | (k > vocab_size)):
        raise ValueError(f"topk must lie in 1..vocab_size={vocab_size}, got {topk!r}")
    if value_bits < 1 or index_bits < 0:
        raise ValueError(f"value_bits must be >= 1 and index_bits >= 0, got {value_bits!r}, {index_bits!r}")
    return k * value_bits + np.where(k < vocab_size, k * index_bits, 0)


# --------------------------------------------------------------------------- scenarios of the notebook (Table II, Figs 2, 4, Algorithm 2)
PAPER_VOCAB = 32000   # Sec VI-B: "The vocabulary size is configured as 32K"
PAPER_K = (3, 32, 320, 3200, 32000)     # Table II's columns (statement ids table2-*-K<k>)


@dataclass(frozen=True)
class Costs:
    """Table II's two cost scenarios for L(K) (eqs 2, 3, 6): T_SLM, T_LLM measured here with an assumed
    uplink rate (``measured``), and the paper's relative costs on its 32000-entry vocabulary (``paper``)."""
    t_slm: float
    t_llm: float
    rate_bps: float
    slm_over_llm: float
    uplink_full_over_llm: float

    def measured(self, k) -> float:
        return float(measured_cost(k, self.t_slm, self.t_llm, self.rate_bps))

    def paper(self, k_paper) -> float:
        return float(relative_cost(k_paper, self.slm_over_llm, self.uplink_full_over_llm, PAPER_VOCAB))

    def summary(self, vocab: int) -> str:
        return (f"T_SLM/T_LLM measured here: {self.t_slm / self.t_llm:.3f} (paper {self.slm_over_llm:g}); uplink of the full "
                f"|V|={vocab} FP16 distribution at {self.rate_bps / 1e6:g} Mbit/s: "
                f"{float(uplink_time(vocab, self.rate_bps)) / self.t_llm:.3f} T_LLM (paper {self.uplink_full_over_llm:g})")


def gamma_cell(a: float, L: float) -> str:
    """Table II's γ* cell: Algorithm 1 on (α, L), '–' where S* < 1 (AS² falls back to the target alone)."""
    if L >= 1 or not 0 < a < 1:   # no gain possible (alpha = 0: the draft never agrees), or alpha = 1
        return "–"
    d = odld(a, L)
    return str(d.gamma) if d.speedup >= 1 else "–"


def fig2_frame(alphas=(0.4, 0.6, 0.8), costs=(0.01, 0.1, 0.2), gammas=range(1, 21)) -> "pd.DataFrame":
    """S(γ) of eq (11) over the grid (the extraction lost the figure's exact grid: Table I's α, three of its L)."""
    import pandas as pd

    return pd.DataFrame([dict(gamma=g, alpha=a, L=c, speedup=float(speedup(g, a, c)))
                         for a in alphas for c in costs for g in np.asarray(gammas)])


def as2_map(alphas, costs) -> "pd.DataFrame":
    """Algorithm 2's choice (γ, 0 = the standalone LLM) and S* over (α, L); checks that it speculates exactly
    where α > L (off the ties α = L, where S* = 1 up to rounding)."""
    import pandas as pd

    m = pd.DataFrame([dict(alpha=a, L=c, gamma=as2(a, c), speedup=odld(a, c).speedup) for a in alphas for c in costs])
    wrong = ((m.gamma > 0) != (m.alpha > m.L)) & ~np.isclose(m.alpha, m.L)
    if wrong.any():
        raise RuntimeError(f"AS² must speculate exactly where alpha > L; it does not at\n{m[wrong]}")
    return m


def best_speedup(a: float, L: float) -> float:
    """S* of eq (11): S(γ*) of Algorithm 1 (S(1) where that is larger; 1/(1 + L) stands for L >= 1, where no γ helps)."""
    best = odld(a, L).speedup if L < 1 else 1.0 / (1 + L)
    return max(best, float(speedup(1, a, L)))


def fig4_frame(alpha: "pd.DataFrame", costs_of) -> "pd.DataFrame":
    """S* (``best_speedup``) per cost scenario (``costs_of``: scenario -> L(K) function), temperature, K and, where
    ``alpha`` (``topk_acceptance`` rows) has one, domain."""
    import pandas as pd

    keys = [c for c in ("domain", "temperature", "K") if c in alpha]
    return pd.DataFrame([dict(scenario=scen, **{k: getattr(r, k) for k in keys}, alpha=r.alpha, L=L_of(r.K),
                              speedup=best_speedup(r.alpha, L_of(r.K)))
                         for scen, L_of in costs_of.items() for r in alpha.itertuples()])
