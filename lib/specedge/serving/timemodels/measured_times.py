"""Time models of the real serving system fitted on some of its runs and drawn with their measured spread.

The stochastic twin of a real run (``serving.analysis.validation``) models what the replay takes from the run itself. Here
each model is fitted on *other* runs (``fit``: the runs of the same setting and number of clients N, so that the
drafters share their core with as many others as in the judged run: the contention is in the data) and drawn per
round, not taken at its median:

- drafting: per client, e0 + e1 k for k draft passes (least squares over the rounds after the first), times a
  factor drawn from the fitted runs' measured time / fit (the spread: the drafters share one core, heavy-tailed);
  on the drafters' shared core that factor is split (``core_slowness``) into the core's slowness, common to the
  drafters whose rounds begin within ``CORE_BIN_S`` of each other and drawn per interval of simulated time, and each
  round's own residual; or (``times(..., core_periods=True)``) into the slowness common to the draftings of one
  busy period of the core (``busy_periods``: draftings that overlap, one beginning before the others have ended),
  drawn once per busy period of the simulated core, and each round's residual within its period;
- the drafter process's CPU besides its drafting (``t_client_cpu - t_draft_cpu``: gRPC's threads, serialising the
  request, taking the reply in, committing it), per client, values drawn from the fitted runs' measured ones (logs
  without ``t_client_cpu``: none; ``with_client_cpu`` takes them from other runs);
- the client's own time between rounds, the uplink and the reply's way back: per client, values drawn from the
  fitted runs' measured ones;
- verification: eq (19) (the caller's model) times a factor drawn from the fitted runs' measured pass / eq (19);
  or (``times(..., pass_shape=True)``, tried, not kept) drawn from the fitted passes of batches of about as many new
  tokens (``ByShape``: eq (19)'s affine form misses the step from one new token to several);
- the server: its wake-up after waiting for a request (``log.dispatch_latency``) and its time between
  back-to-back passes (``log.turnaround_latency``), drawn from the fitted runs' values; its intake of a request that
  reaches it during a pass (``log.intake_delays``: the wait for its handler thread), drawn from the fitted runs'
  requests that reached it as far into a pass (``INTAKE_BIN_S``);
- tried, not kept: the drafters' wake-up, a reply's way and the drafter's wait before its next drafting, drawn
  together from the fitted runs' rounds with as many other drafters busy (``log.wake_waits``, ``Wake``); the host's
  state behind the busy periods, the passes and the link (``host_state``, fitted on the runs' ``host_events``:
  ``Drawn.host``), read by those draws (``times(..., host=True)``).

``Drawn`` holds them; ``times`` / ``server`` give the engine's ``Times`` and the server's draws of one seed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from . import host_state
from ..interfaces import Times
from ..log import dispatch_latency, intake_delays, pass_intakes, real_rounds, turnaround_latency, wake_waits


# The interval over which the drafters' core's slowness is taken as one value: drafters that draft at the same time
# move together, their drafting CPU above or below their lines alike (``core_share`` of the real runs,
# ``serving_validation.core_slowness``); 0.1 s holds one to two synchronous batches at N = 8 (other lengths: the
# doc's sensitivity, not used to choose)
CORE_BIN_S = 0.1

# The width of the intervals of time into a pass whose requests' intake waits are drawn together (``Intake``); a wait
# depends on how far into the pass its request came (the real runs: half of those reaching the server in a pass's
# first 2 ms wait over 1 ms for its handler, under a tenth of those after 3 ms); past ``INTAKE_LAST_S`` one interval
INTAKE_BIN_S = 0.5e-3
INTAKE_LAST_S = 4e-3

# The batches' shapes whose passes' factors over eq (19) are drawn apart (``ByShape``): the lower edges of the bins of
# a batch's new tokens (the sum of its L_new); a bin holding fewer than ``SHAPE_MIN`` fitted passes draws from its
# neighbours too. One new token is the verifier's matrix-vector pass, two or more a matrix product: the real passes
# of WISP's setting took 0.90 x eq (19) with one new token and 1.1-1.2 x with 2-12 (docs/twin-validation.md)
SHAPE_EDGES = (1, 2, 3, 4, 6, 9, 13, 21, 51)
SHAPE_MIN = 20


@dataclass(frozen=True)
class ClientTimes:
    """One client's fitted drafting line and the measured values its times are drawn from."""
    e0: float
    e1: float
    factors: np.ndarray      # measured drafting time / (e0 + e1 k), rounds after the first
    gaps: np.ndarray
    up: np.ndarray
    down: np.ndarray
    cpu_e0: float = 0.0      # the same of the drafting's CPU time (``t_draft_cpu``): the work on the drafters' core
    cpu_e1: float = 0.0
    cpu_factors: np.ndarray = None
    other_cpu: np.ndarray = None   # the process's CPU besides drafting per round (``t_client_cpu - t_draft_cpu``)
    cpu_residuals: np.ndarray = None   # ``cpu_factors`` over the core's slowness when the drafting began (``Drawn.core``)
    period_residuals: np.ndarray = None   # ``cpu_factors`` over the slowness of its busy period (``Drawn.periods``)


