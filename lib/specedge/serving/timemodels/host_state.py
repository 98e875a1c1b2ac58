"""The serving host's state: one slowness behind every time measured on it, fitted on real runs and drawn in the twin.

In the real runs the times measured on the host move together even where nothing competes: in the runs of one
client a drafting's CPU over its line, the gap, the uplink, the reply's way and the pass over eq (19) correlate
within a round, and two of them taken tens of milliseconds apart still do (docs/twin-validation.md, "One state of the
host behind every time on it"). The twin draws each of them independently; here they share one state z(t):

- z(t) is a sum of independent Ornstein-Uhlenbeck processes of unit variance with the fixed correlation times
  ``TIMES_S`` (not fitted: a grid from 10 ms to 3 s, and one value per run), weighted by ``State.weights``;
- a value of kind a (its measured values ``v``) is drawn at its quantile Phi(lam_a z(now) + e) of ``v``, e normal
  noise making the sum's variance 1: a Gaussian copula, each kind's distribution the measured one (``Coupled``);
- ``fit``: each kind's values as normal scores (mid-ranks over the fitted runs), the mean product of two *different*
  kinds' scores per interval of time apart (``cross_products``; one kind with itself is left out: a drafting's time
  follows its own prompt), and the loadings and weights by least squares of lam_a lam_b x ``correlation(dt)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from scipy.stats import norm

# The state's correlation times (s): its parts decay over 10 ms to 3 s, and one part is the run's level (inf)
TIMES_S = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, np.inf)

# The intervals of time apart (s) over which two kinds' scores are averaged; pairs further apart are not used
EDGES_S = (0.0, 0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)

# Intervals averaging fewer pairs are left out of the fit
MIN_PAIRS = 100


@dataclass(frozen=True)
class State:
    """The fitted state: each kind's loading (0-1) and the weight of each part of ``TIMES_S`` (summing to 1, or all 0:
    no state)."""
    loadings: dict
    weights: np.ndarray

    def within(self) -> "State":
        """The state within one run: its run level (the part of infinite time) left out, the rest as fitted (its
        variance the within-run share, not scaled up to 1)."""
        return State(self.loadings, np.where(np.isinf(TIMES_S), 0.0, self.weights))


NONE = State({}, np.zeros(len(TIMES_S)))


def correlation(dt, weights) -> np.ndarray:
    """The state's correlation between two times ``dt`` seconds apart: sum_k w_k exp(-dt / tau_k) over ``TIMES_S``."""
    dt = np.abs(np.asarray(dt, float))
    return np.exp(-np.outer(dt, 1.0 / np.asarray(TIMES_S))) @ np.asarray(weights, float)


def scores(values, kind) -> np.ndarray:
    """Each value's normal score among the values of its kind: Phi^-1 of its mid-rank / (n + 1)."""
    values, kind = np.asarray(values, float), np.asarray(kind)
    out = np.full(len(values), np.nan)
    for k in np.unique(kind):
        idx = np.flatnonzero(kind == k)
        ranks = pd.Series(values[idx]).rank(method="average").to_numpy()
        out[idx] = norm.ppf(ranks / (len(idx) + 1))
    return out


def cross_products(t, kind, z, run, edges=EDGES_S) -> pd.DataFrame:
    """Per pair of different kinds (a < b) and interval [lo, hi) of ``edges`` of time apart (either order), over the
    runs: the sum of the products of their scores ``z``, the pairs' count and the sum of their times apart (columns a,
    b, lo, s, n, st), from sorted cumulative sums (no pair listed)."""
    t, kind, z, run = np.asarray(t, float), np.asarray(kind), np.asarray(z, float), np.asarray(run)
    kinds = sorted(np.unique(kind).tolist())
    edges = np.asarray(edges, float)
    acc: dict = {}
    for r in np.unique(run):
        per = {}
        for k in kinds:
            m = (run == r) & (kind == k)
            o = np.argsort(t[m], kind="stable")
            per[k] = (t[m][o], z[m][o])
        for i, a in enumerate(kinds):
            ta, za = per[a]
            for b in kinds[i + 1:]:
                tb, zb = per[b]
                if not len(ta) or not len(tb):
                    continue
                cz, ct = np.concatenate(([0.0], np.cumsum(zb))), np.concatenate(([0.0], np.cumsum(tb)))
                for lo, hi in zip(edges[:-1], edges[1:]):
                    after = np.searchsorted(tb, ta + lo, "left"), np.searchsorted(tb, ta + hi, "left")
                    before = (np.searchsorted(tb, ta - hi, "right"),
                              np.searchsorted(tb, ta - lo, "right") if lo > 0 else np.searchsorted(tb, ta, "left"))
                    s = n = st = 0.0
                    for sign, (i0, i1) in ((1.0, after), (-1.0, before)):
                        c = i1 - i0
                        s += float(np.sum(za * (cz[i1] - cz[i0])))
                        n += float(c.sum())
                        st += float(np.sum(sign * (ct[i1] - ct[i0] - ta * c)))
                    got = acc.setdefault((a, b, float(lo)), [0.0, 0.0, 0.0])
                    got[0] += s
                    got[1] += n
                    got[2] += st
    rows = [(a, b, lo, *v) for (a, b, lo), v in acc.items()]
    return pd.DataFrame(rows, columns=["a", "b", "lo", "s", "n", "st"])


