"""The acceptance rule, TK-SLT top-K drafts and the metric definitions of ``specedge.sampling``."""
import math

import numpy as np
import pytest
import torch
from scipy import stats
from transformers.generation.utils import _speculative_sampling

from specedge import sampling

V, GAMMA, DRAWS = 8, 3, 100_000


def _dists(seed: int, temperature: float = 1.0, top_k=None):
    """A fixed draft/target pair on a small vocabulary: q (γ, V) and p (γ + 1, V), quite different."""
    g = torch.Generator().manual_seed(seed)
    target = 1.5 * torch.randn(GAMMA + 1, V, generator=g)
    draft = target[:GAMMA] + 1.5 * torch.randn(GAMMA, V, generator=g)
    return sampling.probs(draft, temperature, top_k), sampling.probs(target, temperature)


def _emitted(q, p, seed: int):
    """Run the rule on DRAWS independent drafts; the first and second emitted tokens (-1 if none)."""
    g = sampling.make_generator(seed)
    drafts = sampling.sample(q.expand(DRAWS, -1, -1), g)
    v = sampling.verify(drafts, q.expand(DRAWS, -1, -1), p.expand(DRAWS, -1, -1), g)
    n, t = v.accepted, v.token
    first = torch.where(n >= 1, drafts[:, 0], t)
    second = torch.where(n >= 2, drafts[:, 1], torch.where(n == 1, t, -1))
    return first, second, n


def _chi2_pvalue(tokens: torch.Tensor, p: torch.Tensor) -> float:
    tokens = tokens[tokens >= 0]
    observed = torch.bincount(tokens, minlength=p.numel()).double().numpy()
    expected = p.double().numpy() * observed.sum()
    support = expected > 0
    assert observed[~support].sum() == 0, "a token with target probability 0 was emitted"
    return stats.chisquare(observed[support], expected[support] * observed.sum() / expected[support].sum()).pvalue


@pytest.mark.parametrize("top_k", [None, 2, 5])
def test_output_follows_target_distribution(top_k):
    """(b) chi-square over 1e5 draws: emitted tokens ~ p, for full and TK-SLT top-K drafts."""
    q, p = _dists(0, top_k=top_k)
    first, second, n = _emitted(q, p, seed=1)
    assert (n == 0).sum() > 5000 and (n >= 2).sum() > 5000  # rejections and acceptances both exercised
    assert _chi2_pvalue(first, p[0]) > 1e-4
    # Given position 1 accepted, position 2 is again distributed as p_2.
    assert _chi2_pvalue(second, p[1]) > 1e-4


@pytest.mark.parametrize("top_k", [None, 3])
def test_inverted_ratio_fails_the_same_test(monkeypatch, top_k):
    """(b) the same chi-square test rejects a sampler that accepts with q/p instead of p/q."""
    q, p = _dists(0, top_k=top_k)
    monkeypatch.setattr(sampling, "acceptance_ratio", lambda p_x, q_x: q_x / p_x)
    first, _, _ = _emitted(q, p, seed=1)
    assert _chi2_pvalue(first, p[0]) < 1e-12


def test_greedy_is_the_degenerate_rule():
    """T = 0: one-hot q and p make ``verify`` deterministic and equal to ``verify_greedy``."""
    g = torch.Generator().manual_seed(3)
    b = 4000
    target = torch.randn(b, GAMMA + 1, V, generator=g)
    draft = target[:, :GAMMA] + 0.8 * torch.randn(b, GAMMA, V, generator=g)
    drafts = draft.argmax(-1)
    lengths = torch.randint(0, GAMMA + 1, (b,), generator=g)
    exact = sampling.verify(drafts, sampling.probs(draft, 0), sampling.probs(target, 0),
                            sampling.make_generator(5), lengths)
    fast = sampling.verify_greedy(drafts, target.argmax(-1), lengths)
    for field in ("accepted", "token", "bonus"):
        assert torch.equal(getattr(exact, field), getattr(fast, field))
    assert len(set(exact.accepted.tolist())) == GAMMA + 1
    # The emitted token is always the target's argmax at position n + 1.
    assert torch.equal(fast.token, target.argmax(-1).gather(1, fast.accepted[:, None])[:, 0])


