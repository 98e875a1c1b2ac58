"""zhu2025: pipelined speculative decoding between a small (SBS) and a macro base station (MBS).

Zhu, Chen, Zhao, Shin, Nallanathan, "Efficient LLM Inference over Heterogeneous Edge Networks with
Speculative Decoding", arXiv 2510.11331, Sections II-III. The SBS drafts with a small model, the
MBS verifies with a large one; the K tasks are split into batches that flow through a two-stage
pipeline (draft, verify) once per decoding step, and a decoding step is a barrier: step n+1 of any
batch starts after step n of every active batch (eqs 20-22).

Why one module of ~460 lines: it is the paper's model, one short function per equation, in the
paper's order; the schemes, the exhaustive reference and the experiments live in sibling modules.

This module is the paper's model, one function per equation:

- FLOPs and memory: eqs (9)-(14) (:func:`forward_flops`, :func:`draft_flops`, :func:`verify_flops`,
  :func:`param_bytes`, :func:`kv_bytes`, :func:`max_batch_size`);
- runtime ``T = c1*F*b + c2``: eqs (17)-(19) (:class:`Runtime`, :func:`stage_times`);
- pipeline latency with decoding steps as barriers: eqs (20)-(23) (:func:`pipeline_step_latency`,
  :func:`inference_latency`);
- uplink latency and the closed-form bandwidth split: eqs (15)-(16), (26)-(27);
- Algorithm 1 (dynamic programming over the sorted task list, eqs 29-32) and the speculation-length
  enumeration of problem P3 (eq 33).

The Section IV baselines and the workload live in :mod:`specedge.solvers.zhu2025_schemes`; the
exhaustive search that measures Algorithm 1's optimality gap in
:mod:`specedge.solvers.zhu2025_exhaustive`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..profiling import decoder_flops
from ..sampling import expected_tokens_per_round

# ----------------------------------------------------------------------------------------------
# Table I: the LLaMA shapes the paper simulates (layers J, hidden h1, FFN h2).


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only model as the paper's cost model sees it (Section II-A, Fig. 3)."""
    name: str
    layers: int      # J
    hidden: int      # h1
    ffn: int         # h2

    def __post_init__(self):
        for key in ("layers", "hidden", "ffn"):
            v = getattr(self, key)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"ModelSpec.{key} must be an integer >= 1, got {v!r}")


TABLE_I = {
    "LLaMA-68M": ModelSpec("LLaMA-68M", 2, 768, 3072),
    "LLaMA-1.1B": ModelSpec("LLaMA-1.1B", 22, 2048, 5632),
    "LLaMA-7B": ModelSpec("LLaMA-7B", 32, 4096, 11008),
    "LLaMA-13B": ModelSpec("LLaMA-13B", 40, 5120, 13824),
}
# The three draft-verify deployments of Section IV, in the paper's order.
PAIRS = (("LLaMA-68M", "LLaMA-7B"), ("LLaMA-1.1B", "LLaMA-7B"), ("LLaMA-1.1B", "LLaMA-13B"))

BITS_PER_VALUE = 16     # FP16 embeddings on the uplink (Section II-D)


# ----------------------------------------------------------------------------------------------
# Speculation: eqs (7) and (8).

def check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, (int, float, np.floating)) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha (acceptance rate) must lie in the open interval (0, 1), got {alpha!r}")
    return float(alpha)


def check_l(l: int, name: str = "l") -> int:
    if not (isinstance(l, (int, np.integer)) and l >= 1):
        raise ValueError(f"{name} (speculation length) must be an integer >= 1, got {l!r}")
    return int(l)


def expected_tokens(alpha: float, l: int) -> float:
    """Eq (7): mean output tokens per verification, ``L = (1 - alpha**(l+1)) / (1 - alpha)``."""
    return float(expected_tokens_per_round(check_alpha(alpha), check_l(l)))


