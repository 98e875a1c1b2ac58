"""WISP's serving notebook sections as calls (``experiments.li2026.serving_figures``, ``li2026_serving_heldout``) on a
stand-in ``run``: each point's goodput and violations follow a closed form of its system, load and seed, so every
table the sections build can be checked by hand."""
import math

import pandas as pd
import pytest

from specedge import coverage
from specedge.experiments.li2026 import serving_runs as ex
from specedge.experiments.li2026 import serving_figures as lf
from specedge.experiments.li2026 import serving_heldout as ho

GOODPUT = {"SLED": 100.0, "Centralized": 200.0, "WISP": 300.0, "FCFS": 250.0}


def fake_run(points) -> pd.DataFrame:
    """Goodput: the system's base x devices / 10 (+1 % per seed, +20 % with the predictor); violations per class: the
    load above 100 devices in tenths (WISP's half of FCFS's), out of 100 responses."""
    rows = []
    for p in points:
        row = dict(system=p.system, devices=p.devices, seed=p.seed, predictor=p.predictor, target=p.target,
                   goodput=GOODPUT.get(p.system, 150.0) * p.devices / 10 * (1 + 0.01 * p.seed) * (1.2 if p.predictor else 1.0))
        for c in ex.CLASSES:
            v = max(p.devices - 100, 0) // 10 * c
            row |= {f"responses_{c}": 100, f"violations_{c}": min(100, v // 2 if p.system == "WISP" else v)}
        rows.append(row)
    return pd.DataFrame(rows)


def test_tables_3_and_6_and_the_settings_before_the_fit(tmp_path):
    st = ex.SCENARIO.base
    raw3, t3 = lf.table3(st, 60, [0, 1], fake_run, tmp_path)
    assert t3.to_dict() == pytest.approx({"SLED": 723.6, "Centralized": 1447.2, "WISP": 2170.8})   # base x 6 x 1.2 x 1.005
    assert (tmp_path / "table3_goodput.csv").exists() and len(raw3) == 6
    raw6, t6 = lf.table6(st, [0], fake_run, tmp_path)
    assert t6.loc[16, "ON"] == pytest.approx(576.0) and t6.improvement_pct.tolist() == pytest.approx([20.0] * 4)
    t1, t3c, t6c = lf.current_tables(st, 150, 60, [0], fake_run)
    # 150 devices: 5 tenths above 100 -> 5 x class violations of 100, WISP half (rounded down)
    assert t1.loc["FCFS", 8] == pytest.approx(0.40) and t1.loc["WISP", 8] == pytest.approx(0.20) and t1.loc["WISP", 2] == pytest.approx(0.05)
    assert t3c["WISP"] == pytest.approx(2160.0) and t6c.improvement_pct.tolist() == pytest.approx([20.0] * 4)
    rows = lf.table3_rows(t3, 60, coverage.paper_values("li2026_serving"), raw3)
    assert all(r.get("kind") == "setting" or r.get("status") == "not-reproducible" for r in rows)
    assert "holds" in next(r for r in rows if "ordered" in r["quantity"])["reproduced"]


def test_the_real_pairs_points_and_tables():
    pts = lf.realpair_points(ex.SCENARIO.base, (150,), 60, [0, 1])
    assert len(pts) == 2 * 2 + 2 * 2 + 2 * 2 and {p.system for p in pts} == {"WISP", "FCFS", "Centralized"}
    table1, good, t6 = lf.realpair_tables(fake_run(pts), (150,), 60)
    assert table1.loc[(150, "FCFS"), 8] == pytest.approx(0.40) and good["WISP"] == pytest.approx(2170.8)
    assert t6[True] / t6[False] == pytest.approx(1.2)


def test_figures_and_capacity_tables(tmp_path):
    raw = fake_run([ex.SCENARIO.point(s, n, None, seed=0) for s in ("WISP", "FCFS") for n in (100, 150, 200)])
    from specedge.serving.analysis import metrics
    f7 = metrics.per_class(raw, ["system", "devices"], ex.CLASSES)
    lf.fig7(f7, tmp_path)
    lf.fig7_readings(f7.assign(system=f7.system.replace({"FCFS": "WISP-stop"})), tmp_path)
    assert (tmp_path / "fig7_violation_vs_n.csv").exists()
    searched = pd.DataFrame(dict(prompt_tokens=[128, 256, 128, 256], memory_gb=[1.0, 1.0, 2.0, 2.0], loss=[0.3, 0.1, 0.2, 0.4]))
    lf.calibration_landscape(searched, {"prompt_tokens": 256, "memory_gb": 1.0}, tmp_path)
    assert (tmp_path / "calibration_landscape.csv").exists()
    att = pd.DataFrame(dict(t_queue=[0.1, 0.2, 0.3], t_verify=[0.05, 0.3, 0.05], label=["met", "compute-dominant", "queue-dominant"],
                            violated=[False, True, True]))
    lf.fig8(att, 220, 0, tmp_path)
    assert (tmp_path / "fig8_attribution.csv").exists()
    t2 = pd.DataFrame([dict(system=s, target="Qwen3-32B", speed=c, capacity=k * c, censored=s == "WISP" and c == 2)
                       for k, s in enumerate(("SLED", "Centralized", "WISP"), 1) for c in ex.CLASSES])
    cap, cens = lf.capacity_tables(t2)
    assert cap.loc[("Qwen3-32B", "WISP"), 8] == 24 and cens.loc[("Qwen3-32B", "WISP"), 2] and not cens.loc[("Qwen3-32B", "SLED"), 2]
    row = lf.centralized_row(pd.DataFrame(dict(twin_vs_real_pct=[3.0, -12.0]), index=pd.MultiIndex.from_tuples(
        [("a", "p50"), ("b", "p50")], names=["x", "quantile"])))
    assert row["ours"] == 12.0 and row["check"].startswith("centralized serving")


def test_capacity_searches_split_table2_its_sensitivity_and_more(monkeypatch):
    def capacities(curves, run):
        return pd.DataFrame([dict(system=c.system, target=c.target, speed=c.slo_class, epsilon=c.epsilon, capacity=i,
                                  censored=False) for i, c in enumerate(curves)])
    monkeypatch.setattr(ex, "capacities", capacities)
    st, cur = ex.SCENARIO.base, ex.SCENARIO.setting(memory_gb=2.0)
    more = ex.curves(["WISP-stop"], ["Qwen3-32B"], ex.CLASSES, epsilon=0.05, seeds=1, seed=0, setting=st, hi=64)
    t2, eps, t2c, mr = lf.capacity_searches(["SLED", "WISP"], ["Qwen3-32B", "Qwen3-14B"], scale="ci", epsilon=0.05, seeds=1, seed=0,
                                            setting=st, current=cur, hi=64, run=None, cache="", more=more)
    assert len(t2) == 16 and len(t2c) == 16 and len(mr) == 4 and (mr.system == "WISP-stop").all()
    assert set(eps.epsilon) == {0.05, 0.10} and (eps.target == "Qwen3-32B").all()
    assert all(s == st for s in mr.setting)
    assert len(lf.sensitivity_curves(["SLED"], ["Qwen3-32B"], scale="full", epsilon=0.05, seed=0, setting=st, current=cur, hi=64,
                                     cache="")) == 4 * 2 + 4


def test_readings_runner_ups_and_the_record(tmp_path):
    """§ Readings and § Sensitivity on the stand-in run: every reading's verdicts, the runner-ups' held-out rows, the
    record with the twin's error columns, the spread and the fit in words."""
    from specedge.serving.timemodels import calibration
    from specedge.serving.analysis import metrics
    st = ex.SCENARIO.base
    paper = coverage.paper_values("li2026_serving")
    loads, seeds = [100, 150, 200], [0, 1]
    raw7 = fake_run([ex.SCENARIO.point(s, n, None, seed=k, setting=st) for s in ("WISP", "FCFS") for n in loads for k in seeds])
    t2 = pd.DataFrame([dict(system=s, target=t, speed=c, capacity=k * c * 10, censored=False, setting=st)
                       for t in ("Qwen3-32B",) for k, s in enumerate(("SLED", "Centralized", "WISP"), 1) for c in ex.CLASSES])
    more = pd.DataFrame([dict(system="WISP-stop", target="Qwen3-32B", speed=c, capacity=0, censored=False, setting=st) for c in ex.CLASSES])
    fig7_all, cap_r, v = ho.readings_section(st, ["WISP-stop"], loads, seeds, fake_run, raw7, t2.drop(columns="setting"), more,
                                              paper, ["Qwen3-32B"], 0.05, tmp_path)
    assert list(v.columns) == ["paper", "WISP", "WISP-stop"] and (tmp_path / "readings_verdicts.csv").exists()
    assert v.loc["Sec 5.2.1: WISP has the highest capacity, Qwen3-32B, 8 tok/s (1: holds)"].tolist() == [1.0, 1.0, 0.0]
    # WISP violates half of FCFS's: at or below it at every load where either violates
    assert v.loc["Sec 5.3: share of loads where WISP violates at most as FCFS, 8 tok/s", "WISP"] == 1.0
    words = ho.conclusion(v)
    assert words.loc["Sec 5.2.1: WISP has the highest capacity, Qwen3-32B, 8 tok/s (1: holds)", "holds under"] == "WISP"
    # the runner-ups: a fit whose second candidate doubles the KV memory
    fit = calibration.Fit(values={"memory_gb": 1.0}, loss=0.1, grid={"memory_gb": [1.0, 2.0]}, interior=True,
                          searched=pd.DataFrame(dict(memory_gb=[1.0, 2.0], loss=[0.1, 0.2], loss_seed0=[0.1, 0.2])),
                          reproduced={})
    ru = ho.runner_up_candidates(fit.searched, ["memory_gb"], k=1)
    assert ru == [dict(memory_gb=2.0, loss=0.2, rank=2)]
    st2 = ex.SCENARIO.setting(st, memory_gb=2.0)
    more2 = pd.concat([t2.assign(setting=[st2] * len(t2))], ignore_index=True)
    rec = ho.runner_up_record(ru, fit, st, more2, paper, 150, 60, [0], fake_run, "Qwen3-32B", 0.05)
    assert (rec["rank"] == 2).all() and (rec.memory_gb == 2.0).all() and (rec.role == "held-out").all()
    assert "Table 6: goodput at N = 16, predictor ON (tokens/s)" in set(rec.setting)
    text = ho.describe_fit(fit, {"loss_seed0": {"memory_gb": 1.0}}, ru)
    assert "identified by every seed" in text and "memory_gb" in text
    assert "the seeds disagree" in ho.describe_fit(fit, {"loss_seed0": {"memory_gb": 2.0}}, ru)
    # the record: Table 3 at the fit, every held-out statement with the twin's error of its metric
    t1, t3, t6 = lf.current_tables(st, 150, 60, [0], fake_run)
    margins = {}
    cap, cens = lf.capacity_tables(t2)
    held = ho.held_out(paper, t1, cap, cens, t6, ["Qwen3-32B"], raw7, metrics.per_class(raw7, ["system", "devices"], ex.CLASSES),
                       epsilon=0.05, margins=margins)
    record, ru_rows = ho.record_section(fit, t3, {ex.T3.format(s): 1000.0 for s in ex.TABLE3}, held, (t1, t3, t6), t2, paper,
                                        ru, st, more2, 150, 60, [0], fake_run, "Qwen3-32B", 0.05, tmp_path, margins)
    from specedge.serving.analysis import twin_error as te
    want = te.stochastic_pct("goodput_tok_s", "li2026", te.DOMAIN_IID)     # the committed table's, read at run time
    h = record[record.role == "held-out"].set_index("setting")
    rates = h.twin_metric == "slo_violation_rate"      # in points, measured where the classes bind
    assert rates.any() and (h.twin_error_pct[rates] == te.violation_points("li2026")).all()
    assert (h.twin_error_unit[rates] == "points").all() and (h.twin_error_unit[~rates] == "%").all()
    assert (h.twin_error_pct[~rates].dropna() == want).all()
    q = "Sec 5.2.1: WISP has the highest capacity, Qwen3-32B, 8 tok/s (1: holds)"     # 240 against 160 + 16: 26.7 %
    assert h.loc[q, "margin_pct"] == pytest.approx(100 * (1 - 176 / 240))
    assert h.loc[q, "beyond_twin_error"] == (h.loc[q, "margin_pct"] > want)
    assert (tmp_path / "calibration.csv").exists() and (tmp_path / "calibration_runner_ups.csv").exists()
    sp = ho.spread(record, ru_rows)
    assert list(sp.columns) == ["fit", "runner-up 2"]
    assert not math.isnan(sp.loc["Table 6", "fit"])
