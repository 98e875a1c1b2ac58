"""GOODSPEED: eq (5) solved exactly (greedy == brute force), x* certified by its duality gap and equal to
a direct convex solve on small cases, and the allocators' updates follow eqs (3)-(4)."""
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator, RandomS
from specedge.serving.interfaces import Outcome
from specedge.solvers import tran2025 as t


@pytest.mark.parametrize("seed", range(40))
def test_allocation_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 5)), int(rng.integers(0, 10))
    a = rng.choice([0.0, 0.05, 0.3, 0.5, 0.5, 0.9, 0.99], size=n)   # ties and extremes included
    w = rng.choice([0.2, 1.0, 1.0, 3.0], size=n)
    s = t.allocate(a, w, c)
    _, best = t.brute_force_allocate(a, w, c)
    assert s.sum() <= c and float(w @ t.goodput(a, s)) == pytest.approx(best, abs=1e-12)


def test_allocate_rejects_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        t.allocate([1.0], [1], 3)
    with pytest.raises(ValueError, match="weights"):
        t.allocate([0.5], [-1], 3)
    with pytest.raises(ValueError, match="capacity"):
        t.allocate([0.5], [1], 2.5)


def _direct_optimum(a, c):
    ks = [k for k in itertools.product(range(c + 1), repeat=len(a)) if sum(k) <= c]
    mu = np.array([t.goodput(a, k) for k in ks])
    f = lambda phi: -np.sum(np.log(phi @ mu))
    res = minimize(f, np.full(len(ks), 1 / len(ks)), method="SLSQP", bounds=[(0, 1)] * len(ks),
                   constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1}], options={"ftol": 1e-12, "maxiter": 500})
    return -res.fun


@pytest.mark.parametrize("a,c", [([0.8, 0.3], 3), ([0.6, 0.6, 0.2], 3), ([0.9, 0.5], 4)])
def test_frank_wolfe_optimum_matches_direct_solve(a, c):
    o = t.optimum(a, c, tol=1e-7)
    assert o.gap <= 1e-6                      # certified: U(x*) - U(x) <= gap
    direct = _direct_optimum(np.array(a), c)
    assert o.utility <= direct + 1e-7 and o.utility == pytest.approx(direct, abs=2e-6)


def test_per_second_optimum_prefers_shorter_rounds():
    a = [0.8, 0.4]
    per_round = t.optimum(a, 6)
    o = t.optimum_per_second(a, 6, lambda k: 1.0 + 0.2 * k.max())
    assert o.gap <= 1e-6 and np.all(o.x > 0)
    # with a flat round time the per-second optimum is the per-round one scaled
    flat = t.optimum_per_second(a, 6, lambda k: 2.0)
    assert flat.x == pytest.approx(per_round.x / 2, rel=1e-6)


def test_goodspeed_updates_follow_eqs_3_and_4():
    g = GoodspeedAllocator(capacity=6, eta=0.5, beta=0.25, alpha0=0.5, x0=1.0)
    s0 = g.initial([0, 1])
    assert sum(s0.values()) <= 6 and s0[0] == s0[1]
    g.update([Outcome(0, drafted=3, accepted=3, accept_prob_sum=3.0), Outcome(1, 3, 0, 0.3)])
    assert g.alpha_hat[0] == pytest.approx(0.75) and g.alpha_hat[1] == pytest.approx(0.5 * 0.5 + 0.5 * 0.1)
    assert g.X[0] == pytest.approx(0.75 * 1 + 0.25 * 4) and g.X[1] == pytest.approx(0.75 + 0.25)
    g.update([Outcome(1, 0, 0, 0.0)])                      # S = 0: alpha unchanged, X still smoothed
    assert g.alpha_hat[1] == pytest.approx(0.3)
    with pytest.raises(ValueError, match="eta"):
        GoodspeedAllocator(4, eta=1.5)


def test_eq_3_weighs_the_new_evidence_by_eta():
    """With eta = 0.5 (the test above) eta and 1 - eta are interchangeable; here they are not."""
    g = GoodspeedAllocator(capacity=6, eta=0.2, beta=0.3, alpha0=0.5, x0=1.0)
    g.initial([0])
    g.update([Outcome(0, drafted=4, accepted=4, accept_prob_sum=4.0)])     # empirical acceptance 1
    assert g.alpha_hat[0] == pytest.approx(0.8 * 0.5 + 0.2 * 1.0)
    assert g.X[0] == pytest.approx(0.7 * 1.0 + 0.3 * 5)


