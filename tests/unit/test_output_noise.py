"""Committed outputs do not move with the host's float32 kernels, nor with a float's last bits.

Two sources of last-digit noise, each planted at its real scale:

- **float32 model outputs.** Intel's and AMD's float32 GEMMs (MKL, oneDNN) differ by ~1e-7 relative per logit even
  at the same vector width. The tests below perturb float32 logits by that much, run the pipelines that average them
  (zheng2025's α(K), venkatesha2025's exit confidence), and expect ``plotting.write_csv`` to write the committed bytes
  again (``output_noise.settle``), figures included, while a move beyond the declared noise is written and reported.
- **float64 ulps.** numpy's float64 kernels differ in the last bits between vector widths (capped at AVX2 by
  ``host.PORTABLE_ENV``); nudging a derived table's inputs by a few ulps must not change its ten-digit text.
"""
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
import torch

from specedge import early_exit, host, output_noise, paths, plotting
from specedge.experiments.zheng2025 import figures as zf
from specedge.solvers import zheng2025 as tkslt

FLOAT32_LOGIT_NOISE = (1e-7, 3e-7)   # relative, per logit: what vendors' float32 kernels differ by


@pytest.fixture(autouse=True)
def _log_here(tmp_path, monkeypatch):
    """The moved-output log of a test in its own folder, never the repository's build/."""
    monkeypatch.setattr(output_noise, "LOG", tmp_path / "output_noise.log")


def nudge(x, ulps: int):
    x = np.asarray(x, float)
    for _ in range(abs(ulps)):
        x = np.nextafter(x, np.inf if ulps > 0 else -np.inf)
    return x


def csv_bytes(df: pd.DataFrame, tmp_path, name: str) -> bytes:
    return plotting.write_csv(df, tmp_path / name).read_bytes()


def raw_text(df: pd.DataFrame) -> str:
    """The text at ten significant digits without settling (what the writer wrote before it kept anything)."""
    return df.to_csv(index=False, float_format=output_noise.FLOAT_FORMAT, lineterminator="\n")


def float32_noise(logits, rel: float, seed: int):
    """``logits`` (float32 tensors) each multiplied by 1 + rel·N(0, 1), in float32: another vendor's kernels."""
    g = torch.Generator().manual_seed(seed)
    return [(x * (1 + rel * torch.randn(x.shape, generator=g))).float() for x in logits]


def _logits(seed: int = 0, sequences: int = 4, positions: int = 200, vocab: int = 512):
    """A draft's and a correlated target's float32 logits (no model: the noise, not the model, is under test)."""
    g = torch.Generator().manual_seed(seed)
    q = [3 * torch.randn(positions, vocab, generator=g) for _ in range(sequences)]
    p = [0.7 * x + 2 * torch.randn(positions, vocab, generator=g) for x in q]
    return q, p


KS = (1, 2, 5, 32, 100, 512)


# ------------------------------------------------------------------ float32 model outputs, planted at their scale
@pytest.mark.parametrize("rel", FLOAT32_LOGIT_NOISE)
def test_zheng2025_alpha_bytes_stay_put_under_float32_logit_noise(tmp_path, rel):
    """α(K) of eq (9) from float32 logits ~1e-7 off: its ten-digit text moves (the noise is real), the committed
    bytes do not."""
    q, p = _logits()
    base = tkslt.topk_alpha(q, p, KS)
    noisy = tkslt.topk_alpha(float32_noise(q, rel, 1), float32_noise(p, rel, 2), KS)
    assert raw_text(base) != raw_text(noisy), "the planted noise must show at ten digits, or this proves nothing"
    committed = plotting.write_csv(base, tmp_path / "zheng2025" / "fig3_alpha_vs_topk.csv").read_bytes()
    assert plotting.write_csv(noisy, tmp_path / "zheng2025" / "fig3_alpha_vs_topk.csv").read_bytes() == committed
    assert not output_noise.LOG.exists()            # nothing moved beyond its noise, nothing reported


