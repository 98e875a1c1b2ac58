"""Real-run logs: what a real run records per round is self-consistent (a round contains its drafting,
queueing, verification and reply), and ``real_logs`` writes and reads them back column for column
(a swap of t_round and t_send in the run's log, or of two columns in ``save``, fails here)."""
import numpy as np
import pandas as pd
import pytest

from specedge import paths
from specedge.serving.real import real_logs
from specedge.serving.interfaces import LOG_COLUMNS

PARTS = ["t_draft", "t_queue", "t_verify", "t_send"]


def _rounds(log: pd.DataFrame) -> pd.DataFrame:
    r = log[log["event"].fillna("") == ""].dropna(subset=PARTS + ["t_round"])
    assert len(r), "no verified rounds in the log"
    return r


def _check(log: pd.DataFrame):
    r = _rounds(log)
    assert (r[PARTS] >= 0).all().all()
    # the client's wall time of a round holds every part of it (measured on two clocks: 1 us slack)
    assert (r["t_round"] + 1e-6 >= r[PARTS].sum(axis=1)).all()


def test_save_then_load_gives_every_column_back(tmp_path):
    rng = np.random.default_rng(0)
    n = 6
    df = pd.DataFrame({c: rng.random(n).round(6) for c in LOG_COLUMNS})
    df["policy"] = ["A"] * 3 + ["B"] * 3
    df["event"] = [""] * 5 + ["error: x"]
    df["system"] = "real"
    out = real_logs.save(df, tmp_path / "runs.csv")
    back = real_logs.load(out, "test")
    assert list(back) == ["A", "B"]
    got = pd.concat(back.values(), ignore_index=True)
    assert list(got.columns) == list(df.columns) + ["device", "python"]
    pd.testing.assert_frame_equal(got[df.columns], df, check_dtype=False)


def test_a_real_run_logs_rounds_that_contain_their_parts():
    from specedge.serving.policies.allocation import FixedS
    from specedge.serving.policies.batching import SyncRounds
    from specedge.serving.real.run import run_real
    from specedge.serving.workload import ClientSpec, Workload

    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 10),), capacity=4)
    log, _ = run_real(wl, SyncRounds(), FixedS(4, 1), label="parts")
    _check(log)
    assert (_rounds(log)["t_round"] > _rounds(log)["t_send"]).all()


@pytest.mark.parametrize("path", ["tran2025/real_runs.csv", "li2026/real_runs.csv"])
def test_the_committed_real_runs_are_consistent(path):
    logs = real_logs.load(paths.DATA / path, "make profiles")
    for policy, log in logs.items():
        if policy != "Centralized":                    # per-token rows of continuous batching: no rounds
            _check(log)


def test_the_pinned_runs_read_an_all_empty_event_column_as_strings(tmp_path):
    """A log with no event in any round (every pinned run) reads as empty strings, without pandas'
    fill-value warning (the validation read it as float and filled it with a string)."""
    import warnings

    from specedge.experiments import serving_validation as sv

    path = tmp_path / "runs.csv"
    pd.DataFrame(dict(paper=["li2026"] * 2, policy=["WISP"] * 2, n_clients=[1, 1], round=[0, 1],
                      event=["", ""])).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs = sv.load_real_runs(path)
    assert runs[("li2026", "WISP", 1)]["event"].tolist() == ["", ""]
