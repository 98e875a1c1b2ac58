"""The speculative-sampling acceptance rule, TK-SLT top-K drafts, and the acceptance metrics.

Distributions
    ``probs(logits, temperature, top_k)`` is the one place a sampling distribution is made from logits:
    ``softmax(logits / T)``; greedy is ``T = 0`` and gives the one-hot distribution of the argmax (first
    index on ties), so the acceptance rule below degenerates to "accept while the draft's argmax equals
    the target's, then emit the target's argmax". ``top_k`` is TK-SLT's Solution 1 (zheng2025 Sec III):
    the draft keeps only its K largest logits and renormalises over them, so it samples from and
    transmits K probabilities (plus their token ids) instead of |V|.

The acceptance rule (Leviathan et al. 2023, Algorithm 1; zheng2025 Sec II-A)
    ``verify(draft_ids, q, p)`` takes the γ drafted tokens, the draft distributions ``q`` they were
    sampled from (γ x |V|; sparse rows for TK-SLT) and the target distributions ``p`` at the γ + 1
    positions (γ x |V| for the drafts plus one for the bonus). Draft token x_i is accepted with
    probability min(1, p_i(x_i) / q_i(x_i)), i.e. iff u_i < p_i(x_i) / q_i(x_i) for u_i ~ U[0, 1)
    (strict ``<`` so that p = 0 never accepts, which makes the greedy case exact; q_i(x_i) = 0 accepts
    iff p_i(x_i) > 0, see ``acceptance_ratio``); at the first rejection i = n + 1 the next token is
    sampled from norm(max(0, p_i - q_i)), or from p_i where that residual has no mass (p = q up to
    rounding), so no row is ever NaN; if all γ are accepted, a bonus token is sampled from p_{γ+1}.
    The emitted tokens follow p exactly whatever q is (the property the tests check by chi-square,
    including for top-K drafts and for a q and p that zero out different tokens). ``verify`` is vectorised over a leading batch
    dimension and accepts per-row draft lengths, so it serves both Monte-Carlo tests and a server that
    verifies several devices' drafts at once. ``verify_greedy`` is the T = 0 special case without
    probabilities (a test checks it equals ``verify`` on one-hot inputs).

Metrics (one definition each, as in notes/recovered-formulas.md, vLLM naming)
    - ``acceptance_rate(accepted, drafted)``: draft acceptance rate = accepted draft tokens / drafted
      tokens (WISP's "draft acceptance rate").
    - ``mean_acceptance_length(accepted)``: 1 + accepted / rounds, i.e. tokens emitted per round
      counting the bonus/correction token (GOODSPEED's goodput counts accepted + 1 the same way).
    - ``per_position_acceptance(accepted, drafted)``: P(position i accepted | positions < i accepted).
    - ``iid_acceptance(accepted, drafted)``: the per-token acceptance probability α of the i.i.d. model
      behind eq (12) (Leviathan's α), estimated from rounds by maximum likelihood: accepted / (accepted
      + rejections), i.e. per-position acceptance pooled over positions. Not the draft acceptance rate,
      which falls with γ (positions after the first rejection count as drafted, not accepted): use this
      one in (1 - α^{γ+1}) / (1 - α) and in the speedup eq (11).
    - ``expected_tokens_per_round(alpha, gamma)``: (1 - α^{γ+1}) / (1 - α) (Leviathan eq 1,
      zheng2025 eq (12)) for i.i.d. acceptance α.
      The speedup over the target alone, eq (11), is ``specedge.solvers.zheng2025.speedup``.
    - ``acceptance_probability(p, q)``: α = Σ_x min(p(x), q(x)) = 1 - TV(p, q), zheng2025 eq (8)
      (eq (9) when q is the top-K distribution).
    - ``logit_stats(logits)``: the draft-side features WISP's rejection predictor uses (li2026 Sec 3):
      max probability (confidence), entropy (nats), top-1/top-2 probability margin, logit std.

Randomness: every random draw takes a ``torch.Generator`` (``make_generator(seed)``) so reruns with
the same seed are identical.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "check_gamma", "check_temperature", "check_top_k", "make_generator", "probs", "sample",
    "acceptance_ratio", "Verdict", "verify", "verify_greedy", "logit_stats", "acceptance_probability",
    "acceptance_rate", "mean_acceptance_length", "per_position_acceptance", "iid_acceptance",
    "expected_tokens_per_round",
]


# --------------------------------------------------------------------------- validation
def check_gamma(gamma, minimum: int = 1) -> int:
    """Draft length γ: an integer >= ``minimum`` (1 for a constant γ, 0 allowed from a policy)."""
    if isinstance(gamma, bool) or not isinstance(gamma, (int, np.integer)) or gamma < minimum:
        raise ValueError(f"gamma must be an integer >= {minimum}, got {gamma!r}")
    return int(gamma)


def check_temperature(temperature) -> float:
    """Temperature T: a finite number >= 0 (0 means greedy)."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.floating)) \
            or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {temperature!r}")
    return float(temperature)