def decoding_steps(o, L: float):
    """Eq (8): ``n = ceil(O / L)`` decoding steps to emit ``O`` tokens at ``L`` tokens per step.

    A relative tolerance keeps ``O / L`` that is an integer up to rounding (e.g. ``L = 2`` stored
    as 1.9999999999999998) from gaining a spurious extra step.
    """
    q = np.asarray(o, dtype=float) / float(L)
    n = np.ceil(q - 1e-9 * np.maximum(q, 1.0)).astype(np.int64)
    return n if n.ndim else int(n)


# ----------------------------------------------------------------------------------------------
# Memory and FLOPs: eqs (9)-(14).

def param_bytes(model: ModelSpec) -> float:
    """Eq (9): FP16 weights of the decoder blocks, ``J (8 h1^2 + 4 h1 h2)`` bytes."""
    h1, h2 = model.hidden, model.ffn
    return float(model.layers * (8 * h1 * h1 + 4 * h1 * h2))


def kv_bytes(model: ModelSpec, input_len, output_len, batch_size=1):
    """Eq (10): peak KV cache of a batch, ``4 J h1 (I_m + O_m)`` bytes per task times the batch size."""
    return 4.0 * model.layers * model.hidden * (np.asarray(input_len, float) + output_len) * batch_size


def batch_memory(model: ModelSpec, input_len, output_len, batch_size):
    """Gamma^d_m = eq (9) + eq (10): what constraint (24b) bounds by the SBS memory Gamma_s."""
    return param_bytes(model) + kv_bytes(model, input_len, output_len, batch_size)


def max_batch_size(model: ModelSpec, input_len, output_len, memory_bytes: float):
    """Largest batch whose draft-model memory (eqs 9-10) fits ``memory_bytes`` (constraint 24b)."""
    free = memory_bytes - param_bytes(model)
    if free <= 0:
        raise ValueError(f"the draft model {model.name} needs {param_bytes(model) / 1e9:.2f} GB of weights, "
                         f"more than the SBS memory {memory_bytes / 1e9:.2f} GB")
    per_task = 4.0 * model.layers * model.hidden * (np.asarray(input_len, float) + output_len)
    b = np.floor(free / per_task).astype(np.int64)
    return b if b.ndim else int(b)


def forward_flops(model: ModelSpec, new_tokens, context):
    """Matrix-multiply FLOPs of one forward pass of one sequence (the pattern of eqs 11-14).

    ``new_tokens`` = q tokens are processed against ``context`` = c cached tokens:
    ``J (8 q h1^2 + 4 q (c + q) h1 + 4 q h1 h2)``. With ``q = I, c = 0`` this is eq (11) (prefill),
    with ``q = 1, c = I_kv`` eq (12) (one decoding pass), with ``q = 1 + l`` eq (14) (verification).
    The same count is what :mod:`specedge.profiling` pairs with measured runtimes.
    """
    return decoder_flops(model.layers, model.hidden, model.ffn, new_tokens, context)


def draft_flops(model: ModelSpec, input_len, n, i, L: float):
    """Eq (13): FLOPs of the i-th draft pass of decoding step n, per task of a batch with input ``I_m``.

    Step 1, pass 1 is the prefill of the (padded) input; every other pass decodes one token against
    a KV cache of ``I_kv = I_m + ((n - 1) L - 1) + i - 1`` tokens.
    """
    I = np.asarray(input_len, dtype=float)
    n = np.asarray(n)
    i = np.asarray(i)
    kv = I + ((n - 1) * L - 1) + i - 1
    prefill = forward_flops(model, I, 0.0)
    decode = forward_flops(model, 1.0, kv)
    return np.where((n == 1) & (i == 1), prefill, decode)


def verify_flops(model: ModelSpec, input_len, n, l: int, L: float):
    """Eq (14): verification FLOPs at decoding step n, per task of a batch with input ``I_m``.

    Step 1 runs the prompt and the l drafts as a prefill of ``I_m + l`` tokens; later steps process
    the bonus token and l drafts (``1 + l`` tokens) against ``I_kv = I_m + (n - 1) L - 1`` cached ones.
    """
    I = np.asarray(input_len, dtype=float)
    n = np.asarray(n)
    kv = I + (n - 1) * L - 1
    first = forward_flops(model, I + l, 0.0)
    later = forward_flops(model, 1.0 + l, kv)
    return np.where(n == 1, first, later)


