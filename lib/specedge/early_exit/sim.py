"""FSD (venkatesha2025): discrete-event simulation of the pre-drafting client and early-exit server.

One sequence is a list of ``RoundTrace`` records (the rounds of plain speculative decoding, each with
the verification outcome of every early exit in layer order; ``specedge.early_exit`` produces them on
the zoo, tests craft them). Because the final exit stays authoritative, FSD emits exactly the tokens of
SD: the simulation only decides *when* each round happens (Sec 3, Appendix A, Fig 2):

- client → server: the drafts travel ``T_c/2``;
- server: exit l of L is ready at ``l/L · T_t`` after verification starts, the final at ``T_t``; every
  outcome goes into the server's send queue, ordered by confidence (``server_queue="priority"``, eq 4)
  or by production (``"fifo"``); the final jumps the queue. One message is on the wire at a time and
  takes ``T_c/2`` (the paper: "early exit outputs are produced faster than the network can
  transmit ... transmitted sequentially"); what is still queued when the final leaves is dropped;
- client: received early exits wait in a queue (``client_queue`` "priority" by confidence, "fifo" or
  "random"); ``threads`` pre-drafting threads (the client's thread limit, Table 5's "Num EE Threads")
  each take one and draft γ tokens after it into the pre-draft cache, keyed by the exit's outcome
  (accepted count, next token). A pre-draft costs the client's own drafting time γ·T_d (Table 5's
  drafting latency of that client and model set), so a slow client finishes fewer pre-drafts before the
  final arrives, and a thread busy with one exit cannot start the next. As in the paper every exit is
  sent and pre-drafted ("processes each one in a new thread", eq 8 queues all exits); ``dedupe=True``
  (beyond the paper) skips an outcome already queued, cached or in progress, since every exit that
  agrees yields the same prefix and hence the same greedy pre-draft;
- when the final arrives: a *hit* if a *finished* pre-draft of its outcome is in the cache (the paper's
  cache holds finished pre-drafts): ``t_sync``, then the pre-draft goes out at once and the drafting
  time is hidden. Otherwise a *miss*: the client drafts γ tokens (γ·T_d) and the round's unfinished
  pre-drafts are abandoned. ``running="wait"`` (beyond the paper) instead waits for a still-running
  pre-draft of the final's outcome (a "partial" hit, counted as a hit): it hides part of the drafting
  time, and makes the miss rate blind to the client's speed.

The simulated cache-miss rate ρ = misses / cache checks, one check per round that has a next round (the
first round of a sequence always drafts); it sets FSD's time. The paper *defines* its Table 6 miss rate and
"Avg EE" on the exits alone (``stated_miss_rate``, ``stated_average_early_exit``: no timing), yet prints values
that differ between clients on the same benchmark; ρ and ``hit_exit`` (the exit whose pre-draft served a hit)
are the per-client readings, reported as sensitivity rows. In SD mode the server streams only
the final. With every pre-draft finishing in time and no message queued behind another, the simulated
time equals Table 4's formulas (``solvers.venkatesha2025``) exactly; the tests check this.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import simpy

from ..solvers.venkatesha2025 import Timings

__all__ = ["ExitOutcome", "RoundTrace", "FSDConfig", "SimResult", "simulate", "average_early_exit", "stated_miss_rate",
           "stated_average_early_exit", "evaluate", "evaluate_sources", "queue_policies", "threads_sweep", "gamma_sweep", "stated_intervals", "traces_frame", "traces_from_frame",
           "TRACE_COLUMNS",
           "CLIENT_QUEUES", "SERVER_QUEUES", "RUNNING"]

CLIENT_QUEUES = ("priority", "fifo", "random")
SERVER_QUEUES = ("priority", "fifo")
RUNNING = ("miss", "wait")


@dataclass(frozen=True)
class ExitOutcome:
    """What the final layer's verification would give if exit ``layer`` (1-based) were the target."""
    layer: int
    accepted: int
    token: int
    confidence: float  # max softmax probability at the exit for the emitted token (eq 4)

    @property
    def key(self) -> tuple[int, int]:
        return (self.accepted, self.token)


