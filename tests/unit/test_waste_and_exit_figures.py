"""predictor.waste's per-round numbers (li2026 eq (7), Table 5) against hand-worked frames, and the early-exit figures
(venkatesha2025 Figs 4a/4b, exit agreement) drawing exactly the values they are given."""
import matplotlib

matplotlib.use("Agg")      # tests only: no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from specedge.experiments.venkatesha2025 import figures  # noqa: E402
from specedge.predictor import waste  # noqa: E402
from specedge.predictor.models import LABELS  # noqa: E402


def _runs():
    # draft a: OFF drafts 4 / accepts 1 and 4 / 3; ON 2 / 1 and 2 / 2. draft b: OFF 4 / 0 twice; ON 1 / 0 twice
    rows = [("a", "OFF", 4, 1), ("a", "OFF", 4, 3), ("a", LABELS["mlp"], 2, 1), ("a", LABELS["mlp"], 2, 2),
            ("b", "OFF", 4, 0), ("b", "OFF", 4, 0), ("b", LABELS["mlp"], 1, 0), ("b", LABELS["mlp"], 1, 0),
            ("a", "other", 9, 9)]
    return pd.DataFrame(rows, columns=["draft", "mode", "drafted", "accepted"])


def test_rate_sums_before_dividing_and_waste_is_drafted_minus_accepted_per_round():
    f = pd.DataFrame(dict(drafted=[4, 1], accepted=[3, 0]))
    assert waste.rate(f) == pytest.approx(3 / 5)            # a mean of per-round rates would give 0.375
    assert waste.waste(f) == pytest.approx((1 + 1) / 2)
    assert np.isnan(waste.rate(pd.DataFrame(dict(drafted=[0], accepted=[0]))))


def test_ablation_summary_rates_improvement_and_waste_per_draft_smallest_first():
    t5, ab = waste.ablation_summary(_runs(), {"a": 200, "b": 100})
    assert t5.index.tolist() == ["b", "a"] and t5.draft_params.tolist() == [100, 200]
    assert t5.loc["a", "OFF"] == pytest.approx(4 / 8) and t5.loc["a", "ON"] == pytest.approx(3 / 4)
    assert t5.loc["a", "improvement_pct"] == pytest.approx(50.0)
    assert t5.loc["a", "wasted_per_round_OFF"] == pytest.approx(2.0) and t5.loc["a", "wasted_per_round_ON"] == 0.5
    assert t5.loc["b", "OFF"] == 0.0 and t5.loc["b", "wasted_per_round_ON"] == 1.0
    assert set(ab["mode"]) == {"OFF", "ON"} and len(ab) == 8          # other modes are not part of Table 5


def test_filled_alpha_fills_positions_never_reached_with_the_mean():
    # four full-window (K = 3) rounds accepting 0, 1, 1, 3 tokens: alpha_1 = 3/4, alpha_2 = 1/3, alpha_3 = 1
    rounds = [0, 1, 1, 3]
    tr = pd.DataFrame(dict(draft="d", target="t", domain="chat", temperature=0.0, prompt=0, round=range(4), drafted=3,
                           round_accepted=rounds))
    assert waste.filled_alpha(tr, 3) == pytest.approx([3 / 4, 1 / 3, 1.0])
    never = tr.assign(round_accepted=[0, 1, 1, 1])        # position 3 never reached: NaN filled by the others' mean
    assert waste.filled_alpha(never, 3) == pytest.approx([3 / 4, 0.0, 3 / 8])


def test_theorem1_live_puts_each_modes_waste_beside_its_closed_form():
    runs = _runs().assign(mode=lambda f: f["mode"].replace({"other": "OFF"}))
    table4 = pd.DataFrame(dict(predictor=[LABELS["mlp"], "never stops"], Rec1=[1.0, 1.0], FPR=[0.0, 1.0]))
    live, per_draft = waste.theorem1_live(runs, table4, np.array([0.5, 0.5, 0.5, 0.5]), 4)
    live = live.set_index("predictor")
    assert live.loc["OFF", "wasted_per_round"] == pytest.approx((3 + 1 + 4 + 4 + 0) / 5)
    assert np.isnan(live.loc["OFF", "closed_form"])            # no operating point for the fixed window
    # a perfect predictor (Rec1 = 1, FPR = 0) stops before the first rejected token: no waste
    assert live.loc[LABELS["mlp"], "closed_form"] == 0.0
    # one that never stops (FPR = 1) wastes K - R + 1 tokens after a first rejection at R, P(R = r) = 0.5^r:
    # 4/2 + 3/4 + 2/8 + 1/16
    never = runs.assign(mode=lambda f: f["mode"].replace({LABELS["mlp"]: "never stops"}))
    live2, _ = waste.theorem1_live(never, table4, np.array([0.5, 0.5, 0.5, 0.5]), 4)
    assert live2.set_index("predictor").loc["never stops", "closed_form"] == pytest.approx(2 + 0.75 + 0.25 + 0.0625)
    assert per_draft.loc["b", LABELS["mlp"]] == 1.0 and per_draft.loc["a", "OFF"] == pytest.approx((3 + 1 + 0) / 3)


