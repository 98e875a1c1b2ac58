"""venkatesha2025's comparison rows from its tables (``experiments.venkatesha2025.tables``): the paper's inputs
through each row builder, against hand-worked values and the boundary each rule decides at."""
import math

import pandas as pd
import pytest

from specedge import compare, coverage, hardware, paths
from specedge.experiments.venkatesha2025 import tables as vt
from specedge.solvers import venkatesha2025 as v


@pytest.fixture(scope="module")
def paper():
    return coverage.paper_values("venkatesha2025")


def _cmp():
    return compare.Comparison("venkatesha2025")


def _rows(cmp):
    frame = cmp.frame()
    compare.validate(frame.fillna("").astype(str))
    return frame.set_index("quantity")


def test_table1_costs_are_analytic_and_the_savings_settings_worked_by_hand(paper):
    cmp = _cmp()
    vt.table1(cmp, paper, v.table1())
    f = _rows(cmp)
    assert len(f) == 4 * 5
    costs = f[f.kind == "analytic"]
    assert len(costs) == 12 and (costs.status == "match").all() and (costs.models == "paper").all()
    row = "Together AI Qwen1.5-0.5B/Qwen1.5-72B"
    assert float(f.loc[f"{row}: cloud_ar", "reproduced"]) == 540.0
    # 1 - 360 / 540 = 33.33 %, 1 - 270 / 540 = 50 %; the paper prints whole percentages (setting rows, no status)
    assert float(f.loc[f"{row}: saving_cloud_sd", "reproduced"]) == 33.33
    assert float(f.loc[f"{row}: saving_edge_cloud_sd", "reproduced"]) == 50.0
    savings = f[f.kind == "setting"]
    assert len(savings) == 8 and (savings.status.fillna("") == "").all() and (savings.unit == "%").all()
    assert f.loc["Groq llama3-8b-8192/llama3-70b-8192: saving_cloud_sd", "statements"] == "table1-groq-llama3"


def test_table5_states_every_timing_as_an_input_and_memory_as_the_drafts_weight_file(paper):
    prof, local = hardware.load_profile("venkatesha2025_paper"), hardware.load_profile("cpu_local_fsd")
    cmp = _cmp()
    vt.table5(cmp, prof, local)
    f = _rows(cmp)
    assert len(f) == 3 * 2 * 6 + 2 and (f.status == "not-reproducible").all()
    # the paper's RTX drafting of gamma = 4 tokens for Vicuna-68M/7B: 102 ms (Table 5), ours the zoo's on this CPU
    q = "vicuna68m_vicuna7b rtx: drafting latency (gamma=4)"
    assert float(f.loc[q, "paper"]) == 1e3 * prof.coefficients("rtx_vicuna68m_vicuna7b")["T_d_s"]
    assert float(f.loc[q, "reproduced"]) == round(1e3 * local.coefficients("cpu_vicuna68m_vicuna7b")["T_d_s"], 4)
    mem = f.loc["vicuna160m_vicuna13b jetson: max GPU memory"]
    size = (paths.ZOO / v.MODEL_SETS["vicuna160m_vicuna13b"][0] / "model.safetensors").stat().st_size
    assert float(mem.reproduced) == round(size / 1e9, 4) and mem.unit == "GB" and mem.cause == "hardware"
    assert (f.loc[f.index.str.contains(": EE threads"), "statements"] == "table5-threads").all()


def test_fig6_thresholds_and_the_over_5x_claim_by_hand(paper):
    cmp = _cmp()
    vt.fig6(cmp, paper)
    f = _rows(cmp)
    assert len(f) == 4 and (f.kind == "analytic").all()
    # eq 9, (gamma c + 1) / (rho gamma c + 1): at c = 0.5, rho = 0.1, gamma = 10, (5 + 1) / (0.5 + 1) = 4x;
    # 2x at gamma = 4, c = 3 x 6.6 / 67: rho = ((4c + 1) / 2 - 1) / (4c) = 0.0770
    over = f.loc["speedup at c=0.5, rho=10 %, gamma=10 ('over 5x')"]
    assert float(over.reproduced) == 4.0 and over.status == "deviates" and over.paper == "> 5"
    c = 3 * 6.6 / 67
    for g, claimed in ((4, 0.10), (7, 0.25), (10, 0.35)):
        r = f.loc[f"max cache-miss rate for 2x at gamma={g}, c={c:.3f}"]
        want = round(((g * c + 1) / 2 - 1) / (g * c), 4)
        assert float(r.reproduced) == want and float(r.paper) == claimed
        assert r.status == ("match" if abs(want - claimed) <= 0.03 else "deviates")
    assert float(f.loc["max cache-miss rate for 2x at gamma=4, c=0.296", "reproduced"]) == 0.077


