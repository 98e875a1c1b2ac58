"""WISP's server-side pieces: SLO arithmetic, eq (19)'s features and fit, Algorithm 1 on crafted
queues, capacity bisection and Wilson intervals."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from specedge import sweep
from specedge.serving.analysis import capacity
from specedge.serving.timemodels import estimator
from specedge.serving import slo
from specedge.serving.policies.batching import FCFS
from specedge.serving.timemodels.estimator import Estimator
from specedge.serving.interfaces import Pending
from specedge.serving.policies.wisp_batching import EDFOnly, WISPBatcher


# --------------------------------------------------------------------------- slo
def test_slo_budget_deadline_and_latest_start():
    assert slo.expected_tokens(0.5, 8) == 4.0
    assert slo.budget(0.5, 8, 4, 0.16, 0.02) == pytest.approx(4 / 4 - 0.18)        # eq (6)
    assert slo.deadline(10.0, 0.5, 8, 4, 0.16, 0.02) == pytest.approx(10.82)        # eq (12)
    assert slo.latest_start(10.82, 0.1, 0.02) == pytest.approx(10.70)               # eq (17)
    log = pd.DataFrame(dict(tokens=[4, 1, 2], t_round=[0.5, 0.5, 0.25], slo_class=[8, 2, 8]))
    assert slo.violations(log).tolist() == [False, False, False]
    assert slo.violations(log.assign(slo_class=[9, 3, 9])).tolist() == [True, True, True]
    for bad in (dict(alpha=1.5), dict(alpha=float("nan"))):
        with pytest.raises(ValueError, match="alpha"):
            slo.budget(bad["alpha"], 4, 4, 0.1, 0.0)
    with pytest.raises(ValueError, match="speed"):
        slo.budget(0.5, 4, 0, 0.1, 0.0)
    with pytest.raises(ValueError, match="slo_class"):
        slo.violations(log.assign(slo_class=[8, None, 8]))


# --------------------------------------------------------------------------- estimator
def test_features_by_hand():
    # one cold request of 300 tokens, one warm follow-up of 5 tokens on a 495-token prefix
    assert estimator.features([(300, 0), (5, 495)]) == (305, 300 * 300 + 500 * 5, 495)
    est = Estimator(1e-4, 1e-8, 1e-6, 0.01)
    batch = [Pending(0, "a", 0, 0.0, 0, 300, 0), Pending(1, "b", 0, 0.0, 5, 5, 495)]
    assert est(batch) == pytest.approx(1e-4 * 305 + 1e-8 * 92_500 + 1e-6 * 495 + 0.01)
    assert est([]) == 0.0
    assert est(batch) == est.time(*estimator.features(estimator.batch_pairs(batch)))   # the one pass: the same float
    with pytest.raises(ValueError, match="token counts"):
        est([Pending(0, "a", 0, 0.0, 0, 3, -1)])
    assert est.v_hat(batch[1]) == pytest.approx(1e-4 * 5 + 1e-8 * 2500 + 1e-6 * 495 + 0.01)
    with pytest.raises(ValueError, match="missing"):
        Estimator.from_coefficients(a=1.0, b_compute=1.0)
    paper = Estimator.from_profile("li2026_paper")
    assert paper.a == pytest.approx(3.314e-5) and paper.c == pytest.approx(1.486e-2)


def _synthetic(n, rng, split):
    rows = []
    for i in range(n):
        k = int(rng.integers(1, 5))
        pairs = [(int(rng.integers(1, 400)), int(rng.integers(0, 1500))) for _ in range(k)]
        rows.append(dict(config=f"{split}{i}", batch=" ".join(f"{a}:{b}" for a, b in pairs), split=split,
                         regime="mixed"))
    return rows


def test_fit_recovers_known_coefficients():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(_synthetic(123, rng, "train") + _synthetic(50, rng, "test"))
    truth = Estimator(3e-5, 4e-8, 5e-6, 0.015)
    x = estimator.design_matrix(df)
    df["seconds"] = [truth.time(*r) for r in x] * rng.lognormal(0, 0.005, len(df))
    f = estimator.fit(df, seed=1, bootstrap=200)
    for k in ("a", "b_compute", "b_read", "c"):
        value, lo, hi = f.coefficients.loc[k, ["value", "ci_low", "ci_high"]]
        assert lo < value < hi and abs(value / getattr(truth, k) - 1) < 0.05, k
        assert abs(value - getattr(truth, k)) < 2 * (hi - lo), k          # the CI is about the error's size
    assert f.metrics.loc["test", "R2"] > 0.98 and f.metrics.loc["train", "samples"] == 123
    assert 0.9 < f.cv["mean"] <= 1 and len(f.cv["folds"]) == 5
    assert 0 < f.delta < 0.2 * df.seconds.mean()
    assert estimator.fit(df, seed=1, bootstrap=200).coefficients.equals(f.coefficients)   # deterministic
    # the estimator handed on (li2026_real, the twin) is the fitted one, intercept included
    assert f.estimator.coefficients() == pytest.approx(f.coefficients["value"].to_dict(), rel=1e-12)
    np.testing.assert_allclose([f.estimator.time(*r) for r in x], f.predictions["predicted"], rtol=1e-9)
    with pytest.raises(ValueError, match="seconds"):
        estimator.fit(df.drop(columns="seconds"))


# --------------------------------------------------------------------------- Algorithm 1
EST = Estimator(a=0.001, b_compute=0.0, b_read=0.0, c=0.010)      # T = 10 ms + 1 ms per new token


def P(client, deadline=None, n_new=5, g=None, memory=0.0, arrival=0.0):
    return Pending(client, f"s{client}", 0, arrival, n_new - 1, n_new, 0, deadline=deadline,
                   expected_tokens=g, memory=memory)


def test_critical_requests_first_in_edf_order_then_value_density():
    # at t = 0: v_hat = 15 ms; critical when 0 >= d - 0.015 - delta (delta 5 ms) i.e. d <= 20 ms
    q = [P(0, deadline=1.0, g=1.0), P(1, deadline=0.019, g=0.5), P(2, deadline=1.0, g=4.0),
         P(3, deadline=0.018, g=0.1), P(4, deadline=None, g=2.0)]
    b = WISPBatcher(EST, delta=0.005)
    order, n_crit = b.order(q, 0.0)
    assert [p.client for p, _ in order] == [3, 1, 2, 4, 0] and n_crit == 2
    # batch of 3 and 1: T = 10 + 10 = 20 ms > 18 ms: 1 cannot join; the batch stops there
    assert [p.client for p in b.form(q, 0.0, frozenset())] == [3]


def test_batch_stops_at_the_first_infeasible_request_without_skipping():
    # non-critical only, by density: 2 (g 4), 1 (g 60, big), 0 (g 1, small). Adding 1 breaks 2's
    # deadline; 0 would fit, but Algorithm 1 stops at 1.
    q = [P(0, deadline=0.5, g=1.0, n_new=2), P(1, deadline=0.5, g=60.0, n_new=400), P(2, deadline=0.05, g=4.0)]
    b = WISPBatcher(EST, delta=0.0)
    assert [p.client for p in b.form(q, 0.0, frozenset())] == [2]
    assert sorted(p.client for p in b.form([q[0], q[2]], 0.0, frozenset())) == [0, 2]


def test_memory_budget():
    q = [P(i, deadline=10.0, g=1.0, memory=40.0) for i in range(5)]
    assert len(WISPBatcher(EST, memory_budget=100.0).form(q, 0.0, frozenset())) == 2
    # a request over the budget alone fails FEASIBLEADD: the paper's batch is empty (it stays pending)
    assert WISPBatcher(EST, memory_budget=10.0).form(q, 0.0, frozenset()) == []


def test_late_requests_do_not_stall_the_server():
    # deadline already passed: Algorithm 1 as printed would dispatch nothing, for ever
    q = [P(0, deadline=-1.0), P(1, deadline=-0.5), P(2, deadline=0.5)]
    out = WISPBatcher(EST).form(q, 0.0, frozenset())
    assert [p.client for p in out] == [0, 1, 2]


def _algorithm1_by_hand(queue, now, est, delta, memory_budget, density=True):
    """Algorithm 1 written out request by request (the reference for the vectorised former)."""
    crit, non = [], []
    for p in queue:
        v = est.v_hat(p)
        if p.deadline is not None and now >= p.deadline - v - delta:
            crit.append(((p.deadline, p.arrival, p.client), p, now + v > p.deadline))
        else:
            key = -p.expected_tokens / v if density else (math.inf if p.deadline is None else p.deadline)
            non.append(((key, p.arrival, p.client), p, False))
    chosen, lin, inter, cached, memory, d_min = [], 0.0, 0.0, 0.0, 0.0, math.inf
    for _, p, late in sorted(crit, key=lambda t: t[0]) + sorted(non, key=lambda t: t[0]):
        lin2, inter2, cached2 = lin + p.n_new, inter + (p.n_new + p.n_cached) * p.n_new, cached + p.n_cached
        d2 = d_min if (late or p.deadline is None) else min(d_min, p.deadline)
        if memory + p.memory > memory_budget or now + est.time(lin2, inter2, cached2) > d2:
            break
        chosen.append(p)
        lin, inter, cached, memory, d_min = lin2, inter2, cached2, memory + p.memory, d2
    return chosen


@pytest.mark.parametrize("density", [True, False])
def test_vectorised_former_equals_algorithm1_by_hand(density):
    rng = np.random.default_rng(3)
    est = Estimator.from_profile("li2026_paper")
    for trial in range(150):
        n = int(rng.integers(1, 60))
        queue = []
        for i in range(n):
            k = int(rng.integers(0, 9))
            has_slo = rng.random() < 0.9
            queue.append(Pending(i, f"s{i}", 0, float(rng.uniform(0, 1)), k, k + int(rng.integers(1, 300)),
                                 int(rng.integers(0, 2000)), 4 if has_slo else None,
                                 float(rng.uniform(0.5, 1.5)) if has_slo else None,
                                 float(rng.uniform(0.1, 6)), float(rng.uniform(0, 2e8))))
        now, budget = float(rng.uniform(0.5, 1.5)), float(rng.uniform(2e8, 5e9))
        former = WISPBatcher(est, delta=0.01, memory_budget=budget, density=density)
        got = former.form(queue, now, frozenset())
        assert [p.client for p in got] == [p.client for p in _algorithm1_by_hand(queue, now, est, 0.01, budget, density)]


def test_edf_only_ignores_value_density():
    q = [P(0, deadline=0.9, g=100.0), P(1, deadline=0.5, g=0.1), P(2, deadline=None, g=50.0)]
    assert [p.client for p, _ in EDFOnly(EST).order(q, 0.0)[0]] == [1, 0, 2]
    assert [p.client for p, _ in WISPBatcher(EST).order(q, 0.0)[0]] == [0, 2, 1]
    with pytest.raises(ValueError, match="delta"):
        WISPBatcher(EST, delta=-1)
    with pytest.raises(ValueError, match="estimator"):
        WISPBatcher(lambda b: 0.0)


# --------------------------------------------------------------------------- capacity
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.2, 0.5])
def test_bisection_matches_a_linear_scan(eps):
    rng = np.random.default_rng(3)
    for _ in range(20):
        knee = int(rng.integers(1, 300))
        f = lambda n, k=knee: (int(1000 * min(1.0, max(0.0, (n - k) / 50))), 1000)   # noqa: E731
        scan = max([n for n in range(1, 301) if capacity.rate(*f(n)) <= eps], default=0)
        cap, info = capacity.bisect(f, 1, 300, eps, return_info=True)
        assert cap == scan and len(info["evaluated"]) <= 2 + math.ceil(math.log2(300))
    assert capacity.bisect(lambda n: (0, 10), 1, 64, 0.05, return_info=True)[1]["saturated"]
    assert capacity.bisect(lambda n: (10, 10), 1, 64, 0.05) == 0
    assert capacity.bisect(lambda n: (0, 0), 1, 64, 0.05) == 0          # no trials: not served in time
    with pytest.raises(ValueError, match="epsilon"):
        capacity.bisect(lambda n: (0, 1), 1, 10, 1.5)


def test_wilson_interval():
    def closed(k, n, conf=0.95):
        z = stats.norm.ppf(0.5 + conf / 2)
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return centre - half, centre + half
    for k, n in ((0, 10), (3, 10), (50, 100), (100, 100), (7, 1000)):
        assert capacity.wilson(k, n) == pytest.approx(closed(k, n), abs=1e-9)
    assert capacity.wilson(0, 10)[0] == 0.0 and capacity.wilson(10, 10)[1] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        capacity.wilson(3, 0)


# --------------------------------------------------------------------------- verify_profiling
def _tiny_llama(vocab=300):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096)
    return LlamaForCausalLM(cfg).eval()


def test_verify_profiling_design_and_its_timings_follow_specedge_timing():
    from specedge.serving.real import verify_profiling as vp
    full = vp.design(seed=0)
    assert len(full) == 173 and sum(c.split == "train" for c in full) == 123
    assert {c.category for c in full} == set(vp.CATEGORIES)
    small = vp.design(seed=0, length_scale=0.02)
    configs = [small[0], small[30], small[-1]]
    df = vp.measure(_tiny_llama(), configs, runs=3, progress=False)
    assert df.config.tolist() == [c.name for c in configs]           # rows in design order, measured shuffled
    assert (df.runs == 3).all()
    assert (df.seconds <= df.seconds_median).all() and (df.seconds_median <= df.seconds_max).all()
    assert (df.seconds > 0).all() and (df.seconds <= df.seconds_mean).all()
    fig4 = vp.interference(_tiny_llama(), [8, 16], b_cached=20, b_new=3, runs=2, progress=False)
    assert fig4.columns.tolist() == ["a_length", "case", "seconds", "seconds_median", "seconds_max"]
    assert len(fig4) == 6 and (fig4.seconds <= fig4.seconds_median).all()
    with pytest.raises(ValueError, match="runs"):
        vp.measure(_tiny_llama(), configs, runs=0, progress=False)


def test_fcfs_serves_the_oldest_first_and_cuts_at_max_batch():
    """SLED's static batching: arrival order, whatever the queue's order (a newest-first FCFS went unnoticed)."""
    queue = [Pending(c, f"s{c}", 0, t, 2, 3) for c, t in ((0, 0.30), (1, 0.10), (2, 0.20), (3, 0.05))]
    assert [p.client for p in FCFS().form(queue, 1.0, frozenset(range(4)))] == [3, 1, 2, 0]
    assert [p.client for p in FCFS(max_batch=2).form(queue, 1.0, frozenset(range(4)))] == [3, 1]


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.5])
def test_bisection_from_a_guess_matches_the_scan_and_skips_the_costly_top(eps):
    """A guess (e.g. the server's throughput bound) brackets the search, so N near
    ``hi`` (the costliest runs) is never evaluated when the capacity lies far below it; a guess below
    the capacity widens by doubling; the answer is the scan's either way."""
    rng = np.random.default_rng(4)
    for _ in range(20):
        knee = int(rng.integers(1, 300))
        f = lambda n, k=knee: (int(1000 * min(1.0, max(0.0, (n - k) / 50))), 1000)   # noqa: E731
        scan = max([n for n in range(1, 4097) if capacity.rate(*f(n)) <= eps], default=0)
        for guess in (max(1, knee // 3), knee + 60, 2 * knee + 100):
            cap, info = capacity.bisect(f, 1, 4096, eps, guess=guess, return_info=True)
            assert cap == scan and not info["saturated"]
            assert max(info["evaluated"]) <= max(guess, 2 * (knee + 50)) < 4096
    cap, info = capacity.bisect(lambda n: (0, 10), 1, 4096, 0.05, guess=100, return_info=True)
    assert cap == 4096 and info["saturated"] and max(info["evaluated"]) == 4096     # censored at the cap
    with pytest.raises(ValueError, match="guess"):
        capacity.bisect(lambda n: (0, 1), 1, 10, 0.05, guess=0)


def test_fcfs_keeps_its_batch_within_the_memory_budget():
    """FCFS (and SLED) get WISP's memory constraint (eq 14), stopping at the first
    request that does not fit (before, FCFS had no memory model: every queued request went in)."""
    queue = [Pending(c, f"s{c}", 0, 0.1 * c, 2, 3, memory=m) for c, m in enumerate((4.0, 3.0, 5.0, 1.0))]
    assert [p.client for p in FCFS(memory_budget=8.0).form(queue, 1.0, frozenset(range(4)))] == [0, 1]
    assert len(FCFS().form(queue, 1.0, frozenset(range(4)))) == 4
    with pytest.raises(ValueError, match="exceeds the budget"):
        FCFS(memory_budget=2.0).form(queue, 1.0, frozenset(range(4)))
    with pytest.raises(ValueError, match="memory_budget"):
        FCFS(memory_budget=0.0)


@pytest.mark.parametrize("density", [True, False])
def test_short_and_long_queue_paths_decide_alike(density, monkeypatch):
    """Algorithm 1 runs on plain floats for short queues and on numpy arrays for long ones
    (``wisp_batching.SHORT``): both give the same batch and the same admission order on random queues
    mixing late, critical, relaxed and SLO-free requests, a memory budget and a batch cap."""
    from specedge.serving.policies import wisp_batching

    rng = np.random.default_rng(5)
    est = Estimator(2e-4, 3e-8, 1e-6, 0.012)
    for trial in range(150):
        n = int(rng.integers(1, 70))
        now = float(rng.uniform(0, 50))
        queue = []
        for i in range(n):
            s = int(rng.integers(0, 9))
            d = None if rng.random() < 0.2 else now + float(rng.normal(0.05, 0.08))
            queue.append(Pending(int(rng.integers(0, 40)), f"{i}", i, now - float(rng.uniform(0, 1)), s,
                                 s + 1, int(rng.integers(0, 400)), 4, d,
                                 None if rng.random() < 0.1 else float(rng.uniform(0, s + 1)),
                                 float(rng.integers(1, 200)) * 1e6))
        former = WISPBatcher(est, delta=0.01, memory_budget=float(rng.choice([math.inf, 3e9])),
                             max_batch=None if rng.random() < 0.7 else int(rng.integers(1, 20)), density=density)
        got = {}
        for short in (10**9, 0):
            monkeypatch.setattr(wisp_batching, "SHORT", short)
            order, crit = former.order(queue, now)
            got[short] = ([id(p) for p in former.form(queue, now, frozenset())],
                          [(id(p), late) for p, late in order], crit)
        assert got[10**9] == got[0], f"trial {trial}: the two paths disagree"


def test_one_request_path_decides_as_the_general_ones(monkeypatch):
    """A queue of one request (``WISPBatcher._form_one``) gets the batch the numpy path forms for it:
    relaxed, critical, late and SLO-free requests, deadlines within a nanosecond of reach, a memory
    budget it fits or exceeds (the same error)."""
    from specedge.serving.policies import wisp_batching

    rng = np.random.default_rng(12)
    est = Estimator(2e-4, 3e-8, 1e-6, 0.012)
    for trial in range(3000):
        now, s, cached = float(rng.uniform(0, 50)), int(rng.integers(0, 9)), int(rng.integers(0, 400))
        v = est.time(s + 1, (s + 1 + cached) * (s + 1), cached)
        d = rng.choice([None, now + v, now + v + 4e-10, now + v + 0.01 + 3e-10, now + float(rng.normal(0.05, 0.08))])
        p = Pending(0, "a", 0, now - 0.1, s, s + 1, cached, 4, d, float(s), float(rng.integers(1, 5)) * 1e9)
        former = WISPBatcher(est, delta=float(rng.choice([0.0, 0.01])), memory_budget=float(rng.choice([math.inf, 3e9])),
                             density=bool(rng.random() < 0.5))
        got = []
        for short in (10**9, 0):
            monkeypatch.setattr(wisp_batching, "SHORT", short)
            try:
                got.append(former.form([p], now, frozenset()))
            except ValueError as e:
                got.append(str(e))
        assert got[0] == got[1], f"trial {trial}: {got}"


def test_component_shares_by_hand():
    """Appendix C's Component Analysis (serving.timemodels.verify_diagnostics.component_shares): each term of eq (19) over
    the predicted latency; a single 1200-token cold batch with Table 12's coefficients, by hand."""
    from specedge.serving.timemodels import verify_diagnostics as vp

    coef = dict(a=3.314e-5, b_compute=3.45e-8, b_read=4.62e-6, c=1.486e-2)
    d = pd.DataFrame(dict(batch=["1200:0", "5:995 5:995"], regime=["compute-bound", "memory-bound"]))
    s = vp.component_shares(d, coef)
    total = 3.314e-5 * 1200 + 3.45e-8 * 1200 * 1200 + 1.486e-2
    assert s.interactions[0] == pytest.approx(3.45e-8 * 1200 * 1200 / total)
    assert s.cached[1] == pytest.approx(4.62e-6 * 1990 / (3.314e-5 * 10 + 3.45e-8 * 2 * 1000 * 5 + 4.62e-6 * 1990 + 1.486e-2))
    assert (s[["linear", "interactions", "cached", "constant"]].sum(axis=1)).to_numpy() == pytest.approx([1.0, 1.0])


def _fake_point(knees, flip=None):
    """A synthetic ``run_point``: per (system, class) a violation curve rising from its knee over 30 devices,
    1000 responses a seed, each seed shifted a little; ``flip`` = (N, seed): that run shows no violations
    while the others of its N show every response violated."""
    def fake(p):
        if flip is not None and p.devices == flip[0]:
            return dict(violations=0 if p.seed == flip[1] else 1000, responses=1000)
        rate = min(1.0, max(0.0, (p.devices - knees[p.system, p.slo_class]) / 30 + (p.seed % 7) * 0.003))
        return dict(violations=int(1000 * rate), responses=1000)
    return fake


KNEES = {("SLED", 2): 40, ("SLED", 8): 6, ("WISP", 2): 300, ("WISP", 8): 90}


def _recording_run(calls):
    def run(points, fn):
        calls.append(points)
        return pd.DataFrame([fn(p) for p in points])
    return run


def test_capacity_searches_run_in_lockstep_and_give_each_search_its_own_answer(monkeypatch):
    """``capacities`` advances every search together (one ``run`` call per round with every search's next
    N and seeds, costliest first, a point two searches share run once) and gives each search the row it
    gets alone (``capacity_of``), in the order of its curves. A synthetic violation curve stands in for the
    twin; every point runs every seed here (``decisive=None``)."""
    from specedge.experiments.li2026 import serving_runs as li

    monkeypatch.setattr(li, "run_point", _fake_point(KNEES))
    st = li.SCENARIO.setting(profile="li2026_paper")
    curves = [c for e in (0.01, 0.05) for c in li.curves(["SLED", "WISP"], ["Qwen3-32B"], [2, 8], epsilon=e, seeds=1,
                                                         seed=0, setting=st, hi=4096, resolution=1 / 64)]
    calls = []
    rows = li.capacities(curves, _recording_run(calls), decisive=None)
    alone = pd.DataFrame([li.capacity_of(c) for c in curves])
    pd.testing.assert_frame_equal(rows, alone)
    assert list(zip(rows.system, rows.speed, rows.epsilon)) == [(c.system, c.slo_class, c.epsilon) for c in curves]
    evaluated = [len(e.split()) for e in rows.evaluated]
    assert len(calls) == max(evaluated)                                  # one call per round
    assert len(calls[0]) == 4                                            # round 1: N = 1 of 4 curves (shared by both epsilons)
    for pts in calls:
        assert len(set(pts)) == len(pts)                                 # a point asked twice runs once
        costs = [li._point_cost(p) for p in pts]
        assert costs == sorted(costs, reverse=True)
    assert sum(len(p) for p in calls) < sum(evaluated)                   # shared points (both epsilons) ran once
    assert (rows.first_seed_only == "").all()


def test_a_point_one_seed_decides_skips_its_other_seeds_and_the_answer_counts_every_seed(monkeypatch):
    """Staged seeds (``capacities``' ``decisive``): the same capacities, counts at the capacity and Wilson
    intervals as running every seed of every point, in fewer runs; the N decided on the first seed are
    listed. And when the first seed of the answer met epsilon but its other seeds do not, the search
    resumes and ends where the all-seeds search ends."""
    from specedge.experiments.li2026 import serving_runs as li

    st = li.SCENARIO.setting(profile="li2026_paper")
    curves = li.curves(["SLED", "WISP"], ["Qwen3-32B"], [2, 8], epsilon=0.05, seeds=3, seed=0, setting=st, hi=4096,
                       resolution=1 / 64)
    same = ["capacity", "censored", "resolution", "violation_rate_at_capacity", "wilson_low", "wilson_high"]
    monkeypatch.setattr(li, "run_point", _fake_point(KNEES))
    every, staged = [], []
    rows_all = li.capacities(curves, _recording_run(every), decisive=None)
    rows = li.capacities(curves, _recording_run(staged))
    pd.testing.assert_frame_equal(rows[same], rows_all[same])
    assert sum(map(len, staged)) < 0.8 * sum(map(len, every))
    for r in rows.itertuples():
        skipped = {int(n) for n in r.first_seed_only.split()}
        assert skipped and r.capacity not in skipped
        assert skipped < {int(e.split(":")[0]) for e in r.evaluated.split()}

    first = sweep.seeds(0, 3)[0]
    cap = int(rows_all.capacity[2])                          # WISP, 2 tok/s: its first seed alone says "meets"
    monkeypatch.setattr(li, "run_point", _fake_point(KNEES, flip=(cap, first)))
    plain, staged = li.capacities(curves[2:3], decisive=None), li.capacities(curves[2:3])
    pd.testing.assert_frame_equal(staged[same], plain[same])
    assert staged.capacity[0] < cap and f"{cap}:2000/3000" in staged.evaluated[0]


def test_wisp_times_draft_at_the_quotient_and_wait_the_latency_each_way():
    """The point's Times: k passes take k / (1 / s_per_token) itself, the rate as the paper states it (not k x
    s_per_token), up, down and the server's send each half the round trip, the engine's logged bytes."""
    from specedge.experiments.li2026 import serving_runs as li
    from specedge.serving.interfaces import Times

    pt = li.SCENARIO.point("WISP", 3, None, setting=li.SCENARIO.setting(s_per_token=0.2, rtt_s=0.026))
    t = li.times(pt, li.estimator(pt))
    assert [t.draft[c](k) for c in range(3) for k in (3, 6, 7)] == [k / 5.0 for _ in range(3) for k in (3, 6, 7)]
    assert t.draft[0](3) != 3 * (1 / 5.0)                     # the case the quotient is there for
    assert (t.up(1, 8), t.down(1), t.send(1)) == (0.013, 0.013, 0.013)
    assert (t.bytes_up(8), t.bytes_down) == (Times.bytes_up(8), Times.bytes_down)
    assert li.former(li.SCENARIO.point("SLED", 2), li.estimator(pt)).label == "SLED"


def test_deadline_attribution_by_hand_and_steady_trims_the_warmup():
    """serving.analysis.metrics.deadline_attribution (eq 21): rho = t_verify / the mean of the previous batches'
    t_verify; a miss is compute-dominant above tau, else queue-dominant; met rounds are 'met'.
    serving.analysis.metrics.steady keeps verified rounds that started at or after the warm-up."""
    from specedge.serving.analysis import metrics

    log = pd.DataFrame(dict(
        event=["", "", "", "dropped", ""], batch=[0, 1, 2, 3, 3], client=[0, 1, 0, 1, 1], slo_class=[2, 2, 2, 2, 2],
        t_queue=[0.0, 0.5, 0.0, 0.0, 0.3], t_verify=[1.0, 1.0, 3.0, 1.0, 1.0], start=[0.0, 1.0, 2.0, 3.0, 3.0],
        end=[1.0, 2.5, 5.0, 4.0, 4.5], deadline=[2.0, 2.0, 4.0, 9.0, 4.0]))
    att = metrics.deadline_attribution(log, window=2, tau=1.5).set_index("batch")
    assert att["rho"].isna()[0] and att.loc[2, "rho"] == pytest.approx(3.0) and att.loc[3, "rho"] == pytest.approx(0.5)
    assert list(att["label"]) == ["met", "queue-dominant", "compute-dominant", "queue-dominant"]
    assert 3 in att.index and len(att) == 4                             # the dropped row is no verification
    assert list(metrics.steady(log, 2.0)["batch"]) == [2, 3]
    with pytest.raises(ValueError, match="window"):
        metrics.deadline_attribution(log, window=0)


def test_per_class_pools_groups_and_leaves_an_empty_class_nan():
    from specedge.serving.analysis import metrics

    rows = pd.DataFrame(dict(system=["A", "A", "B"], responses_2=[3, 1, 0], violations_2=[1, 1, 0],
                             responses_4=[2, 2, 5], violations_4=[0, 1, 5]))
    out = metrics.per_class(rows, ["system"], (2, 4)).set_index(["system", "speed"])
    assert out.loc[("A", 2), "violation_rate"] == pytest.approx(0.5) and out.loc[("A", 4), "violations"] == 1
    assert np.isnan(out.loc[("B", 2), "violation_rate"]) and out.loc[("B", 4), "violation_rate"] == 1.0
