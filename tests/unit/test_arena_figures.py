"""The arena's figures (experiments.edge_sd_arena.figures) on hand-made tables: what each panel draws (bars, cells,
labels with units, the legend's names) and the files it saves beside it."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from specedge.experiments.edge_sd_arena import figures as figs  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _saved(out, stem):
    return sorted(p.name for p in out.glob(f"{stem}.*"))


# --------------------------------------------------------------------------- the regime map
def _regime(margins, metrics=("goodput_tok_s", "jain")):
    rows = []
    for m in metrics:
        for mix in ("mixed", "fast"):
            for (n, bw), (winner, k, verdict, pct, beyond) in zip([(4, 1e7), (4, 1e8), (16, 1e7), (16, 1e8)], margins):
                rows.append(dict(metric=m, mix=mix, devices=n, bandwidth_bps=bw, winner=winner, n_best=k, verdict=verdict,
                                 margin_pct=pct, beyond_twin_error=beyond))
    return pd.DataFrame(rows)


CELLS = [("a / b / c", 1, "wins", 12.0, True),        # a clear win beyond the twin's error
         ("d / e / f", 1, "tie", 1.5, False),         # a tie within the seeds' interval: marked ≈
         ("a / b / c", 3, "tie", 0.0, False),         # three combinations with the same best mean
         ("g / h / i", 1, "wins", -0.25, False)]


def test_regime_map_names_each_cell_and_panel_and_shares_one_colour_scale(tmp_path):
    fig = figs.regime(_regime(CELLS, metrics=("goodput_tok_s", "p99_ms")), tmp_path)
    assert len(fig.axes) == 4                                         # 2 metrics x 2 mixes
    ax = fig.axes[0]
    assert ax.get_title() == "goodput per device (tok/s) — fast devices: winner, margin over runner-up"
    assert fig.axes[3].get_title() == "p99_ms — mixed devices: winner, margin over runner-up"   # unnamed: its own name
    assert ax.get_xlabel() == "link bandwidth (Mbit/s)" and ax.get_ylabel() == "devices"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10", "100"]
    texts = [t.get_text() for t in ax.texts]                          # cells row by row: N = 4, then N = 16
    assert texts == ["a/b/c\n+12.0 % *", "≈ d/e/f\n+1.5 %", "3-way tie\n+0.0 %", "g/h/i\n-0.2 %"]
    assert {a.collections[0].norm.vmax for a in fig.axes} == {12.0}
    assert _saved(tmp_path, "regime_map") == ["regime_map.csv", "regime_map.pdf", "regime_map.png"]
    assert len(pd.read_csv(tmp_path / "regime_map.csv")) == 16


def test_regime_map_colour_scale_is_at_least_one_percent(tmp_path):
    flat = [(w, k, v, 0.0, b) for w, k, v, _, b in CELLS]
    fig = figs.regime(_regime(flat), tmp_path)
    assert fig.axes[0].collections[0].norm.vmax == 1.0
    assert fig.axes[0].collections[0].norm.vmin == 0.0


# --------------------------------------------------------------------------- techniques
def _tmap():
    rows = []
    for tech, base in (("payload", 100.0), ("former", 2.0)):
        for mix in ("fast", "mixed"):
            for n in (4, 16):
                for bw in (1e7, 1e8):
                    c = base + (1 if mix == "mixed" else 0) + n / 4 + bw / 1e8
                    rows.append(dict(technique=tech, mix=mix, devices=n, bandwidth_bps=bw, change_pct=c,
                                     change_low_pct=c - 1.0, change_high_pct=c + 3.0))
    t = pd.DataFrame(rows)
    t.loc[(t.technique == "former") & (t.mix == "mixed") & (t.devices == 16) & (t.bandwidth_bps == 1e8),
          ["change_low_pct", "change_high_pct"]] = np.nan            # a point without an interval
    return t


def test_techniques_draw_one_bar_per_mix_size_and_bandwidth_with_its_interval(tmp_path):
    tmap = _tmap()
    fig = figs.techniques(tmap, tmp_path)
    axes = fig.axes
    assert [a.get_title() for a in axes] == ["payload: best on vs best off", "former: best on vs best off"]
    assert axes[0].get_ylabel() == "goodput gain (%)" and axes[0].get_yscale() == "symlog"
    assert all(a.get_xlabel() == "link bandwidth (Mbit/s)" for a in axes)
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["10", "100"]
    labels = [t.get_text() for t in axes[-1].get_legend().get_texts()]
    assert labels == ["fast, N=4", "fast, N=16", "mixed, N=4", "mixed, N=16"]
    bars = axes[0].containers                                         # one BarContainer per (mix, N)
    heights = [[p.get_height() for p in c.patches] for c in bars if hasattr(c, "patches")]
    # 100 + 1 (mixed) + N / 4 + bandwidth / 100 Mbit/s
    assert heights == [pytest.approx(h) for h in ([101.1, 102.0], [104.1, 105.0], [102.1, 103.0], [105.1, 106.0])]
    # the first group's error bar at 10 Mbit/s spans low .. high = 101.1 - 1 .. 101.1 + 3
    seg = next(c for c in bars if hasattr(c, "patches")).errorbar.lines[2][0].get_segments()[0]
    assert seg[:, 1].tolist() == pytest.approx([100.1, 104.1])
    last = [c for c in axes[1].containers if hasattr(c, "patches")][-1]
    seg = last.errorbar.lines[2][0].get_segments()[1]                # no interval: a bar without whiskers
    assert seg[0, 1] == seg[1, 1] == pytest.approx(last.patches[1].get_height())
    assert _saved(tmp_path, "technique_map") == ["technique_map.csv", "technique_map.pdf", "technique_map.png"]


# --------------------------------------------------------------------------- the ablation
def test_ablation_shows_each_variants_change_in_percent_of_the_best(tmp_path):
    table = pd.DataFrame(dict(variant=["best", "no payload", "no former"], combination=["a / b / c", "a / x / c", "a / b / y"],
                              goodput_tok_s=[20.0, 15.0, 19.0], slo_attainment=[0.8, 0.4, 0.8], jain=[0.5, 0.5, 0.25],
                              goodput_tok_s_change=[0.0, -5.0, -1.0], goodput_tok_s_change_low=[0.0, -6.0, -2.0],
                              goodput_tok_s_change_high=[0.0, -4.0, 0.0],
                              slo_attainment_change=[0.0, -0.4, 0.0], slo_attainment_change_low=[0.0, -0.5, np.nan],
                              slo_attainment_change_high=[0.0, -0.3, np.nan],
                              jain_change=[0.0, 0.0, -0.25], jain_change_low=[0.0, 0.0, -0.3], jain_change_high=[0.0, 0.0, -0.2]))
    fig = figs.ablation(table, tmp_path)
    axes = fig.axes
    assert [a.get_xlabel() for a in axes] == ["goodput per device (tok/s): change vs best (%)",
                                              "SLO attainment: change vs best (%)", "Jain's index: change vs best (%)"]
    widths = [[p.get_width() for p in a.patches] for a in axes]
    assert widths == [pytest.approx([0.0, -25.0, -5.0]), pytest.approx([0.0, -50.0, 0.0]), pytest.approx([0.0, 0.0, -50.0])]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["best\n(a / b / c)", "no payload\n(a / x / c)", "no former\n(a / b / y)"]
    assert axes[0].yaxis_inverted()                                   # the best on top
    bars = next(c for c in axes[0].containers if hasattr(c, "patches"))
    seg = bars.errorbar.lines[2][0].get_segments()[1]
    assert seg[:, 0].tolist() == pytest.approx([-30.0, -20.0])        # -6 .. -4 tok/s of 20: -30 .. -20 %
    assert _saved(tmp_path, "ablation") == ["ablation.csv", "ablation.pdf", "ablation.png"]


# --------------------------------------------------------------------------- the Pareto front's labels
def test_pareto_labels_clusters_and_puts_each_label_on_a_free_side(tmp_path):
    """Front points by goodput: 1-3 crowd at x 100..99 (one label '1–3'), 4 at 94 and 5 at 88 are separate clusters
    within 4 x 2 % of the x range of each other on one height, 6 and 7 a pair at another height ('6, 7'). 1–3 has
    nothing to its right: its label goes right; 4 has clusters on both sides: above; 5 has one on its right: left."""
    front_pts = [(100.0, 0.5), (99.5, 0.5), (99.0, 0.5), (94.0, 0.5), (88.0, 0.5), (50.0, 0.9), (49.0, 0.9)]
    rows = [dict(combination=f"d{i} / p / f", goodput_tok_s=x, jain=y, slo_attainment=0.9, front=True)
            for i, (x, y) in enumerate(front_pts)]
    rows += [dict(combination="d9 / p / f", goodput_tok_s=0.0, jain=0.0, slo_attainment=0.1, front=False),
             dict(combination="centralized", goodput_tok_s=60.0, jain=1.0, slo_attainment=1.0, front=False),
             dict(combination="AR on the edge", goodput_tok_s=10.0, jain=0.2, slo_attainment=0.5, front=False)]
    fig = figs.pareto(pd.DataFrame(rows), tmp_path)
    ax, key = fig.axes[0], fig.axes[1]
    placed = {t.get_text(): t.get_ha() for t in ax.texts}
    assert placed == {"1–3": "left", "4": "center", "5": "right", "6, 7": "left"}
    at = {t.get_text(): t.xy for t in ax.texts}
    assert at["1–3"] == pytest.approx((99.5, 0.5)) and at["6, 7"] == pytest.approx((49.5, 0.9))
    lines = key.texts[0].get_text().splitlines()
    assert lines[0] == "edge Pareto front" and lines[3] == " 1  d0/p/f  (100.0 tok/s, J = 0.500, SLO 0.90)"
    assert len(lines) == 3 + len(front_pts)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "reference: centralized", "reference: AR on the edge", "edge Pareto front (3 objectives)"]
    assert ax.get_xlabel() == "goodput per device (tok/s)" and ax.get_ylabel() == "Jain's fairness index"
    assert fig.axes[2].get_ylabel() == "SLO attainment"               # the colour bar
    assert _saved(tmp_path, "pareto") == ["pareto.csv", "pareto.pdf", "pareto.png"]
