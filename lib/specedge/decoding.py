"""Autoregressive and speculative decoding over transformers causal LMs, with KV caches and traces.

Why one module of ~570 lines: the runners, the per-row state and the decoder are one loop whose cache
arithmetic must agree exactly (greedy speculative == greedy autoregressive is tested token for token);
splitting them would spread one invariant over several files.

Any ``transformers`` causal LM works (zoo checkpoints, a hub id loaded by the user, tiny random
models in the tests); draft and target must share one vocabulary (``check_vocabularies``: equal
``config.vocab_size``, or, given ``tokenizer=``, matrices padded beyond the tokenizer, whose logits are
then cut to its size). Prompts are token ids in that vocabulary, or text when a tokenizer is given;
anything else is refused naming the prompt. Everything runs under
``torch.inference_mode()``. For small models on a CPU use ``torch.set_num_threads(1)``: the passes
are dispatch-bound, and on a shared 2-core machine two threads were measured up to ~50x slower.

Runners (the hook points)
    ``CausalLM(model)``: one sequence and its ``DynamicCache``; ``feed(ids, keep) -> logits`` appends
    tokens and returns the logits of the last ``keep`` positions; ``crop(length)`` drops cached
    positions (rejected drafts). The prefix is never recomputed.
    ``BatchedCausalLM(model, batch_size)``: B sequences in one padded cache, verified in ONE forward
    pass (GOODSPEED/WISP: a server verifies many devices' drafts together). Each row's inputs are
    right-padded; a 2-D attention mask marks valid cache slots and explicit position ids count only
    valid tokens, so rejected drafts of one row are masked out (``commit``) rather than cropped, and
    slots rejected by every row are cropped. With B = 1 there are never holes and no mask is built. Both keep the model output of the last call in ``last_output`` (pass
    ``output_hidden_states=True`` to get per-layer hidden states, for early-exit work). A draft
    runner may be any object with ``feed(ids, keep)``, ``crop(length)`` and ``length`` (e.g. an
    early exit of the target). A target may be any object with ``BatchedCausalLM``'s ``feed(ids, valid, keep)``
    and ``commit(keep)`` (``specedge.llamacpp``: a GGUF model on llama.cpp).

Loops
    ``autoregressive(model, prompt, max_new_tokens, temperature=0, seed=0)``: the baseline.
    ``speculative(draft, target, prompt, max_new_tokens, gamma=4, temperature=0, top_k=None,
    seed=0, stop_rule=None, stop_before=False)`` and ``speculative_batch(draft, target, prompts,
    ...)``: draft γ tokens per device, verify all rows in one batched target pass with the rule of
    ``specedge.sampling`` (``speculative`` is the one-row case of the same loop). ``SpeculativeDecoder(...)`` is that loop
    as an object: ``step()`` runs one round and returns each row's ``Round``, ``run()`` steps to the
    end; its parts ``draft_row`` (device), ``verify_rows`` (server) and ``record`` (trace) can be
    overridden. Per round:
      - ``gamma`` is an int >= 1 or a policy ``gamma(row, rounds) -> int >= 0`` called before each
        round with that row's ``Round`` records so far (GOODSPEED's per-client allocation, TK-SLT's
        AS² returning 0 to fall back to the target alone). γ is capped so no round overshoots
        ``max_new_tokens``.
      - ``stop_rule(i, logits) -> bool`` is called at drafted position i (1-based) with the draft's
        raw logits there (cut to the shared vocabulary); True stops drafting after that token (WISP:
        stop at the first predicted rejection), or, with ``stop_before=True``, before it: position i
        is not drafted (WISP's eq (25); a stop at i = 1 sends no draft and the target emits one token).
      - ``top_k`` makes the draft sample from its top-K renormalised distribution (TK-SLT); the target
        always uses its full distribution, so the output still follows the target.
      - the draft's cache holds the committed context plus any drafts not yet rejected; after
        verification both caches are cropped to the accepted prefix (the target's by masking in a
        batch).

Traces
    Every round produces a ``Round`` record: drafted ids, q and p of each drafted token (the
    probabilities the acceptance rule used: one-hot at T = 0), the draft-logit statistics of each
    drafted position (``sampling.logit_stats``, from the raw logits at T = 1: max_prob, entropy,
    margin, logit_std), accepted count, the emitted next token and whether it was a bonus, and the
    wall times of drafting and of verification. Round 1 includes the prompt prefill of both models
    (``prefill`` column). In a batch, ``t_verify`` is the shared batched pass and ``t_draft`` the
    row's own drafting.
    ``traces_frame(rounds, per="position" | "round", **columns)`` makes a tidy DataFrame: one row per
    drafted position (``i`` 1-based, ``accepted`` = position accepted, ``first_rejected`` = WISP's
    negative label) or one row per round; extra keyword columns (e.g. ``draft="d2"``) are
    constants. ``save_traces`` / ``load_traces`` write and read them as CSV.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from transformers import DynamicCache

from . import sampling
from .kv_cache_arg import cache_kw

__all__ = [
    "CausalLM", "BatchedCausalLM", "Round", "Generation", "SpeculativeDecoder", "autoregressive", "speculative",
    "speculative_batch", "traces_frame", "save_traces", "load_traces", "ROUND_COLUMNS",
    "POSITION_COLUMNS",
]


# --------------------------------------------------------------------------- runners
class CausalLM:
    """One sequence of a causal LM with its KV cache: ``feed`` appends tokens, ``crop`` forgets them."""

    def __init__(self, model, output_hidden_states: bool = False):
        self.model = model
        self.output_hidden_states = output_hidden_states
        self.reset()

    def reset(self) -> None:
        self.cache = DynamicCache(config=self.model.config)
        self.length = 0
        self.last_output = None

    def feed(self, ids: torch.Tensor, keep: int = 1) -> torch.Tensor:
        """Append ``ids`` (k,) and return the logits (keep, V) of the last ``keep`` positions."""
        out = self.model(input_ids=ids[None], **cache_kw(self.model, self.cache), use_cache=True,
                         logits_to_keep=keep, output_hidden_states=self.output_hidden_states)
        self.length += ids.shape[0]
        self.last_output = out
        return out.logits[0]

    def crop(self, length: int) -> None:
        """Keep the first ``length`` cached positions."""
        if length < self.length:
            self.cache.crop(length - self.length)  # transformers 5: a negative count removes tokens
            self.length = length


class BatchedCausalLM:
    """B sequences in one padded KV cache, advanced by one batched forward pass per ``feed``.

    ``mask`` (B, S) marks the valid cache slots of each row, ``pos`` (B,) the next position id of
    each row. Rejected slots are masked, not removed, except at the tail where no row uses them.
    """

    def __init__(self, model, batch_size: int, output_hidden_states: bool = False):
        self.model = model
        self.batch_size = batch_size
        self.output_hidden_states = output_hidden_states
        self.cache = DynamicCache(config=model.config)
        self.length = 0  # cache slots
        # While no slot is masked (always, with one row) the plain causal mask is right and slot index
        # equals position; the mask and per-row positions are only materialised once holes appear.
        self.mask = None
        self.pos = None
        self.last_output = None

    def feed(self, ids: torch.Tensor, valid: torch.Tensor | None, keep: int) -> torch.Tensor:
        """Append ``ids`` (B, K), right-padded where ``valid`` (B, K) is False (None: no padding);
        returns the logits (B, keep, V) of the last ``keep`` positions."""
        kwargs = {}
        if valid is not None or self.mask is not None:
            valid = torch.ones(ids.shape, dtype=torch.long) if valid is None else valid.long()
            mask = torch.ones((ids.shape[0], self.length), dtype=torch.long) if self.mask is None else self.mask
            pos = torch.full((ids.shape[0],), self.length) if self.pos is None else self.pos
            kwargs["attention_mask"] = torch.cat([mask, valid], dim=1)
            kwargs["position_ids"] = (pos[:, None] + valid.cumsum(1) - 1).clamp(min=0)
        out = self.model(input_ids=ids, **cache_kw(self.model, self.cache), use_cache=True, logits_to_keep=keep,
                         output_hidden_states=self.output_hidden_states, **kwargs)
        self.block = ids.shape[1]
        self.last_output = out
        return out.logits

    def commit(self, keep: list[int]) -> None:
        """Row b keeps the first ``keep[b]`` slots of the last fed block; the rest are masked out."""
        block, longest = self.block, max(keep)
        if self.mask is not None or min(keep) < longest:  # holes: track them in the mask
            if self.mask is None:
                self.mask = torch.ones((len(keep), self.length), dtype=torch.long)
                self.pos = torch.full((len(keep),), self.length)
            keep_t = torch.tensor(keep)
            self.mask = torch.cat([self.mask, (torch.arange(longest)[None, :] < keep_t[:, None]).long()], dim=1)
            self.pos = self.pos + keep_t
        if longest < block:  # slots no row keeps
            self.cache.crop(longest - block)
        self.length += longest


# --------------------------------------------------------------------------- records
STAT_NAMES = ("max_prob", "entropy", "margin", "logit_std")
ROUND_COLUMNS = ["round", "position", "drafted", "accepted", "token", "bonus", "prefill",
                 "t_draft", "t_verify"]
POSITION_COLUMNS = ["round", "position", "drafted", "i", "draft_id", "q", "p", *STAT_NAMES,
                    "accepted", "first_rejected", "round_accepted", "token", "bonus", "prefill",
                    "t_draft", "t_verify"]


@dataclass
class Round:
    """One draft/verify round of one sequence (see the module docstring for the fields)."""
    round: int
    position: int  # tokens generated before this round
    draft_ids: list[int]
    q: list[float]
    p: list[float]
    stats: dict[str, list[float]]
    accepted: int
    token: int
    bonus: bool
    prefill: bool
    t_draft: float
    t_verify: float

    @property
    def drafted(self) -> int:
        return len(self.draft_ids)


@dataclass
class Generation:
    """Output of a decoding loop: the new tokens (prompt excluded) and the per-round records."""
    tokens: torch.Tensor
    rounds: list[Round] = field(default_factory=list)
    logits: torch.Tensor | None = None  # (new tokens, V), autoregressive(return_logits=True) only

    @property
    def accepted(self) -> list[int]:
        return [r.accepted for r in self.rounds]

    @property
    def drafted(self) -> list[int]:
        return [r.drafted for r in self.rounds]


# --------------------------------------------------------------------------- helpers
def _as_ids(prompt, vocab_size: int | None = None, which: str = "prompt", tokenizer=None) -> torch.Tensor:
    """A prompt as a 1-D long tensor of token ids in [0, vocab_size); text is encoded with ``tokenizer``
    (refused without one), floats and ids out of range are refused with a message naming ``which`` prompt."""
    if isinstance(prompt, str):
        prompt = _encode(prompt, tokenizer, which)
    if not isinstance(prompt, torch.Tensor):
        arr = np.asarray(prompt)
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"{which}: token ids must be integers, got {arr.dtype} values {arr.ravel()[:5].tolist()}")
        prompt = torch.as_tensor(arr.astype(np.int64) if arr.size else arr, dtype=torch.long)
    elif prompt.is_floating_point() or prompt.is_complex() or prompt.dtype == torch.bool:
        raise TypeError(f"{which}: token ids must be integers, got a {prompt.dtype} tensor")
    ids = prompt.long()
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"{which} must be a non-empty 1-D sequence of token ids, got shape {tuple(ids.shape)}")
    if vocab_size is not None and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"{which}: token ids must lie in [0, {vocab_size}) (the shared vocabulary), got "
                         f"min {int(ids.min())}, max {int(ids.max())}")
    return ids


def _encode(text: str, tokenizer, which: str) -> list[int]:
    """Text encoded with ``tokenizer``, without special tokens (how the zoo's models saw their prompts,
    see ``zoo.load_tokenizer``; prepend a BOS id yourself for a model that expects one)."""
    if tokenizer is None or isinstance(tokenizer, (int, np.integer)):
        raise TypeError(f"{which} is text: pass token ids, e.g. tokenizer(text, add_special_tokens=False)"
                        "['input_ids'], or pass the tokenizer (tokenizer=...) to encode it")
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def vocab_size(model) -> int | None:
    """``config.vocab_size`` of a model or of a ``CausalLM`` / ``BatchedCausalLM`` runner (None if unknown)."""
    for m in (model, getattr(model, "model", None)):
        v = getattr(getattr(m, "config", None), "vocab_size", None)
        if v is not None:
            return int(v)
    return None


def tokenizer_size(tokenizer) -> int | None:
    """The number of real token ids: ``len(tokenizer)`` (added tokens included), an int taken as that
    size, None when no tokenizer is given."""
    if tokenizer is None:
        return None
    is_size = isinstance(tokenizer, (int, np.integer)) and not isinstance(tokenizer, bool)
    n = int(tokenizer) if is_size else len(tokenizer) if hasattr(tokenizer, "__len__") else 0
    if n < 1:
        raise ValueError(f"tokenizer: a tokenizer or its size (an integer >= 1) expected, got {tokenizer!r}")
    return int(n)


def check_vocabularies(draft, target, tokenizer=None) -> int | None:
    """The vocabulary speculative decoding works over; draft and target must share it, because their
    distributions are compared token by token (a mismatch ran silently at T = 0 and failed with a
    shape error at T = 1).

    The rule, on ``config.vocab_size`` (the rows of the embedding / LM-head matrix):
      - without a tokenizer, every draft's size must equal the target's, and that size is returned;
      - with a tokenizer of n entries (``tokenizer_size``), the sizes may differ, because matrices are
        often padded beyond the tokenizer (Qwen2.5: 151936 rows for 0.5B-3B, 152064 for 7B, 151665
        tokens), but every model must have at least n rows; n is returned and the decoders cut every
        logit vector to its first n entries, so padding ids are never drafted, emitted or compared.
    A real mismatch is refused with a ValueError naming the sizes. ``draft`` is a model, a runner or a
    list of them; models whose size is unknown (runners without a config) are not checked.
    """
    n, t = tokenizer_size(tokenizer), vocab_size(target)
    sizes = {"target": t}
    for i, d in enumerate(draft if isinstance(draft, (list, tuple)) else [draft]):
        sizes[f"draft[{i}]" if isinstance(draft, (list, tuple)) else "draft"] = vocab_size(d)
    for role, v in sizes.items():
        if n is not None and v is not None and v < n:
            raise ValueError(f"the tokenizer has {n} entries but the {role} scores only {v}: it cannot be "
                             "that model's tokenizer")
        if n is None and role != "target" and v is not None and t is not None and v != t:
            raise ValueError(f"draft and target vocabularies differ: {role} {v} entries, target {t}; speculative "
                             "decoding compares their distributions token by token. If one embedding matrix is only "
                             "padded beyond the tokenizer, pass the tokenizer (tokenizer=..., or its size) and both "
                             "are cut to it")
    return t if n is None else n


def _check_max_new(max_new_tokens) -> int:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    return max_new_tokens


def _pick(logits: torch.Tensor, temperature: float, top_k, generator):
    """Next token from raw logits (V,): argmax at T = 0, else a sample; also its distribution."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True), None
    dist = sampling.probs(logits, temperature, top_k)
    return torch.multinomial(dist, 1, generator=generator), dist


