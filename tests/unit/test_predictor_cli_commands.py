"""``python -m specedge.predictor``'s commands (``predictor.cli``) on synthetic traces, with the slow steps (model
decoding, the hyper-parameter scan, repeated splits, timing) replaced: what each command writes, and from what."""
import hashlib
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from specedge import paths, zoo
from specedge.zoo import corpus
from specedge.predictor import cli
from specedge.predictor.dataset import FEATURES, build_dataset, data_splits, features
from specedge.predictor.models import FAMILIES
from specedge.predictor.operating import trainer_kwargs
from specedge.predictor.persistence import PREDICTORS, load
from test_predictor import synthetic_traces


def _traces():
    """code: 8 prompts, chat: 5 (the largest per draft x domain x temperature is 8); windows of 4 and 5."""
    t = synthetic_traces(n_prompts=8, rounds=3, k=5, seed=1)
    t = t[(t.domain == "code") | (t.prompt < 5)].reset_index(drop=True)
    return t.assign(draft="d1", target="t1", temperature=0.0, drafted=np.where(t.prompt % 2 == 1, 5, 4))


@pytest.fixture(scope="module")
def committed():
    return {f: load(PREDICTORS, f) for f in FAMILIES}


def _args(**kw):
    base = dict(seed=0, prompts=2, max_new_tokens=12, window=4, drafts=None, targets=None, pairs=["zoo", "realpair"],
                trials=3, split_seeds=2)
    return SimpleNamespace(**{**base, **kw})


