"""GOODSPEED's experiments (tran2025 Sec IV) on the serving layer: configurations, runs, metrics.

Table I's configurations with heterogeneous clients (the primary setting: each its own draft, zoo or the real
pair's, on its own domain, ``HETERO``) or the zoo stand-ins of one or two drafts whose prompts switch domain
(a narrow spread of alpha, a sensitivity study). Policies: GOODSPEED (Algorithm 1), Fixed-S (S_i = C/N), Random-S.
"""
from __future__ import annotations

import math
import numpy as np
import pandas as pd

from ... import hardware, paths
from ...serving.analysis import client_mix
from ...serving import acceptance_sources, policies, scenario
from ...serving.timemodels import time_models
from ...serving.policies.allocation import PAPER_BETA, GoodspeedAllocator
from ...serving.policies.batching import SyncRounds
from ...serving.analysis.round_series import expected_goodput, time_split, utility_curve
from ...serving.timemodels.runtime import verify_model
from ...serving.scenario import Fleet
from ...serving.timemodels.time_models import DraftTime, Link
from ...serving.interfaces import Times
from ...serving.sim.twin import TRACES, TraceAcceptance, simulate
from ...serving.workload import Workload, switching
from ...zoo.realpair import DRAFT as PAIR_DRAFT

DOMAINS = ("chat", "code", "math", "qa", "sql", "summarize")
POLICIES = ("GOODSPEED", "Fixed-S", "Random-S")
FLOOR = "Fixed-S ⌊C/N⌋"        # the literal C // N share, C % N slots idle (a second, labelled row)


SCENARIO = "tran2025_table1"      # data/scenarios/: Table I's fleets and the real runs'


def table1() -> list[Fleet]:
    """Table I's configurations with their zoo stand-ins (``SCENARIO``'s run ``table1``; the text's C = {6, 20} for
    150-token runs is taken as the table's {16, 20})."""
    return scenario.fleets(SCENARIO, "table1")


STAND_INS = {"Qwen3-14B": "target-m", "Qwen3-0.6B": "draft-xs", "Qwen3-1.7B": "draft-s"}


def workload(cfg: Fleet, prompts_per_domain: int = 1, max_tokens: int | None = None,
             temperature: float = 0.0, seed: int = 0) -> Workload:
    """Client i drafts with ``cfg.drafts[i % len]`` on domains i and i+3 (mod 6), in that order (``workload.switching``)."""
    return switching("target-m", cfg.drafts, cfg.clients, cfg.capacity, max_tokens or cfg.max_new_tokens, DOMAINS,
                     prompts=prompts_per_domain, temperature=temperature, seed=seed)


REALPAIR = "realpair"       # the real pair's acceptance source (``serving.acceptance_sources``)


def realpair_workload(cfg: Fleet, seed: int = 0) -> Workload:
    """``cfg``'s clients on the real pair (``REALPAIR``): client i drafts on domains i and i + 4 (mod 8) of the pair's
    eight, in that order (``workload``'s switch of domain half-way, with the pair's spread of alpha)."""
    src = acceptance_sources.source(REALPAIR)
    return switching(src.target, src.drafts, cfg.clients, cfg.capacity, cfg.max_new_tokens, src.domains, seed=seed)


# Heterogeneous clients, the primary setting (Table I: different drafts; Sec IV-A2: "each draft server was
# assigned a distinct dataset"): zoo drafts of four sizes for target-m beside the real pair's draft, each on its
# own domain, interleaved so that Fixed-S's remainder (the first C mod N clients) favours neither end of alpha.
HETERO = {4: (("draft-xs", "math"), (PAIR_DRAFT, "chat"), ("draft-s", "code"), (PAIR_DRAFT, "sql")),
          8: (("draft-xs", "math"), (PAIR_DRAFT, "qa"), ("draft-s", "code"), (PAIR_DRAFT, "chat-instruct"),
              ("draft-m", "summarize"), (PAIR_DRAFT, "code-instruct"), ("draft-l", "chat"), (PAIR_DRAFT, "sql"))}


def hetero_acceptance() -> TraceAcceptance:
    """The zoo's traces (target-m) pooled with the real pair's (``client_mix.pooled_traces``)."""
    sources = {"zoo": client_mix.read_traces(TRACES, "target-m"), "real pair": acceptance_sources.traces(REALPAIR)}
    return TraceAcceptance(client_mix.pooled_traces(sources), target=client_mix.POOLED)


