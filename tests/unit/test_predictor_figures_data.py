"""The rejection predictor's figures (``experiments.li2026.drafting_figures``) draw exactly the values they are given and return the data
they are saved with: each checked against hand-worked frames."""
import matplotlib

matplotlib.use("Agg")      # tests only: no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from specedge.experiments.li2026 import drafting_figures as figures  # noqa: E402
from specedge.predictor.dataset import STATS, build_dataset, statistic_views  # noqa: E402
from specedge.predictor.models import FAMILIES, LABELS  # noqa: E402
from specedge.predictor.operating import UNPENALISED  # noqa: E402
from specedge.predictor.waste import FPS, theorem1_curves  # noqa: E402
from test_predictor import synthetic_traces  # noqa: E402


def test_statistic_figures_save_both_figures_and_return_the_pooled_pearson_r(tmp_path):
    t = synthetic_traces(n_prompts=6, rounds=4, k=5, seed=2)
    t = t.assign(temperature=np.where(t.prompt % 2 == 0, 0.0, 1.0), draft=np.where(t.domain == "code", "d1", "d2"))
    data = build_dataset(t)
    fig2, fig3 = statistic_views(data, bins=4)
    r = figures.statistic_figures(fig2, fig3, tmp_path, suffix="_x", drafts=["d1", "d2"])
    plt.close("all")
    for stem in ("fig2_stats_vs_acceptance_x", "fig3_pearson_x"):
        assert all((tmp_path / f"{stem}.{ext}").exists() for ext in ("png", "pdf", "csv"))
    assert list(r.index) == sorted(STATS) and list(r.columns) == sorted(["both", "T = 0 (greedy)", "T = 1"])
    greedy = data[data.temperature == 0]
    for s in STATS:   # Pearson r worked with numpy on the pooled rows, not read back from fig3
        assert r.loc[s, "T = 0 (greedy)"] == pytest.approx(np.corrcoef(greedy[s], greedy.label)[0, 1])
        assert r.loc[s, "both"] == pytest.approx(np.corrcoef(data[s], data.label)[0, 1])


def test_confusion_figure_rows_are_the_percentages_as_fractions_true_class_first():
    t10 = pd.DataFrame(dict(predictor=["A", "B"], TN_pct=[60.0, 25.0], FP_pct=[40.0, 75.0], FN_pct=[10.0, 5.0],
                            TP_pct=[90.0, 95.0]))
    fig, rows = figures.confusion_figure(t10)
    try:
        a = rows[rows.predictor == "A"].set_index(["true", "pred"]).fraction
        assert a.to_dict() == {("rejected", "rejected"): 0.6, ("rejected", "accepted"): 0.4,
                               ("accepted", "rejected"): 0.1, ("accepted", "accepted"): 0.9}
        assert len(rows) == 8 and [ax.get_title() for ax in fig.axes[:2]] == ["A", "B"]
        assert fig.axes[0].get_ylabel() == "true class" and fig.axes[1].get_ylabel() == ""
        assert [t.get_text() for t in fig.axes[1].texts] == ["0.25", "0.75", "0.05", "0.95"]
    finally:
        plt.close(fig)


def test_theorem1_figure_marks_the_papers_points_hollow_and_ours_filled():
    thm = theorem1_curves(np.array([0.8, 0.7, 0.6, 0.5]), 4, n_mc=200, seed=0)
    points = pd.DataFrame(dict(predictor=[LABELS["mlp"], LABELS["xgboost"]], FPR=[0.3, 0.6], expected_waste=[0.5, 1.1],
                               source=["paper Table 4", "ours"]))
    fig = figures.theorem1_figure(thm, points)
    try:
        ax = fig.axes[0]
        marks = [c for c in ax.collections if c.get_label().startswith((LABELS["mlp"], LABELS["xgboost"]))]
        assert [c.get_label() for c in marks] == [f"{LABELS['mlp']}, paper Table 4", f"{LABELS['xgboost']}, ours"]
        assert marks[0].get_facecolors().size == 0 or marks[0].get_facecolors()[0][3] == 0     # hollow
        # filled in its edge's colour ("k": black, or seaborn's 0.1 grey once a style remapped the colour codes)
        assert marks[1].get_facecolors()[0].tolist() == marks[1].get_edgecolors()[0].tolist()
        assert marks[1].get_facecolors()[0][3] == 1 and max(marks[1].get_facecolors()[0][:3]) <= 0.1
        np.testing.assert_allclose(marks[0].get_offsets(), [[0.3, 0.5]])
        bound = [ln for ln in ax.lines if ln.get_label() == "bound eq (31)"][0]
        np.testing.assert_allclose(bound.get_xdata(), FPS)
        curve = [ln for ln in ax.lines if ln.get_label() == "closed form, Rec$_1$=0.8"][0]
        np.testing.assert_allclose(curve.get_ydata(), thm[thm.rec1 == 0.8].closed_form)
    finally:
        plt.close(fig)