def test_baselines():
    f = FixedS(20, 8)                                       # the whole budget: remainder spread
    s = f.initial(range(8))
    assert sum(s.values()) == 20 and sorted(s.values()) == [2] * 4 + [3] * 4 and f.update([]) == s
    floor = FixedS(20, 8, floor=True)                       # the literal C // N, 4 slots idle
    assert set(floor.initial(range(8)).values()) == {2} and floor.label == "Fixed-S ⌊C/N⌋"
    r = RandomS(16, seed=1)
    draws = [r.initial(range(8))] + [r.update([]) for _ in range(200)]
    assert all(sum(d.values()) == 16 and min(d.values()) >= 0 for d in draws)
    assert len({tuple(d.values()) for d in draws}) > 100


def test_iid_optimum_is_above_every_policy_over_seeds():
    """Theorem 1 on the i.i.d. model, where x* is the exact optimum of the simulated process: no policy's
    U(x̄) is above U(x*) with its 95 % interval clearing it (the old pairing of trace-driven runs with an
    i.i.d. x* put Fixed-S at 2.208 above "U(x*)" = 2.1865)."""
    from specedge import claims, sweep
    from specedge.serving.sim.twin import TraceAcceptance
    from specedge.experiments import tran2025 as ex

    cfg = ex.table1()[0]
    wl, iid, alpha = ex.iid_model(TraceAcceptance(), cfg)
    assert all(len(c.domains) == 1 for c in wl.clients) and iid.table and len(set(alpha)) == 4
    opt = t.optimum(alpha, cfg.capacity)
    fu = ex.final_utilities(cfg, ex.POLICIES, iid, seeds=sweep.seeds(1, 6), rounds=1500, wl_of=lambda s: wl)
    for pol, g in fu.groupby("policy"):
        u = g.utility.to_numpy()
        assert not claims.interval_above(u, np.full(len(u), opt.utility)), (pol, u, opt.utility)
    # and the optimum is not vacuous: Random-S sits clearly below it
    r = fu[fu.policy == "Random-S"].utility.to_numpy()
    assert claims.interval_above(np.full(len(r), opt.utility), r)


def test_run_twin_uses_the_papers_beta_and_passes_it_on():
    from specedge.serving.policies.allocation import PAPER_BETA
    from specedge.serving.sim.twin import IIDAcceptance
    from specedge.experiments import tran2025 as ex

    cfg = ex.table1()[0]
    assert PAPER_BETA == 0.5 and ex.allocator("GOODSPEED", cfg).beta == 0.5
    times = ex.sync_times(cfg)
    assert times.draft[3](7) == 0.0 and times.verify([]) == 1.0
    _, a = ex.run_twin(cfg, "GOODSPEED", times, IIDAcceptance(0.6), rounds=30, seed=2)
    _, b = ex.run_twin(cfg, "GOODSPEED", times, IIDAcceptance(0.6), rounds=30, seed=2, beta=0.1)
    first = a[a.batch == 0].X.to_numpy()
    # eq (4) after one round from X = 1: (1 - beta) + beta * tokens
    log, _ = ex.run_twin(cfg, "GOODSPEED", times, IIDAcceptance(0.6), rounds=1, seed=2)
    assert first == pytest.approx(0.5 + 0.5 * log.sort_values("client").tokens.to_numpy())
    assert not np.allclose(a.X, b.X)


def test_paper_times_split_the_servers_send_from_the_clients_wait():
    from specedge.experiments import tran2025 as ex

    cfg = ex.table1()[2]
    tm = ex.paper_times(cfg, draft_s_per_token=5e-4, rate_bps=1e10, latency_s=2e-4)
    assert tm.draft[0](4) == pytest.approx(2e-3) and tm.draft[1](4) == pytest.approx(2e-3 * 11.5 / 4)
    assert tm.send(0) == pytest.approx(64 * 8 / 1e10) and tm.down(0) == pytest.approx(2e-4 + 64 * 8 / 1e10)
    assert tm.up(0, 2) == pytest.approx(2e-4 + 8 * (64 + 2 * (4 + 2 * ex.VOCAB)) / 1e10)
    assert tm.bytes_up(2) == 64 + 2 * (4 + 2 * ex.VOCAB) and tm.bytes_down == 64
    d = ex.paper_times(cfg)                         # the profile's derived numbers unchanged
    assert d.draft[0](1) == pytest.approx(4e-3) and d.down(0) == pytest.approx(2e-4 + 64 * 8 / 1e9)


