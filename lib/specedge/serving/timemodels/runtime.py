"""The verifier's runtime models: one per profile kind, named for its formula, built from a profile.

A hardware profile's runtime entry names its kind (``hardware.KINDS``); ``verify_model(profile)``
builds the model of that kind, a ``VerifyTimeModel`` (seconds of one batched pass over a batch of
``Pending``), which the twin, the notebooks and WISP's scheduler call alike:

- ``affine_tokens``       T = c0 + c_tok * tokens (tran2025's H100 pass), tokens = sum over the batch of
                          S_i + 1, the verified tokens of each request;
- ``affine_interactions`` T = a*N_linear + b_compute*N_interactions + b_read*N_cached + c (li2026 eq 19):
                          ``estimator.Estimator``, which is also Appendix C's fit; ``fit_log_batches`` fits
                          it to the passes a real server logged (``log_batches``: the replay's model).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from ... import hardware
from .estimator import Estimator
from ..interfaces import Pending
from ..log import verified
from ...registry import Registry


@dataclass(frozen=True)
class AffineTokens:
    """Kind ``affine_tokens``: T = c0 + c_tok * sum_i (S_i + 1) (s per pass, s per verified token)."""
    c0: float
    c_tok: float

    def __post_init__(self):
        for k in ("c0", "c_tok"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"AffineTokens.{k}: must be a finite number >= 0 s, got {v!r}")

    def time(self, tokens: float) -> float:
        return self.c0 + self.c_tok * tokens

    def __call__(self, batch: Sequence[Pending]) -> float:
        return self.c0 + self.c_tok * sum(p.n_draft + 1 for p in batch)


VERIFY_KINDS = Registry("verification runtime kind")   # a profile's runtime kind -> its verification model


@VERIFY_KINDS.register("affine_tokens")
def _affine_tokens(coefficients):
    return AffineTokens(float(coefficients["c0"]), float(coefficients["c_tok"]))


@VERIFY_KINDS.register("affine_interactions")
def _affine_interactions(coefficients):
    return Estimator.from_coefficients(**coefficients)


def verify_model(profile: "str | hardware.Profile", runtime: str = "verify"):
    """The runtime model of ``profile``'s entry ``runtime``, by its kind (``VERIFY_KINDS``)."""
    prof = hardware.as_profile(profile)
    kind = prof.kind(runtime)
    if kind not in VERIFY_KINDS:
        raise ValueError(f"{prof.path or prof.name}: runtime.{runtime} is of kind {kind!r}; a verification model needs "
                         f"one of {VERIFY_KINDS.names()}")
    return VERIFY_KINDS.build(kind, coefficients=prof.coefficients(runtime))


def log_batches(log: pd.DataFrame) -> pd.DataFrame:
    """The verified batches of a serving log as a verification profile (``verify_profiling``'s columns:
    ``batch`` as "L_new:L_cached ..." pairs, ``seconds`` = the pass's measured ``t_verify``), so that the
    kind ``affine_interactions`` is fitted to the batches a server really ran (``fit_log_batches``)."""
    for col in ("batch", "n_new", "n_cached", "t_verify"):
        if col not in log:
            raise ValueError(f"log: missing column {col!r} (the real server logs it; older logs "
                             "lack n_new / n_cached)")
    rows = verified(log)
    rows = rows[rows["t_verify"].notna()]
    # "n_new:n_cached" per request, joined per batch in log order (one vectorised pass, not a frame per batch)
    pairs = rows["n_new"].astype(int).astype(str) + ":" + rows["n_cached"].astype(int).astype(str)
    by = rows["batch"]
    return pd.DataFrame(dict(batch=pairs.groupby(by, sort=True).agg(" ".join).to_numpy(object),
                             seconds=rows["t_verify"].groupby(by, sort=True).first().to_numpy(float)),
                        columns=["batch", "seconds"])


# Digits kept of each coefficient fitted to a log: far below what the passes' spread resolves, far above
# the last-digit noise of the least-squares kernels, which differ between x86 hosts (~1e-15 relative on
# the pinned runs): every replay driven by the fit then makes the same decisions on any host.
SIGNIFICANT_DIGITS = 6


def fit_log_batches(profile, seed: int = 0) -> Estimator:
    """Kind ``affine_interactions`` (eq 19) fitted by ``estimator.fit`` to ``log_batches`` rows, each
    coefficient rounded to ``SIGNIFICANT_DIGITS``."""
    from .estimator import fit

    if len(profile) <= 5:
        raise ValueError(f"profile: {len(profile)} batches, need more than 5 to fit eq (19)'s 4 coefficients")
    est = fit(profile.assign(split="train", regime="serving"), seed=seed, bootstrap=10, folds=2).estimator
    return Estimator(**{k: float(f"{v:.{SIGNIFICANT_DIGITS}g}") for k, v in est.coefficients().items()})
