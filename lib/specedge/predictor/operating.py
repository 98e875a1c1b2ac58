"""The predictors at the paper's operating points (li2026 Sec 5.4, App B), over split seeds.

Sec 5.4 benchmarks the predictors "under an operating point that penalizes false acceptance of truly
rejected tokens"; App B trains the trees "with standard cross-entropy objectives" and the MLP "with
binary cross-entropy loss and Adam". Neither the penalty's size nor a threshold is stated, so our
reading (named in every row that uses it):

- every family's loss weights each rejected sample by ``n_accepted / n_rejected`` of the training split
  (``balanced_weight``: both classes weigh alike in the loss, the usual way to penalise false acceptance on
  acceptance-dominated data): the MLP's binary cross-entropy, the trees' cross-entropy through sample
  weights; every family decides at the default threshold 0.5. The same rule for every family, so a
  ranking of the families is not a ranking of who got the penalty.

``paper_operating_points`` reruns split, training and scoring for several prompt-split seeds with each
family's committed configuration (``trainer_kwargs``), so every metric carries the spread that the choice
of prompts and the training seed give; ``fpr_ratio`` is Sec 5.4's "about 2x" per seed.
"""
from __future__ import annotations

import inspect
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .dataset import data_splits, features
from .metrics import fpr_at_rec1, metrics
from .models import FAMILIES, LABELS, TRAINERS, Predictor, evaluate

THRESHOLD = 0.5                               # the default decision threshold of every family (App B)
EQUAL_REC1 = 0.8                              # the coverage at which families are compared beyond the paper
EQUAL_COL = "FPR_at_Rec1_0.8"
UNPENALISED = "MLP (3-layer), unweighted BCE"  # the MLP without the penalty, at 0.5 (sensitivity)
# LightGBM's stored parameter names -> ``train_lightgbm``'s keyword names
_LGB_NAMES = dict(bagging_fraction="subsample", feature_fraction="colsample_bytree", lambda_l2="reg_lambda",
                  lambda_l1="reg_alpha")


def balanced_weight(y) -> float:
    """The rejected class's loss weight that makes both classes weigh alike: n_accepted / n_rejected."""
    y = np.asarray(y)
    n0, n1 = int((y == 0).sum()), int((y == 1).sum())
    if n0 == 0 or n1 == 0:
        raise ValueError(f"balanced_weight needs both classes, got {n0} rejected and {n1} accepted samples")
    return n1 / n0


def trainer_kwargs(pred: Predictor) -> dict:
    """The keyword arguments of ``TRAINERS[pred.family]`` that rebuild ``pred``'s configuration (its stored
    parameters, renamed where the library stores them under another name), without the seed."""
    if pred.family not in TRAINERS:
        raise ValueError(f"family must be one of {FAMILIES}, got {pred.family!r}")
    accepted = set(inspect.signature(TRAINERS[pred.family]).parameters) - {"x", "y", "x_val", "y_val", "seed"}
    params = {(_LGB_NAMES.get(k, k) if pred.family == "lightgbm" else k): v for k, v in pred.params.items()}
    out = {k: v for k, v in params.items() if k in accepted}
    if "hidden" in out:
        out["hidden"] = tuple(out["hidden"])
    return out


def paper_operating_points(data: pd.DataFrame, configs: Mapping[str, dict], seeds: Sequence[int],
                           unpenalised: bool = True) -> pd.DataFrame:
    """Test metrics at the paper's operating points for every split seed in ``seeds``: the prompts split with
    seed s (``data_splits``), each family of ``configs`` (family -> ``trainer_kwargs``) trained with seed s and
    the rejected class weighted by ``balanced_weight`` of the training split, every family scored at
    ``THRESHOLD`` on the test prompts. With ``unpenalised`` the MLP is also trained without the weight
    (``UNPENALISED``). One row per (split_seed, predictor) with Table 4's columns, the FPR at equal coverage
    Rec1 = ``EQUAL_REC1`` (``EQUAL_COL``: threshold-free, beyond the paper), the family's weight and the test
    split's sizes."""
    missing = [f for f in FAMILIES if f not in configs]
    if missing or not len(seeds):
        raise ValueError(f"configs must hold every family {FAMILIES} (missing {missing}) and seeds at least one seed")
    rows = []
    for s in seeds:
        sp = data_splits(data, int(s))
        xy = (features(sp["train"]), sp["train"]["label"].to_numpy(), features(sp["val"]), sp["val"]["label"].to_numpy())
        x_test, y_test = features(sp["test"]), sp["test"]["label"].to_numpy()
        weight = balanced_weight(xy[1])
        # the same operating-point rule for every family: each rejected sample weighted n_accepted/n_rejected
        runs = [(LABELS[f], f, dict(configs[f], rejected_weight=weight), weight) for f in FAMILIES]
        if unpenalised:
            runs.append((UNPENALISED, "mlp", configs["mlp"], 1.0))
        for label, fam, kw, w in runs:
            pred = TRAINERS[fam](*xy, seed=int(s), **kw)
            score = pred.predict_proba(x_test)
            rows.append(dict(split_seed=int(s), predictor=label, threshold=THRESHOLD, rejected_weight=w,
                             **metrics(y_test, score, THRESHOLD), **{EQUAL_COL: fpr_at_rec1(y_test, score, EQUAL_REC1)},
                             test_prompts=sp["test"]["prompt_key"].nunique(), test_samples=len(y_test),
                             test_rejected=int((y_test == 0).sum())))
    return pd.DataFrame(rows)


