"""The rejection predictor's remaining helpers at their edges: the test split's prompt ids (``dataset``), the zoo's
prompts and the real pair's trace file (``traces``), Theorem 1 replayed on a pair's traces (``waste``), and Table 5 over
drafts (``controller``), each against hand-worked frames."""
import numpy as np
import pandas as pd
import pytest
import torch

from _stand_ins import CharTokenizer, llama
from specedge import zoo
from specedge.predictor import controller, dataset, theorem1, traces, waste
from specedge.predictor.models import LABELS
from test_predictor import synthetic_traces


def test_test_prompts_are_the_sorted_ids_of_the_test_split_capped_per_domain():
    data = dataset.build_dataset(synthetic_traces(n_prompts=10, rounds=2, k=4, seed=3))
    split = dataset.split_by_prompt(data, seed=4)
    want = {}
    for key in sorted(data.prompt_key[split == "test"].unique()):
        d, p = key.split("/")
        want.setdefault(d, []).append(int(p))
    got = dataset.test_prompts(data, seed=4)
    assert got == {d: sorted(v) for d, v in sorted(want.items())} and sum(map(len, got.values())) == 3   # 15 % of 20
    assert dataset.test_prompts(data, seed=4, per_domain=1) == {d: v[:1] for d, v in got.items()}
    assert dataset.test_prompts(data, seed=4, per_domain=0) == {d: [] for d in got}


def test_zoo_prompts_are_the_eval_prompts_after_the_offset_cut_to_their_last_tokens(monkeypatch):
    monkeypatch.setattr(zoo, "eval_prompts", lambda d, n: [f"{d}-abcdef", f"{d}-ghij", f"{d}-kl"][:n])
    tok = CharTokenizer(keep=100)
    out = traces.zoo_prompts(tok, ["x", "y"], 2, max_len=3, offset=1)
    assert list(out) == ["x", "y"]
    assert [t.tolist() for t in out["x"]] == [[ord(c) % 48 for c in "hij"], [ord(c) % 48 for c in "-kl"]]
    assert all(t.dtype == torch.long for t in out["y"])


def test_realpair_traces_name_a_missing_file_and_missing_columns(tmp_path):
    with pytest.raises(FileNotFoundError, match="realpair_card live"):
        traces.load_realpair_traces(tmp_path / "none.csv.gz")
    cols = [c for c in traces.TRACE_COLUMNS if c not in ("draft", "target")]
    pd.DataFrame({c: [0] for c in cols if c != "margin"}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError, match=r"missing trace columns \['margin'\]"):
        traces.load_realpair_traces(tmp_path / "t.csv")
    pd.DataFrame({c: [0] for c in cols}).to_csv(tmp_path / "t.csv", index=False)
    t = traces.load_realpair_traces(tmp_path / "t.csv")
    assert (t.draft.iloc[0], t.target.iloc[0]) == zoo.REAL


class _Constant:
    """A predictor of a constant P(accepted), decided at ``threshold`` (one number for one row, as the controller asks)."""

    def __init__(self, p, threshold=0.5):
        self.p, self.threshold = p, threshold

    def __call__(self, x):
        return self.p if len(x) == 1 else np.full(len(x), self.p)


def _rounds():
    """Two prompts of the domain "d", two fixed-window rounds each (4 drafted), accepted lengths 4, 1 | 0, 2."""
    rows = []
    for prompt, accepted in ((0, (4, 1)), (1, (0, 2))):
        for rnd, L in enumerate(accepted):
            for i in range(1, 5):
                rows.append(dict(domain="d", prompt=prompt, round=rnd, i=i, drafted=4, round_accepted=L, max_prob=0.5,
                                 entropy=1.0, margin=0.1, logit_std=2.0, position=10 * rnd))
    return pd.DataFrame(rows)


