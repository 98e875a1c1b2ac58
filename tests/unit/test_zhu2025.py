"""zhu2025: the paper's cost model, the pipeline recurrence, eq (27), Algorithm 1 and the baselines."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from specedge import hardware, profiling
from specedge.solvers import zhu2025 as z
from specedge.solvers import zhu2025_exhaustive as zx
from specedge.experiments.zhu2025 import runs as ze
from specedge.solvers import zhu2025_schemes as zs

T = z.TABLE_I
PAPER_RT = dict(draft_runtime=z.Runtime(4.11e-13, 0.56e-3), verify_runtime=z.Runtime(2.08e-14, 1.28e-2))


def system(draft="LLaMA-1.1B", verify="LLaMA-7B", **kw):
    return z.EdgeSystem(T[draft], T[verify], **{**PAPER_RT, **kw})


def tasks(seed, K, i_max=512, o_max=2048):
    w = zs.sample_workload(seed, 0, K, i_max, o_max)
    return w.input_len, w.output_len


def tight_memory(draft, tasks_per_batch, i_max=512, o_max=2048):
    """An SBS memory that fits ``tasks_per_batch`` worst-case tasks of ``draft`` (constraint 24b binds)."""
    m = T[draft]
    return z.param_bytes(m) + float(z.kv_bytes(m, i_max, o_max)) * (tasks_per_batch + 0.5)


# ----------------------------------------------------------------------------------------------
# eqs (7)-(14)

def test_expected_tokens_eq7():
    assert z.expected_tokens(0.5, 1) == pytest.approx(1.5)
    assert z.expected_tokens(0.8, 3) == pytest.approx(1 + 0.8 + 0.64 + 0.512)
    # more drafts never hurt, and L < 1/(1-alpha)
    L = [z.expected_tokens(0.7, l) for l in range(1, 30)]
    assert all(np.diff(L) > 0) and L[-1] < 1 / 0.3


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_alpha_outside_open_interval_raises(alpha):
    with pytest.raises(ValueError, match="alpha"):
        z.expected_tokens(alpha, 2)
    with pytest.raises(ValueError, match="alpha"):
        z.proposed_plan(system(), np.array([10, 20]), alpha, 64, 2)


@pytest.mark.parametrize("l_max", [0, -3])
def test_l_max_below_one_raises(l_max):
    with pytest.raises(ValueError, match="l_max"):
        z.proposed_plan(system(), np.array([10, 20]), 0.8, 64, l_max)
    with pytest.raises(ValueError, match="l_max"):
        zs.run_schemes(system(), zs.sample_workload(0, 0, 3, 32, 64), 0.8, 64, l_max)


def test_decoding_steps_eq8_is_a_robust_ceiling():
    assert z.decoding_steps(4, 2.0) == 2
    assert z.decoding_steps(5, 2.0) == 3
    assert z.decoding_steps(4, 2.0000000000000004) == 2      # L = 2 up to rounding: no spurious step
    assert z.decoding_steps(4, 1.9999999999999998) == 2
    assert list(z.decoding_steps(np.array([1, 10, 11]), 2.5)) == [1, 4, 5]


def test_memory_eqs_9_10_by_hand():
    m = T["LLaMA-7B"]
    assert z.param_bytes(m) == 32 * (8 * 4096 ** 2 + 4 * 4096 * 11008)
    assert z.kv_bytes(m, 100, 200, 3) == 4 * 32 * 4096 * 300 * 3
    d = T["LLaMA-1.1B"]
    b = z.max_batch_size(d, 512, 2048, 16e9)
    assert z.batch_memory(d, 512, 2048, b) <= 16e9 < z.batch_memory(d, 512, 2048, b + 1)
    assert b == 30
    with pytest.raises(ValueError, match="SBS memory"):
        z.max_batch_size(T["LLaMA-13B"], 512, 2048, 16e9)


def test_flops_eqs_11_to_14_literal():
    m = T["LLaMA-68M"]
    J, h1, h2 = m.layers, m.hidden, m.ffn
    I, L, l = 37, 2.7, 4
    # eq (11)/(13), n = 1, i = 1: prefill
    assert z.draft_flops(m, I, 1, 1, L) == pytest.approx(4 * J * h1 * I * (2 * h1 + I + h2))
    assert z.draft_flops(m, I, 1, 1, L) == pytest.approx(J * (8 * I * h1 ** 2 + 4 * I ** 2 * h1 + 4 * I * h1 * h2))
    # eq (13) otherwise, with I_kv = I + ((n-1)L - 1) + i - 1
    for n, i in [(1, 3), (4, 1), (7, 4)]:
        kv = I + ((n - 1) * L - 1) + i - 1
        assert z.draft_flops(m, I, n, i, L) == pytest.approx(4 * J * h1 * (2 * h1 + kv + 1 + h2))
        assert z.draft_flops(m, I, n, i, L) == pytest.approx(J * (8 * h1 ** 2 + 4 * (kv + 1) * h1 + 4 * h1 * h2))
    v = T["LLaMA-7B"]
    Jv, g1, g2 = v.layers, v.hidden, v.ffn
    assert z.verify_flops(v, I, 1, l, L) == pytest.approx(4 * Jv * g1 * (I + l) * (2 * g1 + I + l + g2))
    kv = I + (5 - 1) * L - 1
    assert z.verify_flops(v, I, 5, l, L) == pytest.approx(4 * Jv * g1 * (1 + l) * (2 * g1 + kv + l + 1 + g2))


@pytest.mark.parametrize("l", [1, 2, 7])
def test_draft_step_flops_is_the_sum_over_passes(l):
    m = T["LLaMA-1.1B"]
    I = np.array([1.0, 40.0, 512.0])[:, None, None]
    n = np.arange(1, 30)[None, None, :]
    i = np.arange(1, l + 1)[None, :, None]
    brute = z.draft_flops(m, I, n, i, 2.3).sum(axis=1)
    np.testing.assert_allclose(z.draft_step_flops(m, I[:, 0], n[0], l, 2.3), brute, rtol=1e-12)


def test_table_i_matches_the_profiled_architectures():
    for name, arch in (("LLaMA-68M", "llama-68m"), ("LLaMA-1.1B", "llama-1.1b"), ("LLaMA-7B", "llama-7b"),
                       ("LLaMA-13B", "llama-13b")):
        a = profiling.ARCHITECTURES[arch]
        assert (T[name].layers, T[name].hidden, T[name].ffn) == (a.layers, a.hidden, a.ffn)
    assert z.forward_flops(T["LLaMA-7B"], 3, 11) == profiling.decoder_flops(32, 4096, 11008, 3, 11)


# ----------------------------------------------------------------------------------------------
# eqs (15)-(16), (26)-(27)

def test_closed_form_bandwidth_is_the_minimiser_of_the_slowest_upload():
    rng = np.random.default_rng(3)
    bits = rng.uniform(1e5, 1e7, 6)
    eff = rng.uniform(0.5, 12, 6)
    B = 20e6
    w, t = z.optimal_bandwidth(bits, B, eff)
    assert w.sum() == pytest.approx(1.0)
    uploads = z.upload_latency(bits, w, B, eff)
    np.testing.assert_allclose(uploads, t, rtol=1e-12)          # every upload finishes together
    assert z.comm_latency(bits, B, eff, "optimal") == pytest.approx(t)

    # numerical minimiser of max_k T_k,com over the simplex: min s.t. w_k * s >= bits_k/(B eff_k)
    a = bits / (B * eff)
    res = minimize(lambda x: x[-1], np.r_[np.full(6, 1 / 6), 10 * a.max()], method="SLSQP",
                   bounds=[(1e-9, 1)] * 6 + [(0, None)],
                   constraints=[{"type": "eq", "fun": lambda x: x[:6].sum() - 1},
                                {"type": "ineq", "fun": lambda x: x[:6] * x[-1] - a}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert res.success
    assert res.x[-1] == pytest.approx(t, rel=1e-6)
    np.testing.assert_allclose(res.x[:6], w, atol=1e-6)
    # and a random feasible split is never better
    for _ in range(50):
        u = rng.dirichlet(np.ones(6))
        assert z.upload_latency(bits, u, B, eff).max() >= t * (1 - 1e-12)
    assert z.comm_latency(bits, B, eff, "uniform") >= t


@pytest.mark.parametrize("bw", [-1.0, 0.0, float("inf")])
def test_bad_bandwidth_raises(bw):
    with pytest.raises(ValueError, match="bandwidth_hz"):
        z.optimal_bandwidth([1.0, 2.0], bw, [1.0, 1.0])
    with pytest.raises(ValueError, match="bandwidth_hz"):
        z.upload_latency([1.0], [1.0], bw, [1.0])
    with pytest.raises(ValueError, match="bandwidth_hz"):
        system(bandwidth_hz=bw)


def test_bad_shares_and_allocation_raise():
    with pytest.raises(ValueError, match="w_k"):
        z.upload_latency([1.0, 1.0], [-0.1, 1.1], 1e6, [1.0, 1.0])
    with pytest.raises(ValueError, match="allocation"):
        z.comm_latency([1.0], 1e6, [1.0], "fair")


# ----------------------------------------------------------------------------------------------
# eqs (17)-(23)

def reference_step_latency(td, tv, steps):
    """Eqs (20)-(21) literally: per step, iterate over the active batches only."""
    out = []
    for n in range(td.shape[1]):
        active = [m for m in range(td.shape[0]) if steps[m] >= n + 1]
        cd = c = 0.0
        for m in active:
            cd += td[m, n]
            c = max(cd, c) + tv[m, n]
        out.append(c)
    return np.array(out)


def test_pipeline_recurrence_matches_the_literal_equations():
    rng = np.random.default_rng(0)
    for _ in range(20):
        M, N = int(rng.integers(1, 7)), int(rng.integers(1, 9))
        td, tv = rng.exponential(1, (M, N)), rng.exponential(1, (M, N))
        steps = rng.integers(1, N + 1, M)
        active = np.arange(1, N + 1)[None, :] <= steps[:, None]
        got = z.pipeline_step_latency(td * active, tv * active)
        np.testing.assert_allclose(got, reference_step_latency(td, tv, steps), rtol=1e-12)
        # bounds: no faster than either stage alone, no slower than no overlap
        assert np.all(got >= (td * active).sum(0) - 1e-12)
        assert np.all(got >= (tv * active).sum(0) - 1e-12)
        assert np.all(got <= z.pipeline_step_latency(td * active, tv * active, pipelined=False) + 1e-12)


def test_single_batch_latency_is_draft_plus_verify():
    s = system()
    I, O = tasks(1, 12)
    for l, alpha in [(1, 0.6), (4, 0.85)]:
        plan = z.Plan((np.arange(12),), l)
        L = z.expected_tokens(alpha, l)
        n = z.decoding_steps(O.max(), L)
        td, tv = z.stage_times(s, I.max(), 12, l, L, n)
        expected = float((td + tv).sum())
        assert z.inference_latency(s, plan, I, O, alpha) == pytest.approx(expected, rel=1e-12)
        assert z.inference_latency(s, z.Plan(plan.batches, l, False), I, O, alpha) == pytest.approx(expected, rel=1e-12)


def test_stage_times_eqs_18_19_by_hand():
    s = system("LLaMA-68M", "LLaMA-7B")
    l, L, I, b = 3, 2.0, 50, 4
    td, tv = z.stage_times(s, I, b, l, L, 3)
    rd, rv = s.draft_runtime, s.verify_runtime
    for n in (1, 2, 3):
        d = sum(rd.c1 * float(z.draft_flops(s.draft, I, n, i, L)) * b + rd.c2 for i in range(1, l + 1))
        v = rv.c1 * float(z.verify_flops(s.verify, I, n, l, L)) * b + rv.c2
        assert td[0, n - 1] == pytest.approx(d, rel=1e-12)
        assert tv[0, n - 1] == pytest.approx(v, rel=1e-12)


def test_ad_latency_by_hand():
    s = system()
    v, rv = s.verify, s.verify_runtime
    I, O = np.array([5, 9]), np.array([3, 2])
    f = z.forward_flops(v, 9, 0) + z.forward_flops(v, 1, 9) + z.forward_flops(v, 1, 10)
    expected = rv.c1 * float(f) * 2 + 3 * rv.c2           # one batch of 2, padded to I=9, O_m=3 passes
    assert z.ad_latency(s, (np.array([0, 1]),), I, O) == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------------------------
# Algorithm 1

def brute_contiguous(s, I, l, alpha, o_max):
    """Every consecutive partition of the sorted list, each scored by the eq (20)-(22) evaluation."""
    order = np.argsort(I, kind="stable")
    K = len(I)
    best = math.inf
    for mask in range(1 << (K - 1)):
        cuts = [0] + [k + 1 for k in range(K - 1) if mask >> k & 1] + [K]
        batches = tuple(order[a:b] for a, b in zip(cuts, cuts[1:]))
        plan = z.Plan(batches, l)
        if not z.memory_ok(s, plan, I, o_max):
            continue
        best = min(best, z.plan_objective(s, plan, I, alpha, o_max))
    return best


def instances(seed: int, trials: int, tasks_range: tuple[int, int], task_seed: int):
    """Random small instances, pairs in turn with an SBS memory that binds: (rng, system, input lengths);
    the rng goes on drawing in the caller's loop body between instances."""
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        K = int(rng.integers(*tasks_range))
        pair = z.PAIRS[trial % 3]
        s = system(*pair, memory_bytes=tight_memory(pair[0], int(rng.integers(1, K + 1))))
        yield rng, s, tasks(task_seed + trial, K)[0]