@dataclass(frozen=True)
class RoundTrace:
    """One SD round: γ drafted, the final outcome, and the early exits (positions 1..L-1) in layer order.

    ``n_layers`` counts exit positions (``early_exit.EarlyExits.n_layers``: the decoder layers, twice that
    with an exit after each attention block too); position L is the final."""
    drafted: int
    accepted: int
    token: int
    n_layers: int
    exits: tuple[ExitOutcome, ...] = ()

    @property
    def key(self) -> tuple[int, int]:
        return (self.accepted, self.token)

    @property
    def tokens(self) -> int:
        return self.accepted + 1

    def earliest_exit(self) -> int:
        """Average-EE contribution: the first layer whose outcome equals the final's (L if none)."""
        return next((e.layer for e in self.exits if e.key == self.key), self.n_layers)


@dataclass(frozen=True)
class FSDConfig:
    """Timings of one client/server pair (seconds; T_d per draft token, T_c per round trip) and policies."""
    gamma: int
    T_d: float
    T_t: float
    T_c: float
    threads: int = 1
    client_queue: str = "priority"
    server_queue: str = "priority"
    t_sync: float = 0.0
    dedupe: bool = False
    running: str = "miss"
    seed: int = 0

    def __post_init__(self):
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, (int, np.integer)) or self.gamma < 1:
            raise ValueError(f"gamma must be an integer >= 1, got {self.gamma!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, (int, np.integer)) or self.threads < 1:
            raise ValueError(f"threads (pre-drafting threads) must be an integer >= 1, got {self.threads!r}")
        for name in ("T_d", "T_t", "T_c", "t_sync"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0 seconds, got {v!r}")
        if self.T_t <= 0:
            raise ValueError(f"T_t (verification time) must be > 0 seconds, got {self.T_t!r}")
        if self.client_queue not in CLIENT_QUEUES:
            raise ValueError(f"client_queue must be one of {CLIENT_QUEUES}, got {self.client_queue!r}")
        if self.server_queue not in SERVER_QUEUES:
            raise ValueError(f"server_queue must be one of {SERVER_QUEUES}, got {self.server_queue!r}")
        if self.running not in RUNNING:
            raise ValueError(f"running (a final whose pre-draft is still running) must be one of {RUNNING}, "
                             f"got {self.running!r}")

    @property
    def timings(self) -> Timings:
        return Timings(self.T_d, self.T_t, self.T_c, self.threads)

    @classmethod
    def from_profile(cls, profile, runtime: str, gamma: int | None = None, threads: int | None = None,
                     **kwargs) -> "FSDConfig":
        """Timings of ``profile.runtime[runtime]`` (Table 5 layout: T_d_s for its ``gamma`` tokens)."""
        t = Timings.from_profile(profile, runtime)
        gamma = int(profile.coefficients(runtime)["gamma"]) if gamma is None else gamma
        return cls(gamma=gamma, T_d=t.T_d, T_t=t.T_t, T_c=t.T_c,
                   threads=t.threads if threads is None else threads, **kwargs)

    def with_(self, **changes) -> "FSDConfig":
        return replace(self, **changes)


@dataclass
class SimResult:
    """Totals over all sequences plus one log row per round."""
    time_s: float
    tokens: int
    rounds: int
    checks: int
    misses: int
    partial_hits: int
    log: pd.DataFrame = field(repr=False, default=None)

    @property
    def miss_rate(self) -> float:
        """ρ = cache misses / cache checks (NaN without checks)."""
        return self.misses / self.checks if self.checks else float("nan")

    @property
    def tokens_per_round(self) -> float:
        return self.tokens / self.rounds if self.rounds else float("nan")

    @property
    def avg_hit_exit(self) -> float:
        """Mean exit position whose pre-draft served a hit (NaN without hits)."""
        served = self.log.hit_exit.dropna() if self.log is not None and "hit_exit" in self.log else []
        return float(np.mean(served)) if len(served) else float("nan")


def average_early_exit(sequences: Sequence[Sequence[RoundTrace]]) -> float:
    """Mean over rounds of the earliest exit that agrees with the final, counting the final (L) where no early exit
    does (a sensitivity reading of Table 6's "Avg EE"; ``stated_average_early_exit`` is the paper's definition)."""
    layers = [r.earliest_exit() for seq in sequences for r in seq]
    return float(np.mean(layers)) if layers else float("nan")


def _agrees(r: RoundTrace) -> bool:
    return any(e.key == r.key for e in r.exits)


def stated_miss_rate(sequences: Sequence[Sequence[RoundTrace]]) -> float:
    """Table 6's cache-miss rate as the paper defines it (Sec 4.2, evaluation metrics: "how often we fail to find the
    final output in one of the early exits"): the share of rounds (verifications) in which no early exit's outcome
    equals the final's. A property of the models alone: no timing, no client."""
    rounds = [r for seq in sequences for r in seq]
    return float(np.mean([not _agrees(r) for r in rounds])) if rounds else float("nan")


def stated_average_early_exit(sequences: Sequence[Sequence[RoundTrace]]) -> float:
    """Table 6's "Avg EE" as the paper defines it (Sec 4.2: "the average early exit that produces the same output as
    the final exit"): the mean earliest agreeing exit over the rounds in which one agrees (NaN if none does)."""
    layers = [r.earliest_exit() for seq in sequences for r in seq if _agrees(r)]
    return float(np.mean(layers)) if layers else float("nan")


TRACE_COLUMNS = ("sequence", "round", "drafted", "accepted", "token", "n_layers", "exit", "exit_accepted",
                 "exit_token", "confidence")


def traces_frame(sequences: Sequence[Sequence[RoundTrace]]) -> pd.DataFrame:
    """One row per (sequence, round, early exit) in ``TRACE_COLUMNS`` (a round without exits keeps one row with
    exit 0): the committed form of traces; ``traces_from_frame`` reads it back."""
    rows = []
    for i, seq in enumerate(sequences):
        for k, r in enumerate(seq):
            base = (i, k, r.drafted, r.accepted, r.token, r.n_layers)
            rows += ([(*base, e.layer, e.accepted, e.token, e.confidence) for e in r.exits]
                     or [(*base, 0, -1, -1, float("nan"))])
    return pd.DataFrame(rows, columns=list(TRACE_COLUMNS))


def traces_from_frame(frame: pd.DataFrame) -> list[list[RoundTrace]]:
    """The sequences of ``traces_frame`` (sequences and rounds in order of their numbers)."""
    missing = set(TRACE_COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"trace frame lacks columns {sorted(missing)} (expected {list(TRACE_COLUMNS)})")
    out = []
    for _, seq in frame.sort_values(["sequence", "round", "exit"], kind="stable").groupby("sequence", sort=True):
        rounds = []
        for _, r in seq.groupby("round", sort=True):
            first = r.iloc[0]
            exits = tuple(ExitOutcome(int(e.exit), int(e.exit_accepted), int(e.exit_token), float(e.confidence))
                          for e in r.itertuples() if e.exit > 0)
            rounds.append(RoundTrace(int(first.drafted), int(first.accepted), int(first.token), int(first.n_layers), exits))
        out.append(rounds)
    return out


def _check_sequences(sequences) -> list[list[RoundTrace]]:
    seqs = [list(s) for s in sequences]
    if not seqs or not all(seqs):
        raise ValueError("sequences must be a non-empty list of non-empty lists of RoundTrace")
    for s in seqs:
        for r in s:
            if r.n_layers < 1 or any(not (1 <= e.layer < r.n_layers) for e in r.exits):
                raise ValueError(f"exit layers must lie in [1, n_layers - 1]; got n_layers={r.n_layers}, "
                                 f"layers {[e.layer for e in r.exits]}")
    return seqs


def pick_index(items: Sequence[ExitOutcome], policy: str, rng) -> int:
    """Which queued early exit a free pre-drafting thread takes: the most confident (ties: the first),
    the oldest, or a uniformly random one."""
    if policy == "priority":
        return max(range(len(items)), key=lambda j: (items[j].confidence, -j))
    if policy == "fifo":
        return 0
    return int(rng.integers(len(items)))


class _Round:
    """The processes of one FSD round: server producer and sender, client pre-drafting threads."""

    def __init__(self, env: simpy.Environment, cfg: FSDConfig, rng, trace: RoundTrace, fsd: bool):
        self.env, self.cfg, self.rng, self.trace = env, cfg, rng, trace
        self.outbox = simpy.PriorityStore(env)
        self.final = env.event()
        self.items: list[ExitOutcome] = []
        self.wake = env.event()
        self.cache: dict[tuple[int, int], simpy.Event] = {}
        self.source: dict[tuple[int, int], int] = {}   # key -> exit whose pre-draft finishes first
        self.sent = 0
        self.count = 0
        start = env.now
        env.process(self._produce(start, fsd))
        env.process(self._send())
        self.workers = [env.process(self._worker()) for _ in range(cfg.threads)] if fsd else []

    def _produce(self, start, fsd):
        t, cfg = self.trace, self.cfg
        produced = set()
        if fsd:
            for e in t.exits:
                if cfg.dedupe and e.key in produced:
                    continue
                produced.add(e.key)
                yield self.env.timeout(max(0.0, start + e.layer / t.n_layers * cfg.T_t - self.env.now))
                prio = -e.confidence if cfg.server_queue == "priority" else e.layer
                self.count += 1
                yield self.outbox.put(simpy.PriorityItem((1, prio, self.count), e))
        yield self.env.timeout(max(0.0, start + cfg.T_t - self.env.now))
        yield self.outbox.put(simpy.PriorityItem((0, 0, 0), None))  # the final jumps the queue

    def _send(self):
        while True:
            item = yield self.outbox.get()
            yield self.env.timeout(self.cfg.T_c / 2)
            if item.item is None:
                self.final.succeed()
                return  # whatever is still queued for this round is dropped
            self.sent += 1
            self.items.append(item.item)
            wake, self.wake = self.wake, self.env.event()
            wake.succeed()

    def _pick(self) -> ExitOutcome:
        return self.items.pop(pick_index(self.items, self.cfg.client_queue, self.rng))

    def _worker(self):
        try:
            while True:
                while not self.items:
                    yield self.wake
                e = self._pick()
                if self.cfg.dedupe and e.key in self.cache:
                    continue
                done = self.env.event()
                self.cache.setdefault(e.key, done)
                self.source.setdefault(e.key, e.layer)   # same cost for all: the first started ends first
                yield self.env.timeout(self.cfg.gamma * self.cfg.T_d)
                done.succeed()
                if self.cache[e.key] is not done and not self.cache[e.key].triggered:
                    self.cache[e.key].succeed()
        except simpy.Interrupt:
            return

    def stop(self):
        for w in self.workers:
            if w.is_alive:
                w.interrupt()


def _sequence(env, cfg: FSDConfig, rng, rounds: list[RoundTrace], fsd: bool, log: list, seq: int):
    yield env.timeout(rounds[0].drafted * cfg.T_d)  # the first round always drafts
    for k, trace in enumerate(rounds):
        t0 = env.now
        yield env.timeout(cfg.T_c / 2)                # drafts travel to the server
        rnd = _Round(env, cfg, rng, trace, fsd)
        yield rnd.final
        arrived = env.now
        last = k == len(rounds) - 1
        outcome, served = "last", float("nan")
        if not last:
            hit = rnd.cache.get(trace.key) if fsd else None
            if hit is not None and (hit.triggered or cfg.running == "wait"):
                outcome, served = ("hit" if hit.triggered else "partial"), rnd.source[trace.key]
                if not hit.triggered:
                    yield hit
                rnd.stop()
                yield env.timeout(cfg.t_sync)
            else:
                outcome = "miss"
                rnd.stop()
                yield env.timeout(rounds[k + 1].drafted * cfg.T_d)
        else:
            rnd.stop()
        log.append(dict(sequence=seq, round=k, start_s=t0, final_s=arrived, end_s=env.now,
                        outcome=outcome, tokens=trace.tokens, exits_sent=rnd.sent,
                        earliest_exit=trace.earliest_exit(), hit_exit=served))


def simulate(sequences: Sequence[Sequence[RoundTrace]], config: FSDConfig, mode: str = "fsd") -> SimResult:
    """Simulate SD (``mode="sd"``) or FSD (``"fsd"``) over ``sequences``, one after the other."""
    if mode not in ("sd", "fsd"):
        raise ValueError(f"mode must be 'sd' or 'fsd', got {mode!r}")
    seqs = _check_sequences(sequences)
    env = simpy.Environment()
    rng = np.random.default_rng(config.seed)
    log: list[dict] = []

    def run_all():
        for i, rounds in enumerate(seqs):
            yield env.process(_sequence(env, config, rng, rounds, mode == "fsd", log, i))

    env.process(run_all())
    env.run()
    frame = pd.DataFrame(log)
    checks = int((frame.outcome != "last").sum())
    # abandoned pre-drafts leave timeouts behind env.now: the run ends when the last round does
    return SimResult(time_s=float(frame.end_s.max()), tokens=int(frame.tokens.sum()), rounds=len(frame), checks=checks,
                     misses=int((frame.outcome == "miss").sum()),
                     partial_hits=int((frame.outcome == "partial").sum()), log=frame)


def evaluate(sequences: Sequence[Sequence[RoundTrace]], config: FSDConfig, fsd_config: FSDConfig | None = None,
             ar_token_s: float | None = None) -> dict[str, float]:
    """Table 6's metrics for one (model set, client, benchmark): AR from Table 4, SD and FSD simulated.

    speedup_ar_sd = N·(T_t + T_c) / SD time; speedup_sd_fsd = SD time / FSD time; tau = tokens per
    round; stated_miss_rate and stated_avg_ee = the paper's definitions (``stated_miss_rate``,
    ``stated_average_early_exit``: properties of the models); miss_rate = the simulated FSD's ρ (a hit needs a
    finished pre-draft); avg_ee = earliest agreeing exit counting L where none agrees; avg_hit_exit = the exit
    whose pre-draft served FSD's hits (depends on the client's speed and threads).

    ``fsd_config`` (default ``config``): FSD's own timings where they differ from SD's (a server that pays for
    computing the exits verifies slower than plain SD's); ``ar_token_s``: AR's seconds per token where measured
    (default Table 4's T_t + T_c).
    """
    from ..solvers.venkatesha2025 import latency_ar
    sd, fsd = simulate(sequences, config, "sd"), simulate(sequences, fsd_config or config, "fsd")
    ar = float(latency_ar(sd.tokens, config.T_t, config.T_c) if ar_token_s is None else sd.tokens * ar_token_s)
    layers = next(iter(sequences))[0].n_layers
    ee, stated_ee = average_early_exit(sequences), stated_average_early_exit(sequences)
    return dict(speedup_ar_sd=ar / sd.time_s, speedup_sd_fsd=sd.time_s / fsd.time_s,
                tau=sd.tokens_per_round, stated_miss_rate=stated_miss_rate(sequences), stated_avg_ee=stated_ee,
                stated_avg_ee_depth=stated_ee / layers, miss_rate=fsd.miss_rate, avg_ee=ee, avg_ee_depth=ee / layers,
                avg_hit_exit=fsd.avg_hit_exit, avg_hit_exit_depth=fsd.avg_hit_exit / layers, n_layers=layers,
                tokens=sd.tokens, rounds=sd.rounds, partial_hits=fsd.partial_hits)


def evaluate_sources(traces: Mapping[str, Sequence[Sequence[RoundTrace]]], sources: Mapping[str, Mapping]) -> pd.DataFrame:
    """``evaluate`` for every timing source x group of traces (``sources[name]``: ``sd`` and ``fsd`` configs and
    ``ar_token_s``), plus each source's ``Average`` over the groups (as Table 6's Average row); timings in ms beside."""
    rows = []
    for name, src in sources.items():
        sd, fsd = src["sd"], src["fsd"]
        for group, tr in traces.items():
            rows.append(dict(source=name, benchmark=group, T_d_ms=1e3 * sd.T_d, T_t_sd_ms=1e3 * sd.T_t,
                             T_t_fsd_ms=1e3 * fsd.T_t, T_c_ms=1e3 * sd.T_c, threads=fsd.threads,
                             **evaluate(tr, sd, fsd, src["ar_token_s"])))
    frame = pd.DataFrame(rows)
    avg = frame.groupby("source", sort=False).mean(numeric_only=True).reset_index().assign(benchmark="Average")
    return pd.concat([frame, avg[frame.columns]], ignore_index=True)


def stated_intervals(frame: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """τ and the paper's cache-miss rate and Avg EE (``stated_miss_rate``, ``stated_average_early_exit``, also as a
    fraction of depth) over every round of a ``traces_frame`` (with a ``benchmark`` column), each with a 95 % interval
    that resamples whole sequences (benchmark x sequence)."""
    from ..predictor.intervals import bootstrap_statistic
    per_round = frame.groupby(["benchmark", "sequence", "round"], sort=False).apply(
        lambda g: pd.Series(dict(tokens=g.accepted.iloc[0] + 1, n_layers=g.n_layers.iloc[0],
                                 earliest=next((int(e.exit) for e in g.itertuples() if e.exit > 0 and
                                                (e.exit_accepted, e.exit_token) == (e.accepted, e.token)), 0))),
        include_groups=False).reset_index()
    groups = (per_round.benchmark.astype(str) + "/" + per_round.sequence.astype(str)).to_numpy()
    agreed = per_round.earliest > 0
    stats = {"tau": lambda f: f.tokens.mean(), "stated_miss_rate": lambda f: (f.earliest == 0).mean(),
             "stated_avg_ee": lambda f: f.earliest[f.earliest > 0].mean(),
             "stated_avg_ee_depth": lambda f: (f.earliest[f.earliest > 0] / f.n_layers[f.earliest > 0]).mean()}
    rows = [dict(quantity=q, **dict(zip(("value", "low", "high"), bootstrap_statistic(per_round, groups, fn, n_boot, seed))))
            for q, fn in stats.items()]
    return pd.DataFrame(rows).assign(rounds=len(per_round), agreeing_rounds=int(agreed.sum()), prompts=len(set(groups)))


# ------------------------------------------------------------------------------------ sweeps (venkatesha2025 Sec 4.3)
def queue_policies(traces: Sequence[Sequence[RoundTrace]], base: FSDConfig, policies: Iterable[tuple[str, str]],
                   threads: Sequence[int] = (3, 5, 10)) -> pd.DataFrame:
    """Table 7: FSD's cache-miss rate for each (client queue, server queue) in ``policies`` and thread count.

    Columns ``client, server, threads, miss_rate``; rows in the order of ``policies``, then ``threads``."""
    rows = []
    for cq, sq in policies:
        for k in threads:
            r = simulate(traces, base.with_(threads=k, client_queue=cq, server_queue=sq), "fsd")
            rows.append(dict(client=cq, server=sq, threads=k, miss_rate=r.miss_rate))
    return pd.DataFrame(rows, columns=["client", "server", "threads", "miss_rate"])


def threads_sweep(traces: Sequence[Sequence[RoundTrace]], base: FSDConfig, threads: Iterable[int]) -> pd.DataFrame:
    """Fig 4a: SD->FSD speedup (SD time / FSD time) and FSD's cache-miss rate at each thread count."""
    rows = []
    for k in threads:
        cfg = base.with_(threads=k)
        sd, fs = simulate(traces, cfg, "sd"), simulate(traces, cfg, "fsd")
        rows.append(dict(threads=k, speedup_sd_fsd=sd.time_s / fs.time_s, miss_rate=fs.miss_rate))
    return pd.DataFrame(rows, columns=["threads", "speedup_sd_fsd", "miss_rate"])


def gamma_sweep(traces_for: Callable[[int], Sequence[Sequence[RoundTrace]]], base: FSDConfig, gammas: Iterable[int]) -> pd.DataFrame:
    """Fig 4b: ``early_exit.sim.evaluate`` at each γ on ``traces_for(γ)`` (drafting γ tokens changes the traces)."""
    return pd.DataFrame([dict(gamma=g, **evaluate(traces_for(g), base.with_(gamma=g))) for g in gammas])


def timing_sources(passes: pd.DataFrame, prof, local, gamma: int = 4, columns=()) -> dict[str, dict]:
    """The timing sources of a measured pair's FSD evaluation (venkatesha2025 Table 6 on the real pair), each a dict of FSD's and SD's ``FSDConfig`` and AR's seconds per
    token (None: Table 4's T_t + T_c):

    - ``this CPU``: the pair's passes measured here (``passes``: ``passes.pair_passes`` as quantity/value rows): drafting γ tokens, SD verifying γ + 1 tokens,
      FSD's verification paying for every exit's outcome; AR = one target step; T_c the measured loopback round trip
      (``local``, one machine plays client and server); one pre-drafting thread (the client's one core);
    - ``paper <client> <set>``: the paper's Table 5 timings of each of ``columns`` (client, model set) as published;
    - ``verification = one step``: an accelerator's regime, where verifying γ + 1 tokens costs one target step and the
      exits come free with the layers (the paper's assumption); T_d = the pair's measured draft step, so the pair's own
      c = draft step / target step; T_c as for this CPU; 15 pre-drafting threads (the paper's common limit)."""
    p = passes.set_index("quantity").value
    need = {"draft_step_s", "target_step_s", "draft_gamma_s", "verify_s", "verify_exits_s"} - set(p.index)
    if need:
        raise ValueError(f"pass_times lacks {sorted(need)}")
    t_c = float(next(iter(local.runtime.values()))["T_c_s"])
    cpu = FSDConfig(gamma=gamma, T_d=p.draft_gamma_s / gamma, T_t=p.verify_s, T_c=t_c, threads=1)
    out = {"this CPU": dict(sd=cpu, fsd=cpu.with_(T_t=float(p.verify_exits_s)), ar_token_s=p.target_step_s + t_c)}
    for client, set_name in columns:
        cfg = FSDConfig.from_profile(prof, f"{client}_{set_name}", gamma=gamma)
        out[f"paper {client} {set_name}"] = dict(sd=cfg, fsd=cfg, ar_token_s=None)
    acc = FSDConfig(gamma=gamma, T_d=float(p.draft_step_s), T_t=float(p.target_step_s), T_c=t_c, threads=15)
    out["verification = one step"] = dict(sd=acc, fsd=acc, ar_token_s=p.target_step_s + t_c)
    return out
