"""GOODSPEED's notebook sections as calls (``experiments.tran2025_figures``) on the zoo's traces, at a few dozen
rounds: every driver returns the tables the notebook writes, with the invariants they must keep (one row per
configuration, policy and seed; U(x*) above every policy's U under i.i.d. acceptance; the rows decided by code)."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

from specedge import compare, coverage, hardware
from specedge.experiments import tran2025 as ex
from specedge.experiments import tran2025_figures as f
from specedge.serving.sim.twin import TraceAcceptance

CFG4 = dataclasses.replace(ex.table1()[0], max_tokens=12)                       # 4 clients, C = 24 (C mod N = 0)
CFG8 = dataclasses.replace(ex.table1()[3], max_tokens=12)                       # 8 clients, C = 20: Fixed-S ⌊C/N⌋ too


@pytest.fixture(scope="module")
def acc():
    return TraceAcceptance()


def test_table1_rows_are_settings_and_a_gap():
    t = f.table1_frame(ex.table1())
    assert len(t) == 4 and set(t.C) == {16, 20, 24, 28}
    rows = f.table1_rows(t)
    c = compare.Comparison("tran2025")
    c.extend(rows, coverage.paper_values("tran2025"))
    fr = c.frame()
    assert set(fr.kind) == {"setting", "reproduction"} and (fr[fr.kind == "reproduction"].status == "not-reproducible").all()


def test_fig4_runs_plot_finals_and_rows(acc, tmp_path, twin_files):
    runs, est, curves = f.fig4_runs([CFG4, CFG8], acc, [0, 1], 30, 0.5, 0.1)
    assert set(curves.policy[curves.config == CFG8.name]) == set(ex.POLICIES) | {ex.FLOOR}
    assert ex.FLOOR not in set(curves.policy[curves.config == CFG4.name])
    assert curves.groupby(["config", "policy", "seed"]).size().eq(30).all()
    assert (CFG8.name, "GOODSPEED") in runs and len(est[CFG8.name, "GOODSPEED"])
    f.fig4_plot(curves, tmp_path, "fig4_utility", "t")
    assert (tmp_path / "fig4_utility.csv").exists()
    fin = f.final_table(curves)
    assert fin.shape == (4, 4) and fin.loc[CFG4.name][ex.FLOOR].isna().all()
    iv = f.final_intervals(curves, "zoo").set_index(["config", "policy"])
    d = fin.loc[CFG8.name]
    assert iv.loc[(CFG8.name, "GOODSPEED − Fixed-S"), "mean_U"] == pytest.approx((d["GOODSPEED"] - d["Fixed-S"]).mean())
    rows = f.fig4_rows([CFG4, CFG8], curves, 30, files=twin_files({"tran2025": {"goodput_tok_s": 5.0}, "li2026": {}}))
    c = compare.Comparison("tran2025")
    c.extend(rows, coverage.paper_values("tran2025"))
    fr = c.frame()
    assert len(fr) == 5 and fr.note.str.contains("the twin's validated error in tran2025's setting").all()
    assert compare.problems(fr.astype(str).replace({"None": "", "nan": ""})) == []


def test_cap_eta_beta_and_xstar(acc):
    wl_of = lambda cfg, sd, max_tokens=None: ex.workload(cfg, seed=sd, max_tokens=max_tokens)
    cap = f.cap_effect([CFG4, CFG8], acc, [0, 1], 20, 0.5, 0.1, wl_of, uncapped=24)
    assert set(cap.config) == {CFG4.name} and len(cap) == 3 and (cap.seeds == 2).all()
    np.testing.assert_allclose(cap["diff"], cap.U_uncapped - cap.U_capped)
    notes = f.cap_notes(cap)
    assert notes[CFG4.name].startswith("the 12-token response cap's share of the U levels")
    eta = f.eta_sensitivity([CFG4], acc, [0, 1], 20, 0.5, [0.05, 0.1], wl_of)
    assert list(eta.eta) == [0.05, 0.1] and (eta.ci_low <= eta.diff_mean).all()
    bs = f.beta_sweep([CFG4], [0.2, 0.5], acc, [0, 1], 20, 0.1, wl_of)
    assert list(bs.beta) == [0.2, 0.5] and list(bs.columns) == ["config", "beta", "mean_U", "ci_low", "ci_high"]
    xs = f.xstar_hetero([CFG4], acc, seed=0, wl_of=lambda cfg: ex.workload(cfg, 1, 10**9))
    assert len(xs) == 4 and xs.x_star.sum() == pytest.approx(sum(  # x*_i = mu_i(S_i*): tokens per round, positive
        xs.x_star)) and (xs.x_star > 0).all() and xs.U_star.nunique() == 1


def test_fig3_region_choice_and_twin(acc):
    prof = hardware.as_profile("tran2025_paper")
    region = ex.fig3_region(CFG4, acc, [0.001, 0.02], [1e9, 10e9], profile=prof, prompts_per_domain=1)
    assert len(region) == 4 and (region.sending_pct >= 0).all()
    parts = region.sending_pct + region.receiving_pct + region.verification_pct
    np.testing.assert_allclose(parts, 100.0, atol=1e-6)
    ms, rate, found = f.fig3_choice(region, coverage.paper_values("tran2025")["fig3-random-5-25"], [1.0, 10.0], [1.0, 20.0])
    assert rate == 10.0 and ms in (1.0, 20.0) and isinstance(found, bool)
    fig3 = f.fig3_twin([CFG4], prof, acc, 1.0, 10.0, seed=0, prompts=1, beta=0.5, eta=0.1)
    assert set(fig3.policy) == set(ex.POLICIES) and (fig3.system == f.CALIBRATED).all()
    np.testing.assert_allclose(fig3.total, fig3.receiving + fig3.verification + fig3.sending)


def test_theorem1_and_its_rows(acc, tmp_path):
    prof = hardware.as_profile("tran2025_paper")
    runs, est, _ = f.fig4_runs([CFG4], acc, [0], 30, 0.5, 0.1)
    xs, iid, dist, gaps = f.theorem1([CFG4], acc, prof, runs, est, seeds=[0, 1], iterations=30, beta=0.5, eta=0.1, seed=0,
                                     chosen_ms=1.0, chosen_rate=10.0)
    assert len(xs) == 4 and xs.x_star_per_second.notna().all()
    assert (~iid.above_optimum).all()     # Jensen: no policy's interval above U(x*) (30 rounds: the means are noisy)
    assert set(dist.experiment) == {"(a) i.i.d., exact x*", "(b) trace-driven, pooled-α x*"}
    assert set(gaps.policy) == set(ex.POLICIES)
    rows = f.theorem1_rows([CFG4], iid, dist, 2)
    assert rows[0]["check"].startswith("Theorem 1 (a)") and rows[0]["claim"].holds
    assert all("the twin's validated error in tran2025's setting" in r["note"] for r in rows[1:])
    sweep = f.theorem1_beta_sweep([CFG4], acc, [0.5, 0.1], [0, 1], window=20, burn_in=1.0, eta_per_beta=0.1, seed=0)
    table = f.theorem1_beta_table(sweep)
    assert len(table) == 4 and (table.ci_low <= table.mean_distance).all()
    fig = f.theorem1_beta_figure(table, 0.1)
    assert fig.axes[0].get_xscale() == "log"
    b, d, sd = f.window_floor(sweep, CFG4.name)
    assert b == 0.1 and d >= 0 and sd >= 0
    table2, brows = f.theorem1_beta_both([CFG4], acc, acc, [0.5, 0.1], [0, 1], tmp_path, seed=0, wl_of=None, tags={},
                                         window=20, burn_in=1.0, eta_per_beta=0.1)
    assert set(table2.setting) == {"heterogeneous", "narrow spread"} and len(brows) == 2
    assert (tmp_path / "theorem1_beta_sweep.csv").exists()
    assert f.assumption1_row(30)["status"] == "not-reproducible"


def test_fig2_plot_and_rows(acc, tmp_path):
    cfg = CFG8
    log, est = ex.run_twin(cfg, "GOODSPEED", ex.sync_times(cfg), acc, rounds=40, seed=0)
    fig2 = f.fig2_frame(est, log)
    f.fig2_plot(fig2, np.full(cfg.clients, 0.5), tmp_path)
    assert (tmp_path / "fig2_estimated_vs_real.csv").exists()
    rows = f.fig2_rows(fig2, "t: ")
    assert len(rows) == 2 and all(r["quantity"].startswith("t: ") and "tran2025's setting" in r["note"] for r in rows)


def test_the_stabilisation_row_at_the_full_horizon():
    """600 iterations: GOODSPEED's mean curve settles at iteration 200, Fixed-S's (the null) at 1: the stated 400 ± 150
    holds for neither by construction here, so the row compares ours with the paper's (a number, tolerance 150)."""
    it = np.arange(1, 601)
    rows = []
    for sd in (0, 1):
        for pol, u in (("GOODSPEED", np.where(it < 200, 3.0 + it / 200, 4.0)), ("Fixed-S", np.full(600, 3.8)),
                       ("Random-S", np.full(600, 3.5))):
            rows.append(pd.DataFrame(dict(config=CFG4.name, policy=pol, seed=sd, iteration=it, utility=u + 0.001 * sd)))
    row = next(r for r in f.fig4_rows([CFG4], pd.concat(rows), 600) if "stabilises" in r["quantity"])
    assert row["tolerance"] == 150 and row["null"] < 200 and 150 <= row["reproduced"] <= 200


