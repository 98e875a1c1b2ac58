"""Committed outputs do not move with a float's last bits.

Hosts differ in the last bits of vectorised kernels (numpy's AVX-512 ``power``/``log``, MKL's and
oneDNN's AVX-512 GEMMs). ``make figures`` and ``make test`` therefore run with the kernels capped at
AVX2 (``host.PORTABLE_ENV``), and what is written must not depend on the last few ulps of its inputs:
each test here nudges a pipeline's inputs by a few ulps (``np.nextafter``) and expects the bytes that
``plotting.write_csv`` writes to stay the same.
"""
import io

import numpy as np
import pandas as pd
import pytest

from specedge import host, paths, plotting
from specedge.experiments import zheng2025_figures as zf


def nudge(x, ulps: int):
    x = np.asarray(x, float)
    for _ in range(abs(ulps)):
        x = np.nextafter(x, np.inf if ulps > 0 else -np.inf)
    return x


def csv_bytes(df: pd.DataFrame, tmp_path, name: str) -> bytes:
    return plotting.write_csv(df, tmp_path / name).read_bytes()


class _Costs:
    """The relative costs L(K) of the committed Fig 4, per scenario, nudged like the α's."""

    def __init__(self, fig4: pd.DataFrame, ulps: int):
        self.L = {(s, int(k)): float(nudge(v, ulps)) for s, k, v in fig4[["scenario", "K", "L"]].itertuples(index=False)}
        self.vocab = int(fig4.K.max())

    def measured(self, k):
        return self.L["measured here", int(k)]

    def paper(self, k):
        return self.L["paper costs", self.vocab if k == zf.PAPER_VOCAB else int(k)]


@pytest.mark.parametrize("ulps", [-3, -1, 1, 3])
def test_zheng2025_fig4_bytes_do_not_move_with_ulps(tmp_path, ulps):
    """Fig 4's S* = S(γ*) from the committed α(K) and L(K): the same CSV bytes with every input a few ulps
    off. (Writing 17 significant digits instead of ``write_csv``'s 10 makes this fail.)"""
    fig3 = pd.read_csv(paths.FIGURES / "zheng2025" / "fig3_alpha_vs_topk.csv")
    fig4 = pd.read_csv(paths.FIGURES / "zheng2025" / "fig4_speedup_vs_topk.csv").query("pair == 'zoo'")
    scenarios = lambda c: {"measured here": c.measured, "paper costs": lambda k: c.paper(zf.PAPER_VOCAB if k == c.vocab else k)}
    base = zf.fig4_frame(fig3, scenarios(_Costs(fig4, 0)))
    noisy = zf.fig4_frame(fig3.assign(alpha=nudge(fig3.alpha, ulps)), scenarios(_Costs(fig4, ulps)))
    assert csv_bytes(base, tmp_path, "a.csv") == csv_bytes(noisy, tmp_path, "b.csv")


def test_write_csv_precision_is_what_makes_it_stable(tmp_path):
    """The guard above can fail: the same nudge written at full precision changes the bytes."""
    x = pd.DataFrame({"v": [0.1 + 0.2, 1 / 3]})
    y = x.assign(v=nudge(x.v, 1))
    assert csv_bytes(x, tmp_path, "a.csv") == csv_bytes(y, tmp_path, "b.csv")
    full_x, full_y = io.StringIO(), io.StringIO()
    x.to_csv(full_x, float_format="%.17g")
    y.to_csv(full_y, float_format="%.17g")
    assert full_x.getvalue() != full_y.getvalue()


def test_make_figures_and_make_test_run_capped_at_avx2():
    """Both commands start their processes through ``host --portable``, and the venv's kernel spec
    carries the same environment, so a notebook opened in Jupyter computes the committed bytes too."""
    makefile = (paths.ROOT / "Makefile").read_text()
    for target in ("figures:", "test:"):
        recipe = makefile.split(f"\n{target}", 1)[1].split("\n\n", 1)[0]
        assert "specedge.host --portable --" in recipe, f"make {target[:-1]} does not run capped at AVX2"
    assert "specedge.host --kernel" in makefile
    env = host.portable({})
    assert env == host.PORTABLE_ENV and env["ATEN_CPU_CAPABILITY"] == "avx2"