@pytest.mark.parametrize("rel", FLOAT32_LOGIT_NOISE)
def test_zheng2025_fig4_speedups_from_noisy_alpha_keep_their_bytes(tmp_path, rel):
    """S* = S(γ*) of eq (11) on α(K) with float32 logit noise: the declared derived noise covers what eq (11) does
    to α's noise, so Fig 4's and Table II's committed bytes stay."""
    q, p = _logits(seed=3)
    costs = {"measured here": lambda k: 0.42 + 2.5e-5 * k, "paper costs": lambda k: 0.07 + 0.23 * k / tkslt.PAPER_VOCAB}
    base = tkslt.fig4_frame(tkslt.topk_alpha(q, p, KS), costs)
    noisy = tkslt.fig4_frame(tkslt.topk_alpha(float32_noise(q, rel, 5), float32_noise(p, rel, 6), KS), costs)
    assert raw_text(base) != raw_text(noisy)
    path = tmp_path / "zheng2025" / "fig4_speedup_vs_topk.csv"
    committed = plotting.write_csv(base, path).read_bytes()
    assert plotting.write_csv(noisy, path).read_bytes() == committed


class _Exits:
    """An early-exit model that returns fixed per-exit logits (L, 1, n, V): ``early_exit.agreement`` under test."""

    def __init__(self, logits):
        self.logits = logits
        self.n_layers = len(logits[0])

    def all_exit_logits(self, ids):
        return self.logits[int(ids)]


