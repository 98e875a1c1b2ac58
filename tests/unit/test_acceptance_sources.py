"""Acceptance sources by name (``serving.acceptance_sources``): the traced pairs a scenario's workload names, each
with its window, stop rules and the files a sweep point reads, served from the serving layer (no paper driver
loads them), and the drivers' acceptance the very source object."""
import pytest

from specedge import paths
from specedge.experiments.edge_sd_arena import runs as arena
from specedge.experiments.li2026 import serving_runs as li2026, realpair as li2026_realpair
from _scenario_edits import edited, refused
from specedge.serving import acceptance_sources as sources, scenario
from specedge.serving.sim.twin import TraceAcceptance


def test_each_source_names_its_window_stop_rules_and_inputs():
    assert sources.windows() == {"zoo": 8, "realpair": 4}
    zoo, pair = sources.source("zoo"), sources.source("realpair")
    assert zoo.sweep_inputs == (paths.DATA / "traces" / "li2026_traces.csv.gz", paths.DATA / "predictor" / "mlp.json",
                                paths.DATA / "predictor" / "mlp.safetensors")
    assert pair.sweep_inputs[0] == paths.DATA / "traces" / "realpair_traces.csv.gz"
    assert all(p.exists() for s in (zoo, pair) for p in s.sweep_inputs)
    assert len(pair.domains) == 8 and pair.drafts == ("qwen2.5-coder-0.5b",) and zoo.target == "target-m"
    with pytest.raises(ValueError, match=r"acceptance source: expected one of \['realpair', 'zoo'\], got 'nope'"):
        sources.source("nope")


def test_the_drivers_acceptance_is_the_named_source_loaded_once():
    acc = sources.acceptance("realpair")
    assert isinstance(acc, TraceAcceptance) and set(acc.rules) == {"mlp"}
    assert li2026_realpair.acceptance() is acc and sources.acceptance("realpair") is acc
    assert li2026.acceptance() is sources.acceptance("zoo") is not acc
    assert li2026.SWEEP_INPUTS == sources.source("zoo").sweep_inputs
    assert arena.SWEEP_INPUTS == li2026_realpair.SWEEP_INPUTS == sources.source("realpair").sweep_inputs
    scn = arena.load_scenario(scale="ci")
    assert scn.pair == "realpair" and arena.PAIRS == {"realpair": 4}
    assert scenario.load("arena_default") == arena.load_scenario()          # by default any source may be named


def test_a_scenario_names_a_source_whose_window_bounds_its_gamma(tmp_path):
    msg = refused(tmp_path, "arena_default", lambda d: d["workload"].update(pair="eagle"), scenario.load)
    assert "key 'workload.pair'" in msg and "['realpair', 'zoo']" in msg
    msg = refused(tmp_path, "arena_default", lambda d: d["workload"].update(gamma=5), scenario.load)
    assert "key 'workload.gamma'" in msg and "window (4" in msg
    assert scenario.load(edited(tmp_path, "arena_default", lambda d: d["workload"].update(gamma=5, pair="zoo"))).pair == "zoo"
