"""The stochastic twin's difference from the replay, in two steps (serving.analysis.validation): the
time models the stochastic twin puts where the replay keeps measured times, and what they cost alone."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specedge.serving.analysis import validation
from specedge.serving.log import real_rounds
from specedge.serving.sim import replay
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.workload import ClientSpec

from test_replay import C0, C_TOK, DRAFT, GAP, hand_log, workload


def test_draft_passes_count_the_position_a_stop_rule_judged():
    rounds = pd.DataFrame(dict(S=[0, 3, 8, 2, 5], t_draft=[0.01, 0.04, 0.09, 0.0, 0.05]))
    ruled = ClientSpec("draft-xs", ("code",), 1, 100, 8, "predictor:mlp")
    np.testing.assert_array_equal(validation.draft_passes(rounds, ruled), [1, 4, 8, 0, 6])
    fixed = ClientSpec("draft-xs", ("code",), 1, 100, 8, "fixed")
    np.testing.assert_array_equal(validation.draft_passes(rounds, fixed), [0, 3, 8, 0, 5])


def test_time_models_recover_linear_drafting_and_the_modelled_replay_equals_the_replay():
    """With every drafting time linear in the passes and constant gaps and link times, the models are
    exact: the replay with modelled times reproduces the replay round for round (the first round starts
    one gap later: the model gives every round the median gap)."""
    real = hand_log()
    wl = workload()
    m = validation.fit_times(real_rounds(real), wl)
    for c in (0, 1):
        assert abs(validation.drafting_time(m[c], 2) - DRAFT[c]) < 1e-12 and validation.drafting_time(m[c], 0) == 0.0
        assert abs(m[c]["gap"] - GAP) < 1e-12
    base = replay.replay(real, wl, SyncRounds(), FixedS(4, 2), AffineTokens(C0, C_TOK))
    mod = replay.replay(real, wl, SyncRounds(), FixedS(4, 2), AffineTokens(C0, C_TOK), rounds=validation.modelled_rounds(real, wl))
    for col in ("t_round", "t_queue", "t_draft", "t_verify", "tokens"):
        np.testing.assert_allclose(mod[col].to_numpy(float), base[col].to_numpy(float), rtol=0, atol=1e-12, err_msg=col)
    np.testing.assert_allclose(mod["start"] - base["start"], GAP, atol=1e-12)


def test_a_heavy_tailed_drafting_time_is_what_the_modelled_replay_loses():
    """One slow drafting round (a drafter that lost its shared core) lengthens that round in the replay;
    the time model, a least-squares line and the median gap, spreads it: the modelled replay's slowest
    round is shorter."""
    real = hand_log()
    slow = (real["client"] == 0) & (real["round"] == 3)
    real.loc[slow, ["t_draft"]] += 0.05
    real.loc[real["round"] >= 3, ["arrival", "start", "end"]] += 0.05
    real.loc[slow, "t_round"] += 0.05
    wl = workload()
    base = replay.replay(real, wl, SyncRounds(), FixedS(4, 2), AffineTokens(C0, C_TOK))
    mod = replay.replay(real, wl, SyncRounds(), FixedS(4, 2), AffineTokens(C0, C_TOK), rounds=validation.modelled_rounds(real, wl))
    assert base["t_round"].max() > mod["t_round"].max() + 0.02


def test_round_time_table_gives_each_systems_quantiles_and_refuses_an_empty_log():
    from specedge.serving.analysis import validation

    real = pd.DataFrame(dict(event=[""] * 5, t_round=[1.0, 2.0, 3.0, 4.0, 5.0]))
    twin = pd.DataFrame(dict(event=["", "", "drop"], t_round=[2.0, 2.0, 99.0]))   # a dropped round is not a round
    t = validation.round_time_table({"P": (real, twin)}).set_index(["system", "quantile"]).t_round_s
    assert t[("real", "p50")] == 3.0 and t[("real", "p99")] == pytest.approx(4.96) and t[("twin", "p99")] == 2.0
    with pytest.raises(ValueError, match=r"pairs\['P'\]: the twin log has no verified rounds"):
        validation.round_time_table({"P": (real, twin.iloc[2:])})


def test_by_run_keys_each_log_by_setting_policy_and_size_in_order():
    from specedge.serving.analysis import validation

    df = pd.DataFrame(dict(paper=["b", "b", "a"], policy=["X", "X", "Y"], n_clients=[2, 2, 1], round=[0, 1, 0]))
    runs = validation.by_run(df)
    assert list(runs) == [("b", "X", 2), ("a", "Y", 1)]
    assert runs[("b", "X", 2)]["round"].tolist() == [0, 1] and runs[("a", "Y", 1)].index.tolist() == [0]
