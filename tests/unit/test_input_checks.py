"""Bad input to the decoders is refused at the door with a message that names it: text prompts, float
or out-of-range ids, and draft/target pairs with different vocabularies (which ran silently at T = 0
and crashed with a shape error at T = 1)."""
import copy

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specedge import decoding


def _tiny(vocab: int, seed: int = 0):
    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=2)).eval()


@pytest.fixture(scope="module")
def pair():
    return _tiny(64, 1), _tiny(64, 2)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_different_vocabularies_are_refused_naming_both_sizes(temperature):
    with pytest.raises(ValueError, match="draft 64 entries, target 80"):
        decoding.speculative_batch(_tiny(64), _tiny(80), [[1, 2, 3]], 4, temperature=temperature)


@pytest.mark.parametrize("prompt, error, words", [
    ("def f(x):", TypeError, "prompts\\[0\\] is text"),
    ([1.5, 2.0], TypeError, "must be integers"),
    (torch.tensor([1.0, 2.0]), TypeError, "must be integers"),
    ([1, 2, 64], ValueError, "must lie in \\[0, 64\\)"),
    ([-1, 2], ValueError, "must lie in \\[0, 64\\)"),
    ([], ValueError, "non-empty"),
])
def test_bad_prompts_are_refused_naming_the_prompt(pair, prompt, error, words):
    with pytest.raises(error, match=words):
        decoding.speculative_batch(*pair, [prompt], 4)


def test_one_text_prompt_instead_of_a_list_is_refused(pair):
    with pytest.raises(TypeError, match="a list of prompts"):
        decoding.speculative_batch(*pair, "def f(x):", 4)


def test_autoregressive_checks_its_prompt_too(pair):
    with pytest.raises(ValueError, match="must lie in"):
        decoding.autoregressive(pair[1], [5, 99], 3)


def test_valid_prompts_still_decode(pair):
    out = decoding.speculative_batch(*pair, [[1, 2, 3], torch.tensor([4, 5])], 5)
    ar = decoding.autoregressive(pair[1], [1, 2, 3], 5)
    assert out[0].tokens.tolist() == ar.tokens.tolist()


# --------------------------------------------------------------------------- padded vocabularies
def _trimmed(model, n: int):
    """A copy of ``model`` whose embedding and LM head keep only their first n rows."""
    trimmed = copy.deepcopy(model)
    trimmed.resize_token_embeddings(n)
    return trimmed


@pytest.fixture(scope="module")
def padded():
    """A draft padded to 64 rows and a target padded to 80 beyond a 60-token tokenizer."""
    return _tiny(64, 1), _tiny(80, 2)


def test_padded_vocabularies_are_cut_to_the_tokenizer(padded):
    draft, target = padded
    out = decoding.speculative(draft, target, [1, 2, 3], 12, tokenizer=60)
    same = decoding.speculative(_trimmed(draft, 60), _trimmed(target, 60), [1, 2, 3], 12)
    ar = decoding.autoregressive(target, [1, 2, 3], 12, tokenizer=60)
    assert out.tokens.tolist() == same.tokens.tolist() == ar.tokens.tolist()   # as if the padding were cut off
    sampled = decoding.speculative(draft, target, [1, 2, 3], 30, temperature=1.0, tokenizer=60)
    assert int(sampled.tokens.max()) < 60                                            # no padding id is emitted


def test_a_list_of_drafts_names_the_mismatched_one(pair):
    with pytest.raises(ValueError, match="draft\\[1\\] 80 entries, target 64"):
        decoding.check_vocabularies([pair[0], _tiny(80)], pair[1])
    assert decoding.check_vocabularies([pair[0], _tiny(80)], pair[1], tokenizer=60) == 60


def test_a_tokenizer_larger_than_a_model_is_refused(padded):
    with pytest.raises(ValueError, match="the tokenizer has 70 entries but the draft scores only 64"):
        decoding.speculative_batch(*padded, [[1, 2]], 4, tokenizer=70)


def test_prompts_are_checked_against_the_tokenizer_size(padded):
    with pytest.raises(ValueError, match="prompts\\[1\\]: token ids must lie in \\[0, 60\\)"):
        decoding.speculative_batch(*padded, [[1, 2], [3, 62]], 4, tokenizer=60)


class _CharTokenizer:
    """The two things the decoders use of a Hugging Face tokenizer: ``len`` and ``(text)["input_ids"]``."""

    def __len__(self):
        return 60

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [ord(c) % 60 for c in text]}


def test_text_prompts_are_encoded_with_the_tokenizer(pair):
    text = decoding.speculative_batch(*pair, ["def f(x):"], 5, tokenizer=_CharTokenizer())
    ids = decoding.speculative_batch(*pair, [[ord(c) % 60 for c in "def f(x):"]], 5, tokenizer=60)
    assert text[0].tokens.tolist() == ids[0].tokens.tolist()
