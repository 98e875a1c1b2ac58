"""One plotting style, means drawn with their confidence bands, and a save helper that writes reproducible files.

``save`` writes ``<stem>.png``, ``<stem>.pdf`` and the plotted data as ``<stem>.csv``. Metadata that
changes between runs (creation dates, software versions) is stripped and fonts are embedded as TrueType
subsets, so rerunning a notebook with the same seed gives identical bytes and ``git status`` stays clean.
``write_csv`` writes ten significant digits and keeps the committed text of a value whose declared noise
covers its change (``output_noise``: float32 model outputs differ in their last digits between vendors' kernels).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from . import output_noise

PALETTE = "colorblind"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")   # one per line of a figure, in order
_PNG_META = {"Software": None}
_PDF_META = {"Creator": None, "Producer": None, "CreationDate": None, "ModDate": None}


def set_style(context: str = "notebook") -> None:
    """The repository's one seaborn style (call once per notebook)."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": 150,
        "savefig.bbox": "tight",
        "pdf.fonttype": 42,       # embed TrueType: editable text in the PDF
        "svg.hashsalt": "specedge",
        "axes.titlesize": "medium",
    })


def band_plot(ax, summary: pd.DataFrame, x: str, hue: str, order=None, label=None, colors=None, **kw):
    """Means as lines with markers and their confidence band, one line per ``hue`` value: ``summary`` has the
    columns of ``claims.mean_intervals`` (mean, ci_low, ci_high) beside ``x`` and ``hue``."""
    names = list(order) if order is not None else list(summary[hue].unique())
    for k, name in enumerate(names):
        d = summary[summary[hue] == name].sort_values(x)
        if colors is not None:
            kw["color"] = colors[k]
        line, = ax.plot(d[x], d["mean"], marker=MARKERS[k % len(MARKERS)], markersize=4,
                        label=label(name) if label else name, **kw)
        ax.fill_between(d[x], d["ci_low"], d["ci_high"], color=line.get_color(), alpha=0.2, linewidth=0)
    return ax


def ecdf_plot(samples, xlabel: str, title: str = "", figsize=(7, 3.6), symlog_linthresh: float | None = None):
    """The empirical CDF of each sample of ``samples`` (label -> values) as a step line, share of values on y;
    ``symlog_linthresh``: a symlog x axis, linear below that threshold. Returns the figure."""
    fig, ax = plt.subplots(figsize=figsize)
    for label, values in samples.items():
        x = np.sort(np.asarray(values, float))
        ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=label)
    ax.set(xlabel=xlabel, ylabel="Share of instances (ECDF)", title=title)
    if symlog_linthresh is not None:
        ax.set_xscale("symlog", linthresh=symlog_linthresh)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    """CSV with a fixed float format so reruns give identical bytes across platforms; a value with declared noise
    (``output_noise.DECLARED``) keeps its committed text while it moved within that noise (``output_noise.settle``)."""
    path = Path(path)
    df = output_noise.settle(df, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False, float_format=output_noise.FLOAT_FORMAT, lineterminator="\n")
    return path


def save(fig: plt.Figure, data: pd.DataFrame, outdir: Path, stem: str, close: bool = False) -> Path:
    """Write ``stem``.png/.pdf and the figure's data as ``stem``.csv into ``outdir``; return the PNG path.

    The figure must be drawn from the values ``write_csv`` keeps: data whose declared noise would settle to other
    (committed) values is refused, naming the file, before anything is written (``output_noise.settle`` the frame
    where it is computed)."""
    outdir = Path(outdir)
    csv = outdir / f"{stem}.csv"
    output_noise.check_settled(data, csv)
    outdir.mkdir(parents=True, exist_ok=True)
    png = outdir / f"{stem}.png"
    fig.savefig(png, metadata=_PNG_META)
    fig.savefig(outdir / f"{stem}.pdf", metadata=_PDF_META)
    write_csv(data, csv)
    if close:
        plt.close(fig)
    return png
