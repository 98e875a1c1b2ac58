"""A missing or stale committed input of the predictors is an error that names the file and the command that
builds it, before any work (li2026's predictors and traces); Table 11's latency harness calls what it times."""
import shutil

import numpy as np
import pytest

from specedge.predictor import latency, persistence, traces
from specedge.zoo import REAL


def test_the_committed_realpair_predictors_match_their_traces():
    meta, tr = persistence.load_realpair()
    assert meta["traces_sha256"] and set(tr.draft) == {REAL[0]} and set(tr.target) == {REAL[1]}


def test_realpair_traces_changed_since_training_are_refused(tmp_path, monkeypatch):
    changed = tmp_path / "realpair_traces.csv.gz"
    changed.write_bytes(traces.REALPAIR_TRACES.read_bytes() + b"\0")
    monkeypatch.setattr(persistence, "REALPAIR_TRACES", changed)
    monkeypatch.setattr(persistence.paths, "ROOT", tmp_path)
    with pytest.raises(ValueError, match="changed since data/predictor/realpair was trained: rerun "
                                         "`python -m specedge.predictor realpair`"):
        persistence.load_realpair()


def test_missing_realpair_predictors_name_the_command(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "predictor" / "realpair"
    folder.mkdir(parents=True)
    shutil.copy(persistence.REALPAIR / "meta.json", folder)
    monkeypatch.setattr(persistence, "REALPAIR", folder)
    monkeypatch.setattr(persistence, "REALPAIR_TRACES", tmp_path / "data" / "traces" / "realpair_traces.csv.gz")
    monkeypatch.setattr(persistence.paths, "ROOT", tmp_path)
    with pytest.raises(FileNotFoundError, match="'data/predictor/realpair/repeated_splits.csv'.*"
                                                "`python -m specedge.predictor realpair` trains them"):
        persistence.load_realpair()


def test_missing_zoo_predictors_name_make_zoo(tmp_path, monkeypatch):
    assert persistence.require_committed()["split_seed"] is not None
    monkeypatch.setattr(persistence, "PREDICTORS", tmp_path)
    with pytest.raises(FileNotFoundError, match="meta.json is missing: `make zoo` builds it"):
        persistence.require_committed()


def test_realpair_traces_missing_or_without_a_column_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="realpair_card live"):
        traces.load_realpair_traces(tmp_path / "none.csv.gz")
    f = tmp_path / "t.csv"
    traces.load_realpair_traces().drop(columns=["q", "draft", "target"]).head(5).to_csv(f, index=False)
    with pytest.raises(ValueError, match="missing trace columns \\['q'\\]"):
        traces.load_realpair_traces(f)


def test_measure_latency_calls_the_predictor_on_each_row_in_turn_and_orders_its_summary():
    seen = []
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    out = latency.measure_latency(lambda row: seen.append(row.copy()), x, trials=5, warmup=2)
    assert len(seen) == 7 and all(r.shape == (1, 5) for r in seen)
    assert [int(r[0, 0]) for r in seen] == [0, 5, 0, 5, 0, 5, 0]          # rows cycle, warm-up included
    assert out["min"] <= out["median"] <= out["p95"] <= out["p99"] <= out["max"] and out["std"] >= 0
    assert latency.measure_latency(lambda row: None, x, trials=1, warmup=0)["std"] == 0.0
    with pytest.raises(ValueError, match="trials must be >= 1"):
        latency.measure_latency(lambda row: None, x, trials=0)
    t = latency.latency_table({}, x, trials=3, extra={"noop": lambda row: None, "sum": lambda row: row.sum()})
    assert t.predictor.tolist() == ["noop", "sum"] and set(t.columns) >= {"mean", "p99"}
