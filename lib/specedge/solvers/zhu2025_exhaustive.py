"""Beyond zhu2025: how far is Algorithm 1 from the best batching?

The paper calls Algorithm 1 optimal, but its recurrence keeps one prefix solution per prefix length,
chosen by total latency (eq 30), while the future depends on that prefix's whole vector of stage
completion times (eqs 31-32). Here the same objective (inference latency with every O_k = O_max,
the memory constraint 24b enforced) is minimised exhaustively:

- :func:`best_contiguous`: every partition of the sorted task list into consecutive batches
  (2^(K-1) of them), batches in list order: the search space Algorithm 1 itself ranges over;
- :func:`best_set_partition`: every partition of the tasks into batches (Bell(K) of them, K <= 8),
  batches ordered by ascending padded input (the DP's order) or, with ``all_orders``, in every order.

Both evaluate candidates in vectorised blocks: the pipeline recurrence of eq (20) is applied to a
stack of schedules at once. :func:`gap_study` runs both against Algorithm 1 on random instances and
:func:`gap_summary` reads the study per search.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from . import zhu2025 as z

MAX_SET_PARTITION_TASKS = 8
MAX_CONTIGUOUS_TASKS = 16
GAP_ROUNDING_PCT = 1e-9      # relative gaps below this are floating-point rounding, reported as 0


def _steps(l: int, alpha: float, o_max: int):
    L = z.expected_tokens(alpha, l)
    return L, z.decoding_steps(o_max, L)


def best_contiguous(system: z.EdgeSystem, input_len, l: int, alpha: float, o_max: int):
    """Minimum over all consecutive-batch partitions of the sorted list; returns (latency, batches).

    Breadth-first over prefix lengths: every partial schedule of a prefix is kept with its stage
    completion vectors, so nothing is pruned (unlike eq 30, which keeps one per prefix).
    """
    I = np.asarray(input_len)
    K = I.size
    if K > MAX_CONTIGUOUS_TASKS:
        raise ValueError(f"best_contiguous enumerates 2^(K-1) partitions: K must be <= {MAX_CONTIGUOUS_TASKS}, got {K}")
    order = np.argsort(I, kind="stable")
    Is = I[order]
    L, N = _steps(l, alpha, o_max)
    # stage times of every candidate batch order[p:e] (sorted, so its padded input is Is[e-1])
    spans = [(p, e) for p in range(K) for e in range(p + 1, K + 1)]
    sizes = np.array([e - p for p, e in spans])
    i_m = np.array([Is[e - 1] for p, e in spans])
    td, tv = z.stage_times(system, i_m, sizes, l, L, N)
    fits = z.batch_memory(system.draft, i_m, o_max, sizes) <= system.memory_bytes
    index = {span: k for k, span in enumerate(spans)}
    # frontier[p] = (y0 stack, y1 stack, list of partitions) of all schedules covering order[:p]
    frontier = {0: (np.zeros((1, N)), np.zeros((1, N)), [()])}
    for p in range(K):
        if p not in frontier:
            continue
        y0, y1, parts = frontier.pop(p)
        for e in range(p + 1, K + 1):
            k = index[(p, e)]
            if not fits[k]:
                continue
            n0 = y0 + td[k]
            n1 = np.maximum(n0, y1) + tv[k]
            new_parts = [part + ((p, e),) for part in parts]
            if e in frontier:
                a0, a1, ap = frontier[e]
                frontier[e] = (np.vstack([a0, n0]), np.vstack([a1, n1]), ap + new_parts)
            else:
                frontier[e] = (n0, n1, new_parts)
    if K not in frontier:
        raise ValueError("no feasible partition: a single task exceeds the SBS memory")
    _, y1, parts = frontier[K]
    tot = y1.sum(axis=1)
    k = int(np.argmin(tot))
    return float(tot[k]), tuple(order[p:e] for p, e in parts[k])


def set_partitions(n: int):
    """All partitions of range(n), as tuples of blocks (restricted growth strings)."""
    def rec(i, blocks):
        if i == n:
            yield tuple(tuple(b) for b in blocks)
            return
        for b in blocks:
            b.append(i)
            yield from rec(i + 1, blocks)
            b.pop()
        blocks.append([i])
        yield from rec(i + 1, blocks)
        blocks.pop()
    yield from rec(0, [])


def best_set_partition(system: z.EdgeSystem, input_len, l: int, alpha: float, o_max: int,
                       all_orders: bool = False, block: int = 2048):
    """Minimum over every partition of the tasks into batches; returns (latency, batches).

    Batches run in ascending order of padded input (Algorithm 1's order), or in every order when
    ``all_orders`` (K <= 6 keeps that under 5,000 schedules).
    """
    I = np.asarray(input_len)
    K = I.size
    if K > MAX_SET_PARTITION_TASKS:
        raise ValueError(f"best_set_partition enumerates Bell(K) partitions: K must be <= "
                         f"{MAX_SET_PARTITION_TASKS}, got {K}")
    L, N = _steps(l, alpha, o_max)
    # stage times of every non-empty subset (bit mask), plus the empty batch (mask 0, zero time)
    masks = np.arange(1 << K)
    members = [[k for k in range(K) if m >> k & 1] for m in masks]
    sizes = np.array([len(mb) for mb in members])
    i_m = np.array([I[mb].max() if mb else 1 for mb in members])
    td, tv = z.stage_times(system, i_m, np.maximum(sizes, 1), l, L, N)
    td[0] = 0.0
    tv[0] = 0.0
    fits = z.batch_memory(system.draft, i_m, o_max, sizes) <= system.memory_bytes

    def schedules():
        for part in set_partitions(K):
            ms = [sum(1 << k for k in b) for b in part]
            if not all(fits[m] for m in ms):
                continue
            if all_orders:
                yield from itertools.permutations(ms)
            else:
                yield tuple(sorted(ms, key=lambda m: (i_m[m], min(members[m]))))

    best, best_sched = np.inf, None
    it = schedules()
    while True:
        chunk = list(itertools.islice(it, block))
        if not chunk:
            break
        width = max(len(s) for s in chunk)
        seq = np.array([s + (0,) * (width - len(s)) for s in chunk])      # pad with the empty batch
        y0 = np.zeros((len(chunk), N))
        y1 = np.zeros((len(chunk), N))
        for pos in range(width):                                          # eq (20), in place
            y0 += td[seq[:, pos]]
            np.maximum(y0, y1, out=y1)
            y1 += tv[seq[:, pos]]
        tot = y1.sum(axis=1)
        k = int(np.argmin(tot))
        if tot[k] < best:
            best, best_sched = float(tot[k]), chunk[k]
    if best_sched is None:
        raise ValueError("no feasible partition: a single task exceeds the SBS memory")
    return best, tuple(np.array(members[m]) for m in best_sched)


SEARCHES = {
    # label: (search, number of tasks, all batch orders?)
    "contiguous, K=12": ("contiguous", 12, False),
    "set partitions, K=8": ("set", 8, False),
    "set partitions in any order, K=6": ("set", 6, True),
}


def _gap_pct(dp_s: float, best_s: float) -> float:
    """Algorithm 1's latency above the exhaustive optimum in percent; 0 below ``GAP_ROUNDING_PCT`` (the same
    schedule, summed in another order)."""
    gap = 100.0 * (dp_s / best_s - 1.0)
    return 0.0 if abs(gap) < GAP_ROUNDING_PCT else gap


def optimality_gap(system: z.EdgeSystem, input_len, l: int, alpha: float, o_max: int,
                   search: str = "contiguous", all_orders: bool = False) -> dict:
    """Algorithm 1's objective, the exhaustive optimum and the relative gap (>= 0) for one instance."""
    dp = z.dp_batching(system, input_len, l, alpha, o_max).plan
    if search == "contiguous":
        best, batches = best_contiguous(system, input_len, l, alpha, o_max)
    elif search == "set":
        best, batches = best_set_partition(system, input_len, l, alpha, o_max, all_orders)
    else:
        raise ValueError(f"search must be 'contiguous' or 'set', got {search!r}")
    return dict(dp_s=dp.objective, exhaustive_s=best, gap_pct=_gap_pct(dp.objective, best), dp_batches=len(dp.batches),
                best_batches=len(batches))


