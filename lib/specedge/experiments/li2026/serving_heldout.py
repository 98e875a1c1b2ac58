"""Every held-out statement of li2026's abstract and Secs 5.2-5.4, as numbers for ``calibration.table``.

The calibration (``li2026.calibrate``) fits the open settings to Table 3; everything else the paper states is
held out. ``held_out`` gives each held-out statement over every class and target the paper states it for, as
quantity -> (paper, reproduced): the stated numbers (``li2026_serving_figures.stated_numbers``: Tables 1, 2, 6),
the abstract's "up to" capacity speedups (an infinite ratio, a baseline serving no device, is reproduced as
inf: an undefined error, a miss) and each claim per class / target as 1 (holds) against the paper's 1:

- Sec 5.2.1: WISP has the highest capacity (10 % margin over the runner-up), per target and class; its speedup
  over each baseline grows as the class tightens, per target and baseline (undefined if a ratio is);
- Sec 5.3: per class, the share of Fig 7's loads (where either system violates) at which WISP's violation rate
  is at or below FCFS's over the seeds (paired 95 % interval; a load where WISP decides no response, a stalled
  server, counts as not); WISP's knee at a larger N than FCFS's (undefined
  where neither has one); the largest gain in a tight class (6 or 8 tok/s); Fig 8: most missed deadlines
  compute-dominant (eq 21);
- Sec 5.4.1: the predictor's gain grows with N (Table 6).

``runner_up_candidates``: the next best candidates of a fit, whose held-out predictions show how much each
verdict depends on the fit. ``twin_columns``: each held-out row with the twin's validated error in WISP's setting
(``serving.analysis.twin_error``) of the metric it rests on, its margin and whether the margin lies beyond that error.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ... import claims
from ...serving.analysis import capacity, metrics, twin_error
from . import serving_runs as ex
from ...serving.scenario import Setting
from ..serving_validation import twin_verdicts
from .serving_figures import SETTING, knee_margin, stated_numbers, steps_pct

TAG = {"Qwen3-32B": "32b", "Qwen3-14B": "14b"}
BASES = ("SLED", "Centralized")


def _flag(holds) -> float:
    return math.nan if holds is None else float(bool(holds))


def capacity_claims(paper: dict, cap: pd.DataFrame, censored: pd.DataFrame, targets, margins: dict | None = None) -> dict:
    """Sec 5.2.1's and the abstract's capacity statements from Table 2 (``cap``: (target, system) x speed);
    ``margins`` (when given) gets each claim's margin (%): how far a capacity must move to change it."""
    out, margins = {}, {} if margins is None else margins
    ratios = {}
    for t in targets:
        for sp in ex.CLASSES:
            col = {s: (claims.AtLeast(cap.loc[(t, s), sp]) if censored.loc[(t, s), sp] else float(cap.loc[(t, s), sp]))
                   for s in ("SLED", "Centralized", "WISP")}
            runner = max(float(v) for k, v in col.items() if k != "WISP")
            q = f"Sec 5.2.1: WISP has the highest capacity, {t}, {sp} tok/s (1: holds)"
            out[q] = (1.0, _flag(claims.argmax_is(col, "WISP", margin=round(0.1 * runner, 1)).holds))
            margins[q] = twin_verdicts.flip_pct(float(col["WISP"]), [runner + round(0.1 * runner, 1)])
            for b in BASES:
                base = float(cap.loc[(t, b), sp])
                ratios[(t, b, sp)] = float(cap.loc[(t, "WISP"), sp]) / base if base > 0 else math.inf
        for b in BASES:
            got = [ratios[(t, b, sp)] for sp in ex.CLASSES]
            q = f"Sec 5.2.1: WISP speedup vs {b} grows as the class tightens, {t} (1: holds)"
            out[q] = (1.0, _flag(None if not all(map(math.isfinite, got)) else claims.strictly_increasing(got).holds))
            margins[q] = steps_pct(got)
    for b in BASES:
        out[f"Abstract: largest capacity speedup vs {b}, both targets, every class"] = (
            paper[f"abstract-capacity-{b.lower()}"], max(v for k, v in ratios.items() if k[1] == b))
    return out