@dataclass(frozen=True)
class Drawn:
    """The fitted models of one setting and N (``fit``)."""
    clients: tuple[ClientTimes, ...]
    verify_factors: np.ndarray
    dispatch: np.ndarray
    turnaround: np.ndarray
    runs: tuple
    core: np.ndarray = None   # the drafters' core's slowness per ``core_bin_s`` of the fitted runs (``core_slowness``)
    core_bin_s: float = CORE_BIN_S
    starts: np.ndarray = None  # per fitted run (row) and client, its first round's start after the run's first client's
    intake: np.ndarray = None  # (seconds into a pass, the server's intake wait) of the fitted runs' requests (``log.intake_delays``)
    wake: np.ndarray = None    # (others busy, the reply's way, the wait in hand) of the fitted runs' rounds (``log.wake_waits``)
    periods: np.ndarray = None  # the drafters' core's slowness per busy period of the fitted runs (``busy_periods``)
    host: host_state.State = host_state.NONE   # the state behind their periods, passes and link (``host_events``)
    verify_tokens: np.ndarray = None   # per value of ``verify_factors``: its batch's new tokens (the sum of L_new)
    own_factors: np.ndarray = None     # per value of ``verify_factors``: the pass's own time over eq (19) (``taken_in``)
    steals: np.ndarray = None          # the seconds a request taken in during a pass took from it (``taken_in``)


def busy_periods(began: np.ndarray, ended: np.ndarray, run: np.ndarray) -> np.ndarray:
    """Per drafting (``began`` to ``ended``, seconds, of run ``run``), the index of its run's busy period: in order of
    their beginnings, a drafting that begins before every earlier one of its run has ended joins their period, one
    that begins after opens the next (0, 1, ... per run)."""
    began, ended, run = np.asarray(began, float), np.asarray(ended, float), np.asarray(run)
    out = np.zeros(len(began), np.int64)
    for r in np.unique(run):
        idx = np.flatnonzero(run == r)
        order = idx[np.argsort(began[idx], kind="stable")]
        opened = began[order] > np.maximum.accumulate(np.concatenate(([-np.inf], ended[order][:-1])))
        out[order] = np.cumsum(opened) - 1
    return out


def core_slowness(began: np.ndarray, log_factor: np.ndarray, run: np.ndarray, bin_s: float = CORE_BIN_S,
                  ended: np.ndarray | None = None):
    """Split the drafting CPU's log factors (each round's measured CPU over its client's line) into the core's part,
    the mean over all the drafters' rounds that began in the same ``bin_s`` of the same run (with ``ended``, each
    drafting's end: in the same busy period, ``busy_periods``), and each round's residual: returns (exp of each bin's
    or period's mean, exp of each round's residual); their product is the measured factor."""
    began, log_factor, run = (np.asarray(a) for a in (began, log_factor, run))
    ok = np.isfinite(log_factor) & np.isfinite(began) & (np.isfinite(ended) if ended is not None else True)
    if not ok.any():
        return np.ones(1), np.ones(len(log_factor))
    group = (np.floor(began[ok] / bin_s).astype(np.int64) if ended is None else
             busy_periods(began[ok], np.asarray(ended)[ok], run[ok]))
    key = run[ok].astype(np.int64) * (1 << 40) + group   # (run, bin or period)
    mean = pd.Series(log_factor[ok]).groupby(key).transform("mean").to_numpy(float)
    residual = np.full(len(log_factor), np.nan)
    residual[ok] = log_factor[ok] - mean
    bins = pd.Series(log_factor[ok]).groupby(key).mean().to_numpy(float)
    return np.exp(bins), np.exp(residual)


