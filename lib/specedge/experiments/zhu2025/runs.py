"""zhu2025 Section IV experiments: settings from a hardware profile, sweeps, and their summaries.

A :class:`Setting` gathers what Table II fixes. The runtime coefficients come from the chosen
profile; every other entry (SBS memory, uplink bandwidth, radio constants, K, I_max, O_max,
l_max) from that profile when it defines it, otherwise from the paper's profile ``zhu2025_paper``,
and :meth:`Setting.table_ii` says which profile each printed value came from.

:func:`sweep` runs the schemes of :mod:`.zhu2025_schemes` over a list of operating points and
workload draws (``claims.mean_intervals`` and ``claims.reductions`` turn its rows into the plotted means
with 95 % confidence bands and the headline percentages); :func:`ads_readings` and
:func:`path_loss_sensitivity` are the sweeps behind Fig 6's and Fig 9's readings.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pandas as pd

from ... import claims, hardware
from ...solvers import zhu2025 as z
from ...solvers import zhu2025_schemes as zs

PAPER_PROFILE = "zhu2025_paper"


@dataclass(frozen=True)
class Setting:
    """Table II, resolved from a profile (with the paper's profile as fallback)."""
    profile: str
    draft_runtime: z.Runtime
    verify_runtime: z.Runtime
    memory_bytes: float
    bandwidth_hz: float
    tx_power_w: float
    noise_power_dbm: float
    path_loss_db: float
    cell_radius_m: float
    num_users: int
    max_input_len: int
    max_output_len: int
    l_max: int
    provenance: dict = field(default_factory=dict, compare=False)
    measured: bool = False

    def system(self, draft: str, verify: str, **overrides) -> z.EdgeSystem:
        """The :class:`~.zhu2025.EdgeSystem` of a Table I pair under this setting."""
        for name in (draft, verify):
            if name not in z.TABLE_I:
                raise ValueError(f"model {name!r} is not in Table I: {sorted(z.TABLE_I)}")
        kw = dict(draft=z.TABLE_I[draft], verify=z.TABLE_I[verify], draft_runtime=self.draft_runtime,
                  verify_runtime=self.verify_runtime, memory_bytes=self.memory_bytes,
                  bandwidth_hz=self.bandwidth_hz, tx_power_w=self.tx_power_w,
                  noise_power_w=10 ** (self.noise_power_dbm / 10) * 1e-3,
                  path_loss=10 ** (self.path_loss_db / 10), cell_radius_m=self.cell_radius_m)
        kw.update(overrides)
        return z.EdgeSystem(**kw)

    def table_ii(self) -> pd.DataFrame:
        """Table II as used here: parameter, value, unit, and the profile it came from."""
        rows = [
            ("K", self.num_users, "tasks", "num_users"),
            ("sigma^2", self.noise_power_dbm, "dBm", "noise_power_dbm"),
            ("p_k", self.tx_power_w, "W", "tx_power_w"),
            ("B_w", self.bandwidth_hz / 1e6, "MHz", "bandwidth_hz"),
            ("g0", self.path_loss_db, "dB", "path_loss_db"),
            ("cell radius", self.cell_radius_m, "m", "cell_radius_m"),
            ("O_max", self.max_output_len, "tokens", "max_output_len"),
            ("I_max", self.max_input_len, "tokens", "max_input_len"),
            ("l_max", self.l_max, "tokens", "max_speculation_len"),
            ("Gamma_s", self.memory_bytes / 1e9, "GB", "memory_bytes"),
            ("c_v1", self.verify_runtime.c1, "s/FLOP", "verify"),
            ("c_v2", self.verify_runtime.c2, "s", "verify"),
            ("c_d1", self.draft_runtime.c1, "s/FLOP", "draft"),
            ("c_d2", self.draft_runtime.c2, "s", "draft"),
        ]
        return pd.DataFrame([dict(parameter=p, value=v, unit=u, source=self.provenance.get(k, ""))
                             for p, v, u, k in rows])


def _runtime(prof: hardware.Profile, role: str) -> z.Runtime:
    if prof.kind(role) != "linear_batch":
        raise ValueError(f"profile {prof.name!r}: runtime.{role}.model must be "
                         f"'{hardware.KINDS['linear_batch'].formula}' (eq 17), got {prof.runtime[role].get('model')!r}")
    c = prof.coefficients(role)
    return z.Runtime(float(c["c1"]), float(c["c2"]))


def load_setting(profile=PAPER_PROFILE, base: str = PAPER_PROFILE) -> Setting:
    """Resolve Table II from ``profile`` (loaded, or a name or path); entries it lacks come from ``base``.

    The profile must define ``runtime.draft`` and ``runtime.verify`` (``T = c1*F*b + c2``).
    """
    prof = hardware.as_profile(profile)
    fall = prof if prof.name == base else hardware.load_profile(base)
    for role in ("draft", "verify"):
        if role not in prof.runtime:
            raise ValueError(f"profile {prof.name!r} has no runtime.{role}; it has {sorted(prof.runtime)}")
    prov = {"draft": prof.name, "verify": prof.name}

    def pick(key, getter):
        for p in (prof, fall):
            try:
                v = getter(p)
            except KeyError:
                continue
            if v is not None:
                prov[key] = p.name
                return v
        raise ValueError(f"neither {prof.name!r} nor {fall.name!r} defines {key}")

    const = {k: pick(k, lambda p, k=k: p.constants[k]) for k in (
        "num_users", "noise_power_dbm", "tx_power_w", "path_loss_db", "cell_radius_m",
        "max_output_len", "max_input_len", "max_speculation_len")}
    return Setting(
        profile=prof.name, draft_runtime=_runtime(prof, "draft"), verify_runtime=_runtime(prof, "verify"),
        memory_bytes=float(pick("memory_bytes", lambda p: p.devices["sbs"].get("memory_bytes"))),
        bandwidth_hz=float(pick("bandwidth_hz", lambda p: p.links["uplink"].get("bandwidth_hz"))),
        tx_power_w=float(const["tx_power_w"]), noise_power_dbm=float(const["noise_power_dbm"]),
        path_loss_db=float(const["path_loss_db"]), cell_radius_m=float(const["cell_radius_m"]),
        num_users=int(const["num_users"]), max_input_len=int(const["max_input_len"]),
        max_output_len=int(const["max_output_len"]), l_max=int(const["max_speculation_len"]),
        provenance=prov, measured=prof.measured is not None)


def table_i() -> pd.DataFrame:
    """Table I with the derived FP16 weight memory of eq (9)."""
    return pd.DataFrame([dict(model=m.name, layers=m.layers, hidden=m.hidden, ffn=m.ffn,
                              weights_gb=round(z.param_bytes(m) / 1e9, 3)) for m in z.TABLE_I.values()])


def points(**axes) -> list[dict]:
    """The Cartesian product of named axes, e.g. ``points(pair=PAIRS, alpha=[0.5, 0.9])``."""
    keys = list(axes)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys))]


