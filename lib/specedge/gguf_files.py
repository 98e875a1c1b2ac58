"""GGUF files for the llama.cpp backend (``specedge.llamacpp``), with the ``gguf`` package (the ``realpair`` and
``llamacpp`` extras):

    ``write_llama_gguf(model, path)``: a transformers ``LlamaForCausalLM`` as an F32 GGUF of llama.cpp's
    ``llama`` architecture (q/k rows permuted to its rotary layout), with a placeholder vocabulary: a tiny
    model for the backend's tests, whose logits must equal the transformers model's.
    ``dequantize_gguf(src, dst)``: a copy of a quantized GGUF (the real pair's Q4_K_M) with every tensor
    dequantized to F32: the same weights specedge's float32 transformers models hold, on llama.cpp's kernels.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .llamacpp import _gguf_path

__all__ = ["write_llama_gguf", "dequantize_gguf"]


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """transformers' rotary layout (halves) -> llama.cpp's (interleaved pairs), rows of a q or k projection."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_llama_gguf(model, path) -> Path:
    """``model`` (a transformers ``LlamaForCausalLM``, e.g. a zoo model) as an F32 GGUF of architecture ``llama``,
    with a placeholder vocabulary ``<t0>``, ``<t1>``, ... (ids in, logits out: nothing is tokenized); a tied output
    layer is written as its own copy of the embedding."""
    import gguf

    c = model.config
    if c.model_type != "llama":
        raise ValueError(f"write_llama_gguf: a Llama model expected, got model_type {c.model_type!r}")
    heads, kv = c.num_attention_heads, c.num_key_value_heads
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // heads
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("specedge-tiny-llama")
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_dimension_count(head_dim)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(float(getattr(c, "rope_theta", None) or c.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_vocab_size(c.vocab_size)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"<t{i}>" for i in range(c.vocab_size)])
    w.add_token_scores([0.0] * c.vocab_size)
    w.add_token_types([gguf.TokenType.NORMAL] * c.vocab_size)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(False)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    sd.setdefault("lm_head.weight", sd.get("model.embed_tokens.weight"))  # tied: the embedding is the output layer
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(c.num_hidden_layers):
        for hf, gg in parts.items():
            names[f"model.layers.{i}.{hf}.weight"] = f"blk.{i}.{gg}.weight"
    missing = sorted(set(names) - set(sd))
    if missing:
        raise ValueError(f"write_llama_gguf: the model lacks {missing[:3]}")
    for hf, gg in names.items():
        t = sd[hf]
        if gg.endswith("attn_q.weight"):
            t = _permute(t, heads)
        elif gg.endswith("attn_k.weight"):
            t = _permute(t, kv)
        w.add_tensor(gg, np.ascontiguousarray(t, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def dequantize_gguf(src, dst, progress: bool = True) -> Path:
    """``src`` with every tensor dequantized to F32 (metadata copied, the file type set to F32), written to
    ``dst`` through a ``.partial`` file renamed when complete."""
    import gguf
    from tqdm.auto import tqdm

    src, dst = _gguf_path(src), Path(dst)
    reader = gguf.GGUFReader(str(src))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    partial = dst.with_name(dst.name + ".partial")
    w = gguf.GGUFWriter(str(partial), arch)
    try:
        for f in reader.fields.values():
            if f.name in (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.FILE_TYPE) or f.name.startswith("GGUF."):
                continue
            sub = f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
            w.add_key_value(f.name, f.contents(), f.types[0], sub_type=sub)
        w.add_file_type(gguf.LlamaFileType.ALL_F32)
        shapes = {}
        for t in reader.tensors:
            shape = tuple(int(d) for d in reversed(t.shape))   # numpy order
            shapes[t.name] = shape
            w.add_tensor_info(t.name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4,
                              raw_dtype=gguf.GGMLQuantizationType.F32)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        for t in tqdm(reader.tensors, desc=f"dequantizing {src.name}", disable=not progress):
            data = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
            w.write_tensor_data(np.ascontiguousarray(data.reshape(shapes[t.name])))
        w.close()
    except BaseException:
        w.close()
        partial.unlink(missing_ok=True)
        raise
    partial.replace(dst)
    return dst