def _right_pad(seqs: list, width: int | None = None):
    """Stack 1-D id tensors (None = empty row) right-padded with 0; the validity mask, or None if no padding."""
    sizes = [0 if x is None else x.shape[0] for x in seqs]
    width = max(sizes) if width is None else width
    if len(seqs) == 1 and sizes[0] == width:
        return seqs[0][None], None
    ids = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, x in enumerate(seqs):
        if sizes[i]:
            ids[i, : sizes[i]] = x
    if min(sizes) == width:
        return ids, None
    return ids, torch.arange(width)[None, :] < torch.tensor(sizes)[:, None]


def _gather_positions(logits: torch.Tensor, starts: list[int], count: int) -> torch.Tensor:
    """``logits[i, starts[i] : starts[i] + count]`` for every row i (clamped at the end)."""
    if not any(starts) and logits.shape[1] == count:
        return logits
    index = (torch.tensor(starts)[:, None] + torch.arange(count)[None, :]).clamp(max=logits.shape[1] - 1)
    return logits[torch.arange(logits.shape[0])[:, None], index]


def _eos_cut(new: torch.Tensor, eos_token_id) -> int | None:
    """Length up to and including the first EOS in ``new``, or None."""
    if eos_token_id is None:
        return None
    hits = (new == eos_token_id).nonzero()
    return int(hits[0, 0]) + 1 if hits.numel() else None