def test_fig3_rows_decide_each_statement_from_the_split(twin_files):
    """Fig 3's statements as rows built from a wall-time split (tran2025_figures.fig3_rows): a
    GOODSPEED total 2 % off Fixed-S is 'comparable', 8 % is not; receiving longer than Fixed-S needs > 1 %."""
    import pandas as pd

    from specedge import compare, coverage
    from specedge.experiments import tran2025_figures as figs

    def split(goodspeed_total, recv):
        rows = [dict(config="c", policy=p, system=figs.REAL, receiving=r, verification=5.0, sending=0.001)
                for p, r in (("GOODSPEED", recv), ("Fixed-S", 5.0), ("Random-S", 6.5))]
        f = pd.DataFrame(rows)
        f.loc[f.policy == "GOODSPEED", "verification"] = goodspeed_total - recv - 0.001
        f["total"] = f[["receiving", "verification", "sending"]].sum(axis=1)
        return f

    paper = coverage.paper_values("tran2025")
    for total, recv, comparable, longer in ((10.2, 5.2, "match", "trend"), (10.8, 5.02, "deviates", "deviates")):
        c = compare.Comparison("x")
        c.extend(figs.fig3_rows(split(total, recv), 1.0, paper), paper)
        st = c.frame().set_index("statements").status
        assert st["fig3-comparable-total"] == comparable and st["fig3-receive-longer"] == longer
        assert st["fig3-random-5-25"] == "match" and st["fig3-sending-0.1"] == "match"   # Random-S +15 %, sending 0.01 %
    # on the calibrated twin the drafting time was chosen so that Random-S's excess holds: a setting, not a result
    # the twin's rows are judged against its round-time error: 0.5 % leaves GOODSPEED's -0.02 % verification time 1.98 %
    # from the edge of -5 ± 3 % (decided: deviates); at 2 % it is a tie
    c = compare.Comparison("x")
    small = twin_files({"tran2025": {"round_time_s": 0.5}, "li2026": {}})
    c.extend(figs.fig3_rows(split(10.2, 5.2).assign(system=figs.CALIBRATED), 0.125, paper, files=small), paper)
    f = c.frame().set_index("statements")
    for sid in ("fig3-random-5-25", "fig3-sending-0.1", "fig3-dominate"):
        assert f.loc[sid, "kind"] == "setting" and f.loc[sid, "status"] == ""
    assert f.loc["fig3-verify-5", "kind"] == "reproduction" and f.loc["fig3-verify-5", "null"] == 0.0
    assert f.loc["fig3-verify-5", "status"] == "deviates" and "0.5 %" in f.loc["fig3-verify-5", "note"]
    assert compare.problems(c.frame().astype(str).replace({"None": "", "nan": ""})) == []
    c = compare.Comparison("x")
    wide = twin_files({"tran2025": {"round_time_s": 2.0}, "li2026": {}})
    c.extend(figs.fig3_rows(split(10.2, 5.2).assign(system=figs.CALIBRATED), 0.125, paper, files=wide), paper)
    f = c.frame().set_index("statements")
    assert f.loc["fig3-verify-5", "status"] == "not-reproducible" and f.loc["fig3-verify-5", "note"].startswith("the twin's validated error")
    # GOODSPEED's receiving 5.2 s against Fixed-S's 5.0 s x 1.01: 2.9 % from the edge, beyond 2 %: decided
    assert f.loc["fig3-receive-longer", "status"] == "trend"


def test_realpair_validation_rows_are_checks_and_name_the_bookkeeping_replay():
    """The real pair's replay with measured passes agrees by construction on round time and goodput: a check named
    bookkeeping; its queueing delay and every metric of the predicted replay are checks too, never comparison rows."""
    import pandas as pd

    from specedge import compare
    from specedge.experiments import realpair_serving as rs
    from specedge.experiments import tran2025_figures as figs

    rp_val = pd.DataFrame([dict(verify=v, policy="goodspeed", n_clients=2, metric=m, quantile=q, real=1.0,
                                twin=1.0 + d, diff_pct=100 * d)
                           for v, d in zip(rs.REPLAYS, (0.0, 0.03)) for m in ("round_time_s", "queue_s", "goodput_tok_s")
                           for q in ("p50", "p90", "p99")])
    c = compare.Comparison("x")
    assert set(c.extend(figs.realpair_validation_rows(rp_val))) == {"passed"}
    ch = c.checks_frame()
    assert c.frame().empty and len(ch) == 12
    book = ch[ch.check.str.startswith("bookkeeping")]
    assert len(book) == 4 and not book.quantity.str.contains("queueing").any()
    assert (ch[~ch.check.str.startswith("bookkeeping")].check.str.contains("measured passes|other run")).all()


def test_averaged_distance_is_deterministic_per_seed_finite_and_checks_beta():
    """Theorem 1's β sweep quantity ‖x̄ − x*‖: the same seed gives the same number, a different seed (GOODSPEED)
    another, it is finite and >= 0 at a tiny scale, and a β outside (0, 1] is refused by name."""
    from specedge.serving.sim.twin import TraceAcceptance
    from specedge.experiments import tran2025 as ex

    cfg = ex.table1()[0]
    wl, iid, alpha = ex.iid_model(TraceAcceptance(), cfg)
    x_star = t.optimum(alpha, cfg.capacity).x
    run = lambda pol, b, sd: ex.averaged_distance(cfg, pol, iid, alpha, x_star, beta=b, seed=sd, window=40, burn_in=1.0, wl=wl)
    a, b = run("GOODSPEED", 0.2, 3), run("GOODSPEED", 0.2, 3)
    assert a == b and np.isfinite(a) and a >= 0
    assert run("GOODSPEED", 0.2, 4) != a
    # Fixed-S ignores X(t): at a fixed number of rounds its distance cannot depend on β
    assert run("Fixed-S", 0.9, 3) == run("Fixed-S", 0.5, 3)
    for bad in (0.0, -0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="beta"):
            run("GOODSPEED", bad, 0)
    with pytest.raises(ValueError, match="window"):
        ex.averaged_distance(cfg, "GOODSPEED", iid, alpha, x_star, beta=0.5, window=0, wl=wl)


