"""The zoo's committed early-exit adapters (``early_exit.zoo_adapters``): the check that they are there, the pairs
loaded with them, and the card and per-exit agreement (venkatesha2025 Table 2)."""
import json

import pytest

from specedge import early_exit, zoo
from specedge.early_exit import zoo_adapters


def test_require_names_the_first_missing_file_and_the_make_target():
    zoo_adapters.require({"a": ("draft-xs", "target-m"), "b": ("draft-s", "target-l")})      # committed: no error
    with pytest.raises(FileNotFoundError, match=r"no-such-draft/card\.json is missing: `make zoo`"):
        zoo_adapters.require({"a": ("draft-xs", "target-m"), "b": ("no-such-draft", "target-m")})
    with pytest.raises(FileNotFoundError, match=r"adapters/draft-xs/meta\.json is missing"):
        zoo_adapters.require({"a": ("draft-xs", "draft-xs")})       # a checkpoint without adapters


def test_load_sets_attaches_the_committed_adapters():
    sets = zoo_adapters.load_sets({"m": ("draft-xs", "target-m")})
    dname, tname, draft, ee, tok = sets["m"]
    meta = json.loads((early_exit.ADAPTERS / "target-m" / "meta.json").read_text())
    assert (dname, tname) == ("draft-xs", "target-m") and ee.rank == meta["rank"] and ee.n_layers == meta["n_layers"]
    assert ee.trainable_parameters() == meta["trainable_params"] and not ee.adapters.training


@pytest.fixture(scope="module")
def card():
    return zoo_adapters.card_and_agreement(1)


def test_card_rows_are_the_committed_meta_records(card):
    t2, _ = card
    targets = [t for t in zoo.TARGETS if (early_exit.ADAPTERS / t / "meta.json").exists()]
    assert t2.model.tolist() == targets and len(targets) >= 2
    for r in t2.itertuples():
        m = json.loads((early_exit.ADAPTERS / r.model / "meta.json").read_text())
        assert (r.exits, r.exits_per_layer, r.bottleneck, r.params, r.steps) == (m["n_exits"], m["per_layer"], m["rank"],
                                                                                 m["trainable_params"], m["steps_done"])
        assert r.pct_params == round(100 * m["param_fraction"], 3) and r.train_minutes == round(m["train_seconds"] / 60, 1)
    m = t2.set_index("model").loc["target-m"]
    assert m.pct_params == 1.54 and m.train_minutes == 0.9            # 0.0153963 -> 1.54 %; 53.7 s -> 0.9 min


def test_agreement_per_exit_adapters_and_logit_lens(card):
    t2, agree = card
    assert set(agree.exits) == {"adapters", "logit lens (no training)"}
    for (model, kind), g in agree.groupby(["model", "exits"]):
        n = int(t2.set_index("model").loc[model, "exits"]) + 1
        assert g.position.tolist() == list(range(1, n + 1))
        assert g.agreement.iloc[-1] == 1.0                            # the last position is the final itself
        assert g.agreement.between(0, 1).all() and g.confidence.between(0, 1).all()
    # the final position is the same model with and without adapters: the same confidence
    last = agree.groupby(["model", "exits"]).confidence.last().unstack()
    assert (last["adapters"] == last["logit lens (no training)"]).all()
    # training raises the early exits' agreement with the final over the untrained logit lens
    early = agree[agree.position < agree.groupby(["model", "exits"]).position.transform("max")]
    mean = early.groupby("exits").agreement.mean()
    assert mean["adapters"] > mean["logit lens (no training)"]