def _sweep_point(c: dict) -> list[dict]:
    """The rows of one operating point and workload draw of :func:`sweep` (a ``sweep.run`` point)."""
    setting, pt, rep = c["setting"], c["point"], c["rep"]
    pair = tuple(pt.get("pair", z.PAIRS[1]))
    alpha = float(pt.get("alpha", 0.8))
    K = int(pt.get("num_users", setting.num_users))
    i_max = int(pt.get("max_input_len", setting.max_input_len))
    o_max = int(pt.get("max_output_len", setting.max_output_len))
    system = setting.system(*pair)
    work = zs.sample_workload(c["seed"], rep, K, i_max, o_max, setting.cell_radius_m)
    return [dict(pair=f"({pair[0]}, {pair[1]})", alpha=alpha, num_users=K, max_input_len=i_max,
                 max_output_len=o_max, rep=rep, **r)
            for r in zs.run_schemes(system, work, alpha, o_max, setting.l_max, c["schemes"], c["allocations"],
                                    c["bandwidths_hz"])]


def sweep(setting: Setting, pts: list[dict], reps: int, seed: int, schemes=zs.SCHEMES,
          allocations=("optimal",), bandwidths_hz=None, progress: bool = True, desc: str = "",
          n_jobs: int | None = None) -> pd.DataFrame:
    """Run ``schemes`` at every point for ``reps`` workload draws; one row per scheme, draw and setting.

    A point may set ``pair`` (draft, verify), ``alpha``, ``num_users``, ``max_input_len`` and
    ``max_output_len``; missing keys take the setting's value (alpha defaults to 0.8, pair to
    (LLaMA-1.1B, LLaMA-7B): the operating point of Figs 7 and 8). Draw ``rep`` is the same
    workload for every point and scheme (common random numbers). The (point, draw) pairs run on
    ``n_jobs`` worker processes (``sweep.local``: rows in the same order, whatever ``n_jobs``).
    """
    from ... import sweep as sweeps
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    configs = [dict(setting=setting, point=pt, rep=rep, seed=seed, schemes=tuple(schemes),
                    allocations=tuple(allocations), bandwidths_hz=None if bandwidths_hz is None else list(bandwidths_hz))
               for pt, rep in itertools.product(pts, range(reps))]
    return sweeps.local(_sweep_point, configs, n_jobs=n_jobs, progress=progress)