@pytest.mark.parametrize("stage", ["draft", "verify"])
def test_dp_equals_exhaustive_when_its_recurrence_is_exact(stage):
    # With one stage free, eq (20) becomes a sum over batches: eq (30)'s prefix choice is then exact.
    rng = np.random.default_rng(11)
    for trial in range(6):
        K = int(rng.integers(3, 9))
        kw = {f"{stage}_runtime": z.Runtime(0.0, 0.0)}
        s = system(memory_bytes=tight_memory("LLaMA-1.1B", int(rng.integers(1, K + 1))), **kw)
        I, _ = tasks(trial, K)
        l, alpha = int(rng.integers(1, 5)), float(rng.uniform(0.5, 0.9))
        dp = z.dp_batching(s, I, l, alpha, 256).plan
        assert dp.objective == pytest.approx(brute_contiguous(s, I, l, alpha, 256), rel=1e-12)
        assert dp.objective == pytest.approx(zx.best_contiguous(s, I, l, alpha, 256)[0], rel=1e-12)


def test_dp_objective_is_the_latency_of_its_own_plan_and_never_beats_exhaustive():
    for rng, s, I in instances(5, 6, (2, 8), 100):
        l, alpha = int(rng.integers(1, 5)), float(rng.uniform(0.5, 0.9))
        dp = z.dp_batching(s, I, l, alpha, 512).plan
        assert dp.objective == pytest.approx(z.plan_objective(s, dp, I, alpha, 512), rel=1e-12)
        contiguous = brute_contiguous(s, I, l, alpha, 512)
        assert zx.best_contiguous(s, I, l, alpha, 512)[0] == pytest.approx(contiguous, rel=1e-12)
        assert dp.objective >= contiguous * (1 - 1e-12)
        best_set = zx.best_set_partition(s, I, l, alpha, 512)[0]
        assert best_set <= contiguous * (1 + 1e-12)
        assert zx.best_set_partition(s, I, l, alpha, 512, all_orders=True)[0] <= best_set * (1 + 1e-12)