def draft_step_flops(model: ModelSpec, input_len, n, l: int, L: float):
    """``sum_{i=1..l} F^d_{i,n,m}`` of eq (13): the draft FLOPs of a whole decoding step, per task.

    A one-token pass costs an affine function of its cache length, so the l passes of a step cost
    l passes at the mean cache length; step 1 replaces its first pass by the prefill. Equal to
    summing :func:`draft_flops` over i (a test checks), without the extra axis.
    """
    I = np.asarray(input_len, dtype=float)
    n = np.asarray(n)
    mean_kv = I + (n - 1) * L - 1 + (l - 1) / 2          # mean of I_kv over i = 1..l
    later = l * forward_flops(model, 1.0, mean_kv)
    mean_kv1 = I + (l - 2) / 2                           # step 1: mean over i = 2..l of I + i - 2
    first = forward_flops(model, I, 0.0) + (l - 1) * forward_flops(model, 1.0, mean_kv1)
    return np.where(n == 1, first, later)


# ----------------------------------------------------------------------------------------------
# Runtime: eqs (17)-(19).

@dataclass(frozen=True)
class Runtime:
    """Eq (17): runtime of one forward pass of a batch of b sequences, ``T = c1 * F * b + c2``."""
    c1: float     # s per FLOP
    c2: float     # s

    def __post_init__(self):
        if not (self.c1 >= 0 and self.c2 >= 0 and math.isfinite(self.c1) and math.isfinite(self.c2)):
            raise ValueError(f"runtime coefficients must be finite and >= 0, got c1={self.c1}, c2={self.c2}")

    def __call__(self, flops, batch_size):
        return self.c1 * np.asarray(flops, float) * batch_size + self.c2


@dataclass(frozen=True)
class EdgeSystem:
    """One deployment: the draft model on the SBS, the verify model on the MBS, and the uplink."""
    draft: ModelSpec
    verify: ModelSpec
    draft_runtime: Runtime
    verify_runtime: Runtime
    memory_bytes: float = 16e9          # Gamma_s
    bandwidth_hz: float = 20e6          # B_w
    tx_power_w: float = 0.2             # p_k
    noise_power_w: float = 10 ** (-106 / 10) * 1e-3   # sigma^2 = -106 dBm
    path_loss: float = 1e-3             # g0 = -30 dB
    cell_radius_m: float = 400.0

    def __post_init__(self):
        for key in ("memory_bytes", "bandwidth_hz", "tx_power_w", "noise_power_w", "path_loss", "cell_radius_m"):
            v = getattr(self, key)
            if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v > 0):
                raise ValueError(f"EdgeSystem.{key} must be a finite number > 0, got {v!r}")

    @property
    def bits_per_token(self) -> float:
        """lambda = 16 (h1^d + h1^v): FP16 embeddings of one input token for both models (Section II-D)."""
        return float(BITS_PER_VALUE * (self.draft.hidden + self.verify.hidden))


def stage_times(system: EdgeSystem, input_len, batch_size, l: int, L: float, n_steps: int):
    """Eqs (19) and (18): draft and verify stage latency of each batch at each decoding step.

    ``input_len`` and ``batch_size`` are per batch (length M); returns two ``(M, n_steps)`` arrays.
    The draft stage is l sequential passes, ``sum_i (c1^d F^d_{i,n,m} b + c2^d)``; the verify stage
    one pass, ``c1^v F^v_{n,m} b + c2^v``.
    """
    l = check_l(l)
    I = np.atleast_1d(np.asarray(input_len, float))[:, None]
    b = np.atleast_1d(np.asarray(batch_size, float))[:, None]
    n = np.arange(1, n_steps + 1)[None, :]
    fd = draft_step_flops(system.draft, I, n, l, L)      # (M, N)
    fv = verify_flops(system.verify, I, n, l, L)         # (M, N)
    rd, rv = system.draft_runtime, system.verify_runtime
    td = rd(fd, b) + (l - 1) * rd.c2      # l passes, each with its own overhead c2^d
    return td, rv(fv, b)