def load_claims(raw7: pd.DataFrame, fig7: pd.DataFrame, epsilon: float, wisp: str = "WISP", margins: dict | None = None) -> dict:
    """Sec 5.3's statements from Fig 7's sweep (``raw7``: sweep rows with every seed, ``fig7``: pooled rates per
    system, devices, speed) for the system ``wisp`` (a reading of Algorithm 1) against FCFS; ``margins`` (when
    given) gets each knee claim's margin (%, devices; the violation-rate claims have none: NaN)."""
    out, margins = {}, {} if margins is None else margins
    v = metrics.per_class(raw7[raw7.system.isin([wisp, "FCFS"])], ["system", "devices", "seed"], ex.CLASSES).pivot_table(
        index=["devices", "speed", "seed"], columns="system", values="violation_rate", dropna=False)
    knee = capacity.knees(fig7[fig7.system.isin([wisp, "FCFS"])], epsilon)
    pooled = fig7.pivot_table(index=["speed", "devices"], columns="system", values="violation_rate", dropna=False)
    for sp in ex.CLASSES:
        flags = []
        for n, g in v.xs(sp, level="speed").groupby(level="devices"):
            if g.FCFS.isna().all():         # FCFS decided no response here either: nothing to compare
                continue
            if g[wisp].isna().any():        # no response decided (a stalled server): not at or below FCFS
                flags.append(False)
            elif (g[wisp] > 0).any() or (g.FCFS.fillna(0) > 0).any():
                flags.append(claims.interval_at_most(g[wisp].to_numpy(), g.FCFS.to_numpy()).holds)
        q = f"Sec 5.3: share of loads where {wisp} violates at most as FCFS, {sp} tok/s"
        out[q], margins[q] = (1.0, float(np.mean(flags)) if flags else math.nan), math.nan   # a violation rate's: none
        kw, kf = knee.loc[(wisp, sp)], knee.loc[("FCFS", sp)]
        q = f"Sec 5.3: {wisp}'s knee at a larger N than FCFS's, {sp} tok/s (1: holds)"
        out[q] = (1.0, math.nan if math.isinf(kw) and math.isinf(kf) else float(kw > kf))
        margins[q] = knee_margin(knee, [sp], wisp)
    gain = (pooled.FCFS - pooled[wisp]).groupby(level="speed").mean()
    q = f"Sec 5.3: {wisp}'s largest gain over FCFS in a tight class (6 or 8 tok/s) (1: holds)"
    out[q], margins[q] = (1.0, math.nan if gain.isna().all() else float(int(gain.idxmax()) in (6, 8))), math.nan
    return out


def held_out(paper: dict, table1: pd.DataFrame, cap: pd.DataFrame, censored: pd.DataFrame, t6: pd.DataFrame, targets,
             raw7: pd.DataFrame | None = None, fig7: pd.DataFrame | None = None, att: pd.DataFrame | None = None,
             epsilon: float = 0.05, margins: dict | None = None) -> dict:
    """Every held-out statement (module docstring) as quantity -> (paper, reproduced); Fig 7's and Fig 8's only
    when their runs are given. ``margins`` (when given) gets each claim's margin (%) for ``twin_columns``."""
    margins = {} if margins is None else margins
    out = stated_numbers(paper, table1, cap, t6)
    out |= capacity_claims(paper, cap, censored, targets, margins)
    if raw7 is not None:
        out |= load_claims(raw7, fig7, epsilon, margins=margins)
    if att is not None:
        share = float((att[att.violated].label == "compute-dominant").mean()) if att.violated.any() else math.nan
        q = "Sec 5.3: most missed deadlines compute-dominant, eq (21) (1: holds)"
        out[q], margins[q] = (1.0, _flag(None if math.isnan(share) else share > 0.5)), math.nan
    imp = [float(t6.loc[n, "improvement_pct"]) for n in (2, 4, 8, 16)]
    out["Sec 5.4.1: the predictor's gain grows with N (1: holds)"] = (1.0, _flag(claims.strictly_increasing(imp).holds))
    margins["Sec 5.4.1: the predictor's gain grows with N (1: holds)"] = steps_pct([1 + g / 100 for g in imp])
    return out


