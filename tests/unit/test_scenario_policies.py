"""The scenario's ``policies:`` section: each option's allocator or former by registry name, checked on load
(an unknown name lists the known ones; a missing key, a non-number or a parameter no builder takes names the
file and the key), and the committed scenario building exactly the policies the arena built before by name."""
import pytest
import yaml

from specedge import hardware
from specedge.experiments import arena
from specedge.serving import policies, scenario
from specedge.serving.policies.allocation import PAPER_BETA, FixedS, GoodspeedAllocator
from specedge.serving.policies.as2_allocation import AS2Allocator
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.policies.slo_weighted_allocation import SLOWeightedGoodspeed
from specedge.serving.policies.wisp_batching import WISPBatcher

# what the arena mapped its options to before its scenario named them: allocator name and drafting rule
BEFORE = {"fixed": ("fixed", "fixed"), "goodspeed": ("goodspeed", "server"), "goodspeed-slo": ("goodspeed-slo", "server"),
          "wisp-stop": ("fixed", "predictor:mlp"), "as2": ("as2", "server")}


def _broken(tmp_path, edit, whole: bool = False) -> str:
    """The committed scenario with ``edit`` applied to its parsed ``policies:`` (``whole``: to the whole file),
    loaded: the error's message."""
    data = yaml.safe_load((scenario.SCENARIOS / "arena_default.yaml").read_text())
    edit(data if whole else data["policies"])
    path = tmp_path / "arena_default.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(hardware.ProfileError) as e:
        arena.load_scenario(path)
    assert str(path) in str(e.value)
    return str(e.value)


def test_the_committed_policies_are_the_arenas_options():
    scn = arena.load_scenario()
    assert (scn.verify_model, scn.draft_model) == ("affine_interactions", "per_token")
    assert {o: (p.name, p.rule) for o, p in scn.drafts} == BEFORE
    assert {o: p.name for o, p in scn.formers} == {f: f for f in arena.FORMERS}
    assert dict(scn.policy("draft", "goodspeed").params) == {"beta": PAPER_BETA}
    assert scn.policy("draft", "as2").params == ()
    with pytest.raises(ValueError, match=r"no option 'eagle'.*as2"):
        scn.policy("draft", "eagle")


@pytest.mark.parametrize("draft", arena.DRAFTS)
def test_each_draft_option_builds_the_allocator_it_built_by_name(draft):
    scn = arena.load_scenario()
    p = arena.Point(arena.Combination(draft, "dense", "fcfs"), 1e8, 6, "mixed", 0, scn)
    wl = arena.workload(p)
    assert {c.draft_rule for c in wl.clients} == {BEFORE[draft][1]}
    name = BEFORE[draft][0]
    weights = {i: float(s.slo_class) for i, s in enumerate(wl.clients)}
    old = policies.allocator(name, capacity=wl.capacity, clients=6, beta=PAPER_BETA, weights=weights,
                             costs=arena.as2_costs(p) if name == "as2" else None)
    new = arena.allocator(p, wl)
    assert type(new) is type(old) and vars(new) == vars(old)
    assert type(new) is {"fixed": FixedS, "goodspeed": GoodspeedAllocator, "goodspeed-slo": SLOWeightedGoodspeed,
                         "as2": AS2Allocator}[name]
    assert new.initial(list(range(6))) == old.initial(list(range(6)))
    if name.startswith("goodspeed"):
        assert new.beta == PAPER_BETA


def test_each_former_option_builds_the_former_it_built_by_name():
    scn = arena.load_scenario()
    est = scenario.estimator(scn)
    for option, kind in (("sync", SyncRounds), ("fcfs", FCFS), ("wisp", WISPBatcher)):
        p = arena.Point(arena.Combination(former=option), 1e8, 4, "mixed", 0, scn)
        f = arena.former(p, est)
        assert type(f) is kind
        if option != "sync":
            assert f.memory_budget == scn.memory_gb * 1e9
    assert arena.former(arena.Point(arena.Combination(former="wisp"), 1e8, 4, "mixed", 0, scn), est).delta == scn.delta_s


def test_an_unknown_name_lists_the_known_names(tmp_path):
    msg = _broken(tmp_path, lambda p: p["draft"]["goodspeed"].update(allocator="goodspeeed"))
    assert "key 'policies.draft.goodspeed.allocator'" in msg and "'goodspeeed'" in msg
    assert all(repr(n) in msg for n in policies.KINDS["allocator"].names())
    msg = _broken(tmp_path, lambda p: p["former"]["wisp"].update(former="wisp2"))
    assert "key 'policies.former.wisp.former'" in msg and "'edf'" in msg
    assert "key 'policies.verify_model'" in _broken(tmp_path, lambda p: p.update(verify_model="cubic"))
    assert "key 'policies.draft_model'" in _broken(tmp_path, lambda p: p.update(draft_model="per_pass"))
    msg = _broken(tmp_path, lambda p: p.update(verify_model="affine_tokens"))   # known, but WISP needs eq (19)
    assert "key 'policies.verify_model'" in msg and "affine_interactions" in msg


def test_a_missing_key_is_named(tmp_path):
    assert "key 'policies.draft.fixed.rule' missing" in _broken(tmp_path, lambda p: p["draft"]["fixed"].pop("rule"))
    assert "key 'policies.former.sync.former' missing" in _broken(tmp_path, lambda p: p["former"]["sync"].pop("former"))
    assert "key 'policies.former' missing" in _broken(tmp_path, lambda p: p.pop("former"))
    assert "key 'policies' missing" in _broken(tmp_path, lambda d: d.pop("policies"), whole=True)
    msg = _broken(tmp_path, lambda p: p["draft"].pop("as2"))     # the arena runs as2: it needs a policy
    assert "key 'policies.draft'" in msg and "'as2'" in msg


def test_a_wrong_type_or_parameter_is_named(tmp_path):
    assert "key 'policies.draft.goodspeed.beta'" in _broken(tmp_path, lambda p: p["draft"]["goodspeed"].update(beta="high"))
    assert "key 'policies.draft.goodspeed.beta'" in _broken(tmp_path, lambda p: p["draft"]["goodspeed"].update(beta=-0.5))
    msg = _broken(tmp_path, lambda p: p["draft"]["fixed"].update(beta=0.5))      # Fixed-S takes no beta
    assert "key 'policies.draft.fixed.beta'" in msg and "'capacity'" in msg
    assert "key 'policies.draft.fixed.rule'" in _broken(tmp_path, lambda p: p["draft"]["fixed"].update(rule="predictor:"))
    assert "key 'policies.draft.fixed'" in _broken(tmp_path, lambda p: p["draft"].update(fixed="fixed"))
    assert "key 'policies.former'" in _broken(tmp_path, lambda p: p.update(former={}))


def test_the_registry_says_what_a_builder_takes():
    assert policies.KINDS["allocator"].takes("as2") == {"costs"}
    assert {"capacity", "beta", "eta"} <= policies.KINDS["allocator"].takes("goodspeed")
    with pytest.raises(ValueError, match="expected one of"):
        policies.KINDS["former"].takes("nope")
