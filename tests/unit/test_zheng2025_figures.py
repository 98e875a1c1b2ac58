"""zheng2025's notebook drivers (experiments.zheng2025.figures): the rows they build decide their statuses
through ``compare.Comparison.extend`` from the paper's values in data/coverage/zheng2025.yaml."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from specedge import compare, coverage, hardware, paths
from specedge.experiments.zheng2025 import figures as figs
from specedge.serving.real import payload
from specedge.solvers import zheng2025 as tkslt

PAPER = coverage.paper_values("zheng2025")
# T_SLM = 0.07 T_LLM and a full 32000-entry FP16 distribution in 0.23 T_LLM: "measured here" is the paper's L(K)
PAPER_LIKE = tkslt.Costs(t_slm=0.07, t_llm=1.0, rate_bps=tkslt.PAPER_VOCAB * 16 / 0.23, slm_over_llm=0.07,
                        uplink_full_over_llm=0.23)


def _statuses(rows):
    cmp = compare.Comparison("zheng2025")
    statuses = cmp.extend(rows, PAPER)
    compare.validate(cmp.frame().fillna("").astype(str))   # every row passes the rules a committed file must pass
    return statuses, cmp.frame()


def _fig3(alpha_t0, alpha_t1, ks=tkslt.PAPER_K):
    return pd.DataFrame([dict(temperature=T, K=k, alpha=a, positions=100)
                         for T, alphas in ((0.0, alpha_t0), (1.0, alpha_t1)) for k, a in zip(ks, alphas)])


def test_gamma_cell_is_algorithm1_or_a_dash_where_speculation_cannot_pay():
    assert tkslt.gamma_cell(0.8, 0.01) == str(tkslt.odld(0.8, 0.01).gamma) == "14"
    assert tkslt.gamma_cell(0.3, 0.5) == "–"      # alpha < L: S* < 1
    assert tkslt.gamma_cell(0.0, 0.1) == "–"      # a draft that never agrees
    assert tkslt.gamma_cell(0.9, 1.2) == "–"      # L >= 1: the draft alone costs more than the target


def test_table1_rows_match_the_paper_and_fail_on_another_cell():
    t1 = figs.table1(PAPER)
    statuses, frame = _statuses(figs.table1_rows(t1))
    dash = frame.paper == "–"
    assert dash.sum() == 2 and (frame.status[dash] == "trend").all() and (frame.status[~dash] == "match").all()
    assert statuses[-1] == "passed"          # the closed form equals brute force: a check, not a comparison row
    assert (frame.kind == "analytic").all() and (frame.models == "paper").all()
    assert set(frame.statements) == {f"table1-a{a:g}-L{c:g}" for a in (0.4, 0.6, 0.8) for c in (0.01, 0.1, 0.2, 0.4, 0.6)}
    t1.loc[t1.statement == "table1-a0.8-L0.01", "paper"] = "13"   # a paper cell one off: a deviation, not a match
    t1.loc[t1.statement == "table1-a0.4-L0.4", "paper"] = "–"     # a '–' where S* > 1: the claim fails
    statuses, frame = _statuses(figs.table1_rows(t1))
    bad = frame.statements.isin(["table1-a0.8-L0.01", "table1-a0.4-L0.4"])
    assert (frame.status[bad] == "deviates").all() and (frame.cause[bad] == "our-reading").all()
    assert frame.status[~bad].isin(["match", "trend"]).all()
    t1.loc[0, "gamma_brute_force"] = 99                             # closed form and brute force disagree: the check fails
    assert _statuses(figs.table1_rows(t1))[0][-1] == "failed"


def test_fig2_rows_hold_on_the_paper_grid():
    statuses, frame = _statuses(figs.fig2_rows(tkslt.fig2_frame()))
    assert statuses == ["match", "match", "trend"] and (frame.kind == "analytic").all()


def test_table2_rows_on_the_papers_own_costs_match_its_L_and_read_gamma_rows():
    fig3 = _fig3([0.6, 0.55, 0.54, 0.54, 0.54], [0.68, 0.73, 0.73, 0.73, 0.74])
    t2 = figs.table2(fig3, tkslt.PAPER_VOCAB, PAPER_LIKE)
    assert t2.L[t2.scenario == "measured here"].tolist() == pytest.approx(t2.L[t2.scenario == "paper costs"].tolist())
    rows = figs.table2_rows(t2, PAPER, tkslt.PAPER_VOCAB, PAPER_LIKE)
    statuses, frame = _statuses(rows)
    # our L(K): measurements against the paper's (here equal to it); L's trend: analytic on the paper's L(K)
    assert statuses[:6] == ["match"] * 5 + ["trend"]
    assert frame.kind[:6].tolist() == ["reproduction"] * 5 + ["analytic"]
    assert frame.reproduced[:5].tolist() == pytest.approx([PAPER[f"table2-L-K{k}"] for k in tkslt.PAPER_K], abs=2e-4)
    gamma = frame[frame.statements.str.startswith("table2-gamma-row")]
    assert gamma.statements.tolist() == [f"table2-gamma-{r}-K{k}" for r in ("row1", "row2") for k in tkslt.PAPER_K]
    want = t2[(t2.scenario == "paper costs") & (t2.temperature == 0.0)].gamma_star.tolist()   # row 1 is T = 0
    assert [str(v) for v in gamma.reproduced[:5]] == want
    # each cell's null, a uniform draft, drafts nothing: a paper cell of 1 is still out of its reach
    assert (gamma.null == 0).all() and (gamma.kind == "reproduction").all() and (gamma.models == "zoo").all()
    adjusts = frame[frame.statements == "table2-gamma-adjusts"]
    assert adjusts.null_evidence.str.startswith("fails").all()
    assert gamma.quantity.str.contains("T=0").tolist() == [True] * 5 + [False] * 5


def test_table2_row_reading_puts_the_row_that_needs_alpha_falling_at_T0():
    """Eq (7) on the paper's L(K): 3 2 2 1 1 needs alpha in [0.471, 0.594] at K = 3 but in [0.291, 0.471] at K = 32
    (alpha falls with K: T = 0, Sec VI-B); 2 2 2 2 1 fits a constant alpha. GAMMA_ROWS must follow that reading."""
    reading = figs.table2_row_reading(PAPER, PAPER_LIKE)
    r1 = reading[reading.row == "row1"].set_index("K")
    assert r1.loc[3, ["alpha_lo", "alpha_hi"]].tolist() == pytest.approx([0.4705, 0.5945], abs=1e-3)
    assert r1.loc[32, ["alpha_lo", "alpha_hi"]].tolist() == pytest.approx([0.2914, 0.4706], abs=1e-3)
    falls = reading.groupby("row").alpha_falls.first().to_dict()
    assert falls == {"row1": True, "row2": False} and not reading.alpha_rises.any()
    assert dict((r, T) for T, r in figs.GAMMA_ROWS) == {"row1": 0.0, "row2": 1.0}
    assert (reading[reading.row == "row1"].temperature == 0.0).all()


def test_measured_costs_far_from_the_papers_deviate():
    fig3 = _fig3([0.6] * 5, [0.7] * 5)
    slow = tkslt.Costs(0.4, 1.0, 100e6, 0.07, 0.23)
    statuses, frame = _statuses(figs.table2_rows(figs.table2(fig3, tkslt.PAPER_VOCAB, slow), PAPER, tkslt.PAPER_VOCAB, slow))
    # measurements on this host, not settings: far from the paper's L, each deviates with cause hardware
    assert statuses[:5] == ["deviates"] * 5 and frame.reproduced[0] == pytest.approx(0.4, abs=1e-4)
    assert (frame.cause[:5] == "hardware").all() and (frame.kind[:5] == "reproduction").all()


def test_a_dash_gamma_is_stated_deviates_with_its_cause():
    t2_rp = figs.table2_realpair(_fig3([0.05] * 5, [0.74] * 5), PAPER_LIKE)   # T = 0: alpha below every L
    statuses, frame = _statuses(figs.table2_realpair_rows(t2_rp, PAPER, "pair note"))
    t0 = frame[frame.quantity.str.contains("T=0")]
    assert (t0.reproduced == "–").all() and (t0.status == "deviates").all()
    assert t0.note.str.contains("α < L, no γ helps; ").all() and t0.note.str.startswith("pair note: α = 0.050").all()
    assert (frame.paper_source == "recovered").all()   # the paper's costs behind every gamma* cell are recovered
    assert len(statuses) == 10


def _by_domain(fig4, spread=0.02, n=4):
    """Per-domain S* around each pooled point: n domains at speedup +- spread."""
    offs = [spread * (k - (n - 1) / 2) for k in range(n)]
    return pd.concat([fig4.assign(domain=f"d{k}", speedup=fig4.speedup + o) for k, o in enumerate(offs)], ignore_index=True)


def test_fig4_best_k_is_no_match_when_speculation_loses_even_at_the_papers_k():
    """Speedups all below 1 (or within the 0.05 margin): the argmax says nothing about K, whatever K it is."""
    fig4 = pd.DataFrame([dict(scenario=s, temperature=0.0, K=k, alpha=0.5, L=0.1, speedup=top if k == 320 else 0.9)
                         for s, top in (("measured here", 1.03), ("paper costs", 1.4)) for k in tkslt.PAPER_K])
    best, rows = figs.fig4_rows(fig4, _by_domain(fig4), PAPER, PAPER_LIKE)
    statuses, frame = _statuses(rows)
    assert best.K.tolist() == [320, 320]
    assert statuses == ["deviates", "deviates", "match", "match", "not-reproducible"]
    assert "no K is best" in frame.note[1] and "depends on the hardware" in frame.note[1]   # this CPU's costs: cause hardware
    assert frame.cause[0] == "hardware"
    # the paper-cost rows rest on the recovered T_SLM/T_LLM: counted apart
    assert frame.paper_source.tolist() == ["stated", "stated", "recovered", "recovered", "stated"]


def test_fig4_speculation_helps_needs_the_domains_interval_above_one():
    """A pooled S* above 1.05 with domains that straddle 1 is a tie over domains: the claim fails."""
    fig4 = pd.DataFrame([dict(scenario="paper costs", temperature=1.0, K=k, alpha=0.6, L=0.1, speedup=1.2 if k == 320 else 1.1)
                         for k in tkslt.PAPER_K])
    statuses, _ = _statuses(figs.fig4_rows(fig4, _by_domain(fig4, spread=0.01), PAPER, PAPER_LIKE)[1])
    assert statuses[:2] == ["match", "match"]                     # tight domains: helps; best K = 320
    wide = _by_domain(fig4, spread=0.5)                           # domains from 0.45 to 1.95 around 1.2
    statuses, frame = _statuses(figs.fig4_rows(fig4, wide, PAPER, PAPER_LIKE)[1])
    assert statuses[:2] == ["deviates", "deviates"] and "tie" in frame.reproduced[0]
    assert not figs.helps(1.0, [1.0, 1.0, 1.0]).holds             # the null: S* = 1 everywhere
    assert tkslt.best_speedup(0.3, 1.2) == pytest.approx(float(tkslt.speedup(1, 0.3, 1.2)))   # L >= 1: gamma = 1 at best
    assert tkslt.best_speedup(0.8, 0.07) == pytest.approx(tkslt.odld(0.8, 0.07).speedup)


def test_realpair_costs_are_its_ar_runs_on_this_cpu():
    rp = figs.realpair_costs(PAPER_LIKE)
    ar = pd.read_csv(paths.DATA / "realpair" / "gamma_sweep.csv").query("gamma == 0")
    assert rp.t_slm / rp.t_llm == pytest.approx(ar.c.mean()) and rp.t_llm == pytest.approx((ar.seconds / ar.tokens).mean())
    assert rp.rate_bps == PAPER_LIKE.rate_bps and 0.3 < rp.t_slm / rp.t_llm < 0.45


def test_costs_name_the_measuring_command_for_a_pair_the_profile_lacks():
    prof = hardware.load_profile("zheng2025_paper")
    with pytest.raises(KeyError, match=r"zheng2025\.measure measure --models nope,target-m"):
        figs.load_costs(prof, "zoo_cpu", "nope", "target-m")
    costs = figs.load_costs(prof, "zoo_cpu", "draft-xs", "target-m")
    assert costs.paper(32000) == pytest.approx(0.30) and costs.t_slm < costs.t_llm


def test_as2_map_refuses_a_policy_that_speculates_where_alpha_is_below_L(monkeypatch):
    grid = [0.2, 0.5, 0.8]
    assert tkslt.as2_map(grid, grid).gamma.gt(0).sum() == 3      # (0.5, 0.2), (0.8, 0.2), (0.8, 0.5)
    monkeypatch.setattr(tkslt, "as2", lambda a, c: 1)
    with pytest.raises(RuntimeError, match="exactly where alpha > L"):
        tkslt.as2_map(grid, grid)


def test_wire_rows_size_our_dense_payload_and_the_top_k_cut():
    wire = payload.wire_frame((tkslt.PAPER_VOCAB, 151936))
    dense = wire[(wire.vocab == tkslt.PAPER_VOCAB) & (wire.K == "dense")].iloc[0]
    assert dense.kbit == pytest.approx(1024, abs=1)            # the real system's float32 wire: twice the paper's FP16
    assert dense.kbit_fp16 == pytest.approx(512, abs=1) and dense.kbit_paper_count == 512
    top = wire[(wire.vocab == tkslt.PAPER_VOCAB) & (wire.K == 320)].iloc[0]
    assert top.kbit_paper_count == pytest.approx(5.12)           # the paper's count: values only, indices neglected
    assert top.kbit_fp16 == pytest.approx(320 * (16 + 32) / 1e3, abs=0.2)   # + int32 indices and framing
    statuses, frame = _statuses(figs.wire_rows(wire, PAPER, 151936))
    assert frame.reproduced[0] == pytest.approx(512, abs=1)    # FP16 values: within 50 of the paper's ~500 kbit
    assert frame.reproduced[1] == pytest.approx(1024, abs=1)   # the real system's float32 wire, shown as a setting
    assert statuses == ["match", "", "trend"] and frame.kind.tolist() == ["analytic", "setting", "analytic"]
    with pytest.raises(ValueError, match="values must be one of"):
        payload.wire_kbit(100, None, "int8")
    small = payload.wire_frame((tkslt.PAPER_VOCAB, 1000))          # a small vocabulary: top-320 is a third of it
    assert set(small[small.vocab == 1000].K) == {3, 32, 320, "dense"}
    assert _statuses(figs.wire_rows(small, PAPER, 1000))[1].note[2].endswith("|V| = 1,000 2x")   # the real system's cut there


def test_table2_full_is_our_vocabulary_against_the_papers_32000():
    """The zoo's |V| = 8192 cannot pose K = 32000: 'full' is K = |V| with our measured cost, the paper's L at 32000."""
    fig3 = _fig3([0.6] * 5, [0.7] * 5, ks=(3, 32, 320, 3200, 8192))
    t2 = figs.table2(fig3, 8192, PAPER_LIKE)
    full = t2[(t2.K == "full") & (t2.temperature == 0.0)].set_index("scenario").L
    assert set(t2[t2.K == "full"].K_paper) == {32000}
    assert full["measured here"] == pytest.approx(0.07 + 0.23 * 8192 / 32000) and full["paper costs"] == pytest.approx(0.30)
    fig4 = tkslt.fig4_frame(fig3, {"measured here": PAPER_LIKE.measured,
                                  "paper costs": lambda k: PAPER_LIKE.paper(tkslt.PAPER_VOCAB if k == 8192 else k)})
    assert fig4[(fig4.K == 8192) & (fig4.scenario == "paper costs")].L.tolist() == pytest.approx([0.30, 0.30])


# --------------------------------------------------------------------------- where a run writes
@pytest.fixture
def own_roots(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "FIGURES", tmp_path / "figures")
    monkeypatch.setattr(paths, "BUILD", tmp_path / "build")
    return tmp_path


def test_each_model_pair_writes_its_own_folder_and_the_default_pair_the_committed_one(own_roots):
    """Two zoo pairs other than the default share the profile zoo_cpu but not a folder: the second user pair must
    not write over the first's outputs; the default pair on the default profiles writes figures/zheng2025/."""
    out = lambda d, t, measured="zoo_cpu", scale="full": figs.output_dir(scale, "zheng2025_paper", d, t, measured)
    assert out(*figs.DEFAULT_PAIR) == own_roots / "figures" / "zheng2025"
    a, b = out("draft-s", "target-m"), out("draft-xs", "target-l")
    assert a != b and a.parent == b.parent == own_roots / "figures" / "zheng2025"
    assert (a.name, b.name) == ("pair-draft_s__target_m", "pair-draft_xs__target_l") and a.is_dir() and b.is_dir()
    assert out("target-m", "draft-s").name == "pair-target_m__draft_s"           # the order of the pair counts
    assert out("path/to/MyDraft/", "hub/My-Target").name == "pair-mydraft__my_target"
    measured = out("path/to/MyDraft", "hub/My-Target", "cpu_local")
    assert measured.name == "pair-mydraft__my_target_measured-cpu_local"
    assert out(*figs.DEFAULT_PAIR, "cpu_local").name == "measured-cpu_local"     # the default pair, another profile
    ci = out(*figs.DEFAULT_PAIR, scale="ci")
    assert ci == own_roots / "build" / "ci" / "figures" / "zheng2025"              # CI scale never under figures/
    assert figs.pair_slug(["draft-s", "target-m"]) == "draft_s__target_m"
    assert figs.pair_profile_name(["path/to/MyDraft", "hub/My-Target"]) == "measured_mydraft__my_target"


