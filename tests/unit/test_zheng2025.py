"""zheng2025 (TK-SLT) analytic part: closed form vs brute force, Table I, input checks."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from specedge import host
from specedge.solvers import zheng2025 as z

# Table I of the paper (RECOVERED: cells reconstructed from its formulas); None marks '–' (S* < 1).
TABLE1 = {
    0.4: [4, 2, 1, 1, None],
    0.6: [7, 3, 2, 1, None],
    0.8: [14, 6, 4, 2, 1],
}
COSTS = [0.01, 0.1, 0.2, 0.4, 0.6]


@pytest.mark.parametrize("alpha", sorted(TABLE1))
def test_table1_exact(alpha):
    for L, want in zip(COSTS, TABLE1[alpha]):
        d = z.odld(alpha, L)
        got = d.gamma if d.speedup >= 1 else None
        assert got == want, (alpha, L, d)


def _grid():
    alphas = np.concatenate([[1e-12, 1e-6, 1e-3], np.linspace(0.02, 0.98, 49), [0.99, 0.995, 0.999]])
    costs = np.concatenate([[1e-4, 1e-3], np.linspace(0.01, 0.99, 50)])
    return [(float(a), float(c)) for a in alphas for c in costs]


def test_closed_form_equals_brute_force_dense_grid():
    mismatches = []
    for a, c in _grid():
        d, b = z.odld(a, c), z.brute_force(a, c)
        # equal optimum value; equal γ unless two lengths tie exactly
        if not math.isclose(d.speedup, b.speedup, rel_tol=1e-12):
            mismatches.append((a, c, d, b))
        elif d.gamma != b.gamma and not math.isclose(z.speedup(d.gamma, a, c), z.speedup(b.gamma, a, c),
                                                     rel_tol=1e-12):
            mismatches.append((a, c, d, b))
    assert not mismatches, mismatches[:5]


def test_ties_alpha_equals_L():
    # α = L: S(1) = (1 + α)/(1 + L) = 1 exactly in real arithmetic, and S(γ) < 1 for γ > 1.
    for a in (0.1, 0.3, 0.5, 0.7, 0.9):
        d = z.odld(a, a)
        assert d.gamma == 1
        assert d.speedup == pytest.approx(1.0, abs=1e-12)
        assert z.speedup(2, a, a) < 1


def test_real_optimum_is_stationary_point():
    # α^{γ+1}[1 − (γ + 1/L) ln α] = 1 at γ₀ (the DERIVED first-order condition).
    for a, c in [(0.4, 0.01), (0.8, 0.1), (0.95, 0.3), (0.6, 0.05)]:
        g = z.gamma_real(a, c)
        assert a ** (g + 1) * (1 - (g + 1 / c) * math.log(a)) == pytest.approx(1.0, rel=1e-9)


def test_near_zero_and_one():
    d = z.odld(1e-300, 0.01)      # α^{1/L−1} underflows: the log-space W₋₁ path
    assert d.gamma == 1 and not d.speculate
    hi = z.odld(0.9999, 0.01)
    assert hi.gamma == z.brute_force(0.9999, 0.01, gamma_max=20000).gamma
    assert hi.gamma > 500


def test_speculation_helps_iff_alpha_above_L():
    for a, c in [(0.5, 0.4), (0.5, 0.6), (0.9, 0.85), (0.3, 0.35)]:
        assert z.odld(a, c).speculate == (a > c)
        assert (z.as2(a, c) > 0) == (a > c)


@pytest.mark.parametrize("alpha", [1.0, -0.1, 1.5, float("nan")])
def test_alpha_outside_open_interval_raises(alpha):
    with pytest.raises(ValueError, match="alpha"):
        z.odld(alpha, 0.1)
    with pytest.raises(ValueError, match="alpha"):
        z.speedup(3, alpha, 0.1)


@pytest.mark.parametrize("L", [1.0, 1.5, -0.1, float("inf")])
def test_cost_at_least_one_raises(L):
    with pytest.raises(ValueError, match="L"):
        z.odld(0.5, L)


def test_relative_cost_table2_constants():
    # Table II: L(K) = 0.07 + 0.23 K / 32000 reproduces the published row to its printed digits.
    k = np.array([3, 32, 320, 3200, 32000])
    L = z.relative_cost(k, 0.07, 0.23, 32000)
    np.testing.assert_allclose(L, [0.0700, 0.0702, 0.0723, 0.093, 0.300], atol=6e-4)
    with pytest.raises(ValueError, match="topk"):
        z.relative_cost(0, 0.07, 0.23, 32000)


def _tiny_llama(seed, vocab=97):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)
    return LlamaForCausalLM(cfg).eval()


def test_topk_acceptance_limits():
    """K = 1 at T = 0 is argmax agreement; K = |V| at T = 1 is Σ min(p, q) with the full draft."""
    import torch
    draft, target = _tiny_llama(0), _tiny_llama(1)
    seqs = [torch.randint(0, 97, (20,), generator=torch.Generator().manual_seed(s)) for s in range(3)]
    from specedge.experiments.zheng2025 import figures as zheng2025_figures
    df = zheng2025_figures.topk_acceptance(draft, target, seqs, ks=[1, 10, 97]).set_index(["temperature", "K"]).alpha
    with torch.inference_mode():
        d = torch.cat([draft(s[None]).logits[0, :-1] for s in seqs])
        t = torch.cat([target(s[None]).logits[0, :-1] for s in seqs])
    agree = (d.argmax(-1) == t.argmax(-1)).float().mean().item()
    full = torch.minimum(d.softmax(-1), t.softmax(-1)).sum(-1).mean().item()
    assert df[(0.0, 1)] == pytest.approx(agree, abs=1e-6)
    assert df[(1.0, 97)] == pytest.approx(full, abs=1e-5)
    assert all(0 <= a <= 1 for a in df)


def test_uplink_time():
    assert z.uplink_time(32000, 100e6) == pytest.approx(32000 * 16 / 100e6)
    with pytest.raises(ValueError, match="rate_bps"):
        z.uplink_time(3, 0)


@pytest.mark.parametrize("L", [0.05, 0.3, 0.9])
def test_a_draft_that_never_agrees_gets_gamma_one_and_no_speculation(L):
    d = z.odld(0.0, L)                 # e.g. an untrained own pair: alpha = 0
    assert (d.gamma, d.speculate) == (1, False) and d.speedup == pytest.approx(1 / (1 + L))
    assert d.gamma == z.brute_force(0.0, L, 50).gamma and z.as2(0.0, L) == 0


def test_as2_policy_follows_the_running_iid_alpha():
    from types import SimpleNamespace as R

    pol = z.as2_policy(0.6, 0.3, prior_tokens=8)
    assert pol(0, []) == z.as2(0.6, 0.3)                       # no rounds yet: the prior alone
    good = [R(accepted=4, drafted=4)] * 20                      # every draft accepted: alpha_hat -> 1
    bad = [R(accepted=0, drafted=4)] * 20                       # every first draft rejected: alpha_hat -> 0
    assert pol(0, good) > pol(0, []) and pol(0, bad) == 0      # a failing draft stops speculating
    a_hat = (0 + 8 * 0.6) / (20 + 8)
    assert pol(0, bad) == z.as2(a_hat, 0.3)


def test_measured_cost_is_the_pass_ratio_plus_the_uplink():
    assert z.measured_cost(1000, 0.002, 0.01, 1e6) == pytest.approx(0.2 + 1000 * 16 / 1e6 / 0.01)
    with pytest.raises(ValueError, match="pass times"):
        z.measured_cost(10, 0.002, 0.0, 1e6)


SCALAR_VS_ARRAY = """
import numpy as np
from specedge import host
from specedge.solvers import zheng2025 as z
rng = np.random.default_rng(3)
a, L, g = rng.uniform(1e-4, 1 - 1e-4, 4000), rng.uniform(0, 0.999, 4000), rng.integers(0, 60, 4000)
vec = z.speedup(g, a, L)
one = np.array([float(z.speedup(int(g[i]), float(a[i]), float(L[i]))) for i in range(len(a))])
np64 = np.array([float(z.speedup(np.int64(g[i]), np.float64(a[i]), np.float64(L[i]))) for i in range(len(a))])
ulps = max(np.abs(one.view(np.int64) - vec.view(np.int64)).max(), np.abs(np64.view(np.int64) - vec.view(np.int64)).max())
print(int(ulps))
"""


def _scalar_vs_array_ulps(env: dict) -> int:
    """Largest distance in ulps between eq (11) on Python/numpy scalars and on arrays, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", SCALAR_VS_ARRAY], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def test_scalar_inputs_compute_as_arrays_within_ulps():
    """AS² in the serving twin passes numbers (the checks then skip building arrays): S(γ) on scalars equals
    the array path within 64 ulps (relative 1.4e-14) on the host as it is (numpy's AVX-512 power/log kernels are not the scalar
    libm: up to 9 ulps apart on an AVX-512 AMD EPYC) and bit for bit with the vector kernels capped at AVX2
    (``host.PORTABLE_ENV``, as figures and tests run); bad numbers are refused the same way."""
    native = {k: v for k, v in os.environ.items() if k not in host.PORTABLE_ENV}
    assert _scalar_vs_array_ulps(native) <= 64
    assert _scalar_vs_array_ulps(host.portable(native)) == 0
    rng = np.random.default_rng(3)
    a, L, g = rng.uniform(1e-4, 1 - 1e-4, 400), rng.uniform(0, 0.999, 400), rng.integers(0, 60, 400)
    vec = z.speedup(g, a, L)
    one = np.array([float(z.speedup(int(g[i]), float(a[i]), float(L[i]))) for i in range(len(a))])
    np.testing.assert_array_max_ulp(one, vec, maxulp=64)
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            z.speedup(1, bad, 0.1)
    with pytest.raises(ValueError, match="relative cost"):
        z.speedup(1, 0.5, float("inf"))
    with pytest.raises(ValueError, match="gamma"):
        z.speedup(-1, 0.5, 0.1)