def twin_metric(quantity: str) -> str:
    """The metric a held-out quantity rests on, for ``twin_error.margin_error``: a violation rate (Table 1, Sec 5.3's
    loads and gains), a share of missed deadlines (Fig 8), goodput (Table 6, Sec 5.4.1) or a capacity (the rest:
    Table 2, Sec 5.2.1, the abstract's speedups, the knees)."""
    if "compute-dominant" in quantity:
        return "missed_deadline_share"
    if quantity.startswith("Table 1") or "share of loads" in quantity or "largest gain" in quantity:
        return "slo_violation_rate"
    if quantity.startswith(("Table 6", "Sec 5.4.1")):
        return "goodput_tok_s"
    return "capacity"


def twin_columns(record: pd.DataFrame, margins: dict, files=twin_error.SETTINGS) -> pd.DataFrame:
    """``record`` (``calibration.table``) with, on each held-out row, ``twin_metric``, ``twin_error_pct`` (the twin's
    validated error of that metric in WISP's setting, ``twin_error.margin_error``; NaN: unmeasured), ``margin_pct``
    (a claim's margin from ``margins``; a number's |relative error| in %, or for a violation rate its |difference| from
    the paper's in points), ``twin_error_unit`` (both columns' unit: ``twin_error.unit``) and ``beyond_twin_error``
    (the margin larger than the error; False where either is undefined: a verdict the twin's error leaves open)."""
    out = record.copy()
    held = out.role == "held-out"
    metric = out.setting.where(held).map(lambda q: twin_metric(q) if isinstance(q, str) else "")
    err = {m: twin_error.margin_error(m, SETTING, files=files)[0] for m in set(metric[held])}
    number = out.error_kind.isin(["relative", "absolute"]) & ~out.setting.map(margins.__contains__)
    points = metric.map(lambda m: twin_error.unit(m) == "points")
    margin = pd.Series([margins.get(q, np.nan) for q in out.setting], index=out.index, dtype=float)
    rel = (100 * pd.to_numeric(out.error, errors="coerce").abs()).where(out.error_kind == "relative")
    diff = (pd.to_numeric(out.reproduced, errors="coerce") - pd.to_numeric(out.paper, errors="coerce")).abs()
    margin = margin.where(~number, diff.where(points, rel))     # a stated number: in points for a rate, else in %
    out["twin_metric"] = metric.where(held, "")
    out["twin_error_pct"] = [err[m] if h else np.nan for m, h in zip(metric, held)]
    out["margin_pct"] = margin.where(held)
    out["twin_error_unit"] = [twin_error.unit(m) if h else "" for m, h in zip(metric, held)]
    out["beyond_twin_error"] = held & (out.margin_pct > out.twin_error_pct)
    return out


def runner_up_candidates(searched: pd.DataFrame, names, k: int = 2) -> list[dict]:
    """The ``k`` candidates after the best one of a fit's ``searched`` table (least loss first, the first on a tie),
    as {setting: value} plus their ``loss`` and ``rank`` (2, 3, ...)."""
    order = searched.reset_index(drop=True).sort_values("loss", kind="stable")
    kinds = {n: type(getattr(ex.SCENARIO.base, n)) for n in names}
    return [dict({n: kinds[n](r[n]) for n in names}, loss=float(r["loss"]), rank=i + 2)
            for i, (_, r) in enumerate(order.iloc[1:1 + k].iterrows())]


def as_wisp(cap: pd.DataFrame, system: str) -> pd.DataFrame:
    """Table 2 (``cap``: (target, system) x speed) with ``system``'s capacities in WISP's rows (a reading of
    Algorithm 1 judged by WISP's statements)."""
    c = cap.drop(index="WISP", level="system")
    w = cap.xs(system, level="system", drop_level=False).rename(index={system: "WISP"}, level="system")
    return pd.concat([c[~c.index.get_level_values("system").str.startswith("WISP-")], w]).sort_index()


def verdicts(paper: dict, cap: pd.DataFrame, censored: pd.DataFrame, targets, raw7: pd.DataFrame, fig7: pd.DataFrame,
             epsilon: float, systems) -> pd.DataFrame:
    """Per reading of Algorithm 1 (``systems``: WISP and its ``WISP-*`` readings): its value of every capacity and
    load claim (``capacity_claims``, ``load_claims``: 1 holds, 0 fails, a share for the load comparison, NaN
    undefined) and the abstract's largest speedups, one column per system."""
    cols = {}
    for s in systems:
        got = capacity_claims(paper, as_wisp(cap, s), as_wisp(censored, s), targets)
        got |= {k.replace(f"{s}'s", "WISP's").replace(f"where {s} ", "where WISP "): v
                for k, v in load_claims(raw7, fig7, epsilon, wisp=s).items()}
        cols[s] = {k: r for k, (_, r) in got.items()}
        cols.setdefault("paper", {k: p for k, (p, _) in got.items()})
    return pd.DataFrame(cols)[["paper", *systems]]