def test_table8_replays_the_robot_and_states_what_has_no_stand_in(paper):
    cmp = _cmp()
    t8 = v.table8_replay()
    vt.table8(cmp, paper, t8)
    f = _rows(cmp)
    assert len(f) == 12
    both = f.loc["speedup AR->FSD, '21% speedup over cloud AR' (Table 4 on Table 8a timings)"]
    assert float(both.reproduced) == round(t8["ar_to_sd"] * t8["sd_to_fsd"], 3) == 2.4 and both.status == "deviates"
    # c = (288 / 4) / 620 = 0.116 per draft token
    assert float(f.loc["latency ratio c (from 8a's drafting and verification latencies)", "reproduced"]) == round(72 / 620, 3)
    nr = f[f.status == "not-reproducible"]
    assert set(nr.index) == {"8a max GPU memory", "8a EE threads", "8b avg early exit"}
    assert (f[f.kind == "setting"].status.fillna("") == "").all()


def test_paper_table9_reads_oom_as_nan_and_table9_compares_ratios_with_each_sides_null(paper):
    p9 = vt.paper_table9(paper)
    assert p9.batch.tolist() == [1, 2, 3, 4, 8, 12, 16, 32, 64]
    assert math.isnan(p9.paper_client_ms.iloc[-1]) and p9.paper_client_ms.iloc[0] == 7.76
    ours = pd.DataFrame(dict(batch=p9.batch, server_ms=2.0 * p9.batch, client_ms=1.0 + 0 * p9.batch))
    cmp = _cmp()
    vt.table9(cmp, paper, p9.merge(ours, on="batch"))
    f = _rows(cmp)
    assert len(f) == 2 * 9
    srv = f.loc["server latency batch 64 / batch 1"]
    # the paper's 258.79 / 17.94 = 14.425x against ours 128 / 2 = 64x; null: batching costs nothing (1x)
    assert float(srv.paper) == 14.425 and float(srv.reproduced) == 64.0 and float(srv["null"]) == 1.0
    cli = f.loc["client latency batch 8 / batch 1"]
    # null of the client: the batch run sequentially (8x); ours 1.0x, the paper's 8.97 / 7.76 = 1.156x
    assert float(cli["null"]) == 8.0 and float(cli.paper) == 1.156 and cli.status == "match"
    assert float(cli.tolerance) == round(0.25 * 1.156, 3)                  # under half of |1.156 - 8|
    oom = f.loc["client latency batch 64 / batch 1"]
    assert oom.paper == "OOM" and oom.status == "not-reproducible" and float(oom.reproduced) == 1.0
    assert f.loc["server latency, batch 1", "status"] == "not-reproducible"


def test_measured_reads_a_committed_file_and_names_the_command_of_a_missing_one():
    assert list(vt.measured("table9_batch_latency").columns)[:3] == ["target", "draft", "batch"]
    with pytest.raises(FileNotFoundError, match=r"no_such\.csv is missing: `make profiles`"):
        vt.measured("no_such")


def test_table2_rows_per_paper_target_and_nothing_for_the_vision_model(paper):
    t2 = pd.DataFrame([dict(model="target-m", exits=7, exits_per_layer=2, bottleneck=5, params=2000, pct_params=1.5,
                            context=128, steps=200, train_minutes=3.5, device="CPU (2 threads)"),
                       dict(model="target-l", exits=5, exits_per_layer=1, bottleneck=6, params=3000, pct_params=1.4,
                            context=128, steps=200, train_minutes=4.0, device="CPU (2 threads)")])
    cmp = _cmp()
    vt.table2(cmp, paper, t2)
    f = _rows(cmp)
    assert len(f) == 4 * 5
    qwen = f[f.index.str.startswith("Qwen2-VL-7B")]
    assert len(qwen) == 5 and (qwen.status == "not-reproducible").all() and (qwen.cause == "models").all()
    ex = f.loc["Vicuna-7B (target-m): exits"]
    assert int(ex.reproduced) == 7 and float(ex.paper) == 31 and "has 4 layers" in ex.note        # (7 + 1) // 2
    assert "has 6 layers" in f.loc["Vicuna-13B (target-l): exits", "note"]                       # (5 + 1) // 1
    assert f.loc["Llama2-7B (target-m): training time", "reproduced"] == "3.5 CPU minutes"
    assert f.loc["Vicuna-7B (target-m): % trainable params", "kind"] == "setting"


