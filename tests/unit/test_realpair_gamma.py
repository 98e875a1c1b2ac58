"""The real pair's γ sweep (``experiments.model_zoo.realpair_gamma``) on a tiny random pair: no real weights needed."""
import copy

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specedge import decoding
from specedge.experiments.model_zoo import realpair_gamma as rg
from specedge.solvers import zheng2025


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=128)
    target = LlamaForCausalLM(cfg).eval()
    draft = copy.deepcopy(target)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(0.1 * w.std() * torch.randn(w.shape, generator=g))
    prompts = {d: [torch.randint(0, 64, (8,), generator=torch.Generator().manual_seed(k))] for k, d in enumerate("ab")}
    return draft, target, prompts


def test_sweep_rows_bound_and_winner(pair):
    draft, target, prompts = pair
    t = rg.sweep(draft, target, prompts, gammas=(1, 3), new_tokens=10, progress=lambda *_: None)
    assert list(t.groupby("domain", sort=False).gamma.apply(list)) == [[0, 1, 3], [0, 1, 3]]
    ar = t[t.gamma == 0]
    assert (ar.speedup == 1.0).all() and ar.alpha.isna().all()
    sd = t[t.gamma > 0]
    assert sd.alpha.between(0, 1).all() and (sd.tau >= 0).all() and (sd.tokens == 10).all()
    for r in sd.itertuples():   # the bound is eq (11) of the measured α and c, not a typed number
        assert r.analytic == pytest.approx(float(zheng2025.speedup(r.gamma, min(max(r.alpha, 1e-9), 1 - 1e-9), r.c)), abs=1e-3)
        assert r.speedup == pytest.approx(ar[ar.domain == r.domain].seconds.iloc[0] / r.seconds, rel=1e-9)
    w = rg.winners(t)
    for r in w.itertuples():
        rows = sd[sd.domain == r.domain]
        assert r.gamma_measured == rows.gamma[rows.speedup.idxmax()]
        assert r.gamma_analytic == rows.gamma[rows.analytic.idxmax()]


def test_sweep_refuses_an_output_that_differs_from_ar(pair, monkeypatch):
    draft, target, prompts = pair
    real = decoding.speculative

    def wrong(*a, **k):
        g = real(*a, **k)
        g.tokens = g.tokens.flip(0) + 1
        return g

    monkeypatch.setattr(decoding, "speculative", wrong)
    with pytest.raises(AssertionError, match="differs from greedy AR"):
        rg.sweep(draft, target, prompts, gammas=(2,), new_tokens=6, progress=lambda *_: None)


def test_speculative_speedups_without_a_bound_and_live_rounds(pair):
    from specedge import profiling
    from specedge.zoo.acceptance import live_rounds

    draft, target, prompts = pair
    t = profiling.speculative_speedups(draft, target, prompts, (2,), 8, progress=lambda *_: None)
    sd = t[t.gamma == 2]
    assert sd.analytic.isna().all() and sd.identical_to_ar.all() and (sd.tokens == 8).all()
    ids = {d: [p.tolist() for p in ps] for d, ps in prompts.items()}
    seen = []
    table, traces = live_rounds(draft, target, ids, 8, gammas=(2, 3), temperatures=(0.0,), progress=lambda *_: None,
                                checkpoint=lambda tb, tr: seen.append(len(tb)))
    assert seen == [2, 4]                                       # a checkpoint after each domain
    assert list(table.gamma) == [2, 3, 2, 3] and (table.accepted <= table.drafted).all()
    assert table.acceptance_rate.between(0, 1).all() and set(traces.domain) == set(ids)