def test_per_row_lengths_match_unpadded_rows():
    """A row padded to a longer γ gives the same verdict as the row alone (server batching)."""
    q, p = _dists(4)
    g = torch.Generator().manual_seed(0)
    for length in range(GAMMA + 1):
        drafts = sampling.sample(q, g)
        for seed in range(20):
            alone = sampling.verify(drafts[:length], q[:length], p[:length + 1], sampling.make_generator(seed))
            # The first `length` uniforms are the same draws; the rule must not look past a row's length.
            padded = sampling.verify(drafts[None], q[None], p[None], sampling.make_generator(seed),
                                     lengths=[length])
            assert int(padded.accepted[0]) == int(alone.accepted) <= length
            assert bool(padded.bonus[0]) == bool(alone.bonus)


def test_agrees_with_transformers_speculative_sampling():
    """(c) on identical logits and the same seeded draws, our verdict equals transformers' own."""
    vocab, gamma, prefix = 50, 5, 7
    seen = set()
    for seed in range(300):
        g = torch.Generator().manual_seed(10_000 + seed)
        new_logits = 2 * torch.randn(1, gamma + 1, vocab, generator=g)
        cand_logits = new_logits[:, :gamma] + torch.randn(1, gamma, vocab, generator=g)
        drafts = sampling.sample(torch.softmax(cand_logits[0], -1), g)
        cand_ids = torch.cat([torch.randint(0, vocab, (prefix,), generator=g), drafts])[None]
        torch.manual_seed(seed)  # transformers draws from the global RNG: rand_like, then multinomial
        theirs, n_theirs = _speculative_sampling(cand_ids, cand_logits, gamma, new_logits)
        ours = sampling.verify(drafts, torch.softmax(cand_logits[0], -1), torch.softmax(new_logits[0], -1),
                               sampling.make_generator(seed))
        n = int(ours.accepted)
        assert n == int(n_theirs)
        assert torch.equal(torch.cat([drafts[:n], ours.token.view(1)]), theirs[0])
        seen.add(n)
    assert seen == set(range(gamma + 1))  # every branch (each rejection point and the bonus) compared


def test_probs():
    logits = torch.tensor([[1.0, 3.0, 2.0, 3.0, -1.0]])
    assert torch.equal(sampling.probs(logits, 0), torch.tensor([[0.0, 1.0, 0.0, 0.0, 0.0]]))  # first argmax
    full = sampling.probs(logits, 1.0)
    assert torch.allclose(full, torch.softmax(logits, -1))
    assert torch.allclose(sampling.probs(logits, 2.0), torch.softmax(logits / 2, -1))
    top = sampling.probs(logits, 1.0, top_k=3)
    assert top[0, 0] == 0 and top[0, 4] == 0
    assert torch.allclose(top.sum(-1), torch.ones(1))
    kept = torch.tensor([1, 2, 3])
    assert torch.allclose(top[0, kept], full[0, kept] / full[0, kept].sum())
    assert torch.allclose(sampling.probs(logits, 1.0, top_k=5), full)


