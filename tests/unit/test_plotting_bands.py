"""plotting.band_plot: one line of means per hue value, in the given order, with its confidence band."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from specedge import plotting  # noqa: E402


def summary() -> pd.DataFrame:
    rows = [dict(scheme=s, x=x, mean=m + x, ci_low=m + x - 0.5, ci_high=m + x + 1.0)
            for s, m in (("A", 10.0), ("B", 20.0), ("C", 30.0)) for x in (3, 1, 2)]   # x out of order
    return pd.DataFrame(rows)


def test_band_plot_lines_markers_and_bands():
    fig, ax = plt.subplots()
    try:
        plotting.band_plot(ax, summary(), "x", "scheme", order=["C", "A"], label=lambda s: f"scheme {s}",
                           colors=["red", "blue"], linestyle="--")
        lines = ax.get_lines()
        assert [ln.get_label() for ln in lines] == ["scheme C", "scheme A"]
        assert [ln.get_marker() for ln in lines] == list(plotting.MARKERS[:2])
        assert [ln.get_color() for ln in lines] == ["red", "blue"] and lines[0].get_linestyle() == "--"
        np.testing.assert_array_equal(lines[0].get_xdata(), [1, 2, 3])          # sorted along x
        np.testing.assert_array_equal(lines[0].get_ydata(), [31.0, 32.0, 33.0])
        bands = ax.collections
        assert len(bands) == 2
        ys = bands[1].get_paths()[0].vertices[:, 1]                              # A's band: mean - 0.5 .. mean + 1
        assert ys.min() == 10.5 and ys.max() == 14.0
    finally:
        plt.close(fig)


def test_band_plot_default_order_is_the_order_of_appearance():
    fig, ax = plt.subplots()
    try:
        plotting.band_plot(ax, summary().iloc[::-1], "x", "scheme")
        assert [ln.get_label() for ln in ax.get_lines()] == ["C", "B", "A"]
        assert len({ln.get_color() for ln in ax.get_lines()}) == 3
    finally:
        plt.close(fig)


def test_ecdf_plot_one_step_line_per_sample_ending_at_one():
    fig = plotting.ecdf_plot({"first": [3.0, 1.0, 2.0], "second": [0.0, 0.5]}, xlabel="gap (%)", title="t",
                             symlog_linthresh=0.01)
    ax = fig.axes[0]
    assert [l.get_label() for l in ax.get_lines()] == ["first", "second"]
    x, y = ax.get_lines()[0].get_data()
    assert list(x) == [1.0, 2.0, 3.0] and np.allclose(y, [1 / 3, 2 / 3, 1.0])   # sorted, share of values
    assert ax.get_xscale() == "symlog" and ax.get_ylabel() == "Share of instances (ECDF)" and ax.get_xlabel() == "gap (%)"
    assert plotting.ecdf_plot({"a": [1.0]}, xlabel="x").axes[0].get_xscale() == "linear"
    plt.close("all")
