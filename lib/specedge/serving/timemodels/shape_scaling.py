"""A dense transformer's per-token costs from its shape, and eq (19)'s coefficients carried between shapes.

A shape is a mapping with ``layers``, ``hidden``, ``heads``, ``kv_heads``, ``head_dim`` and ``intermediate``
(a model's config.json). ``linear_params`` are the weights every token passes through; ``scaling`` takes
eq (19)'s coefficients (li2026 Sec 4.4: a per new token, b_compute per query-key product, b_read per cached
token read, c per pass) from a measured shape to one the paper gives no coefficients for.
"""
from __future__ import annotations

from typing import Mapping

from .estimator import COEFFICIENTS


def linear_params(shape: Mapping) -> float:
    """Weights every token passes through per forward pass (projections + gated MLP, all layers)."""
    attn = shape["hidden"] * shape["head_dim"] * (2 * shape["heads"] + 2 * shape["kv_heads"])
    return shape["layers"] * (attn + 3 * shape["hidden"] * shape["intermediate"])


def weight_bytes(shape: Mapping, dtype_bytes: int = 2) -> float:
    """Bytes of the linear weights (``linear_params``) at ``dtype_bytes`` each (bf16: 2)."""
    return dtype_bytes * linear_params(shape)


def scaling(frm: Mapping, to: Mapping) -> dict[str, float]:
    """Factors taking eq (19)'s coefficients from shape ``frm`` to shape ``to``: a with the linear weights
    (FLOPs per token), b_compute with layers x query heads x head_dim (one query-key product per head),
    b_read with layers x KV heads x head_dim (KV bytes read per cached token), c with the layer count
    (kernel launches per pass)."""
    return {"a": linear_params(to) / linear_params(frm),
            "b_compute": (to["layers"] * to["heads"] * to["head_dim"]) / (frm["layers"] * frm["heads"] * frm["head_dim"]),
            "b_read": (to["layers"] * to["kv_heads"] * to["head_dim"]) / (frm["layers"] * frm["kv_heads"] * frm["head_dim"]),
            "c": to["layers"] / frm["layers"]}


def scale_coefficients(coefficients: Mapping[str, float], frm: Mapping, to: Mapping) -> dict[str, float]:
    """Eq (19)'s ``coefficients`` measured on shape ``frm``, carried to shape ``to`` (``scaling``)."""
    missing = sorted(set(COEFFICIENTS) - set(coefficients))
    if missing:
        raise ValueError(f"coefficients: missing {missing} (eq (19) needs {list(COEFFICIENTS)})")
    f = scaling(frm, to)
    return {k: float(coefficients[k]) * f[k] for k in COEFFICIENTS}
