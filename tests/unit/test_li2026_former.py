"""li2026's batch formers come from the policy registry by the system's name, each builder handed the keywords it
takes: WISP's readings the eq (19) estimate and the guard time, FCFS (and SLED, FCFS without a prefix cache) its
log label; every one within the point's KV budget."""
from specedge.experiments.li2026 import serving_runs as ex
from specedge.serving.policies.batching import FCFS
from specedge.serving.policies.wisp_batching import WISPBatcher


def test_each_systems_former_is_built_by_the_registry_with_the_keywords_its_builder_takes():
    est = ex.estimator(ex.SCENARIO.point("WISP", 2))
    built = {s: ex.former(ex.SCENARIO.point(s, 2, target="Qwen3-14B"), est) for s in ex.SCENARIO.system_names if ex.SCENARIO.system(s).former}
    assert set(built) == set(ex.SCENARIO.system_names) - {"Centralized"}
    budget = ex.kv_budget(ex.SCENARIO.point("SLED", 2, target="Qwen3-14B"))
    assert budget > ex.SCENARIO.base.memory_gb * 1e9                    # the 14B target's lighter weights leave more
    for system, f in built.items():
        assert f.memory_budget == budget and f.label == system
        if ex.SCENARIO.system(system).former == "fcfs":
            assert type(f) is FCFS and not hasattr(f, "delta")
        else:
            assert type(f) is WISPBatcher and f.estimator is est and f.delta == ex.SCENARIO.base.delta_s
    assert built["EDF-only"].density is False and built["WISP-drop"].reading == "drop"