def hetero_workload(cfg: Fleet, seed: int = 0, max_tokens: int | None = None) -> Workload:
    """``cfg``'s heterogeneous clients (``HETERO``), one prompt stream each on its own domain."""
    if cfg.clients not in HETERO:
        raise ValueError(f"cfg.clients: heterogeneous clients exist for {sorted(HETERO)} clients, got {cfg.clients}")
    return client_mix.one_domain_workload(client_mix.POOLED, HETERO[cfg.clients], cfg.capacity, max_tokens or cfg.max_new_tokens, seed=seed)


def clients_frame(configs, acceptance, wl_of) -> pd.DataFrame:
    """Each configuration's clients (``wl_of(cfg)``) with their traced alpha (``client_mix.clients_table``)."""
    return client_mix.clients_table({cfg.name: wl_of(cfg) for cfg in configs}, acceptance)


def allocator(policy: str, cfg: Fleet, seed: int = 0, eta: float = 0.1, beta: float = PAPER_BETA):
    """A fresh allocator of ``POLICIES`` (or ``FLOOR``) for ``cfg`` (``policies.allocator``), GOODSPEED with
    the paper's β."""
    if policy not in POLICIES + (FLOOR,):
        raise ValueError(f"policy must be one of {POLICIES + (FLOOR,)}, got {policy!r}")
    return policies.allocator(policy, capacity=cfg.capacity, clients=cfg.clients, seed=seed, eta=eta, beta=beta)


VOCAB = 151_936  # Qwen3's vocabulary: a dense fp16 distribution per drafted token goes uplink (Sec IV-A3)


def paper_times(cfg: Fleet, profile: "str | hardware.Profile" = "tran2025_paper", *, draft_s_per_token: float | None = None,
                rate_bps: float | None = None, latency_s: float | None = None) -> Times:
    """H100 verifier / L4 drafters at paper scale, from the profile's (derived) runtime section
    (``profile``: the loaded profile, or its name or path).

    The paper gives no link or drafting numbers; ``draft_s_per_token`` (draft-xs's seconds per token;
    draft-s keeps the profile's ratio to it), ``rate_bps`` and ``latency_s`` replace the profile's
    values (``fig3_region`` sweeps them). Uplink: per drafted token its id and the dense distribution;
    downlink: a 64-byte reply, which the server puts on the link in 64 * 8 / rate (``t_send``) while the
    client also waits the latency."""
    prof = hardware.as_profile(profile)
    small, large = prof.coefficients("draft_small")["c_tok"], prof.coefficients("draft_large")["c_tok"]
    if draft_s_per_token is not None:
        small, large = draft_s_per_token, draft_s_per_token * large / small
    size = {"draft-xs": small, "draft-s": large}
    link = prof.link("draft_to_verifier")
    rate = float(link["rate_bps"]) if rate_bps is None else float(rate_bps)
    lat = float(link.get("latency_s", 0.0)) if latency_s is None else float(latency_s)
    drafts = [DraftTime(size[cfg.drafts[i % len(cfg.drafts)]]) for i in range(cfg.clients)]
    return time_models.times(drafts, Link(2 * lat, rate, dense_request_bytes, reply_bytes=64), verify_model(prof, "verify"))


def dense_request_bytes(s: int) -> int:
    """A request of ``s`` drafted tokens: 64 bytes of header, per token its id and a dense fp16 distribution."""
    return 64 + s * (4 + 2 * VOCAB)


def run_twin(cfg: Fleet, policy: str, times: Times, acceptance, *, rounds: int | None = None,
             seed: int = 0, prompts_per_domain: int = 1, max_tokens: int | None = None,
             eta: float = 0.1, beta: float = PAPER_BETA, wl: Workload | None = None):
    """One twin run; returns (log, estimates) where estimates has the allocator's X and alpha-hat per
    batch (GOODSPEED only; Fig 2). ``wl`` replaces ``workload(cfg, ...)``."""
    alloc = allocator(policy, cfg, seed, eta=eta, beta=beta)
    est = []

    def record(batch, _):
        if isinstance(alloc, GoodspeedAllocator):
            est.extend(dict(batch=batch, client=c, X=alloc.X[c], alpha_hat=alloc.alpha_hat[c]) for c in alloc.X)

    wl = wl or workload(cfg, prompts_per_domain, max_tokens, seed=seed)
    log = simulate(wl, SyncRounds(), alloc, times, acceptance, rounds=rounds, seed=seed, label=policy,
                   on_batch=record)
    return log, pd.DataFrame(est)