# --------------------------------------------------------------------------- the notebook's sections, as calls
def calibration_section(current: Setting, grid: dict, targets: dict, n3: int, seeds, run, out, k: int = 2):
    """The calibration (``li2026.calibrate`` over every seed, ranges extended until interior), its landscape
    (``calibration_search.csv`` and the ``calibration_landscape`` figure), its ``k`` runner-ups, and whether
    every seed alone picks the same candidate. Returns (fit, runner_ups, per_seed: seed column -> its best)."""
    from ... import plotting
    from .serving_figures import calibration_landscape

    fit = ex.calibrate(current, grid, targets, n3, seeds, run)
    plotting.write_csv(fit.searched, out / "calibration_search.csv")
    calibration_landscape(fit.searched, fit.values, out)
    names = list(fit.grid)
    per_seed = {c: {n: type(fit.values[n])(v) for n, v in fit.searched.loc[fit.searched[c].idxmin(), names].items()}
                for c in fit.searched if c.startswith("loss_seed")}
    return fit, runner_up_candidates(fit.searched, names, k), per_seed


def more_curves(readings, runner_ups, fit, systems, targets, setting: Setting, **one) -> list:
    """Table 2's searches beyond its own, one seed each (``one``: ``li2026.curves``' keywords): every reading of
    Algorithm 1 on both targets, every runner-up candidate's ``systems`` on the first target."""
    return ex.curves(readings, targets, ex.CLASSES, setting=setting, **one) + [
        c for r in runner_ups for c in ex.curves(systems, targets[:1], ex.CLASSES, setting=ex.SCENARIO.setting(
            setting, **{n: r[n] for n in fit.grid}), **one)]


def readings_section(setting: Setting, readings, loads, seeds, run, raw7, table2, more_rows, paper, targets,
                     epsilon: float, out):
    """§ Readings: Fig 7's sweep for every other reading (each seed, beside WISP's and FCFS's ``raw7``), its
    figure, Table 2 with the readings' capacities, and every reading's verdicts (``verdicts``). Returns
    (fig7_all, cap_all: capacities of WISP and the readings, verdicts)."""
    from ... import plotting
    from .serving_figures import fig7_readings

    raw = pd.concat([raw7, run([ex.SCENARIO.point(s, n, None, seed=k, setting=setting) for s in readings for n in loads
                                for k in seeds])], ignore_index=True)
    fig7_all = metrics.per_class(raw, ["system", "devices"], ex.CLASSES)
    fig7_readings(fig7_all, out)
    mine = more_rows[more_rows.system.isin(readings)]
    plotting.write_csv(mine.drop(columns="setting"), out / "table2_readings.csv")
    both = pd.concat([table2, mine])
    cap_all = both.pivot_table(index=["target", "system"], columns="speed", values="capacity")
    cens_all = both.pivot_table(index=["target", "system"], columns="speed", values="censored", aggfunc="any")
    v = verdicts(paper, cap_all, cens_all, targets, raw, fig7_all, epsilon, ["WISP", *readings])
    plotting.write_csv(v.rename_axis("statement").reset_index(), out / "readings_verdicts.csv")
    return fig7_all, cap_all.loc[(slice(None), ["WISP", *readings]), :], v