def test_real_hetero_sets_the_twin_beside_a_run(acc):
    cfg = ex.real_config()
    log, _ = ex.run_twin(cfg, "Fixed-S", ex.sync_times(cfg), acc, rounds=20, seed=0, wl=ex.real_hetero_workload(cfg, 0))
    t = f.real_hetero({"Fixed-S": log}, acc, [0, 1])
    assert t.policy.tolist() == ["Fixed-S"] and t.rounds.iloc[0] <= 20 and t.twin_ci_low.iloc[0] <= t.U_twin.iloc[0]


def test_real_runs_are_measured_through_the_serving_layer(monkeypatch):
    from specedge.serving.real import real_logs, run as srun
    calls = []

    def run_real(wl, former, alloc, label, seed):
        calls.append((label, len(wl.clients)))
        return pd.DataFrame(dict(policy=[label], event=[""])), None
    monkeypatch.setattr(srun, "run_real", run_real)
    logs = ex.measure_real("ci", 3)
    assert logs.policy.tolist() == list(ex.POLICIES) and calls == [(p, 2) for p in ex.POLICIES]
    assert len(ex.measure_real("ci", 3, hetero=True)) == 3 and calls[-1] == ("Random-S", 2)
    monkeypatch.setattr(srun, "run_real", lambda *a, **k: (pd.DataFrame(dict(policy=["x"], event=["dropped"])), None))
    with pytest.raises(RuntimeError, match="unexpected events"):
        ex.measure_real("ci", 0)
    with pytest.raises(ValueError, match="heterogeneous clients exist for"):
        ex.hetero_workload(dataclasses.replace(CFG4, clients=3))
    seen = {}
    monkeypatch.setattr(real_logs, "measure_main", lambda d, m, out, argv: seen.update(out=out, argv=argv) or 0)
    assert ex._main(["measure", "--hetero", "--seed", "2"]) == 0
    assert seen == dict(out=ex.HETERO_RUNS, argv=["measure", "--seed", "2"])
    ex._main(["measure"])
    assert seen["out"] == ex.REAL_RUNS
    logs = ex.load_real_runs()
    assert set(logs) == set(ex.POLICIES) and all(len(g) for g in logs.values())