def ads_readings(setting: Setting, pairs, reps: int, seed: int, readings=zs.ADS_READINGS) -> pd.DataFrame:
    """ADS's total latency (eq 23 with the ADS inference of :func:`~.zhu2025.ad_latency`) under each
    reading of its batch-size sentence (``zs.ADS_READINGS``), on Fig 6's draws (Table II's K, I_max,
    O_max, optimal split). ADS does not depend on alpha. One row per pair, reading and draw."""
    rows = []
    K, i_max, o_max = setting.num_users, setting.max_input_len, setting.max_output_len
    for pair, rep in itertools.product(pairs, range(reps)):
        system = setting.system(*pair)
        work = zs.sample_workload(seed, rep, K, i_max, o_max, setting.cell_radius_m)
        t_com = zs.comm_latency(system, work)
        for reading in readings:
            plan = zs.plan_scheme(zs.ADS, system, work.input_len, 0.8, o_max, setting.l_max, ads_reading=reading)
            t_inf = z.inference_latency(system, plan, work.input_len, work.output_len, 0.8)
            rows.append(dict(pair=f"({pair[0]}, {pair[1]})", reading=reading, rep=rep, batches=len(plan.batches),
                             latency_s=t_inf + t_com))
    return pd.DataFrame(rows)


def path_loss_sensitivity(setting: Setting, inference: pd.DataFrame, path_losses_db, bandwidth_hz: float,
                          num_users: int, seed: int, channel_draws: int = 1) -> pd.DataFrame:
    """Fig 9's headline as a function of the path-loss constant g0 (the paper prints "-30 dBm").

    ``inference`` holds the Proposed rows of a Fig 9 sweep (columns pair, rep, inference_s) at
    ``num_users``; the uplink latencies are recomputed on the same task draws for each g0, under the
    closed-form and the uniform split, over ``channel_draws`` draws of user positions and fading per
    task draw (the first is the draw's own channel). Returns, per pair and g0, the reduction of the
    mean total latency with its standard error over those samples, the reduction of the median, and
    the mean upload times. The upload time of a user in a deep fade is heavy-tailed (E[1/rho] of an
    Exp(1) fading diverges), so the mean converges slowly: the standard error says how slowly.
    """
    if not (isinstance(channel_draws, int) and channel_draws >= 1):
        raise ValueError(f"channel_draws must be an integer >= 1, got {channel_draws!r}")
    inf = inference.drop_duplicates(["pair", "rep"]).set_index(["pair", "rep"])["inference_s"]
    rows = []
    for pair in z.PAIRS:
        label = f"({pair[0]}, {pair[1]})"
        for g0 in path_losses_db:
            system = setting.system(*pair, path_loss=10 ** (g0 / 10), bandwidth_hz=bandwidth_hz)
            for rep in sorted(inf.loc[label].index):
                work = zs.sample_workload(seed, rep, num_users, setting.max_input_len, setting.max_output_len,
                                          setting.cell_radius_m)
                for draw in range(channel_draws):
                    w = zs.redraw_channel(work, setting.cell_radius_m, seed, rep, draw)
                    t = {a: zs.comm_latency(system, w, a) for a in ("optimal", "uniform")}
                    rows.append(dict(pair=label, path_loss_db=g0, rep=rep, draw=draw, comm_optimal_s=t["optimal"],
                                     comm_uniform_s=t["uniform"], inference_s=inf.loc[(label, rep)]))
    df = pd.DataFrame(rows)
    out = []
    for (pair, g0), g in df.groupby(["pair", "path_loss_db"], sort=False):
        opt, uni = g.inference_s + g.comm_optimal_s, g.inference_s + g.comm_uniform_s
        red, se = claims.ratio_reduction(opt, uni)
        out.append(dict(pair=pair, path_loss_db=g0, samples=len(g), reduction_pct=red, reduction_se=se,
                        median_reduction_pct=claims.reduction_pct(opt.median(), uni.median()),
                        comm_optimal_s=g.comm_optimal_s.mean(), comm_uniform_s=g.comm_uniform_s.mean()))
    return pd.DataFrame(out)
