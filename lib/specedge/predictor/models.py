"""Predictor families (li2026): Models (App B, Table 9)

``train_mlp`` (3 hidden layers, torch, BCE, Adam, early stopping on validation loss),
``train_random_forest`` (scikit-learn), ``train_xgboost``, ``train_lightgbm``; each returns a
``Predictor`` whose ``predict_proba(X)`` is P(accepted). ``scan`` trains a small grid per family
(dimensions of Table 9) and keeps the best validation AUC. ``save``/``load`` use formats that
load without unpickling code: safetensors + JSON for the MLP, XGBoost's JSON, LightGBM's text
model, and, for the random forest, its tree arrays exported to safetensors and evaluated by
``Forest`` (numpy; identical probabilities to scikit-learn's ``predict_proba``).

``train_all`` scans the four families on the prompt-level split; ``evaluate`` gives Tables 4 and 10.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from .dataset import FEATURES, data_splits, features
from .metrics import _binary, confusion, metrics, operating_point, roc_auc


FAMILIES = ("mlp", "lightgbm", "random_forest", "xgboost")
LABELS = {"mlp": "MLP (3-layer)", "lightgbm": "LightGBM", "random_forest": "Random Forest",
          "xgboost": "XGBoost"}


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
              dropout: float = 0.1, max_epochs: int = 200, patience: int = 15, seed: int = 0,
              rejected_weight: float = 1.0) -> Predictor:
    """The paper's MLP (App B): 3 hidden layers, BCE loss, Adam, early stopping on validation BCE.

    ``rejected_weight`` > 1 penalises false acceptance: each rejected (label 0) sample's loss counts that
    many times in the training and the validation BCE (a weighted mean); 1 is the plain BCE."""
    x, y = _check_xy(x, y)
    x_val, y_val = _check_xy(x_val, y_val)
    if len(hidden) != 3:
        raise ValueError(f"hidden must give 3 layer widths (the paper's 3-layer MLP), got {hidden}")
    if not (np.isfinite(rejected_weight) and rejected_weight > 0):
        raise ValueError(f"rejected_weight must be a finite number > 0, got {rejected_weight!r}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = _MLP(x.shape[1], hidden, dropout)
    model.mean.copy_(torch.from_numpy(x.mean(0)))
    model.std.copy_(torch.from_numpy(x.std(0) + 1e-6))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss() if rejected_weight == 1.0 else _weighted_bce(rejected_weight)
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
    if rejected_weight != 1.0:
        params["rejected_weight"] = float(rejected_weight)
    return Predictor("mlp", model, params)


def _class_weights(y, rejected_weight: float):
    """Per-sample weights that penalise false acceptance: ``rejected_weight`` for each rejected (label 0) sample, 1
    otherwise (the trees' form of the MLP's weighted BCE); None when the weight is 1 (the library's own default)."""
    if not (np.isfinite(rejected_weight) and rejected_weight > 0):
        raise ValueError(f"rejected_weight must be a finite number > 0, got {rejected_weight!r}")
    return None if rejected_weight == 1.0 else 1.0 + (rejected_weight - 1.0) * (1.0 - np.asarray(y, float))


def _weighted_bce(rejected_weight: float):
    """BCE on logits, each rejected sample weighted ``rejected_weight``, averaged over the total weight."""
    def loss(logits, y):
        w = 1.0 + (rejected_weight - 1.0) * (1.0 - y)
        return (w * torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none")).sum() / w.sum()
    return loss


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
                        seed: int = 0, keep_sklearn: bool = False, rejected_weight: float = 1.0) -> Predictor:
    """scikit-learn random forest (no early stopping: the validation split only selects parameters).
    ``rejected_weight``: each rejected sample's weight (``_class_weights``), as the MLP's.

    The returned predictor evaluates the exported ``Forest`` (what ``save`` writes); with
    ``keep_sklearn`` it wraps scikit-learn's own object instead (for the latency comparison).
    """
    from sklearn.ensemble import RandomForestClassifier

    x, y = _check_xy(x, y)
    rf = RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth,
                                min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
                                max_features=max_features, random_state=seed, n_jobs=1)
    rf.fit(x, y, sample_weight=_class_weights(y, rejected_weight))
    params = dict(n_estimators=n_estimators, max_depth=max_depth, min_samples_split=min_samples_split,
                  min_samples_leaf=min_samples_leaf, max_features=max_features, seed=seed)
    if rejected_weight != 1.0:
        params["rejected_weight"] = float(rejected_weight)
    return Predictor("random_forest", rf if keep_sklearn else Forest.from_sklearn(rf), params)


