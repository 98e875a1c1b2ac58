"""How sure are Table 4's metrics (li2026 Sec 5.4, App B) on a small test split: intervals.

A test split of a few prompts holds a few hundred tokens, and tokens of one prompt are not
independent, so two intervals, both at the level of prompts (never tokens):

- ``bootstrap_metrics``: the fixed predictors' test metrics under a cluster bootstrap that resamples
  whole test prompts with replacement (percentile interval); ``bootstrap_statistic`` the same for any
  statistic of a frame (e.g. Table 5's acceptance gain over replayed rounds);
- ``repeated_splits``: the whole pipeline (split by prompt, scan, train, operating point on the
  validation prompts, score on the test prompts) rerun for several split seeds; the spread of the test
  metrics over seeds shows what the choice of prompts alone does.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .dataset import data_splits, features
from .metrics import metrics
from .models import evaluate, train_all

COLUMNS = ("Acc", "AUC", "Rec1", "Spec", "FPR", "BalAcc")


def _draws(groups, seed: int):
    """Endless bootstrap replicates as row indices: as many prompts as ``groups`` names, drawn with
    replacement, each with all its rows."""
    keys, inverse = np.unique(np.asarray(groups), return_inverse=True)
    if len(keys) < 2:
        raise ValueError(f"a prompt bootstrap needs at least 2 prompts, got {len(keys)}")
    members = [np.flatnonzero(inverse == k) for k in range(len(keys))]
    rng = np.random.default_rng(seed)
    while True:
        yield np.concatenate([members[k] for k in rng.integers(0, len(keys), len(keys))])


def bootstrap_statistic(frame: pd.DataFrame, groups, statistic, n: int = 2000, seed: int = 0,
                        level: float = 0.95) -> tuple[float, float, float]:
    """``statistic(frame)`` and its ``level`` percentile interval over ``n`` replicates that resample whole
    prompts (``groups``: one name per row): (value, low, high)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if len(frame) != len(groups) or n < 1:
        raise ValueError(f"groups must name every row of frame ({len(frame)}, got {len(groups)}) and n >= 1 ({n!r})")
    draws = _draws(groups, seed)
    reps = [statistic(frame.iloc[next(draws)]) for _ in range(n)]
    tail = 100 * (1 - level) / 2
    return float(statistic(frame)), float(np.percentile(reps, tail)), float(np.percentile(reps, 100 - tail))


