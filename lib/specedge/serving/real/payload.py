"""Uplink payload of one drafted token's distribution on this system's wire (``codec``), beside TK-SLT's count.

``wire_kbit`` sizes the serialized ``DraftDistribution`` message (float32 values, or the FP16 values the paper
simulates); ``wire_frame`` tabulates it per vocabulary and top-K with the paper's count of eq (2) (zheng2025).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...solvers import zheng2025 as tkslt

WIRE_VALUES = ("float32", "float16")   # the real system's codec, and the FP16 option of the paper's simulation


def wire_kbit(vocab: int, k: int | None, values: str = "float32") -> float:
    """One drafted token's distribution serialized as our drafter's ``DraftDistribution`` (``serving.real.codec``:
    int32 indices for top-K), in kbit, with float32 values (the real system's wire) or the same message with
    FP16 values (``values="float16"``: the paper simulates FP16 logits, Sec VI-B)."""
    import torch

    from . import codec

    if values not in WIRE_VALUES:
        raise ValueError(f"values must be one of {WIRE_VALUES}, got {values!r}")
    msg = codec.encode_distribution(torch.full((1, vocab), 1.0 / vocab), k, vocab)
    if values == "float16":
        msg.probs = np.frombuffer(msg.probs, dtype=np.float32).astype(np.float16).tobytes()
    return 8 * len(msg.SerializeToString()) / 1e3


def wire_frame(vocabs, ks=(*tkslt.PAPER_K, None)) -> pd.DataFrame:
    """kbit per drafted token for each vocabulary and top-K (None: dense) below it: our wire with float32 values
    (``kbit``, the real system's) and with FP16 values (``kbit_fp16``), and the paper's count of eq (2), K FP16
    values with the indices neglected (``kbit_paper_count``)."""
    return pd.DataFrame([dict(vocab=v, K="dense" if k is None else k, kbit=wire_kbit(v, k),
                              kbit_fp16=wire_kbit(v, k, "float16"),
                              kbit_paper_count=float(tkslt.payload_bits(v if k is None else k, v)) / 1e3)
                         for v in vocabs for k in ks if k is None or k < v])
