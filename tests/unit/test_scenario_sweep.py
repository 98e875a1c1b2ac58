"""WISP's serving sweeps as scenario data (``data/scenarios/li2026_serving.yaml``, ``serving.scenario.sweep_scenario``):
its systems, readings, targets and setting come out as the paper's driver runs them; a bad file is refused before any
work, the error naming the file and the key; a setting's values and a point's names are checked against the scenario;
the open settings' table speaks the scenario's keys."""
import math
import pickle

import pytest

from _scenario_edits import edited, refused
from specedge import sweep
from specedge.experiments.li2026 import serving_runs as ex
from specedge.serving import policies, scenario, scenario_schema as schema
from specedge.serving.scenario import Point, Setting, System

NAME = "li2026_serving"


def _error(tmp_path, edit) -> str:
    return refused(tmp_path, NAME, edit, scenario.sweep_scenario)


def test_the_scenario_holds_wisps_systems_targets_and_setting():
    scn = scenario.sweep_scenario(NAME)
    assert scn == ex.SCENARIO
    assert dict(scn.systems) == {
        "SLED": System("fcfs", False, False), "FCFS": System("fcfs", True, True), "WISP": System("wisp", True, True),
        "EDF-only": System("edf", True, True), "Centralized": System(None, True, False),
        "WISP-stop": System("wisp-stop", True, True), "WISP-drop": System("wisp-drop", True, True),
        "WISP-continue": System("wisp-continue", True, True)}
    assert dict(scn.readings) == {"admit": "WISP", "stop": "WISP-stop", "drop": "WISP-drop", "continue": "WISP-continue"}
    assert scn.slo_classes == ex.CLASSES == (2, 4, 6, 8) and scn.pair == "zoo"
    assert scn.target("Qwen3-32B") == dict(layers=64, hidden=5120, heads=64, kv_heads=8, head_dim=128, intermediate=25600)
    assert scn.target("Qwen3-14B") == dict(layers=40, hidden=5120, heads=40, kv_heads=8, head_dim=128, intermediate=17408)
    assert scn.base == Setting(s_per_token=0.02, rtt_s=0.02, prompt_tokens=128, max_new_tokens=128, gamma=8,
                               temperature=0.0, noise=0.06, delta_s=0.01, memory_gb=14.0, horizon_s=120.0,
                               warmup_s=20.0, profile="li2026_paper", verify=())
    # the stated 50 tokens/s and the 10 ms each way come back exactly from the schema's units
    assert 1 / scn.base.s_per_token == 50.0 and scn.base.rtt_s / 2 == 0.01
    assert [type(getattr(scn.base, k)) for k in ("prompt_tokens", "gamma", "memory_gb", "horizon_s")] == [int, int, float, float]


def test_a_setting_is_the_scenarios_with_checked_values():
    scn = ex.SCENARIO
    st = scn.setting(memory_gb=2, horizon_s=60)
    assert (st.memory_gb, st.horizon_s) == (2.0, 60.0) and type(st.memory_gb) is float
    assert st == scn.setting(scn.base, memory_gb=2.0, horizon_s=60.0) and scn.setting(st) == st
    assert scn.setting(st, gamma=4).memory_gb == 2.0                    # the base's other values kept
    prof = scn.setting(profile="li2026_paper")
    assert prof.profile == "li2026_paper" and dict(prof.verify) == ex.paper_coefficients()
    for bad, said in [(dict(latency=0.01), "'rtt_s' in s (the round trip: twice the one-way latency"),
                      (dict(window=8), "'gamma' (K, the drafts per round"),
                      (dict(draft_rate=50.0), "'s_per_token' in s/token (1 / the rate"),
                      (dict(horizon=60.0), "'horizon_s' in s"),
                      (dict(memroy_gb=2.0), "did you mean 'memory_gb'"),
                      (dict(gamma=4.5), "a positive integer"), (dict(rtt_s=-0.01), "non-negative number (s)"),
                      (dict(s_per_token=0.0), "a positive number (s/token)")]:
        with pytest.raises(schema.ScenarioError, match="li2026_serving.yaml") as e:
            scn.setting(**bad)
        assert said in str(e.value) and f"key '{next(iter(bad))}'" in str(e.value), bad


def test_a_point_names_a_system_class_and_target_of_the_scenario():
    scn = ex.SCENARIO
    p = scn.point("WISP", 3)
    assert p == Point("WISP", 3, None, "Qwen3-32B", True, 0, scn.base)
    assert pickle.loads(pickle.dumps(p)) == p and hash(p) == hash(scn.point("WISP", 3))
    assert sweep.key(ex.run_point, p) != sweep.key(ex.run_point, scn.point("WISP", 3, setting=scn.setting(rtt_s=0.03)))
    assert scn.point("SLED", 2, 8, "Qwen3-14B", predictor=False, seed=4).target == "Qwen3-14B"
    for args, said in [(("WISP-late", 2), "system: expected one of"), (("WISP", 2, 3), "slo_class: expected one of"),
                       (("WISP", 2, None, "Qwen3-8B"), "target: expected one of"), (("WISP", 0), "devices"),
                       (("WISP", 2.0), "devices")]:
        with pytest.raises(ValueError, match=said):
            scn.point(*args)
    assert scn.reading("stop") == "WISP-stop" and scn.system("Centralized").former is None
    with pytest.raises(ValueError, match="reading: expected one of"):
        scn.reading("late")


