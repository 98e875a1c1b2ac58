"""Why WISP's serving claims hold or fail in the twin: measured mechanisms (li2026 Secs 4.3, 5.2.1, 5.3).

- ``response_attribution``: every decided response of a run (Sec 5.3's trial: its end-to-end speed against
  its class) with the time it spent drafting, on the link, queueing and verifying (its rounds' sums), and
  for a violated one the part that broke it, counterfactually in the order of a round: ``drafting`` when its
  drafting time alone exceeds what its class allows (tokens / speed), ``link`` when drafting and link do,
  ``verification`` when they and its verifications do (no queueing could have saved it), else ``queueing``
  (it would have met its class without waiting).
- ``Recorder``: stands between the twin and a WISP former (``li2026.run_log``'s ``wrap``) and records every
  decision: queue length, critical and late requests (Algorithm 1 lines 11 and FEASIBLEADD), the batch's
  size and whether it stopped in the critical phase (so line 25 skipped the utility phase).
- ``mechanism_runs``: WISP (each reading of Algorithm 1) and FCFS at one load, their attribution, eq (21)'s
  classification of the same runs, and the former's decisions, in three tables.
- ``Recorder.requests`` / ``request_table``: per verification request of a WISP run, what Algorithm 1 did with it:
  its budget (eq 12's d_i - a_i, from eq 6's class budget), the decisions it waited through, how many of them
  stopped in the critical phase while it was not critical (line 25 then skipped it with the utility phase), its
  value density's place among the non-critical requests (eq 16), whether it was late (FEASIBLEADD's gap) when
  admitted, and the estimator's error on its batch (eq 19's T_hat against the pass the twin drew).
- ``delayed``: the responses WISP violates that FCFS, at the same load, seed and devices, serves in time (the k-th
  response of each device in both runs: the same prompt and class), with their requests' ``request_table`` summed,
  and ``delayed_table``: per class, those against WISP's other responses.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...serving.analysis import metrics
from ...serving.log import verified
from . import serving_runs as ex
from ...serving.scenario import Setting

PARTS = ("drafting", "link", "verification", "queueing")


def response_attribution(log: pd.DataFrame, max_new_tokens: int, warmup: float, horizon: float) -> pd.DataFrame:
    """One row per decided response (``metrics.response_violations``): client, slo_class, tokens, seconds,
    violated, the seconds of each of ``PARTS`` (a running response's time past its last reply counts as
    queueing: it waits on the server) and ``cause`` (one of ``PARTS`` for a violated response, else "")."""
    rows = verified(log).sort_values(["client", "end"], kind="stable").copy()
    rows["t0"] = metrics.round_starts(rows)
    every = metrics.responses(log, max_new_tokens, horizon)
    decided = metrics.response_violations(log, max_new_tokens, warmup, horizon)
    if decided.empty:
        return decided.assign(**{p: [] for p in PARTS}, cause=[])
    # each round to the response it belongs to: the client's last response that started at or before it
    starts = every[["client", "start"]].rename(columns={"start": "response"}).sort_values("response")
    rows = pd.merge_asof(rows.drop(columns="start").sort_values("t0"), starts, left_on="t0", right_on="response",
                         by="client", direction="backward")
    rows["link"] = rows["t_round"] - rows["t_draft"] - rows["t_queue"] - rows["t_verify"]
    sums = rows.groupby(["client", "response"])[["t_draft", "link", "t_verify", "t_queue", "t_round"]].sum()
    sums.index.names = ["client", "start"]
    r = decided.join(sums, on=["client", "start"])
    r = r.rename(columns={"t_draft": "drafting", "t_verify": "verification", "t_queue": "queueing"})
    r[list(PARTS)] = r[list(PARTS)].fillna(0.0)
    r["queueing"] += np.maximum(r["seconds"] - r["t_round"].fillna(0.0), 0.0)
    allowed = r["tokens"].clip(lower=1) / r["slo_class"].astype(float)
    if not r["complete"].all():   # a running response: what its class allows for the whole response
        allowed = allowed.where(r["complete"], max_new_tokens / r["slo_class"].astype(float))
    d, dl = r["drafting"], r["drafting"] + r["link"]
    cause = np.select([d >= allowed, dl >= allowed, dl + r["verification"] >= allowed], PARTS[:3], PARTS[3])
    r["cause"] = np.where(r["violated"], cause, "")
    return r.drop(columns=["t_round"]).reset_index(drop=True)


class Recorder:
    """A WISP former (``wisp_batching.WISPBatcher``) that records its decisions in ``decisions`` and, per request
    (client, round), what they did with it in ``requests`` (``request_table``'s columns)."""

    def __init__(self, inner):
        self.inner, self.decisions, self.requests = inner, [], {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def form(self, queue, now, active):
        batch = self.inner.form(queue, now, active)
        if queue:
            order, n_crit = self.inner.order(queue, now)
            chosen = {id(p) for p in batch}
            crit_in = sum(1 for p, _ in order[:n_crit] if id(p) in chosen)
            stopped = crit_in < n_crit
            self.decisions.append(dict(now=now, queued=len(queue), critical=n_crit, late=sum(late for _, late in order),
                                       batch=len(batch), critical_admitted=crit_in, stopped_in_critical=stopped))
            self._per_request(order, n_crit, chosen, stopped, batch, now)
        return batch

    def _per_request(self, order, n_crit: int, chosen: set, stopped: bool, batch, now: float) -> None:
        est = self.inner.estimator
        t_hat = est.time(sum(p.n_new for p in batch), sum((p.n_new + p.n_cached) * p.n_new for p in batch),
                         sum(p.n_cached for p in batch)) if batch else np.nan
        rest = max(len(order) - n_crit, 1)
        for pos, (p, late) in enumerate(order):
            r = self.requests.get((p.client, p.round))
            if r is None:
                r = self.requests[(p.client, p.round)] = dict(
                    client=p.client, round=p.round, slo_class=p.slo_class, arrival=p.arrival,
                    budget_s=np.nan if p.deadline is None else p.deadline - p.arrival, decisions=0, passed_over=0,
                    skipped_after_critical_stop=0, density_rank_sum=0.0, density_ranked=0, admitted_at=np.nan,
                    critical_at_admission=False, late_at_admission=False, t_hat_batch=np.nan)
            r["decisions"] += 1
            if pos >= n_crit:   # its place by value density (eq 16) among the non-critical: 0 first, 1 last
                r["density_rank_sum"] += (pos - n_crit) / rest
                r["density_ranked"] += 1
            if id(p) in chosen:
                r.update(admitted_at=now, critical_at_admission=pos < n_crit, late_at_admission=bool(late), t_hat_batch=t_hat)
            else:
                r["passed_over"] += 1
                r["skipped_after_critical_stop"] += int(stopped and pos >= n_crit)


def mechanism_runs(setting: Setting, devices: int, seed: int, systems=("WISP", "FCFS"), window: int = 50,
                   tau: float = 1.5):
    """Each of ``systems`` at ``devices`` mixed-class devices (one run each, ``seed``): (responses: every decided
    response with its attribution, by system; eq21: eq (21)'s label of each verification event that missed its
    deadline, by system; decisions: per WISP-reading system, the share of decisions that stopped in the critical
    phase, the mean queue, critical and late requests per decision, the mean batch)."""
    resp, eq21, dec = [], [], []
    for s in systems:
        point = ex.SCENARIO.point(s, devices, None, seed=seed, setting=setting)
        rec = []

        def wrap(f):
            rec.append(Recorder(f))
            return rec[-1]

        log = ex.run_log(point, wrap=wrap if ex.SCENARIO.system(s).former.startswith("wisp") else None)
        resp.append(response_attribution(log, setting.max_new_tokens, setting.warmup_s, setting.horizon_s).assign(system=s))
        att = metrics.deadline_attribution(metrics.steady(log, setting.warmup_s), window=window, tau=tau)
        eq21.append(att[att.violated].assign(system=s))
        if rec:
            d = pd.DataFrame(rec[0].decisions)
            d = d[d.now >= setting.warmup_s]
            dec.append(dict(system=s, decisions=len(d), stopped_in_critical=float(d.stopped_in_critical.mean()),
                            queued=float(d.queued.mean()), critical=float(d.critical.mean()), late=float(d.late.mean()),
                            with_late=float((d.late > 0).mean()), batch=float(d.batch.mean())))
    return pd.concat(resp, ignore_index=True), pd.concat(eq21, ignore_index=True), pd.DataFrame(dec)


def request_table(requests: dict, log: pd.DataFrame) -> pd.DataFrame:
    """A ``Recorder``'s ``requests`` (one per verified request) joined with the run's ``log`` on (client, round):
    its wait (s), the pass the twin drew (``t_verify``) and the estimator's error on its batch (``est_error``:
    t_verify / T_hat - 1), and ``density_rank``: its mean place by value density among the non-critical requests
    of the decisions it saw (0 first; NaN if it was always critical)."""
    r = pd.DataFrame(list(requests.values()))
    if r.empty:
        return r
    r["density_rank"] = r.density_rank_sum / r.density_ranked.where(r.density_ranked > 0)
    rows = verified(log)[["client", "round", "t_verify", "t_queue"]]
    r = r.drop(columns=["density_rank_sum", "density_ranked"]).merge(rows, on=["client", "round"], how="inner")
    r["est_error"] = r.t_verify / r.t_hat_batch.where(r.t_hat_batch > 0) - 1
    return r


def _per_response(log: pd.DataFrame, setting: Setting) -> pd.DataFrame:
    """``response_attribution`` of ``log`` with each device's responses numbered (``k``: 0, 1, ... by start) and the
    rounds of each (client, response start) listed."""
    r = response_attribution(log, setting.max_new_tokens, setting.warmup_s, setting.horizon_s)
    every = metrics.responses(log, setting.max_new_tokens, setting.horizon_s).sort_values(["client", "start"])
    every["k"] = every.groupby("client").cumcount()
    return r.merge(every[["client", "start", "k"]], on=["client", "start"], how="left")


def delayed(wisp_log: pd.DataFrame, fcfs_log: pd.DataFrame, requests: pd.DataFrame, setting: Setting) -> pd.DataFrame:
    """WISP's decided responses paired with FCFS's by (client, k: the device's k-th response, the same prompt and
    class in both runs), with ``delayed`` (WISP violates it, FCFS meets it) and WISP's requests of the response
    (``request_table``'s rows whose arrival lies in it) summed: requests, their wait, decisions passed over and
    those after a critical stop (line 25), mean value-density rank, late share at admission, mean budget (s) and
    mean |estimator error|."""
    w, f = _per_response(wisp_log, setting), _per_response(fcfs_log, setting)
    pair = w.merge(f[["client", "k", "violated", "seconds", "cause"]], on=["client", "k"], how="inner", suffixes=("", "_fcfs"))
    pair["delayed"] = pair.violated & ~pair.violated_fcfs
    req = requests.sort_values("arrival")
    starts = pair[["client", "start", "k"]].sort_values("start")
    req = pd.merge_asof(req, starts, left_on="arrival", right_on="start", by="client", direction="backward").dropna(subset=["k"])
    g = req.groupby(["client", "k"])
    agg = pd.DataFrame(dict(requests=g.size(), wait_s=g.t_queue.sum(), passed_over=g.passed_over.sum(),
                            skipped_after_critical_stop=g.skipped_after_critical_stop.sum(), density_rank=g.density_rank.mean(),
                            late_share=g.late_at_admission.mean(), critical_share=g.critical_at_admission.mean(),
                            budget_s=g.budget_s.mean(), abs_est_error=g.est_error.agg(lambda e: float(e.abs().mean())))).reset_index()
    return pair.merge(agg.astype({"k": pair.k.dtype}), on=["client", "k"], how="left")


DELAYED_COLUMNS = ("seconds", "seconds_fcfs", "requests", "wait_s", "passed_over", "skipped_after_critical_stop",
                   "density_rank", "late_share", "critical_share", "budget_s", "abs_est_error")


def delayed_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per class: WISP's paired responses, the violated ones, those FCFS meets (``delayed``) and their share of WISP's
    violations, then the mean of each of ``DELAYED_COLUMNS`` over the delayed responses and over WISP's others."""
    out = []
    for c, g in pairs.groupby("slo_class", sort=True):
        d, o = g[g.delayed], g[~g.delayed]
        row = dict(speed=int(float(c)), responses=len(g), violated=int(g.violated.sum()), delayed=len(d),
                   delayed_share_of_violations=len(d) / g.violated.sum() if g.violated.any() else np.nan,
                   fcfs_violated=int(g.violated_fcfs.sum()))
        for col in DELAYED_COLUMNS:
            row[f"{col}_delayed"] = float(d[col].mean()) if len(d) else np.nan
            row[f"{col}_others"] = float(o[col].mean()) if len(o) else np.nan
        out.append(row)
    return pd.DataFrame(out)


def delayed_section(setting: Setting, devices: int, seed: int, out, note: str = ""):
    """WISP and FCFS at ``devices`` (one seed each, the same devices): every verification request of WISP's run
    (``request_table``), the paired responses (``delayed``) and ``delayed_table``, written as
    ``mechanism_requests.csv`` (the paired responses, one a row) and ``mechanism_delayed.csv`` (per class), and
    printed in words (``delayed_summary``). Returns (pairs, table, ``note`` with ``delayed_note`` added: the
    failing rows' mechanism)."""
    from ... import plotting

    rec = []

    def wrap(f):
        rec.append(Recorder(f))
        return rec[-1]

    wl = ex.run_log(ex.SCENARIO.point("WISP", devices, None, seed=seed, setting=setting), wrap=wrap)
    fl = ex.run_log(ex.SCENARIO.point("FCFS", devices, None, seed=seed, setting=setting))
    pairs = delayed(wl, fl, request_table(rec[0].requests, wl), setting)
    table = delayed_table(pairs)
    plotting.write_csv(pairs, out / "mechanism_requests.csv")
    plotting.write_csv(table, out / "mechanism_delayed.csv")
    print(delayed_summary(table))
    return pairs, table, "; ".join(x for x in (note, delayed_note(table)) if x)


def attribution_table(resp: pd.DataFrame) -> pd.DataFrame:
    """Per system and class: responses, violation rate, each cause's share of the violations, and the mean
    seconds per response of each part (``response_attribution``'s rows)."""
    out = []
    for (s, c), g in resp.groupby(["system", "slo_class"], sort=True):
        v = g[g.violated]
        row = dict(system=s, speed=int(float(c)), responses=len(g), violation_rate=float(g.violated.mean()))
        row |= {f"cause_{p}": float((v.cause == p).mean()) if len(v) else np.nan for p in PARTS}
        row |= {f"mean_{p}_s": float(g[p].mean()) for p in PARTS}
        out.append(row)
    return pd.DataFrame(out)


def eq21_table(eq21: pd.DataFrame) -> pd.DataFrame:
    """Per system and class: the missed verification deadlines and eq (21)'s compute-dominant share of them."""
    g = eq21.groupby(["system", "slo_class"])
    return pd.DataFrame(dict(missed=g.size(), compute_dominant=g.label.agg(lambda x: float((x == "compute-dominant").mean()))
                             )).reset_index().rename(columns={"slo_class": "speed"})


def note(att: pd.DataFrame, eq21: pd.DataFrame, dec: pd.DataFrame, devices: int, system: str = "WISP") -> str:
    """One sentence of measured mechanism for a failing row's note: per class, ``system``'s and FCFS's
    violation rates and the main cause of ``system``'s violations (``attribution_table``), eq (21)'s
    compute-dominant share, and how often Algorithm 1 stopped in its critical phase with late requests queued
    (``mechanism_runs``' decisions)."""
    a = att.set_index(["system", "speed"])
    parts = []
    for sp in sorted(set(att.speed)):
        if (system, sp) not in a.index or ("FCFS", sp) not in a.index:
            continue
        w, f = a.loc[(system, sp)], a.loc[("FCFS", sp)]
        causes = {p: w[f"cause_{p}"] for p in PARTS if pd.notna(w[f"cause_{p}"])}
        top = max(causes, key=causes.get) if causes else None
        parts.append(f"{sp} tok/s {w.violation_rate:.2f} vs FCFS {f.violation_rate:.2f}"
                     + (f" ({causes[top]:.0%} {top})" if top else ""))
    d = dec.set_index("system").loc[system] if system in set(dec.system) else None
    cd = eq21[eq21.system == system]
    cd = float((cd.compute_dominant * cd.missed).sum() / cd.missed.sum()) if len(cd) and cd.missed.sum() else float("nan")
    return (f"measured at N = {devices} (one seed): violation rate {system} vs FCFS per class: " + "; ".join(parts)
            + (f"; Algorithm 1 stopped in its critical phase in {d.stopped_in_critical:.0%} of decisions, with "
               f"{d.late:.1f} late requests queued on average (its utility phase then skipped)" if d is not None else "")
            + f"; eq (21) calls {cd:.1%} of missed deadlines compute-dominant")


def section(setting: Setting, devices: int, seed: int, readings, window: int, tau: float, out):
    """§ Mechanisms: ``mechanism_runs`` of WISP, FCFS and every reading at ``devices``, written as
    ``mechanism_attribution.csv``, ``mechanism_eq21.csv`` and ``mechanism_decisions.csv``. Returns
    (attribution table, eq (21) table, decisions, the failing rows' ``note``)."""
    from ... import plotting

    resp, eq21, dec = mechanism_runs(setting, devices, seed, ("WISP", "FCFS", *readings), window, tau)
    att, eq = attribution_table(resp), eq21_table(eq21)
    for frame, name in ((att, "attribution"), (eq, "eq21"), (dec, "decisions")):
        plotting.write_csv(frame, out / f"mechanism_{name}.csv")
    return att, eq, dec, note(att, eq, dec, devices)


def noise_section(setting: Setting, devices: int, seeds, run, out, factors=(0.0, 1.0, 3.0)) -> pd.DataFrame:
    """Whether WISP's order against FCFS survives the twin's verification-time error: the violation rate per class
    of both at ``devices`` with eq (19)'s noise times each of ``factors`` (every seed, ``run``), written as
    ``mechanism_noise.csv``."""
    from ... import plotting

    zs = [f * setting.noise for f in factors]
    rows = run([ex.SCENARIO.point(s, devices, None, seed=k, setting=ex.SCENARIO.setting(setting, noise=z)) for z in zs for s in ("WISP", "FCFS")
                for k in seeds])
    rows["noise"] = [z for z in zs for _ in ("WISP", "FCFS") for _ in seeds]
    t = metrics.per_class(rows, ["noise", "system"], ex.CLASSES)
    plotting.write_csv(t, out / "mechanism_noise.csv")
    return t


def delayed_summary(table: pd.DataFrame) -> str:
    """``delayed_table`` in words, one sentence per class with its numbers."""
    out = []
    for r in table.itertuples():
        if not r.delayed:
            out.append(f"{r.speed} tok/s: no response that WISP violates is met by FCFS ({r.violated} of {r.responses} violated, "
                       f"FCFS {r.fcfs_violated})")
            continue
        out.append(f"{r.speed} tok/s: WISP violates {r.violated} of {r.responses} responses, FCFS {r.fcfs_violated}; {r.delayed} "
                   f"({r.delayed_share_of_violations:.0%} of WISP's violations) FCFS serves in time. Their requests waited "
                   f"{r.wait_s_delayed:.2f} s per response (others {r.wait_s_others:.2f} s), passed over in "
                   f"{r.passed_over_delayed:.1f} decisions ({r.skipped_after_critical_stop_delayed:.1f} of them a critical stop "
                   f"skipping the utility phase; others {r.passed_over_others:.1f} / {r.skipped_after_critical_stop_others:.1f}), "
                   f"value-density rank {r.density_rank_delayed:.2f} (0 first; others {r.density_rank_others:.2f}), late at "
                   f"admission {r.late_share_delayed:.0%} (others {r.late_share_others:.0%}), budget {1e3 * r.budget_s_delayed:.0f} ms "
                   f"(others {1e3 * r.budget_s_others:.0f} ms), estimator |error| {r.abs_est_error_delayed:.0%} "
                   f"(others {r.abs_est_error_others:.0%})")
    return "\n".join(out)


def delayed_note(table: pd.DataFrame) -> str:
    """``delayed_table`` pooled over the classes in one clause for a failing row's note: how many of WISP's violated
    responses FCFS serves in time, and how those waited and were passed over against WISP's others."""
    d = table[table.delayed > 0]
    if d.empty:
        return "FCFS serves in time none of the responses WISP violates at the same load"
    w = d.delayed / d.delayed.sum()
    mean = lambda col: float((d[col] * w).sum())
    return (f"FCFS serves in time {int(d.delayed.sum())} of the {int(table.violated.sum())} responses WISP violates at the same load "
            f"(classes {', '.join(str(s) for s in d.speed)} tok/s); their requests waited {mean('wait_s_delayed'):.2f} s per response, "
            f"passed over in {mean('passed_over_delayed'):.1f} decisions, {mean('skipped_after_critical_stop_delayed'):.1f} of them "
            f"critical stops skipping the utility phase, {mean('late_share_delayed'):.0%} late when admitted")
