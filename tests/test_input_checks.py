"""Bad input to the decoders is refused at the door with a message that names it: text prompts, float
or out-of-range ids, and draft/target pairs with different vocabularies (which ran silently at T = 0
and crashed with a shape error at T = 1)."""
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
