"""llama.cpp as a decoding backend: GGUF models behind the runner interface of ``specedge.decoding``.

The edge runs quantized runtimes (GGUF files on llama.cpp), not float32 transformers. This module puts a
GGUF model behind the same two hook points the transformers models use, so ``decoding.autoregressive``,
``decoding.speculative`` and the serving drafter run on it unchanged:

    ``LlamaCppLM(gguf)``: one sequence on a llama.cpp context; ``feed(ids, keep) -> logits (keep, V)`` appends
    tokens and returns the logits of the last ``keep`` positions, ``crop(length)`` forgets cached positions,
    ``length`` counts them (as ``decoding.CausalLM``). The context keeps the logits of every fed position
    (``logits_all``), so one call verifies k drafted tokens; ``crop`` lowers the binding's token count, and its
    ``eval`` removes the KV cells beyond it before the next tokens go in (no prefix is ever recomputed).
    ``LlamaCppVerifier(lm)``: the target side of ``decoding.SpeculativeDecoder`` (``BatchedCausalLM``'s
    ``feed(ids, valid, keep)`` / ``commit(keep)``) for one sequence; several rows are refused.

The binding is llama-cpp-python, compiled from its pinned source release by ``make llamacpp`` (never by the
default set-up or CI); without it ``load`` says so in one line. ``available()`` tells whether it is installed.

An edge drafter (``check_drafter``, ``drafter_lm``): the serving drafter's context on a GGUF file, checked before
any process starts (``serving.real.run.run_real(draft_gguf=)``, ``python -m specedge.serving drafter --backend llamacpp``).
Writing GGUF files (a transformers model, a dequantized copy) is ``specedge.gguf_files``.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

__all__ = ["available", "load", "LlamaCppLM", "LlamaCppVerifier", "MISSING", "check_drafter", "drafter_lm"]

MISSING = "llama-cpp-python is not installed: `make llamacpp` compiles it (cmake and a C++ compiler needed)"


def available() -> bool:
    """Whether the llama-cpp-python binding is importable."""
    return importlib.util.find_spec("llama_cpp") is not None


def _gguf_path(path) -> Path:
    p = Path(path)
    if p.suffix != ".gguf":
        raise ValueError(f"gguf: a .gguf file expected, got {p}")
    if not p.is_file():
        raise FileNotFoundError(f"gguf: {p} does not exist (the real pair's files: make realpair)")
    return p


def load(path, *, n_ctx: int = 512, threads: int = 1, seed: int = 0):
    """A ``llama_cpp.Llama`` on ``path`` with the logits of every position kept, ``threads`` threads for single
    tokens and batches alike, a context of ``n_ctx`` tokens; nothing printed."""
    p = _gguf_path(path)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    if isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 2:
        raise ValueError(f"n_ctx must be an integer >= 2, got {n_ctx!r}")
    if not available():
        raise ImportError(MISSING)
    from llama_cpp import Llama

    return Llama(model_path=str(p), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=threads,
                 n_threads_batch=threads, logits_all=True, seed=seed, verbose=False)


class LlamaCppLM:
    """One sequence on a llama.cpp context: ``feed`` appends tokens, ``crop`` forgets them (see the module)."""

    def __init__(self, model, *, n_ctx: int = 512, threads: int = 1):
        self.llama = model if hasattr(model, "eval") and hasattr(model, "n_tokens") else load(
            model, n_ctx=n_ctx, threads=threads)
        self.n_ctx = int(self.llama.n_ctx())
        self.config = SimpleNamespace(vocab_size=int(self.llama.n_vocab()))  # what decoding.vocab_size reads
        self.reset()

    @property
    def length(self) -> int:
        return int(self.llama.n_tokens)

    def reset(self) -> None:
        self.llama.reset()

    def feed(self, ids, keep: int = 1) -> torch.Tensor:
        """Append ``ids`` (k,) and return the logits (keep, V) of the last ``keep`` positions (float32)."""
        tokens = [int(t) for t in (ids.tolist() if isinstance(ids, torch.Tensor) else ids)]
        if not tokens:
            raise ValueError("feed: at least one token id expected")
        if not 1 <= keep <= len(tokens):
            raise ValueError(f"feed: keep must lie in [1, {len(tokens)}] (the tokens fed), got {keep}")
        if self.length + len(tokens) > self.n_ctx:
            raise ValueError(f"feed: {self.length} cached + {len(tokens)} new tokens exceed the context of {self.n_ctx} "
                             "(n_ctx=)")
        vocab = self.config.vocab_size
        if min(tokens) < 0 or max(tokens) >= vocab:
            raise ValueError(f"feed: token ids must lie in [0, {vocab}), got min {min(tokens)}, max {max(tokens)}")
        self.llama.eval(tokens)
        end = self.length
        return torch.from_numpy(np.array(self.llama.scores[end - keep: end], dtype=np.float32))

    def crop(self, length: int) -> None:
        """Keep the first ``length`` cached positions (the binding drops the rest of the KV cache on the next
        ``eval``, before it writes the new tokens)."""
        if length < 0:
            raise ValueError(f"crop: length must be >= 0, got {length}")
        if length < self.length:
            self.llama.n_tokens = length


DRAFT_ROOM = 64   # positions an edge drafter's context keeps beyond its prompt and its tokens


def check_drafter(path) -> Path:
    """``path`` as an edge drafter's GGUF file, refused (naming it) before any process starts: a ``.gguf`` file
    that exists, and the binding installed."""
    p = _gguf_path(path)
    if not available():
        raise ImportError(MISSING)
    return p


def drafter_lm(path, max_new_tokens: int, prompt_tokens: int, threads: int = 1) -> LlamaCppLM:
    """An edge drafter's context on ``path``: room for a prompt of up to ``prompt_tokens`` tokens, its
    ``max_new_tokens`` and a round's drafts (``DRAFT_ROOM``)."""
    return LlamaCppLM(path, n_ctx=int(prompt_tokens) + int(max_new_tokens) + DRAFT_ROOM, threads=threads)


class LlamaCppVerifier:
    """The target of ``decoding.SpeculativeDecoder`` on llama.cpp, for one sequence: ``feed`` a block of
    (pending + drafted) tokens, ``commit`` the accepted prefix of it (the rest is cropped)."""

    batch_size = 1

    def __init__(self, lm: LlamaCppLM):
        self.model = lm  # decoding.vocab_size reads model.config
        self.block = 0

    @property
    def length(self) -> int:
        return self.model.length

    def feed(self, ids: torch.Tensor, valid: torch.Tensor | None, keep: int) -> torch.Tensor:
        """``ids`` (1, K) -> logits (1, keep, V); padded or several rows are refused (one sequence per context)."""
        if ids.dim() != 2 or ids.shape[0] != 1 or valid is not None:
            raise ValueError(f"LlamaCppVerifier verifies one sequence per context: got ids of shape {tuple(ids.shape)}"
                             f"{' with padding' if valid is not None else ''}; use one prompt")
        self.block = ids.shape[1]
        return self.model.feed(ids[0], keep)[None]

    def commit(self, keep: list[int]) -> None:
        """Keep the first ``keep[0]`` positions of the last fed block."""
        if len(keep) != 1 or not 0 <= keep[0] <= self.block:
            raise ValueError(f"commit: one count in [0, {self.block}] expected, got {keep}")
        self.model.crop(self.model.length - self.block + keep[0])
        self.block = 0