def _exit_logits(n_layers=6, batches=12, positions=128, vocab=256, seed=0):
    """Per batch (L, 1, n, V) float32 logits whose exits agree more with the final layer the deeper they are."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(batches):
        final = 4 * torch.randn(1, positions, vocab, generator=g)
        out.append(torch.stack([final * (l + 1) / n_layers + 3 * torch.randn(1, positions, vocab, generator=g)
                                for l in range(n_layers)]))
    return out


def _agreement_frame(batches) -> pd.DataFrame:
    a, c = early_exit.agreement(_Exits(batches), [torch.tensor(i) for i in range(len(batches))])
    return pd.DataFrame([dict(model="target-m", exits="adapters", position=k + 1, agreement=a[k], confidence=c[k])
                         for k in range(len(a))])


@pytest.mark.parametrize("rel", FLOAT32_LOGIT_NOISE)
def test_venkatesha2025_exit_confidence_bytes_stay_put_under_float32_logit_noise(tmp_path, rel):
    """Each exit's mean max-softmax confidence (eq 4) over 1,536 positions from logits ~1e-7 off: the text moves,
    the committed bytes do not (the argmax agreement is a count and does not move at all)."""
    logits = _exit_logits()
    base = _agreement_frame(logits)
    noisy = _agreement_frame([float32_noise([b], rel, 10 + i)[0] for i, b in enumerate(logits)])
    assert raw_text(base) != raw_text(noisy)
    assert (base.agreement == noisy.agreement).all()
    path = tmp_path / "venkatesha2025" / "table2_exit_agreement.csv"
    committed = plotting.write_csv(base, path).read_bytes()
    assert plotting.write_csv(noisy, path).read_bytes() == committed


def test_a_figure_drawn_from_settled_values_has_the_committed_bytes(tmp_path):
    """Fig 3 from α with float32 noise: drawn unsettled, its PDF bytes differ and ``save`` refuses it; drawn from the
    settled frame, PNG, PDF and CSV are the committed files byte for byte. The committed figure itself is drawn from
    the values at their written digits (a PDF keeps more digits than the CSV)."""
    plotting.set_style()
    q, p = _logits(seed=7)
    base = tkslt.topk_alpha(q, p, KS)
    noisy = tkslt.topk_alpha(float32_noise(q, 3e-7, 8), float32_noise(p, 3e-7, 9), KS)
    out, elsewhere = tmp_path / "zheng2025", tmp_path / "scratch"
    stem = "fig3_alpha_vs_topk"
    with pytest.raises(ValueError, match="settle the frame"):         # unsettled: drawn at more digits than written
        plotting.save(zf.alpha_vs_topk_figure(base, "zoo"), base, out, stem, close=True)
    base = output_noise.settle(base, out / f"{stem}.csv")             # no committed file yet: the ten written digits
    plotting.save(zf.alpha_vs_topk_figure(base, "zoo"), base, out, stem, close=True)
    committed = {s: (out / f"{stem}.{s}").read_bytes() for s in ("png", "pdf", "csv")}
    plotting.save(zf.alpha_vs_topk_figure(noisy, "zoo"), noisy, elsewhere, stem, close=True)   # no declared noise there
    assert (elsewhere / f"{stem}.pdf").read_bytes() != committed["pdf"], "unsettled, the PDF would move"
    with pytest.raises(ValueError, match="settle the frame"):
        plotting.save(zf.alpha_vs_topk_figure(noisy, "zoo"), noisy, out, stem, close=True)
    assert {s: (out / f"{stem}.{s}").read_bytes() for s in committed} == committed   # refused before writing
    settled = output_noise.settle(noisy, out / f"{stem}.csv")
    plotting.save(zf.alpha_vs_topk_figure(settled, "zoo"), settled, out, stem, close=True)
    assert {s: (out / f"{stem}.{s}").read_bytes() for s in committed} == committed


# ------------------------------------------------------------------ a move beyond the noise is written, visibly
def _committed_alpha(tmp_path) -> tuple[pd.DataFrame, object]:
    frame = pd.DataFrame(dict(temperature=[0.0, 0.0, 1.0], K=[1, 2, 1], alpha=[0.375249116, 0.3237885322, 0.2063505182],
                              positions=[15555] * 3))
    path = tmp_path / "zheng2025" / "fig3_alpha_vs_topk.csv"
    plotting.write_csv(frame, path)
    return frame, path


def test_a_move_beyond_the_declared_noise_is_written_and_reported(tmp_path, capsys):
    """One α moved by 1e-3 relative (a bug, not noise), one by 1e-6: the first is written as computed and reported
    (stderr and the log: file, column, line, both texts), the second keeps its committed text. A writer that kept
    every value fails here."""
    frame, path = _committed_alpha(tmp_path)
    moved = frame.assign(alpha=frame.alpha * np.array([1 + 1e-3, 1 + 1e-6, 1.0]))
    plotting.write_csv(moved, path)
    text = path.read_text().splitlines()
    assert text[1] == "0,1,0.3756243651,15555"        # rewritten: 0.375249116 * (1 + 1e-3)
    assert text[2] == "0,2,0.3237885322,15555"        # kept
    line = "fig3_alpha_vs_topk.csv: alpha on line 2 moved 0.375249116 -> 0.3756243651 (relative 1.0e-03, beyond its declared noise 1e-05)"
    assert line in capsys.readouterr().err
    assert output_noise.LOG.read_text().count("\n") == 1 and line in output_noise.LOG.read_text()


def test_noise_is_relative_with_its_margin_inclusive():
    """The boundary: exactly rtol apart is within; a hair beyond is not; sign does not matter; NaN equals NaN only;
    a committed zero keeps only an exact zero."""
    assert output_noise.within(1.0 + 1e-6, 1.0, 1e-6) and output_noise.within(1.0, 1.0 + 1e-6, 1e-6)
    assert not output_noise.within(1.0 + 1.0001e-6, 1.0, 1e-6)
    assert output_noise.within(-0.5, -0.5 * (1 + 1e-6), 1e-6) and not output_noise.within(-0.5, 0.5, 1e-6)
    assert output_noise.within(np.nan, np.nan, 1e-6) and not output_noise.within(np.nan, 0.3, 1e-6)
    assert output_noise.within(0.0, 0.0, 1e-6) and not output_noise.within(1e-300, 0.0, 1e-6)


def test_rows_whose_exact_columns_changed_and_reshaped_files_are_written_as_computed(tmp_path, capsys):
    """Only a row whose exact cells are unchanged keeps a declared value: another K (same α up to noise) is a
    different row, written as computed; another row count rewrites the file; both reported."""
    frame, path = _committed_alpha(tmp_path)
    near = frame.alpha * (1 + 1e-7)
    plotting.write_csv(frame.assign(alpha=near, K=[1, 3, 1]), path)
    lines = path.read_text().splitlines()
    assert lines[2] == f"0,3,{near[1]:.10g},15555" and lines[1] == "0,1,0.375249116,15555"
    assert "1 of 3 rows changed in their exact columns" in capsys.readouterr().err
    plotting.write_csv(frame.iloc[:2].assign(alpha=near[:2]), path)
    assert path.read_text().splitlines()[1] == f"0,1,{near[0]:.10g},15555"
    assert "columns or row count changed" in capsys.readouterr().err


def test_settle_leaves_exact_outputs_alone_and_gives_new_files_their_written_digits(tmp_path):
    """No declaration or an empty frame: the frame comes back as computed; no committed file: its declared values at
    their ten written digits; a bad noise is named."""
    frame, path = _committed_alpha(tmp_path)
    near = frame.assign(alpha=frame.alpha * (1 + 1e-7))
    assert output_noise.settle(near, tmp_path / "zheng2025" / "comparison.csv") is near      # exact output
    fresh = output_noise.settle(near, tmp_path / "zheng2025" / "other.csv", {"alpha": 1e-6})  # no file yet
    assert fresh.alpha.tolist() == [float(f"{v:.10g}") for v in near.alpha] != near.alpha.tolist()
    assert output_noise.settle(near.iloc[:0], path).empty
    assert output_noise.settle(near, path).alpha.tolist() == frame.alpha.tolist()
    assert near.alpha.tolist() != frame.alpha.tolist()                                  # the input is not changed
    with pytest.raises(ValueError, match="noise of 'alpha' must be a relative tolerance"):
        output_noise.settle(near, path, {"alpha": 1.5})


def test_declared_outputs_are_committed_with_their_columns():
    """Every declaration names a committed file of its paper and columns that file has (no stale entry), and its
    noise lies between float32's per-value scale and what a reader of the committed tables would notice."""
    for (key, name), cols in output_noise.DECLARED.items():
        path = paths.FIGURES / key / name
        assert path.exists(), f"{key}/{name} is declared but not committed"
        assert set(cols) <= set(pd.read_csv(path, nrows=0).columns), f"{key}/{name}: {set(cols)}"
        assert all(1e-7 <= r <= 1e-4 for r in cols.values()), cols
        assert output_noise.declared(path) == cols
    assert output_noise.declared(paths.BUILD / "ci" / "figures" / "zheng2025" / "fig3_alpha_vs_topk.csv")
    assert not output_noise.declared(paths.FIGURES / "zheng2025" / "table1_optimal_gamma.csv")
    assert not output_noise.declared(paths.FIGURES / "li2026" / "fig3_alpha_vs_topk.csv")


