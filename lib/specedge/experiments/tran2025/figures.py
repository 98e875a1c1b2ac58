"""tran2025's notebook sections as calls: each driver runs one figure's experiment over the notebook's
configurations and seeds (``experiments.tran2025.runs``: runs and metrics), and each ``*_rows`` sets the
paper's statements (``coverage.paper_values("tran2025")``, by id in ``data/coverage/tran2025.yaml``)
beside the reproduced values as comparison rows for ``compare.Comparison.extend``: statuses come from
``claims`` predicates and tolerances here, never typed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ... import claims, coverage, plotting
from ...compare import unless_null_holds
from ...serving.analysis import client_mix, round_series, twin_error
from ...serving.sim import twin
from ...serving.analysis.round_series import estimate_bands
from ...solvers import tran2025 as gs
from . import runs as ex
from ..serving_validation import twin_verdicts

CALIBRATED = "twin (H100 derived; drafting, link chosen)"   # Fig 3's twin system label
REAL = "real (this CPU, zoo)"


def _intervals(df: pd.DataFrame, by: list[str], value: str, name: str, n: str = "seeds") -> pd.DataFrame:
    """``claims.mean_intervals`` of ``value`` per group of ``by`` as columns ``by``, ``name`` (the mean), ci_low,
    ci_high and ``n`` (the draws)."""
    return claims.mean_intervals(df, by, value).rename(columns={"mean": name, "n": n})[by + [name, "ci_low", "ci_high", n]]


# --------------------------------------------------------------------------- Table I
_T1_IDS = {"Qwen3-14B + Qwen3-0.6B": "qwen4", "Qwen3-14B + Qwen3-0.6B/1.7B": "qwen8",
           "Llama-3.1-70B-Instruct-AWQ-INT4 + Llama-3.2-1B/3B-Instruct": "llama8"}


def table1_frame(configs) -> pd.DataFrame:
    return pd.DataFrame([dict(config=c.name, paper_models=c.paper_models, clients=c.clients, C=c.capacity,
                              max_tokens=c.max_new_tokens, zoo_target="target-m", zoo_drafts="/".join(c.drafts))
                         for c in configs])


def table1_rows(table1: pd.DataFrame) -> list[dict]:
    """Table I is the paper's configurations, inputs of its experiments: each cell a setting (context, no
    status) saying what our runs use in its place (the paper's value from its statement)."""
    rows = []
    for models, tag in _T1_IDS.items():
        ran = table1[table1.paper_models == models]
        used = lambda col: ", ".join(str(v) for v in sorted(set(ran[col])))
        if len(ran):
            stand_in = f"zoo stand-ins {ran.zoo_target.iloc[0]} + {ran.zoo_drafts.iloc[0]}"
            notes = {"C": f"an input: the paper chose C by profiling its H100 (Sec III); no H100 here, so the runs take the "
                          f"paper's C as given ({stand_in})",
                     "clients": f"an input: the runs use the paper's number of draft servers ({stand_in})",
                     "max_tokens": f"an input: the runs use the paper's max token length ({stand_in})"}
            mine = {k: used(k) for k in notes}
        else:   # a configuration the paper ran and we did not: a coverage gap, not an input
            why = ("not run, a coverage gap: the zoo has one model family, so a Llama-3.1-70B-AWQ / Llama-3.2 configuration "
                   "would repeat the Qwen3-14B 8-client runs with the same stand-ins")
            notes, mine = dict.fromkeys(("C", "clients", "max_tokens"), why), dict.fromkeys(("C", "clients", "max_tokens"), "")
        for key, sid, label, unit in (("C", "C", "C budgets (tokens per pass)", "tokens"),
                                      ("clients", "clients", "number of draft servers", "clients"),
                                      ("max_tokens", "tokens", "max token length", "tokens")):
            row = dict(artifact="Table I", quantity=f"{models}: {label}", reproduced=mine[key] or "–", unit=unit,
                       note=notes[key], statements=f"table1-{tag}-{sid}")
            rows.append(dict(row, kind="setting") if mine[key] else
                        dict(row, status="not-reproducible", cause="models", models="zoo"))
    return rows


# --------------------------------------------------------------------------- Fig 4
def clients_section(configs, acceptance_het, acceptance_zoo, out):
    """Both settings' clients with their traced α (``fig4_clients.csv``, heterogeneous; ``fig4_clients_narrow_spread.csv``,
    the zoo stand-ins) and each configuration's quantity opening per setting: returns (clients, tags_het, tags_zoo)."""
    het, zoo = ex.clients_frame(configs, acceptance_het, ex.hetero_workload), ex.clients_frame(configs, acceptance_zoo, ex.workload)
    plotting.write_csv(het, out / "fig4_clients.csv")
    plotting.write_csv(zoo, out / "fig4_clients_narrow_spread.csv")
    tags = lambda c, text: {k: f"{text} (α {g.alpha.min():.2f}–{g.alpha.max():.2f}): " for k, g in c.groupby("config", sort=False)}
    return het, tags(het, "heterogeneous clients"), tags(zoo, "sensitivity, narrow α spread, zoo clients")


def fig4_plot(fig4: pd.DataFrame, out, stem: str, title: str):
    """U(x̄(T)) per configuration, each policy's mean with its 95 % band, saved as ``stem`` with the mean curves."""
    import seaborn as sns

    g = sns.relplot(data=fig4, x="iteration", y="utility", hue="policy", col="config", col_wrap=2, kind="line", errorbar=("se", 1.96),
                    height=3, aspect=1.4, facet_kws=dict(sharey=False), hue_order=list(ex.POLICIES + (ex.FLOOR,)))
    g.set_axis_labels("iteration T", "U(x̄(T)) = Σ log x̄ᵢ (mean, 95 % band)")
    g.figure.suptitle(title, y=1.02)
    mean = fig4.groupby(["config", "policy", "iteration"]).utility.agg(["mean", "std", "count"]).reset_index()
    plotting.save(g.figure, mean.round(5), out, stem)


def fig4_runs(configs, acceptance, seeds, iterations: int, beta: float, eta: float, wl_of=None):
    """U(x̄(T)) of every policy (and Fixed-S ⌊C/N⌋ where C mod N > 0) per configuration and seed; returns
    the first seed's logs and GOODSPEED estimates by (config, policy), and the curves (long frame).
    ``wl_of(cfg, seed)`` replaces ``ex.workload(cfg, seed=seed)``."""
    pols = ex.POLICIES + (ex.FLOOR,)
    runs, estimates, curves = {}, {}, []
    for cfg in configs:
        for sd in seeds:
            for pol in pols:
                if pol == ex.FLOOR and cfg.capacity % cfg.clients == 0:
                    continue   # identical to Fixed-S
                log, est = ex.run_twin(cfg, pol, ex.sync_times(cfg), acceptance, rounds=iterations, seed=sd, beta=beta, eta=eta,
                                       wl=wl_of(cfg, sd) if wl_of else None)
                if sd == seeds[0]:
                    runs[cfg.name, pol], estimates[cfg.name, pol] = log, est
                curves.append(round_series.utility_frame(log, config=cfg.name, policy=pol, seed=sd))
    return runs, estimates, pd.concat(curves, ignore_index=True)


def _tie_or_loss(c_holds: bool, a, b) -> str:
    """``deviates``' cause for "GOODSPEED ends above B": a tie (the paired interval of a - b contains 0) comes
    from clients whose acceptance is close (models); a loss (the interval below 0) names no mechanism here."""
    lo, hi = claims.mean_interval(np.asarray(a) - np.asarray(b))[1:]
    return "" if c_holds else "unexplained" if hi < 0 else "models"


def _ends_above(f: pd.DataFrame) -> tuple[claims.Claim, claims.Claim]:
    """"GOODSPEED ends above both baselines" over ``f``'s seeds (a column per policy; paired 95 % intervals) and
    its null, the strongest baseline ending above the others (the same test naming it: it can pass)."""
    finals = {p: f[p].to_numpy() for p in ex.POLICIES}
    return (claims.interval_argmax_is(finals, "GOODSPEED"),
            claims.interval_argmax_is(finals, claims.strongest_alternative(finals, "GOODSPEED")))


SETTING = "tran2025"   # the twin's validated error these rows are judged against (``twin_error.SETTINGS``)


def _u_margin(clients: int, a, b) -> float:
    """The margin of mean U ``a`` over ``b`` (seeds) as a per-client goodput change (%, ``twin_verdicts.utility_pct``)."""
    return twin_verdicts.utility_pct(float(np.mean(a)) - float(np.mean(b)), clients)


def fig4_rows(configs, fig4: pd.DataFrame, iterations: int, *, tags: dict | None = None, why=None,
              notes: dict | None = None, files=twin_error.SETTINGS) -> list[dict]:
    """Ends above both baselines (paired 95 % intervals over seeds), above ⌊C/N⌋, starts lower (the mean U
    over the first tenth of the run, paired intervals) and the stabilisation iteration (full horizon only).
    Each null is GOODSPEED replaced by Fixed-S (no effect of the policy); the stabilisation's is the
    iteration at which Fixed-S's U(x̄), a running average of a policy that learns nothing, settles.
    ``tags[config]`` opens each quantity (which clients); ``why(config)`` gives (cause, note) of an "ends
    above" that fails (default: ``_tie_or_loss``'s, for clients of close acceptance); ``notes[config]`` is added
    to its "ends above" row (``cap_notes``: the response cap's share of the U levels). Every margin in U is judged
    against the stochastic twin's validated per-client goodput error in GOODSPEED's setting (``twin_verdicts.judged``,
    ``files``: its tables): U is a sum of the logs of per-client goodputs."""
    stated = coverage.paper_values("tran2025")["fig4-stabilises-400"]
    judged = lambda row, margin: twin_verdicts.judged(row, margin, "utility", SETTING, files=files)
    finals = final_table(fig4)
    early = (fig4[fig4.iteration <= max(fig4.iteration.max() // 10, 1)]
             .pivot_table(index=["config", "seed"], columns="policy", values="utility", aggfunc="mean"))
    mean_curve = fig4.groupby(["config", "policy", "iteration"]).utility.mean()
    rows = []
    for cfg in configs:
        f = finals.loc[cfg.name]
        c, null = _ends_above(f)
        best = max(ex.POLICIES[1:], key=lambda p: f[p].mean())
        tag = (tags or {}).get(cfg.name, "")
        cause, note = (why(cfg.name) if why else
                       (_tie_or_loss(c.holds, f["GOODSPEED"], f[best]), f"against {best}: a tie (paired interval containing zero) "
                        "or a loss (below it); with clients this close in acceptance a fixed share already sits near the optimum"))
        rows.append(judged(dict(artifact="Fig 4", quantity=f"{tag}{cfg.name}: GOODSPEED ends above both baselines ({len(f)} seeds, 95 % interval)",
                                paper="yes", claim=c, null_claim=null, strength="match", statements="fig4-ends-above conclusion-600",
                                models="zoo", cause="" if c.holds else cause,
                                note="; ".join(x for x in ("" if c.holds else note, (notes or {}).get(cfg.name, "")) if x)),
                           _u_margin(cfg.clients, f["GOODSPEED"], f[best])))
        if cfg.capacity % cfg.clients:
            rows.append(judged(dict(artifact="Fig 4", quantity=f"{tag}{cfg.name}: GOODSPEED ends above {ex.FLOOR} ({len(f)} seeds, 95 % interval)",
                                    paper="yes", claim=claims.interval_above(f["GOODSPEED"].to_numpy(), f[ex.FLOOR].to_numpy()),
                                    null_claim=claims.interval_above(f[ex.FLOOR].to_numpy(), f[ex.FLOOR].to_numpy()),
                                    strength="match", note="the literal C // N share leaves C mod N slots idle", models="zoo",
                                    cause=_tie_or_loss(False, f["GOODSPEED"], f[ex.FLOOR]), statements="fig4-ends-above"),
                               _u_margin(cfg.clients, f["GOODSPEED"], f[ex.FLOOR])))
        if iterations >= 600:
            it, null_it = (round_series.stabilisation(mean_curve.loc[cfg.name, p]) for p in ("GOODSPEED", "Fixed-S"))
            row = dict(artifact="Fig 4", quantity=f"{tag}{cfg.name}: GOODSPEED stabilises by (iteration, mean curve within 1 % of its final U)",
                       reproduced=it, unit="iteration", statements="fig4-stabilises-400 fig4-no-oscillation", models="zoo")
            if abs(stated - null_it) <= 150:
                rows.append(dict(row, status="not-reproducible", cause="our-reading",
                                 note=f"the null (Fixed-S, which learns nothing) settles by iteration {null_it} too, within {stated} ± 150 "
                                      "(U(x̄) is a running average that settles for every policy): this measure cannot tell "
                                      "GOODSPEED's convergence from averaging"))
            else:
                rows.append(dict(row, tolerance=150, null=null_it, cause="models",
                                 note=f"the null, Fixed-S's running average, settles by iteration {null_it}; when U(x̄) settles depends "
                                      "on the clients' acceptance (ours from zoo and real-pair traces), not on the policy alone"))
        e = early.loc[cfg.name]
        parts = {b: claims.interval_above(e[b].to_numpy(), e["GOODSPEED"].to_numpy()) for b in ex.POLICIES[1:]}
        start_margin = min(_u_margin(cfg.clients, e[b], e["GOODSPEED"]) for b in ex.POLICIES[1:])
        rows.append(judged(dict(artifact="Fig 4", quantity=f"{tag}{cfg.name}: GOODSPEED starts lower (mean U over the first tenth of the run, "
                                                    f"each baseline above it, {len(e)} seeds, 95 % interval)",
                         paper="starts lower", claim=claims.all_of({f"{b} {c.evidence}": c.holds for b, c in parts.items()},
                                                                   "interval_below_both"),
                         null_claim=claims.all_of({b: claims.interval_above(e[b].to_numpy(), e["Fixed-S"].to_numpy()).holds
                                                   for b in ex.POLICIES[1:]}, "interval_below_both"),
                         strength="trend", statements="fig4-starts-lower", models="zoo", cause="models",
                         note="the paper's 'initial exploration': GOODSPEED's estimates start from their initial values"), start_margin))
    return rows


def cap_effect(configs, acceptance, seeds, iterations: int, beta: float, eta: float, wl_of, uncapped: int = 10**9) -> pd.DataFrame:
    """What the response cap does to the 4-client U levels: U(x̄(T)) of every policy per seed with the configuration's
    cap (Table I's max token length) and without one (``wl_of(cfg, seed, max_tokens=uncapped)``), the same seeds:
    per (config, policy) both means and the paired difference uncapped - capped with its 95 % interval."""
    rows = []
    for cfg in configs:
        if cfg.clients != 4:
            continue
        fu = {cap: ex.final_utilities(cfg, ex.POLICIES, acceptance, seeds=seeds, rounds=iterations, beta=beta, eta=eta,
                                      wl_of=lambda sd, cap=cap, cfg=cfg: wl_of(cfg, sd, max_tokens=cap)).set_index(["policy", "seed"]).utility
              for cap in (cfg.max_new_tokens, uncapped)}
        for pol in ex.POLICIES:
            a, b = fu[cfg.max_new_tokens].loc[pol].sort_index(), fu[uncapped].loc[pol].sort_index()
            m, lo, hi = claims.mean_interval((b - a).to_numpy())
            rows.append(dict(config=cfg.name, policy=pol, cap=cfg.max_new_tokens, U_capped=float(a.mean()), U_uncapped=float(b.mean()),
                             diff=m, ci_low=lo, ci_high=hi, seeds=len(a)))
    return pd.DataFrame(rows)


def cap_notes(table: pd.DataFrame) -> dict:
    """Per configuration, the measured effect of the response cap on U (``cap_effect``), for the Fig 4 rows' notes."""
    out = {}
    for cfg, g in table.groupby("config", sort=False):
        parts = ", ".join(f"{r.policy} {r.diff:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]" for r in g.itertuples())
        out[cfg] = (f"the {int(g.cap.iloc[0])}-token response cap's share of the U levels, measured: the same runs without it "
                    f"change U(x̄) by {parts} ({int(g.seeds.iloc[0])} seeds, paired, 95 % interval; fig4_response_cap.csv)")
    return out


def xstar_hetero(configs, acceptance, *, seed: int, wl_of) -> pd.DataFrame:
    """x* of the heterogeneous clients (i.i.d. acceptance at each client's traced α, ``ex.iid_model`` on ``wl_of(cfg)``):
    one row per (config, client) with α, C, x* and U(x*)."""
    rows = []
    for cfg in configs:
        _, _, alpha = ex.iid_model(acceptance, cfg, seed, base=wl_of(cfg))
        opt = gs.optimum(alpha, cfg.capacity)
        rows += [dict(config=cfg.name, client=i, alpha=round(float(alpha[i]), 6), C=cfg.capacity,
                      x_star=round(float(opt.x[i]), 6), U_star=round(float(opt.utility), 6)) for i in range(cfg.clients)]
    return pd.DataFrame(rows)


def final_table(fig4: pd.DataFrame) -> pd.DataFrame:
    """U(x̄) at the last iteration, one row per (config, seed), one column per policy."""
    return fig4[fig4.iteration == fig4.iteration.max()].pivot_table(index=["config", "seed"], columns="policy", values="utility")


def final_intervals(fig4: pd.DataFrame, setting: str) -> pd.DataFrame:
    """U(x̄) at the last iteration per (config, policy): mean and 95 % interval over seeds; and GOODSPEED minus
    each other policy, paired by seed (policy ``GOODSPEED − <policy>``)."""
    draws = []
    for cfg, f in final_table(fig4).groupby(level="config", sort=False):
        cols = {p: f[p].to_numpy() for p in f.columns if not f[p].isna().any()}
        cols.update({f"GOODSPEED − {p}": cols["GOODSPEED"] - v for p, v in list(cols.items()) if p != "GOODSPEED"})
        draws += [pd.DataFrame(dict(setting=setting, config=cfg, policy=p, U=v)) for p, v in cols.items()]
    return _intervals(pd.concat(draws, ignore_index=True), ["setting", "config", "policy"], "U", "mean_U")


def eta_sensitivity(configs, acceptance, seeds, iterations: int, beta: float, etas, wl_of) -> pd.DataFrame:
    """GOODSPEED − Fixed-S in U(x̄(iterations)) per (config, η of eq 3): paired mean and 95 % interval over seeds
    (the paper leaves η open: "η ∈ (0, 1) is a fixed smoothing parameter", Sec III)."""
    draws = []
    for cfg in configs:
        run = lambda pol, e, cfg=cfg: ex.final_utilities(cfg, (pol,), acceptance, seeds=seeds, rounds=iterations, beta=beta, eta=e,
                                                         wl_of=lambda sd: wl_of(cfg, sd)).utility.to_numpy()
        fx = run("Fixed-S", 0.1)   # Fixed-S ignores η
        draws += [pd.DataFrame(dict(config=cfg.name, eta=e, beta=beta, diff=run("GOODSPEED", e) - fx)) for e in etas]
    return _intervals(pd.concat(draws, ignore_index=True), ["config", "eta", "beta"], "diff", "diff_mean")


def eta_why(eta_table: pd.DataFrame, eta: float):
    """``fig4_rows``' ``why`` for heterogeneous clients: where the run at the notebook's η fails, the η sweep says
    whether a smaller η (the paper's is unstated) separates GOODSPEED from Fixed-S: then the cause is the unstated
    η (paper-ambiguity), else no mechanism is measured (unexplained)."""
    def why(config: str):
        t = eta_table[(eta_table.config == config) & (eta_table.eta < eta)]
        said = "; ".join(f"η = {r.eta:g}: {r.diff_mean:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]" for r in t.itertuples())
        if (t.ci_low > 0).any():
            return "paper-ambiguity", (f"the paper leaves η of eq (3) open; at η = {eta:g} α̂'s noise moves the allocation round "
                                       f"to round, and a smaller η separates GOODSPEED − Fixed-S from zero ({said}; paired 95 % "
                                       "intervals, fig4_eta_sensitivity.csv)")
        return "unexplained", f"a smaller η does not separate GOODSPEED from Fixed-S either ({said}); no mechanism measured"
    return why


def beta_sweep(configs, betas, acceptance, seeds, iterations: int, eta: float, wl_of=None) -> pd.DataFrame:
    """GOODSPEED's final U(x̄) per β: mean and 95 % interval over seeds."""
    runs = [ex.final_utilities(cfg, ("GOODSPEED",), acceptance, seeds=seeds, rounds=iterations, beta=b, eta=eta,
                               wl_of=(lambda sd, cfg=cfg: wl_of(cfg, sd)) if wl_of else None) for cfg in configs for b in betas]
    return _intervals(pd.concat(runs, ignore_index=True), ["config", "beta"], "utility", "mean_U")[["config", "beta", "mean_U", "ci_low", "ci_high"]]


def real_hetero(logs: dict, acceptance, seeds) -> pd.DataFrame:
    """The real run with heterogeneous zoo clients (``ex.REAL_HETERO``): per policy, U(x̄(T)) at the last round
    every client drafted, beside the twin's U(x̄(T)) for the same clients (mean and 95 % interval over seeds)."""
    cfg, rows = ex.real_config(), []
    for pol, log in logs.items():
        t, u = round_series.utility_while_all_active(log)
        tw = ex.final_utilities(cfg, (pol,), acceptance, seeds=seeds, rounds=t, wl_of=lambda sd: ex.real_hetero_workload(cfg, sd))
        rows.append(dict(policy=pol, rounds=t, U_real=u, **dict(zip(("U_twin", "twin_ci_low", "twin_ci_high"), claims.mean_interval(tw.utility)))))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Fig 2
fig2_frame = estimate_bands   # GOODSPEED's X_i(t) beside the realised tokens per round, MA 10 bands


def fig2_plot(fig2: pd.DataFrame, alpha, out):
    """Per client (α in its title): the real goodput's moving average with its ±1 std band and the estimate's."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(13, 5), sharex=True, sharey=True)
    for k, (ax, (c, d)) in enumerate(zip(axes.flat, fig2.groupby("client"))):
        ax.plot(d.batch, d.real_ma, label="real goodput (MA 10)")
        ax.fill_between(d.batch, d.real_ma - d.real_std, d.real_ma + d.real_std, alpha=0.25)
        ax.plot(d.batch, d.est_ma, label="estimated goodput X (MA 10)")
        ax.set(title=f"client {c} (α {alpha[c]:.2f})", xlabel="iteration" if k >= 4 else "", ylabel="tokens / round" if k % 4 == 0 else "")
    axes[0, 0].legend(fontsize=7)
    plotting.save(fig, fig2, out, "fig2_estimated_vs_real")


def fig2_rows(fig2: pd.DataFrame, tag: str = "", files=twin_error.SETTINGS) -> list[dict]:
    """The allocator's estimates against the twin's own per-round goodput: both are the same run's, so a twin error in
    goodput moves both (the rows quote the validated error and say why it is no margin of theirs)."""
    inside = float(((fig2.est_ma >= fig2.real_ma - fig2.real_std) & (fig2.est_ma <= fig2.real_ma + fig2.real_std)).mean())
    why = "the estimate and the goodput it tracks are the same twin run's, so an error in the twin's goodput moves both"
    return [twin_verdicts.quoted(r, "goodput_tok_s", SETTING, why, files=files) for r in (dict(artifact="Fig 2", quantity=f"{tag}estimated goodput tracks the real one (Pearson r of the moving averages)",
                 paper="strong alignment", claim=claims.correlation_sign(fig2.est_ma, fig2.real_ma, +1, 0.5), strength="trend",
                 # the null: no estimate (X held at its first value, as Fixed-S assumes)
                 null_claim=claims.correlation_sign(np.full(len(fig2), fig2.est_ma.iloc[0]), fig2.real_ma, +1, 0.5),
                 models="zoo", cause="models",
                 note=f"{inside:.0%} of the smoothed estimates fall inside the real ±1 std band", statements="fig2-alignment"),
            dict(artifact="Fig 2", quantity=f"{tag}the ±1 std bands encompass most observed goodput peaks (share of per-round peaks inside either band)",
                 paper="most", claim=claims.above(round_series.peaks_in_bands(fig2), 0.5), strength="trend", statements="fig2-bands-peaks",
                 # the null: bands of no width (no spread shaded)
                 null_claim=claims.above(round_series.peaks_in_bands(fig2.assign(real_std=0.0, est_std=0.0)), 0.5),
                 models="zoo", cause="our-reading",
                 note="a peak: a round whose real goodput exceeds the round before and is at least the one after; the paper "
                      f"shades a band around both curves; {(fig2.tokens == 1).mean():.0%} of the rounds emit a single token, so "
                      "a round that accepts its drafts jumps past MA + 1 std"))]


# --------------------------------------------------------------------------- Fig 3
def fig3_choice(region: pd.DataFrame, stated: str, rate_gbps_grid, draft_ms_grid):
    """The calibration point: the fastest uplink of the grid and the largest drafting time at which
    Random-S's excess lies in the paper's range for every configuration; returns (ms, Gbit/s, found)."""
    lo, hi = coverage.paper_range(stated)
    region["random_in_5_25"] = region.random_over_fixed_pct.between(lo, hi)
    ok = region.groupby(["rate_gbps", "draft_ms_per_token"]).random_in_5_25.all()
    fast = ok.loc[max(rate_gbps_grid)]
    return (float(fast[fast].index.max()) if fast.any() else min(draft_ms_grid)), max(rate_gbps_grid), bool(fast.any())


def fig3_twin(configs, profile, acceptance, chosen_ms: float, chosen_rate: float, *, seed: int, prompts: int,
              beta: float, eta: float) -> pd.DataFrame:
    """Each policy's wall-time split in the twin at paper scale, drafting and link at the chosen point."""
    rows = []
    for cfg in configs:
        times = ex.paper_times(cfg, profile, draft_s_per_token=chosen_ms / 1e3, rate_bps=chosen_rate * 1e9)
        for pol in ex.POLICIES:
            log, _ = ex.run_twin(cfg, pol, times, acceptance, seed=seed, prompts_per_domain=prompts, beta=beta, eta=eta)
            rows.append(dict(config=cfg.name, policy=pol, system=CALIBRATED, **round_series.time_split(log)))
    return round_series.with_total(pd.DataFrame(rows))


def fig3_real(scale: str, seed: int) -> pd.DataFrame:
    """The real runs' wall-time split: the committed measurements at full scale, a live run at CI scale."""
    cfg = ex.real_config(scale)
    if scale == "full":
        logs = ex.load_real_runs()
        print("real runs measured on", logs["GOODSPEED"].device.iloc[0])
    else:   # a live run: the real multi-process system is exercised on every CI run
        logs = {pol: g for pol, g in ex.measure_real(scale, seed).groupby("policy", sort=False)}
    return round_series.with_total(pd.DataFrame([dict(config=cfg.name, policy=pol, system=REAL, **round_series.time_split(lg))
                                                  for pol, lg in logs.items()]))


def fig3_rows(fig3: pd.DataFrame, chosen_ms: float, paper: dict, files=twin_error.SETTINGS) -> list[dict]:
    """Per system and configuration: Random-S's excess, sending's share, the two dominant parts, GOODSPEED's
    verification time and total vs Fixed-S, the longer receiving of variable lengths. On the calibrated twin,
    Random-S's excess (the drafting time was chosen on a grid so that it holds) and the sending share and
    dominance (bytes / the chosen link rate) are settings; the rest are reproductions whose nulls are Fixed-S's
    own values (no effect), Random-S's excess (for "comparable") or an equal split of the wall time. On the twin, each
    margin between two policies' times is judged against the twin's validated round-time error in GOODSPEED's setting
    (``twin_verdicts.judged``; ``files``: its tables); the real runs' rows are measurements."""
    lo, hi = coverage.paper_range(paper["fig3-random-5-25"])
    rows = []
    for sys_name, d in fig3.groupby("system", sort=False):
        calibrated = sys_name == CALIBRATED
        for cfg_name, f in d.groupby("config", sort=False):
            f = f.set_index("policy")
            tag = f"{cfg_name}, {sys_name}"
            row = lambda quantity, **kw: dict(artifact="Fig 3", quantity=f"{tag}: {quantity}", models="zoo", **kw)
            extra = 100 * (f.loc["Random-S", "total"] / f.loc["Fixed-S", "total"] - 1)
            random_q = f"Random-S wall time above Fixed-S by {paper['fig3-random-5-25']} %"
            mechanism = "Random-S waits for the client with the largest S every round; how much that costs depends on the draft time per token"
            send = 100 * f["sending"].sum() / f["total"].sum()
            shares = {part: 100 * f[part].sum() / f["total"].sum() for part in ("receiving", "verification")}
            dominate_q = "receiving and verification dominate (together at least 90 % of wall time)"
            if calibrated:   # the drafting time and link were chosen so that these hold: context, not results
                rows.append(row(random_q, paper=paper["fig3-random-5-25"], reproduced=round(extra, 1), unit="%", kind="setting",
                                statements="fig3-random-5-25",
                                note=f"calibration: the drafting time ({chosen_ms} ms/token) was chosen as the largest on the grid "
                                     f"where this holds for every configuration (fig3_region.csv); {mechanism}"))
                rows.append(row(f"sending under {paper['fig3-sending-0.1']} % of wall time", paper=f"< {paper['fig3-sending-0.1']}",
                                reproduced=round(send, 4), unit="%", kind="setting", statements="fig3-sending-0.1",
                                note="bytes / the chosen link rate: a ~64-byte reply, arithmetic on the calibration"))
                rows.append(row(dominate_q, paper="dominate", reproduced=round(sum(shares.values()), 2), unit="%", kind="setting",
                                statements="fig3-dominate", note="the twin's wall time is receiving + verification + sending, "
                                                                 "and sending is bytes / the chosen link rate"))
            else:
                rows.append(row(random_q, paper=paper["fig3-random-5-25"], claim=claims.within(extra, lo, hi), unit="%",
                                null_claim=claims.within(0.0, lo, hi), strength="match", reproduced=round(extra, 1),
                                statements="fig3-random-5-25", cause="hardware", note=mechanism))
                rows.append(row(f"sending under {paper['fig3-sending-0.1']} % of wall time", paper=f"< {paper['fig3-sending-0.1']}",
                                claim=claims.below(send, paper["fig3-sending-0.1"]), unit="%", strength="match", reproduced=round(send, 4),
                                # the null: the wall time split evenly over its three parts
                                null_claim=claims.below(100 / 3, paper["fig3-sending-0.1"]), statements="fig3-sending-0.1",
                                cause="hardware", note="the real run's loopback gRPC send on 2 shared cores costs milliseconds, where "
                                                       "the paper's server puts a ~64-byte reply on its link"))
                both = sum(shares.values())
                rows.append(row(dominate_q, paper="dominate", reproduced=round(both, 2), unit="%", strength="match",
                                claim=claims.above(both, 90.0), null_claim=claims.above(200 / 3, 90.0), cause="hardware",
                                note="our reading of 'dominate': the two together at least 90 % of the wall time (the null: an even "
                                     "split, 66.7 %); the real run's gRPC send takes the rest", statements="fig3-dominate"))
            # the twin's rows: each margin between two policies' times judged against its validated round-time error
            judged = (lambda r, m: twin_verdicts.judged(r, m, "round_time_s", SETTING, files=files)) if calibrated else (lambda r, m: r)
            ratio = lambda pct: 1 + pct / 100
            dv = 100 * (f.loc["GOODSPEED", "verification"] / f.loc["Fixed-S", "verification"] - 1)
            v3 = paper["fig3-verify-5"]
            rows.append(judged(row("GOODSPEED verification time vs Fixed-S", paper=v3, reproduced=round(dv, 1), unit="%",
                                   tolerance=3.0, null=0.0, statements="fig3-verify-5", cause="models",
                                   note="verification time follows the number of rounds and sum S per round (Fixed-S now spends the whole budget C too); "
                                        "GOODSPEED's longer drafts for high-acceptance clients need fewer rounds only where acceptance differs enough"),
                               twin_verdicts.flip_pct(ratio(dv), [ratio(v3 - 3.0), ratio(v3 + 3.0)])))
            gw = 100 * (f.loc["GOODSPEED", "total"] / f.loc["Fixed-S", "total"] - 1)
            rows.append(judged(unless_null_holds(row(
                f"GOODSPEED total wall time comparable to Fixed-S (within ±{lo:g} %, below Random-S's stated excess)",
                paper="comparable", claim=claims.within(gw, -lo, lo), unit="%", reproduced=round(gw, 1),
                # the null: the simplest alternative the claim rules out, GOODSPEED costing what Random-S costs
                null_claim=claims.within(extra, -lo, lo), cause="models",
                strength="trend" if calibrated else "match", statements="fig3-comparable-total",
                note="'comparable' read as closer to Fixed-S than the smallest excess the paper calls an increase")),
                twin_verdicts.flip_pct(ratio(gw), [ratio(-lo), ratio(lo)])))
            recv = f["receiving"]
            rows.append(judged(row("GOODSPEED and Random-S wait longer to receive than Fixed-S (by more than 1 %)", paper="longer",
                            claim=claims.all_of({f"{p} {recv[p]:.3f} s > Fixed-S {recv['Fixed-S']:.3f} s x 1.01": recv[p] > 1.01 * recv["Fixed-S"]
                                                 for p in ("GOODSPEED", "Random-S")}, "above_fixed_with_margin"),
                            null_claim=claims.all_of({p: recv["Fixed-S"] > 1.01 * recv["Fixed-S"] for p in ("GOODSPEED", "Random-S")},
                                                "above_fixed_with_margin"),   # the null: Fixed-S's own wait
                            strength="trend", statements="fig3-receive-longer", cause="models",
                            note="variable draft lengths make the server wait for the client with the largest S_i"),
                               min(twin_verdicts.flip_pct(recv[p] / recv["Fixed-S"], [1.01]) for p in ("GOODSPEED", "Random-S"))))
    return rows


# --------------------------------------------------------------------------- Theorem 1 (measured, beyond the paper)
def theorem1(configs, acceptance, prof, runs, estimates, *, seeds, iterations: int, beta: float, eta: float, seed: int,
             chosen_ms: float, chosen_rate: float):
    """(a) i.i.d. acceptance, exact x*: every policy's final U over seeds against U(x*), and GOODSPEED's
    ‖X(t) − x*‖; (b) trace-driven, x* of the pooled i.i.d. alphas: the distance and U(x*) − U(x̄(T)) of
    the Fig 4 runs (and the per-second optimum where allocations can be enumerated, 4 clients).
    Returns (xstar, theorem_iid, dist, gaps)."""
    pols_all = ex.POLICIES + (ex.FLOOR,)
    xs_rows, dist_rows, gap_rows, iid_rows = [], [], [], []
    for cfg in configs:
        wl_iid, iid, alpha_iid = ex.iid_model(acceptance, cfg, seed)
        opt_iid = gs.optimum(alpha_iid, cfg.capacity)
        pols = [p for p in pols_all if p != ex.FLOOR or cfg.capacity % cfg.clients]
        fu = ex.final_utilities(cfg, pols, iid, seeds=seeds, rounds=iterations, beta=beta, eta=eta, wl_of=lambda s: wl_iid)
        t = _intervals(fu, ["config", "policy"], "utility", "mean_U")
        t.insert(2, "U_star", opt_iid.utility)
        t["above_optimum"] = [bool(claims.interval_above(g.utility.to_numpy(), np.full(len(g), opt_iid.utility)).holds)
                              for _, g in fu.groupby("policy", sort=False)]
        iid_rows.append(t)
        _, est_iid = ex.run_twin(cfg, "GOODSPEED", ex.sync_times(cfg), iid, rounds=iterations, seed=seed, beta=beta, eta=eta, wl=wl_iid)
        dist_rows.append(round_series.estimate_distance(est_iid, opt_iid.x, config=cfg.name, experiment="(a) i.i.d., exact x*"))
        alpha = client_mix.client_alpha(acceptance, ex.workload(cfg))
        opt = gs.optimum(alpha, cfg.capacity)
        per_sec = None
        if cfg.clients <= 4:
            times = ex.paper_times(cfg, prof, draft_s_per_token=chosen_ms / 1e3, rate_bps=chosen_rate * 1e9)
            per_sec = gs.optimum_per_second(alpha, cfg.capacity, lambda k, times=times: round_series.sync_round_seconds(times, k))
        for i in range(cfg.clients):
            xs_rows.append(dict(config=cfg.name, client=i, alpha_iid=round(float(alpha_iid[i]), 6),
                                x_star_iid=round(float(opt_iid.x[i]), 6), alpha=round(float(alpha[i]), 6), C=cfg.capacity,
                                x_star=round(float(opt.x[i]), 6),
                                x_star_per_second=round(float(per_sec.x[i]), 4) if per_sec else np.nan))
        dist_rows.append(round_series.estimate_distance(estimates[cfg.name, "GOODSPEED"], opt.x, config=cfg.name,
                                                        experiment="(b) trace-driven, pooled-α x*"))
        for pol in pols_all:
            if (cfg.name, pol) in runs:
                u = round_series.utility_curve(runs[cfg.name, pol])
                gap_rows.append(pd.DataFrame(dict(config=cfg.name, policy=pol, iteration=np.arange(1, len(u) + 1),
                                                  gap=opt.utility - u.to_numpy())))
        print(f"{cfg.name}: (a) U(x*) = {opt_iid.utility:.4f} (gap <= {opt_iid.gap:.1e}); (b) pooled-α U(x*) = {opt.utility:.4f}")
    return pd.DataFrame(xs_rows), pd.concat(iid_rows, ignore_index=True), pd.concat(dist_rows), pd.concat(gap_rows)


def theorem1_rows(configs, theorem_iid: pd.DataFrame, dist: pd.DataFrame, n_seeds: int, files=twin_error.SETTINGS) -> list[dict]:
    rows = []
    for cfg in configs:
        t = theorem_iid[theorem_iid.config == cfg.name]
        # a check, not a result: U(x̄) <= U(x*) is a Jensen bound every policy meets (Random-S too)
        rows.append(dict(check="Theorem 1 (a): no policy ends above U(x*)", quantity=f"{cfg.name}, i.i.d. acceptance, {n_seeds} seeds, 95 % interval",
                         ours=None, reference=f"U(x*) = {t.U_star.iloc[0]:.4f}",
                         claim=claims.all_of({f"{r.policy} {r.mean_U:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}] vs {r.U_star:.4f}": not r.above_optimum
                                              for r in t.itertuples()}, "none_above_optimum"),
                         note="the twin against the exact optimum; a bound by Jensen's inequality that every allocation meets"))
        for exp in dist.experiment.unique():
            d = dist[(dist.config == cfg.name) & (dist.experiment == exp)].distance.to_numpy()
            k = max(len(d) // 6, 5)
            # sensitivity, not Theorem 1's claim: the theorem is a β → 0 limit (theorem1_beta_rows), silent on one run at β = 0.5
            rows.append(twin_verdicts.quoted(dict(artifact="Theorem 1 (sensitivity)",
                             quantity=f"{cfg.name}, {exp}: ‖X(t) − x*‖ shrinks on one run at β = 0.5 (mean of the first vs last sixth of the run)",
                             paper="converges", claim=claims.below(float(d[-k:].mean()), float(d[:k].mean())), strength="trend",
                             # the null: estimates that never move (their distance stays where it starts)
                             null_claim=claims.below(float(d[:k].mean()), float(d[:k].mean())), models="zoo", cause="our-reading",
                             statements="thm1-convergence" + ("" if exp.startswith("(a)") else " abstract-bounded-error"),
                             note="X(t) is smoothed with β = 0.5: it tracks each round's tokens closely, so its distance to x* stays at the "
                                  "per-round noise level" + ("" if exp.startswith("(a)") else "; with non-stationary acceptance X(t) tracks the current domain, not the stationary x*")),
                                          "goodput_distance", SETTING, THM1_WHY, files=files))
    return rows


THM1_POLICIES = ("GOODSPEED", "Fixed-S")   # Fixed-S ignores X(t), so its distance cannot depend on β: the null


def theorem1_beta_sweep(configs, acceptance, betas, seeds, *, window: int, burn_in: float, eta_per_beta: float,
                        seed: int, wl_of=None) -> pd.DataFrame:
    """Theorem 1 as stated (β → 0): ‖x̄ − x*‖ per (config, policy, β, seed) under i.i.d. acceptance
    (``ex.iid_model``, x* exact), x̄ the mean goodput over ``window`` rounds after ceil(burn_in / β) rounds
    (``ex.averaged_distance``). Eq (3)'s η falls with β, η = eta_per_beta · β: Assumption 3 asks η/β → 0,
    and a fixed η would leave α̂'s noise in the allocation however small β is. ``wl_of(cfg)`` (long prompts)
    replaces the zoo workload."""
    if not 0 < eta_per_beta <= 1:
        raise ValueError(f"eta_per_beta: must lie in (0, 1] (η = eta_per_beta · β < 1), got {eta_per_beta!r}")
    bad = [b for b in betas if not 0 < b < 1]
    if bad:
        raise ValueError(f"betas: each must lie in (0, 1) (eq 4), got {bad}")
    rows = []
    for cfg in configs:
        wl, iid, alpha = ex.iid_model(acceptance, cfg, seed, base=wl_of(cfg) if wl_of else None)
        x_star = gs.optimum(alpha, cfg.capacity).x
        for pol in THM1_POLICIES:
            for b in betas:
                for sd in seeds:
                    rows.append(dict(config=cfg.name, policy=pol, beta=b, seed=sd,
                                     distance=ex.averaged_distance(cfg, pol, iid, alpha, x_star, beta=b, seed=sd, window=window,
                                                                   burn_in=burn_in, eta=eta_per_beta * b, wl=wl)))
    return pd.DataFrame(rows)


def theorem1_beta_both(configs, acceptance_het, acceptance_zoo, betas, seeds, out, *, seed: int, wl_of, tags: dict, **kw):
    """The β sweep on the heterogeneous clients (``wl_of(cfg)``, long prompts; the reproduction rows) and on the zoo
    clients (sensitivity rows); saves the table of both and the heterogeneous clients' figure. Returns (table, rows)."""
    het = theorem1_beta_sweep(configs, acceptance_het, betas, seeds, seed=seed, wl_of=wl_of, **kw)
    zoo = theorem1_beta_sweep(configs, acceptance_zoo, betas, seeds, seed=seed, **kw)
    table = pd.concat([theorem1_beta_table(het).assign(setting="heterogeneous"),
                       theorem1_beta_table(zoo).assign(setting="narrow spread")], ignore_index=True)
    plotting.save(theorem1_beta_figure(table[table.setting == "heterogeneous"], kw["eta_per_beta"]), table.round(6), out, "theorem1_beta_sweep")
    return table, (theorem1_beta_rows(configs, het, tags=tags, **kw)
                   + theorem1_beta_rows(configs, zoo, tags={c.name: "sensitivity, narrow α spread, zoo clients: " for c in configs}, **kw))


def theorem1_beta_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Mean distance with its 95 % interval over seeds, per (config, policy, β)."""
    return _intervals(sweep, ["config", "policy", "beta"], "distance", "mean_distance")


def theorem1_beta_figure(table: pd.DataFrame, eta_per_beta: float):
    """‖x̄ − x*‖ against β (log axis, falling to the right) per configuration and policy, mean with the 95 % band."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for (cfg_name, pol), g in table.groupby(["config", "policy"], sort=False):
        line, = ax.plot(g.beta, g.mean_distance, marker="o", ls="-" if pol == "GOODSPEED" else ":", label=f"{pol}, {cfg_name}")
        ax.fill_between(g.beta, g.ci_low.clip(lower=0), g.ci_high, color=line.get_color(), alpha=0.2)
    ax.set(xscale="log", xlabel=f"β (eq 4 smoothing; η = {eta_per_beta:g}·β)", ylabel="‖x̄ − x*‖ (tokens / round)",
           title="Theorem 1: distance of the averaged goodput to x* (mean, 95 % band)")
    ax.invert_xaxis()
    ax.legend(fontsize=6)
    return fig


def distance_falls(sweep: pd.DataFrame, config: str, policy: str) -> claims.Claim:
    """"‖x̄ − x*‖ falls as β falls" for one policy as a trend over seeds: per seed the slope of log distance on log β,
    its 95 % interval above zero (``claims.log_slope_positive``). A finite averaging window leaves a noise floor in
    x̄ that does not fall with β, so neighbouring β may swap at small distances; the slope reads the whole sweep."""
    d = sweep[(sweep.config == config) & (sweep.policy == policy)]
    return claims.log_slope_positive({b: g.sort_values("seed").distance.to_numpy() for b, g in d.groupby("beta")},
                                     "distance_falls_with_beta", "β")


def window_floor(sweep: pd.DataFrame, config: str, policy: str = "GOODSPEED") -> tuple[float, float, float]:
    """The finite window's noise floor at the smallest β: (smallest β, the mean distance there, its spread over seeds
    (standard deviation)): a distance that is no larger than its own spread has reached the floor."""
    d = sweep[(sweep.config == config) & (sweep.policy == policy)]
    b = d.beta.min()
    at = d[d.beta == b].distance
    return float(b), float(at.mean()), float(at.std(ddof=1)) if len(at) > 1 else float("nan")


THM1_WHY = ("Theorem 1 is a statement on the allocation process (i.i.d. acceptance, x* exact for that process): its "
            "distance and x* are in the same tokens per round, so an error of the twin against the real system scales both")


def theorem1_beta_rows(configs, sweep: pd.DataFrame, *, window: int, burn_in: float, eta_per_beta: float,
                       tags: dict | None = None, files=twin_error.SETTINGS) -> list[dict]:
    """The Theorem 1 reproduction rows: the distance falls as β falls (GOODSPEED), the null the same predicate
    on Fixed-S, whose allocation ignores X(t) and so β. Each quotes the twin's validated goodput error (``THM1_WHY``:
    no margin of the row is judged against it)."""
    rows = []
    betas = sorted(sweep.beta.unique())
    for cfg in configs:
        if cfg.name not in set(sweep.config):
            continue
        n = sweep[(sweep.config == cfg.name) & (sweep.policy == "GOODSPEED")].seed.nunique()
        b0, d0, sd0 = window_floor(sweep, cfg.name)
        rows.append(twin_verdicts.quoted(unless_null_holds(dict(
            artifact="Theorem 1",
            quantity=f"{(tags or {}).get(cfg.name, '')}{cfg.name}, i.i.d. acceptance: ‖x̄ − x*‖ falls as β falls (β = {', '.join(f'{b:g}' for b in betas)}; "
                     f"{n} seeds, 95 % interval)",
            paper="→ 0 as β → 0", claim=distance_falls(sweep, cfg.name, "GOODSPEED"),
            null_claim=distance_falls(sweep, cfg.name, "Fixed-S"), strength="trend", unit="tokens / round", models="zoo",
            cause="our-reading", statements="thm1-convergence",
            note=f"x̄ is the mean goodput μ_i(S_i(t)) over a finite window of {window} rounds after ⌈{burn_in:g}/β⌉ rounds (Theorem "
                 f"4's interval [I1, I2], I1 > T/β), η = {eta_per_beta:g}·β (Assumption 3: η/β small); x* exact for i.i.d. "
                 f"acceptance; the finite window leaves a sampling-noise floor in x̄ that does not fall with β: at β = {b0:g} the "
                 f"distance is {d0:.3g} with a spread of {sd0:.3g} over seeds, so neighbouring β can swap once the bias is below "
                 "it; the paper states no bound at finite β")), "goodput_distance", SETTING, THM1_WHY, files=files))
    return rows


def assumption1_row(iterations: int) -> dict:
    """Assumption 1's 700 rounds: a claim about the time average of α̂_i that no figure of ours can hold."""
    return dict(artifact="Assumption 1", quantity="the time average of α̂_i converges within 700 rounds", paper="within 700 rounds",
                reproduced="–", status="not-reproducible", statements="assump1-700", cause="paper-ambiguity", models="zoo",
                note=f"our clients switch domain half-way through their prompts by construction (non-stationary, as the paper's "
                     f"prompts are), so the time average of α̂_i mixes two domains' rates and settles only when a stream ends; the "
                     f"paper points to Fig 4, which plots U(x̄), not ᾱ_i, and our runs last {iterations} iterations")


# --------------------------------------------------------------------------- on the real pair's acceptance
def fig4_realpair(configs, *, seeds, iterations: int, beta: float, eta: float, seed: int, files=twin_error.SETTINGS):
    """Fig 4's final U over seeds with the real pair's acceptance; returns (final utilities with 95 %
    intervals, comparison rows)."""
    from ...serving import acceptance_sources

    acc_rp = twin.TraceAcceptance(acceptance_sources.traces(ex.REALPAIR), target=acceptance_sources.source(ex.REALPAIR).target)
    out, rows = [], []
    for cfg in configs:
        wl_rp = lambda sd, cfg=cfg: ex.realpair_workload(cfg, sd)
        alpha_rp = client_mix.client_alpha(acc_rp, wl_rp(seed))
        fu = ex.final_utilities(cfg, ex.POLICIES, acc_rp, seeds=seeds, rounds=iterations, beta=beta, eta=eta, wl_of=wl_rp)
        f = fu.pivot(index="seed", columns="policy", values="utility")
        c, null = _ends_above(f)
        m, lo, hi = claims.mean_interval((f["GOODSPEED"] - f["Fixed-S"]).to_numpy())
        cause = _tie_or_loss(c.holds, f["GOODSPEED"], f["Fixed-S"])
        why = ("" if c.holds else f"; GOODSPEED - Fixed-S {m:+.3f} [{lo:+.3f}, {hi:+.3f}]: "
               + ("a tie: with α this close across clients the whole budget split evenly already sits near the optimum"
                  if cause == "models" else "a loss, which α this close across clients does not explain (it explains a tie); "
                  "no mechanism measured"))
        best = max(ex.POLICIES[1:], key=lambda p: f[p].mean())
        rows.append(twin_verdicts.judged(dict(
            artifact="Fig 4 (real pair)", quantity=f"sensitivity, narrow α spread (real pair, α {alpha_rp.min():.2f}–"
            f"{alpha_rp.max():.2f}): {cfg.name}: GOODSPEED ends above both baselines ({len(f)} seeds, 95 % interval)",
            paper="yes", claim=c, null_claim=null, strength="match", statements="fig4-ends-above", models="real pair",
            cause=cause, note=f"real pair's acceptance, clients' α {alpha_rp.min():.2f}-{alpha_rp.max():.2f}" + why),
            _u_margin(cfg.clients, f["GOODSPEED"], f[best]), "utility", SETTING, files=files))
        out.append(_intervals(fu, ["config", "policy"], "utility", "mean_U"))
    return pd.concat(out, ignore_index=True), rows


REALPAIR_REPLAYS = {"serving_runs": "realpair_twin_vs_real", "serving_runs_llamacpp": "realpair_llamacpp_twin_vs_real"}


def realpair_replay(seed: int, out, name: str = "serving_runs") -> tuple[pd.DataFrame, list[dict]]:
    """The real pair's committed serving runs ``name`` (the transformers drafters', or the llama.cpp drafters' beside
    them) against their replays (``serving_validation.realpair.serve_replay``), written to ``out`` as ``REALPAIR_REPLAYS[name]``,
    and their check rows (``realpair_validation_rows``)."""
    from pathlib import Path

    from ..serving_validation import realpair as rs

    if name not in REALPAIR_REPLAYS:
        raise ValueError(f"name: expected one of {sorted(REALPAIR_REPLAYS)}, got {name!r}")
    val = rs.serve_replay(seed, name)
    plotting.write_csv(val.round(6), Path(out) / f"{REALPAIR_REPLAYS[name]}.csv")
    return val, realpair_validation_rows(val)


def realpair_validation_rows(rp_val: pd.DataFrame) -> list[dict]:
    """The real pair's serving runs against their replays, as checks (ours against ours). With each pass's
    measured time (``serving_validation.realpair.REPLAYS[0]``) round time and goodput are bookkeeping -- the replay takes
    every measured time of the run, so they agree by construction -- and the queueing delay is the one quantity
    it models; with eq (19) fitted on the other run (``REPLAYS[1]``) every metric is a prediction."""
    from ...serving.analysis.validation import METRICS, TOLERANCE
    from ..serving_validation import realpair as rs

    sel = rp_val[rp_val["quantile"].isin(["p50", "p90"]) & rp_val.metric.isin(["round_time_s", "goodput_tok_s", "queue_s"])]
    rows = []
    for r in sel.itertuples():
        measured, queue = r.verify == rs.REPLAYS[0], r.metric == "queue_s"
        # the setting: "realpair", or "realpair, <backend> drafter" for runs with several drafter runtimes
        paper = getattr(r, "paper", "realpair")
        setting = paper.replace("realpair", "real pair")
        name = ("bookkeeping: " if measured and not queue else "") + f"replay vs real ({setting}, {r.verify})"
        note = (f"real {1e3 * r.real:.3f} ms, replay {1e3 * r.twin:.3f} ms ({1e3 * (r.twin - r.real):+.3f} ms)" if queue else
                "the replay takes each pass's and each draft's measured time and the real run's allocations, so this "
                "agrees by construction" if measured else "every pass predicted by eq (19) fitted on the other run's passes")
        pair = ("Qwen2.5-Coder 0.5B drafting for 1.5B" + (" (the draft's Q4_K_M GGUF on llama.cpp)" if "llamacpp" in paper else "")
                + ", one torch thread per process; ")
        rows.append(dict(check=name, quantity=f"{r.policy}, N = {r.n_clients}: {METRICS[r.metric]} {r.quantile}, difference",
                         ours=round(r.diff_pct, 1), reference=0.0, unit="%", tolerance=TOLERANCE[r.quantile],
                         note=pair + note))
    return rows
