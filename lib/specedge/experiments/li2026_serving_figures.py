"""WISP's serving-side notebook sections as calls (notebooks/li2026_wisp_serving.ipynb): the estimator's
diagnostics and each section's comparison rows. Every ``*_rows`` sets the paper's statements
(``coverage.paper_values("li2026_serving")``, by id in ``data/coverage/li2026_serving.yaml``) beside the
reproduced tables as rows for ``compare.Comparison.extend``; statuses come from ``claims`` predicates and
tolerances here, never typed. The twin runs themselves are ``experiments.li2026``'s (the real pair's:
``experiments.li2026_realpair``'s). A comparison of simulated systems is decided over seeds (``claims.interval_*``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

import matplotlib.pyplot as plt
import seaborn as sns

from .. import claims, compare, coverage, paths, plotting
from ..compare import unless_null_holds
from ..serving import metrics
from ..serving.verify_diagnostics import component_shares
from . import li2026 as ex
from . import li2026_realpair as rp

TARGETS = ("zoo", "widened")   # the two measured verification targets (data/li2026/*_{target}.csv)
HW = "the paper fits Qwen3-32B on an A100 with vLLM; ours is a 0.1 B bfloat16 Llama on 2 CPU cores, whose absolute times are other"
SEEDS = "paired 95 % intervals over seeds"   # how a comparison of simulated systems is decided (claims.interval_*)
_T7 = ("R2", "adj_R2", "RMSE_ms", "MAE_ms", "MAPE_pct", "max_error_ms")


def verify_profile(target: str) -> pd.DataFrame:
    return pd.read_csv(paths.DATA / "li2026" / f"verify_profile_{target}.csv")


def verify_profiles() -> dict[str, pd.DataFrame]:
    """The committed verification profiles, per measured target."""
    return {t: verify_profile(t) for t in TARGETS}


# --------------------------------------------------------------------------- Fig 4
def fig4(out) -> pd.DataFrame:
    """Fig 4 from the committed interference measurements (both targets), saved as ``fig4_interference``;
    returns seconds per (target, a_length) x case with B's inheritance and the batched / solo A ratio."""
    fig4 = pd.concat([pd.read_csv(paths.DATA / "li2026" / f"interference_{t}.csv") for t in TARGETS], ignore_index=True)
    g = sns.relplot(data=fig4, x="a_length", y="seconds", hue="case", col="target", kind="line", marker="o",
                    height=3.2, aspect=1.2, facet_kws=dict(sharey=False, sharex=False),
                    hue_order=["Solo A", "Solo B", "Batched A+B"])
    g.set_axis_labels("length of request A (new tokens)", "verification latency (s)")
    plotting.save(g.figure, fig4, out, "fig4_interference")
    w = fig4.pivot_table(index=["target", "a_length"], columns="case", values="seconds")
    w["B inherits (batched / solo B)"] = w["Batched A+B"] / w["Solo B"]
    w["batched / solo A"] = w["Batched A+B"] / w["Solo A"]
    return w


def fig4_rows(w: pd.DataFrame) -> list[dict]:
    """``w``: seconds per (target, a_length) x case. Per target: batched slower than either alone, Solo A
    grows with its length, Solo B nearly flat (its relative spread under a quarter of Solo A's)."""
    rows = []
    for t in TARGETS:
        wt = w.loc[t].sort_index()
        rows.append(dict(artifact="Fig 4", quantity=f"{t} target: batched A+B slower than either alone at every length of A", paper="yes",
                         claim=claims.all_of({f"L_A={l}": bool(r["Batched A+B"] > max(r["Solo A"], r["Solo B"])) for l, r in wt.iterrows()}),
                         # the null: batching costs nothing, the batch takes the longer of the two alone
                         null_claim=claims.all_of({f"L_A={l}": bool(max(r["Solo A"], r["Solo B"]) > max(r["Solo A"], r["Solo B"]))
                                                   for l, r in wt.iterrows()}),
                         strength="trend", statements="fig4-b-inherits", models="zoo", cause="hardware",
                         note="our verifier packs a batch into one row; its dense attention still computes B's queries against A's keys (masked), where vLLM's varlen kernels skip them" if t == "widened" else ""))
        rows.append(dict(artifact="Fig 4", quantity=f"{t} target: Solo A grows with its length", paper="increases",
                         claim=claims.strictly_increasing(wt["Solo A"].to_numpy()), strength="trend", statements="fig4-solo-a-grows",
                         null_claim=claims.strictly_increasing(np.full(len(wt), wt["Solo A"].mean())),   # the null: flat
                         models="zoo", cause="hardware"))
        spread = {c: float(wt[c].max() / wt[c].min() - 1) for c in ("Solo A", "Solo B")}
        rows.append(dict(artifact="Fig 4", quantity=f"{t} target: Solo B nearly flat (its max/min - 1 under a quarter of Solo A's)",
                         paper="nearly flat", strength="trend", statements="fig4-solo-b-flat",
                         claim=claims.all_of({f"Solo B {spread['Solo B']:.0%} < Solo A {spread['Solo A']:.0%} / 4":
                                              spread["Solo B"] < spread["Solo A"] / 4}, "flat_against_solo_a"),
                         # the null: Solo B grows as Solo A does
                         null_claim=claims.all_of({"Solo B as Solo A": spread["Solo A"] < spread["Solo A"] / 4}, "flat_against_solo_a"),
                         models="zoo", cause="hardware",
                         note="'nearly flat' read against Solo A's growth over the same lengths of A"))
    return rows


# --------------------------------------------------------------------------- the estimator (Tables 7, 12, Figs 9, 11)
def fig9_fig11(fits: dict, out) -> pd.DataFrame:
    """Fig 9 (predicted against measured batch latency, per target) and Fig 11 (absolute error by regime),
    saved; returns the test and train predictions with their absolute error (ms)."""
    pred = pd.concat([f.predictions.assign(target=t) for t, f in fits.items()], ignore_index=True)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, (t, g) in zip(axes, pred.groupby("target")):
        sns.scatterplot(data=g, x="measured", y="predicted", hue="split", style="regime", ax=ax, s=18)
        lim = [0, 1.05 * max(g.measured.max(), g.predicted.max())]
        ax.plot(lim, lim, "k--", lw=0.8, label="y = x")
        ax.set(xlim=lim, ylim=lim, title=f"{t} target", xlabel="measured batch latency (s)", ylabel="predicted (s)")
    plotting.save(fig, pred, out, "fig9_predicted_vs_measured")
    fig, ax = plt.subplots(figsize=(5, 3.4))
    pred["abs_error_ms"] = 1000 * (pred.predicted - pred.measured).abs()
    sns.boxplot(data=pred, x="regime", y="abs_error_ms", hue="target", ax=ax)
    ax.set(xlabel="regime", ylabel="absolute error (ms)")
    plotting.save(fig, pred[["target", "split", "regime", "measured", "predicted", "abs_error_ms"]], out, "fig11_error_by_regime")
    return pred