def optimality_gap_over_l(system: z.EdgeSystem, input_len, alpha: float, o_max: int, l_max: int,
                          search: str = "contiguous", all_orders: bool = False) -> dict:
    """Algorithm 1 as the paper uses it, inside the enumeration over l = 1..l_max (problem P3, eq 33;
    :func:`zhu2025.proposed_plan`), against the exhaustive optimum over batchings *and* l."""
    dp = z.proposed_plan(system, input_len, alpha, o_max, l_max)
    if search not in ("contiguous", "set"):
        raise ValueError(f"search must be 'contiguous' or 'set', got {search!r}")
    best, best_l, batches = np.inf, 0, ()
    for l in range(1, z.check_l(l_max, "l_max") + 1):
        if search == "contiguous":
            v, b = best_contiguous(system, input_len, l, alpha, o_max)
        else:
            v, b = best_set_partition(system, input_len, l, alpha, o_max, all_orders)
        if v < best:
            best, best_l, batches = v, l, b
    return dict(dp_s=dp.objective, exhaustive_s=best, gap_pct=_gap_pct(dp.objective, best), dp_batches=len(dp.batches),
                best_batches=len(batches), dp_l=dp.l, best_l=best_l)


def gap_study(setting, instances: int, seed: int, o_max: int | None = None, progress: bool = True,
              l_max: int | None = None, searches=None, memory: str = "drawn", n_jobs: int | None = None):
    """Algorithm 1 against exhaustive search on random small instances, for each of ``SEARCHES``.

    Each instance draws a Table I pair, alpha ~ U(0.5, 0.9), l ~ U{1..5}, a workload of Section IV
    and an SBS memory that admits between 1 and K tasks of the longest possible input per batch
    (with K this small the paper's 16 GB never binds, and without a binding memory constraint one
    or two batches are best and the question is moot). Returns one row per instance and search.

    With ``l_max`` the instance has no drawn l: Algorithm 1 runs inside the search over
    l = 1..l_max, as the paper uses it, against the exhaustive optimum over batchings and l
    (:func:`optimality_gap_over_l`). ``searches`` picks labels of ``SEARCHES`` (default all).
    ``memory="paper"`` keeps the setting's SBS memory (Table II: 16 GB) instead of the drawn one.
    The instances run on ``n_jobs`` worker processes (``sweep.local``; the same rows whatever ``n_jobs``).
    """
    from .. import sweep
    o_max = setting.max_output_len if o_max is None else o_max
    searches = list(SEARCHES) if searches is None else list(searches)
    for label in searches:
        if label not in SEARCHES:
            raise ValueError(f"searches must be among {list(SEARCHES)}, got {label!r}")
    if memory not in ("drawn", "paper"):
        raise ValueError(f"memory must be 'drawn' or 'paper', got {memory!r}")
    configs = [dict(setting=setting, search=label, instance=r, seed=seed, o_max=o_max, l_max=l_max, memory=memory)
               for label in searches for r in range(instances)]
    return sweep.local(_gap_instance, configs, n_jobs=n_jobs, progress=progress)