# --------------------------------------------------------------------------- Fig 3
def test_alpha_vs_topk_figure_draws_each_temperature_over_k_on_a_log_axis():
    frame = _fig3([0.6, 0.55, 0.5, 0.45, 0.4], [0.3, 0.4, 0.5, 0.6, 0.7]).sample(frac=1, random_state=0)
    fig = figs.alpha_vs_topk_figure(frame, "zoo pair")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_title() == "zoo pair"
    assert ax.get_xlabel() == "top-K kept by the draft (K, log scale)" and ax.get_ylabel() == "acceptance rate α (eq 9)"
    legend = ax.get_legend()
    assert legend.get_title().get_text() == "target temperature"
    assert sorted(t.get_text() for t in legend.get_texts()) == ["T = 0 (greedy)", "T = 1"]
    drawn = {tuple(np.round(line.get_ydata(), 6)) for line in ax.lines if len(line.get_xdata()) == 5}
    assert drawn == {(0.6, 0.55, 0.5, 0.45, 0.4), (0.3, 0.4, 0.5, 0.6, 0.7)}
    for line in ax.lines:
        if len(line.get_xdata()) == 5:
            assert list(line.get_xdata()) == list(tkslt.PAPER_K)
    plt.close(fig)


@pytest.mark.parametrize("t0, t1, want", [
    ([0.6, 0.55, 0.5, 0.45, 0.4], [0.3, 0.4, 0.5, 0.6, 0.7], ["trend", "trend"]),
    ([0.6, 0.55, 0.55, 0.45, 0.4], [0.3, 0.4, 0.5, 0.6, 0.7], ["deviates", "trend"]),   # a tie: not strictly falling
    ([0.4, 0.45, 0.5, 0.55, 0.6], [0.7, 0.6, 0.5, 0.4, 0.3], ["deviates", "deviates"]),  # both trends reversed
])
def test_fig3_rows_need_alpha_strictly_falling_at_t0_and_rising_at_t1(t0, t1, want):
    frame = _fig3(t0, t1).iloc[::-1]                          # rows in any order: sorted by K inside
    statuses, frame_out = _statuses(figs.fig3_rows(frame, "Fig 3", "zoo pair"))
    assert statuses == want
    assert frame_out.null_evidence.str.startswith("fails").all()        # the null (a flat alpha) never holds
    assert (frame_out.models == "zoo").all()
    for status, note, pred in zip(statuses, frame_out.note, ("strictly_decreasing", "strictly_increasing")):
        # a failed claim shows its evidence (the tie included) where a holding one keeps the row's note
        assert note.startswith("zoo pair; null:") if status == "trend" else note.startswith(f"{pred} fails: ")
    rp = figs.fig3_rows(_fig3(t0, t1), "Fig 3 (real pair)", "pair")
    assert {r["models"] for r in rp} == {"real pair"}