def low_r2_cause(diag: pd.DataFrame, rep: pd.DataFrame) -> str:
    """Why R² is low here (measured): the same batch timed in two measuring runs of the widened
    profile differs far more than the 3 repeats within a run; no added feature helps."""
    moved = diag.loc["widened", "test_R2"].drop("eq (19)") - diag.loc[("widened", "eq (19)"), "test_R2"]
    worst = rep.loc[(rep.slowest / rep.fastest).idxmax()]
    return (f"measured: one batch shape timed in two sessions took {worst.fastest:.3f} and {worst.slowest:.3f} s "
            f"({worst.slowest / worst.fastest:.2f}x) while the 3 runs of a session agree within {100 * rep.within_cv.max():.0f} %: "
            "session-to-session timing noise of the shared 2-core host, which no feature fits (adding the packed attention "
            f"products, the request count or N_linear^2 moves test R2 by {moved.min():+.3f} to {moved.max():+.3f}: "
            "estimator_packed_diagnostic.csv); "
            "not the packed dense attention")


def _r2_row(artifact, quantity, sid, ours: float, r2why: str, paper: dict, tol: float = 0.02) -> dict:
    """A goodness-of-fit row: the low-R² cause is its note when it lies outside the tolerance."""
    return dict(artifact=artifact, quantity=quantity, paper=paper[sid], reproduced=round(ours, 3), unit="", tolerance=tol,
                statements=sid, null=0.0, models="zoo", cause="hardware",   # the null: a constant predictor (R² 0)
                note="the null: a constant predictor, R² 0" + ("" if abs(ours - paper[sid]) <= tol else f"; {r2why}"))