def sync_times(cfg: Fleet) -> Times:
    """Times of sync rounds that count tokens per round (drafting free, a pass of 1 s)."""
    return Times([DraftTime(0.0)] * cfg.clients, lambda batch: 1.0)


def final_utilities(cfg: Fleet, policies, acceptance, *, seeds, rounds: int, beta: float = PAPER_BETA,
                    eta: float = 0.1, wl_of=None) -> pd.DataFrame:
    """Fig 4 over seeds: U(x̄(rounds)) per (policy, seed), one row each (times do not matter: sync
    rounds count tokens per round). ``wl_of(seed)`` replaces ``workload(cfg, seed=seed)``."""
    rows = []
    for sd in seeds:
        for pol in policies:
            log, _ = run_twin(cfg, pol, sync_times(cfg), acceptance, rounds=rounds, seed=sd, eta=eta, beta=beta,
                              wl=wl_of(sd) if wl_of else None)
            rows.append(dict(config=cfg.name, policy=pol, seed=sd, beta=beta,
                             utility=float(utility_curve(log).iloc[-1])))
    return pd.DataFrame(rows)


def iid_model(acceptance: TraceAcceptance, cfg: Fleet, seed: int = 0, base: Workload | None = None):
    """Theorem 1 where x* is exact (``client_mix.iid_model``) on ``base`` (long prompts; default the zoo
    workload of ``cfg``): returns the one-domain workload, the ``IIDAcceptance`` and the clients' alphas."""
    return client_mix.iid_model(acceptance, base or workload(cfg, 1, 10**9, seed=seed))


def averaged_distance(cfg: Fleet, policy: str, acceptance, alpha, x_star, *, beta: float, seed: int = 0,
                      window: int = 1000, burn_in: float = 3.0, eta: float = 0.1, wl: Workload | None = None) -> float:
    """Theorem 1's quantity at one β: ‖x̄ − x*‖, x̄ the mean goodput (tokens per round) of each client over
    ``window`` rounds after ceil(burn_in / β) rounds (Theorem 4's interval [I1, I2] with I1 > T/β), x* the
    optimum of the process (``iid_model``'s exact one). Under i.i.d. acceptance ``alpha`` a round's expected
    tokens given its draft length is mu_i(S_i) (``sampling.expected_tokens_per_round``): x̄ averages
    mu_i(S_i(t)), the conditional mean of the realised goodput (the same expectation, which Theorem 4
    bounds, without the acceptance draws' noise)."""
    if not 0 < beta < 1:
        raise ValueError(f"beta: must lie in (0, 1) (eq 4), got {beta!r}")
    if window < 1 or burn_in < 0:
        raise ValueError(f"window, burn_in: need window >= 1 and burn_in >= 0, got {window!r}, {burn_in!r}")
    skip = math.ceil(burn_in / beta)
    log, _ = run_twin(cfg, policy, sync_times(cfg), acceptance, rounds=skip + window, seed=seed, eta=eta, beta=beta, wl=wl)
    return float(np.linalg.norm(expected_goodput(log, alpha, skip, window) - np.asarray(x_star, float)))


def fig3_region(cfg: Fleet, acceptance, draft_s_per_token, rates_bps, *, profile: "str | hardware.Profile" = "tran2025_paper",
                latency_s: float | None = None, seed: int = 0, prompts_per_domain: int = 2) -> pd.DataFrame:
    """Fig 3's proportions over the unknown drafting and link numbers: per (draft time per token,
    uplink rate), Random-S's wall time above Fixed-S (%), sending's share of wall time (%), the
    shares of receiving and verification (%), GOODSPEED's verification and wall time vs Fixed-S (%)."""
    rows = []
    for d in draft_s_per_token:
        for r in rates_bps:
            times = paper_times(cfg, profile, draft_s_per_token=d, rate_bps=r, latency_s=latency_s)
            split = {}
            for pol in POLICIES:
                log, _ = run_twin(cfg, pol, times, acceptance, seed=seed, prompts_per_domain=prompts_per_domain)
                split[pol] = time_split(log)
            total = {p: sum(v.values()) for p, v in split.items()}
            share = lambda part: 100 * sum(v[part] for v in split.values()) / sum(total.values())
            rows.append(dict(config=cfg.name, draft_ms_per_token=1e3 * d, rate_gbps=r / 1e9,
                             random_over_fixed_pct=100 * (total["Random-S"] / total["Fixed-S"] - 1),
                             sending_pct=share("sending"), receiving_pct=share("receiving"),
                             verification_pct=share("verification"),
                             goodspeed_verify_vs_fixed_pct=100 * (split["GOODSPEED"]["verification"]
                                                                 / split["Fixed-S"]["verification"] - 1),
                             goodspeed_wall_vs_fixed_pct=100 * (total["GOODSPEED"] / total["Fixed-S"] - 1)))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- measured real runs