# --------------------------------------------------------------------------- Fig 4 and Table II edges
def test_fig4_figure_draws_pooled_speedups_with_the_domains_interval():
    from scipy import stats

    f4 = pd.DataFrame([dict(scenario=s, temperature=T, K=k, speedup=1.0 + 0.1 * i + T)
                       for s in ("paper costs", "measured here") for T in (0.0, 1.0) for i, k in enumerate(tkslt.PAPER_K)])
    dom = _by_domain(f4, spread=0.2, n=2)                       # two domains at speedup -+ 0.1
    fig = figs.fig4_figure({"zoo pair": f4, "real pair": f4}, {"zoo pair": dom, "real pair": dom})
    axes = np.array(fig.axes).reshape(2, 2)
    assert axes[0, 0].get_title() == "zoo pair\nthe paper costs (Table II)"
    assert axes[1, 1].get_title() == "real pair\ncosts measured on this CPU"
    ax = axes[0, 0]
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "speedup S* at γ* (×)"
    data = [line for line in ax.lines if len(line.get_xdata()) == 5]
    assert [list(line.get_ydata()) for line in data] == [pytest.approx([1.0, 1.1, 1.2, 1.3, 1.4]),
                                                         pytest.approx([2.0, 2.1, 2.2, 2.3, 2.4])]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["T = 0", "T = 1"]
    assert any(list(line.get_ydata()) == [1, 1] for line in ax.lines)       # the target alone
    half = stats.t.ppf(0.975, 1) * 0.1       # t(0.975, 1 dof) x s.e.; two values x -+ 0.1: sd 0.1 sqrt(2), s.e. 0.1
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(1.0 - half, rel=1e-6) and band.max() == pytest.approx(1.4 + half, rel=1e-6)
    plt.close(fig)


