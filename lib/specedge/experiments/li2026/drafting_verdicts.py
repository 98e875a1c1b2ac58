"""Verdicts on WISP's drafting-side claims (li2026): the rule and the threshold that decide each one.

The notebook words each claim and its note; what decides it lives here, one function per claim:

=====================================================  ================================  ==========================
claim                                                  function                          rule
=====================================================  ================================  ==========================
Fig 3: each statistic correlates with acceptance in    ``pearson_direction``             signed r > 0.05
the direction of Sec 3.3
Fig 2: acceptance is monotone over the deciles of      ``decile_spearman``,              signed Spearman rho > 0.6
each statistic                                         ``monotone_over_deciles``
Table 4: the MLP has the lowest FPR                    ``lowest_fpr``                    strictly lowest; ``match``
                                                                                         if it leads by >= 0.05
Table 4 over split seeds: the MLP has the lowest FPR   ``lowest_fpr_over_seeds``         every paired difference's
                                                                                         95 % t-interval above 0
Table 5: the predictor raises acceptance / cuts        ``raises_acceptance``,            every draft
waste for every draft                                  ``cuts_waste``
Table 5: the largest gain is for the smallest draft;   ``largest_gain_for_smallest``,    argmax by > 2 pp (gains at
gains shrink with draft size                           ``gains_shrink_with_size``        0.01 %); strictly falling
Theorem 1: E[W] non-decreasing in FP, below eq (31)    ``waste_nondecreasing_in_fp``,    every curve / every point
                                                       ``waste_within_bound``
Theorem 1: lower FPR, less waste (closed form, live)   ``waste_rises_with_fpr``          strictly increasing in
                                                                                         FPR order
=====================================================  ================================  ==========================

``falls_short`` lists the temperatures at which a relation is weak or not monotone (for the notes),
``drafts_in_fpr_order`` counts the drafts that keep the FPR order on their own, ``mc_deviation`` is the
largest Monte Carlo deviation from the closed form in standard errors. A verdict returns a
``claims.Claim``: NaN, empty or too short evidence fails it.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from ... import claims
from ...claims import Claim
from ...predictor.waste import by_fpr

SIGNS = dict(max_prob=+1, margin=+1, entropy=-1, logit_std=-1)  # Sec 3.3's stated directions
MIN_PEARSON = 0.05    # Fig 3: below this |r| there is no linear relation worth the name
WEAK_PEARSON = 0.1    # Fig 3's notes: a relation weaker than this at one temperature is called weak
MIN_SPEARMAN = 0.6    # Fig 2: most pairs of deciles ordered the paper's way
FPR_MARGIN = 0.05     # Table 4: the paper's claim is a ~2x gap; a lead under 0.05 in FPR is only a trend
GAIN_MARGIN = 2.0     # Table 5: percentage points, half the paper's own lead (54.0 vs 50.0 %): a smaller lead is a tie


def sign_of(statistic: str) -> int:
    """+1 or -1: the direction in which Sec 3.3 says ``statistic`` moves with acceptance."""
    if statistic not in SIGNS:
        raise ValueError(f"statistic must be one of {sorted(SIGNS)}, got {statistic!r}")
    return SIGNS[statistic]


# --------------------------------------------------------------------------- Figs 2-3
def pearson_direction(r: float, statistic: str, min_r: float = MIN_PEARSON) -> Claim:
    """Fig 3: Pearson r of ``statistic`` with acceptance, signed by the paper's direction, above ``min_r``."""
    return claims.above(sign_of(statistic) * r, min_r)


def decile_spearman(binned: pd.DataFrame, statistic: str) -> dict[str, float]:
    """Spearman rho of acceptance over the bins of ``statistic`` (``dataset.binned_acceptance`` rows with a
    ``temperature`` column), per temperature label, in sorted label order."""
    need = {"statistic", "value", "acceptance", "temperature"}
    if not need <= set(binned.columns):
        raise ValueError(f"binned needs columns {sorted(need)}, got {list(binned.columns)}")
    rows = binned[binned.statistic == statistic]
    return {t: float(b[["value", "acceptance"]].corr("spearman").iloc[0, 1]) for t, b in rows.groupby("temperature")}


def monotone_over_deciles(rho: float, statistic: str, min_rho: float = MIN_SPEARMAN) -> Claim:
    """Fig 2's "strong, consistent monotonic relationship": Spearman rho over the deciles, signed by the
    paper's direction, above ``min_rho``."""
    return claims.above(sign_of(statistic) * rho, min_rho)


def falls_short(values: Mapping[str, float], statistic: str, threshold: float) -> list[str]:
    """Labels whose value, signed by the paper's direction for ``statistic``, is not at least ``threshold``
    (weak, reversed or NaN)."""
    sign = sign_of(statistic)
    return [k for k, v in values.items() if not sign * v >= threshold]


# --------------------------------------------------------------------------- Table 4
class LowestFpr(NamedTuple):
    claim: Claim      # ``expected`` has the strictly lowest FPR
    strength: str     # "match" when it leads by at least the margin, else "trend"
    lead: float       # lowest FPR of the others minus ``expected``'s (negative when another is lower)


