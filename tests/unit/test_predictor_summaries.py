"""The controller's run summaries (``predictor.waste.ablation_summary``, ``replay_summary``) and ``traces.draft_order``
on hand-made rounds with known answers."""
import numpy as np
import pandas as pd
import pytest

from specedge.predictor import models, traces as pred_traces
from specedge.predictor import waste

MLP = models.LABELS["mlp"]


def rounds(draft, mode, drafted, accepted):
    return pd.DataFrame(dict(draft=draft, mode=mode, drafted=drafted, accepted=accepted))


def test_ablation_summary_rates_gain_waste_and_size_order():
    runs = pd.concat([rounds("big", "OFF", [4, 4], [2, 2]), rounds("big", MLP, [2, 2], [2, 1]),
                      rounds("small", "OFF", [4, 4], [1, 1]), rounds("small", MLP, [2, 1], [1, 1]),
                      rounds("small", "Random Forest", [1, 1], [1, 1])])   # another predictor's mode: left out
    t5, ablation = waste.ablation_summary(runs, {"big": 200, "small": 100})
    assert list(t5.index) == ["small", "big"]   # smallest draft first
    assert set(ablation["mode"]) == {"OFF", "ON"}
    assert t5.loc["small", "OFF"] == pytest.approx(2 / 8) and t5.loc["small", "ON"] == pytest.approx(2 / 3)
    assert t5.loc["big", "improvement_pct"] == pytest.approx(100 * ((3 / 4) / (4 / 8) - 1))
    assert t5.loc["small", "wasted_per_round_OFF"] == pytest.approx(3.0)
    assert t5.loc["big", "wasted_per_round_ON"] == pytest.approx(0.5)
    assert list(t5.draft_params) == [100, 200]



def test_replay_summary_matches_its_rounds(monkeypatch):
    rng = np.random.default_rng(0)
    replay = pd.DataFrame(dict(domain=np.repeat(["code", "chat"], 6), prompt=np.tile([0, 0, 1, 1, 2, 2], 2),
                               drafted_OFF=4, accepted_OFF=rng.integers(0, 5, 12)))
    replay["drafted_ON"] = np.minimum(replay.accepted_OFF + 1, 4)
    replay["accepted_ON"] = replay.accepted_OFF
    real_traces = replay[["domain", "prompt"]]
    # the stop rule's replay is ``replay_stop_rule``'s (tested with it); here: the rounds of the test prompts as given
    monkeypatch.setattr(waste, "replay_stop_rule", lambda traces, mlp: replay.loc[traces.index].reset_index(drop=True))
    t5, rounds_ = waste.replay_summary(real_traces, ["code/0", "code/1", "chat/2"], None, "pair", n_boot=50, seed=0)
    sel = replay[replay.domain.str.cat(replay.prompt.astype(str), sep="/").isin(["code/0", "code/1", "chat/2"])]
    assert len(rounds_) == len(sel) == 6 and t5.loc["pair", "prompts"] == 3
    assert t5.loc["pair", "OFF"] == pytest.approx(sel.accepted_OFF.sum() / sel.drafted_OFF.sum())
    assert t5.loc["pair", "ON"] == pytest.approx(sel.accepted_ON.sum() / sel.drafted_ON.sum())
    assert t5.loc["pair", "improvement_low"] <= t5.loc["pair", "improvement_pct"] <= t5.loc["pair", "improvement_high"]
    assert t5.loc["pair", "wasted_per_round_OFF"] == pytest.approx((sel.drafted_OFF - sel.accepted_OFF).mean())


def test_draft_order_puts_zoo_drafts_smallest_first_and_others_after():
    from specedge import zoo
    known = list(zoo.DRAFTS)
    traces = pd.DataFrame(dict(draft=["zz-other", *reversed(known), "aa-other"]))
    assert pred_traces.draft_order(traces) == [*known, "aa-other", "zz-other"]
