"""WISP's verification-time estimator (li2026 Section 4.4, eq 19; Appendix C): features, model, fit.

For a batch of requests, each with L_new tokens to feed and L_cached tokens of its session already in
the KV cache (L_total = L_cached + L_new):

    N_linear       = sum_i L_new,i                 (every fed token passes the linear layers)
    N_interactions = sum_i L_total,i * L_new,i     (eq 18: query-key products)
    N_cached       = sum_i L_cached,i              (cached KV read from memory)

    T_batch = a * N_linear + b_compute * N_interactions + b_read * N_cached + c        (eq 19)

E.g. one cold request of 300 tokens and one warm follow-up of 5 tokens on a 495-token prefix:
N_linear = 305, N_interactions = 300 * 300 + 500 * 5 = 92,500, N_cached = 495.

``Estimator`` is a ``VerifyTimeModel`` (seconds of a batch of ``Pending``); it also prices one request
alone (``v_hat``, the marginal cost Algorithm 1 divides by). ``fit(profile)`` is Appendix C's
procedure on a table of profiled batches (``verify_profiling.measure``'s columns: ``batch`` as
"L_new:L_cached ..." pairs, ``seconds``, ``split`` train/test, ``regime``): OLS with scikit-learn on the
training rows, 1000-resample bootstrap 95 % CIs of the coefficients, 5-fold CV R², metrics on train and
the held-out test rows, errors per regime, and the guard time delta of eq (17) from the fit's 95 %
prediction interval (the upper bound's distance from the mean prediction, t-quantile x residual
standard error x sqrt(1 + leverage), at its 95th percentile over the training batches) instead of the
paper's "from experience". ``zoo_fit`` is that fit on the zoo target's committed profile (``ZOO_PROFILE``): what the
real server's WISP former decides with, in every real run on this machine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LinearRegression
from sklearn.metrics import (max_error, mean_absolute_error, mean_absolute_percentage_error,
                             mean_squared_error, r2_score)
from sklearn.model_selection import KFold, cross_val_score

from ... import paths
from ..interfaces import Pending

COEFFICIENTS = ("a", "b_compute", "b_read", "c")
FEATURES = ("N_linear", "N_interactions", "N_cached")


def features(pairs: Sequence[tuple[int, int]]) -> tuple[int, int, int]:
    """(N_linear, N_interactions, N_cached) of a batch given as (L_new, L_cached) per request."""
    lin = inter = cached = 0
    for new, old in pairs:
        if new < 0 or old < 0:
            raise ValueError(f"batch: token counts must be >= 0, got (L_new={new}, L_cached={old})")
        lin += new
        inter += (new + old) * new
        cached += old
    return lin, inter, cached


def batch_pairs(batch: Sequence[Pending]) -> list[tuple[int, int]]:
    return [(p.n_new, p.n_cached) for p in batch]


@dataclass(frozen=True)
class Estimator:
    """Eq (19) with given coefficients (s/token, s/interaction, s/cached token, s)."""
    a: float
    b_compute: float
    b_read: float
    c: float

    def __post_init__(self):
        for k in COEFFICIENTS:
            v = getattr(self, k)
            if not np.isfinite(v):
                raise ValueError(f"{k}: must be finite, got {v!r}")

    @classmethod
    def from_coefficients(cls, **co) -> "Estimator":
        missing = [k for k in COEFFICIENTS if k not in co]
        if missing:
            raise ValueError(f"coefficients: missing {missing} (eq 19 needs {list(COEFFICIENTS)})")
        return cls(*(float(co[k]) for k in COEFFICIENTS))

    @classmethod
    def from_profile(cls, name: str = "li2026_paper", runtime: str = "verify") -> "Estimator":
        from ... import hardware

        return cls.from_coefficients(**hardware.load_profile(name).coefficients(runtime))

    def time(self, n_linear, n_interactions, n_cached):
        """Eq (19), floored at 0 s (a fitted intercept can be negative; a time cannot); numbers or
        numpy arrays of the three features."""
        t = self.a * n_linear + self.b_compute * n_interactions + self.b_read * n_cached + self.c
        if isinstance(t, np.ndarray):
            return np.maximum(t, 0.0)
        return t if t > 0.0 else 0.0   # max(0.0, t), without the call

    def __call__(self, batch: Sequence[Pending]) -> float:
        """Seconds of one batched verification of ``batch`` (an empty batch costs nothing): eq (19) of
        ``features`` summed in one pass over the requests (the twin's per-batch call)."""
        if not batch:
            return 0.0
        lin = inter = cached = 0
        for p in batch:
            new, old = p.n_new, p.n_cached
            if new < 0 or old < 0:
                features([(new, old)])   # names the bad counts
            lin += new
            inter += (new + old) * new
            cached += old
        t = self.a * lin + self.b_compute * inter + self.b_read * cached + self.c   # ``time``, on numbers
        return t if t > 0.0 else 0.0

    def v_hat(self, p: Pending) -> float:
        """Verification time of ``p`` alone (Algorithm 1's marginal cost v_hat_i)."""
        return self((p,))

    def coefficients(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in COEFFICIENTS}


@dataclass
class Fit:
    """What ``fit`` returns; tables are tidy DataFrames ready for the notebook."""
    estimator: Estimator
    coefficients: pd.DataFrame          # index a, b_compute, b_read, c; value, ci_low, ci_high, unit
    metrics: pd.DataFrame               # index train/test; R2, adj_R2, RMSE_ms, MAE_ms, MAPE_pct, max_error_ms, samples
    cv: dict                            # 5-fold CV R^2 on the training rows: mean, std, folds
    regimes: pd.DataFrame               # per split and regime: samples, MAE_ms, MAPE_pct
    predictions: pd.DataFrame           # per batch: split, regime, measured, predicted (s)
    delta: float                        # guard time (s) from the 95 % prediction interval
    note: str = field(default="")


def design_matrix(profile: pd.DataFrame) -> np.ndarray:
    from ..log import parse_batch

    if "batch" not in profile:
        raise ValueError("profile: needs a 'batch' column of 'L_new:L_cached' pairs")
    return np.array([features(parse_batch(b)) for b in profile["batch"]], dtype=float)


def _metrics(y, p, k: int) -> dict:
    n = len(y)
    r2 = r2_score(y, p)
    return dict(R2=r2, adj_R2=1 - (1 - r2) * (n - 1) / (n - k - 1) if n > k + 1 else np.nan,
                RMSE_ms=1000 * float(np.sqrt(mean_squared_error(y, p))),
                MAE_ms=1000 * mean_absolute_error(y, p), MAPE_pct=100 * mean_absolute_percentage_error(y, p),
                max_error_ms=1000 * max_error(y, p), samples=n)


def fit(profile: pd.DataFrame, *, seed: int = 0, bootstrap: int = 1000, folds: int = 5) -> Fit:
    """Appendix C's fit (module docstring). ``profile`` needs columns batch, seconds, split, regime."""
    for col in ("batch", "seconds", "split", "regime"):
        if col not in profile:
            raise ValueError(f"profile: missing column {col!r} (verify_profiling.measure writes it)")
    if bootstrap < 10 or folds < 2:
        raise ValueError(f"bootstrap must be >= 10 and folds >= 2, got {bootstrap}, {folds}")
    x, y = design_matrix(profile), profile["seconds"].to_numpy(float)
    train = (profile["split"] == "train").to_numpy()
    test = (profile["split"] == "test").to_numpy()
    if train.sum() <= len(FEATURES) + 1:
        raise ValueError(f"profile: {int(train.sum())} training rows, need more than {len(FEATURES) + 1}")
    model = LinearRegression().fit(x[train], y[train])
    est = Estimator(*model.coef_, model.intercept_)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    xt, yt = x[train], y[train]
    boots = np.empty((bootstrap, 4))
    for b in range(bootstrap):
        idx = rng.integers(0, len(yt), len(yt))
        m = LinearRegression().fit(xt[idx], yt[idx])
        boots[b] = [*m.coef_, m.intercept_]
    low, high = np.percentile(boots, [2.5, 97.5], axis=0)
    units = ["s/token", "s/interaction", "s/cached token", "s"]
    coef = pd.DataFrame(dict(value=[*model.coef_, model.intercept_], ci_low=low, ci_high=high, unit=units),
                         index=list(COEFFICIENTS))
    cvs = cross_val_score(LinearRegression(), xt, yt, cv=KFold(folds, shuffle=True, random_state=seed), scoring="r2")
    pred = model.predict(x)
    metrics = pd.DataFrame({s: _metrics(y[m], pred[m], x.shape[1]) for s, m in (("train", train), ("test", test)) if m.any()}).T
    rows = []
    for (s, r), g in profile.assign(_p=pred).groupby(["split", "regime"]):
        yy, pp = g["seconds"].to_numpy(float), g["_p"].to_numpy(float)
        rows.append(dict(split=s, regime=r, samples=len(g), MAE_ms=1000 * mean_absolute_error(yy, pp),
                         MAPE_pct=100 * mean_absolute_percentage_error(yy, pp)))
    # prediction interval half-width at each training batch: t * s * sqrt(1 + h), h the leverage
    xd = np.column_stack([xt, np.ones(len(xt))])
    dof = len(yt) - xd.shape[1]
    s2 = float(((yt - model.predict(xt)) ** 2).sum() / dof)
    h = np.einsum("ij,jk,ik->i", xd, np.linalg.pinv(xd.T @ xd), xd)
    half = stats.t.ppf(0.975, dof) * np.sqrt(s2 * (1 + h))
    preds = pd.DataFrame(dict(config=profile.get("config", pd.Series(range(len(y)))).to_numpy(),
                              split=profile["split"].to_numpy(), regime=profile["regime"].to_numpy(),
                              measured=y, predicted=pred))
    return Fit(est, coef, metrics, dict(mean=float(cvs.mean()), std=float(cvs.std()), folds=[float(v) for v in cvs]),
               pd.DataFrame(rows), preds, float(np.percentile(half, 95)))


ZOO_PROFILE = paths.DATA / "li2026" / "verify_profile_zoo.csv"


@lru_cache(maxsize=None)
def zoo_fit(seed: int = 0) -> Fit:
    """``fit`` on the zoo target's committed profile (``ZOO_PROFILE``): the eq (19) estimate and guard time δ the real
    server's WISP former decides with; fitted once per process (a bootstrap of the profile: ~1 s)."""
    if not ZOO_PROFILE.exists():
        raise FileNotFoundError(f"{ZOO_PROFILE} is missing: `make profiles` measures it "
                                "(python -m specedge.serving.real.verify_profiling --targets zoo)")
    return fit(pd.read_csv(ZOO_PROFILE), seed=seed)