def fit(t, kind, value, run, min_pairs: int = MIN_PAIRS) -> State:
    """The state behind events at times ``t`` (s, on each run's clock) of kinds ``kind`` with measured values
    ``value`` in runs ``run`` (module docstring); ``NONE`` where fewer than two kinds or no interval of
    ``min_pairs`` pairs."""
    t, kind, value, run = np.asarray(t, float), np.asarray(kind), np.asarray(value, float), np.asarray(run)
    ok = np.isfinite(t) & np.isfinite(value)
    t, kind, value, run = t[ok], kind[ok], value[ok], run[ok]
    kinds = sorted(np.unique(kind).tolist())
    if len(kinds) < 2:
        return NONE
    p = cross_products(t, kind, scores(value, kind), run)
    p = p[p["n"] >= min_pairs]
    if p.empty:
        return NONE
    ia = np.array([kinds.index(a) for a in p["a"]])
    ib = np.array([kinds.index(b) for b in p["b"]])
    mean, dt, weight = (p["s"] / p["n"]).to_numpy(), (p["st"] / p["n"]).to_numpy(), np.sqrt(p["n"].to_numpy())
    K, J = len(kinds), len(TIMES_S)

    def residuals(x):
        lam, w = x[:K], x[K:]
        return weight * (mean - lam[ia] * lam[ib] * correlation(dt, w) / w.sum())

    x0 = np.r_[np.full(K, 0.5), np.full(J, 1.0 / J)]
    x = least_squares(residuals, x0, bounds=(np.r_[np.zeros(K), np.full(J, 1e-6)], np.ones(K + J))).x
    used = set(ia) | set(ib)
    return State({k: float(x[i]) if i in used else 0.0 for i, k in enumerate(kinds)}, x[K:] / x[K:].sum())


class Process:
    """The state z(t) of one simulated run: its parts drawn when first asked for and moved on as (simulated) time
    passes, each exp(-dt / tau) of its last value plus fresh noise; at one time every draw sees one value. ``bind``
    gives it the simulation's clock (until then: time 0)."""

    def __init__(self, weights, rng: np.random.Generator):
        self.scale, self.rng = np.sqrt(np.asarray(weights, float)), rng
        self.variance = float(np.sum(weights))
        self.clock: Callable[[], float] = lambda: 0.0
        self.t, self.x = None, None

    def bind(self, clock: Callable[[], float]) -> None:
        self.clock, self.t, self.x = clock, None, None

    def __call__(self) -> float:
        now = float(self.clock())
        if self.x is None:
            self.x, self.t = self.rng.standard_normal(len(self.scale)), now
        elif now > self.t:
            keep = np.exp(-(now - self.t) / np.asarray(TIMES_S))
            self.x = keep * self.x + np.sqrt(1.0 - keep * keep) * self.rng.standard_normal(len(self.scale))
            self.t = now
        return float(self.scale @ self.x)


class Coupled:
    """A value of ``values`` drawn at its quantile Phi(``loading`` z + e) of them, z the ``process``'s state now and e
    normal noise of the variance that makes the sum's 1."""

    def __init__(self, values, loading: float, process: Process, rng: np.random.Generator):
        values = np.asarray(values, float)
        self.values = np.sort(values[np.isfinite(values)]) if np.isfinite(values).any() else np.zeros(1)
        self.loading, self.process, self.rng = float(loading), process, rng
        self.noise = np.sqrt(max(1.0 - self.loading ** 2 * process.variance, 0.0))

    def __call__(self) -> float:
        z = self.loading * self.process() + self.noise * self.rng.standard_normal()
        return float(self.values[min(int(norm.cdf(z) * len(self.values)), len(self.values) - 1)])