def test_theorem1_real_replays_each_predictor_on_the_test_prompts_lowest_fpr_first(capsys):
    t = _rounds()
    meta = dict(window=4, split_prompts=dict(test=["d/1"]))
    table4 = pd.DataFrame(dict(predictor=[LABELS["mlp"], LABELS["xgboost"]], Rec1=[0.9, 0.7], FPR=[0.6, 0.2]))
    replay = controller.replay_stop_rule(t, _Constant(1.0))
    out = waste.theorem1_real(t, meta, {"mlp": _Constant(1.0), "xgboost": _Constant(0.0)}, table4, replay)
    assert out.predictor.tolist() == [LABELS["xgboost"], LABELS["mlp"]]              # FPR 0.2 before 0.6
    mlp = out.set_index("predictor").loc[LABELS["mlp"]]
    # prompt 1 only: rounds of 0 and 2 accepted of 4 drafted; never stopping wastes (4 + 2) / 2 = 3 per round
    assert (mlp.Rec1, mlp.FPR) == (0.9, 0.6) and mlp.replayed_wasted_per_round == 3.0 and mlp.replayed_acceptance == 0.25
    xgb = out.set_index("predictor").loc[LABELS["xgboost"]]
    assert xgb.replayed_drafted_per_round == 0.0 and xgb.replayed_wasted_per_round == 0.0       # stops before the first
    alpha = waste.filled_alpha(t, 4)
    assert mlp.closed_form == pytest.approx(theorem1.expected_waste(alpha, 4, 0.9, 0.6))
    # over both prompts the fixed window wastes (0 + 3 + 4 + 2) / 4 = 2.25 tokens per round
    assert "fixed window wastes 2.25 tokens per round" in capsys.readouterr().out


def test_replay_summary_on_the_test_prompts_with_a_prompt_bootstrap():
    t = _rounds()
    t5, replay = waste.replay_summary(t, ["d/0", "d/1"], _Constant(1.0, threshold=0.5), "pair", n_boot=50, seed=0)
    row = t5.loc["pair"]
    # never stopping: ON is OFF, (4 + 1 + 0 + 2) / 16 accepted, no improvement in any resample
    assert row.OFF == row.ON == 7 / 16 and row.improvement_pct == 0.0 and row.improvement_low == row.improvement_high == 0.0
    assert (row.rounds, row.prompts) == (4, 2) and row.wasted_per_round_OFF == row.wasted_per_round_ON == 2.25
    t5, replay = waste.replay_summary(t, ["d/0", "d/1"], _Constant(1.0, threshold=1.5), "pair", n_boot=20, seed=0)
    # always predicted rejected: nothing drafted, nothing wasted
    assert t5.loc["pair"].wasted_per_round_ON == 0.0 and (replay.drafted_ON == 0).all()


def test_ablation_over_drafts_decodes_the_same_chosen_prompts_with_every_draft(monkeypatch):
    target = llama(3, seed=0)
    drafts = {"small": llama(1, seed=1), "big": llama(2, seed=2)}
    monkeypatch.setattr(controller.zoo, "load_pair", lambda d, t: (drafts[d], target, "tok"))
    pools = {dom: [torch.tensor([k, k + 1, 2 * k % 48]) for k in range(3)] for dom in ("a", "b")}
    seen = []
    monkeypatch.setattr(traces, "zoo_prompts", lambda tok, doms, n: (seen.append((doms, n)), {doms[0]: pools[doms[0]][:n]})[1])
    runs, sizes, prompts = controller.ablation_over_drafts(["big", "small"], "t", {"a": [2, 0], "b": [1]}, ["a", "b"],
                                                           {"ON": _Constant(1.0)}, window=3, tokens=6, temperature=0.0, seed=0)
    assert sizes == {d: sum(p.numel() for p in m.parameters()) for d, m in drafts.items()} and sizes["small"] < sizes["big"]
    assert [p.tolist() for p in prompts] == [pools["a"][2].tolist(), pools["a"][0].tolist(), pools["b"][1].tolist()]
    assert seen == [(["a"], 3), (["b"], 2)] * 2                                  # up to the largest id asked, per draft
    assert list(dict.fromkeys(runs.draft)) == ["big", "small"] and set(runs["mode"]) == {"OFF", "ON"}
    # a controller that never predicts a rejection drafts exactly the fixed window's rounds
    for d in drafts:
        r = runs[runs.draft == d]
        off, on = r[r["mode"] == "OFF"], r[r["mode"] == "ON"]
        assert off[["prompt", "drafted", "accepted"]].to_numpy().tolist() == on[["prompt", "drafted", "accepted"]].to_numpy().tolist()
