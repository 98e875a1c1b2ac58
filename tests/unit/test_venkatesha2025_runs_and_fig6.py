"""venkatesha2025's Table 6 runs (``experiments.venkatesha2025.runs``) on tiny stand-ins of a model set, and Fig 6's
heatmaps (``experiments.venkatesha2025.figures``) against eq 9 worked independently."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from _stand_ins import CharTokenizer, pair as stand_in_pair  # noqa: E402
from specedge import early_exit, hardware, zoo  # noqa: E402
from specedge.experiments.venkatesha2025 import figures as vf  # noqa: E402
from specedge.experiments.venkatesha2025 import runs  # noqa: E402
from specedge.solvers import venkatesha2025 as v  # noqa: E402

SETS = {"vicuna68m_vicuna7b": ("draft-xs", "target-m")}


@pytest.fixture(scope="module")
def table6(tmp_path_factory):
    draft, target = stand_in_pair()
    ee = early_exit.EarlyExits(target, rank=4)
    loaded, prompts = [], {}
    real_collect = early_exit.collect_traces
    mp = pytest.MonkeyPatch()
    mp.setattr(runs.zoo, "load_pair", lambda d, t: (loaded.append((d, t)), (draft, target, CharTokenizer()))[1])
    mp.setattr(runs.early_exit, "load", lambda tgt, folder: (loaded.append(folder.name), (ee, {}))[1])

    def collect(d, e, p, max_new, gamma, desc):
        prompts[desc] = p
        return real_collect(d, e, p, max_new, gamma=gamma, progress=False)

    mp.setattr(runs.early_exit, "collect_traces", collect)
    try:
        prof = hardware.load_profile("venkatesha2025_paper")
        out = runs.table6_runs(SETS, prof, n_prompts=1, max_new=6, seed=0)
    finally:
        mp.undo()
    return out, loaded, prompts, prof


def test_table6_runs_load_each_set_once_and_give_mt_bench_and_alpaca_different_chat_prompts(table6):
    (traces, models, t6, avg), loaded, prompts, _ = table6
    assert loaded == [("draft-xs", "target-m"), "target-m"] and list(models) == ["vicuna68m_vicuna7b"]
    tok = CharTokenizer()
    chat = [tok(p)["input_ids"] for p in zoo.eval_prompts("chat", 2)]
    assert prompts["vicuna68m_vicuna7b/MT-bench"] == chat[:1] and prompts["vicuna68m_vicuna7b/Alpaca"] == chat[1:2]
    assert chat[0] != chat[1]
    assert set(traces) == {("vicuna68m_vicuna7b", b) for b in runs.BENCHMARKS}


def test_table6_rows_per_client_and_benchmark_and_their_average(table6):
    (traces, _, t6, avg), _, _, prof = table6
    assert len(t6) == len(runs.BENCHMARKS) * 2 and (t6.pair == "draft-xs/target-m").all()
    assert t6.set_index("benchmark").domain.to_dict() == {b: d for b, (d, _) in runs.BENCHMARKS.items()}
    for client in ("jetson", "rtx"):
        rows = t6[t6.client == client]
        assert (rows.threads == prof.coefficients(f"{client}_vicuna68m_vicuna7b")["threads"]).all()
        got = avg[avg.client == client].iloc[0]
        for m in runs.METRICS:
            assert got[m] == pytest.approx(rows[m].mean(), nan_ok=True)       # NaN (no hit) rows skipped
    # the models' own quantities do not depend on the client's timings
    by = t6.pivot(index="benchmark", columns="client", values="tau")
    assert (by.jetson == by.rtx).all() and (t6.tau >= 1).all() and (t6.tau <= 5).all()


def test_variants_average_each_option_over_the_benchmarks(table6):
    (traces, _, _, _), _, _, prof = table6
    dd = runs.variants(traces, prof, seed=0)
    assert list(zip(dd.variant, dd.client)) == [("dedupe", "jetson"), ("dedupe", "rtx"),
                                                ("wait for a running pre-draft", "jetson"), ("wait for a running pre-draft", "rtx")]
    from specedge.early_exit import sim
    cfg = sim.FSDConfig.from_profile(prof, "rtx_vicuna68m_vicuna7b", seed=0, running="wait")
    want = np.mean([sim.evaluate(traces["vicuna68m_vicuna7b", b], cfg)["miss_rate"] for b in runs.BENCHMARKS])
    assert dd.iloc[3].miss_rate == pytest.approx(want)


@pytest.mark.parametrize("with_paper", [False, True])
def test_fig6_draws_eq9_per_gamma_with_the_points_of_each_source(with_paper):
    grid = v.fig6_grid(gammas=(4, 7, 10), n_rho=5, n_c=4)
    pts = [dict(who="ours", rho=0.2, c=0.3), dict(who="ours", rho=0.5, c=0.6)]
    if with_paper:
        pts.append(dict(who="paper (Jetson)", rho=0.4, c=0.1))
    fig = vf.fig6(grid, pd.DataFrame(pts))
    try:
        axes = fig.axes
        assert len(axes) == 4 and axes[3].get_label() == "<colorbar>"
        rho, c = np.linspace(0, 1, 5), np.linspace(0, 1, 4)
        for ax, g in zip(axes[:3], (4, 7, 10)):
            assert ax.get_title() == f"γ = {g}"
            mesh = ax.collections[0]
            # eq 9 worked here: (g c + 1) / (rho g c + 1), rows c, columns rho
            want = (g * c[:, None] + 1) / (rho[None, :] * g * c[:, None] + 1)
            np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(4, 5), want)
            scatters = [col for col in ax.collections[1:] if col.get_offsets().shape[0] and col.get_label() in ("ours", "paper (Jetson)")]
            assert [s.get_label() for s in scatters] == (["paper (Jetson)", "ours"] if with_paper else ["ours"])
            np.testing.assert_allclose(scatters[-1].get_offsets(), [[0.2, 0.3], [0.5, 0.6]])
            assert ax.lines[0].get_ydata()[0] == pytest.approx(3 * 6.6 / 67)
    finally:
        plt.close(fig)
