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
