"""li2026 Table 4's intervals on a small test split: the cluster bootstrap resamples whole prompts, the
repeated splits rerun the pipeline per split seed; and the real pair's committed traces and predictors."""
import json

import numpy as np
import pandas as pd
import pytest

from specedge.predictor import controller, dataset, persistence, traces
from specedge.predictor import intervals

from test_predictor import synthetic_traces


def test_bootstrap_resamples_prompts_not_tokens():
    # prompt A ranks perfectly (AUC 1), prompt B exactly backwards (AUC 0): drawing prompts, a replicate
    # is A twice (1), B twice (0) or one of each, so the interval spans almost [0, 1]; drawing tokens
    # would keep it near the pooled 0.5
    y = np.array([1, 1, 0, 0] * 2)
    score = np.array([0.9, 0.8, 0.2, 0.1, 0.2, 0.1, 0.9, 0.8])
    groups = np.array(["A"] * 4 + ["B"] * 4)
    t = intervals.bootstrap_metrics(y, score, 0.5, groups, n=400, seed=0).set_index("metric")
    assert t.loc["AUC", "value"] == pytest.approx(0.5)
    assert t.loc["AUC", "low"] == 0.0 and t.loc["AUC", "high"] == 1.0
    assert (t.n_prompts == 2).all() and (t.n_samples == 8).all()


def test_bootstrap_of_identical_prompts_collapses_to_the_point_and_is_seeded():
    y = np.array([1, 1, 1, 0] * 5)
    score = np.array([0.9, 0.7, 0.4, 0.3] * 5)
    groups = np.repeat(np.arange(5), 4)
    t = intervals.bootstrap_metrics(y, score, 0.5, groups, n=200, seed=3)
    assert np.allclose(t.low, t.value) and np.allclose(t.high, t.value)
    rng = np.random.default_rng(1)
    y2, s2 = rng.integers(0, 2, 200), rng.random(200)
    g2 = np.repeat(np.arange(20), 10)
    a = intervals.bootstrap_metrics(y2, s2, 0.5, g2, n=300, seed=7)
    pd.testing.assert_frame_equal(a, intervals.bootstrap_metrics(y2, s2, 0.5, g2, n=300, seed=7))
    assert (a.low <= a.value + 1e-12).all() and (a.value <= a.high + 1e-12).all() and (a.low < a.high).all()


def test_bootstrap_inputs_checked():
    with pytest.raises(ValueError, match="at least 2 prompts"):
        intervals.bootstrap_metrics([1, 0], [0.9, 0.1], 0.5, ["a", "a"])
    with pytest.raises(ValueError, match="equal"):
        intervals.bootstrap_metrics([1, 0], [0.9], 0.5, ["a", "b"])
    with pytest.raises(ValueError, match="level"):
        intervals.bootstrap_metrics([1, 0], [0.9, 0.1], 0.5, ["a", "b"], level=1.0)


def test_repeated_splits_rerun_the_pipeline_per_seed():
    data = dataset.build_dataset(synthetic_traces(n_prompts=12, rounds=3))
    tiny = dict(mlp=dict(max_epochs=[3]), random_forest=dict(n_estimators=[5]),
                xgboost=dict(n_estimators=[5]), lightgbm=dict(n_estimators=[5]))
    t = intervals.repeated_splits(data, [0, 1], grids=tiny)
    assert len(t) == 8 and sorted(t.split_seed.unique()) == [0, 1]
    for s, g in t.groupby("split_seed"):
        test = dataset.data_splits(data, s)["test"]
        assert (g.test_samples == len(test)).all() and (g.test_prompts == test.prompt_key.nunique()).all()
    assert t.AUC.between(0, 1).all()
    s = intervals.spread(t).set_index(["predictor", "metric"])
    assert len(s) == 4 * len(intervals.COLUMNS) and (s.seeds == 2).all()
    assert (s["min"] <= s["mean"] + 1e-12).all() and (s["mean"] <= s["max"] + 1e-12).all()


def test_committed_realpair_predictors_were_trained_on_the_committed_traces():
    """data/predictor/realpair (``python -m specedge.predictor realpair``) names the sha256 of the trace
    file it was trained on: a regenerated trace file without retraining fails here."""
    import hashlib

    meta = json.loads((persistence.REALPAIR / "meta.json").read_text())
    assert meta["traces_sha256"] == hashlib.sha256(traces.REALPAIR_TRACES.read_bytes()).hexdigest()
    data = dataset.build_dataset(traces.load_realpair_traces())
    assert meta["samples"] == len(data) and meta["accepted"] == int(data.label.sum())
    split = {k: sorted(v.prompt_key.unique()) for k, v in dataset.data_splits(data, meta["split_seed"]).items()}
    assert split == meta["split_prompts"]
    rep = pd.read_csv(persistence.REALPAIR / "repeated_splits.csv")
    assert sorted(rep.split_seed.unique()) == list(range(meta["split_seeds"]))


