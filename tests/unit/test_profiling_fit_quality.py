"""How well a profile's fit of eq (17) describes its measurements: R² per role and phase, and the plot of
runtime against batch size and FLOPs (zhu2025 Fig 5's layout)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from specedge import hardware, profiling  # noqa: E402

C = {"draft": (2e-12, 0.01), "verify": (5e-13, 0.05)}


def measurements(noise: float = 0.0) -> pd.DataFrame:
    """Prefill shapes at 4 lengths x 4 batch sizes and a few decode shapes per role, timed as the fit says
    (plus ``noise`` on the decodes)."""
    rng = np.random.default_rng(3)
    rows = []
    for role, (c1, c2) in C.items():
        for phase, lengths in (("prefill", (16, 32, 64, 128)), ("decode", (1,))):
            for q in lengths:
                for b in (1, 2, 4, 8):
                    F = 1e9 * q
                    t = c1 * F * b + c2 + (rng.normal(0, noise) if phase == "decode" else 0.0)
                    rows.append(dict(role=role, architecture=f"{role}-arch", phase=phase, batch=b, new_tokens=q,
                                     flops_per_seq=F, runtime_s=t))
    return pd.DataFrame(rows)


def profile() -> hardware.Profile:
    return hardware.validate(dict(name="zz_fit", source="test", devices={"local": {}}, links={},
                                  runtime={r: {"model": "T = c1*F*b + c2", "c1": c1, "c2": c2} for r, (c1, c2) in C.items()}))


def test_fit_quality_is_r_squared_per_role_and_phase():
    q = profiling.fit_quality(measurements(), profile()).set_index("role")
    assert list(q.index) == ["draft", "verify"] and (q.points == 20).all()
    assert q.loc["verify", "c1"] == 5e-13 and q.loc["draft", "architecture"] == "draft-arch"
    assert q[["r2_all", "r2_prefill", "r2_decode"]].to_numpy() == pytest.approx(1.0)     # exact timings
    noisy = profiling.fit_quality(measurements(noise=0.05), profile()).set_index("role")
    assert noisy.r2_prefill.to_numpy() == pytest.approx(1.0) and (noisy.r2_decode < 0.9).all()
    assert (noisy.r2_all > noisy.r2_decode).all()
    m = measurements()
    assert profiling.fit_quality(m, profile()).r2_decode.iloc[0] == pytest.approx(
        profiling.r_squared(m[(m.role == "draft") & (m.phase == "decode")].runtime_s,
                            2e-12 * 1e9 * m[(m.role == "draft") & (m.phase == "decode")].batch + 0.01))
    with pytest.raises(KeyError, match="no runtime model 'other'"):
        profiling.fit_quality(m.assign(role="other"), profile())


def test_plot_fit_draws_the_measured_points_and_the_fitted_lines():
    fig, d = profiling.plot_fit(measurements(), profile())
    try:
        assert set(d.phase) == {"prefill"} and len(d) == 32
        assert d.fitted_s.to_numpy() == pytest.approx(d.runtime_s.to_numpy())   # exact timings lie on the fit
        a, b = fig.axes[:2]
        assert a.get_xlabel() == "Batch size" and b.get_xlabel() == "GFLOPs per sequence (F)"
        assert a.get_ylabel() == b.get_ylabel() == "Model runtime (s)"
        # (a): the three lengths measured at the most batch sizes (ties: the longest), fitted and measured
        labels = [t.get_text() for t in a.get_legend().get_texts()]
        assert labels == ["32.0 GFLOPs (Fitted)", "32.0 GFLOPs (Measured)", "64.0 GFLOPs (Fitted)",
                          "64.0 GFLOPs (Measured)", "128.0 GFLOPs (Fitted)", "128.0 GFLOPs (Measured)"]
        # (b): the three largest batch sizes measured at three or more lengths
        assert [t.get_text() for t in b.get_legend().get_texts()][::2] == [
            "Batch size=2 (Fitted)", "Batch size=4 (Fitted)", "Batch size=8 (Fitted)"]
        assert len(fig.axes) == 4 and fig.axes[2].get_title() == "(a) verify: verify-arch"
    finally:
        plt.close(fig)