def check_top_k(top_k, vocab_size: int | None = None) -> int | None:
    """TK-SLT's K: None (full distribution) or an integer in [1, |V|]."""
    if top_k is None:
        return None
    upper = "|V|" if vocab_size is None else str(vocab_size)
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1 \
            or (vocab_size is not None and top_k > vocab_size):
        raise ValueError(f"top_k must be None or an integer in [1, {upper}], got {top_k!r}")
    return int(top_k)


def make_generator(seed: int | torch.Generator = 0) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``seed`` (an existing generator is passed through)."""
    if isinstance(seed, torch.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or a torch.Generator, got {seed!r}")
    return torch.Generator().manual_seed(int(seed))


# --------------------------------------------------------------------------- distributions
def probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None) -> torch.Tensor:
    """The sampling distribution over the last dimension of ``logits`` (float32).

    ``temperature = 0`` gives the one-hot distribution of the argmax (greedy); ``top_k`` keeps the K
    largest logits and renormalises over them (TK-SLT Solution 1, zheng2025 Sec III), every other
    entry being exactly 0. A T so small that ``logits / T`` overflows (e.g. 1e-30) would give NaN rows;
    they are computed from the max-shifted logits instead, which is the greedy one-hot of the argmax
    (shared evenly by exact ties), the T -> 0 limit.
    """
    temperature = check_temperature(temperature)
    top_k = check_top_k(top_k, logits.shape[-1])
    logits = logits.float()
    if temperature == 0:
        out = torch.zeros_like(logits)
        return out.scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    if top_k is not None and top_k < logits.shape[-1]:
        values, index = logits.topk(top_k, dim=-1)
        out = torch.zeros_like(logits)
        return out.scatter_(-1, index, _softmax(values, temperature))
    return _softmax(logits, temperature)


def _softmax(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T); where a tiny T overflows logits / T (NaN rows), the same softmax of the
    max-shifted logits instead, which tends to the one-hot of the argmax as T -> 0."""
    out = torch.softmax(logits / temperature, dim=-1)
    bad = out.isnan().any(-1, keepdim=True)
    if bool(bad.any()):
        shifted = torch.softmax((logits - logits.amax(-1, keepdim=True)) / temperature, dim=-1)
        out = torch.where(bad, shifted, out)
    return out