def test_dp_is_not_always_optimal():
    # Instance 4 of the seed-0 study (K=12, contiguous) is one where eq (30)'s pruning loses the optimum:
    # Algorithm 1 picks 3 batches, the best consecutive partition has 2.
    dg = zx.gap_study(ze.load_setting(), 5, 0, progress=False)
    assert set(dg.search) == set(zx.SEARCHES)
    assert (dg.gap_pct >= -1e-9).all()
    row = dg[(dg.search == "contiguous, K=12") & (dg.instance == 4)].iloc[0]
    assert row.gap_pct > 0.01 and (row.dp_batches, row.best_batches) == (3, 2)
    assert (dg[dg.search == "set partitions in any order, K=6"].gap_pct > 0.01).any()


def test_gap_over_l_scores_algorithm_1_with_its_search_over_l():
    # As the paper uses it: Algorithm 1 inside the enumeration over l (eq 33), against the best
    # (batching, l) by brute force over consecutive partitions and every l.
    for rng, s, I in instances(21, 4, (3, 8), 200):
        alpha = float(rng.uniform(0.5, 0.9))
        g = zx.optimality_gap_over_l(s, I, alpha, 512, 4)
        brute = min(brute_contiguous(s, I, l, alpha, 512) for l in range(1, 5))
        assert g["exhaustive_s"] == pytest.approx(brute, rel=1e-12)
        assert g["dp_s"] == pytest.approx(z.proposed_plan(s, I, alpha, 512, 4).objective, rel=1e-12)
        assert g["gap_pct"] >= 0 and 1 <= g["best_l"] <= 4 and 1 <= g["dp_l"] <= 4
        fixed = [zx.optimality_gap(s, I, l, alpha, 512)["dp_s"] for l in range(1, 5)]
        assert g["dp_s"] == pytest.approx(min(fixed), rel=1e-12)
    dg = zx.gap_study(ze.load_setting(), 2, 0, progress=False, l_max=3, searches=["contiguous, K=12"])
    assert list(dg.search.unique()) == ["contiguous, K=12"] and dg.l.isna().all() and (dg.gap_pct >= 0).all()
    with pytest.raises(ValueError, match="searches must be among"):
        zx.gap_study(ze.load_setting(), 1, 0, progress=False, searches=["nope"])
    with pytest.raises(ValueError, match="search must be"):
        zx.optimality_gap_over_l(system(), np.arange(1, 4), 0.8, 64, 2, search="nope")