def test_operating_fpr_figure_bars_are_the_seed_means_with_their_intervals():
    names = [LABELS[f] for f in FAMILIES]
    def summary(base):
        return pd.DataFrame(dict(metric="FPR", predictor=[*names, UNPENALISED],
                                 mean=[base + 0.1 * i for i in range(5)], low=[base + 0.1 * i - 0.05 for i in range(5)],
                                 high=[base + 0.1 * i + 0.02 for i in range(5)]))
    paper = {names[0]: 0.6, names[2]: 0.4}
    fig = figures.operating_fpr_figure({"zoo": summary(0.2), "real pair": summary(0.3).iloc[1:]}, paper)
    try:
        ax = fig.axes[0]
        zoo_bars, real_bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        np.testing.assert_allclose([b.get_height() for b in zoo_bars.patches], [0.2, 0.3, 0.4, 0.5, 0.6])
        real = [b.get_height() for b in real_bars.patches]
        assert np.isnan(real[0]) and real[1:] == pytest.approx([0.4, 0.5, 0.6, 0.7])   # a family missing: no bar
        # two pairs side by side: offsets -0.2 and +0.2 of a 0.4 width around each tick
        assert zoo_bars.patches[0].get_x() == pytest.approx(-0.4) and real_bars.patches[0].get_x() == pytest.approx(0.0)
        marks = np.ma.filled(np.ma.asarray(ax.collections[-1].get_offsets(), dtype=float), np.nan)   # NaN: masked
        assert np.allclose(marks[0], [0, 0.6]) and np.isnan(marks[1][1]) and np.allclose(marks[2], [2, 0.4])
        assert [t.get_text() for t in ax.get_xticklabels()][-1] == UNPENALISED.replace(", ", ",\n")
    finally:
        plt.close(fig)


def test_waste_goodput_figure_means_per_wasted_count_and_pearson_r():
    rounds = pd.DataFrame(dict(mode=["OFF", "ON"] * 3, wasted=[0, 1, 2, 0, 1, 2], goodput=[10.0, 8, 6, 10, 8, 6]))
    fig, summary, r = figures.waste_goodput_figure(rounds, seed=0, alpha=0.5, title="r = {r:.2f}")
    try:
        assert r == pytest.approx(-1.0)                                      # goodput = 10 - 2 W exactly
        assert summary.to_dict("list") == dict(wasted=[0, 1, 2], goodput=[10.0, 8.0, 6.0], rounds=[2, 2, 2])
        ax = fig.axes[0]
        assert ax.get_title() == "r = -1.00"
        mean = [ln for ln in ax.lines if ln.get_label() == "mean"][0]
        np.testing.assert_allclose(mean.get_ydata(), [10, 8, 6])
    finally:
        plt.close(fig)
    uneven = rounds.assign(goodput=[12.0, 8, 6, 10, 9, 3])
    _, s2, r2 = figures.waste_goodput_figure(uneven, seed=0, alpha=0.5, title="{r}")
    plt.close("all")
    assert s2.goodput.tolist() == [11.0, 8.5, 4.5]
    assert r2 == pytest.approx(np.corrcoef(uneven.wasted, uneven.goodput)[0, 1])