def fpr_ratio(table: pd.DataFrame, mlp: str = LABELS["mlp"], trees: Sequence[str] | None = None) -> pd.Series:
    """Sec 5.4's "about 2x" per split seed: the trees' mean FPR over the MLP's (``paper_operating_points``
    rows); NaN where the MLP's FPR is 0."""
    trees = [LABELS[f] for f in FAMILIES if f != "mlp"] if trees is None else list(trees)
    fpr = table.pivot(index="split_seed", columns="predictor", values="FPR")
    missing = [p for p in [mlp, *trees] if p not in fpr]
    if missing:
        raise ValueError(f"table lacks predictors {missing}: it holds {list(fpr.columns)}")
    return (fpr[trees].mean(axis=1) / fpr[mlp].replace(0.0, np.nan)).rename("fpr_ratio")


COUNTS = ["TN", "FP", "FN", "TP"]              # Table 10's confusion counts, accepted = 1 the positive class


def confusion_counts(op: pd.DataFrame) -> pd.DataFrame:
    """Table 10 of ``paper_operating_points`` rows: per (split_seed, predictor) the counts TN, FP, FN, TP, their
    row-normalised % (``TN_pct`` ...) and the class supports, recovered from each row's Spec, Rec1 and test supports
    (the rates are ratios of counts, so the recovery is exact; a row where it is not raises)."""
    missing = [c for c in ("split_seed", "predictor", "Rec1", "Spec", "test_samples", "test_rejected") if c not in op]
    if missing:
        raise ValueError(f"operating-point rows lack columns {missing}: they hold {list(op.columns)}")
    n0 = op.test_rejected.to_numpy(int)
    n1 = op.test_samples.to_numpy(int) - n0
    tn_f, tp_f = op.Spec.to_numpy(float) * n0, op.Rec1.to_numpy(float) * n1
    tn, tp = np.rint(tn_f).astype(int), np.rint(tp_f).astype(int)
    bad = (np.abs(tn_f - tn) > 1e-6) | (np.abs(tp_f - tp) > 1e-6)
    if bad.any():
        raise ValueError(f"Spec x n_rejected or Rec1 x n_accepted is not a whole count in {int(bad.sum())} rows "
                         f"(first: split seed {op.split_seed.iloc[int(np.argmax(bad))]})")
    out = pd.DataFrame(dict(split_seed=op.split_seed.to_numpy(), predictor=op.predictor.to_numpy(), TN=tn, FP=n0 - tn,
                            FN=n1 - tp, TP=tp))
    for c, n in zip(COUNTS, (n0, n0, n1, n1)):
        out[f"{c}_pct"] = 100 * out[c] / n
    return out.assign(n_rejected=n0, n_accepted=n1)


def evaluate_at_thresholds(preds: Mapping, test: pd.DataFrame):
    """Tables 4 and 10 of ``preds`` on ``test`` at their operating points, Table 4 at threshold 0.5, and each
    predictor's FPR at equal coverage Rec1 in {0.6, 0.7, 0.8, 0.9}."""
    table4, table10 = evaluate(preds, test)
    default = {f: Predictor(p.family, p.model, p.params, 0.5) for f, p in preds.items()}
    table4_05, _ = evaluate(default, test)
    y_test, x_test = test["label"].to_numpy(), features(test)
    equal = pd.DataFrame([{"predictor": p.label, "Rec1": c, "FPR": fpr_at_rec1(y_test, p.predict_proba(x_test), c)}
                          for p in preds.values() for c in (0.6, 0.7, 0.8, 0.9)])
    return table4, table10, table4_05, equal