def test_set_partitions_are_the_bell_numbers():
    assert [sum(1 for _ in zx.set_partitions(n)) for n in range(1, 7)] == [1, 2, 5, 15, 52, 203]


def test_exhaustive_search_sizes_are_bounded():
    s = system()
    with pytest.raises(ValueError, match="K must be"):
        zx.best_set_partition(s, np.arange(1, 10), 1, 0.8, 64)
    with pytest.raises(ValueError, match="K must be"):
        zx.best_contiguous(s, np.arange(1, 18), 1, 0.8, 64)


# ----------------------------------------------------------------------------------------------
# Baselines, memory, workload

def test_every_scheme_respects_the_memory_constraint():
    I, _ = tasks(2, 40)
    for cap in (2, 5, 30):
        s = system(memory_bytes=tight_memory("LLaMA-1.1B", cap))
        for scheme in zs.SCHEMES:
            if scheme == zs.STATIC and cap < zs.STATIC_BATCH_SIZE:
                with pytest.raises(ValueError, match="static"):
                    zs.plan_scheme(scheme, s, I, 0.8, 2048, 4)
                continue
            plan = zs.plan_scheme(scheme, s, I, 0.8, 2048, 4)
            assert sorted(np.concatenate(plan.batches)) == list(range(40))        # constraint (24c)
            assert z.memory_ok(s, plan, I, 2048)
            if plan.l:
                sizes, i_m, _ = z.batch_arrays(plan.batches, I, 2048)
                assert np.all(z.batch_memory(s.draft, i_m, 2048, sizes) <= s.memory_bytes)


