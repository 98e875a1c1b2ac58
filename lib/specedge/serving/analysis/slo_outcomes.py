"""The SLO outcomes of serving logs, real or the twin's, per class: what WISP's verdicts are made of.

- ``by_class``: per SLO class (and over all of them, ``ALL``) the verified rounds, the share slower than their class
  (eq 4's speed, ``slo.violations``) and the share whose pass ended after the server's deadline (eq 12,
  ``metrics.deadline_attribution``'s rule), several logs (a twin's seeds) pooled; and the complete responses and the
  share slower than their class (Sec 5.3's violation: tokens over the response's summed round times,
  ``metrics.responses``), the rate WISP's Table 1 and Fig 7 count;
- ``twin_error``: a twin's worst |difference| from the real runs in a class's violation rate, per run and round, or
  per response over each policy and N's runs pooled (a run holds a few responses of a class);
- ``policy_gap``: one policy's rates minus another's, per run of the same setting, N and repeat, on each side;
- ``gap_summary``: per N, the real runs' gap (mean and range over the repeats) beside each twin's and its error.

Rates are in % of rounds; differences between rates in percentage points.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from .. import slo
from ..log import verified
from ..timegrid import ns
from .metrics import responses as _responses

ALL = "all"        # the class of the rows that pool every class (classes are named by their speed, as text: "8", ...)
RATES = ("violation_pct", "deadline_miss_pct")


def by_class(logs: list[pd.DataFrame], max_new_tokens: int | None = None) -> pd.DataFrame:
    """Per SLO class of the pooled ``logs`` (every verified round must have one) and over all (``ALL``): rounds,
    ``violation_pct`` (eq 4: the round's speed below its class) and ``deadline_miss_pct`` (eq 12: its pass ended
    after its deadline; NaN where no round has a deadline); with ``max_new_tokens`` (tokens per response) also the
    complete ``responses``, those slower than their class (``response_violations``) and their share
    (``response_violation_pct``, NaN where none is complete)."""
    if not logs:
        raise ValueError("logs: need at least one log")
    r = pd.concat([verified(lg) for lg in logs], ignore_index=True)
    if r.empty:
        raise ValueError("logs: no verified rounds")
    late = slo.violations(r)
    dl = pd.to_numeric(r["deadline"], errors="coerce").to_numpy(float)
    has = np.isfinite(dl)
    miss = np.where(has, ns(r["end"].to_numpy(float)) > ns(np.where(has, dl, 0.0)), False)
    cls = pd.to_numeric(r["slo_class"]).to_numpy(float)
    if max_new_tokens is not None:
        resp = pd.concat([_responses(lg, max_new_tokens, np.inf) for lg in logs], ignore_index=True)
        resp = resp[resp["complete"]]
        rcls = pd.to_numeric(resp["slo_class"]).to_numpy(float)
        rlate = slo.slower(resp["tokens"], resp["seconds"], rcls)
    rows = []
    for c in [*np.unique(cls), ALL]:
        m = np.ones(len(r), bool) if c == ALL else cls == c
        d = has & m
        row = dict(slo_class=c if c == ALL else f"{c:g}", rounds=int(m.sum()), violation_pct=100 * float(late[m].mean()),
                   deadline_miss_pct=100 * float(miss[d].mean()) if d.any() else np.nan)
        if max_new_tokens is not None:
            k = np.ones(len(resp), bool) if c == ALL else rcls == c
            row.update(responses=int(k.sum()), response_violations=int(rlate[k].sum()),
                       response_violation_pct=100 * float(rlate[k].mean()) if k.any() else np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def run_errors(outcomes: pd.DataFrame, twin: str, real: str = "real") -> pd.Series:
    """Per class of ``outcomes`` (``by_class`` rows with policy, n_clients, repeat and side; ``ALL`` included): the
    worst |``twin`` - real| of its rounds' violation rate over the runs (percentage points); empty where the twin has
    no rows."""
    ids = ["policy", "n_clients", "repeat", "slo_class"]
    d = outcomes[outcomes["side"] == twin].merge(outcomes[outcomes["side"] == real], on=ids, suffixes=("", "_real"))
    return (d["violation_pct"] - d["violation_pct_real"]).abs().groupby(d["slo_class"]).max()


def twin_error(outcomes: pd.DataFrame, twin: str, level: str = "round", real: str = "real") -> float:
    """The worst |``twin`` - real| (percentage points) of a class's violation rate in ``outcomes`` (``by_class`` rows
    with paper, policy, n_clients, repeat and side), over the classes (not ``ALL``): per run of its rounds
    (``level`` "round", ``run_errors``), or per policy and N of its responses, each side's runs pooled ("response");
    NaN where the twin has no rows."""
    t = outcomes[outcomes["slo_class"] != ALL]
    if level == "round":
        e = run_errors(t, twin, real)
        return float(e.max()) if len(e) else np.nan
    if level != "response":
        raise ValueError(f"level: expected 'round' or 'response', got {level!r}")
    cells = t.groupby(["side", "policy", "n_clients", "slo_class"])[["responses", "response_violations"]].sum()
    rate = 100 * cells["response_violations"] / cells["responses"].where(cells["responses"] > 0)
    if twin not in rate.index.get_level_values("side"):
        return np.nan
    return float((rate.xs(twin, level="side") - rate.xs(real, level="side")).abs().max())


def policy_gap(table: pd.DataFrame, policy: str, baseline: str, by=("paper", "n_clients", "repeat", "side")) -> pd.DataFrame:
    """``policy``'s rates minus ``baseline``'s (percentage points) per class and group of ``by`` of a table of
    ``by_class`` rows with a ``policy`` column; a group without both policies is left out."""
    keys = [*by, "slo_class"]
    a = table[table["policy"] == policy].set_index(keys)[list(RATES)]
    b = table[table["policy"] == baseline].set_index(keys)[list(RATES)]
    if a.index.duplicated().any() or b.index.duplicated().any():
        raise ValueError(f"table: more than one row per {keys} and policy")
    gap = (a - b).dropna(how="all")
    return gap.reset_index().rename(columns={r: f"{r}_gap" for r in RATES})


def gap_summary(gaps: pd.DataFrame, real: str = "real", rate: str = "violation_pct") -> pd.DataFrame:
    """Per setting, N, class and twin side (every side but ``real``): the real runs' gap of ``rate`` (mean, min and max
    over the repeats), the twin's (mean) and the twin's error (its mean minus the real mean; and the worst
    |difference| over the repeats, run by run), in percentage points."""
    col = f"{rate}_gap"
    keys = ["paper", "n_clients", "slo_class"]
    r = gaps[gaps["side"] == real].set_index([*keys, "repeat"])[col]
    rows = []
    for side, g in gaps[gaps["side"] != real].groupby("side", sort=False):
        t = g.set_index([*keys, "repeat"])[col]
        both = pd.concat([r.rename("real"), t.rename("twin")], axis=1, join="inner")
        for k, v in both.groupby(level=keys, sort=True):
            rows.append(dict(zip(keys, k), side=side, repeats=len(v), real_mean=float(v["real"].mean()),
                             real_min=float(v["real"].min()), real_max=float(v["real"].max()),
                             twin_mean=float(v["twin"].mean()), error=float(v["twin"].mean() - v["real"].mean()),
                             worst_run_error=float((v["twin"] - v["real"]).abs().max())))
    return pd.DataFrame(rows)


def figure(outcomes: pd.DataFrame, labels: dict | None = None, real: str = "real"):
    """Violation rate (% of rounds) per class against N: each real run (black points) and each twin (the mean over the
    runs of its side, named by ``labels``), one panel per policy and class."""
    import matplotlib.lines as mlines

    d = outcomes[outcomes["slo_class"] != ALL]
    d = d.assign(side=d["side"].map(lambda s: (labels or {}).get(s, s)))
    order = sorted(set(d["slo_class"]), key=float, reverse=True)
    g = sns.relplot(data=d[d["side"] != real], x="n_clients", y="violation_pct", hue="side", row="policy", col="slo_class",
                    col_order=order, kind="line", marker="o", errorbar=None, height=2.4, aspect=1.2)
    for (pol, cls), ax in g.axes_dict.items():
        r = d[(d["side"] == real) & (d["policy"] == pol) & (d["slo_class"] == cls)]
        ax.scatter(r["n_clients"], r["violation_pct"], color="black", s=10, zorder=3)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(d["n_clients"])), [str(n) for n in sorted(set(d["n_clients"]))])
    g.set_titles(row_template="{row_name}", col_template="{col_name} tok/s")
    g.set_axis_labels("clients N", "violation rate (%)")
    handles = [*g.legend.legend_handles, mlines.Line2D([], [], color="black", marker="o", ls="", ms=4)]
    names = [t.get_text() for t in g.legend.texts] + ["real runs (one per repeat)"]
    g.legend.remove()
    g.figure.legend(handles, names, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.02))
    g.figure.subplots_adjust(bottom=0.2)
    return g