def test_a_bad_scenario_is_refused_before_any_work(tmp_path):
    msg = _error(tmp_path, lambda d: d["link"].update(latency=d["link"].pop("rtt_s") / 2))
    assert "key 'link.latency'" in msg and "'rtt_s' in s" in msg
    msg = _error(tmp_path, lambda d: d["workload"].update(window=d["workload"].pop("gamma")))
    assert "key 'workload.window'" in msg and "'gamma'" in msg
    msg = _error(tmp_path, lambda d: d["device"].update(draft_rate=50.0))
    assert "key 'device.draft_rate'" in msg and "'s_per_token' in s/token" in msg
    msg = _error(tmp_path, lambda d: d["sweep"].update(horizon=d["sweep"].pop("horizon_s")))
    assert "key 'sweep.horizon'" in msg and "'horizon_s' in s" in msg
    msg = _error(tmp_path, lambda d: d["server"].update(memroy_gb=d["server"].pop("memory_gb")))
    assert "key 'server.memroy_gb'" in msg and "did you mean 'memory_gb'" in msg
    msg = _error(tmp_path, lambda d: d["systems"]["WISP"].update(prefix_cahce=True))
    assert "key 'systems.WISP.prefix_cahce'" in msg and "did you mean 'prefix_cache'" in msg
    assert "key 'workload.gamma'" in _error(tmp_path, lambda d: d["workload"].update(gamma=8.0))
    assert "a positive integer" in _error(tmp_path, lambda d: d["targets"]["Qwen3-14B"].update(layers=40.5))
    assert "true or false" in _error(tmp_path, lambda d: d["systems"]["SLED"].update(prefix_cache="no"))
    assert "(s/token)" in _error(tmp_path, lambda d: d["device"].update(s_per_token=-0.02))
    msg = _error(tmp_path, lambda d: d["systems"]["WISP"].update(former="wsip"))
    assert "key 'systems.WISP.former'" in msg and "'wisp'" in msg
    msg = _error(tmp_path, lambda d: d["server"].pop("delta_s"))        # WISP's former takes a guard time
    assert "key 'server.delta_s' missing" in msg and "takes 'delta'" in msg
    assert "key 'readings.stop'" in _error(tmp_path, lambda d: d["readings"].update(stop="WISP-halt"))
    assert "key 'readings.late'" in _error(tmp_path, lambda d: d["readings"].update(late="WISP"))
    assert "at most the traces' window (8)" in _error(tmp_path, lambda d: d["workload"].update(gamma=9))
    assert "key 'workload.pair'" in _error(tmp_path, lambda d: d["workload"].update(pair="realpiar"))
    assert "below horizon_s" in _error(tmp_path, lambda d: d["sweep"].update(warmup_s=120.0))
    assert "key 'device' missing" in _error(tmp_path, lambda d: d.pop("device"))
    assert "key 'name'" in _error(tmp_path, lambda d: d.update(name="li2026"))
    # a file whose formers take no guard time (WISP's readings and EDF take one) needs none
    def no_wisp(d):
        d["server"].pop("delta_s")
        d["readings"].clear()
        for s in [s for s, v in d["systems"].items() if v["former"] and "delta" in policies.KINDS["former"].takes(v["former"])]:
            d["systems"].pop(s)
    scn = scenario.sweep_scenario(edited(tmp_path, NAME, no_wisp))
    assert scn.base.delta_s is None and scn.system_names == ("SLED", "FCFS", "Centralized")


def test_every_shared_key_has_one_unit_across_the_schema():
    """One name and one unit per quantity: a key declared in several sections has the same unit and rule in each."""
    seen = {}
    for name in dir(schema):
        fields = getattr(schema, name)
        if isinstance(fields, dict):
            fields = tuple(fd for v in fields.values() if isinstance(v, tuple) for fd in v)
        if not (isinstance(fields, tuple) and fields and all(isinstance(fd, schema.Field) for fd in fields)):
            continue
        for fd in fields:
            first = seen.setdefault(fd.key, (name, fd.unit, fd.rule))
            assert (fd.unit, fd.rule) == first[1:], (fd.key, name, first)
    assert {"rtt_s", "gamma", "s_per_token", "horizon_s", "warmup_s", "delta_s", "memory_gb"} <= set(seen)
    assert not set(schema.SYNONYMS) & set(seen)                         # a synonym is never a key


def test_the_open_settings_are_named_by_the_scenarios_keys():
    """Every open setting of ``serving_open_settings.csv`` is a ``Setting`` field at the scenario's value, or one
    of the notebook's own numbers (its threshold and loads)."""
    o = ex.open_settings()
    fields = set(vars(ex.SCENARIO.base))
    notebook = {"epsilon", "table1_devices", "table3_devices"}
    assert set(o.setting) - fields == notebook
    for r in o[o.setting.isin(fields)].itertuples():
        assert math.isclose(float(r.current), getattr(ex.SCENARIO.base, r.setting)), r.setting
