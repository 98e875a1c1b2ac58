"""The stochastic twin's error against the real runs, attributed to its components.

Between the replay (``serving.sim.replay``: a real run's own outcomes and times, only queueing, batching and the
verifier's time modelled) and the stochastic twin (``twin.simulate``: acceptance drawn from traces, every time
from a model), one component is swapped at a time, on the same real runs and seeds, and each variant is compared
with the real run (``validation.compare``'s metrics and quantiles; each seed's, their median over the seeds:
``differences``):

- ``COMPONENTS``: the replay with one of the stochastic twin's models in place of the run's own values, the
  replay with all its time models (the run's own acceptance), and the stochastic twins themselves;
- the variants are built by ``variant`` from what a ``Context`` holds for one real run (its setting's policy
  objects, eq (19) fitted on the other runs, the time models).

``attribution`` gives per variant and run the differences, ``summary`` per variant, metric and quantile the
worst |difference| over the runs (the table ``twin_error_attribution.csv``), ``figure`` plots it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import seaborn as sns

from . import twin_error
from ..timemodels import measured_times
from ..log import real_rounds
from ..sim.replay import replay

REPLAY = "replay (eq (19) of the other runs)"
# the stochastic twins among the components: name -> (the kind of ``Context.stochastic`` it runs, what it puts in the
# replay's place); each name is written here once, ``twin_named`` gives it by kind
TWINS = {
    twin_error.DOMAIN_IID: ("own", "the stochastic twin as it was: trace draws, this run's fit"),
    "stochastic twin (prompt and position, held-out drawn times)":
        ("held-out", "PromptAcceptance, every time held-out and drawn"),
    "stochastic twin (prompt and position, held-out, shared drafter core)": (
        "shared core",
        "PromptAcceptance, drafting and the drafter processes' other CPU as held-out work on the drafters' shared core, "
        "other times held-out and drawn"),
    "stochastic twin (prompt and position, held-out, time-sliced drafter core)": (
        "sliced core",
        "the same, the drafters' core run in the kernel's time slices, round-robin (``processes.SlicedCore``), not "
        "processor-shared"),
    "stochastic twin (prompt and position, held-out, queued drafter core)": (
        "queued core",
        "the same time slices, a drafter's post-reply work and next drafting one job whose round starts when it first "
        "runs (``interfaces.Times.core_queued``): its wait for the core before the round, not inside it"),
    "stochastic twin (prompt and position, held-out, shared drafter core of measured speed)": (
        "core speed",
        "the shared drafter core, its slowness common to the drafters on it: a held-out value per 0.1 s of simulated "
        "time, each drafting's own factor the residual (``interfaces.Times.core_speed``)"),
    "stochastic twin (prompt and position, held-out, woken-first drafter core of measured speed)": (
        "woken first",
        "that core served as the kernel serves a task that wakes: a drafter woken by its reply runs first, alone, for a "
        "slice once the running ones' slice ends (``processes.WakeFirstCore``), its post-reply work and next drafting "
        "one job whose round starts when it first runs"),
    "stochastic twin (prompt and position, held-out, shared drafter core of measured speed, staggered start)": (
        "staggered start",
        "that core, the clients starting as in a held-out run and the server's queue opening once the last has started "
        "(the real runs' start barrier: ``interfaces.Times.starts``)"),
    "stochastic twin (prompt and position, held-out, shared drafter core of measured speed, staggered start, "
    "server intake)": (
        "server intake",
        "that twin, a request that reaches the server during a pass waiting for the server's intake as the held-out "
        "runs' requests did that far into a pass (``interfaces.Times.intake``)"),
    twin_error.LENGTHS: (
        "prompt lengths",
        "that twin, each prompt of its length as the held-out runs' server verified it (the drafters cut a prompt to "
        "its last 48 tokens; a shorter one keeps its own length), not 48 tokens"),
    twin_error.STAMPS: (
        "wake stamps",
        "that twin, a reply's way and its drafter's wait in hand drawn together from the held-out runs' rounds with as "
        "many other drafters busy, read on the drafters' own clocks only (``interfaces.Times.wake_stamps``): a round "
        "ends when its reply is in the drafter's hands, the next begins once the wait in hand has passed; the work "
        "on the core runs as before"),
    twin_error.PERIODS: (
        "busy periods",
        "that twin, its core's slowness drawn once per busy period of the core (a value when a drafting finds it idle, "
        "held while it stays busy: ``interfaces.Times.core_period``), from the held-out runs' busy periods (their "
        "draftings that overlap), each drafting's own factor its residual within its period, not per 0.1 s"),
    twin_error.VALIDATED: (
        "one run",
        "that twin, each seed's times drawn from one held-out run of its N and that run's run of one client "
        "(``serving_validation.runs.one_run``), not from every held-out run pooled: a run's machine state holds for the "
        "whole run and differs from run to run, and rounds drawn from several runs' values mix their states"),
    twin_error.LENGTHS[:-1] + ", drafters' wake-up)": (
        "drafter wake",
        "that twin, a reply's way and its drafter's wait before its next drafting drawn together from the held-out "
        "runs' rounds with as many other drafters busy (``interfaces.Times.wake``), not the way of one-client runs"),
    twin_error.LENGTHS[:-1] + ", woken drafter served first)": (
        "validated, woken first",
        "that twin, its drafters' core served as the kernel serves a task that wakes (``processes.WakeFirstCore``, the "
        "kernel's slice): a drafter woken by its reply runs first, alone, for a slice once the running ones' slice "
        "ends, its post-reply work and next drafting one job whose round starts when it first runs"),
}
_TWINS = {name: kind for name, (kind, _) in TWINS.items()}


def twin_named(kind: str) -> str:
    """The component name of the stochastic twin of ``kind`` (``Context.stochastic``'s)."""
    names = [name for name, k in _TWINS.items() if k == kind]
    if not names:
        raise ValueError(f"kind: expected one of {sorted(_TWINS.values())}, got {kind!r}")
    return names[0]


# component -> what it puts in the replay's place (module docstring); the order of the table and the figure
COMPONENTS = {
    REPLAY: "nothing: the run's own outcomes and times, eq (19) fitted on the other runs",
    "verification: measured passes": "each pass the real run made its measured time (eq (19)'s share)",
    "verification: eq (19) x measured noise": "eq (19) times a factor drawn from the other runs' pass / eq (19)",
    "drafting: e0 + e1 k of this run": "the stochastic twin's drafting line, fitted on the run itself",
    "drafting: held-out, drawn": "e0 + e1 k fitted on the other runs of this N, times a drawn measured factor",
    "client gap: median": "the client's median time between rounds",
    "link: median up / reply": "the median uplink and reply time",
    "server: no wake-up, no turnaround": "the stochastic twin's server, starting at once",
    "server: wake-up drawn per idle wake": "the batch former's view of arrivals: a measured wake-up per wake",
    "acceptance: domain, i.i.d. per round": "outcomes drawn from the domain's traced rounds (the twin's TraceAcceptance)",
    "acceptance: prompt and position": "outcomes of the prompt's traced sequence at the round's position (PromptAcceptance)",
    "(a) own acceptance, the twin's time models": "drafting e0 + e1 k, median gap and link, no wake-up: the run's outcomes",
    "(a') own acceptance, held-out drawn times": "every time drawn from the models of the other runs of this N",
    **{name: what for name, (_, what) in TWINS.items()},
}


@dataclass
class Context:
    """What the variants of one real run need: its log, key and workload, ``policies()`` fresh (former,
    allocator), eq (19) fitted on the other runs (``verify``), the median wake-up and the turnaround values of
    the other runs (``dispatch``, ``turnaround``), the held-out drawn time models (``drawn``) and the two
    acceptance models; ``stochastic(acceptance, times, seed, **server)`` the stochastic twin of the run."""
    key: tuple
    real: pd.DataFrame
    workload: object
    policies: Callable
    verify: object
    dispatch: float
    dispatches: np.ndarray
    turnaround: np.ndarray
    drawn: measured_times.Drawn
    trace: object
    prompt: object
    passes: Callable
    fitted_rounds: Callable     # (rounds, which) -> rounds with ``which`` of the twin's own-run fits swapped in
    stochastic: Callable


def _swap_drawn(rounds: dict, drawn: measured_times.Drawn, passes, which: set, seed: int) -> dict:
    """``rounds`` with drafting / gap / link values drawn from the held-out models ``drawn``."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 17]))
    out = {}
    for c, r in rounds.items():
        m, n = drawn.clients[c], len(r)
        r = r.copy()
        if "drafting" in which:
            k = passes(r, c)
            f = rng.choice(m.factors[np.isfinite(m.factors)], n)
            r["t_draft"] = np.where(k > 0, (m.e0 + m.e1 * k) * f, 0.0)
        if "gap" in which:
            r.loc[r.index[1:], "gap"] = rng.choice(m.gaps, n - 1) if n > 1 else []
        if "link" in which:
            r["up"], r["down"] = rng.choice(m.up, n), rng.choice(m.down, n)
        out[c] = r
    return out


class _Noisy:
    def __init__(self, model, factors, seed):
        self.model, self.draw = model, measured_times._Draws(factors, np.random.default_rng(np.random.SeedSequence([seed, 23])))

    def __call__(self, batch):
        return float(self.model(batch)) * self.draw()


def variant(ctx: Context, component: str, seed: int) -> pd.DataFrame:
    """The log of ``component`` (``COMPONENTS``) for the real run of ``ctx``, seed ``seed``."""
    if component not in COMPONENTS:
        raise ValueError(f"component: expected one of {list(COMPONENTS)}, got {component!r}")
    if component in _TWINS:
        return ctx.stochastic(_TWINS[component], seed)
    former, alloc = ctx.policies(seed)
    kw = dict(label=ctx.key[1], dispatch=ctx.dispatch, turnaround=ctx.turnaround, seed=seed)
    verify, rounds, acceptance = ctx.verify, None, None
    own = real_rounds(ctx.real)
    if component == "verification: measured passes":
        from ..sim.replay import MeasuredPasses
        verify = MeasuredPasses(ctx.real, ctx.verify)
    elif component == "verification: eq (19) x measured noise":
        verify = _Noisy(ctx.verify, ctx.drawn.verify_factors, seed)
    elif component == "drafting: e0 + e1 k of this run":
        rounds = ctx.fitted_rounds(own, {"drafting"})
    elif component == "drafting: held-out, drawn":
        rounds = _swap_drawn(own, ctx.drawn, ctx.passes, {"drafting"}, seed)
    elif component == "client gap: median":
        rounds = ctx.fitted_rounds(own, {"gap"})
    elif component == "link: median up / reply":
        rounds = ctx.fitted_rounds(own, {"link"})
    elif component == "server: no wake-up, no turnaround":
        kw.update(dispatch=0.0, turnaround=0.0)
    elif component == "server: wake-up drawn per idle wake":
        kw.update(dispatch=ctx.dispatches)
    elif component == "acceptance: domain, i.i.d. per round":
        acceptance = ctx.trace
    elif component == "acceptance: prompt and position":
        acceptance = ctx.prompt
    elif component == "(a) own acceptance, the twin's time models":
        rounds = ctx.fitted_rounds(own, {"drafting", "gap", "link"})
        kw.update(dispatch=0.0, turnaround=0.0)
    elif component == "(a') own acceptance, held-out drawn times":
        rounds = _swap_drawn(own, ctx.drawn, ctx.passes, {"drafting", "gap", "link"}, seed)
        verify = _Noisy(ctx.verify, ctx.drawn.verify_factors, seed)
        kw.update(dispatch=ctx.dispatches)
    return replay(ctx.real, ctx.workload, former, alloc, verify, rounds=rounds, acceptance=acceptance, **kw)


def differences(real: pd.DataFrame, logs: list[pd.DataFrame], quantiles=(50, 90)) -> list[dict]:
    """Per metric and quantile: real, the variant, their difference in % and in absolute terms. The variant's value is
    the median over its seeds' logs of each log's own quantile: a seed is one run of the variant, as the real run is
    one run; pooling the seeds' values would make a quantile over clients one over runs (with one client, p90 lies
    between the two fastest of five seeds) and, where seeds differ in their machine state, mix the states."""
    from .validation import metric_values

    if not logs:
        raise ValueError("logs: no seed's log to compare with the real run")
    a, vals = metric_values(real), [metric_values(lg) for lg in logs]
    rows = []
    for m in a:
        for q in quantiles:
            x, y = float(np.percentile(a[m], q)), float(np.median([np.percentile(v[m], q) for v in vals]))
            rows.append(dict(metric=m, quantile=f"p{q}", real=x, twin=y, diff=y - x,
                             diff_pct=100 * (y / x - 1) if x else np.nan))
    return rows


# where a queueing delay comes from (``queueing_mechanism``): a request that arrives while a verification pass runs waits
# for the rest of it, one that finds the server idle waits for its wake-up; the p50 lies between the two populations
QUEUEING = {"in_pass_share": "share of requests arriving while a pass runs",
            "early_in_pass_share": "share of those arriving in the pass's first half (0.5 if uniform over it)",
            "queue_in_pass_p50_s": "p50 queueing delay of those (s)",
            "queue_idle_p50_s": "p50 queueing delay of the others: the wake-up (s)",
            "requests_per_pass": "requests verified per pass",
            "pass_p50_s": "p50 verification pass (s)"}


def queueing_mechanism(log: pd.DataFrame) -> dict[str, float]:
    """The quantities a log's queueing delay is made of (``QUEUEING``), from its verified rounds: a request is in a pass
    when its arrival lies in (start, start + t_verify) of a pass (``log.running_pass``: one arriving as a pass begins
    opened it)."""
    from ..log import running_pass, verified

    r = verified(log)
    if r.empty:
        raise ValueError("log: no verified rounds to take the queueing delay's mechanism from")
    b = r.groupby("batch").agg(start=("start", "first"), tv=("t_verify", "first")).sort_values("start")
    start, tv = b["start"].to_numpy(float), b["tv"].to_numpy(float)
    arrival, queue = r["arrival"].to_numpy(float), r["t_queue"].to_numpy(float)
    i, inside = running_pass(start, start + tv, arrival, at_start=False)
    j = np.clip(i, 0, None)
    early = inside & (arrival - start[j] < tv[j] / 2)
    return dict(in_pass_share=float(inside.mean()),
                early_in_pass_share=float(early.sum() / inside.sum()) if inside.any() else np.nan,
                queue_in_pass_p50_s=float(np.median(queue[inside])) if inside.any() else np.nan,
                queue_idle_p50_s=float(np.median(queue[~inside])) if (~inside).any() else np.nan,
                requests_per_pass=len(r) / len(b), pass_p50_s=float(np.median(tv)))


def mechanism_differences(real: pd.DataFrame, logs: list[pd.DataFrame]) -> list[dict]:
    """``differences``' rows for the queueing delay's mechanism (``queueing_mechanism``; the seeds' values averaged),
    quantile "mean" except the medians named p50."""
    a = queueing_mechanism(real)
    vals = [queueing_mechanism(lg) for lg in logs]
    rows = []
    for m, x in a.items():
        ys = np.array([v[m] for v in vals], float)
        y = float(ys[np.isfinite(ys)].mean()) if np.isfinite(ys).any() else np.nan   # none in a pass: no wait of theirs
        rows.append(dict(metric=m, quantile="p50" if m.endswith("p50_s") else "mean", real=x, twin=y, diff=y - x,
                         diff_pct=100 * (y / x - 1) if x else np.nan))
    return rows


def attribution(contexts: dict, components=None, seeds=range(5), progress: bool = True,
                mechanism: bool = False, keep: dict | None = None) -> pd.DataFrame:
    """Per component (``COMPONENTS``, or those given), real run and metric/quantile: the difference of the
    component's variant (its ``seeds``' median: ``differences``) from the real run; ``mechanism``: also the queueing delay's
    mechanism (``mechanism_differences``); ``keep``: a dict that receives each (run, component)'s logs, one per seed."""
    from tqdm.auto import tqdm

    components = list(COMPONENTS) if components is None else list(components)
    rows = []
    jobs = [(k, c) for k in contexts for c in components]
    for key, comp in tqdm(jobs, desc="twin error attribution", disable=not progress):
        ctx = contexts[key]
        logs = [variant(ctx, comp, s) for s in seeds]
        if keep is not None:
            keep[key, comp] = logs
        for r in differences(ctx.real, logs) + (mechanism_differences(ctx.real, logs) if mechanism else []):
            rows.append(dict(paper=key[0], policy=key[1], n_clients=key[2], repeat=key[3] if len(key) > 3 else 0,
                             component=comp, **r))
    return pd.DataFrame(rows)


