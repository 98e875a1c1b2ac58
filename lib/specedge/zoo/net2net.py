"""Function-preserving widening of a Llama checkpoint: the zoo's distributions at a paper-size cost.

The zoo targets are a few million parameters, so on a CPU a forward pass is ~1 ms of framework
overhead and a (γ + 1)-token verification costs more than one decoding step — the opposite of the
memory-bound regime speculative decoding is designed for. :func:`widen` embeds a trained model in a
larger Llama (more hidden units, heads, MLP units and layers) whose extra weights cannot reach the
logits, Net2Net-style:

- the residual stream is zero-padded from ``d`` to ``D`` dimensions: the embedding's extra columns
  and every ``o_proj`` / ``down_proj`` output row beyond ``d`` are zero, so the padding stays zero;
- RMSNorm over ``D`` dimensions of a zero-padded vector divides by ``sqrt(d/D)`` times the original
  RMS: the norm weights are scaled by ``sqrt(d/D)`` and ``rms_norm_eps`` by ``d/D``, which makes it
  exact;
- the extra attention heads (same ``head_dim``, so RoPE is unchanged) and extra MLP units get random
  weights, but their ``o_proj`` / ``down_proj`` columns are zero; the extra layers are whole residual
  identities (``o_proj`` and ``down_proj`` zero).

Dense kernels do not skip zeros, so the widened model costs what a model of its shape costs, while
its logits equal the original's up to float rounding (the sums run over more, zero, terms). Used by
the decoding benchmark (``benchmarks/bench_decoding.py --widen``).
"""
from __future__ import annotations

import copy

import torch

__all__ = ["widen"]

_OUT = ("self_attn.o_proj", "mlp.down_proj")  # the projections that write into the residual stream


def widen(model, hidden_size: int, intermediate_size: int, num_hidden_layers: int, *, seed: int = 0):
    """A ``LlamaForCausalLM`` of the given shape that computes ``model``'s logits (to float rounding).

    ``hidden_size`` must be a multiple of the model's ``head_dim`` and every size at least the
    model's own; the key/value grouping (heads per KV head) is kept. Same dtype as ``model``.
    """
    from transformers import LlamaForCausalLM

    c = model.config
    d, hd = c.hidden_size, getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    group = c.num_attention_heads // c.num_key_value_heads
    for name, new, old in [("hidden_size", hidden_size, d), ("intermediate_size", intermediate_size, c.intermediate_size),
                           ("num_hidden_layers", num_hidden_layers, c.num_hidden_layers)]:
        if not isinstance(new, int) or new < old:
            raise ValueError(f"widen: {name} must be an int >= the model's {old}, got {new!r}")
    if hidden_size % (hd * group):
        raise ValueError(f"widen: hidden_size must be a multiple of head_dim x heads per KV head = {hd * group}, "
                         f"got {hidden_size}")
    cfg = copy.deepcopy(c)
    cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers = hidden_size, intermediate_size, num_hidden_layers
    cfg.head_dim, cfg.num_attention_heads = hd, hidden_size // hd
    cfg.num_key_value_heads = cfg.num_attention_heads // group
    cfg.rms_norm_eps = c.rms_norm_eps * d / hidden_size
    if getattr(cfg, "layer_types", None) is not None:
        cfg.layer_types = (list(cfg.layer_types) + [cfg.layer_types[-1]] * num_hidden_layers)[:num_hidden_layers]
    torch.manual_seed(seed)
    big = LlamaForCausalLM(cfg).to(model.dtype).eval()
    src = model.state_dict()
    scale = (d / hidden_size) ** 0.5
    with torch.no_grad():
        for name, p in big.named_parameters():
            if name.rsplit(".", 1)[0].endswith(_OUT):
                p.zero_()
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            if name == "model.embed_tokens.weight" or name == "lm_head.weight":
                p[:, d:] = 0
            w = src.get(name)
            if w is None:
                continue
            p[tuple(slice(0, n) for n in w.shape)] = w * scale if name.endswith("norm.weight") else w
    return big
