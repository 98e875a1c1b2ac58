"""Invariants of ``specedge.decoding`` on tiny random-weight Llama models (and on the zoo's pairs).

The draft is a perturbed copy of the target, so greedy rounds accept anything from 0 to γ tokens and
every cache-cropping branch runs; an independent, smaller draft checks models of different shapes.
"""
import copy
import functools

import pytest
import torch
from scipy import stats
from transformers import LlamaConfig, LlamaForCausalLM

from specedge import decoding, paths, sampling

VOCAB = 96


def _llama(layers: int, hidden: int, seed: int) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256)
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def target():
    return _llama(2, 64, seed=1)


@pytest.fixture(scope="module")
def draft(target):
    model = copy.deepcopy(target)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for w in model.parameters():
            w.add_(0.15 * w.std() * torch.randn(w.shape, generator=g))
    return model


@pytest.fixture(scope="module")
def small_draft():
    return _llama(1, 32, seed=2)


def _prompt(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("gamma", [1, 2, 3, 5, 8])
def test_greedy_speculative_equals_greedy_autoregressive(target, draft, small_draft, gamma):
    """(a) T = 0: speculative decoding emits exactly the target's greedy tokens, for any draft and γ."""
    counts = set()
    for seed in range(2):
        prompt = _prompt(5 + 3 * seed, seed)
        reference = decoding.autoregressive(target, prompt, 40).tokens
        for d in (draft, small_draft):
            out = decoding.speculative(d, target, prompt, 40, gamma=gamma)
            assert torch.equal(out.tokens, reference)
            assert sum(r.accepted + 1 for r in out.rounds) == 40  # no round overshoots
            counts.update(out.accepted if d is draft else [])
    assert len(counts) >= min(gamma + 1, 3)  # partial acceptances happened: the crops ran


def _zoo_pairs():
    """Every draft x target pair of the zoo whose two checkpoints are built."""
    try:
        from specedge import zoo

        names = zoo.TARGETS + zoo.DRAFTS
    except (ImportError, AttributeError):  # the zoo is built by another part of the repository
        return []
    built = {n for n in names if (paths.ZOO / n / "config.json").is_file()}
    return [(d, t) for t in zoo.TARGETS for d in zoo.DRAFTS if {d, t} <= built]


@functools.lru_cache(maxsize=None)
def _zoo_model(name: str):
    from specedge import zoo

    return zoo.load_model(name)


@pytest.mark.parametrize("pair", [pytest.param(p, id=f"{p[0]}+{p[1]}") for p in _zoo_pairs()]
                         or [pytest.param(None, marks=pytest.mark.skip("no zoo checkpoints"))])
def test_greedy_speculative_equals_autoregressive_on_zoo(pair):
    """(a) on every committed zoo draft x target pair: a short held-out prompt (a different domain per
    pair), 32 new tokens, γ in {1, 3, 6}."""
    from specedge import zoo
    from specedge.zoo import corpus

    draft_model, target_model = _zoo_model(pair[0]), _zoo_model(pair[1])
    domain = corpus.DOMAINS[_zoo_pairs().index(pair) % len(corpus.DOMAINS)]
    text = zoo.eval_prompts(domain, 1)[0]
    prompt = zoo.load_tokenizer()(text, add_special_tokens=False)["input_ids"][-24:]
    reference = decoding.autoregressive(target_model, prompt, 32).tokens
    for gamma in (1, 3, 6):
        out = decoding.speculative(draft_model, target_model, prompt, 32, gamma=gamma)
        assert torch.equal(out.tokens, reference), (pair, gamma)


def _full_logits(model, ids) -> torch.Tensor:
    with torch.inference_mode():
        return model(input_ids=torch.as_tensor(ids)[None], use_cache=False).logits[0]


def test_autoregressive_cache_matches_full_forward(target):
    """(d) KV-cached decoding gives the logits of a full forward pass without cache."""
    prompt = _prompt(6)
    out = decoding.autoregressive(target, prompt, 30, temperature=1.0, seed=3, return_logits=True)
    full = _full_logits(target, torch.cat([prompt, out.tokens]))
    assert torch.allclose(out.logits, full[len(prompt) - 1:-1], atol=1e-5)


def _check_traces_against_full_forward(draft, target, prompt, out):
    """Recorded q, p and draft statistics equal those of uncached forward passes at every drafted position."""
    checked = 0
    for r in out.rounds:
        context = torch.cat([prompt, out.tokens[: r.position]])
        seq = torch.cat([context, torch.tensor(r.draft_ids, dtype=torch.long)])
        at = slice(len(context) - 1, len(seq) - 1)
        q = torch.softmax(_full_logits(draft, seq)[at], -1)
        p = torch.softmax(_full_logits(target, seq)[at], -1)
        ids = torch.tensor(r.draft_ids)[:, None]
        assert torch.allclose(torch.tensor(r.q), q.gather(1, ids)[:, 0], rtol=1e-4, atol=1e-6)
        assert torch.allclose(torch.tensor(r.p), p.gather(1, ids)[:, 0], rtol=1e-4, atol=1e-6)
        assert torch.allclose(torch.tensor(r.stats["max_prob"]), q.max(-1).values, rtol=1e-4)
        checked += r.drafted
    return checked


def test_speculative_caches_match_full_forward(target, draft):
    """(d) after many crops (T = 1: rejections anywhere), both caches still give uncached logits."""
    prompt = _prompt(7, 1)
    out = decoding.speculative(draft, target, prompt, 48, gamma=4, temperature=1.0, seed=11)
    assert 0 < sum(out.accepted) < sum(out.drafted)
    assert _check_traces_against_full_forward(draft, target, prompt, out) == sum(out.drafted)


def _first_token_pvalue(draft, target, prompt, rows: int, temperature: float) -> float:
    """Chi-square p-value of the first token of ``rows`` sampled speculative runs against the target's
    distribution (tokens expected < 5 times pooled into one bin)."""
    outs = decoding.speculative_batch(draft, target, [prompt] * rows, 2, gamma=1, temperature=temperature,
                                      top_k=3, seed=0)
    observed = torch.bincount(torch.stack([o.tokens[0] for o in outs]), minlength=VOCAB).double()
    expected = rows * sampling.probs(_full_logits(target, prompt)[-1], temperature).double()
    big = expected >= 5
    observed = torch.cat([observed[big], observed[~big].sum()[None]]).numpy()
    expected = torch.cat([expected[big], expected[~big].sum()[None]]).numpy()
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


def test_sampled_loop_follows_target(target, draft, monkeypatch):
    """(b) end to end: 2000 rows sampled through the whole loop (top-3 drafts) give the target's first-token
    distribution; the same test rejects the inverted q/p ratio. T = 0.05 makes the tiny model's
    distribution peaked enough for the test to have power."""
    prompt = _prompt(4)
    assert _first_token_pvalue(draft, target, prompt, 2000, 0.05) > 1e-4
    monkeypatch.setattr(sampling, "acceptance_ratio", lambda p_x, q_x: q_x / p_x)
    assert _first_token_pvalue(draft, target, prompt, 2000, 0.05) < 1e-12


def test_batched_verification_equals_per_sequence(target, draft):
    """Rows of different prompt lengths and γ verified in one padded pass equal one-row runs."""
    prompts = [_prompt(n, n) for n in (3, 11, 6)]

    def policy(row, rounds):  # per-row γ that changes over rounds: ragged batches every round
        return 1 + (row + len(rounds)) % 4

    batched = decoding.speculative_batch(draft, target, prompts, 25, gamma=policy)
    for row, (prompt, out) in enumerate(zip(prompts, batched)):
        alone = decoding.speculative(draft, target, prompt, 25, gamma=lambda _, rounds: policy(row, rounds))
        assert torch.equal(out.tokens, alone.tokens)
        assert out.accepted == alone.accepted
        assert [r.p for r in out.rounds] == [r.p for r in alone.rounds]
    # Sampling: the masked (holey) batched cache still gives the uncached target probabilities.
    sampled = decoding.speculative_batch(draft, target, prompts, 25, gamma=policy, temperature=1.0, seed=2)
    for prompt, out in zip(prompts, sampled):
        assert len(out.tokens) == 25
        assert _check_traces_against_full_forward(draft, target, prompt, out) == sum(out.drafted)


def test_heterogeneous_drafts_in_one_batch(target, draft, small_draft):
    """Devices with different draft models (GOODSPEED's clients) share one batched verifier."""
    prompts = [_prompt(4, 7), _prompt(8, 8)]
    outs = decoding.speculative_batch([draft, decoding.CausalLM(small_draft)], target, prompts, 20, gamma=3)
    for prompt, out in zip(prompts, outs):
        assert torch.equal(out.tokens, decoding.autoregressive(target, prompt, 20).tokens)


def test_batched_runner_logits_equal_single_sequences(target):
    """One BatchedCausalLM.feed over right-padded rows equals separate uncached forward passes."""
    prompts = [_prompt(n, 20 + n) for n in (4, 9, 1)]
    width = max(len(p) for p in prompts)
    ids = torch.zeros((3, width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, : len(p)] = p
    valid = torch.arange(width)[None] < torch.tensor([len(p) for p in prompts])[:, None]
    runner = decoding.BatchedCausalLM(target, 3)
    with torch.inference_mode():
        logits = runner.feed(ids, valid, keep=width)
    for i, p in enumerate(prompts):
        assert torch.allclose(logits[i, : len(p)], _full_logits(target, p), atol=1e-5)


def test_policy_stop_rule_and_fallback(target, draft):
    """γ from a policy (0 = target alone, AS²) and a stop rule (WISP) keep the greedy output exact."""
    prompt = _prompt(5, 3)
    reference = decoding.autoregressive(target, prompt, 30).tokens
    out = decoding.speculative(draft, target, prompt, 30, gamma=lambda row, rounds: len(rounds) % 3)
    assert torch.equal(out.tokens, reference)
    assert 0 in out.drafted
    seen = []

    def stop(i, logits):
        seen.append(i)
        assert logits.shape == (VOCAB,)
        return i == 2

    out = decoding.speculative(draft, target, prompt, 30, gamma=6, stop_rule=stop)
    assert torch.equal(out.tokens, reference)
    assert max(out.drafted) <= 2 and max(seen) == 2


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_stop_before_drops_the_flagged_position(target, draft, temperature):
    """WISP's exclusive rule (eq 25): the position the rule flags is not drafted; a flag at position 1
    sends no draft. The output stays exact at T = 0 (and the caches consistent at T = 1)."""
    prompt = _prompt(5, 4)
    state = {"round": 0}

    def stop(i, logits):  # flag position 1 every third round, else position 3
        return i == (1 if state["round"] % 3 == 0 else 3)

    def gamma(row, rounds):
        state["round"] = len(rounds)
        return 5

    kw = dict(gamma=gamma, temperature=temperature, seed=3, stop_rule=stop)
    after = decoding.speculative(draft, target, prompt, 30, **kw)
    before = decoding.speculative(draft, target, prompt, 30, stop_before=True, **kw)
    # (the last round may draft less: the token budget caps it)
    assert set(before.drafted[:-1]) == {0, 2} and set(after.drafted[:-1]) == {1, 3}
    if temperature == 0:
        reference = decoding.autoregressive(target, prompt, 30).tokens
        assert torch.equal(before.tokens, reference) and torch.equal(after.tokens, reference)
    assert len(before.tokens) == 30
    # the draft cache stays right, also after rounds with no draft: the q of each round's first
    # drafted token equals the draft's probability computed from scratch on the committed context
    checked = 0
    for r in before.rounds:
        if r.drafted and temperature > 0:
            context = torch.cat([prompt, before.tokens[: r.position]])
            with torch.inference_mode():
                q = sampling.probs(draft(context[None]).logits[0, -1], temperature)
            assert abs(float(q[r.draft_ids[0]]) - r.q[0]) < 1e-4
            checked += 1
    assert checked > 3 or temperature == 0


def test_sampling_is_seeded(target, draft):
    prompt = _prompt(5)
    runs = [decoding.speculative(draft, target, prompt, 20, gamma=3, temperature=1.0, seed=s).tokens
            for s in (4, 4, 5)]
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])
    top = decoding.speculative(draft, target, prompt, 20, gamma=3, temperature=0.8, top_k=4, seed=4)
    assert all(qx > 0 for r in top.rounds for qx in r.q)


