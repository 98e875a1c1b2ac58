"""The scenario language's schema (``serving.scenario_schema``): every key declared once with its type and unit;
a scenario file with an unknown key, a key of another unit, a value of the wrong type or a policy whose needs it
does not state is refused before any work, the error naming the file and the key."""
import pytest

from _scenario_edits import edited, refused
from specedge import hardware
from specedge.experiments.edge_sd_arena import runs as arena
from specedge.serving import scenario, scenario_schema as schema

SECTIONS = {name: getattr(schema, name) for name in ("TOP", "SERVER", "TARGET", "DEVICE_PROFILE", "DEVICE_STATED", "LINK",
                                                   "WORKLOAD", "REFERENCE", "SWEEP", "CI", "AR_ON_THE_EDGE", "CAPACITY",
                                                   "POLICIES", "FLEET", "VALIDATION", "RUN_SIZE", "SETUP", "SETUP_POLICY",
                                                   "SYSTEM", "SHAPE")}
SUFFIX_UNITS = {"_s": "s", "_bps": "bit/s", "_gb": "GB", "s_per_token": "s/token"}


def test_every_field_is_declared_with_a_known_type_rule_and_the_unit_its_key_names():
    for name, fields in SECTIONS.items():
        assert len({fd.key for fd in fields}) == len(fields), name
        for fd in fields:
            assert fd.type in schema.TYPES and (not fd.rule or fd.rule in hardware.RULES), (name, fd)
            unit = next((u for suffix, u in SUFFIX_UNITS.items() if fd.key.endswith(suffix)), None)
            if unit is not None:
                assert fd.unit == unit, (name, fd.key, fd.unit)
            elif fd.unit:
                assert fd.key == "slo_classes" and fd.unit == "tok/s", (name, fd)


def _error(tmp_path, edit) -> str:
    return refused(tmp_path, "arena_default", edit, arena.load_scenario)


def test_an_unknown_key_is_named_with_the_nearest_known_one(tmp_path):
    assert issubclass(schema.ScenarioError, hardware.ProfileError)       # one error type for profiles and scenarios
    msg = _error(tmp_path, lambda d: d["server"].update(memroy_gb=14.0))
    assert "key 'server.memroy_gb'" in msg and "did you mean 'memory_gb'" in msg
    msg = _error(tmp_path, lambda d: d.update(capacities=d.pop("capacity")))
    assert "key 'capacities'" in msg and "did you mean 'capacity'" in msg
    assert "key 'ci.seed'" in _error(tmp_path, lambda d: d["ci"].update(seed=3))      # the ci: section at full scale too
    assert "key 'policies.draft.goodspeed.betta'" in _error(tmp_path, lambda d: d["policies"]["draft"]["goodspeed"].update(betta=0.5))


def test_a_quantity_in_another_unit_names_the_schemas_key_and_unit(tmp_path):
    msg = _error(tmp_path, lambda d: d["link"].update(rtt_ms=1e3 * d["link"].pop("rtt_s")))
    assert "key 'link.rtt_ms'" in msg and "'rtt_s' in s" in msg
    msg = _error(tmp_path, lambda d: d["sweep"].update(horizon_min=d["sweep"].pop("horizon_s") / 60))
    assert "key 'sweep.horizon_min'" in msg and "'horizon_s' in s" in msg
    msg = _error(tmp_path, lambda d: d["device_classes"].update(phone={"tok_per_s": 50, "source": "x"}))
    assert "key 'device_classes.phone'" in msg and "s_per_token (s/token)" in msg


def test_a_wrong_type_names_the_key_and_what_was_expected(tmp_path):
    msg = _error(tmp_path, lambda d: d["workload"].update(gamma="four"))
    assert "key 'workload.gamma'" in msg and "a positive integer" in msg
    msg = _error(tmp_path, lambda d: d["workload"].update(gamma=4.0))
    assert "key 'workload.gamma'" in msg
    msg = _error(tmp_path, lambda d: d["link"].update(rtt_s=True))
    assert "key 'link.rtt_s'" in msg and "(s)" in msg
    msg = _error(tmp_path, lambda d: d["link"].update(bandwidth_bps=[1e7, -1.0]))
    assert "key 'link.bandwidth_bps[1]'" in msg and "positive" in msg
    assert "key 'server'" in _error(tmp_path, lambda d: d.update(server=[1, 2]))


def test_a_chosen_policy_needs_what_its_builder_takes(tmp_path):
    # WISP's former takes a guard time: without one the scenario is refused; without WISP it is not needed
    msg = _error(tmp_path, lambda d: d["server"].pop("delta_s"))
    assert "key 'server.delta_s' missing" in msg and "takes 'delta'" in msg

    def no_wisp(d):
        d["server"].pop("delta_s")
        d["policies"]["former"].pop("wisp")
    scn = scenario.load(edited(tmp_path, "arena_default", no_wisp), windows=arena.PAIRS)
    assert scn.delta_s is None and [o for o, _ in scn.formers] == ["sync", "fcfs"]
    # ... and a former deciding with an estimate needs eq (19)'s verify model; FCFS and sync do not
    msg = _error(tmp_path, lambda d: d["policies"].update(verify_model="affine_tokens"))
    assert "key 'policies.verify_model'" in msg and "affine_interactions" in msg
    msg = _error(tmp_path, lambda d: d["policies"]["draft"]["fixed"].pop("rule"))   # a draft option needs its rule
    assert "key 'policies.draft.fixed.rule' missing" in msg


def test_a_drafting_rule_is_parsed_once_and_is_its_text():
    import json
    import pickle

    from specedge.serving.workload import ClientSpec, DraftRule

    spec = ClientSpec(draft_rule="predictor:mlp")
    rule = spec.draft_rule
    assert type(rule) is DraftRule and (rule.kind, rule.model, rule.stops) == ("predictor", "mlp", True)
    assert rule == "predictor:mlp" and hash(rule) == hash("predictor:mlp") and repr(rule) == "'predictor:mlp'"
    assert json.dumps(rule) == '"predictor:mlp"' and pickle.loads(pickle.dumps(rule)).model == "mlp"
    assert DraftRule.of("predictor", "mlp") == rule and DraftRule(rule) is rule
    assert [(r.kind, r.model, r.stops) for r in map(DraftRule, ("server", "fixed"))] == [("server", "", False), ("fixed", "", False)]
    for bad in ("predictor:", "fixed:mlp", "eagle", "", 3):
        with pytest.raises(ValueError, match="draft_rule: expected 'server', 'fixed' or 'predictor:<name>'"):
            ClientSpec(draft_rule=bad)
    scn = arena.load_scenario()
    assert {o: (p.rule.kind, p.rule.model) for o, p in scn.drafts}["wisp-stop"] == ("predictor", "mlp")
