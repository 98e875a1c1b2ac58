"""Committed real-run logs (``serving.real.real_logs``): written tagged with the host, read back column for column
(an all-empty event column stays text), grouped by policy in file order, and a missing file names its step."""
import pandas as pd
import pytest

from specedge.host import cpu_name
from specedge.serving.real import real_logs


def _log():
    return pd.DataFrame(dict(policy=["B", "B", "A"], round=[0, 1, 0], t_round=[0.1234567, 0.5, 2.0],
                             t_send=[0.01, 0.02, 0.03], event=["", "", ""]))


def test_save_tags_the_host_rounds_to_microseconds_and_reads_back(tmp_path):
    out = real_logs.save(_log(), tmp_path / "deep" / "runs.csv")
    assert out == tmp_path / "deep" / "runs.csv"
    back = real_logs.read(out, "cmd")
    assert list(back.columns) == ["policy", "round", "t_round", "t_send", "event", "device", "python"]
    assert back.t_round.tolist() == [0.123457, 0.5, 2.0]          # rounded to 6 decimals, not truncated
    assert back.t_send.tolist() == [0.01, 0.02, 0.03]              # t_round and t_send not swapped
    assert (back.device == cpu_name()).all()
    # an all-empty event column reads as text "" (pandas would read it as NaN floats)
    assert back.event.tolist() == ["", "", ""] and back.event.dtype == object


def test_load_groups_by_policy_in_file_order_with_fresh_indices(tmp_path):
    df = _log()
    df.loc[2, "event"] = "error: x"
    out = real_logs.save(df, tmp_path / "runs.csv")
    by = real_logs.load(out, "cmd")
    assert list(by) == ["B", "A"]                                    # file order, not sorted
    assert by["A"].index.tolist() == [0] and by["A"].event.tolist() == ["error: x"]
    assert by["B"]["round"].tolist() == [0, 1]


def test_a_missing_log_names_the_step_that_measures_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"runs.csv is missing: `make profiles` measures it \(python -m x\)"):
        real_logs.read(tmp_path / "runs.csv", "python -m x")


def test_measure_main_runs_the_full_scale_measurement_with_the_seed_and_saves_it(tmp_path, capsys):
    called = []

    def measure(scale, seed):
        called.append((scale, seed))
        return _log()

    out = tmp_path / "m.csv"
    assert real_logs.measure_main("d", measure, tmp_path / "default.csv", ["measure", "--out", str(out), "--seed", "3"]) == 0
    assert called == [("full", 3)] and out.is_file() and not (tmp_path / "default.csv").exists()
    assert "3 rows -> " in capsys.readouterr().out
    assert real_logs.measure_main("d", measure, tmp_path / "default.csv", ["measure"]) == 0
    assert called[-1] == ("full", 0) and (tmp_path / "default.csv").is_file()
    with pytest.raises(SystemExit):
        real_logs.measure_main("d", measure, out, ["plot"])