def test_eos_stops_generation(target, draft):
    prompt = _prompt(5)
    reference = decoding.autoregressive(target, prompt, 30).tokens
    eos = int(reference[12])
    cut = int((reference == eos).nonzero()[0, 0]) + 1
    assert torch.equal(decoding.autoregressive(target, prompt, 30, eos_token_id=eos).tokens, reference[:cut])
    assert torch.equal(decoding.speculative(draft, target, prompt, 30, gamma=4, eos_token_id=eos).tokens,
                       reference[:cut])


def test_traces_frame_and_round_trip(target, draft, tmp_path):
    out = decoding.speculative(draft, target, _prompt(6), 30, gamma=4, temperature=1.0, seed=1)
    positions = decoding.traces_frame(out.rounds, draft="perturbed")
    assert list(positions.columns) == ["draft", *decoding.POSITION_COLUMNS]
    assert len(positions) == sum(out.drafted)
    assert positions["accepted"].sum() == sum(out.accepted)
    assert positions["first_rejected"].sum() == sum(a < d for a, d in zip(out.accepted, out.drafted))
    rounds = decoding.traces_frame(out.rounds, per="round")
    assert list(rounds.columns) == decoding.ROUND_COLUMNS and len(rounds) == len(out.rounds)
    assert rounds["prefill"].tolist() == [True] + [False] * (len(rounds) - 1)
    assert sampling.acceptance_rate(rounds["accepted"], rounds["drafted"]) == \
        pytest.approx(positions["accepted"].mean())
    back = decoding.load_traces(decoding.save_traces(positions, tmp_path / "t.csv"))
    assert back.shape == positions.shape
    assert (back["draft_id"] == positions["draft_id"]).all()
    assert back["q"].tolist() == pytest.approx(positions["q"].tolist(), rel=1e-9)


@pytest.mark.parametrize("kwargs, name", [
    (dict(gamma=0), "gamma"), (dict(gamma=-2), "gamma"), (dict(gamma=2.5), "gamma"),
    (dict(gamma=lambda row, rounds: -1), "gamma"),
    (dict(temperature=-1.0), "temperature"), (dict(temperature=float("inf")), "temperature"),
    (dict(temperature=1.0, top_k=0), "top_k"), (dict(temperature=1.0, top_k=VOCAB + 1), "top_k"),
    (dict(max_new_tokens=0), "max_new_tokens"),
])
def test_invalid_parameters_raise(target, draft, kwargs, name):
    kwargs = {"max_new_tokens": 5, **kwargs}
    with pytest.raises(ValueError, match=name):
        decoding.speculative(draft, target, _prompt(4), **kwargs)


def test_invalid_inputs_raise(target, draft):
    with pytest.raises(ValueError, match="prompt"):
        decoding.autoregressive(target, [], 5)
    with pytest.raises(ValueError, match="draft"):
        decoding.speculative_batch([draft], target, [_prompt(3), _prompt(4)], 5)