# --------------------------------------------------------------------------- autoregressive
def autoregressive(model, prompt, max_new_tokens: int, *, temperature: float = 0.0,
                   seed: int | torch.Generator = 0, eos_token_id: int | None = None,
                   return_logits: bool = False, tokenizer=None) -> Generation:
    """The baseline: one target forward pass per token, with a KV cache (prefix never recomputed).

    ``tokenizer`` (or its size) as in ``speculative_batch``: text prompts are encoded with it and the
    logits are cut to its size, so the baseline matches a speculative run given the same tokenizer."""
    vocab = check_vocabularies([], model, tokenizer)
    ids = _as_ids(prompt, vocab, tokenizer=tokenizer)
    _check_max_new(max_new_tokens)
    temperature = sampling.check_temperature(temperature)
    generator = sampling.make_generator(seed)
    runner = model if hasattr(model, "feed") else CausalLM(model)
    tokens, kept = [], []
    pending = ids
    with torch.inference_mode():
        for _ in range(max_new_tokens):
            logits = runner.feed(pending)[-1][:vocab]
            token, _ = _pick(logits, temperature, None, generator)
            tokens.append(token)
            if return_logits:
                kept.append(logits)
            pending = token
            if eos_token_id is not None and int(token) == eos_token_id:
                break
    return Generation(torch.cat(tokens), [], torch.stack(kept) if return_logits else None)


