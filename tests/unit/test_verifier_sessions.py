"""The server's verifier (``serving.real.verifier``) on the zoo's target: greedy verdicts against the target's own
greedy continuation (an independent decode), session caches that keep exactly the accepted prefix (bytes worked
from the model's shape), requests refused naming the field, and a failed pass that leaves no trace."""
import pytest
import torch

from specedge import decoding, sampling, zoo
from specedge.serving.real.verifier import Request, Verifier, timed_verify


@pytest.fixture(scope="module")
def prompt():
    return zoo.load_tokenizer().encode(zoo.eval_prompts("code", 1)[0])[-20:]


@pytest.fixture(scope="module")
def greedy(target, prompt):
    return decoding.autoregressive(target, prompt, 6).tokens.tolist()


def _per_token_bytes(model) -> int:
    c = model.config
    dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return 2 * c.num_hidden_layers * c.num_key_value_heads * dim * 4   # keys and values, float32


def test_drafts_equal_to_the_greedy_continuation_are_all_accepted_with_a_bonus(target, prompt, greedy):
    v = Verifier(target)
    (r,) = v.verify([Request("s", prompt, greedy[:3])])
    assert (r.accepted, r.token, r.bonus, r.accept_prob_sum) == (3, greedy[3], True, 3.0)
    assert v.sessions["s"].tokens == prompt + greedy[:3]
    assert v.cached_length("s") == len(prompt) + 3
    assert v.cache_bytes("s") == (len(prompt) + 3) * _per_token_bytes(target)
    # the follow-up carries the bonus token first; its verdict continues the same greedy text
    (r2,) = v.verify([Request("s", [greedy[3]], greedy[4:6])])
    assert (r2.accepted, r2.bonus) == (2, True) and v.cached_length("s") == len(prompt) + 6


def test_a_wrong_last_draft_is_rejected_and_corrected_and_the_cache_keeps_only_the_accepted(target, prompt, greedy):
    wrong = (greedy[2] + 1) % target.config.vocab_size
    for cache in (True, False):
        v = Verifier(target, cache=cache)
        (r,) = v.verify([Request("s", prompt, greedy[:2] + [wrong])])
        assert (r.accepted, r.token, r.bonus, r.accept_prob_sum) == (2, greedy[2], False, 2.0)
        assert v.sessions["s"].tokens == prompt + greedy[:2]
        assert v.cached_length("s") == (len(prompt) + 2 if cache else 0)
        assert v.cache_bytes("s") == ((len(prompt) + 2) * _per_token_bytes(target) if cache else 0)


def test_a_batch_of_sessions_gives_each_its_own_verdict(target, prompt, greedy):
    other = prompt[5:]
    ref = decoding.autoregressive(target, other, 3).tokens.tolist()
    v = Verifier(target)
    a, b = v.verify([Request("a", prompt, greedy[:2]), Request("b", other, [])])
    assert (a.accepted, a.token) == (2, greedy[2])
    assert (b.accepted, b.token, b.bonus, b.accept_prob_sum) == (0, ref[0], True, 0.0)   # no drafts: the next token


def test_sampling_with_the_targets_own_distribution_accepts_every_draft(target, prompt):
    v = Verifier(target, seed=3)
    with torch.inference_mode():
        logits = target(torch.tensor([prompt])).logits[0, -1].float()
    p = sampling.probs(logits, 1.0)
    tok = int(p.argmax())
    # q = p at the drafted position: min(1, p/q) = 1, so the draft is accepted whatever the draw
    (r,) = v.verify([Request("s", prompt, [tok], p[None].clone(), 1.0)])
    assert r.accepted == 1 and r.accept_prob_sum == pytest.approx(1.0, abs=1e-5)
    (r0,) = Verifier(target).verify([Request("t", prompt, [], None, 1.0)])
    assert (r0.accepted, r0.bonus, r0.accept_prob_sum) == (0, True, 0.0)


def test_sessions_close_and_unknown_ones_hold_nothing(target, prompt):
    v = Verifier(target)
    assert v.verify([]) == []
    assert (v.cached_length("nobody"), v.cache_bytes("nobody")) == (0, 0)
    v.verify([Request("s", prompt, [])])
    assert v.cache_bytes("s") > 0
    v.close("s")
    v.close("s")                       # closing twice is harmless
    assert (v.cached_length("s"), v.cache_bytes("s"), "s" in v.sessions) == (0, 0, False)
    res, seconds = timed_verify(v, [Request("s", prompt, [])])
    assert len(res) == 1 and seconds >= 0


@pytest.mark.parametrize("make, match", [
    (lambda V: [Request("new", [], [3])], "a new session must send its prompt"),
    (lambda V: [Request("x", [1, V], [])], r"new_tokens: ids \[\d+\] outside the vocabulary"),
    (lambda V: [Request("x", [1], [-1])], r"draft_ids: ids \[-1\] outside"),
    (lambda V: [Request("held", [], [])], "nothing to verify"),
    (lambda V: [Request("held", [], [3])], "a follow-up carries at least the last verdict's token"),
    (lambda V: [Request("x", [1], [], temperature=-0.1)], "temperature: must be >= 0"),
    (lambda V: [Request("x", [1], [2], None, 1.0)], r"draft: distribution of shape \(1, \d+\) needed .* got None"),
    (lambda V: [Request("x", [1], [2], torch.ones(2, V) / V, 1.0)], r"got \(2, \d+\)"),
    (lambda V: [Request("x", [1], []), Request("x", [2], [])], "one request per session per batch"),
])
def test_malformed_requests_are_refused_naming_the_field(target, prompt, make, match):
    v = Verifier(target)
    v.verify([Request("held", prompt, [])])
    with pytest.raises(ValueError, match=match):
        v.verify(make(target.config.vocab_size))
    assert set(v.sessions) == {"held"}


def test_the_vocabulary_edge_is_an_id_and_a_temperature_of_zero_is_greedy(target):
    V = target.config.vocab_size
    (r,) = Verifier(target).verify([Request("x", [0, V - 1], [], temperature=0.0)])
    assert r.accepted == 0


def test_a_pass_that_raises_leaves_no_new_session_and_no_changed_one(target, prompt, greedy, monkeypatch):
    v = Verifier(target)
    v.verify([Request("old", prompt, [])])
    tokens, cached = list(v.sessions["old"].tokens), v.cached_length("old")
    state = v.sessions["old"].generator.get_state().clone()

    def boom(*a, **k):
        raise RuntimeError("acceptance failed")

    monkeypatch.setattr(v, "_accept", boom)
    with pytest.raises(RuntimeError, match="acceptance failed"):
        v.verify([Request("old", [greedy[0]], greedy[1:3]), Request("new", prompt, [])])
    assert set(v.sessions) == {"old"}
    assert v.sessions["old"].tokens == tokens and v.cached_length("old") == cached
    assert torch.equal(v.sessions["old"].generator.get_state(), state)


def test_a_sessions_draws_are_seeded_by_the_verifier_seed_and_its_stream(target, prompt):
    def draws(seed, name, stream=None):
        v = Verifier(target, seed=seed)
        v._session(name, stream)
        return torch.rand(4, generator=v.sessions[name].generator)

    assert torch.equal(draws(0, "a"), draws(0, "b", stream="a"))        # the stream names the draws
    assert not torch.equal(draws(0, "a"), draws(1, "a"))
    assert not torch.equal(draws(0, "a"), draws(0, "b"))
