"""WISP's rejection predictor and its stop-at-first-predicted-rejection drafting controller (li2026).

Dataset (li2026 Sec 4.1, App B "Training dataset generation")
    ``build_dataset(traces)`` keeps, per speculative round, the accepted drafted positions (label 1) and
    the first rejected one (label 0); positions after the first rejection are dropped (the verifier
    stops there, so they affect neither L nor W). Features ``FEATURES``: the four draft-logit statistics
    of Sec 3.3 (confidence ``max_prob``, ``entropy``, top-1/top-2 ``margin``, ``logit_std``, computed by
    ``sampling.logit_stats``) and, as the fifth dimension of the paper's "5-D feature vector" (App B;
    the paper names only four), the 1-based drafted position ``i`` in the window: it is known on the
    device before verification and carries the decay of per-position acceptance. ``split_by_prompt``
    assigns whole prompts to train/validation/test, never single tokens.

Metrics (Table 4, Table 10)
    Positive class = accepted (1). ``confusion`` gives TN, FP, FN, TP; ``metrics`` gives Acc, AUC,
    Rec1 (recall of accepted = speculative coverage), Spec (recall of rejected), FPR = 1 - Spec (a truly
    rejected token predicted accepted: the false alarm that causes over-drafting), BalAcc =
    (Rec1 + Spec) / 2. ``operating_point`` picks the decision threshold on the validation split: the
    paper selects for rejection detection (low FPR) over majority-class recall; our rule maximises
    BalAcc (Youden's J) unless ``max_fpr`` is given (largest Rec1 with FPR <= max_fpr).

Models (App B, Table 9)
    ``train_mlp`` (3 hidden layers, torch, BCE, Adam, early stopping on validation loss),
    ``train_random_forest`` (scikit-learn), ``train_xgboost``, ``train_lightgbm``; each returns a
    ``Predictor`` whose ``predict_proba(X)`` is P(accepted). ``scan`` trains a small grid per family
    (dimensions of Table 9) and keeps the best validation AUC. ``save``/``load`` use formats that
    load without unpickling code: safetensors + JSON for the MLP, XGBoost's JSON, LightGBM's text
    model, and, for the random forest, its tree arrays exported to safetensors and evaluated by
    ``Forest`` (numpy; identical probabilities to scikit-learn's ``predict_proba``).

Theorem 1 (App A, eqs (22)-(34))
    ``expected_waste(alpha, k_max, rec1, fp)`` is E[W] in closed form for a window whose per-position
    conditional acceptances are ``alpha`` and a predictor that says "accept" with probability ``rec1``
    on accepted tokens and ``fp`` on rejected ones (independently); ``waste_bound`` is the paper's
    bound (31); ``simulate_waste`` the Monte Carlo of the same process. Lower ``fp`` => lower E[W].

Controller (Sec 4.1)
    ``StopAtFirstPredictedRejection(predictor, max_window)`` plugs into ``decoding.speculative`` as
    ``gamma=`` (the window cap), ``stop_rule=`` (the predictor says "rejected") and
    ``stop_before=True``: the position the predictor first predicts rejected is not drafted, the
    paper's eq (25) (``expected_waste``). ``exclusive=False`` still sends that token (the inclusive
    rule, ``expected_waste(..., inclusive=True)``).

Latency (Table 11)
    ``measure_latency(predictor, x, trials=1000)``: single-sample wall time statistics. Only the explicit
    step ``python -m specedge.predictor latency`` (or ``build``) calls it and writes
    ``data/predictor/latency.csv``; notebooks read that file.

Command line
    python -m specedge.predictor build      # traces from the zoo -> data/traces, train, save, latency
    python -m specedge.predictor train      # retrain from the committed traces
    python -m specedge.predictor latency    # re-measure Table 11 from the committed predictors
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from safetensors.numpy import load_file as _np_load, save_file as _np_save
from safetensors.torch import load_file as _torch_load, save_file as _torch_save

from . import paths, sampling

__all__ = [
    "FEATURES", "STATS", "FAMILIES", "build_dataset", "dataset_summary", "split_by_prompt",
    "confusion", "roc_auc", "metrics", "operating_point", "fpr_at_rec1", "Predictor", "train_mlp",
    "train_random_forest", "train_xgboost", "train_lightgbm", "scan", "SCAN_GRIDS", "save", "load",
    "Forest", "expected_waste", "waste_bound", "simulate_waste", "StopAtFirstPredictedRejection",
    "measure_latency", "pearson_table", "binned_acceptance", "TRACES", "PREDICTORS",
    "first_rejection_pmf", "generate_traces", "data_splits", "test_prompts", "position_acceptance",
    "train_all", "evaluate", "verify_time", "round_goodput", "latency_table", "controller_ablation",
    "zoo_prompts", "load_trace_data", "features", "LABELS", "main",
]

STATS = ("max_prob", "entropy", "margin", "logit_std")
FEATURES = (*STATS, "i")
FAMILIES = ("mlp", "lightgbm", "random_forest", "xgboost")
LABELS = {"mlp": "MLP (3-layer)", "lightgbm": "LightGBM", "random_forest": "Random Forest",
          "xgboost": "XGBoost"}
TRACES = paths.DATA / "traces"
PREDICTORS = paths.DATA / "predictor"


# --------------------------------------------------------------------------- dataset
def build_dataset(traces: pd.DataFrame, group: Sequence[str] = ("domain", "prompt")) -> pd.DataFrame:
    """WISP's token-level dataset (App B): accepted positions (label 1) and first rejections (label 0).

    ``traces`` is a per-position frame (``decoding.traces_frame``) with the ``FEATURES`` columns,
    ``accepted`` and ``first_rejected``; ``group`` names the columns that identify a prompt (a prompt
    is the same text whatever the draft or temperature, so all its traces share one split).
    Returns the kept rows with ``label`` and ``prompt_key`` columns added.
    """
    missing = [c for c in (*FEATURES, "accepted", "first_rejected", *group) if c not in traces]
    if missing:
        raise ValueError(f"traces: missing columns {missing}")
    acc = traces["accepted"].astype(bool)
    rej = traces["first_rejected"].astype(bool)
    if (acc & rej).any():
        raise ValueError("traces: a position cannot be both accepted and first_rejected")
    out = traces[acc | rej].copy()
    out["label"] = acc[acc | rej].astype(int).to_numpy()
    out["prompt_key"] = out[list(group)].astype(str).agg("/".join, axis=1)
    return out.reset_index(drop=True)


def dataset_summary(data: pd.DataFrame) -> pd.DataFrame:
    """Table 8: total, positive (accepted) and negative (first rejected) counts and fractions."""
    n = len(data)
    pos = int(data["label"].sum())
    frac = (lambda k: 100.0 * k / n) if n else (lambda k: float("nan"))
    return pd.DataFrame({
        "item": ["Total samples", "Positive (accepted)", "Negative (rejected)", "Feature dimension"],
        "count": [n, pos, n - pos, len(FEATURES)],
        "fraction_pct": [frac(n), frac(pos), frac(n - pos), float("nan")],
    })


def split_by_prompt(data: pd.DataFrame, fractions=(0.7, 0.15, 0.15), seed: int = 0,
                    key: str = "prompt_key") -> pd.Series:
    """Split label (``train``/``val``/``test``) per row; every prompt's rows land in one split.

    Prompts (not tokens) are shuffled with ``seed`` and cut by ``fractions`` of the prompt count, so
    a predictor is never scored on tokens of a prompt it was trained on.
    """
    fractions = np.asarray(fractions, dtype=float)
    if fractions.shape != (3,) or (fractions < 0).any() or not np.isclose(fractions.sum(), 1.0):
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")
    prompts = np.array(sorted(data[key].unique()))
    if len(prompts) < 3:
        raise ValueError(f"split_by_prompt needs at least 3 distinct prompts, got {len(prompts)}")
    order = np.random.default_rng(seed).permutation(len(prompts))
    n_train = max(1, int(round(fractions[0] * len(prompts))))
    n_val = max(1, int(round(fractions[1] * len(prompts))))
    n_train = min(n_train, len(prompts) - 2)
    n_val = min(n_val, len(prompts) - n_train - 1)
    names = np.empty(len(prompts), dtype=object)
    names[order[:n_train]] = "train"
    names[order[n_train:n_train + n_val]] = "val"
    names[order[n_train + n_val:]] = "test"
    return data[key].map(dict(zip(prompts, names))).rename("split")


def features(data: pd.DataFrame) -> np.ndarray:
    return data[list(FEATURES)].to_numpy(dtype=np.float32)


# --------------------------------------------------------------------------- metrics
def _binary(y, name: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or not np.isin(y, (0, 1)).all():
        raise ValueError(f"{name} must be a 1-D array of 0/1 labels")
    return y.astype(int)


def confusion(y_true, y_pred) -> dict[str, int]:
    """TN, FP, FN, TP with accepted = 1 as the positive class (Table 10's layout)."""
    t, p = _binary(y_true, "y_true"), _binary(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError("y_true and y_pred must have the same length")
    return dict(TN=int(((t == 0) & (p == 0)).sum()), FP=int(((t == 0) & (p == 1)).sum()),
                FN=int(((t == 1) & (p == 0)).sum()), TP=int(((t == 1) & (p == 1)).sum()))


def roc_auc(y_true, score) -> float:
    """Area under the ROC curve = P(score of a random accepted > of a random rejected), ties count 1/2."""
    t = _binary(y_true, "y_true")
    s = np.asarray(score, dtype=float)
    n1, n0 = int(t.sum()), int((1 - t).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError("roc_auc needs both classes in y_true")
    ranks = pd.Series(s).rank(method="average").to_numpy()  # Mann-Whitney U with midranks
    return float((ranks[t == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


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


# --------------------------------------------------------------------------- models
class _MLP(torch.nn.Module):
    """3 hidden layers with ReLU and dropout; inputs standardised inside (mean/std are buffers)."""

    def __init__(self, n_in: int, hidden: Sequence[int], dropout: float = 0.0):
        super().__init__()
        layers, width = [], n_in
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU(), torch.nn.Dropout(dropout)]
            width = h
        layers.append(torch.nn.Linear(width, 1))
        self.net = torch.nn.Sequential(*layers)
        self.register_buffer("mean", torch.zeros(n_in))
        self.register_buffer("std", torch.ones(n_in))

    def forward(self, x):
        return self.net((x - self.mean) / self.std)[..., 0]


@dataclass
class Predictor:
    """A trained rejection predictor: ``predict_proba`` = P(accepted), ``predict`` applies ``threshold``."""
    family: str
    model: object
    params: dict = field(default_factory=dict)
    threshold: float = 0.5
    features: tuple = FEATURES

    def predict_proba(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32).reshape(-1, len(self.features))
        if self.family == "mlp":
            with torch.inference_mode():
                return torch.sigmoid(self.model(torch.from_numpy(x))).numpy().astype(np.float64)
        if self.family == "random_forest":
            return self.model.predict_proba(x)[:, 1].astype(np.float64)
        if self.family == "xgboost":
            return np.asarray(self.model.inplace_predict(x), dtype=np.float64)
        if self.family == "lightgbm":
            return np.asarray(self.model.predict(x, num_threads=1), dtype=np.float64)
        raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")

    def predict(self, x) -> np.ndarray:
        """1 = predicted accepted, 0 = predicted rejected."""
        return (self.predict_proba(x) >= self.threshold).astype(int)

    @property
    def label(self) -> str:
        return LABELS[self.family]


def _check_xy(x, y):
    x = np.asarray(x, dtype=np.float32)
    y = _binary(y, "y")
    if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"x must be (n, d) with n = len(y) > 0, got {x.shape} and {y.shape}")
    return x, y


def train_mlp(x, y, x_val, y_val, *, hidden=(64, 32, 16), lr: float = 1e-3, batch_size: int = 128,
              dropout: float = 0.1, max_epochs: int = 200, patience: int = 15, seed: int = 0) -> Predictor:
    """The paper's MLP (App B): 3 hidden layers, BCE loss, Adam, early stopping on validation BCE."""
    x, y = _check_xy(x, y)
    x_val, y_val = _check_xy(x_val, y_val)
    if len(hidden) != 3:
        raise ValueError(f"hidden must give 3 layer widths (the paper's 3-layer MLP), got {hidden}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = _MLP(x.shape[1], hidden, dropout)
    model.mean.copy_(torch.from_numpy(x.mean(0)))
    model.std.copy_(torch.from_numpy(x.std(0) + 1e-6))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))
    xv, yv = torch.from_numpy(x_val), torch.from_numpy(y_val.astype(np.float32))
    best, best_state, wait, epochs = float("inf"), None, 0, 0
    for epoch in range(max_epochs):
        model.train()
        for idx in torch.randperm(len(xt), generator=gen).split(batch_size):
            opt.zero_grad()
            loss_fn(model(xt[idx]), yt[idx]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            val = float(loss_fn(model(xv), yv))
        epochs = epoch + 1
        if val < best - 1e-5:
            best, wait = val, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            wait += 1
            if wait >= patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    params = dict(hidden=list(hidden), lr=lr, batch_size=batch_size, dropout=dropout,
                  max_epochs=max_epochs, patience=patience, epochs=epochs, seed=seed)
    return Predictor("mlp", model, params)


class Forest:
    """A random forest as plain arrays (exported from scikit-learn): no pickle needed to load it.

    ``predict_proba`` follows scikit-learn exactly: inputs cast to float32, go left iff
    ``x[feature] <= threshold``, average the trees' leaf class fractions.
    """

    def __init__(self, trees: list[dict[str, np.ndarray]]):
        self.trees = trees

    @classmethod
    def from_sklearn(cls, rf) -> "Forest":
        trees = []
        for est in rf.estimators_:
            t = est.tree_
            value = t.value[:, 0, :].astype(np.float64)
            value = value / value.sum(1, keepdims=True)  # fractions, whatever sklearn stores
            trees.append(dict(left=t.children_left.astype(np.int64), right=t.children_right.astype(np.int64),
                              feature=t.feature.astype(np.int64), threshold=t.threshold.astype(np.float64),
                              value=value))
        return cls(trees)

    def predict_proba(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        rows = np.arange(len(x))
        total = np.zeros((len(x), self.trees[0]["value"].shape[1]))
        for t in self.trees:
            node = np.zeros(len(x), dtype=np.int64)
            while True:
                inner = t["left"][node] >= 0
                if not inner.any():
                    break
                f = t["feature"][node[inner]]
                go_left = x[rows[inner], f] <= t["threshold"][node[inner]]
                node[inner] = np.where(go_left, t["left"][node[inner]], t["right"][node[inner]])
            total += t["value"][node]
        return total / len(self.trees)

    def arrays(self) -> dict[str, np.ndarray]:
        return {f"tree{k}.{name}": np.ascontiguousarray(a) for k, t in enumerate(self.trees)
                for name, a in t.items()}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "Forest":
        n = len({k.split(".")[0] for k in arrays})
        return cls([{name: arrays[f"tree{k}.{name}"] for name in
                     ("left", "right", "feature", "threshold", "value")} for k in range(n)])


def train_random_forest(x, y, x_val=None, y_val=None, *, n_estimators: int = 100, max_depth=8,
                        min_samples_split: int = 2, min_samples_leaf: int = 5, max_features="sqrt",
                        seed: int = 0, keep_sklearn: bool = False) -> Predictor:
    """scikit-learn random forest (no early stopping: the validation split only selects parameters).

    The returned predictor evaluates the exported ``Forest`` (what ``save`` writes); with
    ``keep_sklearn`` it wraps scikit-learn's own object instead (for the latency comparison).
    """
    from sklearn.ensemble import RandomForestClassifier

    x, y = _check_xy(x, y)
    rf = RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth,
                                min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
                                max_features=max_features, random_state=seed, n_jobs=1)
    rf.fit(x, y)
    params = dict(n_estimators=n_estimators, max_depth=max_depth, min_samples_split=min_samples_split,
                  min_samples_leaf=min_samples_leaf, max_features=max_features, seed=seed)
    return Predictor("random_forest", rf if keep_sklearn else Forest.from_sklearn(rf), params)


def train_xgboost(x, y, x_val, y_val, *, n_estimators: int = 300, max_depth: int = 4,
                  learning_rate: float = 0.05, subsample: float = 0.8, colsample_bytree: float = 1.0,
                  min_child_weight: float = 1.0, gamma: float = 0.0, reg_lambda: float = 1.0,
                  reg_alpha: float = 0.0, early_stopping: int = 30, seed: int = 0) -> Predictor:
    """XGBoost with logistic loss and early stopping on validation log-loss (trees cut at the best)."""
    import xgboost as xgb

    x, y = _check_xy(x, y)
    x_val, y_val = _check_xy(x_val, y_val)
    params = dict(objective="binary:logistic", eval_metric="logloss", max_depth=max_depth,
                  learning_rate=learning_rate, subsample=subsample, colsample_bytree=colsample_bytree,
                  min_child_weight=min_child_weight, gamma=gamma, reg_lambda=reg_lambda,
                  reg_alpha=reg_alpha, tree_method="hist", nthread=1, seed=seed, verbosity=0)
    booster = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=n_estimators,
                        evals=[(xgb.DMatrix(x_val, label=y_val), "val")],
                        early_stopping_rounds=early_stopping, verbose_eval=False)
    booster = booster[: booster.best_iteration + 1]  # keep the early-stopped model only
    return Predictor("xgboost", booster, dict(params, n_estimators=n_estimators,
                                              trees=booster.num_boosted_rounds()))


def train_lightgbm(x, y, x_val, y_val, *, num_leaves: int = 15, max_depth: int = -1,
                   learning_rate: float = 0.05, n_estimators: int = 300, subsample: float = 0.8,
                   colsample_bytree: float = 1.0, min_child_samples: int = 20, reg_lambda: float = 0.0,
                   reg_alpha: float = 0.0, early_stopping: int = 30, seed: int = 0) -> Predictor:
    """LightGBM with binary log-loss and early stopping on the validation split."""
    import lightgbm as lgb

    x, y = _check_xy(x, y)
    x_val, y_val = _check_xy(x_val, y_val)
    params = dict(objective="binary", metric="binary_logloss", num_leaves=num_leaves,
                  max_depth=max_depth, learning_rate=learning_rate, bagging_fraction=subsample,
                  bagging_freq=1 if subsample < 1 else 0, feature_fraction=colsample_bytree,
                  min_child_samples=min_child_samples, lambda_l2=reg_lambda, lambda_l1=reg_alpha,
                  num_threads=1, seed=seed, deterministic=True, force_row_wise=True, verbosity=-1)
    train = lgb.Dataset(x, label=y)
    booster = lgb.train(params, train, num_boost_round=n_estimators,
                        valid_sets=[lgb.Dataset(x_val, label=y_val, reference=train)],
                        callbacks=[lgb.early_stopping(early_stopping, verbose=False)])
    # re-load from its own text format at the best iteration, so in-memory == saved model
    booster = lgb.Booster(model_str=booster.model_to_string(num_iteration=booster.best_iteration))
    return Predictor("lightgbm", booster, dict(params, n_estimators=n_estimators,
                                               trees=booster.num_trees()))


TRAINERS = {"mlp": train_mlp, "random_forest": train_random_forest, "xgboost": train_xgboost,
            "lightgbm": train_lightgbm}

# Table 9's dimensions, a few values each (the full grids of the paper are not given).
SCAN_GRIDS = {
    "mlp": dict(hidden=[(64, 32, 16), (128, 64, 32)], lr=[1e-3, 3e-4], batch_size=[64, 256],
                dropout=[0.0, 0.2]),
    "random_forest": dict(n_estimators=[100], max_depth=[6, 10], min_samples_leaf=[1, 10],
                          max_features=["sqrt", None]),
    "xgboost": dict(max_depth=[3, 5], learning_rate=[0.05, 0.1], subsample=[0.8, 1.0],
                    min_child_weight=[1.0, 5.0]),
    "lightgbm": dict(num_leaves=[7, 31], learning_rate=[0.05, 0.1], subsample=[0.8, 1.0],
                     min_child_samples=[10, 40]),
}


def scan(family: str, x, y, x_val, y_val, grid: dict | None = None, seed: int = 0,
         max_fpr: float | None = None, progress: bool = True) -> tuple[Predictor, pd.DataFrame]:
    """Train every combination of ``grid`` (default ``SCAN_GRIDS[family]``); keep the best val AUC.

    The kept predictor's ``threshold`` is its ``operating_point`` on the validation split. Returns
    it and the scan table (one row per configuration: parameters, val AUC, val BalAcc).
    """
    if family not in TRAINERS:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    grid = SCAN_GRIDS[family] if grid is None else grid
    keys = list(grid)
    combos = list(itertools.product(*(grid[k] for k in keys)))
    from tqdm.auto import tqdm

    rows, best, best_auc = [], None, -1.0
    for values in tqdm(combos, desc=f"scan {family}", disable=not progress):
        kw = dict(zip(keys, values))
        pred = TRAINERS[family](x, y, x_val, y_val, seed=seed, **kw)
        score = pred.predict_proba(x_val)
        auc = roc_auc(y_val, score)
        thr = operating_point(y_val, score, max_fpr)
        m = metrics(y_val, score, thr)
        rows.append({"family": family, **{k: str(v) for k, v in kw.items()},
                     "val_auc": auc, "val_balacc": m["BalAcc"], "threshold": thr})
        if auc > best_auc + 1e-12:
            best, best_auc = pred, auc
            best.threshold = thr
    return best, pd.DataFrame(rows)


# --------------------------------------------------------------------------- save / load
def save(pred: Predictor, directory, name: str | None = None) -> Path:
    """Write ``<name>.json`` (family, features, threshold, params) plus the model in its own format."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    name = name or pred.family
    meta = dict(family=pred.family, features=list(pred.features), threshold=pred.threshold,
                params=pred.params)
    if pred.family == "mlp":
        meta["model_file"] = f"{name}.safetensors"
        meta["architecture"] = dict(n_in=len(pred.features), hidden=pred.params["hidden"],
                                    dropout=pred.params.get("dropout", 0.0))
        _torch_save({k: v.contiguous() for k, v in pred.model.state_dict().items()},
                    str(directory / meta["model_file"]))
    elif pred.family == "random_forest":
        forest = pred.model if isinstance(pred.model, Forest) else Forest.from_sklearn(pred.model)
        meta["model_file"] = f"{name}.safetensors"
        _np_save(forest.arrays(), str(directory / meta["model_file"]))
    elif pred.family == "xgboost":
        meta["model_file"] = f"{name}.xgb.json"
        pred.model.save_model(str(directory / meta["model_file"]))
    elif pred.family == "lightgbm":
        meta["model_file"] = f"{name}.lgb.txt"
        pred.model.save_model(str(directory / meta["model_file"]))
    else:
        raise ValueError(f"family must be one of {FAMILIES}, got {pred.family!r}")
    path = directory / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
    return path


def load(directory, name: str) -> Predictor:
    """Load a predictor written by ``save``; nothing is unpickled."""
    directory = Path(directory)
    meta = json.loads((directory / f"{name}.json").read_text())
    family, file = meta["family"], directory / meta["model_file"]
    if family == "mlp":
        arch = meta["architecture"]
        model = _MLP(arch["n_in"], arch["hidden"], arch["dropout"])
        model.load_state_dict(_torch_load(str(file)))
        model.eval()
    elif family == "random_forest":
        model = Forest.from_arrays(_np_load(str(file)))
    elif family == "xgboost":
        import xgboost as xgb

        model = xgb.Booster(params={"nthread": 1})
        model.load_model(str(file))
    elif family == "lightgbm":
        import lightgbm as lgb

        model = lgb.Booster(model_file=str(file))
    else:
        raise ValueError(f"{file}: family must be one of {FAMILIES}, got {family!r}")
    return Predictor(family, model, meta["params"], float(meta["threshold"]), tuple(meta["features"]))


# --------------------------------------------------------------------------- Theorem 1
def _alpha_vector(alpha, k_max: int) -> np.ndarray:
    if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 1:
        raise ValueError(f"k_max must be an integer >= 1, got {k_max!r}")
    a = np.broadcast_to(np.asarray(alpha, dtype=float), (k_max,)).copy()
    if ((a < 0) | (a > 1)).any():
        raise ValueError("alpha must lie in [0, 1] (per-position conditional acceptance)")
    return a


def _check_prob(x, name):
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {x}")
    return float(x)


def first_rejection_pmf(alpha, k_max: int) -> np.ndarray:
    """P(R = r) for r = 1..k_max, eq (23), when position i is accepted w.p. alpha_i given i-1 were."""
    a = _alpha_vector(alpha, k_max)
    survive = np.concatenate([[1.0], np.cumprod(a)[:-1]])
    return survive * (1 - a)


def expected_waste(alpha, k_max: int, rec1: float, fp: float, fp_after: float | None = None,
                   inclusive: bool = False) -> float:
    """E[W_θ] (eq (26)) in closed form under the stop-at-first-predicted-rejection rule.

    Position i is accepted w.p. ``alpha[i]`` given i-1 were; the predictor says "accept" (Ẑ = 1) w.p.
    ``rec1`` on an accepted token, ``fp`` on the first rejected one (FP_θ(r), eq (30)) and
    ``fp_after`` (default ``fp``) on the positions after it, independently. Exclusive rule (eq (25)):
    drafting stops before the first Ẑ = 0, so on {R = r} with Ẑ_1..Ẑ_{r-1} = 1,
    W = Ẑ_r (1 + #consecutive Ẑ = 1 after r, capped at k_max - r). ``inclusive``: the token with the
    first Ẑ = 0 is still sent (``StopAtFirstPredictedRejection(exclusive=False)``), adding one wasted
    token when Ẑ_r = 0.
    """
    pmf = first_rejection_pmf(alpha, k_max)
    rec1, fp = _check_prob(rec1, "rec1"), _check_prob(fp, "fp")
    g = fp if fp_after is None else _check_prob(fp_after, "fp_after")
    total = 0.0
    for r in range(1, k_max + 1):
        reach = rec1 ** (r - 1)  # predictor let the accepted prefix through
        tail = 1.0 + sum(g ** j for j in range(1, k_max - r + 1))
        if inclusive:
            # Ẑ_r = 0: the rejected token itself is sent; Ẑ_r = 1: W = 1 + run of Ẑ = 1 then (if a
            # Ẑ = 0 comes before k_max) one more sent token.
            run = sum(g ** j for j in range(1, k_max - r + 1))
            stop_tok = sum(g ** (j - 1) * (1 - g) for j in range(1, k_max - r + 1))
            w = (1 - fp) * 1.0 + fp * (1.0 + run + stop_tok)
        else:
            w = fp * tail
        total += pmf[r - 1] * reach * w
    return float(total)


def waste_bound(alpha, k_max: int, fp) -> float:
    """The paper's bound (31): Σ_r (k_max - r + 1) P(R = r) FP_θ(r) (``fp`` scalar or per r)."""
    pmf = first_rejection_pmf(alpha, k_max)
    fp = np.broadcast_to(np.asarray(fp, dtype=float), (k_max,))
    r = np.arange(1, k_max + 1)
    return float(((k_max - r + 1) * pmf * fp).sum())


def simulate_waste(alpha, k_max: int, rec1: float, fp: float, n: int = 100_000, seed: int = 0,
                   fp_after: float | None = None, inclusive: bool = False) -> dict[str, float]:
    """Monte Carlo of one speculate-verify iteration per sample (App A's process), vectorised.

    Returns mean wasted tokens W, its standard error, mean drafted K_θ and mean accepted
    min(K_θ, L).
    """
    a = _alpha_vector(alpha, k_max)
    rec1, fp = _check_prob(rec1, "rec1"), _check_prob(fp, "fp")
    g = fp if fp_after is None else _check_prob(fp_after, "fp_after")
    rng = np.random.default_rng(seed)
    acc = rng.random((n, k_max)) < a  # A_i, conditional on the prefix: only used up to R
    pos = np.arange(1, k_max + 1)
    first_rej = np.argmax(~acc, axis=1) + 1
    R = np.where((~acc).any(axis=1), first_rej, k_max + 1)
    L = R - 1
    u = rng.random((n, k_max))
    p_one = np.where(pos[None, :] < R[:, None], rec1, np.where(pos[None, :] == R[:, None], fp, g))
    z = u < p_one  # Ẑ_i = 1 means "predict accepted"
    first_zero = np.where((~z).any(axis=1), np.argmax(~z, axis=1) + 1, k_max + 1)
    K = first_zero - 1  # eq (25)
    if inclusive:
        K = np.minimum(first_zero, k_max)
    W = np.maximum(K - L, 0)
    return dict(waste=float(W.mean()), waste_se=float(W.std(ddof=1) / np.sqrt(n)),
                drafted=float(K.mean()), accepted=float(np.minimum(K, L).mean()))


# --------------------------------------------------------------------------- controller
class StopAtFirstPredictedRejection:
    """WISP's drafting controller (Sec 4.1): draft until the predictor says "rejected", at most
    ``max_window`` tokens.

    Use as ``ctl.speculative(...)`` / ``ctl.speculative_batch(...)``, or pass ``gamma=ctl.gamma,
    stop_rule=ctl.stop_rule, stop_before=ctl.exclusive`` to ``decoding``. The features of position i
    are ``sampling.logit_stats`` of the draft's raw logits there plus ``i``. ``exclusive`` (default,
    eq (25)): drafting stops *before* the first position predicted rejected; ``False``: after it.
    ``predictor`` may be a ``Predictor`` or any callable ``features (1, 5) -> P(accepted)`` with a
    ``threshold`` attribute (tests use constant ones).
    """

    def __init__(self, predictor, max_window: int, exclusive: bool = True):
        self.predictor = predictor
        self.max_window = sampling.check_gamma(max_window)
        self.exclusive = bool(exclusive)
        self.calls = 0

    def gamma(self, row: int, rounds: list) -> int:
        return self.max_window

    def features(self, i: int, logits: torch.Tensor) -> np.ndarray:
        stats = sampling.logit_stats(logits)
        return np.array([[float(stats[k]) for k in STATS] + [float(i)]], dtype=np.float32)

    def stop_rule(self, i: int, logits: torch.Tensor) -> bool:
        """True when the predictor predicts rejection of position i (stop before it, or after it)."""
        self.calls += 1
        x = self.features(i, logits)
        if isinstance(self.predictor, Predictor):
            return bool(self.predictor.predict(x)[0] == 0)
        return bool(float(self.predictor(x)) < getattr(self.predictor, "threshold", 0.5))

    def speculative(self, draft, target, prompt, max_new_tokens: int, **kwargs):
        from . import decoding

        return decoding.speculative(draft, target, prompt, max_new_tokens, gamma=self.gamma,
                                    stop_rule=self.stop_rule, stop_before=self.exclusive, **kwargs)

    def speculative_batch(self, draft, target, prompts, max_new_tokens: int, **kwargs):
        from . import decoding

        return decoding.speculative_batch(draft, target, prompts, max_new_tokens, gamma=self.gamma,
                                          stop_rule=self.stop_rule, stop_before=self.exclusive, **kwargs)


# --------------------------------------------------------------------------- Figs 2-3
def pearson_table(data: pd.DataFrame, label: str = "label", by: Sequence[str] = ()) -> pd.DataFrame:
    """Fig 3: Pearson r of each statistic with acceptance (optionally per group, e.g. per draft)."""
    groups = data.groupby(list(by)) if by else [((), data)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        for s in STATS:
            r = float(np.corrcoef(g[s].to_numpy(float), g[label].to_numpy(float))[0, 1])
            rows.append({**dict(zip(by, key)), "statistic": s, "pearson_r": r, "n": len(g)})
    return pd.DataFrame(rows)


def binned_acceptance(data: pd.DataFrame, stat: str, bins: int = 10, label: str = "label") -> pd.DataFrame:
    """Fig 2: acceptance rate per quantile bin of ``stat`` (bin centre = median of the bin)."""
    if stat not in STATS:
        raise ValueError(f"stat must be one of {STATS}, got {stat!r}")
    q = pd.qcut(data[stat].rank(method="first"), bins, labels=False)
    g = data.groupby(q)
    return pd.DataFrame({"statistic": stat, "bin": np.arange(g.ngroups),
                         "value": g[stat].median().to_numpy(), "acceptance": g[label].mean().to_numpy(),
                         "n": g.size().to_numpy()})


# --------------------------------------------------------------------------- traces and pipeline
TRACE_COLUMNS = ["draft", "target", "domain", "temperature", "prompt", "round", "i", "drafted",
                 *STATS, "q", "p", "accepted", "first_rejected", "round_accepted"]


def generate_traces(draft_model, target_model, prompts: dict, *, window: int = 8,
                    temperatures=(0.0, 1.0), max_new_tokens: int = 48, seed: int = 0,
                    progress: bool = True, **columns) -> pd.DataFrame:
    """Fixed-window speculative-decoding traces (one row per drafted position) for the dataset.

    ``prompts`` maps a domain to a list of token-id prompts; each domain's prompts are decoded as
    one batch (``decoding.speculative_batch``: one batched target pass per round). ``columns`` are
    constants (e.g. ``draft="d1", target="t1"``). Timing columns are dropped: the committed traces
    must not change between runs.
    """
    from tqdm.auto import tqdm

    from . import decoding

    frames = []
    jobs = [(d, t) for d in prompts for t in temperatures]
    for domain, temp in tqdm(jobs, desc=f"traces {columns.get('draft', '')}", disable=not progress):
        gens = decoding.speculative_batch(draft_model, target_model, prompts[domain], max_new_tokens,
                                          gamma=window, temperature=temp, seed=seed)
        for j, g in enumerate(gens):
            frames.append(decoding.traces_frame(g.rounds, domain=domain, temperature=float(temp),
                                                prompt=j))
    out = pd.concat(frames, ignore_index=True)
    for name, value in columns.items():
        out[name] = value
    return out[[c for c in TRACE_COLUMNS if c in out]]


def data_splits(data: pd.DataFrame, seed: int) -> dict[str, pd.DataFrame]:
    """``{"train", "val", "test"}`` frames of ``build_dataset`` output, split by prompt with ``seed``."""
    split = split_by_prompt(data, seed=seed).to_numpy()
    return {name: data[split == name] for name in ("train", "val", "test")}


def test_prompts(data: pd.DataFrame, seed: int, per_domain: int | None = None) -> dict[str, list[int]]:
    """Prompt indices per domain of the test split (the controller is run live on unseen prompts)."""
    test = data_splits(data, seed)["test"]
    out = {}
    for domain, g in test.groupby("domain"):
        ids = sorted(int(p) for p in g["prompt"].unique())
        out[domain] = ids if per_domain is None else ids[:per_domain]
    return out


def position_acceptance(traces: pd.DataFrame, k_max: int) -> np.ndarray:
    """Per-position conditional acceptance α_i = P(i accepted | 1..i-1 accepted), i = 1..k_max,
    from fixed-window traces (rounds that drafted the full window only)."""
    full = traces[traces["drafted"] == k_max]
    out = np.empty(k_max)
    for i in range(1, k_max + 1):
        reached = full[(full["i"] == i) & (full["round_accepted"] >= i - 1)]
        out[i - 1] = reached["accepted"].mean() if len(reached) else np.nan
    return out


def train_all(data: pd.DataFrame, seed: int = 0, grids: dict | None = None, progress: bool = True,
              max_fpr: float | None = None):
    """Scan and train the four families on the prompt-level split; returns (predictors, scan table)."""
    sp = data_splits(data, seed)
    xy = (features(sp["train"]), sp["train"]["label"].to_numpy(),
          features(sp["val"]), sp["val"]["label"].to_numpy())
    preds, tables = {}, []
    for fam in FAMILIES:
        grid = None if grids is None else grids.get(fam)
        preds[fam], table = scan(fam, *xy, grid=grid, seed=seed, max_fpr=max_fpr, progress=progress)
        tables.append(table)
    return preds, pd.concat(tables, ignore_index=True)


def evaluate(preds: dict, test: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 4 (metrics at each predictor's operating point) and Table 10 (confusion counts)."""
    x, y = features(test), test["label"].to_numpy()
    rows, conf = [], []
    for fam, pred in preds.items():
        s = pred.predict_proba(x)
        rows.append({"predictor": pred.label, "threshold": pred.threshold,
                     **metrics(y, s, pred.threshold)})
        c = confusion(y, (s >= pred.threshold).astype(int))
        n0, n1 = c["TN"] + c["FP"], c["FN"] + c["TP"]
        conf.append({"predictor": pred.label, **c, "TN_pct": 100 * c["TN"] / max(n0, 1),
                     "FP_pct": 100 * c["FP"] / max(n0, 1), "FN_pct": 100 * c["FN"] / max(n1, 1),
                     "TP_pct": 100 * c["TP"] / max(n1, 1), "n_rejected": n0, "n_accepted": n1})
    return pd.DataFrame(rows), pd.DataFrame(conf)


def verify_time(n_new, n_cached, profile: str = "li2026_paper") -> np.ndarray:
    """Verification time of one request by the paper's estimator eq (19) (hardware profile)."""
    from . import hardware

    co = hardware.load_profile(profile).coefficients("verify")
    n_new, n_cached = np.asarray(n_new, float), np.asarray(n_cached, float)
    return co["a"] * n_new + co["b_compute"] * (n_new + n_cached) * n_new + co["b_read"] * n_cached + co["c"]


def round_goodput(rounds: pd.DataFrame, draft_rate: float = 50.0, prompt_len=0,
                  profile: str = "li2026_paper") -> pd.DataFrame:
    """Fig 1: per round, wasted draft tokens W = drafted - accepted and the device goodput
    (accepted + 1 committed tokens) / (drafted / draft_rate + verification time, eq (19)).

    ``rounds`` is a per-round traces frame; times are modelled (the paper's 50 tokens/s device and
    its fitted verifier), never measured, so the figure is deterministic.
    """
    if draft_rate <= 0:
        raise ValueError(f"draft_rate must be > 0 tokens/s, got {draft_rate}")
    r = rounds.copy()
    r["wasted"] = r["drafted"] - r["accepted"]
    t = r["drafted"] / draft_rate + verify_time(r["drafted"] + 1, prompt_len + r["position"], profile)
    r["goodput"] = (r["accepted"] + 1) / t
    return r


# --------------------------------------------------------------------------- Table 11
def measure_latency(predict, x, trials: int = 1000, warmup: int = 50) -> dict[str, float]:
    """Single-sample latency of ``predict(x_row)`` over ``trials`` calls, in ms (Table 11's columns)."""
    x = np.asarray(x, dtype=np.float32).reshape(-1, len(FEATURES))
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    for k in range(warmup):
        predict(x[k % len(x)][None])
    times = np.empty(trials)
    for k in range(trials):
        row = x[k % len(x)][None]
        t0 = time.perf_counter()
        predict(row)
        times[k] = time.perf_counter() - t0
    ms = times * 1e3
    return dict(mean=ms.mean(), median=float(np.median(ms)), std=ms.std(ddof=1) if trials > 1 else 0.0,
                min=ms.min(), max=ms.max(), p95=float(np.percentile(ms, 95)),
                p99=float(np.percentile(ms, 99)))


def latency_table(preds: dict, x, trials: int = 1000, extra: dict | None = None) -> pd.DataFrame:
    """Table 11 on this machine: one row per predictor (``extra``: more name -> predict callables)."""
    rows = []
    calls = {p.label: p.predict_proba for p in preds.values()}
    calls.update(extra or {})
    for name, fn in calls.items():
        rows.append({"predictor": name, **measure_latency(fn, x, trials)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- controller ablation
def controller_ablation(draft_model, target_model, prompts: list, predictor, *, window: int = 8,
                        max_new_tokens: int = 48, temperature: float = 0.0, seed: int = 0,
                        exclusive: bool = True) -> pd.DataFrame:
    """Table 5: the same prompts decoded with a fixed window (OFF) and with the controller (ON).

    Returns one row per round with ``mode`` = "OFF"/"ON" and ``prompt``; the draft acceptance rate
    of a mode is ``sampling.acceptance_rate(accepted, drafted)`` over its rows. ``predictor`` may also
    be a dict name -> predictor: one controlled run per entry, ``mode`` = its name (Theorem 1 live:
    wasted drafting per round of each predictor). ``exclusive``: the controller's stop rule (eq 25).
    """
    from . import decoding

    controlled = predictor if isinstance(predictor, dict) else {"ON": predictor}
    if "OFF" in controlled:
        raise ValueError("predictor: 'OFF' is reserved for the fixed-window run")
    frames = []
    for mode in ("OFF", *controlled):
        if mode == "OFF":
            gens = decoding.speculative_batch(draft_model, target_model, prompts, max_new_tokens,
                                              gamma=window, temperature=temperature, seed=seed)
        else:
            ctl = StopAtFirstPredictedRejection(controlled[mode], window, exclusive=exclusive)
            gens = ctl.speculative_batch(draft_model, target_model, prompts, max_new_tokens,
                                         temperature=temperature, seed=seed)
        for j, g in enumerate(gens):
            f = decoding.traces_frame(g.rounds, per="round", mode=mode, prompt=j)
            frames.append(f.drop(columns=["t_draft", "t_verify"]))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- command line
def _encode(tokenizer, text) -> list[int]:
    # the zoo was trained on plain text without special tokens (zoo.load_tokenizer)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def zoo_prompts(tokenizer, domains, n: int, max_len: int = 96, offset: int = 0) -> dict[str, list]:
    """Token-id prompts of the zoo's eval split (prompt text only; truncated to the last ``max_len``)."""
    from . import zoo

    out = {}
    for d in domains:
        texts = zoo.eval_prompts(d, n + offset)[offset:]
        out[d] = [torch.tensor(_encode(tokenizer, t)[-max_len:], dtype=torch.long) for t in texts]
    return out


def _write_gz_csv(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, float_format="%.6g", lineterminator="\n",
                 compression={"method": "gzip", "mtime": 0})
    return path


def load_trace_data(path: Path | None = None) -> pd.DataFrame:
    """The committed traces (``data/traces/li2026_traces.csv.gz``)."""
    return pd.read_csv(path or TRACES / "li2026_traces.csv.gz")


def _build_traces(args) -> pd.DataFrame:
    from . import zoo

    torch.set_num_threads(1)
    targets = args.targets or list(zoo.TARGETS)[:1]
    frames = []
    for target in targets:
        for draft in (args.drafts or list(zoo.DRAFTS)):
            d_model, t_model, tok = zoo.load_pair(draft, target)
            prompts = zoo_prompts(tok, list(zoo.DOMAINS), args.prompts)
            frames.append(generate_traces(d_model, t_model, prompts, window=args.window,
                                          max_new_tokens=args.max_new_tokens, seed=args.seed,
                                          draft=draft, target=target))
    traces = pd.concat(frames, ignore_index=True)
    _write_gz_csv(traces, TRACES / "li2026_traces.csv.gz")
    print(f"[predictor] traces: {len(traces)} drafted positions -> {TRACES / 'li2026_traces.csv.gz'}")
    return traces


def _train(args, traces: pd.DataFrame) -> dict:
    from .plotting import write_csv

    torch.set_num_threads(1)
    data = build_dataset(traces)
    preds, table = train_all(data, seed=args.seed)
    PREDICTORS.mkdir(parents=True, exist_ok=True)
    for fam, pred in preds.items():
        save(pred, PREDICTORS, fam)
    write_csv(table, PREDICTORS / "scan.csv")
    meta = dict(split_seed=args.seed, window=int(traces["drafted"].max()),  # K_max of the traces
                prompts_per_domain=int(traces.groupby(["draft", "domain", "temperature"])["prompt"].nunique().max()),
                drafts=sorted(traces["draft"].unique()), targets=sorted(traces["target"].unique()),
                features=list(FEATURES),
                samples=len(data), accepted=int(data["label"].sum()))
    (PREDICTORS / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    test = data_splits(data, args.seed)["test"]
    t4, _ = evaluate(preds, test)
    print(t4.to_string(index=False))
    return preds


def _latency(args, preds: dict | None = None) -> pd.DataFrame:
    from .plotting import write_csv

    torch.set_num_threads(1)
    preds = preds or {f: load(PREDICTORS, f) for f in FAMILIES}
    data = build_dataset(load_trace_data())
    sp = data_splits(data, json.loads((PREDICTORS / "meta.json").read_text())["split_seed"])
    x = features(sp["test"])[:1000]
    rf = preds["random_forest"].params
    skl = train_random_forest(features(sp["train"]), sp["train"]["label"].to_numpy(),
                              keep_sklearn=True, **{k: rf[k] for k in ("n_estimators", "max_depth",
                              "min_samples_split", "min_samples_leaf", "max_features", "seed")})
    table = latency_table(preds, x, args.trials,
                          extra={"Random Forest (scikit-learn object)": skl.predict_proba})
    table.insert(1, "device", "this machine's CPU (1 thread), edge-device stand-in")
    write_csv(table, PREDICTORS / "latency.csv")
    print(table.to_string(index=False))
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="WISP rejection predictor: traces, training, latency.")
    ap.add_argument("command", choices=["build", "train", "latency"])
    ap.add_argument("--seed", type=int, default=0)
    # defaults = the committed data/traces (about 95k drafted positions, 30k samples, ~4 min of traces)
    ap.add_argument("--prompts", type=int, default=16, help="eval prompts per domain (build)")
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--window", type=int, default=8, help="fixed draft window K_max of the traces")
    ap.add_argument("--drafts", nargs="*", default=None)
    ap.add_argument("--targets", nargs="*", default=None, help="default: the zoo's first target")
    ap.add_argument("--trials", type=int, default=1000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    preds = None
    if args.command == "build":
        preds = _train(args, _build_traces(args))
    elif args.command == "train":
        preds = _train(args, load_trace_data())
    _latency(args, preds)
    print(f"[predictor] {args.command} done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