# --------------------------------------------------------------------------- speculative
class _Row:
    """Device-side state of one sequence: its draft runner and the tokens its caches lack."""

    def __init__(self, runner, prompt: torch.Tensor, vocab: int | None = None):
        self.runner = runner
        self.vocab = vocab  # logits are cut to the shared vocabulary (None: kept whole)
        self.draft_pending = prompt  # tokens not yet in the draft cache
        self.target_pending = prompt  # tokens not yet in the target cache
        self.tokens: list[torch.Tensor] = []
        self.generated = 0
        self.rounds: list[Round] = []
        self.done = False

    def draft(self, gamma: int, temperature: float, top_k, generator, stop_rule, stop_before: bool = False):
        """Draft up to ``gamma`` tokens; returns ids (g,), raw logits (g, V), distributions or None."""
        ids, logits, dists = [], [], []
        pending = self.draft_pending
        fed = 0
        for i in range(gamma):
            row = self.runner.feed(pending)[-1][: self.vocab]
            fed += 1
            if stop_before and stop_rule is not None and stop_rule(i + 1, row):
                break  # position i + 1 is not drafted
            token, dist = _pick(row, temperature, top_k, generator)
            ids.append(token)
            logits.append(row)
            dists.append(dist)
            pending = token
            if not stop_before and stop_rule is not None and stop_rule(i + 1, row):
                break
        # The draft cache now holds the old pending tokens (if it ran) and the first fed - 1 drafts.
        self.in_cache = max(fed - 1, 0)
        self.carry = self.draft_pending if fed == 0 else self.draft_pending[:0]
        if not ids:
            return torch.zeros(0, dtype=torch.long), None, None
        return torch.cat(ids), torch.stack(logits), (None if temperature == 0 else torch.stack(dists))

    def commit(self, draft_ids: torch.Tensor, n: int, token: torch.Tensor) -> torch.Tensor:
        """Accept ``draft_ids[:n]`` then ``token``; crop the draft cache to what is still valid."""
        new = torch.cat([draft_ids[:n], token.view(1)])
        kept = min(n, self.in_cache)  # accepted drafts already in the draft cache
        self.runner.crop(self.runner.length - self.in_cache + kept)
        self.draft_pending = torch.cat([self.carry, draft_ids[kept:n], token.view(1)])
        self.target_pending = token.view(1)
        return new