# ------------------------------------------------------------------------------------------ figures
def _lines(ax):
    return [(np.asarray(ln.get_xdata(), float).tolist(), np.asarray(ln.get_ydata(), float).tolist()) for ln in ax.get_lines()]


def test_threads_figure_plots_the_speedup_and_the_miss_rate_in_percent():
    f4a = pd.DataFrame(dict(threads=[1, 4], speedup_sd_fsd=[1.0, 1.25], miss_rate=[0.5, 0.25]))
    fig = figures.threads_figure(f4a)
    ax, ax2 = fig.axes
    assert _lines(ax) == [([1, 4], [1.0, 1.25])] and _lines(ax2) == [([1, 4], [50.0, 25.0])]
    assert ax2.get_ylabel() == "cache-miss rate (%)"
    plt.close(fig)


def test_gamma_figures_plot_both_speedups_per_source_with_their_bands():
    f4b = pd.DataFrame(dict(gamma=[2, 4], speedup_ar_sd=[1.5, 0.75], speedup_sd_fsd=[1.0, 1.25]))
    fig = figures.gamma_figure(f4b)
    ys = sorted(y for _, y in _lines(fig.axes[0]) if y and y != [1.0, 1.0])
    assert ys == [[1.0, 1.25], [1.5, 0.75]]
    plt.close(fig)
    both = pd.concat([f4b.assign(source=s) for s in ("measured", "paper")], ignore_index=True)
    for c in ("speedup_ar_sd", "speedup_sd_fsd"):
        both[f"{c}_low"], both[f"{c}_high"] = both[c] - 0.125, both[c] + 0.125
    fig = figures.gamma_sources_figure(both.iloc[::-1])
    assert [ax.get_title() for ax in fig.axes] == ["paper", "measured"]
    assert _lines(fig.axes[0])[:2] == [([2, 4], [1.5, 0.75]), ([2, 4], [1.0, 1.25])]
    plt.close(fig)


def test_exit_agreement_figure_plots_percent_against_depth_for_adapters_and_lens():
    agree = pd.DataFrame(dict(kind=["adapters", "adapters", "lens", "lens"], depth=[0.25, 0.5, 0.25, 0.5],
                              agreement=[0.5, 0.75, 0.125, 0.25], low=0.0, high=1.0))
    fig = figures.exit_agreement_figure(agree)
    assert _lines(fig.axes[0]) == [([0.25, 0.5], [50.0, 75.0]), ([0.25, 0.5], [12.5, 25.0])]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["early exit (adapter)",
                                                                             "logit lens (no adapter)"]
    plt.close(fig)


def test_theorem1_curves_at_both_ends_of_fp_by_hand():
    alpha = np.full(4, 0.5)
    c = waste.theorem1_curves(alpha, 4, n_mc=2000, seed=0)
    assert len(c) == 3 * 11 and sorted(set(c.rec1)) == [0.8, 0.95, 1.0] and c.fp.tolist()[:11] == list(waste.FPS)
    zero, one = c[c.fp == 0.0], c[(c.fp == 1.0) & (c.rec1 == 1.0)].iloc[0]
    assert (zero.closed_form == 0).all() and (zero.monte_carlo == 0).all() and (zero.bound_eq31 == 0).all()
    # FP = 1 never stops: K - R + 1 tokens after a first rejection at R, P(R = r) = 0.5^r; the bound is exact there
    assert one.closed_form == pytest.approx(3.0625) and one.bound_eq31 == pytest.approx(3.0625)
    assert abs(one.monte_carlo - 3.0625) < 4 * one.mc_se
    assert (c.closed_form <= c.bound_eq31 + 1e-12).all() and (c.closed_form_inclusive >= c.closed_form - 1e-12).all()
