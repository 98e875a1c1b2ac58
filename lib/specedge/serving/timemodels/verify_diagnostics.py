"""Diagnostics of a measured verification profile (``verify_profiling.measure``'s rows; li2026 Appendix C):

- ``packed_diagnostic``: train / test R² of eq (19) alone and with one more feature, per profile;
- ``session_repeats``: batch shapes timed in more than one measuring session, their spread;
- ``component_shares``: each term of eq (19) as a share of the predicted latency (Appendix C's Component Analysis).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .estimator import design_matrix
from ..log import packed_products, parse_batch


def packed_diagnostic(profiles: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Train / test R² of eq (19) and of eq (19) with one more feature (this engine's packed attention
    products, the request count, N_linear²), per measured profile (``profiles``: name -> ``measure``'s rows)."""
    from sklearn.linear_model import LinearRegression

    diag = {}
    for t, d in profiles.items():
        x = design_matrix(d)
        xp = np.column_stack([x, [packed_products(parse_batch(b)) for b in d.batch]])
        tr = (d.split == "train").to_numpy()
        for name, X in (("eq (19)", x), ("eq (19) + packed products", xp), ("eq (19) + request count", np.column_stack([x, d.requests])),
                        ("eq (19) + N_linear²", np.column_stack([x, x[:, 0] ** 2]))):
            m = LinearRegression().fit(X[tr], d.seconds[tr])
            diag[(t, name)] = dict(train_R2=m.score(X[tr], d.seconds[tr]), test_R2=m.score(X[~tr], d.seconds[~tr]))
    return pd.DataFrame(diag).T


def session_repeats(d: pd.DataFrame) -> pd.DataFrame:
    """Batch shapes of a measured profile (``measure``'s rows) timed in more than one session: fastest, slowest
    and the largest within-session coefficient of variation."""
    d = d.copy()
    d["shape"] = d.batch.map(lambda b: " ".join(sorted(b.split())))
    return d[d["shape"].map(d["shape"].value_counts()) > 1].groupby("shape").agg(
        fastest=("seconds", "min"), slowest=("seconds", "max"), within_cv=("cv", "max"))


def component_shares(d: pd.DataFrame, coef: dict) -> pd.DataFrame:
    """Each term of eq (19) as a share of the predicted latency, per configuration of a measured design
    (Appendix C's Component Analysis); ``coef``: a, b_compute, b_read, c."""
    x = design_matrix(d)
    terms = x * np.array([coef["a"], coef["b_compute"], coef["b_read"]])
    total = terms.sum(axis=1) + coef["c"]
    return pd.DataFrame(dict(regime=d.regime, tokens=x[:, 0] + x[:, 2], linear=terms[:, 0] / total, interactions=terms[:, 1] / total,
                             cached=terms[:, 2] / total, constant=coef["c"] / total))