@pytest.mark.parametrize("call, name", [
    (lambda: sampling.probs(torch.zeros(4), -0.5), "temperature"),
    (lambda: sampling.probs(torch.zeros(4), float("nan")), "temperature"),
    (lambda: sampling.probs(torch.zeros(4), 1.0, top_k=0), "top_k"),
    (lambda: sampling.probs(torch.zeros(4), 1.0, top_k=5), "top_k"),
    (lambda: sampling.probs(torch.zeros(4), 1.0, top_k=2.5), "top_k"),
    (lambda: sampling.check_gamma(0), "gamma"),
    (lambda: sampling.check_gamma(2.0), "gamma"),
    (lambda: sampling.make_generator(-1), "seed"),
    (lambda: sampling.expected_tokens_per_round(1.2, 3), "alpha"),
])
def test_invalid_parameters_raise(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_acceptance_probability_is_the_mean_first_acceptance():
    """zheng2025 eq (8)/(9): α = Σ min(p, q), checked against the rule's empirical first acceptance."""
    for top_k in (None, 2):
        q, p = _dists(7, top_k=top_k)
        _, _, n = _emitted(q, p, seed=2)
        alpha = float(sampling.acceptance_probability(p[0], q[0]))
        assert abs((n >= 1).float().mean().item() - alpha) < 4 * math.sqrt(alpha * (1 - alpha) / DRAWS)


def test_metric_definitions():
    accepted, drafted = [4, 0, 2, 4, 1], [4, 4, 4, 4, 2]
    assert sampling.acceptance_rate(accepted, drafted) == pytest.approx(11 / 18)
    assert sampling.mean_acceptance_length(accepted) == pytest.approx(1 + 11 / 5)
    # Position 1: 4 of 5 rounds pass; 2: 3 of the 4 that reach it; 3: 2 of 3; 4: 2 of 2.
    assert np.allclose(sampling.per_position_acceptance(accepted, drafted), [4 / 5, 3 / 4, 2 / 3, 1])
    assert np.isnan(sampling.per_position_acceptance([0, 0], [1, 2])[1])
    # α of the i.i.d. model: 11 accepted over Σ min(a + 1, d) = 4 + 1 + 3 + 4 + 2 positions reached.
    assert sampling.iid_acceptance(accepted, drafted) == pytest.approx(11 / 14)
    with pytest.raises(ValueError, match="accepted"):
        sampling.acceptance_rate([3], [2])


def test_expected_tokens_per_round_matches_simulation():
    """(1 - α^{γ+1})/(1 - α) against i.i.d. Bernoulli acceptance, and its α → 1 limit γ + 1."""
    rng = np.random.default_rng(0)
    for alpha in (0.3, 0.75):
        for gamma in (1, 4, 8):
            ok = rng.random((200_000, gamma)) < alpha
            simulated = 1 + np.cumprod(ok, axis=1).sum(1).mean()
            assert sampling.expected_tokens_per_round(alpha, gamma) == pytest.approx(simulated, rel=0.01)
    assert sampling.expected_tokens_per_round(1.0, 5) == 6
    assert sampling.expected_tokens_per_round(0.0, 5) == 1
    assert np.allclose(sampling.expected_tokens_per_round(np.array([0.5, 1.0]), 2), [1.75, 3.0])


def test_iid_acceptance_recovers_alpha_where_the_rate_does_not():
    """Rounds simulated with i.i.d. acceptance α: iid_acceptance ≈ α for every γ, the draft acceptance
    rate falls with γ, and the mean acceptance length matches (1 - α^{γ+1}) / (1 - α)."""
    rng = np.random.default_rng(1)
    alpha = 0.7
    for gamma in (1, 4, 8):
        accepted = np.cumprod(rng.random((100_000, gamma)) < alpha, axis=1).sum(1)
        assert sampling.iid_acceptance(accepted, gamma) == pytest.approx(alpha, abs=0.005)
        assert sampling.mean_acceptance_length(accepted) == \
            pytest.approx(sampling.expected_tokens_per_round(alpha, gamma), rel=0.01)
        if gamma > 1:
            assert sampling.acceptance_rate(accepted, gamma) < alpha - 0.05


def test_logit_stats():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
    s = sampling.logit_stats(logits)
    prob = np.exp(logits.numpy()) / np.exp(logits.numpy()).sum(1, keepdims=True)
    assert np.allclose(s["max_prob"], prob.max(1))
    assert np.allclose(s["entropy"], stats.entropy(prob, axis=1))
    assert np.allclose(s["margin"], [prob[0, 0] - prob[0, 1], 0.0])
    assert np.allclose(s["logit_std"], logits.numpy().std(1, ddof=1))
    assert s["entropy"][1] == pytest.approx(math.log(4))


# --------------------------------------------------------------------------- NaN-proof helpers
def test_expected_tokens_is_nan_for_an_unknown_alpha_and_takes_a_real_gamma():
    assert np.isnan(sampling.expected_tokens_per_round(float("nan"), 3))       # was gamma + 1 = 4
    assert sampling.expected_tokens_per_round(0.5, 2.5) == pytest.approx((1 - 0.5 ** 3.5) / 0.5)
    arr = sampling.expected_tokens_per_round(np.array([0.5, np.nan, 1.0]), 2)
    assert arr[0] == pytest.approx(1.75) and np.isnan(arr[1]) and arr[2] == 3


def test_probs_at_a_tiny_temperature_is_the_argmax_not_nan():
    logits = torch.tensor([[1.0, 2.0, 3.0], [-5.0, -4.0, -3.0], [50.0, -50.0, 0.0]])
    for t in (1e-30, 1e-45):
        p = sampling.probs(logits, t)
        assert not p.isnan().any() and torch.equal(p.argmax(-1), logits.argmax(-1)) and torch.allclose(p.sum(-1), torch.ones(3))
    assert torch.equal(sampling.probs(logits, 1.0), torch.softmax(logits, -1))       # the usual path is unchanged


def test_logit_stats_of_a_masked_vocabulary_are_finite():
    masked = torch.tensor([[1.0, 2.0, float("-inf"), 0.5]])
    st = sampling.logit_stats(masked)
    ref = sampling.logit_stats(torch.tensor([[1.0, 2.0, 0.5]]))   # the masked entry has probability 0
    for k in ("max_prob", "entropy", "margin", "logit_std"):
        assert torch.isfinite(st[k]).all() and torch.allclose(st[k], ref[k], atol=1e-6), k


def test_verify_accepts_a_token_the_draft_gave_zero_probability_iff_the_target_allows_it():
    p = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])            # (γ + 1, V), γ = 1
    gen = sampling.make_generator(0)
    v = sampling.verify(torch.tensor([1]), torch.tensor([[0.5, 0.0, 0.5]]), p, gen)   # q(x) = 0 < p(x)
    assert int(v.accepted) == 1 and bool(v.bonus)
    v = sampling.verify(torch.tensor([2]), torch.tensor([[1.0, 0.0, 0.0]]), p, gen)   # q(x) = p(x) = 0
    assert int(v.accepted) == 0 and int(v.token) in (1,)                          # residual max(0, p - q)


