"""Early-exit adapters and early-exit verification on tiny random Llama models (LayerSkip-style invariants)."""
import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specedge import decoding, early_exit
from specedge.early_exit import concurrent
from specedge.early_exit.sim import FSDConfig, simulate

V = 48


def _llama(layers, seed, d=32):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=V, hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def pair():
    target = _llama(4, 0)
    # a draft that agrees with the target often: the target itself, perturbed, with one layer fewer
    draft = _llama(3, 0)
    draft.load_state_dict({k: v for k, v in target.state_dict().items() if "layers.3." not in k})
    return draft, target


def test_last_exit_equals_full_model(pair):
    _, target = pair
    ee = early_exit.EarlyExits(target)
    ids = torch.randint(0, V, (2, 11), generator=torch.Generator().manual_seed(1))
    logits = ee.all_exit_logits(ids)
    assert logits.shape == (4, 2, 11, V)
    torch.testing.assert_close(logits[-1], target(ids).logits, rtol=0, atol=0)


def test_untrained_adapter_is_logit_lens_and_sizes(pair):
    _, target = pair
    ee = early_exit.EarlyExits(target, param_fraction=0.015)
    ids = torch.randint(0, V, (1, 9), generator=torch.Generator().manual_seed(2))
    with ee.capture() as hidden, torch.no_grad():
        target.model(input_ids=ids)
        lens = target.lm_head(target.model.norm(hidden[0]))
        torch.testing.assert_close(ee.exit_logits(1, hidden[0]), lens)
    assert 0.005 < ee.param_fraction() < 0.03
    assert ee.n_layers == 4 and len(ee.adapters) == 3
    with pytest.raises(ValueError, match="layer"):
        ee.exit_logits(5, hidden[0])
    with pytest.raises(ValueError, match="param_fraction"):
        early_exit.EarlyExits(target, param_fraction=2.0)


def test_training_touches_only_adapters_and_raises_agreement(pair):
    _, target = pair
    before = {k: v.clone() for k, v in target.state_dict().items()}
    ee = early_exit.EarlyExits(target, rank=8)
    g = torch.Generator().manual_seed(3)

    def batches():
        while True:
            yield torch.randint(0, V, (4, 16), generator=g)

    held = [torch.randint(0, V, (4, 16), generator=torch.Generator().manual_seed(9))]
    agree0, _ = early_exit.agreement(ee, held)
    losses = early_exit.train(ee, batches(), steps=40, lr=3e-3, progress=False)
    agree1, conf = early_exit.agreement(ee, held)
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    assert agree1[-1] == 1.0 and agree0[-1] == 1.0
    assert np.mean(agree1[:-1]) > np.mean(agree0[:-1])
    assert all(0 < c <= 1 for c in conf)


def test_training_a_subset_of_exits_leaves_the_others_untouched(pair):
    _, target = pair
    ee = early_exit.EarlyExits(target, rank=8)
    before = [a.up.weight.clone() for a in ee.adapters]
    g = torch.Generator().manual_seed(4)
    batches = iter(lambda: torch.randint(0, V, (2, 12), generator=g), None)
    losses = early_exit.train(ee, batches, steps=3, lr=3e-3, progress=False, exits=[2])
    assert len(losses) == 3
    assert not torch.equal(ee.adapters[1].up.weight, before[1])          # exit 2 trained
    assert torch.equal(ee.adapters[0].up.weight, before[0]) and torch.equal(ee.adapters[2].up.weight, before[2])
    for bad in ([], [0], [ee.n_layers]):                                 # the last exit is the target itself
        with pytest.raises(ValueError, match="exits"):
            early_exit.train(ee, batches, steps=1, progress=False, exits=bad)


def test_save_load_roundtrip(pair, tmp_path):
    _, target = pair
    ee = early_exit.EarlyExits(target, rank=4)
    with torch.no_grad():
        for p in ee.adapters.parameters():
            p.normal_()
    early_exit.save(ee, tmp_path, dict(target="tiny"))
    ee2, meta = early_exit.load(target, tmp_path)
    assert meta["rank"] == 4 and meta["n_exits"] == 3
    ids = torch.randint(0, V, (1, 5))
    torch.testing.assert_close(ee.all_exit_logits(ids), ee2.all_exit_logits(ids))