def _within_floor(table: pd.DataFrame, floor: float) -> pd.Series:
    """The rows whose queueing delay is within ``floor`` seconds of the real one (the server's wake-up:
    ``validation.floor_s``): a difference the judgement counts as 0."""
    return (table["metric"] == "queue_s") & (table["diff"].abs() <= floor)


def errors(table: pd.DataFrame, floor: float) -> pd.DataFrame:
    """``table`` (``attribution``'s rows) with ``error_pct``: each row's |difference| (%), a queueing delay within
    ``floor`` seconds of the real one counting as 0."""
    return table.assign(error_pct=table["diff_pct"].abs().where(~_within_floor(table, floor), 0.0))


def summary(table: pd.DataFrame, floor: float) -> pd.DataFrame:
    """Per component, metric and quantile: the worst and the mean |difference| (%) over the runs (``errors``)."""
    return (errors(table, floor).groupby(["paper", "component", "metric", "quantile"], sort=False)
            .agg(error_pct=("error_pct", "max"), mean_error_pct=("error_pct", "mean"), runs=("error_pct", "size"))
            .reset_index())


# the real runs as their own held-out model: each run predicted by the median of its other repeats (``own_repeats``)
OWN = "the real run's other repeats (their median)"


def own_repeats(runs: dict, quantiles=(50, 90)) -> pd.DataFrame:
    """Each real run of ``runs`` (keyed (paper, policy, N, repeat), one campaign: the repeats of one machine's state
    each) that has other repeats of its paper, policy and N, predicted by them: per metric and quantile the median
    of their values, as ``attribution``'s rows of component ``OWN``. The real system's own held-out error: the
    machine's state differs between repeats, and no model fitted on the other runs sees the judged run's."""
    from .validation import metric_values

    groups: dict = {}
    for k in runs:
        groups.setdefault(k[:3], []).append(k)
    rows = []
    for ks in groups.values():
        if len(ks) < 2:
            continue
        vals = {k: metric_values(runs[k]) for k in ks}
        for key in ks:
            for m in vals[key]:
                for q in quantiles:
                    x = float(np.percentile(vals[key][m], q))
                    y = float(np.median([np.percentile(vals[k][m], q) for k in ks if k != key]))
                    rows.append(dict(paper=key[0], policy=key[1], n_clients=key[2], repeat=key[3], component=OWN,
                                     metric=m, quantile=f"p{q}", real=x, twin=y, diff=y - x,
                                     diff_pct=100 * (y / x - 1) if x else np.nan))
    return pd.DataFrame(rows)