def sample(dist: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One token per row from the distributions in the last dimension; shape ``dist.shape[:-1]``."""
    flat = dist.reshape(-1, dist.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(dist.shape[:-1])


# --------------------------------------------------------------------------- the acceptance rule
def acceptance_ratio(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """p(x)/q(x) of each drafted token x: accept iff u < this (Leviathan Algorithm 1).

    q(x) = 0 (a token the given q could not have produced, e.g. from a greedy or top-K draft form) is
    defined, not left to 0/0: the ratio is +inf when p(x) > 0 (always accepted, as min(1, p/q) -> 1)
    and 0 when p(x) = 0 (never accepted). Kept as its own function so a test can swap in the inverted
    q/p ratio of a known buggy edge-SD implementation and see the chi-square test fail.
    """
    return torch.where(q_x > 0, p_x / q_x, torch.where(p_x > 0, math.inf, 0.0))


@dataclass
class Verdict:
    """Outcome of verifying a batch of drafts: one entry per row.

    ``accepted``: number n of leading draft tokens accepted (0..γ_row); ``token``: the token emitted
    after them (a resample from norm(max(0, p - q)) at position n + 1, or the bonus from p_{γ+1});
    ``bonus``: True where all γ_row drafts were accepted.
    """
    accepted: torch.Tensor
    token: torch.Tensor
    bonus: torch.Tensor


def _lengths(draft_ids: torch.Tensor, lengths) -> torch.Tensor:
    gamma = draft_ids.shape[-1]
    if lengths is None:
        return torch.full(draft_ids.shape[:1], gamma, dtype=torch.long)
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    if lengths.shape != draft_ids.shape[:1] or bool((lengths < 0).any()) or bool((lengths > gamma).any()):
        raise ValueError(f"lengths must have one entry in [0, {gamma}] per row, got {lengths.tolist()}")
    return lengths


def _leading(ok: torch.Tensor) -> torch.Tensor:
    """Number of leading True entries per row (the accepted prefix: stop at the first rejection)."""
    return ok.long().cumprod(dim=-1).sum(dim=-1)


def verify(draft_ids: torch.Tensor, q: torch.Tensor, p: torch.Tensor, generator: torch.Generator,
           lengths=None) -> Verdict:
    """Leviathan et al.'s Algorithm 1 on a batch of drafts (zheng2025 Sec II-A; TK-SLT when q is top-K).

    ``draft_ids`` (B, γ) long, ``q`` (B, γ, V) the draft distributions the tokens were sampled from,
    ``p`` (B, γ + 1, V) the target distributions (same temperature); unbatched (γ,), (γ, V),
    (γ + 1, V) inputs are accepted too. ``lengths`` (B,) gives per-row draft lengths when rows are
    right-padded (a server verifying several devices' drafts); entries past a row's length are
    ignored. Draws: first B·γ uniforms ``torch.rand((B, γ))``, then one ``torch.multinomial`` over the
    B next-token distributions, both from ``generator`` (the same order transformers'
    ``_speculative_sampling`` uses on the global RNG, so seeded runs are comparable).
    """
    single = draft_ids.dim() == 1
    if single:
        draft_ids, q, p = draft_ids[None], q[None], p[None]
    b, gamma = draft_ids.shape
    if q.shape[:2] != (b, gamma) or p.shape[:2] != (b, gamma + 1) or q.shape[-1] != p.shape[-1]:
        raise ValueError(f"shapes must be draft_ids (B, γ), q (B, γ, V), p (B, γ+1, V); got "
                         f"{tuple(draft_ids.shape)}, {tuple(q.shape)}, {tuple(p.shape)}")
    lengths = _lengths(draft_ids, lengths)
    rows = torch.arange(b)
    idx = draft_ids[..., None]
    q_x = q.gather(-1, idx)[..., 0]
    p_x = p[:, :gamma].gather(-1, idx)[..., 0]
    u = torch.rand((b, gamma), generator=generator)
    ok = u < acceptance_ratio(p_x, q_x)
    ok &= torch.arange(gamma)[None, :] < lengths[:, None]
    n = _leading(ok)
    bonus = n == lengths
    # Next-token distribution: the residual norm(max(0, p - q)) at the first rejection, p itself after
    # a fully accepted draft (q is taken as 0 there).
    p_next = p[rows, n]
    q_next = q[rows, n.clamp(max=max(gamma - 1, 0))] if gamma else torch.zeros_like(p_next)
    residual = torch.clamp(p_next - q_next * (~bonus)[:, None], min=0)
    mass = residual.sum(-1, keepdim=True)
    # p == q up to rounding can leave no residual mass; p is then the right distribution.
    residual = torch.where(mass > torch.finfo(mass.dtype).tiny, residual / mass, p_next)
    token = torch.multinomial(residual, 1, generator=generator)[:, 0]
    if single:
        return Verdict(n[0], token[0], bonus[0])
    return Verdict(n, token, bonus)


def verify_greedy(draft_ids: torch.Tensor, target_ids: torch.Tensor, lengths=None) -> Verdict:
    """The acceptance rule at T = 0: accept while the draft equals the target's argmax, then emit it.

    ``draft_ids`` (B, γ), ``target_ids`` (B, γ + 1) the target's argmax at each position (or unbatched
    (γ,), (γ + 1,)). Equals ``verify`` on one-hot q and p, without probabilities or random draws.
    """
    single = draft_ids.dim() == 1
    if single:
        draft_ids, target_ids = draft_ids[None], target_ids[None]
    gamma = draft_ids.shape[-1]
    ok = draft_ids == target_ids[:, :gamma]
    if lengths is not None:
        lengths = _lengths(draft_ids, lengths)
        ok &= torch.arange(gamma)[None, :] < lengths[:, None]
    n = _leading(ok)
    token = target_ids.gather(1, n[:, None])[:, 0]
    bonus = n == (gamma if lengths is None else lengths)
    if single:
        return Verdict(n[0], token[0], bonus[0])
    return Verdict(n, token, bonus)


# --------------------------------------------------------------------------- statistics and metrics
def logit_stats(logits: torch.Tensor) -> dict[str, torch.Tensor]:
    """WISP's draft-side features of each row of ``logits`` (li2026 Sec 3, Fig 2-3), from softmax at T = 1.

    ``max_prob`` (confidence), ``entropy`` (nats), ``margin`` (top-1 minus top-2 probability) and
    ``logit_std`` (standard deviation of the raw logits over the vocabulary); each of shape
    ``logits.shape[:-1]``.
    """
    logits = logits.float()
    top2 = logits.topk(2, dim=-1).values
    z = torch.exp(logits - top2[..., :1])  # softmax numerator, shifted by the max for stability
    total = z.sum(-1)
    finite = torch.isfinite(logits)
    if bool(finite.all()):
        zl = z * logits
        centred = logits - logits.mean(-1, keepdim=True)  # Tensor.std is several times slower on CPU
        n = torch.full_like(total, logits.shape[-1])
    else:   # a masked vocabulary (-inf logits): 0 * log 0 = 0, and the spread of the finite logits only
        zl = torch.where(finite, z * logits, 0.0)
        n = finite.sum(-1).float()
        mean = torch.where(finite, logits, 0.0).sum(-1, keepdim=True) / n[..., None]
        centred = torch.where(finite, logits - mean, 0.0)
    return {
        "max_prob": 1 / total,
        "entropy": top2[..., 0] + total.log() - zl.sum(-1) / total,  # log Z - E_p[logit]
        "margin": (1 - torch.exp(top2[..., 1] - top2[..., 0])) / total,
        "logit_std": ((centred * centred).sum(-1) / (n - 1)).sqrt(),
    }


def acceptance_probability(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """α = Σ_x min(p(x), q(x)) = 1 - TV(p, q): zheng2025 eq (8) (eq (9) with a top-K q)."""
    return torch.minimum(p, q).sum(-1)


def _counts(accepted, drafted=None):
    accepted = np.asarray(accepted, dtype=np.int64).ravel()
    if drafted is None:
        return accepted, None
    drafted = np.broadcast_to(np.asarray(drafted, dtype=np.int64), accepted.shape).ravel()
    if np.any(accepted < 0) or np.any(accepted > drafted):
        raise ValueError("accepted must satisfy 0 <= accepted <= drafted in every round")
    return accepted, drafted


def acceptance_rate(accepted, drafted) -> float:
    """Draft acceptance rate = Σ accepted draft tokens / Σ drafted tokens (per-round counts)."""
    accepted, drafted = _counts(accepted, drafted)
    total = drafted.sum()
    return float(accepted.sum() / total) if total else float("nan")


def mean_acceptance_length(accepted) -> float:
    """Mean acceptance length = 1 + Σ accepted / rounds: tokens per round, counting the bonus token."""
    accepted, _ = _counts(accepted)
    return float(1.0 + accepted.mean()) if accepted.size else float("nan")


def per_position_acceptance(accepted, drafted) -> np.ndarray:
    """P(position i accepted | positions < i accepted), i = 1..max γ (NaN where no round reached i)."""
    accepted, drafted = _counts(accepted, drafted)
    gamma = int(drafted.max()) if drafted.size else 0
    i = np.arange(1, gamma + 1)[:, None]
    reached = ((accepted[None] >= i - 1) & (drafted[None] >= i)).sum(1)
    passed = (accepted[None] >= i).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(reached > 0, passed / np.maximum(reached, 1), np.nan)


def iid_acceptance(accepted, drafted) -> float:
    """α of the i.i.d. acceptance model, eq (12): Σ accepted / Σ min(accepted + 1, drafted) (MLE)."""
    accepted, drafted = _counts(accepted, drafted)
    reached = np.minimum(accepted + 1, drafted).sum()
    return float(accepted.sum() / reached) if reached else float("nan")


def expected_tokens_per_round(alpha, gamma):
    """E = (1 - α^{γ+1}) / (1 - α) tokens per round for i.i.d. acceptance α (zheng2025 eq (12); zhu2025
    eq (7)); γ + 1 at α = 1. A real γ >= 0 is allowed (an expected draft length); a NaN α (no rounds
    to estimate it from) gives NaN, not γ + 1."""
    alpha = np.asarray(alpha, dtype=float)
    gamma = np.asarray(gamma, dtype=float)
    if np.any((alpha < 0) | (alpha > 1)):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    if np.any(gamma < 0) or np.any(np.isnan(gamma)):
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    if alpha.ndim == 0 and gamma.ndim == 0:   # scalars in Python floats: numpy's vectorised pow can
        a, g = float(alpha), float(gamma)     # differ from C's in the last bit
        return math.nan if math.isnan(a) else (g + 1 if a == 1 else (1 - a ** (g + 1)) / (1 - a))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(alpha < 1, (1 - alpha ** (gamma + 1)) / np.where(alpha < 1, 1 - alpha, 1), gamma + 1)
        out = np.where(np.isnan(alpha), np.nan, out)
    return out[()] if out.ndim == 0 else out