def lowest_fpr_over_seeds(fpr: Mapping[str, Sequence[float]], expected: str) -> Claim:
    """Table 4 over split seeds: ``expected``'s FPR below every other family's, paired by seed (the other's FPR
    minus ``expected``'s has a 95 % t-interval above 0; ``claims.interval_argmax_is`` on -FPR). A tie fails."""
    if expected not in fpr or len(fpr) < 2:
        raise ValueError(f"fpr needs {expected!r} and at least one other predictor, got {sorted(fpr)}")
    return claims.interval_argmax_is({k: -np.asarray(v, dtype=float) for k, v in fpr.items()}, expected)


def lowest_fpr(fpr: Mapping[str, float], expected: str, margin: float = FPR_MARGIN) -> LowestFpr:
    """Table 4 "the MLP has the lowest FPR": the claim, and how strongly a lead counts."""
    if expected not in fpr or len(fpr) < 2:
        raise ValueError(f"fpr needs {expected!r} and at least one other predictor, got {sorted(fpr)}")
    lead = float(min(v for k, v in fpr.items() if k != expected) - fpr[expected])
    return LowestFpr(claims.argmin_is(dict(fpr), expected), "match" if lead >= margin else "trend", lead)


# --------------------------------------------------------------------------- Table 5
def _table5(table5: pd.DataFrame, *cols: str) -> pd.DataFrame:
    if not set(cols) <= set(table5.columns):
        raise ValueError(f"table5 needs columns {list(cols)}, got {list(table5.columns)}")
    return table5


def raises_acceptance(table5: pd.DataFrame) -> Claim:
    """Table 5: acceptance with the predictor (ON) strictly above the fixed window (OFF), for every draft."""
    t = _table5(table5, "ON", "OFF")
    return claims.all_of({d: r.ON > r.OFF for d, r in t.iterrows()})


def cuts_waste(table5: pd.DataFrame) -> Claim:
    """Table 5: wasted draft tokens per round strictly fewer with the predictor, for every draft."""
    t = _table5(table5, "wasted_per_round_ON", "wasted_per_round_OFF")
    return claims.all_of({d: r.wasted_per_round_ON < r.wasted_per_round_OFF for d, r in t.iterrows()})


def largest_gain_for_smallest(table5: pd.DataFrame, margin: float | None = None) -> Claim:
    """Table 5: the first row (the smallest draft) has the largest relative gain, ahead of the next by
    more than ``margin`` percentage points (``GAIN_MARGIN``, half the paper's own lead, makes it a claim
    that can fail; None: any lead); gains are compared at 0.01 % (their printed precision), so closer ones tie."""
    t = _table5(table5, "improvement_pct")
    if t.empty:
        return Claim("argmax_is", False, "rejected: empty", margin)
    return claims.argmax_is(t.improvement_pct.round(2).to_dict(), t.index[0], margin=margin)


def gains_shrink_with_size(table5: pd.DataFrame) -> Claim:
    """Table 5: relative gains strictly falling down the rows (drafts smallest first)."""
    return claims.strictly_decreasing(_table5(table5, "improvement_pct").improvement_pct.to_numpy())


# --------------------------------------------------------------------------- Theorem 1
def waste_nondecreasing_in_fp(curves: pd.DataFrame, columns: Sequence[str] = ("closed_form", "closed_form_inclusive")
                              ) -> Claim:
    """Theorem 1: each E[W] curve (one per Rec1 and column of ``columns``) never falls as FP grows; a curve
    of fewer than two points fails."""
    flags = {}
    for r1, g in curves.groupby("rec1"):
        g = g.sort_values("fp", kind="stable")
        for c in columns:
            flags[f"Rec1={r1}, {c}"] = bool(len(g) >= 2 and (np.diff(g[c].to_numpy()) >= 0).all())
    return claims.all_of(flags)


def waste_within_bound(curves: pd.DataFrame, atol: float = 1e-12) -> Claim:
    """Theorem 1: the closed-form E[W] at most the bound eq (31) at every (Rec1, FP) point."""
    return claims.all_of({f"Rec1={r.rec1}, FP={r.fp:.1f}": bool(r.closed_form <= r.bound_eq31 + atol)
                          for r in curves.itertuples()})


def mc_deviation(curves: pd.DataFrame) -> float:
    """Largest |Monte Carlo - closed form| over the curves, in Monte Carlo standard errors."""
    z = np.abs(curves.monte_carlo - curves.closed_form) / np.maximum(curves.mc_se, 1e-12)
    return float(z.max())


def waste_rises_with_fpr(frame: pd.DataFrame, waste: str, fpr: str = "FPR") -> Claim:
    """Theorem 1 across predictors: ``waste`` strictly increasing in FPR order (rows without an FPR dropped)."""
    return claims.strictly_increasing(by_fpr(frame, fpr)[waste])


def drafts_in_fpr_order(per_draft: pd.DataFrame, order: Sequence[str]) -> int:
    """How many drafts (rows: draft, columns: predictor) have waste non-decreasing along ``order`` (the
    predictors by FPR); a NaN breaks the order."""
    missing = [p for p in order if p not in per_draft.columns]
    if missing:
        raise ValueError(f"per_draft has no column for {missing}")
    return int(sum(per_draft.loc[d, list(order)].is_monotonic_increasing for d in per_draft.index))