def host_events(began, ended, log_factor, run, rounds: pd.DataFrame, passes: pd.DataFrame) -> pd.DataFrame:
    """The events the host's state is fitted on (``host_state.fit``), one row each (t, kind, value, run): each busy
    period of the draftings (``began`` to ``ended``, their CPU's ``log_factor`` over their line, of run ``run``) at its
    first drafting's start, its value the exp of their mean (``core_slowness``'s); from ``rounds`` (columns run,
    arrival, up, t_draft, gap, down, end: the rounds after each client's first) the gap where it began, the uplink
    where the request was sent and the reply's way where its pass ended; from ``passes`` (run, start, factor) each
    pass's factor over eq (19) where it started."""
    began, ended, log_factor, run = (np.asarray(a) for a in (began, ended, log_factor, run))
    ok = np.isfinite(log_factor)
    period = busy_periods(began[ok], ended[ok], run[ok])
    p = (pd.DataFrame(dict(run=run[ok], period=period, t=began[ok], v=log_factor[ok]))
         .groupby(["run", "period"]).agg(t=("t", "min"), v=("v", "mean")).reset_index())
    sent = rounds["arrival"] - rounds["up"]
    parts = [pd.DataFrame(dict(t=p["t"], kind="period", value=np.exp(p["v"]), run=p["run"])),
             pd.DataFrame(dict(t=sent - rounds["t_draft"] - rounds["gap"], kind="gap", value=rounds["gap"],
                               run=rounds["run"])),
             pd.DataFrame(dict(t=sent, kind="up", value=rounds["up"], run=rounds["run"])),
             pd.DataFrame(dict(t=rounds["end"], kind="down", value=rounds["down"], run=rounds["run"])),
             pd.DataFrame(dict(t=passes["start"], kind="verify", value=passes["factor"], run=passes["run"]))]
    return pd.concat([x for x in parts if len(x)], ignore_index=True)


