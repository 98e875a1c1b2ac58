"""Fixed-window speculative-decoding traces of the zoo (li2026's dataset source): ``generate_traces``,
the zoo prompts they are made from, the committed file ``TRACES / li2026_traces.csv.gz``
(``load_trace_data``), and the per-position acceptance measured on them. The real pair's traces
(Qwen2.5-Coder 0.5B drafting for 1.5B, written by ``experiments.model_zoo.realpair_card live``) have the same
columns and more: ``load_realpair_traces``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .. import paths, sampling, zoo
from .dataset import STATS

TRACES = paths.DATA / "traces"
REALPAIR_TRACES = TRACES / "realpair_traces.csv.gz"


# --------------------------------------------------------------------------- traces and pipeline
TRACE_COLUMNS = ["draft", "target", "domain", "temperature", "prompt", "round", "i", "drafted",
                 *STATS, "q", "p", "accepted", "first_rejected", "round_accepted"]


def generate_traces(draft_model, target_model, prompts: dict, *, window: int = 8,
                    temperatures=(0.0, 1.0), max_new_tokens: int = 48, seed: int = 0,
                    progress: bool = True, **columns) -> pd.DataFrame:
    """Fixed-window speculative-decoding traces (one row per drafted position) for the dataset.

    ``prompts`` maps a domain to a list of token-id prompts; each domain's prompts are decoded as
    one batch (``decoding.speculative_batch``: one batched target pass per round). ``columns`` are
    constants (e.g. ``draft="d1", target="t1"``). Timing columns are dropped: the committed traces
    must not change between runs.
    """
    from tqdm.auto import tqdm

    from .. import decoding

    frames = []
    jobs = [(d, t) for d in prompts for t in temperatures]
    for domain, temp in tqdm(jobs, desc=f"traces {columns.get('draft', '')}", disable=not progress):
        gens = decoding.speculative_batch(draft_model, target_model, prompts[domain], max_new_tokens,
                                          gamma=window, temperature=temp, seed=seed)
        for j, g in enumerate(gens):
            frames.append(decoding.traces_frame(g.rounds, domain=domain, temperature=float(temp),
                                                prompt=j))
    out = pd.concat(frames, ignore_index=True)
    for name, value in columns.items():
        out[name] = value
    return out[[c for c in TRACE_COLUMNS if c in out]]


def position_acceptance(traces: pd.DataFrame, k_max: int) -> np.ndarray:
    """Per-position conditional acceptance α_i = P(i accepted | 1..i-1 accepted), i = 1..k_max, of the
    fixed-window rounds (those that drafted the full window): ``sampling.per_position_acceptance`` on
    each round's accepted count."""
    full = traces[traces["drafted"] == k_max]
    keys = [c for c in ("draft", "target", "domain", "temperature", "prompt", "round") if c in full]
    accepted = full.groupby(keys, sort=False)["round_accepted"].first().to_numpy()
    out = np.full(k_max, np.nan)
    if len(accepted):
        out[:] = sampling.per_position_acceptance(accepted, np.full(len(accepted), k_max))
    return out


def _encode(tokenizer, text) -> list[int]:
    # the zoo was trained on plain text without special tokens (zoo.load_tokenizer)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def zoo_prompts(tokenizer, domains, n: int, max_len: int = 96, offset: int = 0) -> dict[str, list]:
    """Token-id prompts of the zoo's eval split (prompt text only; truncated to the last ``max_len``)."""
    from .. import zoo

    out = {}
    for d in domains:
        texts = zoo.eval_prompts(d, n + offset)[offset:]
        out[d] = [torch.tensor(_encode(tokenizer, t)[-max_len:], dtype=torch.long) for t in texts]
    return out


def _write_gz_csv(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, float_format="%.6g", lineterminator="\n",
                 compression={"method": "gzip", "mtime": 0})
    return path


def load_trace_data(path: Path | None = None) -> pd.DataFrame:
    """The committed traces (``data/traces/li2026_traces.csv.gz``)."""
    return pd.read_csv(path or TRACES / "li2026_traces.csv.gz")


def load_realpair_traces(path: Path | None = None) -> pd.DataFrame:
    """The real pair's committed traces (``data/traces/realpair_traces.csv.gz``) with ``draft`` and
    ``target`` named (``zoo.REAL``), so they read like the zoo's; a missing file names its command."""
    from ..zoo import REAL

    path = Path(path or REALPAIR_TRACES)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: `python -m specedge.experiments.model_zoo.realpair_card live` writes it "
                                "(needs `make realpair`)")
    out = pd.read_csv(path)
    missing = [c for c in TRACE_COLUMNS if c not in out and c not in ("draft", "target")]
    if missing:
        raise ValueError(f"{path}: missing trace columns {missing}")
    return out.assign(draft=REAL[0], target=REAL[1])


def draft_order(traces: pd.DataFrame) -> list[str]:
    """The traces' drafts, the zoo's smallest first."""
    present = list(dict.fromkeys(traces["draft"]))
    return [d for d in zoo.DRAFTS if d in present] + sorted(set(present) - set(zoo.DRAFTS))