def runner_up_record(runner_ups, fit, setting: Setting, more_rows, paper, table1_n: int, n3: int, seeds, run,
                     target: str, epsilon: float) -> pd.DataFrame:
    """Each runner-up candidate's held-out predictions (``held_out`` of its Tables 1 and 6 with every seed and its
    Table 2 on ``target`` from ``more_rows``), as ``calibration.table``'s held-out rows with ``rank``, its settings
    and ``loss``."""
    from ...serving.timemodels import calibration
    from .serving_figures import current_tables

    rows = []
    for r in runner_ups:
        st = ex.SCENARIO.setting(setting, **{n: r[n] for n in fit.grid})
        t1, _, t6 = current_tables(st, table1_n, n3, seeds, run)
        mr = more_rows[[s == st for s in more_rows.setting]]
        cap = mr.pivot_table(index=["target", "system"], columns="speed", values="capacity")
        cens = mr.pivot_table(index=["target", "system"], columns="speed", values="censored", aggfunc="any")
        for q, (pv, rv) in held_out(paper, t1, cap, cens, t6, [target], epsilon=epsilon).items():
            rows.append(dict(rank=r["rank"], **{n: r[n] for n in fit.grid}, loss=r["loss"], setting=q, role="held-out",
                             paper=pv, reproduced=rv, error=calibration.error(pv, rv), error_kind=calibration.error_kind(pv)))
    return pd.DataFrame(rows)


def spread(record: pd.DataFrame, runner_ups: pd.DataFrame) -> pd.DataFrame:
    """Per table / section: the median |error| of the fit's held-out numbers and of each runner-up's (on the
    quantities the runner-ups were judged on), undefined errors counted as misses (``calibration.summary``)."""
    from ...serving.timemodels import calibration

    same = record[record.setting.isin(set(runner_ups.setting))]
    return pd.concat({"fit": calibration.summary(same).error,
                      **{f"runner-up {k}": calibration.summary(g).error for k, g in runner_ups.groupby("rank")}}, axis=1)


def conclusion(verdicts_: pd.DataFrame) -> pd.DataFrame:
    """Every claim of ``verdicts`` (1 holds, 0 fails, a share of loads, NaN undefined) in words per reading, and
    the readings under which it holds."""
    flag = lambda v: "undefined" if pd.isna(v) else ("holds" if v == 1 else "fails" if v == 0 else f"{v:.2f} of loads")
    c = verdicts_[verdicts_.index.str.contains("holds|share of loads")]
    systems = [s for s in c.columns if s != "paper"]
    out = c[systems].apply(lambda col: col.map(flag))
    out["holds under"] = [", ".join(s for s in systems if c.loc[q, s] == 1) or "none" for q in c.index]
    return out


def describe_fit(fit, per_seed: dict, runner_ups) -> str:
    """The calibration in words: the fit, whether its ranges bracket it, each seed's own best and the runner-ups."""
    same = all(v == fit.values for v in per_seed.values())
    return (f"{len(fit.searched)} candidates; fitted {fit.values}, loss {fit.loss:.4f}; interior: {fit.interior}; ranges "
            f"searched {fit.grid}\nbest candidate on each seed alone: {per_seed} -> "
            + ("identified by every seed" if same else "the seeds disagree: Table 3 does not identify the fit (see the "
               "runner-ups' held-out verdicts)") + f"\nrunner-ups: {runner_ups}")


def record_section(fit, t3: pd.Series, targets3: dict, held: dict, current_tables_: tuple, table2_cur: pd.DataFrame, paper: dict,
                   runner_ups, setting: Setting, more_rows, table1_n: int, n3: int, seeds, run, target: str, epsilon: float,
                   out, margins: dict | None = None):
    """``calibration.csv`` (``calibration.table``: the fit with Table 3 over every seed, the held-out statements
    ``held``, their values under the settings before the fit: ``current_tables_`` = its Tables 1, 3, 6 and
    ``table2_cur``; each with the twin's validated error, ``twin_columns`` of ``margins``, ``held_out``'s) and
    ``calibration_runner_ups.csv`` (``runner_up_record``). Returns (record, runner-up rows)."""
    import dataclasses

    from ... import plotting
    from ...serving.timemodels import calibration

    t1c, t3c, t6c = current_tables_
    cap_cur = table2_cur.pivot_table(index=["target", "system"], columns="speed", values="capacity")
    before = {q: r for q, (_, r) in stated_numbers(paper, t1c, cap_cur, t6c).items()}
    before |= {ex.T3.format(s): float(t3c[s]) for s in ex.TABLE3}
    fitted = dataclasses.replace(fit, reproduced={ex.T3.format(s): float(t3[s]) for s in ex.TABLE3})   # every seed
    record = twin_columns(calibration.table(fitted, fit.grid, targets3, held, before), margins or {})
    plotting.write_csv(record, out / "calibration.csv")
    ru = runner_up_record(runner_ups, fit, setting, more_rows, paper, table1_n, n3, seeds, run, target, epsilon)
    plotting.write_csv(ru, out / "calibration_runner_ups.csv")
    return record, ru