def _line(k: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    if np.unique(k).size >= 2:
        e1, e0 = np.polyfit(k.astype(float), t, 1)
        if e1 > 0 and e0 >= 0:
            return float(e0), float(e1)
    return 0.0, float(np.median(t / k))   # one window size (or a negative intercept): per pass


def fit(runs: dict, keys, passes, verify_model, bin_s: float = CORE_BIN_S) -> Drawn:
    """The models fitted on the real runs ``keys`` of ``runs`` (one setting, one N). ``passes(rounds, c)``: the
    draft passes the twin charges for client c's real rounds (``validation.draft_passes``); ``verify_model``: eq
    (19) as the twin uses it (its ``time`` of a batch's features), whose measured factors are drawn (None: none, a
    factor of 1)."""
    from .estimator import features
    from .runtime import log_batches
    from ..log import parse_batch, verified

    keys = list(keys)
    if not keys:
        raise ValueError("keys: no real runs to fit the time models on")
    per_client: dict[int, list[pd.DataFrame]] = {}
    starts = []
    for j, k in enumerate(keys):
        rr = real_rounds(runs[k])
        for c, r in rr.items():
            per_client.setdefault(c, []).append(r.assign(k_passes=passes(r, c), run=j))
        first = {c: float(r["gap"].iloc[0]) for c, r in rr.items()}   # its first drafting's start on the run's clock
        starts.append([first.get(c, np.nan) - min(first.values()) for c in range(max(first) + 1)])
    clients, began, ended, logf, run, counts, linked = [], [], [], [], [], [], []
    for c in sorted(per_client):
        r = pd.concat(per_client[c], ignore_index=True)
        linked.append(r.loc[r["round"] > 0, ["run", "arrival", "up", "t_draft", "gap", "down", "end"]])
        later = r[(r["round"] > 0) & (r["k_passes"] > 0)]
        k, t = later["k_passes"].to_numpy(int), later["t_draft"].to_numpy(float)
        e0, e1 = _line(k, t) if len(later) else (0.0, 0.0)
        pred = e0 + e1 * k
        cpu = later["t_draft_cpu"].to_numpy(float) if "t_draft_cpu" in later else t
        c0, c1 = _line(k, cpu) if len(later) else (0.0, 0.0)
        cpred = c0 + c1 * k
        other = r[r["round"] > 0]
        other = ((other["t_client_cpu"] - other["t_draft_cpu"]).dropna().to_numpy(float)
                 if {"t_client_cpu", "t_draft_cpu"} <= set(r.columns) else np.zeros(0))
        cf = cpu / np.where(cpred > 0, cpred, np.nan) if len(later) else np.ones(1)
        clients.append(ClientTimes(e0, e1, t / np.where(pred > 0, pred, np.nan) if len(later) else np.ones(1),
                                   r.loc[r["round"] > 0, "gap"].to_numpy(float), r["up"].to_numpy(float),
                                   r["down"].to_numpy(float), c0, c1, cf, other))
        if len(later):
            began.append((later["arrival"] - later["up"] - later["t_draft"]).to_numpy(float))
            ended.append((later["arrival"] - later["up"]).to_numpy(float))
            with np.errstate(divide="ignore", invalid="ignore"):
                logf.append(np.log(cf))
            run.append(later["run"].to_numpy(int))
        counts.append(len(later))
    if began:   # the core's slowness per interval and per busy period, each with the rounds' residuals
        began, ended, logf, run = (np.concatenate(a) for a in (began, ended, logf, run))
        core, residuals = core_slowness(began, logf, run, bin_s)
        periods, within = core_slowness(began, logf, run, ended=ended)
    else:
        (core, residuals), (periods, within) = (np.ones(1), np.zeros(0)), (np.ones(1), np.zeros(0))
    at = 0
    for i, n in enumerate(counts):
        clients[i] = replace(clients[i], cpu_residuals=residuals[at:at + n] if n else np.ones(1),
                             period_residuals=within[at:at + n] if n else np.ones(1))
        at += n
    factors, started, tokens, own, steals = [], [], [], [], []
    for j, k in enumerate(keys if verify_model is not None else ()):
        prof = log_batches(runs[k])
        feats = [features(parse_batch(b)) for b in prof["batch"]]
        pred = np.array([verify_model.time(*f) for f in feats])
        factors.append(prof["seconds"].to_numpy(float) / pred)
        stolen, per_request = taken_in(runs[k])
        own.append((prof["seconds"].to_numpy(float) - stolen) / pred)
        steals.append(per_request)
        tokens.append(np.array([f[0] for f in feats], int))
        rows = verified(runs[k])
        rows = rows[rows["t_verify"].notna()]
        start = rows["start"].groupby(rows["batch"], sort=True).first().to_numpy(float)   # each pass's, as ``prof``'s
        started.append(pd.DataFrame(dict(run=j, start=start, factor=factors[-1])))
    dl = np.concatenate([dispatch_latency(runs[k]) for k in keys])
    ta = np.concatenate([turnaround_latency(runs[k]) for k in keys])
    intake = np.concatenate([intake_delays(runs[k]) for k in keys])
    wake = np.concatenate([wake_waits(runs[k]) for k in keys])
    host = host_state.NONE
    if len(began):   # the host's state behind the fitted runs' periods, link and passes
        ev = host_events(began, ended, logf, run, pd.concat(linked, ignore_index=True),
                         pd.concat(started, ignore_index=True) if started
                         else pd.DataFrame(columns=["run", "start", "factor"]))
        host = host_state.fit(ev["t"], ev["kind"], ev["value"], ev["run"])
    width = max(len(s) for s in starts)
    starts = np.array([s + [np.nan] * (width - len(s)) for s in starts], float)
    return Drawn(tuple(clients), np.concatenate(factors) if factors else np.ones(1), dl if len(dl) else np.zeros(1),
                 ta if len(ta) else np.zeros(1), tuple(keys), core, float(bin_s), starts, intake, wake, periods, host,
                 np.concatenate(tokens) if tokens else None, np.concatenate(own) if own else None,
                 np.concatenate(steals) if steals else None)


def taken_in(log: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """What the requests taken in during a run's passes took from them (``log.pass_intakes``): per pass in batch
    order, the seconds its thread was off its core beyond the run's passes that took none in (their median; 0 where
    none did, or the log has no pass CPU), never below 0, for a pass that took one in (else 0); and per request taken
    in, its pass's seconds over its requests taken in."""
    p = pass_intakes(log)
    off, k = p["off_core"].to_numpy(float), p["taken_in"].to_numpy(int)
    none = off[(k == 0) & np.isfinite(off)]
    base = float(np.median(none)) if len(none) else 0.0
    stolen = np.where((k > 0) & np.isfinite(off), np.maximum(off - base, 0.0), 0.0)
    return stolen, np.repeat(stolen[k > 0] / k[k > 0], k[k > 0])


def core_share(model: Drawn) -> float:
    """The share of the drafting CPU's log-variance (each round's measured CPU over its client's line, pooled over
    ``model``'s clients) that the core's slowness carries (``core_slowness``): 1 - var(log residual) / var(log factor);
    NaN with fewer than two rounds."""
    f = np.concatenate([np.log(np.asarray(c.cpu_factors, float)) for c in model.clients])
    r = np.concatenate([np.log(np.asarray(c.cpu_residuals, float)) for c in model.clients])
    f, r = f[np.isfinite(f)], r[np.isfinite(r)]
    if len(f) < 2 or not np.var(f) > 0:
        return float("nan")
    return float(1 - np.var(r) / np.var(f))


class _Draws:
    """Values of one array drawn uniformly, 4096 indices at a time."""

    def __init__(self, values: np.ndarray, rng: np.random.Generator):
        values = np.asarray(values, float)
        values = values[np.isfinite(values)]
        self.values, self.rng, self.idx = (values.tolist() if len(values) else [0.0]), rng, iter(())

    def __call__(self) -> float:
        i = next(self.idx, None)
        if i is None:
            self.idx = iter(self.rng.integers(len(self.values), size=4096).tolist())
            i = next(self.idx)
        return self.values[i]


class _Binned:
    """A value per ``bin_s`` of time, each drawn from ``values`` when first asked for."""

    def __init__(self, values: np.ndarray, bin_s: float, rng: np.random.Generator):
        self.draw, self.bin_s, self.drawn = _Draws(values, rng), float(bin_s), {}

    def __call__(self, t: float) -> float:
        b = int(t // self.bin_s)
        v = self.drawn.get(b)
        if v is None:
            v = self.drawn[b] = self.draw()
        return v


class ByShape:
    """Draws of the passes' factors ``values`` by the new tokens of the batch drawn for (``__call__(tokens)``): from
    the values whose batches' new tokens ``of`` fall in the same bin of ``SHAPE_EDGES``, the bin widened by one
    neighbour on each side at a time while it holds fewer than ``SHAPE_MIN`` of them."""

    def __init__(self, values: np.ndarray, of: np.ndarray, rng: np.random.Generator):
        values, of = np.asarray(values, float), np.asarray(of, int)
        if len(values) != len(of) or not len(values):
            raise ValueError(f"values, of: {len(values)} factors and {len(of)} token counts; expected as many, not 0")
        edges = np.asarray(SHAPE_EDGES)
        at = np.searchsorted(edges, of, side="right") - 1
        self.pools = []
        for b in range(len(edges)):
            lo = hi = b
            while np.count_nonzero((at >= lo) & (at <= hi)) < SHAPE_MIN and (lo > 0 or hi < len(edges) - 1):
                lo, hi = max(lo - 1, 0), min(hi + 1, len(edges) - 1)
            self.pools.append(values[(at >= lo) & (at <= hi)])
        self.edges, self.rng = edges, rng

    def __call__(self, tokens: int) -> float:
        pool = self.pools[max(int(np.searchsorted(self.edges, tokens, side="right")) - 1, 0)]
        return float(pool[self.rng.integers(len(pool))])


class Intake:
    """The server's intake wait of a request that reaches it ``into`` seconds after the start of the pass running then:
    a wait of the fitted runs' requests that reached it in the same interval of ``bin_s`` (past ``last_s``: any later;
    an interval without one: the nearest earlier that has one), drawn uniformly, never below 0."""

    def __init__(self, records: np.ndarray, rng: np.random.Generator, bin_s: float = INTAKE_BIN_S,
                 last_s: float = INTAKE_LAST_S):
        records = np.asarray(records, float).reshape(-1, 2)
        records = records[np.isfinite(records).all(axis=1) & (records[:, 0] >= 0)]
        if not len(records):
            raise ValueError("records: no request reached the server during a pass in the fitted runs")
        self.bin_s, self.n = float(bin_s), int(np.ceil(last_s / bin_s))
        idx = np.minimum(records[:, 0] // self.bin_s, self.n).astype(int)
        self.bins, have = [], None
        for b in range(self.n + 1):
            values = records[idx == b, 1]
            have = _Draws(np.maximum(values, 0.0), rng) if len(values) else have
            self.bins.append(have)
        first = next(d for d in self.bins if d is not None)
        self.bins = [first if d is None else d for d in self.bins]

    def __call__(self, into: float) -> float:
        return self.bins[min(int(into // self.bin_s), self.n)]()


class Wake:
    """A drafter's reply's way from the server's pass end and its wait from the reply in hand to its next drafting,
    when ``busy`` other clients are busy on the drafters' side: a pair of the fitted runs' rounds with as many busy
    (none with as many: the nearest fewer, else the nearest more), drawn uniformly (``log.wake_waits``)."""

    def __init__(self, records: np.ndarray, rng: np.random.Generator):
        records = np.asarray(records, float).reshape(-1, 3)
        records = records[np.isfinite(records).all(axis=1) & (records[:, 0] >= 0)]
        if not len(records):
            raise ValueError("records: no round of the fitted runs was followed by another")
        busy = records[:, 0].astype(int)
        have = {int(b): (_Draws(np.arange((busy == b).sum()), rng), np.maximum(records[busy == b, 1:], 0.0).tolist())
                for b in np.unique(busy)}
        known = sorted(have)
        self.bins = [have[max((k for k in known if k <= b), default=known[0])] for b in range(known[-1] + 1)]

    def __call__(self, busy: int) -> tuple[float, float]:
        draw, pairs = self.bins[min(max(int(busy), 0), len(self.bins) - 1)]
        return tuple(pairs[int(draw())])


def with_client_cpu(model: Drawn, source: Drawn) -> Drawn:
    """``model`` with each client's CPU besides drafting (``other_cpu``) drawn from ``source`` instead: runs of the same
    setting and N logged with ``t_client_cpu`` (another campaign's, where ``model``'s runs predate the column)."""
    if len(source.clients) != len(model.clients):
        raise ValueError(f"source: {len(source.clients)} clients, expected {len(model.clients)} (the same N)")
    return replace(model, clients=tuple(replace(c, other_cpu=s.other_cpu) for c, s in zip(model.clients, source.clients)))


def _median(values) -> float:
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if len(values) else 0.0


def split(alone: ClientTimes) -> tuple[float, float, float]:
    """(share before the send, CPU before the send, CPU after the receive) of a drafter's CPU besides drafting, from
    ``alone`` (runs of one client, whose core is its own: there a round's time between the reply and the next
    drafting plus its uplink (gap + up) and the reply's way back (down) are that CPU plus the time on the wire): the
    CPU is placed as those wall times are, median (gap + up) / median (gap + up + down) of it before the send, and its
    median is what ``alone``'s gap, up and down already hold."""
    pre, post = _median(alone.gaps) + _median(alone.up), _median(alone.down)
    share = pre / (pre + post) if pre + post > 0 else 1.0
    x = _median(alone.other_cpu) if alone.other_cpu is not None else 0.0
    return share, share * x, (1 - share) * x


def first_starts(model: Drawn, n_clients: int, seed: int = 0) -> tuple[float, ...]:
    """The seconds after the first client each of ``n_clients`` clients starts its first round, as in one of
    ``model``'s fitted runs drawn at random (``seed``): the real harness starts its drafter processes one after
    another, each loading its models on the drafters' core, and its server opens its queue once every one has
    said Hello. One run's starts together keep their order and spacing."""
    rows = [] if model.starts is None else [r[:n_clients] for r in np.atleast_2d(model.starts)
                                            if len(r) >= n_clients and np.isfinite(r[:n_clients]).all()]
    if not rows:
        raise ValueError(f"model: no fitted run with a start for each of {n_clients} clients (runs {model.runs})")
    row = rows[int(np.random.default_rng(np.random.SeedSequence([seed, 29])).integers(len(rows)))]
    return tuple(float(t) for t in row - row.min())


def times(model: Drawn, verify, seed: int = 0, shared_core: bool = False, alone: Drawn | None = None,
          core_slice: float | None = None, core_speed: bool = False, starts: bool = False, intake: bool = False,
          wake: bool = False, wake_stamps: bool = False, core_periods: bool = False, host: bool = False,
          pass_shape: bool = False, steal: bool = False) -> Times:
    """The engine's ``Times`` drawn from ``model`` (client c of the twin's workload: the fitted runs' client c):
    drafting (e0 + e1 k) x a measured factor + a measured gap, a measured uplink and reply, eq (19) ``verify``
    x a measured factor. ``shared_core``: drafting is its CPU time's line x a measured factor, the work on the
    drafters' one core (``interfaces.Times.shared_core``: their contention simulated, not drawn); then ``alone``, the
    models of runs of one client (no contention: where the measured gap and reply times of ``model`` carry the
    wait for the busy core), gives every client its gap (work on the core), uplink and reply. Where ``model`` has the
    drafter process's CPU besides drafting (``other_cpu``), each round draws one value of it and charges it on the
    core too, ``split``'s share before the send (request serialisation) and the rest once the reply is in (taking it
    in and committing it, before the next drafting: ``interfaces.Times.post``); the gap, uplink and reply of ``alone`` then lose the part of
    that CPU they hold (its median, placed alike), so that a client alone on its core takes as long as before.
    ``core_slice``: the shared core's discipline (``interfaces.Times.core_slice``: None, processor sharing);
    ``core_speed``: the core's slowness common to its drafters, one value of ``model.core`` drawn per ``core_bin_s`` of
    simulated time (``interfaces.Times.core_speed``), each drafting's own factor its residual (``cpu_residuals``);
    ``core_periods``: instead, one value of ``model.periods`` drawn per busy period of the simulated core
    (``interfaces.Times.core_period``), each drafting's own factor its residual within its period (``period_residuals``);
    ``starts``: the clients start as in one fitted run, drawn (``first_starts``), the server's queue opening once the
    last has started (``interfaces.Times.starts``); ``intake``: a request that reaches the server during a pass waits for
    its intake as the fitted runs' did that far into a pass (``Intake``; ``interfaces.Times.intake``; none where no
    request of theirs reached it during a pass: one client); ``wake``: a reply's way and its client's wait before its next
    drafting are drawn together from the fitted runs' rounds with as many other clients busy (``Wake``;
    ``interfaces.Times.wake``), the way losing the CPU it holds as the reply's does; ``wake_stamps``: the same pairs,
    whole, read on the drafters' own clocks only (``interfaces.Times.wake_stamps``: the rounds' starts and ends), the
    reply's way and the next drafting on the core as without them; ``host``: the busy periods' slowness, the passes'
    factors and the link's gap, uplink and reply's way read the host's state (``host_state``: ``model.host`` within one
    run, its loadings for the periods and passes, ``alone.host``'s, where given, for the link drawn from ``alone``),
    each at its quantile of its measured values (``interfaces.Times.host``); ``pass_shape``: each pass's factor drawn
    from the fitted passes of batches of about as many new tokens (``ByShape``; ``model.verify_tokens``); ``steal``: each
    pass's factor is its own time's (``model.own_factors``: the fitted passes less what the requests taken in during
    them took), and each request the server takes in during a pass lengthens it by a value of ``model.steals``
    (``interfaces.Times.steal``; none where no fitted request was taken in during a pass: one client)."""
    if wake and wake_stamps:
        raise ValueError("wake, wake_stamps: one of the two (the wake-up drawn as delays, or read on the clocks only)")
    if core_speed and core_periods:
        raise ValueError("core_speed, core_periods: one of the two (the core's slowness per interval, or per busy period)")
    if host and pass_shape:
        raise ValueError("host, pass_shape: one of the two (the passes' factors read the host's state, or by shape)")
    if steal and (host or pass_shape):
        raise ValueError("steal: not with host or pass_shape (the passes' own factors are drawn as they were measured)")
    if steal and model.own_factors is None:
        raise ValueError("steal: model has no own_factors (fitted without a verify model)")
    if pass_shape and model.verify_tokens is None:
        raise ValueError("pass_shape: model has no verify_tokens (fitted without a verify model)")
    first = first_starts(model, len(model.clients), seed) if starts else None
    taken = (Intake(model.intake, np.random.default_rng(np.random.SeedSequence([seed, 31])))
             if intake and model.intake is not None and len(model.intake) else None)
    woken = (Wake(model.wake, np.random.default_rng(np.random.SeedSequence([seed, 37])))
             if (wake or wake_stamps) and model.wake is not None and len(model.wake) else None)
    stamped = wake_stamps and woken is not None and shared_core
    rng = np.random.default_rng(np.random.SeedSequence([seed, 19]))
    cs = model.clients
    common = shared_core and core_speed and model.core is not None
    by_period = shared_core and core_periods and model.periods is not None
    fac = [_Draws((c.cpu_residuals if common else c.period_residuals if by_period else c.cpu_factors)
                  if shared_core else c.factors, rng) for c in cs]
    speed = _Binned(model.core, model.core_bin_s, np.random.default_rng(np.random.SeedSequence([seed, 23]))) if common else None
    link = [alone.clients[0]] * len(cs) if (shared_core and alone is not None) else cs
    state = model.host.within() if host else None
    process = (host_state.Process(state.weights, np.random.default_rng(np.random.SeedSequence([seed, 43])))
               if host else None)
    linked = (alone.host if shared_core and alone is not None else model.host).loadings if host else {}

    def read(values, kind: str, stream: int, loadings=None):   # a draw of ``values``, reading the host's state
        return host_state.Coupled(values, (state.loadings if loadings is None else loadings).get(kind, 0.0), process,
                                  np.random.default_rng(np.random.SeedSequence([seed, 43, stream])))
    if host:
        period = read(model.periods, "period", 0) if by_period else None
        gap = [read(c.gaps, "gap", 1 + 3 * i, linked) for i, c in enumerate(link)]
        up = [read(c.up, "up", 2 + 3 * i, linked) for i, c in enumerate(link)]
        down = [read(c.down, "down", 3 + 3 * i, linked) for i, c in enumerate(link)]
        vf = read(model.verify_factors, "verify", 3 * len(link) + 1)
    else:
        period = _Draws(model.periods, np.random.default_rng(np.random.SeedSequence([seed, 41]))) if by_period else None
        gap = [_Draws(c.gaps, rng) for c in link]
        up, down = [_Draws(c.up, rng) for c in link], [_Draws(c.down, rng) for c in link]
        vf = _Draws(model.own_factors if steal else model.verify_factors, rng)
    stolen = (_Draws(model.steals, np.random.default_rng(np.random.SeedSequence([seed, 53])))
              if steal and model.steals is not None and len(model.steals) else None)
    client_cpu = shared_core and any(c.other_cpu is not None and len(c.other_cpu) for c in cs)

    def drafter(i):
        c, f, g = cs[i], fac[i], gap[i]
        e0, e1 = (c.cpu_e0, c.cpu_e1) if shared_core else (c.e0, c.e1)
        return lambda k: ((e0 + e1 * k) * f() if k > 0 else 0.0) + g()

    if pass_shape:
        shaped = ByShape(model.verify_factors, model.verify_tokens, np.random.default_rng(np.random.SeedSequence([seed, 47])))
        verify_time = lambda batch: float(verify(batch)) * shaped(sum(p.n_new for p in batch))   # noqa: E731
    else:
        verify_time = lambda batch: float(verify(batch)) * vf()   # noqa: E731
    if not client_cpu:
        return Times([drafter(i) for i in range(len(cs))], verify_time,
                     up=lambda c, s: up[c](), down=lambda c: down[c](), shared_core=shared_core,
                     core_slice=core_slice if shared_core else None, core_speed=speed, core_period=period,
                     starts=first, intake=taken,
                     wake=(woken if stamped else _held(woken, 0.0)) if shared_core else None, wake_stamps=stamped,
                     host=process, steal=stolen)
    share, held_pre, held_post = split(link[0])
    other = [_Draws(c.other_cpu, rng) for c in cs]
    after = [0.0] * len(cs)       # this round's CPU once the reply is in, drawn with its drafting

    def working(i):
        c, f, x = cs[i], fac[i], other[i]

        def work(k: int) -> float:
            v = x()
            after[i] = (1 - share) * v
            return ((c.cpu_e0 + c.cpu_e1 * k) * f() if k > 0 else 0.0) + share * v
        return work

    return Times([working(i) for i in range(len(cs))], verify_time,
                 up=lambda c, s: max(gap[c]() + up[c]() - held_pre, 0.0),
                 down=lambda c: max(down[c]() - held_post, 0.0), shared_core=True, post=lambda c: after[c],
                 core_slice=core_slice, core_speed=speed, core_period=period, starts=first, intake=taken,
                 wake=woken if stamped else _held(woken, held_post), wake_stamps=stamped, host=process, steal=stolen)


def _held(woken, held: float):
    """``Wake``'s draws with the reply's way less the CPU ``held`` that the core is charged once the reply is in."""
    if woken is None:
        return None

    def draw(busy: int) -> tuple[float, float]:
        way, hand = woken(busy)
        return max(way - held, 0.0), hand
    return draw
