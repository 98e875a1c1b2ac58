"""WISP rejection-predictor dataset (li2026): Dataset (li2026 Sec 4.1, App B "Training dataset generation")

``build_dataset(traces)`` keeps, per speculative round, the accepted drafted positions (label 1) and
the first rejected one (label 0); positions after the first rejection are dropped (the verifier
stops there, so they affect neither L nor W). Features ``FEATURES``: the four draft-logit statistics
of Sec 3.3 (confidence ``max_prob``, ``entropy``, top-1/top-2 ``margin``, ``logit_std``, computed by
``sampling.logit_stats``) and, as the fifth dimension of the paper's "5-D feature vector" (App B;
the paper names only four), the 1-based drafted position ``i`` in the window: it is known on the
device before verification and carries the decay of per-position acceptance. ``split_by_prompt``
assigns whole prompts to train/validation/test, never single tokens.

Also the per-statistic views of Figs 2-3 (``pearson_table``, ``binned_acceptance``) and the
prompt-level splits the committed predictors were trained on (``data_splits``, ``test_prompts``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd


STATS = ("max_prob", "entropy", "margin", "logit_std")
FEATURES = (*STATS, "i")


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


def statistic_views(data: pd.DataFrame, by: Sequence[str] = ("draft",), bins: int = 10
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figs 2-3 for both sampling temperatures together (``both``) and apart (``T = 0 (greedy)``,
    ``T = 1``): acceptance per decile of each statistic (``binned_acceptance``, pooled) and the Pearson r
    of each statistic with the label, pooled (``by`` columns = ``"all"``) and per ``by`` group."""
    temps = {"both": data, "T = 0 (greedy)": data[data.temperature == 0], "T = 1": data[data.temperature == 1]}
    fig2 = pd.concat([binned_acceptance(g, s, bins=bins).assign(temperature=name)
                      for name, g in temps.items() for s in STATS], ignore_index=True)
    fig3 = pd.concat([pd.concat([pearson_table(g).assign(**{b: "all" for b in by}), pearson_table(g, by=list(by))])
                      .assign(temperature=name) for name, g in temps.items()], ignore_index=True)
    return fig2, fig3


def data_splits(data: pd.DataFrame, seed: int) -> dict[str, pd.DataFrame]:
    """``{"train", "val", "test"}`` frames of ``build_dataset`` output, split by prompt with ``seed``."""
    split = split_by_prompt(data, seed=seed).to_numpy()
    return {name: data[split == name] for name in ("train", "val", "test")}


def committed_split(traces: pd.DataFrame, meta) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The data set of ``traces`` and the prompt split a committed predictor was trained on (its ``meta``:
    ``split_seed``, and ``split_prompts`` naming the test prompts), each split's size printed."""
    if "split_seed" not in meta:
        raise ValueError(f"meta: needs 'split_seed' (a committed predictor's meta.json), got keys {sorted(meta)}")
    data = build_dataset(traces)
    splits = data_splits(data, meta["split_seed"])
    print({k: f"{len(v)} samples ({int((v.label == 0).sum())} rejected), {v.prompt_key.nunique()} prompts" for k, v in splits.items()})
    print("test prompts:", ", ".join(meta["split_prompts"]["test"]))
    return data, splits


def test_prompts(data: pd.DataFrame, seed: int, per_domain: int | None = None) -> dict[str, list[int]]:
    """Prompt indices per domain of the test split (the controller is run live on unseen prompts)."""
    test = data_splits(data, seed)["test"]
    out = {}
    for domain, g in test.groupby("domain"):
        ids = sorted(int(p) for p in g["prompt"].unique())
        out[domain] = ids if per_domain is None else ids[:per_domain]
    return out
