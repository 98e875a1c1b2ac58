"""li2026 Fig 1's device goodput model: wasted draft tokens and goodput per round, with the paper's
verification-time estimator (eq 19, ``serving.timemodels.estimator``) and a device drafting rate; modelled,
never measured, so the figure is deterministic.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def verify_time(n_new, n_cached, profile: str = "li2026_paper") -> np.ndarray:
    """Verification time of one request by eq (19) with the profile's coefficients
    (``serving.timemodels.estimator.Estimator``: the one definition of eq (19))."""
    from ..serving.timemodels.estimator import Estimator

    n_new, n_cached = np.asarray(n_new, float), np.asarray(n_cached, float)
    return Estimator.from_profile(profile).time(n_new, (n_new + n_cached) * n_new, n_cached)


def round_goodput(rounds: pd.DataFrame, draft_rate: float = 50.0, prompt_len=0,
                  profile: str = "li2026_paper") -> pd.DataFrame:
    """Fig 1: per round, wasted draft tokens W = drafted - accepted and the device goodput
    (accepted + 1 committed tokens) / (passes / draft_rate + verification time, eq (19)).

    ``rounds`` is a per-round traces frame; ``passes`` (its column when given, else ``drafted``) counts the
    draft-model passes, which include the position a stop rule judged (``predictor.controller.draft_passes``).
    Times are modelled (the paper's 50 tokens/s device and
    its fitted verifier), never measured, so the figure is deterministic.
    """
    if draft_rate <= 0:
        raise ValueError(f"draft_rate must be > 0 tokens/s, got {draft_rate}")
    r = rounds.copy()
    r["wasted"] = r["drafted"] - r["accepted"]
    passes = r["passes"] if "passes" in r else r["drafted"]
    t = passes / draft_rate + verify_time(r["drafted"] + 1, prompt_len + r["position"], profile)
    r["goodput"] = (r["accepted"] + 1) / t
    return r
