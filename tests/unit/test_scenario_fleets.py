"""Fleets from scenario files (``serving.scenario.fleets``): tran2025's Table I configurations and real-run fleet as
data, exactly the values its driver built in code, and a broken fleet refused before any work, the error naming
the file and the key."""
import dataclasses

import pytest
import yaml

from specedge.experiments import tran2025
from specedge.serving import scenario, scenario_schema as schema

# Table I as the driver stated it in code (name, paper models, N, C, tokens per response, drafts)
TABLE1 = [("4 clients, C=24", "Qwen3-14B + Qwen3-0.6B", 4, 24, 50, ("draft-xs",)),
          ("4 clients, C=28", "Qwen3-14B + Qwen3-0.6B", 4, 28, 50, ("draft-xs",)),
          ("8 clients, C=16", "Qwen3-14B + Qwen3-0.6B/1.7B", 8, 16, 150, ("draft-xs", "draft-s")),
          ("8 clients, C=20", "Qwen3-14B + Qwen3-0.6B/1.7B", 8, 20, 150, ("draft-xs", "draft-s"))]


def test_table1_and_the_real_runs_fleets_are_the_values_the_driver_stated():
    assert [dataclasses.astuple(c) for c in tran2025.table1()] == TABLE1
    assert tran2025.real_config() == tran2025.table1()[0]
    assert dataclasses.astuple(tran2025.real_config("ci")) == ("2 clients, C=8", "CI stand-in", 2, 8, 16, ("draft-xs",))
    with pytest.raises(ValueError, match="scale"):
        tran2025.real_config("medium")


def _error(tmp_path, edit, run="table1") -> str:
    data = yaml.safe_load(scenario.path(tran2025.SCENARIO).read_text())
    edit(data)
    path = tmp_path / f"{tran2025.SCENARIO}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(schema.ScenarioError) as e:
        scenario.fleets(path, run)
    assert str(path) in str(e.value)
    return str(e.value)


def test_a_broken_fleet_is_named_by_file_and_key(tmp_path):
    first = "4 clients, C=24"
    msg = _error(tmp_path, lambda d: d["fleets"][first].update(max_tokens=d["fleets"][first].pop("max_new_tokens")))
    assert f"key 'fleets.{first}.max_tokens'" in msg and "'max_new_tokens'" in msg
    msg = _error(tmp_path, lambda d: d["fleets"][first].update(clients=4.5))
    assert f"key 'fleets.{first}.clients'" in msg and "a positive integer" in msg
    msg = _error(tmp_path, lambda d: d["fleets"][first].update(capacity=3))          # C < N: a client without a slot
    assert f"key 'fleets.{first}.capacity'" in msg and "at least one draft token per client (4)" in msg
    msg = _error(tmp_path, lambda d: d["fleets"][first].pop("drafts"))
    assert f"key 'fleets.{first}.drafts' missing" in msg
    msg = _error(tmp_path, lambda d: d["runs"]["table1"].append("16 clients, C=64"))
    assert "key 'runs.table1'" in msg and "'16 clients, C=64'" in msg
    assert "key 'runs.fig4' missing" in _error(tmp_path, lambda d: None, run="fig4")
    assert "key 'fleets' missing" in _error(tmp_path, lambda d: d.pop("fleets"))
    assert "key 'fleet'" in _error(tmp_path, lambda d: d.update(fleet=d.pop("fleets")))