# ----------------------------------------------------------------------------------------------
# Pipeline latency: eqs (20)-(23).

def pipeline_step_latency(td: np.ndarray, tv: np.ndarray, pipelined: bool = True) -> np.ndarray:
    """Eqs (20)-(21): latency ``T_n = C_{n, M_n}`` of every decoding step.

    ``td`` and ``tv`` are ``(M, N)`` stage times, batches in pipeline order, with zeros where a batch
    has finished (a zero-time batch leaves both completion times unchanged, so padding with zeros is
    the same as dropping it from the active set M_n). ``pipelined=False`` is the "SD w/o pipeline"
    baseline: each batch is drafted and then verified before the next batch starts.
    """
    td = np.atleast_2d(td)
    tv = np.atleast_2d(tv)
    if not pipelined:
        return (td + tv).sum(axis=0)
    cd = np.zeros(td.shape[1])      # C^d_{n,m}: first stage done for the first m batches
    c = np.zeros(td.shape[1])       # C_{n,m}: both stages done for the first m batches
    for m in range(td.shape[0]):
        cd = cd + td[m]
        c = np.maximum(cd, c) + tv[m]
    return c


@dataclass(frozen=True)
class Plan:
    """A schedule: batches (task indices, in pipeline order) and a speculation length."""
    batches: tuple            # tuple of int arrays
    l: int                    # 0 means autoregressive decoding (ADS)
    pipelined: bool = True
    objective: float = float("nan")   # the planner's latency estimate (O_k = O_max)

    @property
    def batch_sizes(self) -> np.ndarray:
        return np.array([len(b) for b in self.batches])


def batch_arrays(batches, input_len, output_len):
    """Per-batch size, padded input ``I_m = max I_k`` and ``O_m = max O_k`` (Section II-B)."""
    I = np.asarray(input_len)
    O = np.asarray(output_len)
    sizes = np.array([len(b) for b in batches])
    i_m = np.array([I[b].max() for b in batches])
    o_m = np.array([O[b].max() for b in batches]) if O.ndim else np.full(len(batches), float(O))
    return sizes, i_m, o_m


def inference_latency(system: EdgeSystem, plan: Plan, input_len, output_len, alpha: float) -> float:
    """Eq (22): ``T_inf = sum_n T_n`` for a plan; batch m runs ``n_m = ceil(O_m / L)`` steps (eq 8).

    ``output_len`` is each task's O_k, or a scalar (O_max for every task: the planning objective of
    Section III-B). ``plan.l == 0`` evaluates autoregressive decoding at the MBS instead (ADS).
    """
    if plan.l == 0:
        return ad_latency(system, plan.batches, input_len, output_len)
    L = expected_tokens(alpha, plan.l)
    sizes, i_m, o_m = batch_arrays(plan.batches, input_len, output_len)
    steps = decoding_steps(o_m, L)
    td, tv = stage_times(system, i_m, sizes, plan.l, L, int(steps.max()))
    active = np.arange(1, td.shape[1] + 1)[None, :] <= steps[:, None]
    return float(pipeline_step_latency(td * active, tv * active, plan.pipelined).sum())


def ad_latency(system: EdgeSystem, batches, input_len, output_len) -> float:
    """ADS baseline: the verify model alone decodes every batch autoregressively at the MBS.

    Per batch: a prefill of ``I_m`` tokens (eq 11 with the verify model) emits the first token, then
    ``O_m - 1`` one-token passes against a growing cache (eq 12); each pass costs eq (17). One GPU
    serves the batches one after another, so the latencies add.
    """
    sizes, i_m, o_m = batch_arrays(batches, input_len, output_len)
    rv, model = system.verify_runtime, system.verify
    total = 0.0
    for b, I, O in zip(sizes, i_m, o_m):
        n = np.arange(2, int(O) + 1)
        f = forward_flops(model, 1.0, I + n - 2).sum() + forward_flops(model, float(I), 0.0)
        total += rv.c1 * f * b + rv.c2 * int(O)
    return float(total)