def test_a_task_too_long_for_memory_raises():
    s = system(memory_bytes=z.param_bytes(T["LLaMA-1.1B"]) + 1e6)
    with pytest.raises(ValueError, match="does not fit"):
        z.dp_batching(s, np.array([10, 20]), 1, 0.8, 2048)


def test_speculation_search_keeps_the_best_length():
    objectives = {1: 5.0, 2: 3.0, 3: 3.0, 4: 4.0}
    plan = z.optimise_speculation(lambda l: z.Plan((), l, True, objectives[l]), 4)
    assert plan.l == 2                       # ties go to the shorter speculation
    p = z.proposed_plan(system(), tasks(0, 10)[0], 0.8, 512, 6)
    each = [z.dp_batching(system(), tasks(0, 10)[0], l, 0.8, 512).plan.objective for l in range(1, 7)]
    assert p.objective == pytest.approx(min(each)) and p.l == int(np.argmin(each)) + 1


def test_heuristic_batch_size_stops_at_the_first_rise():
    assert zs.heuristic_batch_size(lambda b: (b - 7) ** 2, 50) == 7
    assert zs.heuristic_batch_size(lambda b: -b, 12) == 12          # still falling at the limit
    assert zs.heuristic_batch_size(lambda b: b, 12) == 2            # rises at once