def _gamma_policy(gamma) -> Callable[[int, list], int]:
    if callable(gamma):
        return gamma
    sampling.check_gamma(gamma)
    return lambda row, rounds: gamma


def _draft_runners(draft, n: int) -> list:
    if isinstance(draft, (list, tuple)):
        if len(draft) != n:
            raise ValueError(f"draft: one model or runner per prompt expected, got {len(draft)} for {n} prompts")
        items = list(draft)
    elif isinstance(draft, torch.nn.Module):
        items = [draft] * n
    elif n == 1:
        items = [draft]
    else:
        raise ValueError("draft: give a model, or a list of runners (one per prompt); one runner cannot serve several rows")
    return [CausalLM(d) if isinstance(d, torch.nn.Module) else d for d in items]


class SpeculativeDecoder:
    """The draft/verify loop over several sequences, one round per ``step()``.

    ``run()`` steps until every row is done; ``step()`` lets a caller interleave its own logic between
    rounds (a scheduler, a simulated clock). The round is split into hookable parts a subclass may
    override: ``draft_row`` (device side, one row), ``verify_rows`` (server side: one batched target
    pass over every active row) and ``record`` (the trace). ``rows[i].rounds`` holds row i's records.
    """

    def __init__(self, draft, target, prompts: Sequence, max_new_tokens: int, *, gamma=4,
                 temperature: float = 0.0, top_k: int | None = None,
                 seed: int | torch.Generator = 0, stop_rule=None, stop_before: bool = False,
                 eos_token_id: int | None = None, tokenizer=None):
        self.max_new_tokens = _check_max_new(max_new_tokens)
        self.temperature = sampling.check_temperature(temperature)
        self.policy = _gamma_policy(gamma)
        if isinstance(prompts, (str, torch.Tensor)) and not (isinstance(prompts, torch.Tensor) and prompts.dim() == 2):
            raise TypeError("prompts: a list of prompts (token-id sequences) expected, got one "
                            f"{type(prompts).__name__}")
        self.vocab = check_vocabularies(draft, target, tokenizer)
        prompts = [_as_ids(p, self.vocab, f"prompts[{i}]", tokenizer) for i, p in enumerate(prompts)]
        if not prompts:
            raise ValueError("prompts must not be empty")
        self.top_k = sampling.check_top_k(top_k, self.vocab)
        self.generator = sampling.make_generator(seed)
        self.stop_rule, self.stop_before, self.eos_token_id = stop_rule, bool(stop_before), eos_token_id
        self.rows = [_Row(r, p, self.vocab) for r, p in zip(_draft_runners(draft, len(prompts)), prompts)]
        # a verification runner (BatchedCausalLM, or another backend's with feed(ids, valid, keep) and commit)
        self.server = target if hasattr(target, "commit") else BatchedCausalLM(target, len(self.rows))

    @property
    def done(self) -> bool:
        return all(r.done for r in self.rows)

    def run(self) -> list[Generation]:
        while not self.done:
            self.step()
        return [Generation(torch.cat(r.tokens), r.rounds) for r in self.rows]

    def draft_row(self, i: int):
        """Row i drafts γ tokens (its policy's γ, capped so drafts + 1 token fit); timed."""
        row = self.rows[i]
        gamma = sampling.check_gamma(self.policy(i, row.rounds), minimum=0)
        gamma = min(gamma, self.max_new_tokens - row.generated - 1)
        t0 = time.perf_counter()
        ids, logits, dists = row.draft(gamma, self.temperature, self.top_k, self.generator, self.stop_rule,
                                       self.stop_before)
        return ids, logits, dists, time.perf_counter() - t0

    def verify_rows(self, drafts: dict[int, torch.Tensor], dists: dict):
        """One batched target pass over rows ``drafts`` (row -> ids, ``dists`` row -> q or None);
        returns the verdict and p of each drafted token (B, γmax); the server cache keeps the accepted part."""
        b = len(self.rows)
        pending = [self.rows[i].target_pending if i in drafts else None for i in range(b)]
        m = [0 if x is None else x.shape[0] for x in pending]
        g = [drafts[i].shape[0] if i in drafts else 0 for i in range(b)]
        gmax = max(g)
        ids, valid = _right_pad([torch.cat([pending[i], drafts[i]]) if i in drafts else None for i in range(b)])
        first = min(m[i] for i in drafts) - 1  # earliest input position whose logits a row needs
        out = self.server.feed(ids, valid, keep=ids.shape[1] - first)[..., : self.vocab]
        # p_j of row i sits at input position m_i - 1 + j, j = 0..γ_i.
        p_logits = _gather_positions(out, [max(m_i - 1 - first, 0) for m_i in m], gmax + 1)
        draft_ids, _ = _right_pad([drafts.get(i) for i in range(b)], width=gmax)
        lengths = None if min(g) == gmax else torch.tensor(g)
        if self.temperature == 0:
            target_ids = p_logits.argmax(-1)
            verdict = sampling.verify_greedy(draft_ids, target_ids, lengths)
            p_x = (target_ids[:, :gmax] == draft_ids).float()
        else:
            p = sampling.probs(p_logits, self.temperature)
            q = torch.zeros((b, gmax, p.shape[-1]))
            for i in drafts:
                if g[i]:
                    q[i, : g[i]] = dists[i]
            verdict = sampling.verify(draft_ids, q, p, self.generator, lengths)
            p_x = p[:, :gmax].gather(-1, draft_ids[..., None])[..., 0]
        accepted = verdict.accepted.tolist()
        self.server.commit([m[i] + accepted[i] if i in drafts else 0 for i in range(b)])
        return verdict, p_x

    @torch.inference_mode()
    def step(self) -> dict[int, Round]:
        """One round: every active row drafts, one batched verification, commit; row -> its record."""
        drafts, logits, dists, t_draft = {}, {}, {}, {}
        for i, row in enumerate(self.rows):
            if not row.done:
                drafts[i], logits[i], dists[i], t_draft[i] = self.draft_row(i)
        t0 = time.perf_counter()
        verdict, p_x = self.verify_rows(drafts, dists)
        t_verify = time.perf_counter() - t0
        accepted, tokens = verdict.accepted.tolist(), verdict.token.tolist()
        bonus, p_list = verdict.bonus.tolist(), p_x.tolist()
        records = {}
        for i in drafts:
            row, n = self.rows[i], accepted[i]
            new = row.commit(drafts[i], n, verdict.token[i])
            records[i] = self.record(row, drafts[i], logits[i], dists[i], p_list[i][: drafts[i].shape[0]],
                                     n, tokens[i], bonus[i], t_draft[i], t_verify)
            row.rounds.append(records[i])
            cut = _eos_cut(new, self.eos_token_id)
            if cut is not None:
                new, row.done = new[:cut], True
            row.tokens.append(new)
            row.generated += new.shape[0]
            row.done = row.done or row.generated >= self.max_new_tokens
        return records

    def record(self, row, ids, logits, dists, p_x, accepted, token, bonus, t_draft, t_verify) -> Round:
        """The trace of one row's round (see the module docstring)."""
        g = ids.shape[0]
        if g:
            stats = dict(zip(STAT_NAMES, torch.stack(list(sampling.logit_stats(logits).values())).tolist()))
            q_x = [1.0] * g if dists is None else dists.gather(-1, ids[:, None])[:, 0].tolist()
        else:
            stats, q_x = {k: [] for k in STAT_NAMES}, []
        return Round(round=len(row.rounds), position=row.generated, draft_ids=ids.tolist(), q=q_x, p=p_x,
                     stats=stats, accepted=accepted, token=token, bonus=bonus, prefill=not row.rounds,
                     t_draft=t_draft, t_verify=t_verify)