def train_xgboost(x, y, x_val, y_val, *, n_estimators: int = 300, max_depth: int = 4,
                  learning_rate: float = 0.05, subsample: float = 0.8, colsample_bytree: float = 1.0,
                  min_child_weight: float = 1.0, gamma: float = 0.0, reg_lambda: float = 1.0,
                  reg_alpha: float = 0.0, early_stopping: int = 30, seed: int = 0, rejected_weight: float = 1.0) -> Predictor:
    """XGBoost with logistic loss and early stopping on validation log-loss (trees cut at the best); ``rejected_weight``
    weights each rejected sample (``_class_weights``) in training and in the validation loss."""
    import xgboost as xgb

    x, y = _check_xy(x, y)
    x_val, y_val = _check_xy(x_val, y_val)
    params = dict(objective="binary:logistic", eval_metric="logloss", max_depth=max_depth,
                  learning_rate=learning_rate, subsample=subsample, colsample_bytree=colsample_bytree,
                  min_child_weight=min_child_weight, gamma=gamma, reg_lambda=reg_lambda,
                  reg_alpha=reg_alpha, tree_method="hist", nthread=1, seed=seed, verbosity=0)
    booster = xgb.train(params, xgb.DMatrix(x, label=y, weight=_class_weights(y, rejected_weight)), num_boost_round=n_estimators,
                        evals=[(xgb.DMatrix(x_val, label=y_val, weight=_class_weights(y_val, rejected_weight)), "val")],
                        early_stopping_rounds=early_stopping, verbose_eval=False)
    booster = booster[: booster.best_iteration + 1]  # keep the early-stopped model only
    extra = {} if rejected_weight == 1.0 else {"rejected_weight": float(rejected_weight)}
    return Predictor("xgboost", booster, dict(params, n_estimators=n_estimators,
                                              trees=booster.num_boosted_rounds(), **extra))


def train_lightgbm(x, y, x_val, y_val, *, num_leaves: int = 15, max_depth: int = -1,
                   learning_rate: float = 0.05, n_estimators: int = 300, subsample: float = 0.8,
                   colsample_bytree: float = 1.0, min_child_samples: int = 20, reg_lambda: float = 0.0,
                   reg_alpha: float = 0.0, early_stopping: int = 30, seed: int = 0, rejected_weight: float = 1.0) -> Predictor:
    """LightGBM with binary log-loss and early stopping on the validation split; ``rejected_weight`` weights each
    rejected sample (``_class_weights``) in training and in the validation loss."""
    import lightgbm as lgb

    x, y = _check_xy(x, y)
    x_val, y_val = _check_xy(x_val, y_val)
    params = dict(objective="binary", metric="binary_logloss", num_leaves=num_leaves,
                  max_depth=max_depth, learning_rate=learning_rate, bagging_fraction=subsample,
                  bagging_freq=1 if subsample < 1 else 0, feature_fraction=colsample_bytree,
                  min_child_samples=min_child_samples, lambda_l2=reg_lambda, lambda_l1=reg_alpha,
                  num_threads=1, seed=seed, deterministic=True, force_row_wise=True, verbosity=-1)
    train = lgb.Dataset(x, label=y, weight=_class_weights(y, rejected_weight))
    booster = lgb.train(params, train, num_boost_round=n_estimators,
                        valid_sets=[lgb.Dataset(x_val, label=y_val, weight=_class_weights(y_val, rejected_weight), reference=train)],
                        callbacks=[lgb.early_stopping(early_stopping, verbose=False)])
    # re-load from its own text format at the best iteration, so in-memory == saved model
    booster = lgb.Booster(model_str=booster.model_to_string(num_iteration=booster.best_iteration))
    extra = {} if rejected_weight == 1.0 else {"rejected_weight": float(rejected_weight)}
    return Predictor("lightgbm", booster, dict(params, n_estimators=n_estimators,
                                               trees=booster.num_trees(), **extra))


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
