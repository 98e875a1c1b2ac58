"""Tiny stand-ins shared by unit tests: a random Llama pair that agrees often, and a character tokenizer."""
import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

V = 48


def llama(layers: int, seed: int = 0, d: int = 32) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=V, hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    return LlamaForCausalLM(cfg).eval()


def pair():
    """(draft, target): a 4-layer target and, as its draft, its own first 3 layers (they agree often)."""
    target = llama(4)
    draft = llama(3)
    draft.load_state_dict({k: v for k, v in target.state_dict().items() if "layers.3." not in k})
    return draft, target


class CharTokenizer:
    """Text -> the last ``keep`` characters' code points modulo the stand-ins' vocabulary."""
    eos_token_id = None

    def __init__(self, keep: int = 6):
        self.keep = keep

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [ord(ch) % V for ch in text][-self.keep:]}


class ConstantRule:
    """A stop rule (a classifier's ``predict``) that accepts every position (``True``) or none (``False``)."""

    def __init__(self, accept: bool):
        self.accept = accept

    def predict(self, x):
        return np.full(len(x), int(self.accept))