def test_payload_bits_counts_values_and_optional_indices():
    assert z.payload_bits(32000, 32000) == 512000                  # Sec I: dense FP16, about 500 kbit
    assert z.payload_bits(320, 32000) == 5120                      # eq (2): K values, indices neglected
    assert z.payload_bits(320, 32000, index_bits=15) == 320 * 31   # with 15-bit indices (|V| < 2^15)
    assert z.payload_bits(32000, 32000, index_bits=15) == 512000   # a dense distribution sends no indices
    with pytest.raises(ValueError, match="topk"):
        z.payload_bits(0, 32000)
    with pytest.raises(ValueError, match="value_bits"):
        z.payload_bits(3, 32000, value_bits=0)


def test_alpha_interval_inverts_algorithm_1():
    lo, hi = z.alpha_interval(2, 0.07)
    assert z.odld(lo + 1e-6, 0.07).gamma == 2 and z.odld(hi - 1e-6, 0.07).gamma == 2
    assert z.odld(lo - 1e-6, 0.07).gamma == 1 and z.odld(hi + 1e-6, 0.07).gamma == 3
    lo1, _ = z.alpha_interval(1, 0.3)
    assert lo1 == pytest.approx(0.3, abs=1e-6)                     # gamma* = 1 pays only from alpha = L
    with pytest.raises(ValueError, match="gamma"):
        z.alpha_interval(0, 0.1)
    with pytest.raises(ValueError, match="L"):
        z.alpha_interval(1, 1.2)