def test_zheng2025_settles_its_float32_frames_where_they_are_computed():
    """The notebook settles α, pooled and per domain, before it draws or derives anything from them (Fig 3, Table II,
    Fig 4 and its bands, the comparison rows)."""
    nb = json.loads((paths.NOTEBOOKS / "zheng2025_tk_slt.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for name, first_use in (("fig3_alpha_vs_topk.csv", "alpha_vs_topk_figure(fig3"), ("fig4_speedup_vs_topk.csv", "fig4_figure("),
                            ("fig4_speedup_by_domain.csv", "fig4_figure(")):
        call = re.search(r"output_noise\.settle(_parts)?\((?:(?!output_noise\.settle).)*?out / \"" + re.escape(name) + r"\"\)", code, re.S)
        assert call, f"{name} is not settled in the notebook"
        assert call.end() < code.index(first_use), f"{name} is settled after {first_use!r} uses it"


# ------------------------------------------------------------------ float64 ulps of derived tables
class _Costs:
    """The relative costs L(K) of the committed Fig 4, per scenario, nudged like the α's."""

    def __init__(self, fig4: pd.DataFrame, ulps: int):
        self.L = {(s, int(k)): float(nudge(v, ulps)) for s, k, v in fig4[["scenario", "K", "L"]].itertuples(index=False)}
        self.vocab = int(fig4.K.max())

    def measured(self, k):
        return self.L["measured here", int(k)]

    def paper(self, k):
        return self.L["paper costs", self.vocab if k == tkslt.PAPER_VOCAB else int(k)]


@pytest.mark.parametrize("ulps", [-3, -1, 1, 3])
def test_zheng2025_fig4_bytes_do_not_move_with_ulps(tmp_path, ulps):
    """Fig 4's S* = S(γ*) from the committed α(K) and L(K): the same CSV bytes with every input a few ulps
    off. (Writing 17 significant digits instead of ``write_csv``'s 10 makes this fail.)"""
    fig3 = pd.read_csv(paths.FIGURES / "zheng2025" / "fig3_alpha_vs_topk.csv")
    fig4 = pd.read_csv(paths.FIGURES / "zheng2025" / "fig4_speedup_vs_topk.csv").query("pair == 'zoo'")
    scenarios = lambda c: {"measured here": c.measured, "paper costs": lambda k: c.paper(tkslt.PAPER_VOCAB if k == c.vocab else k)}
    base = tkslt.fig4_frame(fig3, scenarios(_Costs(fig4, 0)))
    noisy = tkslt.fig4_frame(fig3.assign(alpha=nudge(fig3.alpha, ulps)), scenarios(_Costs(fig4, ulps)))
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