def test_train_writes_the_predictors_scan_and_a_meta_read_off_the_traces(committed, tmp_path, monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(cli, "train_all", lambda data, seed: (seen.update(n=len(data), seed=seed), (committed, pd.DataFrame(dict(auc=[0.7]))))[1])
    traces = _traces()
    preds = cli._train(_args(seed=3), traces, tmp_path / "out", note="x")
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    data = build_dataset(traces)
    assert seen == dict(n=len(data), seed=3) and preds is committed
    assert meta["window"] == 5 and meta["prompts_per_domain"] == 8 and meta["split_seed"] == 3 and meta["note"] == "x"
    assert meta["samples"] == len(data) and meta["accepted"] == int(traces.accepted.sum()) < len(data)
    assert meta["drafts"] == ["d1"] and meta["targets"] == ["t1"] and meta["features"] == list(FEATURES)
    assert all((tmp_path / "out" / f"{f}.json").exists() for f in FAMILIES)
    assert pd.read_csv(tmp_path / "out" / "scan.csv").auc.tolist() == [0.7]
    assert "Rec1" in capsys.readouterr().out                                # Table 4 of the test split printed


def test_build_traces_decodes_each_draft_with_the_first_target_by_default(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(zoo, "load_pair", lambda d, t: (f"model {d}", f"model {t}", "tok"))
    monkeypatch.setattr(cli, "zoo_prompts", lambda tok, domains, n: dict(domains=domains, n=n))
    monkeypatch.setattr(cli, "generate_traces", lambda dm, tm, prompts, **kw: (calls.append((dm, tm, prompts, kw)),
                                                                                pd.DataFrame(dict(x=[len(calls)])))[1])
    monkeypatch.setattr(cli, "TRACES", tmp_path)
    out = cli._build_traces(_args(drafts=["draft-xs", "draft-s"]))
    t0 = list(zoo.TARGETS)[0]
    assert [(c[0], c[1]) for c in calls] == [("model draft-xs", f"model {t0}"), ("model draft-s", f"model {t0}")]
    assert calls[0][2] == dict(domains=list(corpus.DOMAINS), n=2)
    assert calls[1][3] == dict(window=4, max_new_tokens=12, seed=0, draft="draft-s", target=t0)
    assert out.x.tolist() == [1, 2] and pd.read_csv(tmp_path / "li2026_traces.csv.gz").x.tolist() == [1, 2]
    calls.clear()
    cli._build_traces(_args(targets=["target-l"]))
    assert [c[3]["draft"] for c in calls] == list(zoo.DRAFTS) and {c[3]["target"] for c in calls} == {"target-l"}


def test_realpair_records_the_traces_hash_and_the_prompt_split(committed, tmp_path, monkeypatch):
    traces = _traces()
    monkeypatch.setattr(cli, "load_realpair_traces", lambda: traces)
    monkeypatch.setattr(cli, "train_all", lambda data, seed: (committed, pd.DataFrame(dict(auc=[0.5]))))
    monkeypatch.setattr(cli, "REALPAIR", tmp_path)
    monkeypatch.setattr(cli, "repeated_splits", lambda data, seeds: pd.DataFrame(dict(seed=list(seeds))))
    cli._realpair(_args(seed=1, split_seeds=3))
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["traces_file"] == "data/traces/realpair_traces.csv.gz" and meta["split_seeds"] == 3
    assert meta["traces_sha256"] == hashlib.sha256((paths.DATA / "traces" / "realpair_traces.csv.gz").read_bytes()).hexdigest()
    split = meta["split_prompts"]
    # 13 prompts: round(0.7 x 13) = 9 train, round(0.15 x 13) = 2 val, the other 2 test; each prompt in one split
    assert [len(split[k]) for k in ("train", "val", "test")] == [9, 2, 2]
    assert sorted(sum(split.values(), [])) == sorted(build_dataset(traces).prompt_key.unique())
    assert pd.read_csv(tmp_path / "repeated_splits.csv").seed.tolist() == [0, 1, 2]


def test_operating_evaluates_each_pair_in_its_committed_configuration(committed, tmp_path, monkeypatch, capsys):
    zoo_dir, real_dir = tmp_path / "zoo", tmp_path / "real"
    zoo_dir.mkdir(), real_dir.mkdir()
    monkeypatch.setattr(cli, "PREDICTORS", zoo_dir)
    monkeypatch.setattr(cli, "REALPAIR", real_dir)
    monkeypatch.setattr(cli, "load", lambda where, f: committed[f])
    monkeypatch.setattr(cli, "load_trace_data", lambda: _traces())
    monkeypatch.setattr(cli, "load_realpair_traces", lambda: _traces().head(40))
    seen = []

    def points(data, configs, seeds):
        seen.append((len(data), configs, list(seeds)))
        return pd.DataFrame(dict(predictor=["MLP", "MLP"], Rec1=[0.9, 0.8], FPR=[0.5, 0.3], BalAcc=[0.7, 0.75]))

    monkeypatch.setattr(cli, "paper_operating_points", points)
    cli._operating(_args(pairs=["realpair", "zoo"], split_seeds=4))
    assert [s[0] for s in seen] == [len(build_dataset(_traces().head(40))), len(build_dataset(_traces()))]
    assert all(s[1] == {f: trainer_kwargs(committed[f]) for f in FAMILIES} and s[2] == [0, 1, 2, 3] for s in seen)
    for d in (zoo_dir, real_dir):
        assert pd.read_csv(d / "operating_points.csv").FPR.tolist() == [0.5, 0.3]
    out = capsys.readouterr().out
    assert "0.4" in out and "4 split seeds" in out                            # the FPR's mean over the seeds


def test_latency_times_the_test_prompts_first_thousand_rows_and_the_sklearn_forest(committed, tmp_path, monkeypatch):
    traces = _traces()
    monkeypatch.setattr(cli, "PREDICTORS", tmp_path)
    (tmp_path / "meta.json").write_text(json.dumps(dict(split_seed=2)))
    monkeypatch.setattr(cli, "load_trace_data", lambda: traces)
    seen = {}

    def table(preds, x, trials, extra):
        seen.update(preds=preds, x=x, trials=trials, extra=extra)
        return pd.DataFrame(dict(predictor=["MLP"], median_us=[12.5]))

    monkeypatch.setattr(cli, "latency_table", table)
    out = cli._latency(_args(trials=7), committed)
    test = data_splits(build_dataset(traces), 2)["test"]
    np.testing.assert_array_equal(seen["x"], features(test)[:1000])
    assert seen["trials"] == 7 and seen["preds"] is committed and list(seen["extra"]) == ["Random Forest (scikit-learn object)"]
    p = seen["extra"]["Random Forest (scikit-learn object)"](seen["x"])
    assert p.shape == (len(test),) and ((p >= 0) & (p <= 1)).all()
    assert list(out.columns) == ["predictor", "device", "median_us"] and out.device.iloc[0].startswith("this machine's CPU")
    assert pd.read_csv(tmp_path / "latency.csv").median_us.tolist() == [12.5]


@pytest.mark.parametrize("command, want", [
    ("build", ["build_traces", "train", "latency given"]),
    ("train", ["load", "train", "latency given"]),
    ("latency", ["latency None"]),
    ("realpair", ["realpair"]),
    ("operating", ["operating"]),
])
def test_main_runs_each_commands_steps(command, want, monkeypatch, capsys):
    done = []
    monkeypatch.setattr(cli, "_build_traces", lambda args: (done.append("build_traces"), "traces")[1])
    monkeypatch.setattr(cli, "load_trace_data", lambda: (done.append("load"), "traces")[1])
    monkeypatch.setattr(cli, "_train", lambda args, traces: (done.append("train"), {"mlp": 1})[1])
    monkeypatch.setattr(cli, "_latency", lambda args, preds: done.append(f"latency {'given' if preds else None}"))
    monkeypatch.setattr(cli, "_realpair", lambda args: done.append("realpair"))
    monkeypatch.setattr(cli, "_operating", lambda args: done.append("operating"))
    assert cli.main([command]) == 0
    assert done == want and f"[predictor] {command} done" in capsys.readouterr().out
