"""Predictor metrics (li2026): Metrics (Table 4, Table 10)

Positive class = accepted (1). ``confusion`` gives TN, FP, FN, TP; ``metrics`` gives Acc, AUC,
Rec1 (recall of accepted = speculative coverage), Spec (recall of rejected), FPR = 1 - Spec (a truly
rejected token predicted accepted: the false alarm that causes over-drafting), BalAcc =
(Rec1 + Spec) / 2. ``operating_point`` picks the decision threshold on the validation split: the
paper selects for rejection detection (low FPR) over majority-class recall; our rule maximises
BalAcc (Youden's J) unless ``max_fpr`` is given (largest Rec1 with FPR <= max_fpr).
"""
from __future__ import annotations

import numpy as np
from sklearn.metrics import confusion_matrix, roc_auc_score


# --------------------------------------------------------------------------- metrics
def _binary(y, name: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or not np.isin(y, (0, 1)).all():
        raise ValueError(f"{name} must be a 1-D array of 0/1 labels")
    return y.astype(int)


def accept_all(accepted_share: float) -> dict[str, float]:
    """``metrics`` of the trivial predictor that accepts every token (a fixed window) on data whose accepted share is
    ``accepted_share``: Acc = that share (4 decimals), AUC 0.5, Rec1 1, Spec 0, FPR 1, BalAcc 0.5."""
    if not 0 <= accepted_share <= 1:
        raise ValueError(f"accepted_share: a fraction in [0, 1], got {accepted_share!r}")
    return dict(Acc=round(float(accepted_share), 4), AUC=0.5, Rec1=1.0, Spec=0.0, FPR=1.0, BalAcc=0.5)


def confusion(y_true, y_pred) -> dict[str, int]:
    """TN, FP, FN, TP with accepted = 1 as the positive class (Table 10's layout; scikit-learn)."""
    t, p = _binary(y_true, "y_true"), _binary(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError("y_true and y_pred must have the same length")
    tn, fp, fn, tp = confusion_matrix(t, p, labels=[0, 1]).ravel()
    return dict(TN=int(tn), FP=int(fp), FN=int(fn), TP=int(tp))


def roc_auc(y_true, score) -> float:
    """Area under the ROC curve = P(score of a random accepted > of a random rejected), ties count 1/2
    (scikit-learn's ``roc_auc_score``)."""
    t = _binary(y_true, "y_true")
    if t.min() == t.max():
        raise ValueError("roc_auc needs both classes in y_true")
    return float(roc_auc_score(t, np.asarray(score, dtype=float)))


def metrics(y_true, score, threshold: float = 0.5) -> dict[str, float]:
    """Table 4's columns: Acc, AUC, Rec1, Spec, FPR, BalAcc (predict accepted iff score >= threshold)."""
    t = _binary(y_true, "y_true")
    s = np.asarray(score, dtype=float)
    c = confusion(t, (s >= threshold).astype(int))
    rec1 = c["TP"] / max(c["TP"] + c["FN"], 1)
    spec = c["TN"] / max(c["TN"] + c["FP"], 1)
    return dict(Acc=(c["TP"] + c["TN"]) / len(t), AUC=roc_auc(t, s), Rec1=rec1, Spec=spec,
                FPR=1.0 - spec, BalAcc=(rec1 + spec) / 2)


def operating_point(y_true, score, max_fpr: float | None = None) -> float:
    """Decision threshold chosen on validation data for rejection detection (Sec 5.4).

    Default: the threshold maximising BalAcc = (Rec1 + Spec)/2 (Youden's J). With ``max_fpr``: the
    largest Rec1 among thresholds whose FPR on rejected tokens is <= ``max_fpr``. Candidates are the
    observed scores (predict accepted iff score >= threshold); ties go to the higher threshold.
    """
    t = _binary(y_true, "y_true")
    s = np.asarray(score, dtype=float)
    if max_fpr is not None and not 0.0 <= max_fpr <= 1.0:
        raise ValueError(f"max_fpr must be in [0, 1], got {max_fpr}")
    cand = np.unique(s)
    n1, n0 = max(int(t.sum()), 1), max(int((1 - t).sum()), 1)
    # counts of scores >= each candidate, per class, by sorting once
    s1, s0 = np.sort(s[t == 1]), np.sort(s[t == 0])
    rec1 = (len(s1) - np.searchsorted(s1, cand, side="left")) / n1
    fpr = (len(s0) - np.searchsorted(s0, cand, side="left")) / n0
    if max_fpr is None:
        obj = rec1 + (1 - fpr)
    else:
        obj = np.where(fpr <= max_fpr + 1e-12, rec1, -1.0)
    best = np.flatnonzero(obj == obj.max())[-1]
    return float(cand[best])


def fpr_at_rec1(y_true, score, rec1: float) -> float:
    """FPR on rejected tokens at the highest threshold whose Rec1 is >= ``rec1``.

    Compares predictor families at equal speculative coverage: Table 4 sets each model's threshold
    separately, so FPR there mixes the family's ranking quality with where its threshold sits.
    """
    t = _binary(y_true, "y_true")
    s = np.asarray(score, dtype=float)
    if not 0.0 < rec1 <= 1.0:
        raise ValueError(f"rec1 must be in (0, 1], got {rec1}")
    s1 = np.sort(s[t == 1])[::-1]
    if len(s1) == 0 or (t == 0).sum() == 0:
        raise ValueError("fpr_at_rec1 needs both classes in y_true")
    thr = s1[int(np.ceil(rec1 * len(s1))) - 1]  # the k-th highest accepted score, k = ceil(rec1 n1)
    return float((s[t == 0] >= thr).mean())