def test_a_real_pair_fig4_adds_no_second_ambiguity_row():
    fig4 = pd.DataFrame([dict(scenario="paper costs", temperature=0.0, K=k, alpha=0.5, L=0.1, speedup=1.3 if k == 32 else 1.2)
                         for k in tkslt.PAPER_K])
    best, rows = figs.fig4_rows(fig4, _by_domain(fig4, spread=0.01), PAPER, PAPER_LIKE, artifact="Fig 4 (real pair)",
                                models="real pair")
    assert len(rows) == 2 and best.K.tolist() == [32] and {r["models"] for r in rows} == {"real pair"}
    statuses, frame = _statuses(rows)
    assert statuses == ["match", "deviates"] and str(frame.reproduced[1]) == "32"   # best K 32 against the paper's 320


def test_null_gamma_drafts_nothing_and_L_at_one_is_the_target_alone():
    assert figs.null_gamma(0.07) == 0 and figs.null_gamma(0.999) == 0
    assert figs.null_gamma(1.0) == 0 and figs.null_gamma(3.0) == 0
    fig3 = _fig3([1.0, 0.5, 0.5, 0.5, 0.5], [0.0, 0.5, 0.5, 0.5, 0.5])    # alpha at the ends of [0, 1]: no S*
    t2 = figs.table2(fig3, tkslt.PAPER_VOCAB, PAPER_LIKE)
    k3 = t2[t2.K == 3]
    assert k3.speedup.isna().all() and t2[t2.K == 32].speedup.notna().all()
