"""li2026 (WISP) drafting controller inside the speculative-decoding loop (tiny random models)."""
import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specedge import decoding
from specedge.predictor import controller, dataset, models, persistence, traces
from specedge.experiments.li2026 import device_goodput


def tiny(seed, layers=1):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def pair():
    return tiny(1), tiny(2, layers=2)


class Const:
    """A predictor that always returns the same P(accepted)."""
    threshold = 0.5

    def __init__(self, p):
        self.p = p

    def __call__(self, x):
        assert x.shape == (1, len(dataset.FEATURES))
        return self.p


class Coin:
    """Random decisions, reproducible: exercises every stop position."""
    threshold = 0.5

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def __call__(self, x):
        return self.rng.random()


PROMPT = torch.tensor([3, 7, 11, 2, 5])


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_always_accept_equals_fixed_window(pair, temperature):
    draft, target = pair
    for window in (1, 4):
        ctl = controller.StopAtFirstPredictedRejection(Const(1.0), window)
        a = ctl.speculative(draft, target, PROMPT, 20, temperature=temperature, seed=7)
        b = decoding.speculative(draft, target, PROMPT, 20, gamma=window, temperature=temperature, seed=7)
        assert torch.equal(a.tokens, b.tokens)
        assert a.drafted == b.drafted and a.accepted == b.accepted
        assert ctl.calls == sum(a.drafted)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("exclusive", [True, False])
def test_never_drafts_past_window(pair, temperature, exclusive):
    draft, target = pair
    for window in (1, 3, 6):
        ctl = controller.StopAtFirstPredictedRejection(Coin(window), window, exclusive=exclusive)
        g = ctl.speculative(draft, target, PROMPT, 24, temperature=temperature, seed=3)
        assert max(g.drafted) <= window
        if not exclusive:
            assert min(g.drafted[:-1]) >= 1  # the last round may draft 0: only 1 token was left to make
        assert len(g.tokens) == 24
    # greedy output is the target's own greedy output whatever the predictor does
    ar = decoding.autoregressive(target, PROMPT, 24)
    g = controller.StopAtFirstPredictedRejection(Coin(0), 5, exclusive=exclusive).speculative(draft, target, PROMPT, 24)
    assert torch.equal(g.tokens, ar.tokens)


def test_always_reject_drafts_nothing_or_one_token(pair):
    draft, target = pair
    # eq (25): drafting stops *before* the first predicted rejection: no draft, the target emits one token
    g = controller.StopAtFirstPredictedRejection(Const(0.0), 6).speculative(draft, target, PROMPT, 20)
    assert set(g.drafted) == {0} and len(g.tokens) == 20
    assert torch.equal(g.tokens, decoding.autoregressive(target, PROMPT, 20).tokens)
    # the inclusive rule still sends the flagged token
    g = controller.StopAtFirstPredictedRejection(Const(0.0), 6, exclusive=False).speculative(draft, target, PROMPT, 20)
    assert set(g.drafted[:-1]) == {1} and g.drafted[-1] <= 1


def test_controller_features_match_traces(pair):
    draft, target = pair
    seen = []

    class Record(Const):
        def __call__(self, x):
            seen.append(x[0].copy())
            return 1.0

    ctl = controller.StopAtFirstPredictedRejection(Record(1.0), 4)
    g = ctl.speculative(draft, target, PROMPT, 12, temperature=1.0, seed=5)
    frame = decoding.traces_frame(g.rounds)
    np.testing.assert_allclose(np.array(seen), frame[list(dataset.FEATURES)].to_numpy(np.float32), rtol=1e-6)