def speculative_batch(draft, target, prompts: Sequence, max_new_tokens: int, *, gamma=4,
                      temperature: float = 0.0, top_k: int | None = None,
                      seed: int | torch.Generator = 0, stop_rule=None, stop_before: bool = False,
                      eos_token_id: int | None = None, tokenizer=None) -> list[Generation]:
    """Speculative decoding of several sequences; each round verifies all rows in one target pass.

    ``draft``: a model shared by all rows, or a list with one model/runner per row (heterogeneous
    devices). ``target``: a model (or a ``BatchedCausalLM``). ``prompts``: a list of token-id sequences
    (lists of ints or integer tensors) in [0, vocabulary), or of texts when ``tokenizer`` is given.
    ``tokenizer`` (a tokenizer, or just its size): lets the draft and target matrices be padded
    differently beyond it and cuts their logits to it (``check_vocabularies`` has the rule). See the
    module docstring for ``gamma``, ``stop_rule``/``stop_before``, ``top_k`` and the traces. Greedy
    (T = 0) output equals ``autoregressive`` of the target token for token.
    """
    return SpeculativeDecoder(draft, target, prompts, max_new_tokens, gamma=gamma, temperature=temperature,
                              top_k=top_k, seed=seed, stop_rule=stop_rule, stop_before=stop_before,
                              eos_token_id=eos_token_id, tokenizer=tokenizer).run()