def _t7(flat=False):
    rows = []
    for c, s in vt.QUEUES:
        for k, base in zip((3, 5, 10), (0.8, 0.6, 0.3)):
            miss = 0.5 if flat else base - (0.02 if s == "priority" else 0) - (0.01 if c == "priority" else 0)
            rows.append(dict(client=c, server=s, threads=k, miss_rate=miss, paper=base))
    return pd.DataFrame(rows)


def test_table7_rows_and_claims_hold_on_a_table_shaped_like_the_papers():
    cmp = _cmp()
    vt.table7(cmp, _t7(), n_exits=7, T_d=0.0255, prefix="p: ")
    f = _rows(cmp)
    assert len(f) == 18 + 4 and f.index.str.startswith("p: ").all()
    claims_ = f[f.kind == "reproduction"].loc[lambda d: d.predicate.fillna("") != ""]
    assert len(claims_) == 4
    assert f.loc["p: server priority misses less than server FIFO for every client queue and thread count", "status"] == "trend"
    assert f.loc["p: priority/priority misses fall with threads (3, 5, 10)", "status"] == "trend"
    # the server gain (0.02) does not shrink with threads here: deviates
    assert f.loc["p: the server-priority gain shrinks with threads (3T vs 10T, every client queue)", "status"] == "deviates"
    cell = f.loc["p: client fifo / server priority, 10 threads: cache-miss rate"]
    assert float(cell.reproduced) == 0.28 and float(cell.paper) == 0.3 and "102 ms each" in cell.note   # 4 x 25.5 ms


def test_fig4a_claims_and_their_one_thread_null():
    f4a = pd.DataFrame(dict(threads=[1, 5, 9, 13, 17, 21], miss_rate=[0.9, 0.7, 0.5, 0.4, 0.35, 0.35],
                            speedup_sd_fsd=[1.0, 1.2, 1.4, 1.5, 1.55, 1.56]))
    cmp = _cmp()
    vt.fig4a(cmp, {"fig4a-plateau-15": 15}, f4a, n_exits=7)
    f = _rows(cmp)
    assert f.loc["cache-miss rate falls with threads", "status"] == "trend"
    assert f.loc["speedup SD->FSD rises with threads", "status"] == "trend"
    # gains 0 .2 .4 .5 .55 .56: 95 % of 0.56 = 0.532 first reached at 17 threads, inside 10-20
    plateau = f.loc["speedup plateaus after about 15 threads (threads reaching 95 % of the gain)"]
    assert plateau.status == "trend" and "17 threads already" in plateau.note
    assert "0.900 at 1 thread, 0.350 at 21" in f.loc["cache-miss rate falls with threads", "note"]


def test_fig4b_below_one_claim_and_its_never_branch(paper):
    f4b = pd.DataFrame(dict(gamma=[1, 4, 7, 10], speedup_sd_fsd=[1.04, 1.1, 1.15, 1.2],
                            speedup_ar_sd=[1.3, 1.35, 0.95, 0.8]))
    cmp = _cmp()
    vt.fig4b(cmp, paper, f4b)
    f = _rows(cmp)
    below = f.loc["AR->SD falls below 1x only for gamma > 5 (smallest such gamma)"]
    assert below.status == "trend" and below.reproduced == "7 > 5"          # the null (gamma 1 everywhere) is not above 5
    assert f.loc["AR->SD falls at large gamma (largest gamma below the peak)", "status"] == "trend"
    assert "peak 1.350x at gamma = 4, 0.800x at gamma = 10" in f.loc["AR->SD falls at large gamma (largest gamma below the peak)", "note"]
    assert f.loc["SD->FSD gain grows with gamma (largest vs smallest gamma)", "status"] == "trend"
    # exactly 1.0x is not below 1x: the never branch, stated as deviating
    cmp = _cmp()
    vt.fig4b(cmp, paper, f4b.assign(speedup_ar_sd=[1.3, 1.35, 1.0, 1.0]))
    never = _rows(cmp).loc["AR->SD falls below 1x for gamma > 5"]
    assert never.status == "deviates" and never.reproduced == "never (gamma <= 10)"