def gap_summary(gaps: pd.DataFrame) -> pd.DataFrame:
    """Per search of :func:`gap_study`: instances, the share where Algorithm 1 is suboptimal (a gap above
    ``GAP_ROUNDING_PCT``), and the median, mean and max gap (%)."""
    return gaps.groupby("search", sort=False).gap_pct.agg(
        instances="count", share_suboptimal=lambda g: float((g > GAP_ROUNDING_PCT).mean()), median="median", mean="mean",
        max="max")


def _gap_instance(c: dict) -> dict:
    """One row of :func:`gap_study`: instance ``c["instance"]`` of search ``c["search"]`` (a ``sweep.run`` point)."""
    from .zhu2025_schemes import sample_workload
    setting, label, r, seed, o_max, l_max = c["setting"], c["search"], c["instance"], c["seed"], c["o_max"], c["l_max"]
    search, K, all_orders = SEARCHES[label]
    rng = np.random.default_rng([seed, 29, r, K])
    pair = z.PAIRS[int(rng.integers(len(z.PAIRS)))]
    alpha = float(rng.uniform(0.5, 0.9))
    l = int(rng.integers(1, 6))
    fit = int(rng.integers(1, K + 1))
    draft = z.TABLE_I[pair[0]]
    mem = z.param_bytes(draft) + float(z.kv_bytes(draft, setting.max_input_len, o_max)) * (fit + 0.5)
    if c["memory"] == "paper":
        mem = setting.memory_bytes
        fit = int(min(K, z.max_batch_size(draft, setting.max_input_len, o_max, mem)))
    system = setting.system(*pair, memory_bytes=mem)
    work = sample_workload(seed, 10_000 + r, K, setting.max_input_len, o_max, setting.cell_radius_m)
    if l_max is None:
        g = optimality_gap(system, work.input_len, l, alpha, o_max, search, all_orders)
    else:
        l = None     # searched, not drawn (the draw above keeps the other draws identical)
        g = optimality_gap_over_l(system, work.input_len, alpha, o_max, l_max, search, all_orders)
    return dict(search=label, instance=r, pair=f"({pair[0]}, {pair[1]})", alpha=alpha, l=l,
                tasks=K, memory_tasks=fit, memory_gb=mem / 1e9, **g)
