"""WISP's verification estimator in the serving notebook (li2026 Sec 3.2, Appendix C): Fig 4's interference,
eq (19)'s fits (Tables 7, 12; Figs 9, 11) and its component shares, from the committed profiles of the two
measured targets, each as a figure and comparison rows for ``compare.Comparison.extend`` (statuses from
``claims`` predicates and tolerances here, never typed). The figures: batch interference (``verify_profiling``'s
solo / batched requests, ``interference_figure``) and eq (19)'s fits (``estimator.fit``, ``fit_figures``): predicted
against measured batch latency per target with the y = x line, and the absolute error by regime.
"""
from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


from ... import claims, coverage, paths, plotting
from ...compare import unless_null_holds
from ...serving.timemodels.verify_diagnostics import component_shares

TARGETS = ("zoo", "widened")   # the two measured verification targets (data/li2026/*_{target}.csv)
HW = "the paper fits Qwen3-32B on an A100 with vLLM; ours is a 0.1 B bfloat16 Llama on 2 CPU cores, whose absolute times are other"
_T7 = ("R2", "adj_R2", "RMSE_ms", "MAE_ms", "MAPE_pct", "max_error_ms")


def verify_profile(target: str) -> pd.DataFrame:
    return pd.read_csv(paths.DATA / "li2026" / f"verify_profile_{target}.csv")


def verify_profiles() -> dict[str, pd.DataFrame]:
    """The committed verification profiles, per measured target."""
    return {t: verify_profile(t) for t in TARGETS}


# --------------------------------------------------------------------------- Fig 4
def interference_figure(frame: pd.DataFrame, out, stem: str) -> pd.DataFrame:
    """Verification latency of request A alone, B alone and both batched over A's length, per target (``frame``:
    target, a_length, case, seconds), saved as ``stem``; returns seconds per (target, a_length) x case with what B
    inherits (batched / solo B) and the batched / solo A ratio."""
    cases = ["Solo A", "Solo B", "Batched A+B"]
    if not set(cases) <= set(frame["case"]):
        raise ValueError(f"frame: needs the cases {cases}, got {sorted(frame['case'].unique())}")
    g = sns.relplot(data=frame, x="a_length", y="seconds", hue="case", col="target", kind="line", marker="o",
                    height=3.2, aspect=1.2, facet_kws=dict(sharey=False, sharex=False), hue_order=cases)
    g.set_axis_labels("length of request A (new tokens)", "verification latency (s)")
    plotting.save(g.figure, frame, out, stem)
    w = frame.pivot_table(index=["target", "a_length"], columns="case", values="seconds")
    w["B inherits (batched / solo B)"] = w["Batched A+B"] / w["Solo B"]
    w["batched / solo A"] = w["Batched A+B"] / w["Solo A"]
    return w


def fig4(out) -> pd.DataFrame:
    """Fig 4 from the committed interference measurements (both targets), saved as ``fig4_interference``
    (``estimator_figures.interference_figure``); returns seconds per (target, a_length) x case and the ratios."""
    fig4 = pd.concat([pd.read_csv(paths.DATA / "li2026" / f"interference_{t}.csv") for t in TARGETS], ignore_index=True)
    return interference_figure(fig4, out, "fig4_interference")


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
def fit_figures(fits: Mapping, out, identity_stem: str, error_stem: str) -> pd.DataFrame:
    """Predicted against measured batch latency per target (``fits``: target -> an ``estimator.fit`` result with
    ``predictions``), saved as ``identity_stem``, and the absolute error by regime and target, saved as
    ``error_stem``; returns the test and train predictions with their absolute error (ms)."""
    if not fits:
        raise ValueError("fits: need at least one target's fit")
    pred = pd.concat([f.predictions.assign(target=t) for t, f in fits.items()], ignore_index=True)
    fig, axes = plt.subplots(1, len(fits), figsize=(4.5 * len(fits), 3.6), squeeze=False)
    for ax, (t, g) in zip(axes[0], pred.groupby("target")):
        sns.scatterplot(data=g, x="measured", y="predicted", hue="split", style="regime", ax=ax, s=18)
        lim = [0, 1.05 * max(g.measured.max(), g.predicted.max())]
        ax.plot(lim, lim, "k--", lw=0.8, label="y = x")
        ax.set(xlim=lim, ylim=lim, title=f"{t} target", xlabel="measured batch latency (s)", ylabel="predicted (s)")
    plotting.save(fig, pred, out, identity_stem)
    fig, ax = plt.subplots(figsize=(5, 3.4))
    pred["abs_error_ms"] = 1000 * (pred.predicted - pred.measured).abs()
    sns.boxplot(data=pred, x="regime", y="abs_error_ms", hue="target", ax=ax)
    ax.set(xlabel="regime", ylabel="absolute error (ms)")
    plotting.save(fig, pred[["target", "split", "regime", "measured", "predicted", "abs_error_ms"]], out, error_stem)
    return pred


def fig9_fig11(fits: dict, out) -> pd.DataFrame:
    """Fig 9 (predicted against measured batch latency, per target) and Fig 11 (absolute error by regime),
    saved (``estimator_figures.fit_figures``); returns the predictions with their absolute error (ms)."""
    return fit_figures(fits, out, "fig9_predicted_vs_measured", "fig11_error_by_regime")


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
                     note="our profiler feeds fresh token ids to every run (Appendix C's remedy, serving.real.verify_profiling) and never timed "
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
                         claim=claims.within(mem, lo, hi), feasible=(0.0, 100.0), statements="comp-cached-30-50", **kw, **even(claims.within(25.0, lo, hi)),
                         note="the design's lengths and the paper's coefficients" if paper_own else "our CPU's fit, not the paper's hardware"))
        rows.append(dict(artifact="Component analysis", quantity=f"the constant c's share falls as the batch grows ({src}; Pearson r over configurations)",
                         paper="most significant for small batches", strength="trend", statements="comp-constant-small",
                         claim=claims.correlation_sign(s.tokens, s.constant, -1, 0.3), **kw,
                         **even(claims.correlation_sign(s.tokens, np.full(len(s), s.constant.mean()), -1, 0.3)),
                         note="the design's lengths and the paper's coefficients" if paper_own else "our CPU's fit, not the paper's hardware"))
    return pd.concat(frames, ignore_index=True), rows
