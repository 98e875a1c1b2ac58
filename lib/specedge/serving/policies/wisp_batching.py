"""WISP's SLO-aware batch former (li2026 Section 4.3, Algorithm 1) and its EDF-only ablation.

At a dispatch epoch t_k, for every queued request i: utility U_i = g_i / v_i (eq 16; g_i the expected
verified tokens of eq 5, v_i its verification time alone by the estimator), latest start time
LST_i = d_i - v_i - delta (eq 17). Critical requests (t_k >= LST_i) are admitted first in EDF order,
then the others by decreasing U_i; each tentative batch B' must satisfy the memory budget (eq 14,
sum m_j <= M) and the deadline constraint (eq 15, t_k + T_hat(B') <= min_{j in B'} d_j), and the batch
**stops growing at the first request that violates either** (no skipping ahead).

Feasibility is checked incrementally: eq (19) is additive in its three features, so the batch keeps
running sums of (N_linear, N_interactions, N_cached), its memory and its earliest deadline; each
FEASIBLEADD is O(1) and a decision is O(n log n) for n queued requests (one sort).

One line the paper leaves open (``docs/wisp-readings.md`` quotes it and every other reading): a request
whose deadline has already become unreachable (t_k + v_i > d_i, it cannot finish in time even alone: *late*)
can never pass eq (15), so Algorithm 1 as printed stops at it — it is critical and has the earliest deadline —
and, with it first, dispatches nothing again (the server idles with a non-empty queue). ``reading`` names how
a late request is treated, each a registered former (``READINGS``):

- ``admit`` (``wisp``, the default): a late request is admitted at its EDF place under the memory constraint
  only, its deadline binding no batch; every other line as printed;
- ``stop`` (``wisp-stop``): Algorithm 1 as printed (FEASIBLEADD checks eq (15) for a late request too);
- ``drop`` (``wisp-drop``): a late request is left out of every batch that can hold a request still on time
  (it neither joins nor stops it); the serving layer cannot cancel a round (its device would wait for ever),
  so late requests are verified, in EDF order under the memory constraint, only when the batch of the
  on-time ones is empty;
- ``continue`` (``wisp-continue``): ``admit``, and the utility phase runs even after the critical phase
  stopped at a violation (line 25's ``if not stop`` dropped).

A request whose memory alone exceeds M (eq 14) fails FEASIBLEADD in every reading: the batch stops there and
it stays pending (lines 21-22, 34-35; ``drop`` leaves it out instead). Requests without an SLO (no deadline)
are never critical.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Sequence

import numpy as np

from .batching import FORMERS
from ..timemodels.estimator import Estimator
from ..interfaces import Pending
from ..timegrid import ns, ns_le

READINGS = ("admit", "stop", "drop", "continue")   # how Algorithm 1 treats a late request (module docstring)
SHORT = 128   # queue length up to which a decision runs on plain floats; numpy arrays beyond (their fixed
              # cost per call outweighs plain floats up to ~130 requests on the AMD EPYC of figures/bench)
_FIELDS = attrgetter("n_new", "n_cached", "arrival", "client", "deadline", "expected_tokens", "memory")


def _expected(p: Pending) -> float:
    return float(p.expected_tokens) if p.expected_tokens is not None else float(p.n_draft)


@dataclass
class WISPBatcher:
    """Algorithm 1. ``estimator``: eq (19) (an ``Estimator``); ``delta``: guard time (s);
    ``memory_budget``: M (bytes, as ``Pending.memory``); ``max_batch``: optional cap on requests."""
    estimator: Estimator
    delta: float = 0.0
    memory_budget: float = math.inf
    max_batch: int | None = None
    label: str = "WISP"
    density: bool = True          # False: the EDF-only ablation (every request in deadline order)
    reading: str = "admit"        # how a late request is treated (``READINGS``, module docstring)

    def __post_init__(self):
        if not isinstance(self.estimator, Estimator):
            raise ValueError(f"estimator: expected a serving.timemodels.estimator.Estimator, got {type(self.estimator).__name__}")
        if not self.delta >= 0:
            raise ValueError(f"delta: must be >= 0 s, got {self.delta!r}")
        if not self.memory_budget > 0:
            raise ValueError(f"memory_budget: must be > 0, got {self.memory_budget!r}")
        if self.max_batch is not None and (not isinstance(self.max_batch, int) or self.max_batch < 1):
            raise ValueError(f"max_batch: must be a positive int or None, got {self.max_batch!r}")
        if self.reading not in READINGS:
            raise ValueError(f"reading: expected one of {READINGS}, got {self.reading!r}")

    def _ranked_short(self, queue: Sequence[Pending], now: float) -> list[tuple]:
        """The queue in admission order, one tuple per request: (not critical, sort key, arrival, client,
        index into ``queue``, late, L_new, L_cached, deadline, memory, the request). Critical requests
        come first by (deadline, arrival, client), then the others by (-U_i, arrival, client), or by
        deadline in the EDF-only ablation; the sort never reads past the index (no two are equal up to
        it). Plain Python numbers, for queues up to ``SHORT`` requests (numpy's fixed cost per call
        outweighs its speed there)."""
        est, delta, density = self.estimator, self.delta, self.density
        a, b_compute, b_read, c = est.a, est.b_compute, est.b_read, est.c
        ranked = []
        for i, p in enumerate(queue):
            new, cached, d = p.n_new, p.n_cached, p.deadline
            v = a * new + b_compute * ((new + cached) * new) + b_read * cached + c   # v_hat_i alone, eq (19)
            v = v if v > 0.0 else 0.0
            if d is None:                                                    # eq (17): never critical
                d, crit, late = math.inf, False, False
            else:
                crit = ns_le(d - v - delta, now)
                late = crit and not ns_le(now + v, d)
            if crit or not density:
                key = d
            else:                                                            # eq (16), decreasing
                g = p.expected_tokens
                g = float(g) if g is not None else float(p.n_draft)          # _expected
                key = -g / (v if v > 1e-12 else 1e-12)
            ranked.append((not crit, key, p.arrival, p.client, i, late, new, cached, d, p.memory, p))
        if len(ranked) > 1:
            ranked.sort()
        return ranked

    def order(self, queue: Sequence[Pending], now: float) -> tuple[list[tuple[Pending, bool]], int]:
        """The candidates in admission order, each with its 'late' flag, and how many are critical."""
        if not queue:
            return [], 0
        if len(queue) > SHORT:
            idx, late, crit, *_ = self._ranked_long(queue, now)
            return [(queue[i], bool(late[i])) for i in idx], int(crit.sum())
        ranked = self._ranked_short(queue, now)
        return [(r[-1], r[5]) for r in ranked], sum(not r[0] for r in ranked)

    def form(self, queue: Sequence[Pending], now: float, active: frozenset[int]) -> list[Pending]:
        """Algorithm 1, lines 17-33: the longest prefix of the admission order whose every tentative
        batch passes FEASIBLEADD (lines 1-6) — running sums of eq (19)'s features and of the memory,
        the earliest binding deadline (late requests and those without an SLO bind none)."""
        if not queue:
            return []
        if self.reading != "admit":
            return self._form_phases(queue, now)
        if len(queue) > SHORT:
            return self._form_long(queue, now)
        if len(queue) == 1:
            return self._form_one(queue[0], now)
        ranked = self._ranked_short(queue, now)
        if self.max_batch is not None:
            del ranked[self.max_batch:]
        est, budget = self.estimator, self.memory_budget
        a, b_compute, b_read, c = est.a, est.b_compute, est.b_read, est.c
        used = lin = inter = cached_sum = 0.0
        d_min = math.inf
        batch = []
        for r in ranked:
            late, new, cached, d, memory, p = r[5:]
            used += memory
            lin += new
            inter += (new + cached) * new
            cached_sum += cached
            if not late and d < d_min:
                d_min = d
            t_hat = a * lin + b_compute * inter + b_read * cached_sum + c   # est.time, eq (19), floored at 0
            t_hat = t_hat if t_hat > 0.0 else 0.0
            if not (used <= budget and ns_le(now + t_hat, d_min)):          # eqs (14) and (15)
                break                                                       # stop at the first violation
            batch.append(p)
        return batch

    def _form_one(self, p: Pending, now: float) -> list[Pending]:
        """``form`` of a queue of one request (every other decision at low load): its tentative batch
        is itself, whose eq (19) is its v_hat_i alone, so it is admitted iff it fits the memory (eq 14)
        and, unless late (eq 17's critical request that cannot finish in time), meets its deadline
        (eq 15)."""
        new, cached, d = p.n_new, p.n_cached, p.deadline
        v = self.estimator.time(new, (new + cached) * new, cached)         # v_hat_i alone, eq (19)
        if d is None:
            d, late = math.inf, False
        else:
            late = ns_le(d - v - self.delta, now) and not ns_le(now + v, d)
        if p.memory <= self.memory_budget and (late or ns_le(now + v, d)):
            return [p]
        return []

    def _form_phases(self, queue: Sequence[Pending], now: float) -> list[Pending]:
        """Algorithm 1's two phases written as printed (lines 17-33), for every ``reading``: the critical
        requests in EDF order, then — unless the critical phase stopped (line 25), or always under
        ``continue`` — the others by decreasing U_i, each admitted while FEASIBLEADD holds. Under
        ``admit``/``continue`` a late request binds no deadline; under ``stop`` it does (and fails);
        under ``drop`` it is skipped, as is a request over the memory budget alone, and the late ones
        are verified only when no on-time request was admitted. Plain Python over the ranked queue (the
        ``admit`` reading's fast paths decide alike: tested)."""
        ranked = self._ranked_short(queue, now)
        est, budget, cap = self.estimator, self.memory_budget, self.max_batch or math.inf
        state = [0.0, 0.0, 0.0, 0.0, math.inf]     # memory, N_linear, N_interactions, N_cached, D_min
        batch: list[Pending] = []

        def feasible_add(r, binds: bool) -> bool:  # FEASIBLEADD (lines 1-6), and B <- B' when it holds
            new, cached, d, memory = r[6:10]
            t = [state[0] + memory, state[1] + new, state[2] + (new + cached) * new, state[3] + cached,
                 min(state[4], d) if binds else state[4]]
            t_hat = max(est.a * t[1] + est.b_compute * t[2] + est.b_read * t[3] + est.c, 0.0)   # eq (19)
            if not (t[0] <= budget and ns_le(now + t_hat, t[4])):                               # eqs (14), (15)
                return False
            state[:] = t
            batch.append(r[-1])
            return True

        def phase(rows, skip_late: bool) -> bool:   # True: it stopped at a violation
            for r in rows:
                if len(batch) >= cap:
                    return True
                late = r[5]
                if skip_late and (late or r[9] > budget):
                    continue
                if not feasible_add(r, binds=not late or self.reading == "stop"):
                    return True
            return False

        drop = self.reading == "drop"
        crit, non = [r for r in ranked if not r[0]], [r for r in ranked if r[0]]
        if not phase(crit, drop) or self.reading == "continue":
            phase(non, drop)
        if drop and not batch:
            phase([r for r in crit if r[5]], False)
        return batch

    def _ranked_long(self, queue: Sequence[Pending], now: float):
        """``_ranked_short`` vectorised over a long queue (numpy arrays: the same values, the same order)."""
        n = len(queue)
        # one pass in C (numpy reads None as nan); a request without a deadline or an expected count
        # (None) takes the general rows: deadline inf, expected tokens n_draft
        x = np.fromiter(chain.from_iterable(map(_FIELDS, queue)), float, 7 * n).reshape(n, 7)
        if np.isnan(x[:, 4:6]).any():
            x = np.array([(p.n_new, p.n_cached, p.arrival, p.client, math.inf if p.deadline is None else p.deadline,
                           _expected(p), p.memory) for p in queue], float).reshape(n, 7)
        new, cached, arrival, client, d, g, memory = x.T
        v = self.estimator.time(new, (new + cached) * new, cached)          # v_hat_i, each alone
        # time comparisons in whole nanoseconds (``timegrid``): last-digit float noise decides nothing
        crit = ns(now) >= ns(d - v - self.delta)                             # eq (17); never without a deadline
        late = crit & (ns(now + v) > ns(d))
        key = np.where(crit, d, -g / np.maximum(v, 1e-12)) if self.density else d   # eq (16), decreasing
        idx = np.lexsort((client, arrival, key, ~crit))
        return idx, late, crit, new, cached, d, memory

    def _form_long(self, queue: Sequence[Pending], now: float) -> list[Pending]:
        """``form`` vectorised over a long queue (cumulative sums: the same sums, the same batch)."""
        idx, late, _, new, cached, d, memory = self._ranked_long(queue, now)
        late, new, cached, d, memory = late[idx], new[idx], cached[idx], d[idx], memory[idx]
        used = np.cumsum(memory)
        t_hat = self.estimator.time(np.cumsum(new), np.cumsum((new + cached) * new), np.cumsum(cached))
        d_min = np.minimum.accumulate(np.where(late, math.inf, d))
        ok = (used <= self.memory_budget) & (ns(now + t_hat) <= ns(d_min))  # eqs (14) and (15)
        k = len(ok) if ok.all() else int(np.argmin(ok))                     # stop at the first violation
        if self.max_batch is not None:
            k = min(k, self.max_batch)
        return [queue[i] for i in idx[:k].tolist()]


def EDFOnly(estimator: Estimator, delta: float = 0.0, memory_budget: float = math.inf,
            max_batch: int | None = None) -> WISPBatcher:
    """The ablation: Algorithm 1's feasibility checks with every request in deadline order (no value
    density)."""
    return WISPBatcher(estimator, delta, memory_budget, max_batch, label="EDF-only", density=False)


@FORMERS.register("wisp")
def _wisp(estimator, delta: float = 0.0, memory_budget: float = math.inf):
    return WISPBatcher(estimator, delta=delta, memory_budget=memory_budget)


@FORMERS.register("edf")
def _edf(estimator, delta: float = 0.0, memory_budget: float = math.inf):
    return EDFOnly(estimator, delta=delta, memory_budget=memory_budget)


def _register_reading(reading: str):
    @FORMERS.register(f"wisp-{reading}")
    def build(estimator, delta: float = 0.0, memory_budget: float = math.inf):
        return WISPBatcher(estimator, delta=delta, memory_budget=memory_budget, label=f"WISP-{reading}", reading=reading)


for _r in READINGS[1:]:        # "wisp" is the default reading, ``admit``
    _register_reading(_r)