def reversals(verdicts_: pd.DataFrame, record: pd.DataFrame, mechanism: str = "") -> pd.DataFrame:
    """Every Sec 5.2.1 / 5.3 claim of ``verdicts`` (``verdicts``: 1 holds, 0 fails, a share, NaN undefined) with the
    readings of Algorithm 1 under which it holds, whether it fails under every one, the twin's validated error and
    the default reading's margin from ``record``'s held-out row (``twin_columns``), whether the default reading's
    verdict lies beyond that error, and for a claim the default reading fails, the measured ``mechanism``."""
    c = verdicts_[verdicts_.index.str.contains("holds|share of loads")]
    systems = [s for s in c.columns if s != "paper"]
    held = record.set_index("setting")
    rows = []
    for q, r in c.iterrows():
        under = [s for s in systems if r[s] == 1]
        twin = held.loc[q] if q in held.index else None
        fails = not r[systems[0]] == 1
        rows.append(dict(statement=q, paper=r["paper"], **{s: r[s] for s in systems}, holds_under=", ".join(under) or "none",
                         fails_under_every_reading=not under,
                         twin_metric=twin.twin_metric if twin is not None else "",
                         twin_error_pct=twin.twin_error_pct if twin is not None else np.nan,
                         margin_pct=twin.margin_pct if twin is not None else np.nan,
                         twin_error_unit=twin.get("twin_error_unit", "") if twin is not None else "",
                         beyond_twin_error=bool(twin.beyond_twin_error) if twin is not None else False,
                         mechanism=mechanism if fails else ""))
    return pd.DataFrame(rows)


def _unit(r) -> str:
    """The unit of a ``reversals`` row's margin and error (% where the table predates the column)."""
    return str(r.get("twin_error_unit", "") or "%")


def conclusion_text(rev: pd.DataFrame) -> str:
    """``reversals`` in plain words: the claims that hold under some reading (which, and whether beyond the twin's
    error), those that fail under every reading, and those the twin's validated error leaves undecided."""
    fmt = lambda r: f"{r.statement} [{', '.join(f'{s} {r[s]:.2f}' for s in r.index if s.startswith('WISP'))}]"
    twin = lambda r: (f" — WISP's {'holds' if r['WISP'] == 1 else 'fails'}, "
                      + ("beyond the twin's error" if r.beyond_twin_error else "not beyond the twin's error")
                      + (f" ({r.margin_pct:.1f} {_unit(r)} against {r.twin_error_pct:.1f} {_unit(r)})"
                         if np.isfinite(r.twin_error_pct) and np.isfinite(r.margin_pct)
                         else " (its error unmeasured)" if not np.isfinite(r.twin_error_pct) else " (no margin to judge)"))
    held, failed = rev[~rev.fails_under_every_reading], rev[rev.fails_under_every_reading]
    beyond = rev[rev.beyond_twin_error]
    lines = [f"{len(rev)} claims of Secs 5.2.1 and 5.3; {len(held)} hold under at least one reading of Algorithm 1, "
             f"{len(failed)} under none; {len(beyond)} of the default reading's verdicts lie beyond the twin's validated error "
             "(the rest: a margin within it, no margin to judge, or an error unmeasured, so undecided)."]
    lines += [f"holds under {r.holds_under}: {fmt(r)}{twin(r)}" for _, r in held.iterrows()]
    lines += [f"fails under every reading: {fmt(r)}{twin(r)}" for _, r in failed.iterrows()]
    return "\n".join(lines)


def conclusion_section(verdicts_: pd.DataFrame, record: pd.DataFrame, mechanism: str, out) -> pd.DataFrame:
    """§ Conclusion: ``reversals`` written as ``reversals.csv`` and printed in words (``conclusion_text``); returns
    ``conclusion`` of ``verdicts_`` (each claim per reading in words)."""
    from ... import plotting

    rev = reversals(verdicts_, record, mechanism)
    plotting.write_csv(rev, out / "reversals.csv")
    print(conclusion_text(rev))
    return conclusion(verdicts_)