def speculative(draft, target, prompt, max_new_tokens: int, *, gamma=4, temperature: float = 0.0,
                top_k: int | None = None, seed: int | torch.Generator = 0, stop_rule=None,
                stop_before: bool = False, eos_token_id: int | None = None, tokenizer=None) -> Generation:
    """Speculative decoding of one sequence (the one-row case of ``speculative_batch``)."""
    return speculative_batch(draft, target, [prompt], max_new_tokens, gamma=gamma,
                             temperature=temperature, top_k=top_k, seed=seed, stop_rule=stop_rule,
                             stop_before=stop_before, eos_token_id=eos_token_id, tokenizer=tokenizer)[0]


# --------------------------------------------------------------------------- traces
def traces_frame(rounds: Sequence[Round], per: str = "position", **columns) -> pd.DataFrame:
    """Tidy table of ``Round`` records: one row per drafted position (default) or per round.

    Per position: ``i`` is the 1-based position in the round, ``accepted`` whether it was accepted,
    ``first_rejected`` whether it was the round's first rejection (later positions are neither: WISP
    drops them from its predictor's data), ``round_accepted`` the round's accepted count. Keyword
    arguments become constant columns placed first (e.g. ``domain="code"``).
    """
    if per not in ("position", "round"):
        raise ValueError(f"per must be 'position' or 'round', got {per!r}")
    records = []
    for r in rounds:
        base = dict(round=r.round, position=r.position, drafted=r.drafted)
        tail = dict(token=r.token, bonus=r.bonus, prefill=r.prefill, t_draft=r.t_draft, t_verify=r.t_verify)
        if per == "round":
            records.append({**base, "accepted": r.accepted, **tail})
            continue
        for j in range(r.drafted):
            records.append({**base, "i": j + 1, "draft_id": r.draft_ids[j], "q": r.q[j], "p": r.p[j],
                            **{k: r.stats[k][j] for k in STAT_NAMES},
                            "accepted": j < r.accepted, "first_rejected": j == r.accepted,
                            "round_accepted": r.accepted, **tail})
    frame = pd.DataFrame.from_records(records, columns=ROUND_COLUMNS if per == "round" else POSITION_COLUMNS)
    for k, (name, value) in enumerate(columns.items()):
        frame.insert(k, name, value)
    return frame


def save_traces(frame: pd.DataFrame, path) -> Path:
    """Write a traces frame as CSV (deterministic formatting, as ``plotting.write_csv``)."""
    from .plotting import write_csv  # plotting imports matplotlib; keep decoding import light

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_csv(frame, path)


def load_traces(path) -> pd.DataFrame:
    """Read a traces CSV written by ``save_traces``."""
    return pd.read_csv(path)