def memory_ok(system: EdgeSystem, plan: Plan, input_len, o_max: float) -> bool:
    """Constraint (24b) for every batch of a plan, with the conservative O_m = O_max of Section III-B."""
    if plan.l == 0:
        return True          # ADS runs at the MBS, whose memory the paper does not constrain
    sizes, i_m, _ = batch_arrays(plan.batches, input_len, o_max)
    return bool(np.all(batch_memory(system.draft, i_m, o_max, sizes) <= system.memory_bytes))


# ----------------------------------------------------------------------------------------------
# Communication: eqs (15), (16), (26), (27).

def spectral_efficiency(system: EdgeSystem, gain) -> np.ndarray:
    """``log2(1 + p_k g_k / sigma^2)`` in bit/s/Hz (the rate of eq 15 per unit bandwidth)."""
    g = np.asarray(gain, float)
    if np.any(g <= 0):
        raise ValueError("channel gains g_k must be > 0")
    return np.log2(1.0 + system.tx_power_w * g / system.noise_power_w)


def upload_latency(bits, share, bandwidth_hz: float, efficiency) -> np.ndarray:
    """Eq (15): ``T_k,com = lambda I_k / (w_k B_w log2(1 + p_k g_k / sigma^2))``."""
    if not (bandwidth_hz > 0 and math.isfinite(bandwidth_hz)):
        raise ValueError(f"bandwidth_hz must be a finite number > 0, got {bandwidth_hz!r}")
    w = np.asarray(share, float)
    if np.any(w < 0) or np.any(w > 1):
        raise ValueError("bandwidth shares w_k must lie in [0, 1] (constraint 24e)")
    return np.asarray(bits, float) / (w * bandwidth_hz * np.asarray(efficiency, float))


def optimal_bandwidth(bits, bandwidth_hz: float, efficiency):
    """Eqs (26)-(27): shares that make every upload finish together, and that common latency.

    ``w*_k = (I_k / log2(1+p g/s2)) / sum_k' (I_k' / log2(...))`` and
    ``t*_com = sum_k lambda I_k / (B_w log2(1 + p_k g_k / sigma^2))`` (eq 26 solved for t*).
    """
    if not (bandwidth_hz > 0 and math.isfinite(bandwidth_hz)):
        raise ValueError(f"bandwidth_hz must be a finite number > 0, got {bandwidth_hz!r}")
    demand = np.asarray(bits, float) / np.asarray(efficiency, float)     # bit / (bit/s/Hz) = s*Hz
    return demand / demand.sum(), float(demand.sum() / bandwidth_hz)


def comm_latency(bits, bandwidth_hz: float, efficiency, allocation: str = "optimal") -> float:
    """Eq (16): ``T_com = max_k T_k,com`` under the closed-form ("optimal") or an equal ("uniform") split."""
    bits = np.asarray(bits, float)
    if allocation == "optimal":
        return optimal_bandwidth(bits, bandwidth_hz, efficiency)[1]
    if allocation == "uniform":
        share = np.full(bits.shape, 1.0 / bits.size)
        return float(upload_latency(bits, share, bandwidth_hz, efficiency).max())
    raise ValueError(f"allocation must be 'optimal' or 'uniform', got {allocation!r}")


# ----------------------------------------------------------------------------------------------
# Algorithm 1 and problem P3.

@dataclass(frozen=True)
class DPResult:
    plan: Plan
    order: np.ndarray          # task indices sorted by input length (the "task list")
    starts: np.ndarray         # S: for each prefix length p, the start (0-based) of its last batch