def test_ee_speculative_emits_exactly_sd_tokens_and_final_outcome(pair):
    draft, target = pair
    ee = early_exit.EarlyExits(target)
    for seed in range(2):
        prompt = torch.randint(0, V, (6,), generator=torch.Generator().manual_seed(seed))
        tokens, traces = early_exit.speculative(draft, ee, prompt, 25, gamma=4)
        ref = decoding.speculative(draft, target, prompt, 25, gamma=4)
        assert tokens.tolist() == ref.tokens.tolist()
        assert [t.accepted for t in traces] == ref.accepted
        ar = decoding.autoregressive(target, prompt, 25)
        assert tokens.tolist() == ar.tokens.tolist()
        for t in traces:
            assert [e.layer for e in t.exits] == [1, 2, 3]   # streamed in layer order, final excluded
            assert all(0 <= e.accepted <= t.drafted for e in t.exits)
    assert sum(t.accepted for t in traces) > 0              # the test pair does accept drafts


def test_layer_stream_matches_trace_outcomes(pair):
    draft, target = pair
    ee = early_exit.EarlyExits(target)
    prompt = torch.arange(5)
    drafts = torch.tensor([3, 4, 5])
    got = []
    stream = early_exit.LayerStream(ee, got.append)
    stream.start, stream.draft_ids = len(prompt) - 1, drafts
    with ee.capture(on_layer=stream) as hidden, torch.no_grad():
        target(torch.cat([prompt, drafts])[None])
        want = [early_exit.exit_outcomes(ee, l, hidden[l - 1][0, 4:8], drafts) for l in (1, 2, 3)]
    assert got == want


def test_concurrent_fsd_emits_sd_tokens(pair):
    draft, target = pair
    ee = early_exit.EarlyExits(target)
    prompts = [torch.randint(0, V, (6,), generator=torch.Generator().manual_seed(s)) for s in range(2)]
    cfg = FSDConfig(gamma=3, T_d=0.01, T_t=0.2, T_c=0.02, threads=2)
    out = concurrent.run(draft, ee, prompts, 12, cfg, mode="fsd", time_scale=0.05)
    refs = [decoding.speculative(draft, target, p, 12, gamma=3).tokens.tolist() for p in prompts]
    assert out.tokens_out == refs
    traces = [early_exit.speculative(draft, ee, p, 12, gamma=3)[1] for p in prompts]
    sim = simulate(traces, cfg, "fsd")
    assert out.rounds == sim.rounds and out.checks == sim.checks


def test_two_exits_per_layer_positions_and_final(pair):
    """per_layer=2: position 2l − 1 is layer l's residual stream after attention, 2l its output; the
    last position is the target itself; exits stream in computation order."""
    _, target = pair
    ee = early_exit.EarlyExits(target, per_layer=2)
    assert ee.n_layers == 8 and len(ee.adapters) == 7
    ids = torch.arange(6)[None]
    order = []
    with ee.capture(on_layer=lambda p, h: order.append(p)) as hidden, torch.no_grad():
        out = target(ids, output_hidden_states=True)
    assert order == list(range(1, 9))
    for l in range(1, 5):   # layer outputs at even positions equal transformers' hidden states
        if l < 4:           # (the last hidden state transformers returns is after the final norm)
            torch.testing.assert_close(hidden[2 * l - 1], out.hidden_states[l])
    assert not torch.equal(hidden[0], hidden[1])   # the MLP changed the stream between the two exits
    torch.testing.assert_close(ee.all_exit_logits(ids)[-1], out.logits)
    assert ee.rank == early_exit.bottleneck_rank(target, 0.015, per_layer=2) < early_exit.bottleneck_rank(target)
    with pytest.raises(ValueError, match="per_layer"):
        early_exit.EarlyExits(target, per_layer=3)


def test_save_load_keeps_exit_layout(pair, tmp_path):
    _, target = pair
    ee = early_exit.EarlyExits(target, rank=4, per_layer=2)
    early_exit.save(ee, tmp_path / "a", dict(complete=True))
    ee2, meta = early_exit.load(target, tmp_path / "a")
    assert meta["per_layer"] == 2 and ee2.n_layers == 8 and meta["n_exits"] == 7


def test_load_sets_skips_a_pair_that_is_not_built(capsys):
    from specedge.early_exit.zoo_adapters import load_sets

    assert load_sets({"missing": ("no-such-draft", "no-such-target")}) == {}
    assert "missing: no-such-draft/no-such-target or its adapters not built yet" in capsys.readouterr().out
