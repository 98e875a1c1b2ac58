"""The verifier's latency figures (``experiments.li2026.estimator_figures``): the interference table's ratios, its checks."""
import pandas as pd
import pytest

from specedge.experiments.li2026 import estimator_figures as EF


def _frame():
    rows = []
    for t in ("zoo", "widened"):
        for la, (a, b, ab) in {8: (1.0, 2.0, 3.0), 16: (2.0, 2.0, 5.0)}.items():
            rows += [dict(target=t, a_length=la, case=c, seconds=s) for c, s in (("Solo A", a), ("Solo B", b), ("Batched A+B", ab))]
    return pd.DataFrame(rows)


def test_interference_figure_gives_what_b_inherits_and_the_batched_over_solo_a_ratio(tmp_path):
    w = EF.interference_figure(_frame(), tmp_path, "fig")
    assert w.loc[("zoo", 8), "B inherits (batched / solo B)"] == 1.5 and w.loc[("zoo", 16), "batched / solo A"] == 2.5
    assert (tmp_path / "fig.png").is_file() and (tmp_path / "fig.csv").is_file()
    with pytest.raises(ValueError, match="cases"):
        EF.interference_figure(_frame().query("case != 'Solo B'"), tmp_path, "fig")


def test_fit_figures_refuses_no_fit(tmp_path):
    with pytest.raises(ValueError, match="fits"):
        EF.fit_figures({}, tmp_path, "a", "b")


def test_fit_figures_gives_each_targets_absolute_error_in_ms(tmp_path):
    from types import SimpleNamespace

    def fit(measured, predicted):
        return SimpleNamespace(predictions=pd.DataFrame(dict(measured=measured, predicted=predicted, split=["train", "test"],
                                                             regime=["mixed", "compute-bound"])))

    pred = EF.fit_figures({"zoo": fit([0.010, 0.020], [0.012, 0.017]), "widened": fit([1.0, 2.0], [1.0, 2.5])},
                          tmp_path, "identity", "error")
    assert pred.target.tolist() == ["zoo", "zoo", "widened", "widened"]
    assert pred.abs_error_ms.tolist() == pytest.approx([2.0, 3.0, 0.0, 500.0])   # |predicted - measured|, not signed
    err = pd.read_csv(tmp_path / "error.csv")
    assert list(err.columns) == ["target", "split", "regime", "measured", "predicted", "abs_error_ms"]
    assert (tmp_path / "identity.png").is_file() and (tmp_path / "identity.csv").is_file()
