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
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..serving import metrics
from . import li2026 as ex

PARTS = ("drafting", "link", "verification", "queueing")


def response_attribution(log: pd.DataFrame, max_new_tokens: int, warmup: float, horizon: float) -> pd.DataFrame:
    """One row per decided response (``metrics.response_violations``): client, slo_class, tokens, seconds,
    violated, the seconds of each of ``PARTS`` (a running response's time past its last reply counts as
    queueing: it waits on the server) and ``cause`` (one of ``PARTS`` for a violated response, else "")."""
    rows = metrics.verified(log).sort_values(["client", "end"], kind="stable").copy()
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
    """A WISP former (``wisp_batching.WISPBatcher``) that records its decisions in ``decisions``."""

    def __init__(self, inner):
        self.inner, self.decisions = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def form(self, queue, now, active):
        batch = self.inner.form(queue, now, active)
        if queue:
            order, n_crit = self.inner.order(queue, now)
            chosen = {id(p) for p in batch}
            crit_in = sum(1 for p, _ in order[:n_crit] if id(p) in chosen)
            self.decisions.append(dict(now=now, queued=len(queue), critical=n_crit, late=sum(late for _, late in order),
                                       batch=len(batch), critical_admitted=crit_in,
                                       stopped_in_critical=crit_in < n_crit))
        return batch


def mechanism_runs(setting: ex.Setting, devices: int, seed: int, systems=("WISP", "FCFS"), window: int = 50,
                   tau: float = 1.5):
    """Each of ``systems`` at ``devices`` mixed-class devices (one run each, ``seed``): (responses: every decided
    response with its attribution, by system; eq21: eq (21)'s label of each verification event that missed its
    deadline, by system; decisions: per WISP-reading system, the share of decisions that stopped in the critical
    phase, the mean queue, critical and late requests per decision, the mean batch)."""
    resp, eq21, dec = [], [], []
    for s in systems:
        point = ex.Point(s, devices, None, seed=seed, setting=setting)
        rec = []

        def wrap(f):
            rec.append(Recorder(f))
            return rec[-1]

        log = ex.run_log(point, wrap=wrap if ex.SYSTEM[s].former.startswith("wisp") else None)
        resp.append(response_attribution(log, setting.max_new_tokens, setting.warmup, setting.horizon).assign(system=s))
        att = metrics.deadline_attribution(metrics.steady(log, setting.warmup), window=window, tau=tau)
        eq21.append(att[att.violated].assign(system=s))
        if rec:
            d = pd.DataFrame(rec[0].decisions)
            d = d[d.now >= setting.warmup]
            dec.append(dict(system=s, decisions=len(d), stopped_in_critical=float(d.stopped_in_critical.mean()),
                            queued=float(d.queued.mean()), critical=float(d.critical.mean()), late=float(d.late.mean()),
                            with_late=float((d.late > 0).mean()), batch=float(d.batch.mean())))
    return pd.concat(resp, ignore_index=True), pd.concat(eq21, ignore_index=True), pd.DataFrame(dec)


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


def section(setting: ex.Setting, devices: int, seed: int, readings, window: int, tau: float, out):
    """§ Mechanisms: ``mechanism_runs`` of WISP, FCFS and every reading at ``devices``, written as
    ``mechanism_attribution.csv``, ``mechanism_eq21.csv`` and ``mechanism_decisions.csv``. Returns
    (attribution table, eq (21) table, decisions, the failing rows' ``note``)."""
    from .. import plotting

    resp, eq21, dec = mechanism_runs(setting, devices, seed, ("WISP", "FCFS", *readings), window, tau)
    att, eq = attribution_table(resp), eq21_table(eq21)
    for frame, name in ((att, "attribution"), (eq, "eq21"), (dec, "decisions")):
        plotting.write_csv(frame, out / f"mechanism_{name}.csv")
    return att, eq, dec, note(att, eq, dec, devices)


def noise_section(setting: ex.Setting, devices: int, seeds, run, out, factors=(0.0, 1.0, 3.0)) -> pd.DataFrame:
    """Whether WISP's order against FCFS survives the twin's verification-time error: the violation rate per class
    of both at ``devices`` with eq (19)'s noise times each of ``factors`` (every seed, ``run``), written as
    ``mechanism_noise.csv``."""
    from .. import plotting

    zs = [f * setting.noise for f in factors]
    rows = run([ex.Point(s, devices, None, seed=k, setting=ex.replace(setting, noise=z)) for z in zs for s in ("WISP", "FCFS")
                for k in seeds])
    rows["noise"] = [z for z in zs for _ in ("WISP", "FCFS") for _ in seeds]
    t = metrics.per_class(rows, ["noise", "system"], ex.CLASSES)
    plotting.write_csv(t, out / "mechanism_noise.csv")
    return t