def test_acceptance_ratio_defines_q_zero_instead_of_nan():
    """min(1, p/q) at q(x) = 0: accept iff p(x) > 0 (ratio +inf), never when p(x) = 0 (ratio 0, was 0/0 = NaN)."""
    ratio = sampling.acceptance_ratio(torch.tensor([0.5, 0.0, 0.2]), torch.tensor([0.0, 0.0, 0.4]))
    assert ratio.tolist() == [math.inf, 0.0, 0.5]


def test_output_follows_p_when_draft_and_target_zero_out_different_tokens():
    """Chi-square as above with q = 0 where p > 0 (a top-3 draft) and p = 0 where q is largest (a masked
    target vocabulary): emitted tokens still follow p, and a token with p = 0 is never emitted."""
    g = torch.Generator().manual_seed(3)
    target = 1.5 * torch.randn(GAMMA + 1, V, generator=g)
    draft = target[:GAMMA] + 1.5 * torch.randn(GAMMA, V, generator=g)
    target.scatter_(-1, draft.argmax(-1).repeat(2)[: GAMMA + 1, None], float("-inf"))
    q, p = sampling.probs(draft, 1.0, top_k=3), sampling.probs(target, 1.0)
    assert ((q == 0) & (p[:GAMMA] > 0)).any() and ((p[:GAMMA] == 0) & (q > 0)).any()
    first, second, n = _emitted(q, p, seed=1)
    assert (n == 0).sum() > 5000 and (n >= 1).sum() > 5000
    assert _chi2_pvalue(first, p[0]) > 1e-4 and _chi2_pvalue(second, p[1]) > 1e-4


def test_a_rejection_with_no_residual_mass_samples_p_not_nan():
    """q >= p everywhere (here q = 2p, p = q up to scale) leaves max(0, p - q) = 0: the token comes from p."""
    _, p = _dists(0)
    ids = torch.zeros((DRAWS, GAMMA), dtype=torch.long)
    v = sampling.verify(ids, 2 * p[:GAMMA].expand(DRAWS, -1, -1), p.expand(DRAWS, -1, -1), sampling.make_generator(2))
    rejected = v.token[v.accepted == 0]
    assert rejected.numel() > 1000 and _chi2_pvalue(rejected, p[0]) > 1e-4