def beyond_own(table: pd.DataFrame, floor: float, component: str) -> pd.DataFrame:
    """Per paper, metric and quantile, over the runs that have ``OWN`` rows (``own_repeats``): the mean |difference|
    (``errors``) of ``component`` and of ``OWN``, the first's excess over the second (points of %), and both worst
    values. The error a model adds beyond the real runs' own."""
    e = errors(table, floor)
    idx = ["paper", "policy", "n_clients", "repeat", "metric", "quantile"]
    both = e[e["component"] == component].merge(e[e["component"] == OWN], on=idx, suffixes=("", "_own"))
    out = (both.groupby(["paper", "metric", "quantile"], sort=False)
           .agg(mean_pct=("error_pct", "mean"), own_mean_pct=("error_pct_own", "mean"), worst_pct=("error_pct", "max"),
                own_worst_pct=("error_pct_own", "max"), runs=("error_pct", "size")).reset_index())
    return out.assign(excess_pct=out["mean_pct"] - out["own_mean_pct"])


def bias(table: pd.DataFrame, floor: float, component: str) -> pd.DataFrame:
    """Per paper, N, metric and quantile: ``component``'s bias over the runs, the geometric mean of twin / real − 1
    (%), with its standard error (%, of the mean log ratio) and the runs' count; a queueing delay within ``floor``
    seconds of the real one counts as no difference (log ratio 0), a value of 0 on either side is left out."""
    t = table[(table["component"] == component) & (table["real"] > 0) & (table["twin"] > 0)]
    t = t.assign(log_ratio=np.log(t["twin"] / t["real"]).where(~_within_floor(t, floor), 0.0))
    out = (t.groupby(["paper", "n_clients", "metric", "quantile"], sort=False)["log_ratio"]
           .agg(["mean", "std", "size"]).reset_index())
    se = out["std"].fillna(0.0) / np.sqrt(out["size"])
    return pd.DataFrame(dict(paper=out["paper"], n_clients=out["n_clients"], metric=out["metric"],
                             quantile=out["quantile"], bias_pct=100 * np.expm1(out["mean"]), se_pct=100 * se,
                             runs=out["size"]))


def figure(summ: pd.DataFrame, metrics=("round_time_s", "queue_s", "goodput_tok_s")):
    """Worst |difference| from the real runs (%) per component, metric and quantile (log scale)."""
    from .validation import METRICS

    d = summ[summ["metric"].isin(metrics)].assign(error=lambda t: t["error_pct"].clip(lower=0.1),
                                                 metric=lambda t: t["metric"].map(METRICS))
    g = sns.catplot(data=d, y="component", x="error", hue="quantile", col="metric", kind="bar", height=5.0,
                    aspect=0.75, sharex=True, orient="h", order=[c for c in COMPONENTS if c in set(d.component)])
    for ax in g.axes.flat:
        ax.set_xscale("log")
        for x in (5, 10):
            ax.axvline(x, ls="--", lw=0.8, color="grey")
    g.set_titles(col_template="{col_name}")
    g.set_axis_labels("worst |Δ| from real (%)", "")
    return g