def dp_batching(system: EdgeSystem, input_len, l: int, alpha: float, o_max: int) -> DPResult:
    """Algorithm 1: batching by dynamic programming over the task list sorted by input length.

    With every O_k = O_max (Section III-B) all batches run ``N = ceil(O_max / L)`` steps. For each
    prefix of i tasks and each start j of its last batch (memory-infeasible j skipped, line 11), the
    latency of eq (29) is

        T_{i,j} = sum_n [ max{Y[j-1,n,0] + T^d_n(j..i), Y[j-1,n,1]} + T^v_n(j..i) ]

    (the reading of eq 29 consistent with eqs 20, 31, 32), the best j* is kept (eq 30, ties to the
    larger j as in line 20's ``>=``), and the stage completion times of eqs (31)-(32) are stored for
    the longer prefixes. Vectorised over j and n; O(K * min(K, b_max) * N) work.
    """
    l = check_l(l)
    L = expected_tokens(alpha, l)
    I = np.asarray(input_len)
    K = I.size
    order = np.argsort(I, kind="stable")
    Is = I[order].astype(float)
    N = decoding_steps(o_max, L)
    bmax = max_batch_size(system.draft, Is, o_max, system.memory_bytes)
    if np.any(bmax < 1):
        raise ValueError(f"a single task of input length {int(Is[np.argmax(bmax < 1)])} and O_max={o_max} "
                         f"does not fit the SBS memory {system.memory_bytes / 1e9:.2f} GB")
    # Per-task stage times at b = 1 without the constant c2 terms: stage time is affine in b because
    # every task of the batch j..i is padded to I_i (sorted), so T(b) = b * A + const.
    td1, tv1 = stage_times(system, Is, np.ones(K), l, L, N)
    ad = td1 - l * system.draft_runtime.c2
    av = tv1 - system.verify_runtime.c2
    cd2, cv2 = l * system.draft_runtime.c2, system.verify_runtime.c2

    y0 = np.zeros((K + 1, N))       # Y[p, n, 0] for prefix length p (row 0: the empty prefix)
    y1 = np.zeros((K + 1, N))       # Y[p, n, 1]
    best = np.zeros(K + 1)
    start = np.zeros(K + 1, dtype=np.int64)
    for p in range(1, K + 1):
        lo = max(0, p - int(bmax[p - 1]))          # prefix lengths q before the last batch q..p-1
        b = np.arange(p - lo, 0, -1, dtype=float)[:, None]   # batch sizes p - q for q = lo..p-1
        td = b * ad[p - 1] + cd2
        tv = b * av[p - 1] + cv2
        s = y0[lo:p] + td                            # rows q = lo..p-1 (slices: no copies of Y)
        np.maximum(s, y1[lo:p], out=s)
        s += tv
        tot = s.sum(axis=1)
        k = p - lo - 1 - int(np.argmin(tot[::-1]))   # ties -> larger j (Algorithm 1, line 20)
        best[p] = tot[k]
        start[p] = lo + k
        y0[p] = y0[lo + k] + td[k]
        y1[p] = s[k]
    batches = []
    p = K
    while p > 0:
        batches.append(order[start[p]:p])
        p = int(start[p])
    batches.reverse()
    return DPResult(Plan(tuple(batches), l, True, float(best[K])), order, start)


def plan_objective(system: EdgeSystem, plan: Plan, input_len, alpha: float, o_max: int) -> float:
    """The planning objective: inference latency when every task emits O_max tokens (Section III-B)."""
    return inference_latency(system, plan, input_len, o_max, alpha)


def optimise_speculation(planner, l_max: int) -> Plan:
    """Problem P3 (eq 33): enumerate l = 1..l_max and keep the plan of lowest objective (ties: smaller l).

    ``planner(l)`` returns a :class:`Plan` with its ``objective`` filled in.
    """
    l_max = check_l(l_max, "l_max")
    best = None
    for l in range(1, l_max + 1):
        plan = planner(l)
        if best is None or plan.objective < best.objective:
            best = plan
    return best


def proposed_plan(system: EdgeSystem, input_len, alpha: float, o_max: int, l_max: int = 10) -> Plan:
    """The paper's method: Algorithm 1 inside the enumeration over l (Section III-B)."""
    check_alpha(alpha)
    return optimise_speculation(lambda l: dp_batching(system, input_len, l, alpha, o_max).plan, l_max)