def test_theorem1_beta_sweep_rejects_bad_betas_and_is_deterministic():
    """The sweep refuses a β outside (0, 1) or a bad η ratio by name, and repeats itself exactly."""
    from specedge.serving.sim.twin import TraceAcceptance
    from specedge.experiments import tran2025 as ex, tran2025_figures as f

    cfg = ex.table1()[:1]
    with pytest.raises(ValueError, match="betas"):
        f.theorem1_beta_sweep(cfg, TraceAcceptance(), [0.5, 0.0], [0, 1], window=10, burn_in=1.0, eta_per_beta=0.1, seed=0)
    with pytest.raises(ValueError, match="eta_per_beta"):
        f.theorem1_beta_sweep(cfg, TraceAcceptance(), [0.5], [0, 1], window=10, burn_in=1.0, eta_per_beta=0.0, seed=0)
    kw = dict(window=20, burn_in=1.0, eta_per_beta=0.5, seed=0)
    s1 = f.theorem1_beta_sweep(cfg, TraceAcceptance(), [0.9, 0.5], [0, 1], **kw)
    s2 = f.theorem1_beta_sweep(cfg, TraceAcceptance(), [0.9, 0.5], [0, 1], **kw)
    pd.testing.assert_frame_equal(s1, s2)
    assert len(s1) == 2 * 2 * 2 and (s1.distance >= 0).all() and np.isfinite(s1.distance).all()


def _sweep(policy_values):
    """A hand-made sweep: {policy: {beta: [distance per seed]}}."""
    return pd.DataFrame([dict(config="c", policy=p, beta=b, seed=k, distance=d)
                         for p, by in policy_values.items() for b, ds in by.items() for k, d in enumerate(ds)])


def test_distance_falls_predicate_and_its_null_on_hand_made_sweeps():
    from specedge.experiments import tran2025_figures as f

    falls = {0.5: [0.30, 0.32, 0.31, 0.29], 0.1: [0.20, 0.22, 0.19, 0.21], 0.02: [0.10, 0.12, 0.11, 0.09]}
    flat = {0.5: [0.30, 0.32, 0.31, 0.29], 0.1: [0.31, 0.30, 0.32, 0.30], 0.02: [0.30, 0.31, 0.29, 0.31]}
    bump = {0.5: [0.30, 0.32, 0.31, 0.29], 0.1: [0.35, 0.36, 0.34, 0.35], 0.02: [0.10, 0.12, 0.11, 0.09]}
    s = _sweep({"GOODSPEED": falls, "Fixed-S": flat})
    assert f.distance_falls(s, "c", "GOODSPEED").holds
    assert not f.distance_falls(s, "c", "Fixed-S").holds                      # the null: a tie between the ends
    # a trend over seeds (slope of log distance on log β): one step up between neighbours does not decide it, a
    # distance growing as β falls fails it
    assert f.distance_falls(_sweep({"GOODSPEED": bump}), "c", "GOODSPEED").holds
    rises = {b: v for b, v in zip(falls, reversed(list(falls.values())))}
    assert not f.distance_falls(_sweep({"GOODSPEED": rises}), "c", "GOODSPEED").holds
    assert "slope of log value on log β" in f.distance_falls(s, "c", "GOODSPEED").evidence
    assert not f.distance_falls(_sweep({"GOODSPEED": {0.5: [0.3, 0.3]}}), "c", "GOODSPEED").holds  # one β
    # the row: trend when GOODSPEED's distance falls and Fixed-S's does not; not-reproducible when both fall
    from specedge.experiments import tran2025 as ex
    import dataclasses
    cfg = [dataclasses.replace(ex.table1()[0], name="c")]
    (row,) = f.theorem1_beta_rows(cfg, s, window=10, burn_in=1.0, eta_per_beta=0.1)
    assert row["claim"].holds and not row["null_claim"].holds and row["paper"] == "→ 0 as β → 0"
    (both,) = f.theorem1_beta_rows(cfg, _sweep({"GOODSPEED": falls, "Fixed-S": falls}), window=10, burn_in=1.0, eta_per_beta=0.1)
    assert both["status"] == "not-reproducible"
