"""The arena's results over seeds (``notebooks/edge_sd_arena.ipynb``): the regime map, which technique
matters where, the ablation, the Pareto front and the sentences of docs/arena.md (written there by
``tools/arena_readme.py``) — all from the rows of
``experiments.edge_sd_arena.runs.run_point`` (one per combination, point and seed), every comparison paired by seed with
``claims.mean_interval``'s 95 % interval. Kept apart from ``runs`` so that an edit here keeps the sweep cache."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ... import claims, paths
from ...serving.analysis import twin_error
from .runs import AR_EDGE, CENTRALIZED, METRICS, REFERENCES, TECHNIQUES, Combination, from_label

POINT = ["bandwidth_bps", "devices", "mix"]


def _seeds(g: pd.DataFrame, metric: str) -> pd.Series:
    return g.set_index("seed")[metric].sort_index()


def _paired(a: pd.Series, b: pd.Series, sign: int) -> tuple[float, float, float, str]:
    """Mean difference sign*(a - b) over common seeds, its 95 % interval and the verdict (claims' intervals)."""
    a, b = a.align(b, join="inner")
    d = sign * (a - b)
    if len(d) < 2 or d.isna().any():
        return float(d.mean()) if len(d) else np.nan, np.nan, np.nan, "no interval"
    m, lo, hi = claims.mean_interval(d)
    return m, lo, hi, ("wins" if lo > 0 else "loses" if hi < 0 else "tie")


# the twin's validated error (``serving.analysis.twin_error``): per arena metric, the metric of the validation tables
VALIDATED = {"goodput_tok_s": "goodput_tok_s", "slo_attainment": "slo_attainment", "round_time": "round_time_s"}
VALIDATION = twin_error.VALIDATION
# the arena's twin draws acceptance from the traces of the domain, i.i.d. per round (``twin.TraceAcceptance``), and
# runs both settings' batch formers (synchronous rounds: GOODSPEED's setting; FCFS and WISP: WISP's): its margins
# are judged against that stochastic twin's validated error, the larger of the two settings'
TWIN = twin_error.DOMAIN_IID
SETTINGS = tuple(twin_error.SETTINGS)


def stochastic_error_pct(metric: str, files=None, twin: str = TWIN) -> float:
    """The stochastic twin's validated error (%) at p50 of ``metric``: the largest |twin - real| over the held-out
    real runs of both settings (``twin_error.margin_error`` of the twin kind the arena runs, ``TWIN``: SLO attainment
    on the runs whose classes bind, the committed runs' never do), the larger of the settings that measure it; NaN for
    a metric the validation does not compare (e.g. Jain's). ``files``: {setting: stochastic_vs_real.csv}."""
    if metric not in VALIDATED:
        return np.nan
    files = twin_error.SETTINGS if files is None else files
    errs = [e for e in (twin_error.margin_error(VALIDATED[metric], s, twin, files=files)[0] for s in files) if e == e]
    return max(errs) if errs else np.nan


def twin_error_pct(metric: str, files=None, twin: str = TWIN) -> float:
    """The error a margin in ``metric`` is judged against (``stochastic_error_pct``)."""
    return stochastic_error_pct(metric, files, twin)


def replay_error_pct(metric: str, files=VALIDATION) -> float:
    """The replay's error (%) at p50 of ``metric`` against the real runs (``twin_error.largest_pct`` over the
    committed twin-vs-real tables: the real runs' own outcomes and times replayed; only for a replay's rows)."""
    return twin_error.largest_pct(VALIDATED[metric], files) if metric in VALIDATED else np.nan


def _slug(name: str) -> str:
    return name.lower().replace(" ", "_")


def regime_map(rows: pd.DataFrame, metrics_=("goodput_tok_s", "slo_attainment", "jain"), beside=(AR_EDGE,)) -> pd.DataFrame:
    """Per sweep point and metric: among the twin's systems (every edge combination and centralized serving; the
    ``beside`` systems are not candidates) the combination with the best mean over seeds, the runner-up, the
    winner's margin (paired by seed, 95 % interval; ``verdict`` "wins" when it clears 0, else "tie"; ``n_best``
    combinations share the best mean exactly, e.g. full SLO attainment, and then ``winner`` is only the first by
    name), and whether the margin exceeds the twin's validated error on that metric (``twin_error_pct``; NaN: not
    validated). AR on the edge stands beside the map (``<name>_mean``, ``<name>_vs_winner_pct``: its mean and
    its difference from the winner's in % of it): its runtime is derived, not the twin's, so no validated error
    can judge a margin of it."""
    out = []
    for key, g in rows.groupby(POINT, sort=True):
        for metric in metrics_:
            sign = METRICS[metric]
            apart = g[g.combination.isin(beside)].groupby("combination")[metric].mean()
            g = g[~g.combination.isin(beside)]
            means = g.groupby("combination")[metric].mean().dropna().sort_values(ascending=sign < 0)
            if len(means) < 2:
                continue
            best, second = means.index[0], means.index[1]
            a, b = _seeds(g[g.combination == best], metric), _seeds(g[g.combination == second], metric)
            m, lo, hi, verdict = _paired(a, b, sign)
            out.append(dict(zip(POINT, key), metric=metric, winner=best, winner_mean=means.iloc[0],
                            n_best=int((means == means.iloc[0]).sum()), runner_up=second,
                            runner_up_mean=means.iloc[1], margin=m, margin_low=lo, margin_high=hi,
                            margin_pct=100 * m / abs(means.iloc[1]) if means.iloc[1] else np.nan, verdict=verdict,
                            **{k: v for name in beside for k, v in (
                                (f"{_slug(name)}_mean", apart.get(name, np.nan)),
                                (f"{_slug(name)}_vs_winner_pct", 100 * (apart.get(name, np.nan) - means.iloc[0]) / abs(means.iloc[0])
                                 if means.iloc[0] else np.nan))}))
    out = pd.DataFrame(out)
    if len(out):   # a margin below the twin's own validated error is not a model-robust win, whatever the seeds say
        err = out.metric.map({m: twin_error_pct(m) for m in out.metric.unique()})
        out["twin_error_pct"], out["beyond_twin_error"] = err, out.margin_pct.abs() > err
    return out


def ablation(rows: pd.DataFrame, point: tuple, best: str | None = None, metric: str = "goodput_tok_s",
             extra=("goodspeed-slo",), metrics_=("goodput_tok_s", "goodput_min_tok_s", "jain", "slo_attainment", "goodput_slo_rps",
                                                 "ttft_s", "tpot_s", "tokens_per_pass", "uplink_bytes_per_token")) -> pd.DataFrame:
    """At one sweep ``point`` (bandwidth, devices, mix): the best edge combination by ``metric`` (or ``best``),
    then each technique switched off (to its first option; when the best has it off already, its best other
    option switched on), each ``extra`` draft policy in its place, everything off and both reference systems
    (centralized, AR on the edge); per metric the mean over seeds and the change against the best, paired by seed."""
    g = rows[(rows.bandwidth_bps == point[0]) & (rows.devices == point[1]) & (rows.mix == point[2])]
    edge = g[~g.combination.isin(REFERENCES)]
    best = best or edge.groupby("combination")[metric].mean().idxmax()
    top, means = from_label(best), edge.groupby("combination")[metric].mean()
    variants = [("best", top)]
    for t, options in TECHNIQUES.items():
        if getattr(top, t) != options[0]:
            variants.append((f"{t} off ({options[0]})", top.switched_off(t)))
        else:   # the best has it off already: its best option turned on instead
            on = [dataclasses.replace(top, **{t: o}) for o in options[1:] if o not in extra]
            on = max((c for c in on if c.label in means.index), key=lambda c: means[c.label], default=None)
            variants += [(f"{t} on ({getattr(on, t)})", on)] if on is not None else []
    variants += [(f"draft = {d}", dataclasses.replace(top, draft=d)) for d in extra]
    variants += [("all off", Combination())] + [(f"reference: {r}", Combination(system=r)) for r in REFERENCES]
    out = []
    for name, combo in variants:
        h = g[g.combination == combo.label]
        if h.empty:
            continue
        row = dict(zip(POINT, point), variant=name, combination=combo.label)
        for m in metrics_:
            row[m] = float(h[m].mean())
            d, lo, hi, _ = _paired(_seeds(h, m), _seeds(g[g.combination == best], m), 1)
            row[f"{m}_change"], row[f"{m}_change_low"], row[f"{m}_change_high"] = d, lo, hi
        out.append(row)
    return pd.DataFrame(out)


def technique_map(rows: pd.DataFrame, metric: str = "goodput_tok_s") -> pd.DataFrame:
    """Which technique matters where: at every sweep point and for each technique, the best edge combination
    (by mean ``metric``) with the technique on (any option but the first of ``TECHNIQUES``) against the best
    with it off; ``change_pct`` = on - off in % of off, its 95 % interval paired by seed (> 0: it helps)."""
    out = []
    edge = rows[~rows.combination.isin(REFERENCES)]
    for key, g in edge.groupby(POINT, sort=True):
        means = g.groupby("combination")[metric].mean()
        for tech, options in TECHNIQUES.items():
            option = means.index.map(lambda c: getattr(from_label(c), tech))
            on, off = means[option != options[0]], means[option == options[0]]
            if on.empty or off.empty:
                continue
            best_on, best_off = on.idxmax(), off.idxmax()
            d, lo, hi, verdict = _paired(_seeds(g[g.combination == best_on], metric), _seeds(g[g.combination == best_off], metric), 1)
            scale = 100 / off[best_off] if off[best_off] else np.nan
            out.append(dict(zip(POINT, key), technique=tech, on=best_on, on_option=getattr(from_label(best_on), tech),
                            on_value=on[best_on], off=best_off, off_value=off[best_off], change_pct=d * scale,
                            change_low_pct=lo * scale, change_high_pct=hi * scale, verdict=verdict))
    return pd.DataFrame(out)


def pareto(rows: pd.DataFrame, point: tuple, objectives=("goodput_tok_s", "jain", "slo_attainment")) -> pd.DataFrame:
    """Mean per combination at ``point``, all objectives maximised. ``front``: no other *edge* combination is at
    least as good on every objective and better on one (the reference systems are not candidates: centralized
    serving dominates every edge combination where the server is not yet loaded); ``front_2d`` the same on the
    first two objectives alone; ``front_with_references`` the front with both references among the candidates.
    A combination with an undecided objective (NaN: no response decided) is on no front."""
    g = rows[(rows.bandwidth_bps == point[0]) & (rows.devices == point[1]) & (rows.mix == point[2])]
    m = g.groupby("combination")[list(objectives)].mean().reset_index()
    edge = (~m.combination.isin(REFERENCES)).to_numpy()

    def front(cols, candidates):
        v = m[list(cols)].to_numpy(float)
        ok = ~np.isnan(v).any(axis=1) & candidates
        return [bool(ok[i]) and not any(ok[j] and (v[j] >= v[i]).all() and (v[j] > v[i]).any() for j in range(len(v)) if j != i)
                for i in range(len(v))]
    m["front"], m["front_2d"] = front(objectives, edge), front(objectives[:2], edge)
    m["front_with_references"] = front(objectives, np.ones(len(m), bool))
    return m.sort_values(list(objectives[:1]), ascending=False).reset_index(drop=True)


# --------------------------------------------------------------------------- the sentences of docs/arena.md's results block
FIGURES = paths.FIGURES / "edge_sd_arena"


def _mbps(b: float) -> str:
    return f"{b / 1e6:g} Mbit/s"


def _range(t: pd.DataFrame) -> str:
    lo, hi = t.change_pct.min(), t.change_pct.max()
    return f"{lo:+.0f} %" if round(lo) == round(hi) else f"{lo:+.0f} to {hi:+.0f} %"


def _helps(t: pd.DataFrame) -> str:
    loses = (t.verdict == "loses").sum()
    return (f"a gain beyond the seeds' 95 % interval at {(t.verdict == 'wins').sum()}"
            + (f", a loss beyond it at {loses}" if loses else "") + f" of {len(t)} points")


def readme_sentences(tmap: pd.DataFrame, regime: pd.DataFrame, cap: pd.DataFrame | None = None) -> list[str]:
    """The results block's sentences, each number computed from ``technique_map``, ``regime_map`` and (with ``cap``)
    ``capacity.capacity_table`` rows: the payload's gain by bandwidth, the former's by device mix and
    the draft policy's, who wins where, and the capacity of each combination searched."""
    pay, former, draft = (tmap[tmap.technique == t] for t in ("payload", "former", "draft"))
    bws = sorted(pay.bandwidth_bps.unique())
    s1 = (f"On per-device goodput, sending token ids or top-K rows instead of dense distributions gains "
          f"{_range(pay[pay.bandwidth_bps == bws[0]])} at {_mbps(bws[0])} and {_range(pay[pay.bandwidth_bps == bws[-1]])} at "
          f"{_mbps(bws[-1])} ({_helps(pay)}).")
    mixes = sorted(former.mix.unique())
    by_mix = " and ".join(f"{_range(former[former.mix == m])} with the {m} fleet" for m in mixes)
    s2 = (f"An asynchronous batch former (FCFS or WISP's) instead of synchronous rounds gains {by_mix} ({_helps(former)}), "
          f"while the best adaptive draft length (GOODSPEED, WISP's stop rule or AS²) against a fixed γ gains {_range(draft)} "
          f"({_helps(draft)}).")
    gp = regime[regime.metric == "goodput_tok_s"]
    every = gp.bandwidth_bps.nunique()

    def where(rows):
        parts = []
        for mix, g in rows.groupby("mix"):
            full = [n for n, h in g.groupby("devices") if len(h) == every]
            nums = ", ".join(map(str, full[:-1])) + (" and " if len(full) > 1 else "") + str(full[-1]) if full else ""
            parts += [f"the {mix} fleet of {nums} devices at every bandwidth"] if full else []
            parts += [f"{n} {mix} devices at {', '.join(map(_mbps, h.bandwidth_bps))}" for n, h in g.groupby("devices") if n not in full]
        return (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else (parts[0] if parts else "no point")
    cen, edge = gp[gp.winner == CENTRALIZED], gp[~gp.winner.isin(REFERENCES)]
    robust = gp[(gp.verdict == "wins") & gp.beyond_twin_error]
    slo = regime[regime.metric == "slo_attainment"]
    ar = gp[f"{_slug(AR_EDGE)}_vs_winner_pct"]
    s3 = (f"The centralized reference has the highest goodput per device with {where(cen)}, an edge combination "
          f"({edge.winner.value_counts().index[0] if len(edge) else '–'} most often) with {where(edge)}; {len(robust)} of the "
          f"{len(gp)} winning margins exceed both the seeds' interval and the twin's validated {gp.twin_error_pct.iloc[0]:.1f} % "
          f"goodput error ({', '.join(sorted(robust.winner.unique())) or 'none'}); on SLO attainment the seeds resolve a "
          f"best combination at {(slo.verdict == 'wins').sum()} of {len(slo)} points "
          f"({', '.join(sorted(slo[slo.verdict == 'wins'].winner.unique())) or 'none'}), elsewhere the leaders tie "
          f"(at full attainment at {(slo.winner_mean == 1).sum()} points). AR on the edge (the server's target alone on each "
          f"device, a derived memory-bound runtime, not the twin's) differs from that winner's goodput by {ar.min():+.0f} to "
          f"{ar.max():+.0f} % (above it at {(ar > 0).sum()} of {len(ar)} points).")
    if cap is None or cap.empty:
        return [s1, s2, s3]
    c = cap.iloc[0]
    each = ", ".join(f"{r.combination} {'≥ ' if r.censored else ''}{r.capacity}" for r in cap.sort_values("capacity", ascending=False).itertuples())
    s4 = (f"Capacity — the most {c.mix} devices served with at least {100 * c.attainment_level:.0f} % of responses within "
          f"their class, at {_mbps(c.bandwidth_bps)} (seeds pooled; ≥: the search's bound): {each}.")
    return [s1, s2, s3, s4]
