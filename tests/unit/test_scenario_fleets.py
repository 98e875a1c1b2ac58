"""Fleets from scenario files (``serving.scenario.fleets``): tran2025's Table I configurations and real-run fleet as
data, exactly the values its driver built in code, and a broken fleet refused before any work, the error naming
the file and the key."""
import dataclasses

import pytest

from _scenario_edits import refused
from specedge.experiments.tran2025 import runs as tran2025
from specedge.serving import scenario

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
    return refused(tmp_path, tran2025.SCENARIO, edit, lambda path: scenario.fleets(path, run))


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


# --------------------------------------------------------------------------- the twin's validation setups
def test_the_validation_setups_build_the_objects_the_driver_built_in_code():
    from specedge.experiments.serving_validation import runs as sv
    from specedge.serving import policies as named
    from specedge.serving.policies.allocation import PAPER_BETA, FixedS
    from specedge.serving.scenario import Fleet

    assert sv.SIZES == (1, 2, 4, 8) and sv.POLICIES == {"tran2025": ("GOODSPEED", "Fixed-S"), "li2026": ("WISP", "FCFS"),
                                                        "li2026_binding": ("WISP", "FCFS")}
    assert sv.COMMON == ("tran2025", "li2026") and sv.CLASSES == (8, 4, 2)
    from specedge.serving.timemodels.estimator import zoo_fit

    fit = zoo_fit(0)
    for n in (1, 3):
        for scale, (prompts, tokens) in (("full", (2, 48)), ("ci", (1, 12))):
            cfg = Fleet(name="", paper_models="", clients=n, capacity=6 * n, max_new_tokens=tokens, drafts=("draft-xs",))
            assert sv.workload("tran2025", n, scale) == tran2025.workload(cfg, prompts, tokens)
            li = sv.workload("li2026", n, scale)
            assert li == sv.devices(n, prompts, tokens, capacity=8 * n, drafts=("draft-xs", "draft-s", "draft-m"))
            # the setting with classes that bind: the same devices, each class x 10
            bound = sv.workload("li2026_binding", n, scale)
            assert bound == sv.devices(n, prompts, tokens, capacity=8 * n, drafts=("draft-xs", "draft-s", "draft-m"),
                                       classes=(80, 40, 20))
            assert [c.slo_class for c in bound.clients] == [10 * c.slo_class for c in li.clients]
        before = {("tran2025", p): (named.former("sync"), tran2025.allocator(p, dataclasses.replace(cfg, capacity=6 * n), 0))
                  for p in ("GOODSPEED", "Fixed-S")}
        before["li2026", "WISP"] = (named.former("wisp", estimator=fit.estimator, delta=fit.delta, memory_budget=1e12),
                                    FixedS(8 * n, n))
        before["li2026", "FCFS"] = (named.former("fcfs"), FixedS(8 * n, n))
        before["li2026_binding", "WISP"], before["li2026_binding", "FCFS"] = before["li2026", "WISP"], before["li2026", "FCFS"]
        for (paper, pol), objects in before.items():
            built = sv.policies(paper, pol, n)
            for new, old in zip(built, objects, strict=True):
                assert type(new) is type(old) and vars(new) == vars(old), (paper, pol, n)
        assert sv.policies("tran2025", "GOODSPEED", n)[1].beta == PAPER_BETA
    for name, st in sv.SCENARIO.setups:        # the clients draft by the rule their allocator's policy states
        for pol, (_, alloc) in st.policies:
            assert {c.draft_rule for c in sv.workload(name, 2, "ci").clients} == {alloc.rule}, (name, pol)


def _setups_error(tmp_path, edit) -> str:
    return refused(tmp_path, "serving_validation", edit, scenario.setups)


def test_a_broken_setup_is_named_by_file_and_key(tmp_path):
    wisp = lambda d: d["setups"]["li2026"]["policies"]["WISP"]
    msg = _setups_error(tmp_path, lambda d: wisp(d)["former"].update(former="wispp"))
    assert "key 'setups.li2026.policies.WISP.former.former'" in msg and "'wisp-stop'" in msg
    msg = _setups_error(tmp_path, lambda d: wisp(d)["allocator"].pop("rule"))
    assert "key 'setups.li2026.policies.WISP.allocator.rule' missing" in msg
    msg = _setups_error(tmp_path, lambda d: wisp(d)["former"].update(memory_gb=1000))       # a keyword wisp does not take
    assert "key 'setups.li2026.policies.WISP.former.memory_gb'" in msg and "'memory_budget'" in msg
    msg = _setups_error(tmp_path, lambda d: d["setups"]["tran2025"].update(capacity_per_client=0))
    assert "key 'setups.tran2025.capacity_per_client'" in msg and "a positive integer" in msg
    msg = _setups_error(tmp_path, lambda d: d["validation"]["ci"].update(max_tokens=d["validation"]["ci"].pop("max_new_tokens")))
    assert "key 'validation.ci.max_tokens'" in msg and "'max_new_tokens'" in msg
    assert "key 'setups' missing" in _setups_error(tmp_path, lambda d: d.pop("setups"))
