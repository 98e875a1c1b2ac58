"""li2026 (WISP) rejection predictor: dataset, prompt-level split, metrics vs scikit-learn, models,
safe save/load, Theorem 1 (closed form vs Monte Carlo, monotonicity, the paper's bound)."""
import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from specedge.predictor import controller, dataset, latency, metrics, models, persistence, theorem1, traces as pred_traces


def synthetic_traces(n_prompts=30, rounds=6, k=5, seed=0):
    """Per-position traces like decoding.traces_frame: acceptance depends on max_prob."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in ("code", "chat"):
        for prompt in range(n_prompts):
            for rnd in range(rounds):
                n_acc = None
                for i in range(1, k + 1):
                    conf = rng.beta(2, 1)
                    acc_here = rng.random() < conf
                    if n_acc is None and not acc_here:
                        n_acc = i - 1
                    rows.append(dict(domain=d, prompt=prompt, round=rnd, i=i, max_prob=conf,
                                     entropy=-np.log(conf) + rng.normal(0, .1), margin=conf * rng.random(),
                                     logit_std=2 + conf + rng.normal(0, .2), _acc=acc_here))
                n_acc = k if n_acc is None else n_acc
                for r in rows[-k:]:
                    r["accepted"] = r["i"] <= n_acc
                    r["first_rejected"] = r["i"] == n_acc + 1
    return pd.DataFrame(rows).drop(columns="_acc")


@pytest.fixture(scope="module")
def data():
    d = dataset.build_dataset(synthetic_traces())
    d["split"] = dataset.split_by_prompt(d, seed=0).to_numpy()
    return d


def test_dataset_drops_after_first_rejection():
    tr = synthetic_traces(n_prompts=5)
    d = dataset.build_dataset(tr)
    assert len(d) == int((tr.accepted | tr.first_rejected).sum())
    # per round: labels are 1..1 then at most one 0, at the end
    for _, g in d.groupby(["domain", "prompt", "round"]):
        labels = g.sort_values("i")["label"].tolist()
        assert labels.count(0) <= 1 and (0 not in labels or labels[-1] == 0)
    s = dataset.dataset_summary(d)
    assert s["count"].iloc[0] == len(d) and s["count"].iloc[1] + s["count"].iloc[2] == len(d)
    assert s["count"].iloc[3] == 5


def test_no_prompt_in_two_splits(data):
    per_prompt = data.groupby("prompt_key")["split"].nunique()
    assert (per_prompt == 1).all()
    assert set(data["split"]) == {"train", "val", "test"}
    # the same prompt text under another draft/temperature is still the same prompt
    tr = synthetic_traces(n_prompts=8)
    tr2 = pd.concat([tr.assign(draft="d1"), tr.assign(draft="d2")])
    d = dataset.build_dataset(tr2)
    d["split"] = dataset.split_by_prompt(d, seed=3).to_numpy()
    assert (d.groupby("prompt_key")["split"].nunique() == 1).all()


def test_split_deterministic_and_bad_input(data):
    a = dataset.split_by_prompt(data, seed=1)
    assert a.equals(dataset.split_by_prompt(data, seed=1))
    with pytest.raises(ValueError, match="fractions"):
        dataset.split_by_prompt(data, fractions=(0.5, 0.5, 0.5))


def test_metrics_agree_with_sklearn():
    rng = np.random.default_rng(1)
    y = (rng.random(500) < 0.7).astype(int)
    s = np.clip(0.3 * y + rng.random(500) * 0.8, 0, 1).round(2)  # ties on purpose
    for thr in (0.3, 0.5, 0.71):
        m = metrics.metrics(y, s, thr)
        yp = (s >= thr).astype(int)
        tn, fp, fn, tp = skm.confusion_matrix(y, yp, labels=[0, 1]).ravel()
        assert metrics.confusion(y, yp) == dict(TN=tn, FP=fp, FN=fn, TP=tp)
        assert m["Acc"] == pytest.approx(skm.accuracy_score(y, yp))
        assert m["AUC"] == pytest.approx(skm.roc_auc_score(y, s))
        assert m["Rec1"] == pytest.approx(skm.recall_score(y, yp, pos_label=1))
        assert m["Spec"] == pytest.approx(skm.recall_score(y, yp, pos_label=0))
        assert m["FPR"] == pytest.approx(fp / (fp + tn))
        assert m["BalAcc"] == pytest.approx(skm.balanced_accuracy_score(y, yp))


def test_operating_point_brute_force():
    rng = np.random.default_rng(2)
    y = (rng.random(300) < 0.75).astype(int)
    s = np.clip(0.25 * y + rng.random(300), 0, 1)
    thr = metrics.operating_point(y, s)
    best = max(metrics.metrics(y, s, t)["BalAcc"] for t in np.unique(s))
    assert metrics.metrics(y, s, thr)["BalAcc"] == pytest.approx(best)
    thr2 = metrics.operating_point(y, s, max_fpr=0.3)
    m2 = metrics.metrics(y, s, thr2)
    assert m2["FPR"] <= 0.3 + 1e-12
    ok = [metrics.metrics(y, s, t) for t in np.unique(s)]
    assert m2["Rec1"] == pytest.approx(max(m["Rec1"] for m in ok if m["FPR"] <= 0.3 + 1e-12))


@pytest.mark.parametrize("family", models.FAMILIES)
def test_train_save_load_roundtrip(family, data, tmp_path):
    tr, va = data[data.split == "train"], data[data.split == "val"]
    x, y, xv, yv = dataset.features(tr), tr.label.to_numpy(), dataset.features(va), va.label.to_numpy()
    kw = dict(max_epochs=30) if family == "mlp" else (dict(n_estimators=20) if family == "random_forest" else {})
    pred = models.TRAINERS[family](x, y, xv, yv, seed=0, **kw)
    pred.threshold = metrics.operating_point(yv, pred.predict_proba(xv))
    s = pred.predict_proba(xv)
    assert s.shape == (len(xv),) and ((s >= 0) & (s <= 1)).all()
    assert metrics.metrics(yv, s)["AUC"] > 0.6  # acceptance is learnable from max_prob by construction
    persistence.save(pred, tmp_path, family)
    back = persistence.load(tmp_path, family)
    np.testing.assert_array_equal(back.predict_proba(xv), s)
    np.testing.assert_array_equal(back.predict(xv), pred.predict(xv))
    assert back.threshold == pred.threshold and back.features == dataset.FEATURES
    # no pickle anywhere in what was written
    for f in tmp_path.iterdir():
        assert f.suffix in (".json", ".safetensors", ".txt"), f


def test_forest_export_equals_sklearn(data):
    tr = data[data.split == "train"]
    x, y = dataset.features(tr), tr.label.to_numpy()
    skl = models.train_random_forest(x, y, n_estimators=15, max_depth=None, min_samples_leaf=1, keep_sklearn=True)
    forest = models.Forest.from_sklearn(skl.model)
    np.testing.assert_allclose(forest.predict_proba(x), skl.model.predict_proba(x), rtol=0, atol=1e-12)


def test_training_is_deterministic(data):
    tr, va = data[data.split == "train"], data[data.split == "val"]
    args = (dataset.features(tr), tr.label.to_numpy(), dataset.features(va), va.label.to_numpy())
    a = models.train_mlp(*args, max_epochs=5, seed=4).predict_proba(args[2])
    b = models.train_mlp(*args, max_epochs=5, seed=4).predict_proba(args[2])
    np.testing.assert_array_equal(a, b)


def test_scan_keeps_best_auc(data):
    tr, va = data[data.split == "train"], data[data.split == "val"]
    args = (dataset.features(tr), tr.label.to_numpy(), dataset.features(va), va.label.to_numpy())
    best, table = models.scan("xgboost", *args, grid=dict(max_depth=[1, 3], learning_rate=[0.1]), progress=False)
    assert len(table) == 2
    assert metrics.roc_auc(args[3], best.predict_proba(args[2])) == pytest.approx(table.val_auc.max())
    with pytest.raises(ValueError, match="family"):
        models.scan("svm", *args)


# --- Theorem 1 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("inclusive", [False, True])
@pytest.mark.parametrize("alpha", [0.6, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]])
def test_expected_waste_closed_form_matches_monte_carlo(alpha, inclusive):
    k = 6
    for rec1, fp in [(0.8, 0.4), (0.95, 0.85), (1.0, 1.0)]:
        exact = theorem1.expected_waste(alpha, k, rec1, fp, inclusive=inclusive)
        mc = theorem1.simulate_waste(alpha, k, rec1, fp, n=200_000, seed=1, inclusive=inclusive)
        assert abs(mc["waste"] - exact) < 5 * mc["waste_se"] + 1e-9, (rec1, fp, exact, mc)


def test_theorem1_monotone_in_false_alarm_rate():
    k, alpha = 8, 0.55
    fps = np.linspace(0, 1, 11)
    for rec1 in (0.6, 0.8, 0.95):
        w = [theorem1.expected_waste(alpha, k, rec1, f) for f in fps]
        assert np.all(np.diff(w) > 0)
        assert w[0] == 0.0  # no false alarm at the first rejection: no waste (Step 1 of the proof)
        # the paper's bound (31) holds
        for f, wf in zip(fps, w):
            assert wf <= theorem1.waste_bound(alpha, k, f) + 1e-12
    # fixed window (always accept, fp = 1): W = K - L, brute force over R
    pmf = theorem1.first_rejection_pmf(alpha, k)
    brute = sum(pmf[r - 1] * (k - (r - 1)) for r in range(1, k + 1))
    assert theorem1.expected_waste(alpha, k, 1.0, 1.0) == pytest.approx(brute)


def test_theorem_inputs_checked():
    with pytest.raises(ValueError, match="k_max"):
        theorem1.expected_waste(0.5, 0, 0.9, 0.5)
    with pytest.raises(ValueError, match="fp"):
        theorem1.expected_waste(0.5, 4, 0.9, 1.5)
    with pytest.raises(ValueError, match="alpha"):
        theorem1.simulate_waste(1.2, 4, 0.9, 0.5)


def test_pearson_and_bins(data):
    r = dataset.pearson_table(data)
    got = r.set_index("statistic")["pearson_r"]
    assert got["max_prob"] == pytest.approx(np.corrcoef(data.max_prob, data.label)[0, 1])
    assert got["max_prob"] > 0 and got["entropy"] < 0
    b = dataset.binned_acceptance(data, "max_prob", bins=5)
    assert len(b) == 5 and b["n"].sum() == len(data)
    assert b["acceptance"].iloc[-1] > b["acceptance"].iloc[0]


def test_latency_function_shape():
    out = latency.measure_latency(lambda x: x.sum(), np.zeros((3, 5)), trials=20, warmup=2)
    assert set(out) == {"mean", "median", "std", "min", "max", "p95", "p99"}
    assert out["min"] <= out["median"] <= out["max"] and out["p95"] <= out["p99"] <= out["max"]


def test_fpr_at_rec1_brute_force():
    rng = np.random.default_rng(5)
    y = (rng.random(400) < 0.6).astype(int)
    s = np.clip(0.3 * y + rng.random(400), 0, 1).round(3)  # ties on purpose
    for target in (0.25, 0.5, 0.8, 0.95, 1.0):
        ok = [t for t in np.unique(s) if metrics.metrics(y, s, t)["Rec1"] >= target - 1e-12]
        assert metrics.fpr_at_rec1(y, s, target) == pytest.approx(metrics.metrics(y, s, max(ok))["FPR"])
    # a score equal to the label separates perfectly: no false alarm at any coverage
    assert metrics.fpr_at_rec1(y, y.astype(float), 1.0) == 0.0
    with pytest.raises(ValueError, match="rec1"):
        metrics.fpr_at_rec1(y, s, 0.0)


def test_position_acceptance_counts_full_window_rounds_by_hand():
    # three full-window rounds (k_max = 3) accepting 3, 1 and 0 drafts, one short round that is ignored
    rows = []
    for rnd, (acc, drafted) in enumerate([(3, 3), (1, 3), (0, 3), (2, 2)]):
        rows += [dict(prompt=0, round=rnd, i=i, drafted=drafted, round_accepted=acc, accepted=int(i <= acc))
                 for i in range(1, drafted + 1)]
    alpha = pred_traces.position_acceptance(pd.DataFrame(rows), 3)
    assert np.allclose(alpha, [2 / 3, 1 / 2, 1 / 1])        # reached 3, 2, 1 rounds; passed 2, 1, 1
    assert np.isnan(pred_traces.position_acceptance(pd.DataFrame(rows).query("drafted == 2"), 3)).all()


def test_accept_all_is_the_metrics_of_predicting_every_token_accepted():
    y = np.array([1, 1, 0, 1, 0, 1, 1, 1])
    m = metrics.metrics(y, np.ones_like(y, float), 0.5)
    null = metrics.accept_all(y.mean())
    assert null == {k: pytest.approx(m[k]) for k in null}
    with pytest.raises(ValueError, match="accepted_share"):
        metrics.accept_all(1.5)


def test_committed_split_builds_the_data_set_and_refuses_a_meta_without_its_seed(capsys):
    traces = synthetic_traces(n_prompts=10, rounds=2)
    data, splits = dataset.committed_split(traces, {"split_seed": 3, "split_prompts": {"test": ["code/1"]}})
    assert len(data) == len(dataset.build_dataset(traces)) and set(splits) == {"train", "val", "test"}
    assert sum(len(v) for v in splits.values()) == len(data)
    assert "test prompts: code/1" in capsys.readouterr().out
    with pytest.raises(ValueError, match="split_seed"):
        dataset.committed_split(traces, {})


def test_replayed_rounds_gives_both_modes_and_the_passes_of_the_cut():
    replay = pd.DataFrame(dict(domain=["code", "code"], prompt=[0, 0], round=[0, 1], drafted_OFF=[4, 4],
                               accepted_OFF=[4, 1], drafted_ON=[4, 2], accepted_ON=[4, 1]))
    traces = pd.DataFrame(dict(domain=["code"] * 4, prompt=[0] * 4, round=[0, 0, 1, 1], position=[10, 11, 14, 15]))
    rounds, keys = controller.replayed_rounds(replay, traces)
    assert keys == ["domain", "prompt", "round"]
    on = rounds[rounds["mode"] == "ON"].set_index("round")
    off = rounds[rounds["mode"] == "OFF"].set_index("round")
    assert off.passes.tolist() == [4, 4] and off.position.tolist() == [10, 14]
    # a cut at 2 of 4 drafts took one more pass (the one whose logits it judged); a full window none more
    assert on.drafted.tolist() == [4, 2] and on.passes.tolist() == controller.draft_passes(np.array([4, 2]), np.array([4, 4])).tolist()
    with pytest.raises(ValueError, match="position"):
        controller.replayed_rounds(replay, traces.drop(columns="position"))
