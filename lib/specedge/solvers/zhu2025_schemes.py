"""zhu2025 Section IV: the workload, the channel, the baselines, and one run of every scheme.

Workload (Section IV): K users uniform over a disk of radius 400 m around the SBS; channel gain
``g_k = g0 * rho_k * d_k**-2`` with Rayleigh fading ``rho_k ~ Exp(1)``; input and expected output
lengths uniform on ``[1, I_max]`` and ``[1, O_max]``. Each draw is built from uniforms by inverse
transforms, so a sweep over K, I_max or O_max reuses the same random numbers for every point
(common random numbers: curves differ because of the swept parameter, not because of the draw).

Schemes (Section IV-A and IV-B), all with the closed-form bandwidth split of eq (27) unless told:

- ``Proposed``: Algorithm 1 inside the speculation-length enumeration (P3);
- ``SD w/o Pipeline``: the proposed plan, each batch drafted then verified before the next starts;
- ``No Batching``: one task per batch (sorted by input length), pipelined, l enumerated;
- ``FSL``: Algorithm 1 with the fixed speculation length l = 7;
- ``Static batching``: batches of a small fixed size in arrival order, l enumerated;
- ``Max Batching``: the largest batch size that fits the SBS memory for the arriving tasks;
- ``Heuristic Batching``: batch size found by the ADS heuristic, run with the proposed mechanism;
- ``ADS``: autoregressive decoding by the verify model at the MBS, heuristic batch size started at
  two batches (``ADS_READINGS`` lists the readings of that sentence).

Planning uses O_k = O_max for every task (the paper's conservative choice in Section III-B, which
also keeps constraint 24b safe for any actual output); the reported latency replays the chosen
plan with each task's own O_k (batches leave the pipeline after ``ceil(O_m / L)`` steps, eq 8).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import zhu2025 as z

PROPOSED, NO_PIPELINE, NO_BATCHING, FSL = "Proposed", "SD w/o Pipeline", "No Batching", "FSL"
STATIC, MAX_BATCHING, HEURISTIC, ADS = "Static batching", "Max Batching", "Heuristic Batching", "ADS"
SCHEMES = (PROPOSED, NO_PIPELINE, FSL, NO_BATCHING, STATIC, MAX_BATCHING, HEURISTIC, ADS)

FSL_LENGTH = 7              # Section IV-A: "a fixed speculation length of l = 7"
STATIC_BATCH_SIZE = 4       # not given by the paper ("a small fixed batch size"): our choice
HEURISTIC_START = 2         # the heuristic of [34] "begins with two" and grows the batch size by one
# ADS's batch size: Section IV-A says the heuristic "begins with two batches, progressively increases the
# batch size ... and selects the optimal batch configuration when latency performance starts to degrade".
ADS_READINGS = ("two batches", "two tasks per batch", "one batch")
ADS_READING = "two batches"   # the literal text; the only reading whose ADS curves stay inside Fig 6's axes


# ----------------------------------------------------------------------------------------------
# Workload and channel.

@dataclass(frozen=True)
class Workload:
    """K tasks: input length I_k, expected output length O_k, user distance d_k and fading rho_k."""
    input_len: np.ndarray
    output_len: np.ndarray
    distance_m: np.ndarray
    fading: np.ndarray

    @property
    def size(self) -> int:
        return int(self.input_len.size)

    def gains(self, path_loss: float) -> np.ndarray:
        """``g_k = g0 rho_k d_k^-2`` (Section IV)."""
        return path_loss * self.fading / self.distance_m ** 2


def sample_workload(seed: int, rep: int, num_users: int, max_input_len: int, max_output_len: int,
                    cell_radius_m: float = 400.0) -> Workload:
    """One random draw of Section IV's workload; ``(seed, rep)`` names the draw.

    Every quantity comes from its own stream of uniforms, so the first K tasks of a draw of K' > K
    users are the draw of K users, and changing I_max or O_max rescales the same uniforms.
    """
    for key, v in (("num_users", num_users), ("max_input_len", max_input_len), ("max_output_len", max_output_len)):
        if not (isinstance(v, (int, np.integer)) and v >= 1):
            raise ValueError(f"{key} must be an integer >= 1, got {v!r}")
    if not cell_radius_m > 0:
        raise ValueError(f"cell_radius_m must be > 0, got {cell_radius_m!r}")
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence([seed, rep]).spawn(4)]
    u_d, u_rho, u_in, u_out = (1.0 - r.random(num_users) for r in streams)     # uniforms on (0, 1]
    return Workload(
        input_len=np.minimum(np.ceil(u_in * max_input_len), max_input_len).astype(np.int64),
        output_len=np.minimum(np.ceil(u_out * max_output_len), max_output_len).astype(np.int64),
        distance_m=cell_radius_m * np.sqrt(u_d),            # uniform over the disk's area
        fading=-np.log(u_rho),                              # Exp(1) by inversion
    )


def redraw_channel(work: Workload, radius_m: float, seed: int, rep: int, draw: int) -> Workload:
    """The tasks of ``work`` (same lengths) with the user positions and fading of channel draw ``draw`` of task
    draw ``(seed, rep)``, drawn as :func:`sample_workload` draws them (draw 0: the workload's own channel)."""
    if draw == 0:
        return work
    rng = np.random.default_rng([seed, rep, 97, draw])
    u_d, u_rho = 1.0 - rng.random(work.size), 1.0 - rng.random(work.size)
    return Workload(work.input_len, work.output_len, radius_m * np.sqrt(u_d), -np.log(u_rho))


def comm_latency(system: z.EdgeSystem, work: Workload, allocation: str = "optimal",
                 bandwidth_hz: float | None = None) -> float:
    """Eqs (15)-(16) for a workload, with the bandwidth split of eq (27) or an equal split."""
    bw = system.bandwidth_hz if bandwidth_hz is None else bandwidth_hz
    eff = z.spectral_efficiency(system, work.gains(system.path_loss))
    return z.comm_latency(system.bits_per_token * work.input_len, bw, eff, allocation)


# ----------------------------------------------------------------------------------------------
# Baseline planners.

def chunks(num_tasks: int, size: int, order=None) -> tuple:
    """Consecutive batches of ``size`` tasks (the last one shorter) in ``order`` (arrival order by default)."""
    if not (isinstance(size, (int, np.integer)) and size >= 1):
        raise ValueError(f"batch size must be an integer >= 1, got {size!r}")
    order = np.arange(num_tasks) if order is None else np.asarray(order)
    return tuple(order[s:s + size] for s in range(0, num_tasks, size))


def fixed_batches_plan(system: z.EdgeSystem, batches, input_len, alpha: float, o_max: int, l_max: int,
                       pipelined: bool = True) -> z.Plan:
    """A plan with given batches and the speculation length chosen by enumeration (eq 33)."""
    def planner(l):
        plan = z.Plan(tuple(batches), l, pipelined)
        return z.Plan(plan.batches, l, pipelined, z.plan_objective(system, plan, input_len, alpha, o_max))
    return z.optimise_speculation(planner, l_max)


def feasible_chunk_size(system: z.EdgeSystem, input_len, size: int, o_max: int) -> bool:
    """Do all arrival-order batches of ``size`` tasks fit the SBS memory (24b) with O_m = O_max?"""
    I = np.asarray(input_len)
    plan = z.Plan(chunks(I.size, size), 1)
    return z.memory_ok(system, plan, I, o_max)


def max_batching_size(system: z.EdgeSystem, input_len, o_max: int) -> int:
    """Max batching [11]: the largest size that fits memory for the arriving tasks (worst I_k, O_max)."""
    I = np.asarray(input_len)
    return int(min(I.size, z.max_batch_size(system.draft, I.max(), o_max, system.memory_bytes)))


def heuristic_batch_size(latency_of, limit: int, start: int = HEURISTIC_START) -> int:
    """The batch-size heuristic of [34] as Section IV-A describes it.

    Start at ``start`` tasks per batch and grow the batch size by one while the predicted latency
    falls; stop at the first size whose latency is higher than the previous one (or at ``limit``).
    """
    b = max(1, min(start, limit))
    cur = latency_of(b)
    while b < limit:
        nxt = latency_of(b + 1)
        if nxt > cur:
            break
        b, cur = b + 1, nxt
    return b


def ads_batch_size(latency_of, num_tasks: int, reading: str = ADS_READING) -> int:
    """ADS's batch size under one reading of Section IV-A (``ADS_READINGS``): the heuristic started at
    two batches (``ceil(K/2)`` tasks each), or at two tasks per batch, growing the size by one until the
    latency rises; or one batch of all K tasks (MBS memory is not constrained)."""
    if reading == "two batches":
        return heuristic_batch_size(latency_of, num_tasks, start=math.ceil(num_tasks / 2))
    if reading == "two tasks per batch":
        return heuristic_batch_size(latency_of, num_tasks, start=HEURISTIC_START)
    if reading == "one batch":
        return num_tasks
    raise ValueError(f"ADS reading must be one of {ADS_READINGS}, got {reading!r}")


def memory_limit(system: z.EdgeSystem, input_len, o_max: int) -> int:
    """Largest arrival-order chunk size for which every chunk fits memory (searched upwards)."""
    I = np.asarray(input_len)
    b = 1
    while b < I.size and feasible_chunk_size(system, I, b + 1, o_max):
        b += 1
    return b


def plan_scheme(scheme: str, system: z.EdgeSystem, input_len, alpha: float, o_max: int, l_max: int = 10,
                proposed: z.Plan | None = None, ads_reading: str = ADS_READING) -> z.Plan:
    """The plan a scheme of Section IV makes for tasks with these input lengths (O_k = O_max)."""
    I = np.asarray(input_len)
    K = I.size
    if scheme == PROPOSED:
        return proposed or z.proposed_plan(system, I, alpha, o_max, l_max)
    if scheme == NO_PIPELINE:
        p = proposed or z.proposed_plan(system, I, alpha, o_max, l_max)
        plan = z.Plan(p.batches, p.l, pipelined=False)
        return z.Plan(plan.batches, plan.l, False, z.plan_objective(system, plan, I, alpha, o_max))
    if scheme == FSL:
        return z.dp_batching(system, I, FSL_LENGTH, alpha, o_max).plan
    if scheme == NO_BATCHING:
        return fixed_batches_plan(system, chunks(K, 1, np.argsort(I, kind="stable")), I, alpha, o_max, l_max)
    if scheme == STATIC:
        size = STATIC_BATCH_SIZE
        if not feasible_chunk_size(system, I, size, o_max):
            raise ValueError(f"static batches of {size} tasks do not fit the SBS memory")
        return fixed_batches_plan(system, chunks(K, size), I, alpha, o_max, l_max)
    if scheme == MAX_BATCHING:
        return fixed_batches_plan(system, chunks(K, max_batching_size(system, I, o_max)), I, alpha, o_max, l_max)
    if scheme == HEURISTIC:
        def latency_of(b):
            return fixed_batches_plan(system, chunks(K, b), I, alpha, o_max, l_max).objective
        b = heuristic_batch_size(latency_of, memory_limit(system, I, o_max))
        return fixed_batches_plan(system, chunks(K, b), I, alpha, o_max, l_max)
    if scheme == ADS:
        def latency_of(b):
            return z.ad_latency(system, chunks(K, b), I, o_max)
        b = ads_batch_size(latency_of, K, ads_reading)
        batches = chunks(K, b)
        return z.Plan(batches, 0, False, latency_of(b))
    raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")


def run_schemes(system: z.EdgeSystem, work: Workload, alpha: float, o_max: int, l_max: int = 10,
                schemes=SCHEMES, allocations=("optimal",), bandwidths_hz=None) -> list[dict]:
    """Plan and evaluate every scheme on one workload draw; one row per scheme and bandwidth setting.

    Rows hold the inference latency (eq 22, actual O_k), the upload latency (eq 16) and their sum
    (eq 23), with the chosen speculation length and batch count.
    """
    z.check_alpha(alpha)
    z.check_l(l_max, "l_max")
    unknown = set(schemes) - set(SCHEMES)
    if unknown:
        raise ValueError(f"unknown schemes {sorted(unknown)}; choose from {SCHEMES}")
    I, O = work.input_len, work.output_len
    bandwidths = [system.bandwidth_hz] if bandwidths_hz is None else list(bandwidths_hz)
    proposed = z.proposed_plan(system, I, alpha, o_max, l_max) if {PROPOSED, NO_PIPELINE} & set(schemes) else None
    rows = []
    for scheme in schemes:
        plan = plan_scheme(scheme, system, I, alpha, o_max, l_max, proposed)
        t_inf = z.inference_latency(system, plan, I, O, alpha)
        for bw in bandwidths:
            for alloc in allocations:
                t_com = comm_latency(system, work, alloc, bw)
                rows.append(dict(scheme=scheme, allocation=alloc, bandwidth_mhz=bw / 1e6, l=plan.l,
                                 batches=len(plan.batches), inference_s=t_inf, comm_s=t_com,
                                 latency_s=t_inf + t_com))
    return rows