def test_baseline_definitions():
    s = system()
    I, O = tasks(4, 30)
    prop = z.proposed_plan(s, I, 0.8, 2048, 10)
    nopipe = zs.plan_scheme(zs.NO_PIPELINE, s, I, 0.8, 2048, 10, prop)
    assert not nopipe.pipelined and nopipe.l == prop.l
    assert all(np.array_equal(a, b) for a, b in zip(nopipe.batches, prop.batches))
    assert zs.plan_scheme(zs.FSL, s, I, 0.8, 2048, 10).l == zs.FSL_LENGTH
    assert set(zs.plan_scheme(zs.NO_BATCHING, s, I, 0.8, 2048, 10).batch_sizes) == {1}
    assert set(zs.plan_scheme(zs.STATIC, s, I, 0.8, 2048, 10).batch_sizes[:-1]) == {zs.STATIC_BATCH_SIZE}
    assert zs.plan_scheme(zs.ADS, s, I, 0.8, 2048, 10).l == 0
    with pytest.raises(ValueError, match="scheme"):
        zs.plan_scheme("Magic", s, I, 0.8, 2048, 10)
    rows = pd.DataFrame(zs.run_schemes(s, zs.sample_workload(4, 0, 30, 512, 2048), 0.8, 2048))
    by = rows.set_index("scheme").latency_s
    assert by[zs.PROPOSED] <= by[zs.NO_PIPELINE] + 1e-9          # same plan, with overlap