def test_controller_with_trained_predictor(pair, tmp_path):
    """A real Predictor (saved and loaded) drives the loop and its stops follow its predictions."""
    draft, target = pair
    # features in the range this pair produces, labelled "accepted" above the median max_prob, so
    # the predictor lets some positions through and flags others
    seen = decoding.traces_frame(decoding.speculative(draft, target, PROMPT, 30, gamma=5, temperature=1.0,
                                                      seed=2).rounds)[list(dataset.FEATURES)].to_numpy(np.float32)
    rng = np.random.default_rng(0)
    x = rng.uniform(seen.min(0), seen.max(0) + 1e-6, (400, 5)).astype(np.float32)
    y = (x[:, 0] > np.median(seen[:, 0])).astype(int)
    pred = models.train_xgboost(x[:300], y[:300], x[300:], y[300:], n_estimators=20)
    persistence.save(pred, tmp_path, "xgb")
    pred = persistence.load(tmp_path, "xgb")
    ctl = controller.StopAtFirstPredictedRejection(pred, 5)
    g = ctl.speculative(draft, target, PROMPT, 25, temperature=1.0, seed=1)
    frame = decoding.traces_frame(g.rounds)
    z = pred.predict(frame[list(dataset.FEATURES)].to_numpy(np.float32))
    # exclusive rule: every drafted position was predicted accepted, and a round stops short of
    # the window only where the predictor flagged the next position
    assert len(z) > 0 and (z == 1).all()
    assert any(d < 5 for d in g.drafted[:-1])


def test_bad_window():
    with pytest.raises(ValueError, match="gamma"):
        controller.StopAtFirstPredictedRejection(Const(1.0), 0)


def test_generate_traces_and_ablation(pair):
    draft, target = pair
    prompts = {"a": [PROMPT, PROMPT[:3]], "b": [PROMPT.flip(0)]}
    tr = traces.generate_traces(draft, target, prompts, window=4, temperatures=(0.0, 1.0), max_new_tokens=10,
                           progress=False, draft="d", target="t")
    assert list(tr.columns) == traces.TRACE_COLUMNS
    assert set(tr.domain) == {"a", "b"} and set(tr.temperature) == {0.0, 1.0}
    assert tr.drafted.max() <= 4
    data = dataset.build_dataset(tr)
    # label 1 exactly for i <= round_accepted, label 0 exactly at i = round_accepted + 1
    assert ((data.label == 1) == (data.i <= data.round_accepted)).all()
    assert ((data.label == 0) == (data.i == data.round_accepted + 1)).all()
    ab = controller.controller_ablation(draft, target, prompts["a"], Const(1.0), window=4, max_new_tokens=10)
    off, on = ab[ab["mode"] == "OFF"], ab[ab["mode"] == "ON"]
    # an always-accept predictor is the fixed window: identical rounds
    assert off.drop(columns="mode").reset_index(drop=True).equals(on.drop(columns="mode").reset_index(drop=True))
    # several predictors in one call: one controlled run each, named by their keys
    many = controller.controller_ablation(draft, target, prompts["a"], {"accept": Const(1.0), "reject": Const(0.0)},
                                 window=4, max_new_tokens=10)
    assert list(dict.fromkeys(many["mode"])) == ["OFF", "accept", "reject"]
    acc = many[many["mode"] == "accept"].drop(columns="mode").reset_index(drop=True)
    assert acc.equals(off.drop(columns="mode").reset_index(drop=True))
    assert (many[many["mode"] == "reject"].drafted <= 1).all()
    # a round the rule ended before its window took one more draft pass (the position it judged); one the
    # window or the response's end capped did not (the twin charges the same, serving.sim.twin)
    assert (acc.passes == acc.drafted).all() and (off.passes == off.drafted).all()
    rej = many[many["mode"] == "reject"]
    cap = np.minimum(4, 10 - rej.position - 1)
    assert (rej.drafted == 0).all() and (rej.passes == (cap > 0)).all() and rej.passes.sum() > 0
    g_rej = device_goodput.round_goodput(rej, draft_rate=50.0, prompt_len=5)
    np.testing.assert_allclose(g_rej.goodput, 1 / (rej.passes / 50.0 + device_goodput.verify_time(1, 5 + rej.position)))
    with pytest.raises(ValueError, match="OFF"):
        controller.controller_ablation(draft, target, prompts["a"], {"OFF": Const(1.0)}, window=4, max_new_tokens=10)
    g = device_goodput.round_goodput(off, draft_rate=50.0, prompt_len=5)
    assert (g.wasted == g.drafted - g.accepted).all()
    t = g.drafted / 50.0 + device_goodput.verify_time(g.drafted + 1, 5 + g.position)
    np.testing.assert_allclose(g.goodput, (g.accepted + 1) / t)
    with pytest.raises(ValueError, match="draft_rate"):
        device_goodput.round_goodput(off, draft_rate=0)
