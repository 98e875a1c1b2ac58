"""Replay: the twin driven by a real run's own per-round outcomes (the validation mode).

The stochastic twin (``twin.simulate``) draws acceptance from traces of other prompts and drafting and
link times from models; a difference from the real run then mixes the model's error with that noise.
``replay(log, workload, former, allocator, verify)`` removes the noise: every client replays its real
rounds in order with the real run's own

- drafted length S and accepted count (greedy verification: a round's outcome is a function of its
  drafts, not of the batch it went into) and eq (3)'s sum of min(1, p/q);
- drafting time (the drafter's own clock, ``t_draft``), uplink (``up``: stamped on the drafter, received
  by the server) and the reply's way back (``down``: from the end of the verification pass to the reply
  in the drafter's hands, i.e. the server's post-verification work for this request plus the wire,
  ``end - start - t_verify + t_send``); the client's own time between rounds (committing the verdict,
  serialising the next request: ``gap``) and each client's start (when its first round began);
- tokens fed and cached per request (``n_new``, ``n_cached``: what the real server logged);

and models only what the twin exists to model: queueing, batching (the very policy objects: batch
former and draft allocator, given the simulated ``now``), and the verifier's time (``verify``, a
``runtime`` model fitted on this machine, e.g. ``runtime.fit_log_batches``; ``MeasuredPasses`` gives each
batch the real run verified its measured time, which separates the verify-time model's error from the
queueing model's). The real server opens its queue once every client said Hello (its start barrier); the
replay opens it when the last client started drafting. ``dispatch``: the seconds a real server idle on
an empty queue takes to start on an arrival (its scheduling thread waking up: ``dispatch_latency``);
``turnaround``: the seconds from the end of a pass to the start of the next when requests are waiting
(answering the batch, the allocator, the scheduling thread getting the GIL back from the gRPC threads:
``turnaround_latency``), during which the replay's server is busy: one value, or the measured values,
one drawn per pass (``seed``) when the delay is bimodal (most passes follow at once, some wait out the
GIL's switch interval).

Where the replay's allocator gives a client another S than the real run drafted (``mismatch`` in the
log, counted by ``mismatches``): accepted = min(real accepted, S) (drafts beyond the real window are
taken as rejected: nothing is known of them), the sum of min(1, p/q) scales by S / S_real, the drafting
time moves by the client's median per-token drafting time times the difference, and ``n_new`` by the
difference; tokens committed drop by the accepted drafts lost. Drafters with their own rule (fixed
window or WISP's stop rule) draft exactly their real S.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import slo
from ..interfaces import BatchFormer, DraftAllocator, LogRow, Pending, VerifyTimeModel
from ..log import frame, real_rounds, verified
from .processes import Server, Simulation, turnarounds
from .twin import outcome
from ..workload import Workload

EXTRA = ("up", "n_new", "n_cached", "accept_prob_sum", "mismatch")


class MeasuredPasses:
    """A ``VerifyTimeModel`` that gives a batch of exactly the (client, round) requests the real run
    verified together that pass's measured ``t_verify``, and ``fallback(batch)`` to any other batch
    (``hits`` / ``misses`` count them)."""

    def __init__(self, log: pd.DataFrame, fallback: VerifyTimeModel):
        rows = verified(log)
        self.passes = {frozenset(zip(g["client"].astype(int), g["round"].astype(int))): float(g["t_verify"].iloc[0])
                       for _, g in rows.groupby("batch")}
        self.fallback, self.hits, self.misses = fallback, 0, 0

    def __call__(self, batch) -> float:
        t = self.passes.get(frozenset((p.client, p.round) for p in batch))
        if t is None:
            self.misses += 1
            return float(self.fallback(batch))
        self.hits += 1
        return t


class LoggedRounds:
    """One client's rounds in the replay (``processes``' rounds protocol): its real rounds in order, each after
    its measured gap, with the run's drafting and link times and outcomes, S from the allocator where the
    server allocates it (module docstring: a mismatch), the reply's measured way back (``down``) once woken."""
    gaps = True

    def __init__(self, c: int, spec, real: pd.DataFrame, per_token: float, cache: bool, rows: list, extra: list,
                 alloc: dict, label: str, acceptance=None, rng=None):
        self.c, self.spec, self.real, self.per_token, self.cache = c, spec, real, per_token, cache
        self.rows, self.extra, self.alloc, self.label = rows, extra, alloc, label   # per round: its LogRow, its EXTRA
        self.acceptance, self.rng = acceptance, rng
        self.current = None   # the request in flight: (its real row, accepted, eq (3)'s sum)

    def feed(self):
        """As ``twin.ModelledRounds.feed``, each round opened by the client's measured gap before it."""
        c, spec, alloc, budget, last = self.c, self.spec, self.alloc, self.spec.max_new_tokens, len(self.real) - 1
        made, prompt = 0, -1
        for k, rr in enumerate(self.real.itertuples(index=False)):
            yield float(rr.gap)
            if (rr.n_cached == 0 and self.cache) or prompt < 0:
                made, prompt = 0, prompt + 1              # a cold session: the client's next prompt
            s_real = int(rr.S)
            s = max(0, min(int(alloc.get(c, s_real)), budget - made - 1)) if spec.draft_rule == "server" else s_real
            if self.acceptance is not None:               # the outcome drawn (twin.outcome), not the real run's
                domain = spec.domains[(prompt // spec.prompts) % len(spec.domains)]
                s, drawn, drawn_aps = outcome(self.acceptance, self.rng, spec, domain, prompt % spec.prompts, made,
                                              s if spec.draft_rule != "fixed" else spec.gamma, budget - made)
            td = max(0.0, float(rr.t_draft) + self.per_token * (s - s_real))
            now = yield td + float(rr.up)
            p = Pending(client=c, session=f"{c}-{k}", round=int(rr.round), arrival=now, n_draft=s,
                        n_new=int(rr.n_new) + s - s_real, n_cached=int(rr.n_cached), slo_class=spec.slo_class,
                        payload_bytes=int(rr.bytes_up))
            if spec.slo_class is not None:   # the real server's eq (6): network time = twice the uplink
                a_c = spec.alpha if spec.alpha is not None else 1.0
                p.deadline = p.arrival + slo.budget(a_c, s, spec.slo_class, td, 2 * float(rr.up))
                p.expected_tokens = slo.expected_tokens(a_c, s)
            if self.acceptance is not None:
                acc, aps = drawn, drawn_aps
                tokens = max(min(acc + 1, budget - made), 1)
            else:
                acc = min(int(rr.accepted), s)
                aps = float(rr.accept_prob_sum) * (s / s_real if s_real else 0.0) if s != s_real else float(rr.accept_prob_sum)
                tokens = max(int(rr.tokens) - (int(rr.accepted) - acc), 1)
            self.current = (rr, acc, aps)
            (b, start, end, tv, receive), t_round = yield p
            self.rows.append(LogRow(
                system="replay", policy=self.label, batch=b, round=p.round, client=c, S=s, accepted=acc, tokens=tokens,
                t_draft=td, t_receive=receive, t_queue=start - p.arrival, t_verify=float(tv), t_send=float(rr.t_send),
                t_round=t_round, bytes_up=p.payload_bytes, bytes_down=rr.bytes_down, arrival=p.arrival, start=start,
                end=end, slo_class=p.slo_class, deadline=p.deadline, event=""))
            self.extra.append((rr.up, p.n_new, p.n_cached, aps, s != s_real))
            made += tokens
            if k == last:
                yield None

    def verdict(self, p: Pending, b: int, start: float, end: float, tv, first: float, last: float):
        """The real round's outcome; the value holds the server's side of the round's log row."""
        _, acc, aps = self.current
        return (b, start, end, tv, last - first), acc, aps, 0.0

    def after_reply(self) -> float:
        return float(self.current[0].down)


def replay(log: pd.DataFrame, workload: Workload, former: BatchFormer, allocator: DraftAllocator,
           verify: VerifyTimeModel, *, label: str = "", dispatch: float = 0.0, turnaround=0.0,
           seed: int = 0, rounds: dict[int, pd.DataFrame] | None = None, acceptance=None) -> pd.DataFrame:
    """The real run ``log`` replayed (module docstring); returns the per-round log (LOG_COLUMNS,
    ``system="replay"``, plus ``up``, ``n_new``, ``n_cached``, ``accept_prob_sum`` and ``mismatch``:
    the replay's S differs from the real run's). ``rounds``: ``real_rounds(log)`` with some of the
    replayed times replaced (e.g. by the stochastic twin's models of them, to measure what those models
    alone cost); default ``real_rounds(log)``. ``acceptance``: each round's outcome drawn from it (``twin.outcome``, at
    the client's prompt and position) instead of the real run's (the acceptance model's share of the stochastic
    twin's error); the real rounds' times kept."""
    turns = turnarounds(turnaround)
    for name, v in (("dispatch", np.atleast_1d(dispatch)), ("turnaround", turns)):
        if not (len(v) and np.isfinite(v).all() and (v >= 0).all()):
            raise ValueError(f"{name}: must be finite numbers >= 0 s, got {v!r}")
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    rounds = real_rounds(log) if rounds is None else rounds
    specs = workload.clients
    if set(rounds) - set(range(len(specs))):
        raise ValueError(f"log: clients {sorted(set(rounds) - set(range(len(specs))))} are not in the workload "
                         f"({len(specs)} clients)")
    sim, out, extra = Simulation(allocator, len(specs)), [], []
    clients = {}
    for c in sorted(rounds):
        d = rounds[c][rounds[c]["S"] > 0]
        per_token = float((d["t_draft"] / d["S"]).median()) if len(d) else 0.0   # seconds per drafted token
        clients[c] = LoggedRounds(c, specs[c], rounds[c], per_token, workload.cache, out, extra, sim.alloc, label,
                                  acceptance, np.random.default_rng(np.random.SeedSequence([seed, c, 41])))
    # the real server opens its queue once every client said Hello: here when the last client started drafting
    barrier = max(float(r["gap"].iloc[0]) for r in rounds.values())
    server = Server(sim, former, allocator, verify, barrier=barrier, dispatch=dispatch, turnaround=turns, rng=rng)
    sim.run(server, clients)
    if sim.queue:
        raise RuntimeError(f"replay: {len(sim.queue)} requests were never verified (the former {former!r} left them)")
    df = pd.concat([frame(out), pd.DataFrame(extra, columns=list(EXTRA))], axis=1)
    return df.sort_values(["client", "round"]).reset_index(drop=True)


def mismatches(replayed: pd.DataFrame) -> tuple[int, int]:
    """(rounds whose S differs from the real run's, rounds replayed)."""
    return int(replayed["mismatch"].sum()), len(replayed)