def bootstrap_metrics(y, score, threshold: float, groups, n: int = 2000, seed: int = 0,
                      level: float = 0.95) -> pd.DataFrame:
    """Table 4's metrics (``metrics``) of one predictor with a prompt-level bootstrap interval.

    ``groups`` names each sample's prompt; each of ``n`` replicates draws as many prompts as there are,
    with replacement, and keeps all their samples. A replicate that lacks one class is redrawn (AUC
    needs both). Returns one row per metric: ``value`` (on the test split as it is), ``low``/``high``
    (the ``level`` percentile interval), ``n_prompts``, ``n_samples``.
    """
    y, score, groups = np.asarray(y), np.asarray(score, dtype=float), np.asarray(groups)
    if not (len(y) == len(score) == len(groups)) or len(y) == 0:
        raise ValueError(f"y, score and groups need one equal, non-zero length, got {len(y)}, {len(score)}, "
                         f"{len(groups)}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if n < 1:
        raise ValueError(f"n (bootstrap replicates) must be >= 1, got {n!r}")
    if y.min() == y.max():
        raise ValueError("bootstrap_metrics needs both classes in y (AUC is undefined otherwise)")
    reps = []
    for idx in _draws(groups, seed):
        if y[idx].min() == y[idx].max():
            continue
        reps.append(metrics(y[idx], score[idx], threshold))
        if len(reps) == n:
            break
    reps = pd.DataFrame(reps)
    n_prompts = len(np.unique(groups))
    point = metrics(y, score, threshold)
    tail = 100 * (1 - level) / 2
    return pd.DataFrame([dict(metric=c, value=point[c], low=float(np.percentile(reps[c], tail)),
                              high=float(np.percentile(reps[c], 100 - tail)), n_prompts=n_prompts,
                              n_samples=len(y)) for c in COLUMNS])


def bootstrap_table(preds: dict, test: pd.DataFrame, n: int = 2000, seed: int = 0,
                    level: float = 0.95) -> pd.DataFrame:
    """``bootstrap_metrics`` for every predictor of ``preds`` (family -> ``Predictor``) on ``test``
    (``build_dataset`` rows), with the same replicates for every predictor (same ``seed``)."""
    x, y = features(test), test["label"].to_numpy()
    return pd.concat([bootstrap_metrics(y, p.predict_proba(x), p.threshold, test["prompt_key"], n, seed, level)
                      .assign(predictor=p.label) for p in preds.values()], ignore_index=True)


def repeated_splits(data: pd.DataFrame, seeds: Sequence[int], grids: dict | None = None) -> pd.DataFrame:
    """Test metrics of the four families for each split seed: ``train_all(data, seed=s)`` (scan over
    ``grids``, default ``SCAN_GRIDS``) then ``evaluate`` on that seed's test prompts. One row per
    (seed, predictor) with Table 4's columns and the split's sizes."""
    rows = []
    for s in seeds:
        test = data_splits(data, s)["test"]
        preds, _ = train_all(data, seed=s, grids=grids, progress=False)
        t4, _ = evaluate(preds, test)
        rows.append(t4.assign(split_seed=s, test_prompts=test["prompt_key"].nunique(), test_samples=len(test),
                              test_rejected=int((test["label"] == 0).sum())))
    return pd.concat(rows, ignore_index=True)


def spread(table: pd.DataFrame, by: str = "predictor", level: float = 0.95) -> pd.DataFrame:
    """Per predictor and metric of ``repeated_splits`` rows: mean, min, max and the ``level`` percentile
    range over the split seeds."""
    tail = 100 * (1 - level) / 2
    rows = []
    for who, g in table.groupby(by, sort=False):
        for c in COLUMNS:
            v = g[c].to_numpy(float)
            rows.append({by: who, "metric": c, "mean": float(v.mean()), "min": float(v.min()),
                         "max": float(v.max()), "low": float(np.percentile(v, tail)),
                         "high": float(np.percentile(v, 100 - tail)), "seeds": len(v)})
    return pd.DataFrame(rows)


def side_by_side(boot: pd.DataFrame, splits: pd.DataFrame, paper: dict, order: Sequence[str] = COLUMNS
                 ) -> pd.DataFrame:
    """Table 4 beside the paper: one row per (predictor, metric), the paper's value, then per pair of
    ``boot`` (``bootstrap_table`` rows with a ``pair`` column, in order of appearance) its value and interval
    (``<pair>``, ``<pair> low``, ``<pair> high``), then the ``spread`` of ``splits`` (``repeated_splits`` rows
    of the last pair): mean, min and max over its split seeds. ``paper``: predictor -> values in ``order``."""
    pairs = list(dict.fromkeys(boot["pair"]))
    wide = boot.pivot_table(index=["predictor", "metric"], columns="pair", values=["value", "low", "high"])
    wide.columns = [f"{pair} {stat}".replace(" value", "") for stat, pair in wide.columns]
    s = spread(splits)
    label = f"{pairs[-1]}, {int(s.seeds.max())} splits"
    wide = wide.join(s.set_index(["predictor", "metric"])[["mean", "min", "max"]].add_prefix(f"{label}: "))
    index = pd.MultiIndex.from_product([list(paper), list(order)], names=["predictor", "metric"])
    out = wide.reindex(index)
    out.insert(0, "paper", [paper[p][list(order).index(m)] for p, m in index])
    cols = ["paper", *(f"{p}{s}" for p in pairs for s in ("", " low", " high")),
            *(f"{label}: {s}" for s in ("mean", "min", "max"))]
    return out[cols]