def test_workload_is_deterministic_nested_and_in_range():
    a = zs.sample_workload(7, 3, 50, 512, 2048)
    b = zs.sample_workload(7, 3, 50, 512, 2048)
    c = zs.sample_workload(7, 3, 20, 512, 2048)
    for f in ("input_len", "output_len", "distance_m", "fading"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        np.testing.assert_array_equal(getattr(a, f)[:20], getattr(c, f))       # common random numbers
    assert a.input_len.min() >= 1 and a.input_len.max() <= 512
    assert a.output_len.min() >= 1 and a.output_len.max() <= 2048
    assert np.all((a.distance_m > 0) & (a.distance_m <= 400)) and np.all(a.fading > 0)
    d = zs.sample_workload(7, 3, 50, 1024, 2048)
    assert np.all(d.input_len >= a.input_len)                                  # same uniforms, rescaled
    with pytest.raises(ValueError, match="num_users"):
        zs.sample_workload(0, 0, 0, 512, 2048)


def test_large_sample_statistics_of_the_channel():
    w = zs.sample_workload(1, 0, 200_000, 512, 2048)
    assert w.fading.mean() == pytest.approx(1.0, abs=0.01)                    # Exp(1)
    assert (w.distance_m ** 2).mean() == pytest.approx(400 ** 2 / 2, rel=0.01)  # uniform over the disk
    assert w.input_len.mean() == pytest.approx(256.5, rel=0.01)


def test_redrawn_channel_keeps_the_tasks_and_draws_the_same_laws():
    w = zs.sample_workload(1, 0, 200_000, 512, 2048)
    assert zs.redraw_channel(w, 400.0, 1, 0, 0) is w                          # draw 0: the workload's own channel
    r = zs.redraw_channel(w, 400.0, 1, 0, 3)
    assert r.input_len is w.input_len and r.output_len is w.output_len
    assert not np.any(r.fading == w.fading) and not np.any(r.distance_m == w.distance_m)
    assert r.fading.mean() == pytest.approx(1.0, abs=0.01)                    # Exp(1)
    assert (r.distance_m ** 2).mean() == pytest.approx(400 ** 2 / 2, rel=0.01)  # uniform over the disk
    assert np.all((r.distance_m > 0) & (r.distance_m <= 400)) and np.all(r.fading > 0)
    again = zs.redraw_channel(w, 400.0, 1, 0, 3)
    np.testing.assert_array_equal(again.fading, r.fading)                     # (seed, rep, draw) names the draw
    assert not np.array_equal(zs.redraw_channel(w, 400.0, 1, 1, 3).fading, r.fading)
    assert not np.array_equal(zs.redraw_channel(w, 400.0, 1, 0, 4).fading, r.fading)


# ----------------------------------------------------------------------------------------------
# Settings and summaries

def test_paper_setting_is_table_ii():
    st = ze.load_setting()
    assert (st.num_users, st.max_input_len, st.max_output_len, st.l_max) == (100, 512, 2048, 10)
    assert st.memory_bytes == 16e9 and st.bandwidth_hz == 20e6
    assert st.verify_runtime == z.Runtime(2.08e-14, 1.28e-2)
    s = st.system("LLaMA-68M", "LLaMA-7B")
    assert s.noise_power_w == pytest.approx(10 ** (-10.6) * 1e-3)
    assert s.path_loss == pytest.approx(1e-3)
    assert s.bits_per_token == 16 * (768 + 4096)
    assert set(st.table_ii().source) == {"zhu2025_paper"}


def test_measured_profile_falls_back_to_the_paper(tmp_path):
    prof = dict(name="zz_measured", source="test", measured={"device": "test"}, devices={"local": {}}, links={},
                runtime={r: {"model": "T = c1*F*b + c2", "c1": 1e-11, "c2": 0.1} for r in ("draft", "verify")})
    path = hardware.save_profile(prof, tmp_path / "zz_measured.yaml")
    st = ze.load_setting(str(path))
    assert st.measured and st.draft_runtime == z.Runtime(1e-11, 0.1)
    assert st.memory_bytes == 16e9
    src = st.table_ii().set_index("parameter").source
    assert src["c_d1"] == "zz_measured" and src["Gamma_s"] == "zhu2025_paper"
    bad = dict(prof, name="zz_bad", runtime={"draft": prof["runtime"]["draft"]})
    with pytest.raises(ValueError, match="runtime.verify"):
        ze.load_setting(str(hardware.save_profile(bad, tmp_path / "zz_bad.yaml")))


def test_sweep_rows():
    st = ze.load_setting()
    df = ze.sweep(st, ze.points(pair=[z.PAIRS[0]], num_users=[4, 6]), 2, 0, schemes=(zs.PROPOSED, zs.ADS),
                  allocations=("optimal", "uniform"), progress=False)
    assert len(df) == 2 * 2 * 2 * 2
    assert (df.latency_s == df.inference_s + df.comm_s).all()
    again = ze.sweep(st, ze.points(pair=[z.PAIRS[0]], num_users=[4, 6]), 2, 0, schemes=(zs.PROPOSED, zs.ADS),
                     allocations=("optimal", "uniform"), progress=False)
    pd.testing.assert_frame_equal(df, again)


def test_ads_readings_and_alpha_independence():
    """The readings of ADS's batch-size sentence, and ADS not depending on alpha (moved here
    from the comparison table, where it could not fail)."""
    assert zs.ads_batch_size(lambda b: (b - 70) ** 2, 100, "two batches") == 70      # starts at 50
    assert zs.ads_batch_size(lambda b: b, 100, "two batches") == 50                  # rises at once
    assert zs.ads_batch_size(lambda b: (b - 7) ** 2, 100, "two tasks per batch") == 7
    assert zs.ads_batch_size(lambda b: b, 100, "one batch") == 100
    with pytest.raises(ValueError, match="ADS reading"):
        zs.ads_batch_size(lambda b: b, 100, "three batches")
    s = system()
    w = zs.sample_workload(3, 0, 40, 512, 2048)
    lat = {a: pd.DataFrame(zs.run_schemes(s, w, a, 2048, schemes=(zs.ADS,))).latency_s.iloc[0] for a in (0.5, 0.9)}
    assert lat[0.5] == lat[0.9]
    p = zs.plan_scheme(zs.ADS, s, w.input_len, 0.8, 2048, ads_reading="one batch")
    assert len(p.batches) == 1 and p.l == 0


def test_ads_readings_table_on_the_paper_setting():
    setting = ze.load_setting("zhu2025_paper")
    d = ze.ads_readings(setting, z.PAIRS[:1], 2, 0)
    assert set(d.reading) == set(zs.ADS_READINGS) and len(d) == 2 * len(zs.ADS_READINGS)
    m = d.groupby("reading").latency_s.mean()
    assert m["one batch"] < m["two batches"] < m["two tasks per batch"]   # fewer batches, fewer c_v2 passes


def test_gap_summary_counts_only_gaps_above_rounding():
    gaps = pd.DataFrame(dict(search=["s2", "s1", "s1", "s1", "s2"], gap_pct=[0.0, 0.0, 0.5, zx.GAP_ROUNDING_PCT / 2, 2.0]))
    g = zx.gap_summary(gaps)
    assert list(g.index) == ["s2", "s1"]                                      # searches in study order
    assert g.loc["s1", "instances"] == 3 and g.loc["s1", "share_suboptimal"] == pytest.approx(1 / 3)
    assert g.loc["s2", "share_suboptimal"] == 0.5 and g.loc["s2", "max"] == 2.0 and g.loc["s2", "median"] == 1.0
    assert g.loc["s1", "mean"] == pytest.approx((0.5 + zx.GAP_ROUNDING_PCT / 2) / 3)


def test_gap_study_at_the_papers_memory():
    setting = ze.load_setting("zhu2025_paper")
    g = zx.gap_study(setting, 1, 0, progress=False, searches=["contiguous, K=12"], memory="paper")
    assert g.memory_gb.iloc[0] == pytest.approx(16.0) and g.memory_tasks.iloc[0] == 12
    with pytest.raises(ValueError, match="memory"):
        zx.gap_study(setting, 1, 0, progress=False, memory="huge")


def test_path_loss_sensitivity_more_channel_draws():
    setting = ze.load_setting("zhu2025_paper")
    inf = pd.DataFrame([dict(pair=f"({p[0]}, {p[1]})", rep=r, inference_s=100.0) for p in z.PAIRS for r in range(2)])
    one = ze.path_loss_sensitivity(setting, inf, [-50], 25e6, 20, 0)
    many = ze.path_loss_sensitivity(setting, inf, [-50], 25e6, 20, 0, channel_draws=8)
    assert (one.samples == 2).all() and (many.samples == 16).all()
    assert (many.reduction_se > 0).all() and one.reduction_se.notna().all()
    assert (many.median_reduction_pct > 0).all()
    with pytest.raises(ValueError, match="channel_draws"):
        ze.path_loss_sensitivity(setting, inf, [-50], 25e6, 20, 0, channel_draws=0)