def table7_rows(fits: dict, diag: pd.DataFrame, rep: pd.DataFrame, paper: dict, paper12: dict) -> list[dict]:
    """Table 7 (fit metrics, samples, CV), Table 12 (coefficients), the text's R² gap and test gain, Sec 4.4's
    first fit, the packed-products study (beyond the paper)."""
    ours, r2why = fits["widened"].metrics, low_r2_cause(diag, rep)
    rows = []
    for m in _T7:
        for split in ("train", "test"):
            sid, r = f"table7-{split}-{m}", float(ours.loc[split, m])
            if m in ("R2", "adj_R2"):
                rows.append(_r2_row("Table 7", f"{split} {m} (widened target, this CPU)", sid, r, r2why, paper))
            else:
                rows.append(dict(artifact="Table 7", quantity=f"{split} {m} (widened target, this CPU)", paper=paper[sid],
                                 reproduced=round(r, 2), status="not-reproducible", note=HW, cause="hardware", models="zoo",
                                 unit=m.rsplit("_", 1)[-1].replace("pct", "%"), statements=sid))
    for split in ("train", "test"):
        rows.append(dict(artifact="Table 7", quantity=f"{split} samples", paper=paper[f"table7-{split}-samples"], reproduced=int(ours.loc[split, "samples"]), unit="batches",
                         kind="setting", statements=f"table7-{split}-samples appc-design",
                         note="the size of Appendix C's design, chosen to match"))
    cv = fits["widened"].cv
    rows.append(_r2_row("Table 7", "5-fold CV R² mean (widened target)", "table7-cv-mean", cv["mean"], r2why, paper))
    rows.append(dict(artifact="Table 7", quantity="5-fold CV R² std (widened target)", paper=paper["table7-cv-std"],
                     reproduced=round(cv["std"], 3), status="not-reproducible", cause="hardware", models="zoo",
                     statements="table7-cv-std", note=f"the spread of a fit's R² over folds is this host's timing noise; {r2why}"))
    co = fits["widened"].coefficients
    for k in ("a", "b_compute", "b_read", "c"):
        for col, suffix in (("value", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
            rows.append(dict(artifact="Table 12", quantity=f"{k}{' ' + col if col != 'value' else ''} (widened target, this CPU)",
                             paper=paper12[k + suffix], reproduced=float(f"{co.loc[k, col]:.4g}"), status="not-reproducible",
                             cause="hardware", models="zoo",
                             statements=f"table12-{k}-{col.replace('_', '-')}",
                             note="eq (19)'s coefficients are hardware- and model-specific (A100 + Qwen3-32B there); the paper's own stay the li2026_paper profile, used by §3-§7"))
    rows.append(dict(artifact="Table 7", quantity="beyond the paper: adding this engine's packed attention products raises test R² (widened)",
                     paper="yes", strength="trend", statements="estimator-packed", models="zoo", cause="hardware",
                     claim=claims.above(float(diag.loc[("widened", "eq (19) + packed products"), "test_R2"] - diag.loc[("widened", "eq (19)"), "test_R2"]), 0.0),
                     null_claim=claims.above(0.0, 0.0), note=r2why))   # the null: the added feature changes nothing
    # the text beside Table 7 (Sec 5.5, Appendix C)
    r2 = {s: float(ours.loc[s, "R2"]) for s in ("train", "test")}
    rows.append(dict(artifact="Table 7", quantity="test R² above train R² (widened target)", paper="improves slightly", strength="trend",
                     claim=claims.above(r2["test"], r2["train"]), statements="table7-test-improves", models="zoo", cause="hardware",
                     null_claim=claims.above(r2["train"], r2["train"]),   # the null: test as train
                     note="a fit on 123 batches tested on 50 others; on this host the two sets were timed in different sessions"))
    gap_paper = abs(paper["table7-test-R2"] - paper["table7-train-R2"])
    rows.append(dict(artifact="Table 7", quantity=f"|train R² − test R²| below Appendix C's {paper['table7-r2-gap']} (paper: {gap_paper:.3f})",
                     paper=f"< {paper['table7-r2-gap']}", reproduced=round(abs(r2["train"] - r2["test"]), 3), strength="trend",
                     claim=claims.below(abs(r2["train"] - r2["test"]), paper["table7-r2-gap"]), statements="table7-r2-gap",
                     # the null: a fit that does not generalise (test R² 0), a gap of its train R²
                     null_claim=claims.below(abs(r2["train"]), paper["table7-r2-gap"]), models="zoo", cause="hardware", note=r2why))
    # Sec 4.4's first fit (n = 566): a second coefficient set of the paper, on a data set it does not publish
    for k in ("a", "b_compute", "b_read"):
        rows.append(dict(artifact="Sec 4.4", quantity=f"{k} of the n = 566 fit (widened target's fit, this CPU)",
                         paper=paper[f"sec44-{k.replace('_', '-')}"], reproduced=float(f"{co.loc[k, 'value']:.4g}"), status="not-reproducible", statements=f"sec44-{k.replace('_', '-')}",
                         cause="hardware", models="zoo",
                         note="a second coefficient set the paper fits on 566 unpublished A100 batches (Table 12's differ from it); "
                              "hardware- and model-specific: ours are the widened target's on this CPU"))
    rows.append(dict(artifact="Sec 4.4", quantity="test R² of the n = 566 fit above 0.999 (widened target)", paper=f"> {paper['sec44-r2']}",
                     reproduced=round(r2["test"], 3), strength="trend", claim=claims.above(r2["test"], paper["sec44-r2"]),
                     null_claim=claims.above(0.0, paper["sec44-r2"]), models="zoo", cause="hardware",   # the null: R² 0
                     statements="sec44-r2", note=r2why))
    rows.append(dict(artifact="Sec 4.4", quantity="test MAE of the n = 566 fit (widened target, this CPU)", unit="ms", paper=paper["sec44-mae"],
                     reproduced=round(float(ours.loc["test", "MAE_ms"]), 2), status="not-reproducible", note=HW, statements="sec44-mae",
                     cause="hardware", models="zoo"))
    return rows


def fig9_rows(fits: dict, pred: pd.DataFrame, diag: pd.DataFrame, rep: pd.DataFrame, paper: dict) -> list[dict]:
    """Fig 9a (y = x, the ±10 % envelope, the R² and MAPE the text gives beside Table 7's), Fig 9b
    (residuals centred on zero), Fig 11 (errors per regime)."""
    ours, r2why = fits["widened"].metrics, low_r2_cause(diag, rep)
    rows = [dict(artifact="Fig 9", quantity="predicted vs measured follows y = x (test R² > 0.9, widened target)", paper="yes",
                 claim=claims.above(float(ours.loc["test", "R2"]), 0.9), strength="trend", statements="fig9a-identity",
                 null_claim=claims.above(0.0, 0.9), models="zoo", cause="hardware", note=r2why)]   # the null: R² 0
    for split in ("train", "test"):
        rows.append(_r2_row("Fig 9", f"{split} R² of the Fig 9a fit (widened target, this CPU)", f"fig9a-{split}-r2",
                            float(ours.loc[split, "R2"]), r2why, paper))
        rows.append(dict(artifact="Fig 9", quantity=f"{split} MAPE of the Fig 9a fit (widened target, this CPU)", unit="%",
                         paper=paper[f"fig9a-{split}-mape"], reproduced=round(float(ours.loc[split, "MAPE_pct"]), 2),
                         status="not-reproducible", note=HW, cause="hardware", models="zoo",
                         statements=f"fig9a-{split}-mape"))
    wid = pred[pred.target == "widened"]
    rel = 100 * (wid.predicted - wid.measured).abs() / wid.measured
    inside = float((rel <= paper["fig9a-within-10"]).mean())
    trained = wid[wid.split == "train"].measured.mean()   # the null: every batch predicted at the train mean
    inside_null = float((100 * (trained - wid.measured).abs() / wid.measured <= paper["fig9a-within-10"]).mean())
    rows.append(dict(artifact="Fig 9", quantity=f"the majority of batches within ±{paper['fig9a-within-10']} % of the measured latency (share, widened)",
                     paper="majority", reproduced=round(inside, 3), strength="trend", statements="fig9a-within-10",
                     claim=claims.above(inside, 0.5), null_claim=claims.above(inside_null, 0.5), models="zoo", cause="hardware",
                     note=f"the null: every batch predicted at the train mean ({inside_null:.3f} within); {r2why}"))
    test = wid[wid.split == "test"]
    m, lo, hi = claims.mean_interval(test.predicted - test.measured)
    _, nlo, nhi = claims.mean_interval(trained - test.measured)   # the null: the train mean for every test batch
    rows.append(dict(artifact="Fig 9", quantity="test residuals centred on zero (95 % interval of the mean residual, widened)",
                     paper="centred", strength="trend", statements="fig9b-centred",
                     claim=claims.all_of({f"mean {1e3 * m:+.1f} ms [{1e3 * lo:+.1f}, {1e3 * hi:+.1f}] contains 0": lo <= 0 <= hi}, "interval_contains_zero"),
                     null_claim=claims.all_of({f"[{1e3 * nlo:+.1f}, {1e3 * nhi:+.1f}] contains 0": nlo <= 0 <= nhi}, "interval_contains_zero"),
                     models="zoo", cause="hardware",
                     note="the train residuals' mean is zero by construction of OLS with an intercept: only the test split can fail; "
                          "the null: the train mean predicted for every test batch"))
    rows[-1] = unless_null_holds(rows[-1])
    mem = wid.assign(abs_error_ms=1000 * (wid.predicted - wid.measured).abs()).groupby("regime").abs_error_ms.median()
    rows.append(dict(artifact="Fig 11", quantity="errors small in every regime, widest in memory-bound (median |error|, widened)", paper="yes",
                     claim=claims.argmax_is(mem.to_dict(), "memory-bound"), strength="trend", statements="fig11-regimes",
                     null_claim=claims.argmax_is({**mem.to_dict(), "memory-bound": float(mem.drop("memory-bound").median())}, "memory-bound"),
                     models="zoo", cause="hardware", note="the null: memory-bound like the median of the other regimes"))
    rows.append(dict(artifact="Appendix C", quantity="prompt reuse across runs speeds a configuration up by over 60 %", paper="> 60 %",
                     reproduced="–", status="not-reproducible", statements="appc-reuse-60", cause="our-reading",
                     note="our profiler feeds fresh token ids to every run (Appendix C's remedy, serving.verify_profiling) and never timed "
                          "reused prompts, so there is no cache-polluted measurement to compare"))
    return rows


def component_rows(fits: dict, paper12: dict, paper: dict) -> tuple[pd.DataFrame, list[dict]]:
    """Appendix C's Component Analysis with the paper's own coefficients (Table 12) on Appendix C's design
    (the zoo target's profile keeps its lengths) and with our widened fit on its design."""
    sources = {"Table 12 coefficients, Appendix C's design": (verify_profile("zoo"), paper12),
               "widened target's fit, its design": (verify_profile("widened"), {k: getattr(fits["widened"].estimator, k)
                                                                            for k in ("a", "b_compute", "b_read", "c")})}
    lo, hi = coverage.paper_range(paper["comp-cached-30-50"])
    frames, rows = [], []
    for src, (d, coef) in sources.items():
        s = component_shares(d, coef).assign(source=src)
        frames.append(s)
        # the paper's own coefficients: its closed form eq (19) evaluated (analytic); our fit: a reproduction whose
        # null is an even split over the four terms (25 % each) and a constant share that does not move
        paper_own = src.startswith("Table")
        kw = dict(kind="analytic", models="paper", cause="paper-ambiguity") if paper_own else dict(models="zoo", cause="hardware")
        even = lambda c: {} if paper_own else {"null_claim": c}
        comp = 100 * float(s[s.regime == "compute-bound"].interactions.mean())
        mem = 100 * float(s[s.regime == "memory-bound"].cached.mean())
        rows.append(dict(artifact="Component analysis", quantity=f"compute-bound: N_interactions share of predicted latency ({src}; mean)",
                         paper=f"> {paper['comp-interactions-70']}", reproduced=round(comp, 1), unit="%", strength="trend",
                         claim=claims.above(comp, paper["comp-interactions-70"]), statements="comp-interactions-70", **kw,
                         **even(claims.above(25.0, paper["comp-interactions-70"])),
                         note="the design's lengths and the paper's coefficients" if paper_own else "our CPU's fit, not the paper's hardware"))
        rows.append(dict(artifact="Component analysis", quantity=f"memory-bound: N_cached share of predicted latency ({src}; mean)",
                         paper=paper["comp-cached-30-50"], reproduced=round(mem, 1), unit="%", strength="trend",
                         claim=claims.within(mem, lo, hi), statements="comp-cached-30-50", **kw, **even(claims.within(25.0, lo, hi)),
                         note="the design's lengths and the paper's coefficients" if paper_own else "our CPU's fit, not the paper's hardware"))
        rows.append(dict(artifact="Component analysis", quantity=f"the constant c's share falls as the batch grows ({src}; Pearson r over configurations)",
                         paper="most significant for small batches", strength="trend", statements="comp-constant-small",
                         claim=claims.correlation_sign(s.tokens, s.constant, -1, 0.3), **kw,
                         **even(claims.correlation_sign(s.tokens, np.full(len(s), s.constant.mean()), -1, 0.3)),
                         note="the design's lengths and the paper's coefficients" if paper_own else "our CPU's fit, not the paper's hardware"))
    return pd.concat(frames, ignore_index=True), rows


# --------------------------------------------------------------------------- Table 1 and Fig 7
def fig7(fig7: pd.DataFrame, out) -> None:
    """Fig 7: violation rate per class over N, WISP against FCFS, saved as ``fig7_violation_vs_n``."""
    g = sns.relplot(data=fig7, x="devices", y="violation_rate", hue="system", col="speed", kind="line", marker="o",
                    height=2.8, aspect=1.0, hue_order=["WISP", "FCFS"])
    g.set_axis_labels("devices N", "SLO violation rate")
    g.set_titles("{col_name} tok/s")
    plotting.save(g.figure, fig7, out, "fig7_violation_vs_n")


def at_or_below_fcfs(rows: pd.DataFrame, loads) -> claims.Claim:
    """WISP's violation rate at or below FCFS's in every class at each of ``loads``, over the seeds of ``rows``
    (sweep rows of mixed-class runs): per (load, class) the seeds' paired violation rates
    (``claims.interval_at_most``: a tie holds, so one path's single violation does not fail it), and WISP
    below FCFS in at least one (else the seeds cannot tell WISP from FCFS)."""
    v = metrics.per_class(rows[rows.devices.isin(loads)], ["system", "devices", "seed"], ex.CLASSES).pivot_table(
        index=["devices", "speed", "seed"], columns="system", values="violation_rate", dropna=False)
    parts = {(f"N={n} " if len(loads) > 1 else "") + f"{sp} tok/s": claims.interval_at_most(g.WISP.to_numpy(), g.FCFS.to_numpy())
             for (n, sp), g in v.groupby(level=["devices", "speed"])}
    failed = {k: c for k, c in parts.items() if not c}
    below = {k: c for k, c in parts.items() if c.evidence.startswith("below")}
    shown = {**failed, **below}
    text = (f"below in {len(below)}, tie in {len(parts) - len(below) - len(failed)}, above or undecided in {len(failed)} "
            f"of {len(parts)}" + "".join(f"; {k} {c.evidence}" for k, c in shown.items()))
    return claims.Claim("interval_at_most_every_class", not failed and bool(below), text)


def table1_rows(table1: pd.DataFrame, table1_n: int, fig7: pd.DataFrame, epsilon: float, paper: dict,
                runs: pd.DataFrame) -> list[dict]:
    """Table 1's rates, WISP at or below FCFS over the seeds of ``runs`` (the sweep's rows), Fig 7's knees."""
    rows = []
    for sys_ in ("WISP", "FCFS"):
        for sp in (8, 6, 4, 2):
            v, r = paper[f"table1-{sys_.lower()}-{sp}"], float(table1.loc[sys_, sp])
            # the null: an unloaded server, which violates nothing (0 %)
            rows.append(unless_null_holds(dict(
                artifact="Table 1", quantity=f"{sys_}: violation rate at {sp} tok/s (N = {table1_n})", paper=v,
                reproduced=round(100 * r, 2), unit="%", tolerance=10.0, statements=f"table1-{sys_.lower()}-{sp}", null=0.0,
                models="zoo", cause="paper-ambiguity", note="the null: an unloaded server (0 %)" + ("" if abs(100 * r - v) <= 10 else
                "; N is unstated in the paper (ours: N = %d); the settings are fitted to Table 3, acceptance is the zoo's" % table1_n))))
    fcfs = runs[runs.system == "FCFS"]
    rows.append(dict(artifact="Table 1", quantity=f"WISP at or below FCFS in every class, below in at least one ({SEEDS})", paper="yes",
                     strength="trend", statements="fig7-wisp-shifts", claim=at_or_below_fcfs(runs, [table1_n]),
                     null_claim=at_or_below_fcfs(pd.concat([fcfs, fcfs.assign(system="WISP")]), [table1_n]),   # the null: WISP = FCFS
                     models="zoo", cause="paper-ambiguity"))
    knee = ex.knees(fig7, epsilon)
    rows.append(dict(artifact="Fig 7", quantity="near zero at low load, then a knee (rate <= eps at the smallest N, > 0.5 at the largest)", paper="yes",
                     claim=claims.all_of({f"{s} {sp}": bool(g_.violation_rate.iloc[0] <= epsilon and g_.violation_rate.iloc[-1] > 0.5)
                                          for (s, sp), g_ in fig7.sort_values("devices").groupby(["system", "speed"]) if sp > 2}),
                     # the null: a rate that does not move with the load (each curve at its mean)
                     null_claim=claims.all_of({f"{s} {sp}": bool(g_.violation_rate.mean() <= epsilon and g_.violation_rate.mean() > 0.5)
                                               for (s, sp), g_ in fig7.groupby(["system", "speed"]) if sp > 2}),
                     strength="trend", note="the 2 tok/s class has no knee within the sweep (as the paper's Table 1: 0 %)", statements="fig7-knee",
                     models="zoo", cause="paper-ambiguity"))
    rows.append(unless_null_holds(dict(
        artifact="Fig 7", quantity="WISP's knee at a larger or equal N than FCFS's in every class", paper="yes", strength="trend",
        claim=claims.all_of({f"{sp} tok/s": bool(knee.loc[("WISP", sp)] >= knee.loc[("FCFS", sp)]) for sp in (4, 6, 8)}),
        null_claim=claims.all_of({f"{sp} tok/s": bool(knee.loc[("FCFS", sp)] >= knee.loc[("FCFS", sp)]) for sp in (4, 6, 8)}),
        statements="fig7-wisp-shifts", models="zoo", cause="paper-ambiguity", note="the null: WISP's knee at FCFS's")))
    v = fig7.pivot_table(index=["speed", "devices"], columns="system", values="violation_rate")
    gain = (v.FCFS - v.WISP).groupby(level="speed").mean()
    best = int(gain.idxmax())
    rows.append(dict(artifact="Fig 7", quantity="WISP's largest gain over FCFS in a tight class (6 or 8 tok/s; mean violation-rate reduction over the sweep)",
                     paper="6/8 tok/s", reproduced=f"{best} tok/s", strength="trend", statements="fig7-largest-tight",
                     claim=claims.all_of({"reductions " + ", ".join(f"{k} tok/s {g:+.3f}" for k, g in gain.items()): best in (6, 8)},
                                         "largest_in_tight_class"),
                     # the null: no gain in any class (the first class then counts as the largest)
                     null_claim=claims.all_of({"no reduction": int((0 * gain).idxmax()) in (6, 8)}, "largest_in_tight_class"),
                     models="zoo", cause="paper-ambiguity"))
    return rows


# --------------------------------------------------------------------------- Table 2
def table2_rows(cap: pd.DataFrame, censored: pd.DataFrame, targets, systems, paper: dict) -> list[dict]:
    """Capacities and speedups against Table 2 (censored capacities as bounds), WISP highest (10 % margin),
    capacity falls as the class tightens, speedup grows as it tightens, and the abstract's largest speedups."""
    why = "predicted with the settings fitted to Table 3 (calibration.csv), acceptance the zoo's; at the fitted drafting speed an unloaded WISP device commits about 9 tok/s, so its 8 tok/s class has no room for queueing"
    tag = {"Qwen3-32B": "32b", "Qwen3-14B": "14b"}
    bounded = lambda t, s, sp: claims.AtLeast(cap.loc[(t, s), sp]) if censored.loc[(t, s), sp] else float(cap.loc[(t, s), sp])
    rows = []
    for s in ("SLED", "Centralized", "WISP"):
        for t in ("Qwen3-32B", "Qwen3-14B"):
            for sp in ex.CLASSES:
                sid = f"table2-{s.lower()}-{tag[t]}-{sp}"
                v, r = paper[sid], int(cap.loc[(t, s), sp])
                # the null: WISP no better than the best baseline; a baseline's, a server that admits no device
                null = max(int(cap.loc[(t, b), sp]) for b in ("SLED", "Centralized")) if s == "WISP" else 0
                rows.append(unless_null_holds(dict(
                    artifact="Table 2", quantity=f"{s} {t}: capacity at {sp} tok/s", paper=v, reproduced=r, unit="devices",
                    tolerance=round(0.25 * v, 1), null=null, models="zoo", cause="paper-ambiguity", statements=sid,
                    note=("the null: the best baseline's capacity" if s == "WISP" else "the null: no device served")
                         + ("" if abs(r - v) <= 0.25 * v else f"; {why}"), bound=">=" if censored.loc[(t, s), sp] else "")))
    speedups = {}
    for t in targets:
        for base in ("SLED", "Centralized"):
            for sp in ex.CLASSES:
                sid = f"table2-speedup-{base.lower()}-{tag[t]}-{sp}"
                v = paper[sid]
                b, (cw, cb) = cap.loc[(t, base), sp], (censored.loc[(t, "WISP"), sp], censored.loc[(t, base), sp])
                q = f"WISP speedup vs {base}, {t}, {sp} tok/s"
                if b == 0 or (cw and cb):
                    rows.append(dict(artifact="Table 2", quantity=q, paper=v, reproduced="undefined", status="not-reproducible", unit="x",
                                     statements=sid, models="zoo", cause="our-reading",
                                     note="no ratio: the baseline serves no device" if b == 0 else "both capacities censored at hi: no ratio"))
                    continue
                r, tol = float(cap.loc[(t, "WISP"), sp] / b), compare.null_tolerance(v, 1.0, round(0.25 * v, 2))
                speedups[(t, base, sp)] = (r, bool(cw or cb))
                rows.append(dict(artifact="Table 2", quantity=q, paper=v, reproduced=round(r, 2), unit="x", tolerance=tol, null=1.0,
                                 models="zoo", cause="paper-ambiguity",
                                 bound=">=" if cw else "<=" if cb else "", note="" if abs(r - v) <= tol else why, statements=sid))
    for t in targets:
        for sp in ex.CLASSES:
            col = {s: bounded(t, s, sp) for s in systems}
            runner_up = sorted(float(x) for k, x in col.items() if k != "WISP")[-1]
            rows.append(dict(artifact="Table 2", quantity=f"{t}, {sp} tok/s: WISP has the highest capacity", paper="yes", strength="match",
                             claim=claims.argmax_is(col, "WISP", margin=round(0.1 * runner_up, 1)),
                             null_claim=claims.argmax_is({**col, "WISP": runner_up}, "WISP", margin=round(0.1 * runner_up, 1)),
                             models="zoo", cause="paper-ambiguity",
                             statements=" ".join(["sec52-highest"] + [f"table2-{s.lower()}-{tag[t]}-{sp}" for s in systems])))
        for s in systems:
            rows.append(dict(artifact="Table 2", quantity=f"{s} {t}: capacity falls as the class tightens (2 -> 8 tok/s)", paper="yes",
                             claim=claims.strictly_decreasing([bounded(t, s, sp) for sp in ex.CLASSES]), strength="trend",
                             null_claim=claims.strictly_decreasing([float(cap.loc[(t, s), ex.CLASSES[0]])] * len(ex.CLASSES)),
                             models="zoo", cause="paper-ambiguity",
                             statements=" ".join(f"table2-{s.lower()}-{tag[t]}-{sp}" for sp in ex.CLASSES)))
    # Sec 5.2.1: the gains are strongest under tight SLOs; the abstract's "up to" speedups
    for t in targets:
        for base in ("SLED", "Centralized"):
            got = [speedups.get((t, base, sp)) for sp in ex.CLASSES]
            q = f"WISP speedup vs {base} grows as the class tightens (2 -> 8 tok/s), {t}"
            if any(g is None or g[1] for g in got):
                rows.append(dict(artifact="Table 2", quantity=q, paper="yes", reproduced="–", status="not-reproducible",
                                 statements="sec52-stronger-tight", models="zoo", cause="our-reading",
                                 note="a capacity of this ratio is censored or zero: no order of ratios"))
            else:
                c = claims.strictly_increasing([g[0] for g in got])
                rows.append(dict(artifact="Table 2", quantity=q, paper="yes", strength="trend", statements="sec52-stronger-tight",
                                 claim=c, null_claim=claims.strictly_increasing([got[0][0]] * len(got)), models="zoo",
                                 cause="paper-ambiguity",
                                 note="" if c.holds else "the ratio falls at 8 tok/s: at the drafting speed fitted to Table 3 an "
                                                         "unloaded WISP device commits about 9 tok/s (twin, N = 1-2), so that class "
                                                         "leaves no room for queueing; centralized serving does not draft"))
    for base in ("Centralized", "SLED"):
        sid = f"abstract-capacity-{base.lower()}"
        got = {k: v for k, v in speedups.items() if k[1] == base}
        v = paper[sid]
        if not got:
            rows.append(dict(artifact="Abstract", quantity=f"largest capacity speedup vs {base} over both targets and all classes", paper=v,
                             reproduced="undefined", status="not-reproducible", unit="x", statements=sid, models="zoo", cause="our-reading",
                             note=f"no ratio: {base} serves no device in any class (or every pair is censored)"))
            continue
        (t, _, sp), (r, cens) = max(got.items(), key=lambda kv: kv[1][0])
        tol = compare.null_tolerance(v, 1.0, round(0.25 * v, 2))
        rows.append(dict(artifact="Abstract", quantity=f"largest capacity speedup vs {base} over both targets and all classes", paper=v,
                         reproduced=round(r, 2), unit="x", tolerance=tol, null=1.0, statements=sid, bound=">=" if cens else "",
                         models="zoo", cause="paper-ambiguity",
                         note="" if abs(r - v) <= tol else f"{why}; ours is the {t}, {sp} tok/s ratio (Table 2's rows above)"))
    return rows


# --------------------------------------------------------------------------- Tables 3 and 6, Fig 8
def by_seed(runs: pd.DataFrame, column: str, value: str = "goodput") -> dict:
    """Per value of ``column``, the sweep rows' ``value`` of each seed, in seed order (for ``claims.interval_*``)."""
    v = runs.pivot_table(index="seed", columns=column, values=value, sort=True, dropna=False)
    return {k: v[k].to_numpy() for k in v.columns}


FITTED = "fitted: the calibration's target (calibration.csv, role fit), so a setting, not a reproduction"


def table3_rows(t3: pd.Series, n3: int, paper: dict, runs: pd.DataFrame) -> list[dict]:
    """Table 3's goodputs (``t3``: means over seeds), their order over the seeds of ``runs`` and the abstract's
    ratios: settings, since the open settings are fitted to these three numbers (``ex.calibrate``)."""
    good = by_seed(runs, "system")
    order = claims.interval_ordered({s: good[s] for s in t3.index})
    rows = [dict(artifact="Table 3", quantity=f"{s}: system goodput (N = {n3}, mixed classes)", paper=paper[f"table3-{s.lower()}"],
                 reproduced=round(float(t3[s]), 2), unit="tokens/s", kind="setting", statements=f"table3-{s.lower()}",
                 models="zoo", note=FITTED) for s in t3.index]
    rows.append(dict(artifact="Table 3", quantity=f"goodput ordered SLED < centralized < WISP ({SEEDS})", paper="yes", kind="setting",
                     reproduced=f"{'holds' if order else 'fails'}: {order.evidence}", models="zoo", note=FITTED,
                     statements="sec52-goodput-higher table3-sled table3-centralized table3-wisp"))
    for base in ("Centralized", "SLED"):
        rows.append(dict(artifact="Abstract", quantity=f"goodput ratio WISP / {base} (Table 3's load, N = {n3})", kind="setting",
                         paper=paper[f"abstract-goodput-{base.lower()}"], reproduced=round(float(t3["WISP"] / t3[base]), 2), unit="x",
                         statements=f"abstract-goodput-{base.lower()}", models="zoo", note=FITTED))
    rows.append(dict(artifact="Table 3", quantity="baseline goodput collapses near saturation", paper="collapses", reproduced="–",
                     status="not-reproducible", statements="sec52-goodput-collapse", cause="paper-ambiguity",
                     note="the paper shows no goodput-vs-load curve of the baselines (Table 3 is one load), and neither does this notebook"))
    return rows


def stated_numbers(paper: dict, table1: pd.DataFrame, cap: pd.DataFrame, t6: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Every stated number the calibration holds out, as quantity -> (paper, reproduced): Table 1's violation
    rates (%), Table 2's capacities and speedups (a censored capacity at its bound), Table 6's goodputs and gains."""
    tag, out = {"Qwen3-32B": "32b", "Qwen3-14B": "14b"}, {}
    for s in ("WISP", "FCFS"):
        for sp in (8, 6, 4, 2):
            out[f"Table 1: {s} violation rate at {sp} tok/s (%)"] = (paper[f"table1-{s.lower()}-{sp}"], 100 * float(table1.loc[s, sp]))
    for t in ("Qwen3-32B", "Qwen3-14B"):
        for s in ("SLED", "Centralized", "WISP"):
            for sp in ex.CLASSES:
                out[f"Table 2: {s} {t} capacity at {sp} tok/s"] = (paper[f"table2-{s.lower()}-{tag[t]}-{sp}"], float(cap.loc[(t, s), sp]))
        for base in ("SLED", "Centralized"):
            for sp in ex.CLASSES:
                b = float(cap.loc[(t, base), sp])
                out[f"Table 2: WISP speedup vs {base}, {t}, {sp} tok/s"] = (paper[f"table2-speedup-{base.lower()}-{tag[t]}-{sp}"],
                                                                          float(cap.loc[(t, "WISP"), sp]) / b if b else np.nan)
    for n in (2, 4, 8, 16):
        for col in ("OFF", "ON"):
            out[f"Table 6: goodput at N = {n}, predictor {col} (tokens/s)"] = (paper[f"table6-{col.lower()}-{n}"], float(t6.loc[n, col]))
        out[f"Table 6: improvement at N = {n} (%)"] = (paper[f"table6-imp-{n}"], float(t6.loc[n, "improvement_pct"]))
    return out


def table6_rows(t6: pd.DataFrame, paper: dict, runs: pd.DataFrame) -> list[dict]:
    """Table 6's goodputs and improvements (``t6``: means over seeds) and the gain's growth with N over the
    seeds of ``runs``."""
    rows = []
    for n in (2, 4, 8, 16):
        for col in ("OFF", "ON"):
            sid = f"table6-{col.lower()}-{n}"
            v, r = paper[sid], float(t6.loc[n, col])
            # the null: ON no better than OFF; OFF's, no goodput
            null = round(float(t6.loc[n, "OFF"]), 2) if col == "ON" else 0.0
            rows.append(unless_null_holds(dict(
                artifact="Table 6", quantity=f"N = {n}: goodput, predictor {col}", paper=v, reproduced=round(r, 2), unit="tokens/s",
                tolerance=round(0.25 * v, 2), statements=sid, null=null, models="zoo", cause="paper-ambiguity",
                note=("the null: the predictor OFF" if col == "ON" else "the null: no goodput") + ("" if abs(r - v) <= 0.25 * v else
                      "; the paper's devices deliver ~7 tok/s each; ours draft at the speed fitted to Table 3 with the zoo's acceptance"))))
        imp, r = paper[f"table6-imp-{n}"], float(t6.loc[n, "improvement_pct"])
        tol = compare.null_tolerance(imp, 0.0, 10.0)
        rows.append(dict(artifact="Table 6", quantity=f"N = {n}: improvement", paper=imp, reproduced=round(r, 2), unit="%", tolerance=tol, null=0.0,
                         statements=f"table6-imp-{n} table6-range-grows", models="zoo", cause="unexplained",
                         note="" if abs(r - imp) <= tol else "a gain far above the paper's; no mechanism measured (the zoo drafts' "
                                                             "acceptance and the MLP's stops are where it would lie)"))
    gain = runs.pivot_table(index=["devices", "seed"], columns="predictor", values="goodput", dropna=False)
    gain = (100 * (gain[True] / gain[False] - 1)).rename("improvement_pct").reset_index()
    rows.append(dict(artifact="Table 6", quantity=f"the predictor's gain grows with N ({SEEDS})", paper="yes", strength="trend",
                     statements="table6-range-grows", models="zoo", cause="unexplained",
                     claim=claims.interval_ordered({f"N={n}": g for n, g in by_seed(gain, "devices", "improvement_pct").items()}),
                     null_claim=claims.interval_ordered({f"N={n}": 0 * g for n, g in by_seed(gain, "devices", "improvement_pct").items()})))
    return rows


def fig8(att: pd.DataFrame, n: int, seed: int, out) -> None:
    """Fig 8: WISP's verification events in the (t_queue, t_verify) plane by label (at most 20,000 drawn with
    ``seed``), saved as ``fig8_attribution`` with every event's data."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    sns.scatterplot(data=att.sample(min(len(att), 20000), random_state=seed), x="t_queue", y="t_verify", hue="label",
                    hue_order=["met", "queue-dominant", "compute-dominant"], s=6, alpha=0.5, ax=ax, linewidth=0)
    ax.set(xlabel="t_queue (s)", ylabel="t_verify (s)", title=f"WISP, N = {n}")
    plotting.save(fig, att, out, "fig8_attribution")


def fig8_rows(att: pd.DataFrame, window: int, paper: dict) -> list[dict]:
    share = att[att.violated].label.value_counts(normalize=True)
    return [dict(artifact="Fig 8", quantity=f"most violations are compute-dominant (eq 21, W = {window}, tau = {paper['eq21-tau']})", paper="yes",
                 claim=claims.above(float(share.get("compute-dominant", 0.0)), 0.5), strength="trend", statements="fig8-compute-dominant",
                 null_claim=claims.above(0.5, 0.5), models="zoo", cause="models",   # the null: both causes alike
                 note="" if share.get("compute-dominant", 0.0) > 0.5 else
                 "in the twin a verification spike is only the estimator's log-normal error; backlog (queueing) dominates past the knee")]


# --------------------------------------------------------------------------- Table 2 and its sensitivity (beyond the paper)
def sensitivity_curves(systems, targets, *, scale: str, epsilon: float, seed: int, setting, current, hi: int, cache,
                       resolution: float = 0.0):
    """Qwen3-32B's searches at other ε (1 %, 10 %; ``systems`` x every class) and Table 2 (``systems`` x
    ``targets`` x every class) under the settings before the fit (``current``); one twin seed per point
    (Table 2's first: the sweep cache serves every point Table 2 ran), each to ``resolution``."""
    common = dict(seeds=1, seed=seed, hi=hi, point_cache=cache, resolution=resolution)
    return ([c for e in ([0.01, 0.10] if scale == "full" else [0.10])
             for c in ex.curves(systems, ["Qwen3-32B"], ex.CLASSES, epsilon=e, setting=setting, **common)]
            + ex.curves(systems, targets, ex.CLASSES, epsilon=epsilon, setting=current, **common))


def capacity_searches(systems, targets, *, scale: str, epsilon: float, seeds: int, seed: int, setting, current, hi: int,
                      run, cache, resolution: float = 0.0):
    """Table 2 (``systems`` x ``targets`` x every class, ``seeds`` twin seeds per point) and its sensitivity
    (``sensitivity_curves``), every search in one ``ex.capacities`` call, so that the workers share all their
    points round by round. Returns (table2, eps_tab: Qwen3-32B's capacities per ε with Table 2's own rows,
    table2_current: Table 2 under ``current``)."""
    main = ex.curves(systems, targets, ex.CLASSES, epsilon=epsilon, seeds=seeds, seed=seed, setting=setting, hi=hi,
                     point_cache=cache, resolution=resolution)
    extra = sensitivity_curves(systems, targets, scale=scale, epsilon=epsilon, seed=seed, setting=setting, current=current,
                               hi=hi, cache=cache, resolution=resolution)
    rows = ex.capacities(main + extra, run)
    table2, rows = rows.iloc[:len(main)].reset_index(drop=True), rows.iloc[len(main):].reset_index(drop=True)
    cur = np.array([c.setting == current for c in extra])
    eps_tab = pd.concat([table2[table2.target == "Qwen3-32B"], rows[~cur]], ignore_index=True)
    return table2, eps_tab, rows[cur].reset_index(drop=True)


def current_tables(current, table1_n: int, n3: int, seeds, run):
    """Under the settings ``current``, every seed run by ``run``: Table 1 (violation rate per system x class at
    ``table1_n``), Table 3 (mean goodput per system at ``n3``) and Table 6 (mean goodput OFF / ON, gain %)."""
    rows = run([ex.Point(s, table1_n, None, seed=k, setting=current) for s in ("WISP", "FCFS") for k in seeds]
               + ex.table3_points(current, n3, seeds) + [ex.Point("WISP", n, None, predictor=p, seed=k, setting=current)
                                                         for n in (2, 4, 8, 16) for p in (False, True) for k in seeds])
    t1 = metrics.per_class(rows[(rows.devices == table1_n) & rows.system.isin(["WISP", "FCFS"]) & rows.predictor], ["system"], ex.CLASSES)
    t3 = rows[(rows.devices == n3) & rows.system.isin(ex.TABLE3)].groupby("system").goodput.mean()
    t6 = rows[rows.devices.isin([2, 4, 8, 16])].groupby(["devices", "predictor"]).goodput.mean().unstack().rename(columns={False: "OFF", True: "ON"})
    t6["improvement_pct"] = 100 * (t6.ON / t6.OFF - 1)
    return t1.pivot(index="system", columns="speed", values="violation_rate"), t3, t6


# --------------------------------------------------------------------------- §9: the twin on the real pair
RP_NOTE = (f"the twin with the real pair's traces and retrained MLP, K = {rp.WINDOW}, the fitted settings, the paper's eq (19) "
           "Qwen3-32B verifier")
RP_WHO = " (real pair Qwen2.5-Coder 0.5B->1.5B, twin)"


def realpair_points(base: ex.Setting, loads, n3: int, seeds) -> list[ex.Point]:
    """The §9 runs on ``li2026_realpair.setting(base)``, each with every seed: WISP and FCFS at Table 1's ``loads``, centralized
    and WISP at Table 3's load ``n3``, WISP with N = 16 and the predictor OFF / ON (Table 6)."""
    st = rp.setting(base)
    return ([ex.Point(s, n, None, seed=k, setting=st) for s in ("WISP", "FCFS") for n in loads for k in seeds]
            + [ex.Point(s, n3, None, seed=k, setting=st) for s in ("Centralized", "WISP") for k in seeds]
            + [ex.Point("WISP", 16, None, predictor=p, seed=k, setting=st) for p in (False, True) for k in seeds])


def realpair_tables(rows: pd.DataFrame, loads, n3: int):
    """From ``realpair_points``' sweep rows: Table 1 (violation rate per (devices, system) x class, pooled over seeds),
    Table 3's mean goodput per system and Table 6's mean goodput per predictor OFF / ON."""
    t1 = metrics.per_class(rows[rows.devices.isin(loads) & rows.predictor], ["system", "devices"], ex.CLASSES)
    table1 = t1.pivot_table(index=["devices", "system"], columns="speed", values="violation_rate")
    good = rows[(rows.devices == n3) & rows.predictor].groupby("system").goodput.mean()
    t6 = rows[rows.devices == 16].groupby("predictor").goodput.mean()
    return table1, good, t6


def realpair_rows(rows: pd.DataFrame, loads, n3: int) -> list[dict]:
    """Table 1's, Table 3's and Table 6's claims on the real pair (``Comparison.extend`` rows), each decided over
    the seeds of ``rows`` (``realpair_points``' sweep rows)."""
    good, t6 = by_seed(rows[(rows.devices == n3) & rows.predictor], "system"), by_seed(rows[rows.devices == 16], "predictor")
    fcfs = rows[rows.predictor & (rows.system == "FCFS")]
    lower = t6[True].mean() < t6[False].mean()
    return [dict(artifact="Table 1" + RP_WHO, quantity=f"WISP at or below FCFS in every class, below in at least one ({SEEDS})", paper="yes",
                 strength="trend", claim=at_or_below_fcfs(rows[rows.predictor], loads), models="real pair", cause="models",
                 null_claim=at_or_below_fcfs(pd.concat([fcfs, fcfs.assign(system="WISP")]), loads),
                 note=f"mixed classes, N = {', '.join(map(str, loads))}; {RP_NOTE}", statements="fig7-wisp-shifts"),
            dict(artifact="Table 3" + RP_WHO, quantity=f"goodput ordered centralized < WISP ({SEEDS})", paper="yes", strength="trend",
                 claim=claims.interval_ordered({"centralized": good["Centralized"], "WISP": good["WISP"]}),
                 null_claim=claims.interval_ordered({"centralized": good["Centralized"], "WISP": good["Centralized"]}),
                 models="real pair", cause="models",
                 note=f"N = {n3}, mixed classes; {RP_NOTE}", statements="sec52-goodput-higher"),
            dict(artifact="Table 6" + RP_WHO, quantity=f"the predictor raises WISP's goodput (N = 16; {SEEDS})", paper="yes", strength="trend",
                 claim=claims.interval_ordered({"OFF": t6[False], "ON": t6[True]}),
                 null_claim=claims.interval_ordered({"OFF": t6[False], "ON": t6[False]}), models="real pair",
                 cause="unexplained" if lower else "models",
                 note=f"{100 * (t6[True].mean() / t6[False].mean() - 1):+.1f} %"
                      + ("; the predictor lowers goodput although it raises device alpha: no mechanism measured" if lower else "")
                      + f"; device alpha {rp.device_alpha(False):.3f} (fixed window) -> "
                      f"{rp.device_alpha(True):.3f} (the MLP's stops); {RP_NOTE}", statements="table6-on-16")]


# --------------------------------------------------------------------------- the twin against the real system
def centralized_validation(scale: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Centralized serving's real run (transformers' continuous batching; committed at full scale, live at CI
    scale) against the twin with the run's median decode step: the token interval per quantile, real and
    twin, and their difference (%)."""
    from ..serving import centralized
    from ..serving.workload import ClientSpec, Workload
    from . import li2026_real as real

    wl = real.workload(scale, seed)
    if scale == "full":    # measured by `make profiles` (wall-clock times: the notebook only reads them)
        logs = real.load_real_runs()
        print("centralized run measured on", logs["Centralized"].device.iloc[0])
    else:                  # a live run: the real multi-process system is exercised on every CI run
        logs = {pol: g.reset_index(drop=True) for pol, g in real.measure_real(scale, seed).groupby("policy", sort=False)}
    clog = logs["Centralized"]
    tokens_real = wl.clients[0].max_new_tokens
    wl_c = Workload("target-m", tuple(ClientSpec(prompt_tokens=len(p), max_new_tokens=tokens_real) for p in real.centralized_prompts(wl)))
    ctwin = centralized.simulate(wl_c, centralized.step_time_of(clog), until=float(clog.end.max()))
    ctwin = ctwin[ctwin.groupby("client").cumcount() < tokens_real]   # the real run generates one response each
    cval = ex.validation_table({"Centralized": (clog, ctwin)})
    cdiff = cval.pivot_table(index=["policy", "quantile"], columns="system", values="t_round_s")
    cdiff["twin_vs_real_pct"] = 100 * (cdiff.twin / cdiff.real - 1)
    return cval, cdiff


def centralized_row(cdiff: pd.DataFrame) -> dict:
    from . import serving_validation as sv

    cworst = float(cdiff.xs("p50", level="quantile").twin_vs_real_pct.abs().max())
    return dict(check="centralized serving: twin vs real", quantity="|difference| of the p50 token interval",
                ours=round(cworst, 1), reference=0.0, unit="%", tolerance=sv.TOLERANCE["p50"],
                note="" if cworst <= sv.TOLERANCE["p50"] else
                "the twin's step time is the real run's median decode step; the real steps vary with the batch's sequence count")