class _Const:
    """A stand-in predictor: P(accepted) from a function of the features, threshold 0.5."""
    threshold = 0.5

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return np.array([self.fn(row) for row in x])


def _rounds():
    # two rounds of a window of 4: the first accepts 2 (rejects position 3), the second accepts all 4
    rows = []
    for rnd, acc in ((0, 2), (1, 4)):
        for i in range(1, 5):
            rows.append(dict(domain="code", temperature=1.0, prompt=0, round=rnd, i=i, max_prob=0.9, entropy=0.1,
                             margin=0.5, logit_std=2.0, round_accepted=acc))
    return pd.DataFrame(rows)


def test_replay_stop_rule_by_hand():
    t = _rounds()
    never = controller.replay_stop_rule(t, _Const(lambda r: 1.0))            # never flags: ON is the fixed window
    assert (never.drafted_ON == never.drafted_OFF).all() and (never.accepted_ON == never.accepted_OFF).all()
    always = controller.replay_stop_rule(t, _Const(lambda r: 0.0))           # flags position 1: nothing drafted
    assert (always.drafted_ON == 0).all() and (always.accepted_ON == 0).all()
    at3 = controller.replay_stop_rule(t, _Const(lambda r: 0.0 if r[4] == 3 else 1.0))   # flags position 3 (feature i)
    assert at3.drafted_ON.tolist() == [2, 2] and at3.accepted_ON.tolist() == [2, 2]
    assert at3.drafted_OFF.tolist() == [4, 4] and at3.accepted_OFF.tolist() == [2, 4]
    incl = controller.replay_stop_rule(t, _Const(lambda r: 0.0 if r[4] == 3 else 1.0), exclusive=False)
    assert incl.drafted_ON.tolist() == [3, 3] and incl.accepted_ON.tolist() == [2, 3]
    shuffled = controller.replay_stop_rule(t.sample(frac=1, random_state=0), _Const(lambda r: 0.0 if r[4] == 3 else 1.0))
    pd.testing.assert_frame_equal(shuffled, at3)                    # positions are put in order first
    with pytest.raises(ValueError, match="round_accepted"):
        controller.replay_stop_rule(t.drop(columns="round_accepted"), _Const(lambda r: 1.0))


def test_bootstrap_statistic_resamples_prompts():
    f = pd.DataFrame(dict(x=[0.0, 0.0, 1.0, 1.0]))
    value, low, high = intervals.bootstrap_statistic(f, ["a", "a", "b", "b"], lambda g: g.x.mean(), n=300, seed=0)
    assert value == 0.5 and low == 0.0 and high == 1.0             # a replicate is a twice, b twice or both
    same = intervals.bootstrap_statistic(f, ["a", "b", "c", "d"], lambda g: len(g), n=50)
    assert same == (4.0, 4.0, 4.0)
    with pytest.raises(ValueError, match="every row"):
        intervals.bootstrap_statistic(f, ["a", "b"], lambda g: 0.0)


def test_side_by_side_puts_the_paper_each_pair_and_the_split_spread_in_columns():
    boot = pd.DataFrame([dict(predictor=p, metric=m, value=v, low=v - 0.1, high=v + 0.1, pair=pair)
                         for pair, base in (("zoo", 0.6), ("real", 0.7)) for p in ("A", "B")
                         for m, v in zip(intervals.COLUMNS, np.full(6, base))])
    splits = pd.DataFrame([dict(predictor=p, split_seed=s, **{m: 0.7 + 0.01 * s for m in intervals.COLUMNS})
                           for s in range(3) for p in ("A", "B")])
    paper = {"B": tuple(range(6)), "A": tuple(range(10, 16))}
    t = intervals.side_by_side(boot, splits, paper)
    assert list(t.columns) == ["paper", "zoo", "zoo low", "zoo high", "real", "real low", "real high",
                               "real, 3 splits: mean", "real, 3 splits: min", "real, 3 splits: max"]
    assert list(t.index[:2]) == [("B", "Acc"), ("B", "AUC")] and len(t) == 12
    assert t.loc[("A", "FPR"), "paper"] == 14 and t.loc[("A", "FPR"), "zoo high"] == pytest.approx(0.7)
    assert t.loc[("B", "AUC"), "real, 3 splits: max"] == pytest.approx(0.72)