def test_fsd_check_takes_the_absolute_gap_and_means_per_set_and_client():
    cc = pd.DataFrame(dict(set=["a", "a", "b"], client=["rtx"] * 3, miss_rate_sim=[0.1, 0.5, 0.2],
                           miss_rate_concurrent=[0.3, 0.3, 0.2], speedup_sd_fsd_sim=[1.1, 1.3, 1.0],
                           speedup_sd_fsd_concurrent=[1.2, 1.0, 1.1]))
    cmp = _cmp()
    summary = vt.fsd_check(cmp, cc)
    chk = cmp.checks_frame().iloc[0]
    # |0.3 - 0.1| = |0.3 - 0.5| = 0.2, |0| = 0: mean 0.1333 (the signed differences would cancel to 0.0)
    assert chk.ours == 0.1333 and not chk.passed
    assert summary.set_index("set").loc["a", "miss_rate_sim"] == pytest.approx(0.3)
    real = cmp.frame().set_index("quantity").loc["SD->FSD speedup in the real concurrent run (mean over rows)"]
    assert real.status == "trend"                                         # (1.2 + 1.0 + 1.1) / 3 = 1.1 > 1
    cmp = _cmp()
    vt.fsd_check(cmp, cc.assign(speedup_sd_fsd_concurrent=1.0))           # exactly 1x is no speedup
    assert cmp.frame().status.iloc[0] == "deviates"


def _ours6(served, stated_ee, miss):
    from types import SimpleNamespace
    row = dict(speedup_ar_sd=1.2, speedup_sd_fsd=1.05, tau=2.0, stated_miss_rate=0.4, stated_avg_ee_depth=stated_ee,
               miss_rate=miss, avg_hit_exit_depth=served, avg_ee_depth=0.6, n_layers=7)
    return {(b, c, s): SimpleNamespace(**row) for b in vt.BENCHMARKS for c, s in vt.COLUMNS}


def test_table6_without_a_hit_states_it_and_a_miss_rate_of_exactly_one_is_our_reading(paper):
    prof, local = hardware.load_profile("venkatesha2025_paper"), hardware.load_profile("cpu_local_fsd")
    ours = _ours6(served=float("nan"), stated_ee=float("nan"), miss=1.0)
    cmp = _cmp()
    vt.table6(cmp, paper, ours, prof, {s: 7 for s in v.MODEL_SETS}, vt.table4_cells(paper, prof, local, ours))
    f = cmp.frame()
    compare.validate(f.fillna("").astype(str))
    nohit = f[f.reproduced.astype(str) == "no hit"]
    assert len(nohit) == 7 * 6 and (nohit.status == "deviates").all()
    assert not f.quantity.str.contains("avg early exit as defined").any()   # no finite Avg EE: no claim row
    fsd = f[f.quantity.str.endswith("speedup SD->FSD") & (f.kind == "reproduction")]
    dev = fsd[fsd.status == "deviates"]
    assert len(fsd) == 7 * 6 and len(dev) and (dev.cause == "our-reading").all() and fsd.note.str.contains("every pre-draft missed").all()
    ours = _ours6(served=0.3, stated_ee=0.3, miss=0.999)
    cmp = _cmp()
    vt.table6(cmp, paper, ours, prof, {s: 7 for s in v.MODEL_SETS}, vt.table4_cells(paper, prof, local, ours))
    f = cmp.frame()
    fsd = f[f.quantity.str.endswith("speedup SD->FSD") & (f.kind == "reproduction")]
    dev = fsd[fsd.status == "deviates"]
    assert len(dev) and (dev.cause == "models").all() and not fsd.note.str.contains("every pre-draft missed").any()


def test_t6_ids_depth_and_the_printed_table6(paper):
    assert vt.t6_id("CNN/DM", "rho") == "table6-cnndm-rho" and vt.t6_id("MT-bench", "ar") == "table6-mtbench-ar"
    assert vt.depth(paper) == {"vicuna68m_vicuna7b": 32, "vicuna160m_vicuna13b": 40, "vicuna68m_llama2_7b": 32}
    pt = vt.paper_table6(paper)
    assert len(pt) == 7 * 6 and list(pt.columns) == list(vt.T6_METRICS)
    assert pt.loc[("Average", "rtx", "vicuna68m_llama2_7b"), "tau"] == 3.54
    t7 = vt.paper_table7(paper)
    assert list(t7) == list(vt.QUEUES) and t7["priority", "priority"] == (79.85, 62.93, 27.57)