REAL_RUNS = paths.DATA / "tran2025" / "real_runs.csv"


def real_config(scale: str = "full") -> Fleet:
    """The configuration of the real runs: 4 clients, C = 24, 50 tokens (CI: 2 clients, C = 8, 16 tokens), ``SCENARIO``'s
    run ``real_runs`` (CI: ``real_runs_ci``)."""
    paths.check_scale(scale)
    return scenario.fleets(SCENARIO, "real_runs" if scale == "full" else "real_runs_ci")[0]


# the real run with heterogeneous clients: zoo drafts of four sizes, each on its own domain (the pair's are git-ignored)
REAL_HETERO = (("draft-xs", "code"), ("draft-m", "sql"), ("draft-s", "chat"), ("draft-l", "qa"))
HETERO_RUNS = paths.DATA / "tran2025" / "real_runs_hetero.csv"


def real_hetero_workload(cfg: Fleet, seed: int = 0) -> Workload:
    return client_mix.one_domain_workload("target-m", REAL_HETERO[:cfg.clients], cfg.capacity, cfg.max_new_tokens, prompts=4, seed=seed)


def measure_real(scale: str = "full", seed: int = 0, hetero: bool = False) -> pd.DataFrame:
    """Run the three policies for real (gRPC server + one process per drafter on 127.0.0.1) on the zoo;
    returns their per-round logs, one after another. Wall-clock timings: `make profiles` writes them to
    ``REAL_RUNS`` (``hetero``: ``REAL_HETERO``'s clients, 4 prompts each, to ``HETERO_RUNS``) and the notebook
    reads them, so rerunning the notebook leaves its outputs unchanged."""
    from ...serving.real.run import run_real
    cfg = real_config(scale)
    wl = real_hetero_workload(cfg, seed) if hetero else workload(cfg, 1, cfg.max_new_tokens, seed=seed)
    logs = []
    for pol in POLICIES:
        log, _ = run_real(wl, SyncRounds(), allocator(pol, cfg, seed), label=pol, seed=seed)
        if (log["event"] != "").any():
            raise RuntimeError(f"real run {pol}: unexpected events {log[log['event'] != ''].event.tolist()}")
        logs.append(log)
    return pd.concat(logs, ignore_index=True)


def load_real_runs(path=REAL_RUNS) -> dict[str, pd.DataFrame]:
    """The committed real-run logs by policy (``make profiles`` measures them)."""
    from ...serving.real import real_logs
    return real_logs.load(path, "python -m specedge.experiments.tran2025.runs measure" + (" --hetero" if path == HETERO_RUNS else ""))


def _main(argv=None) -> int:
    """``measure [--hetero]``: the real runs of ``REAL_RUNS`` (with ``--hetero``: of ``HETERO_RUNS``)."""
    import sys
    from ...serving.real import real_logs
    argv = list(sys.argv[1:] if argv is None else argv)
    het = "--hetero" in argv
    return real_logs.measure_main("measure GOODSPEED's real runs on this machine", lambda sc, sd: measure_real(sc, sd, het),
                                  HETERO_RUNS if het else REAL_RUNS, [a for a in argv if a != "--hetero"])


if __name__ == "__main__":
    raise SystemExit(_main())


__all__ = ["table1", "workload", "realpair_workload", "HETERO", "hetero_acceptance", "hetero_workload", "clients_frame", "allocator",
           "paper_times", "run_twin", "final_utilities", "iid_model", "averaged_distance", "fig3_region", "FLOOR",
           "real_config", "measure_real", "load_real_runs", "sync_times", "POLICIES", "STAND_INS"]
