"""The llama.cpp backend (``specedge.llamacpp``).

Two parts. The adapter's own logic runs everywhere: a stand-in for the binding with its contract (``eval``
writes at ``n_tokens``, cells beyond ``n_tokens`` are dropped before new tokens go in, ``scores`` keeps every
position's logits) checks the cache arithmetic, the verifier's feed/commit and the errors. The binding's part
(``make test-llamacpp``) needs llama-cpp-python (``make llamacpp``) and the ``gguf`` package: a tiny random Llama
pair written as F32 GGUF files, whose llama.cpp logits must equal transformers' and whose greedy speculative
decoding must emit llama.cpp's own greedy AR tokens; and a zoo draft on llama.cpp drafting for the transformers
zoo target. Without the binding those tests are skipped with the reason
printed in pytest's summary (``-ra``), never silently; in ``make test-llamacpp`` (``SPECEDGE_LLAMACPP=required``)
they fail instead.
"""
from __future__ import annotations

import copy
import importlib.util
import os

import numpy as np
import pytest
import torch

from specedge import decoding, gguf_files, llamacpp, paths

HAVE_GGUF = importlib.util.find_spec("gguf") is not None
REQUIRED = os.environ.get("SPECEDGE_LLAMACPP") == "required"  # make test-llamacpp: a missing binding fails
needs_binding = pytest.mark.skipif(not REQUIRED and not (llamacpp.available() and HAVE_GGUF),
                                   reason=llamacpp.MISSING if not llamacpp.available()
                                   else "the gguf package is not installed (pip install -e '.[llamacpp]')")


# ------------------------------------------------------------------------------------------ the adapter's logic
class FakeLlama:
    """The binding's contract on a toy model: position t's logits are a fixed function of tokens 0..t."""

    def __init__(self, vocab: int = 11, n_ctx: int = 32):
        self._vocab, self._ctx = vocab, n_ctx
        self.input_ids = np.zeros(n_ctx, dtype=np.int64)
        self.scores = np.zeros((n_ctx, vocab), dtype=np.float32)
        self.n_tokens = 0
        self.evals = []

    def n_vocab(self):
        return self._vocab

    def n_ctx(self):
        return self._ctx

    def reset(self):
        self.n_tokens = 0

    def eval(self, tokens):
        self.evals.append(list(tokens))
        for t in tokens:  # cells beyond n_tokens are overwritten, as llama.cpp's seq_rm + decode does
            self.input_ids[self.n_tokens] = t
            h = (self.input_ids[: self.n_tokens + 1] * (np.arange(self.n_tokens + 1) + 3)).sum()
            self.scores[self.n_tokens] = np.cos(np.arange(self._vocab) * 0.7 + h * 0.37)
            self.n_tokens += 1


def _fake_lm(**kw):
    return llamacpp.LlamaCppLM(FakeLlama(**kw))


def test_feed_returns_the_last_positions_and_crop_rolls_back():
    lm = _fake_lm()
    whole = lm.feed(torch.tensor([1, 2, 3, 4, 5]), keep=5)
    assert whole.shape == (5, 11) and whole.dtype == torch.float32 and lm.length == 5
    last = lm.feed(torch.tensor([6, 7]), keep=1)
    assert last.shape == (1, 11) and torch.equal(last, torch.from_numpy(lm.llama.scores[6:7]))
    lm.crop(3)  # forget 4, 5, 6, 7: feeding them again gives the first run's logits
    assert lm.length == 3
    again = lm.feed(torch.tensor([4, 5]), keep=2)
    assert torch.equal(again, whole[3:5])
    lm.crop(10)  # beyond the length: nothing happens
    assert lm.length == 5
    lm.reset()
    assert lm.length == 0 and torch.equal(lm.feed(torch.tensor([1]), keep=1), whole[:1])


def test_feed_refuses_what_the_context_cannot_take():
    lm = _fake_lm(vocab=5, n_ctx=4)
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 5\)"):
        lm.feed(torch.tensor([1, 5]))
    with pytest.raises(ValueError, match="keep must lie in"):
        lm.feed(torch.tensor([1, 2]), keep=3)
    with pytest.raises(ValueError, match="at least one token"):
        lm.feed(torch.tensor([], dtype=torch.long))
    lm.feed(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="exceed the context of 4"):
        lm.feed(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="length must be >= 0"):
        lm.crop(-1)
    assert lm.length == 3  # refused calls changed nothing


def test_verifier_commits_the_accepted_prefix_and_refuses_several_rows():
    lm = _fake_lm()
    v = llamacpp.LlamaCppVerifier(lm)
    assert decoding.vocab_size(v) == 11
    lm.feed(torch.tensor([1, 2, 3]))
    out = v.feed(torch.tensor([[4, 5, 6, 7]]), None, keep=4)
    assert out.shape == (1, 4, 11) and v.length == 7
    v.commit([2])  # 4, 5 kept; 6, 7 rejected
    assert v.length == 5
    with pytest.raises(ValueError, match="one count"):
        v.commit([5])
    with pytest.raises(ValueError, match="one sequence per context"):
        v.feed(torch.tensor([[1, 2], [3, 4]]), None, keep=1)
    with pytest.raises(ValueError, match="with padding"):
        v.feed(torch.tensor([[1, 2]]), torch.tensor([[True, False]]), keep=1)


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_speculative_on_the_adapter_equals_its_autoregressive(gamma):
    """The decoder's cache arithmetic through the adapter: a draft that mostly agrees with the target (the same
    toy) except where a perturbation flips it; SD's tokens must be AR's, and the target never sees a token twice
    beyond what the rounds crop."""
    prompt = torch.tensor([3, 1, 4, 1, 5])
    ar = decoding.autoregressive(llamacpp.LlamaCppLM(FakeLlama(n_ctx=64)), prompt, 20).tokens

    class Noisy(FakeLlama):
        def eval(self, tokens):
            super().eval(tokens)
            self.scores[self.n_tokens - 1, (self.n_tokens * 5) % 11] += 1.5 * (self.n_tokens % 3 == 0)

    target = FakeLlama(n_ctx=64)
    out = decoding.speculative(llamacpp.LlamaCppLM(Noisy(n_ctx=64)), llamacpp.LlamaCppVerifier(llamacpp.LlamaCppLM(target)),
                               prompt, 20, gamma=gamma)
    assert torch.equal(out.tokens, ar)
    assert 0 < sum(out.accepted) < sum(out.drafted)  # both verdicts occurred
    assert sum(len(e) for e in target.evals) == len(prompt) + sum(out.drafted) + len(out.rounds) - 1


def test_permute_interleaves_the_rotary_halves():
    """Row i of a head's first half and row i of its second half become neighbours 2i, 2i + 1."""
    d, heads = 8, 2
    w = np.arange(heads * d)[:, None].astype(np.float32)
    p = gguf_files._permute(w, heads)[:, 0]
    assert p[:d].tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    assert p[d:].tolist() == [8, 12, 9, 13, 10, 14, 11, 15]


def test_load_refuses_bad_paths_before_the_binding(tmp_path):
    with pytest.raises(ValueError, match="a .gguf file expected"):
        llamacpp.load(tmp_path / "model.bin")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        llamacpp.load(tmp_path / "model.gguf")
    (tmp_path / "model.gguf").write_bytes(b"")
    with pytest.raises(ValueError, match="threads must be"):
        llamacpp.load(tmp_path / "model.gguf", threads=0)
    for bad in (1, 2.5, True):
        with pytest.raises(ValueError, match="n_ctx must be an integer >= 2"):
            llamacpp.load(tmp_path / "model.gguf", n_ctx=bad)


def test_load_without_the_binding_says_how_to_build_it(tmp_path, monkeypatch):
    (tmp_path / "model.gguf").write_bytes(b"")
    monkeypatch.setattr(llamacpp, "available", lambda: False)
    for call in (lambda: llamacpp.load(tmp_path / "model.gguf"), lambda: llamacpp.check_drafter(tmp_path / "model.gguf"),
                 lambda: llamacpp.drafter_lm(tmp_path / "model.gguf", 8, 48)):
        with pytest.raises(ImportError, match="make llamacpp"):
            call()


def test_an_edge_drafters_file_is_refused_before_any_process_starts(tmp_path, monkeypatch):
    """``run_real(draft_gguf=)`` checks the file and the binding first: no server, no drafter process."""
    from specedge.serving.policies.allocation import FixedS
    from specedge.serving.policies.batching import SyncRounds
    from specedge.serving.real.run import run_real
    from specedge.serving.workload import ClientSpec, Workload

    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 4),), capacity=2)
    started = []
    monkeypatch.setattr("specedge.serving.real.run._run_real", lambda *a, **k: started.append(1))
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'none.gguf'} does not exist"):
        run_real(wl, SyncRounds(), FixedS(2, 1), draft_gguf=tmp_path / "none.gguf")
    with pytest.raises(ValueError, match="a .gguf file expected"):
        run_real(wl, SyncRounds(), FixedS(2, 1), draft_gguf=tmp_path / "draft.bin")
    (tmp_path / "draft.gguf").write_bytes(b"")
    monkeypatch.setattr(llamacpp, "available", lambda: False)
    with pytest.raises(ImportError, match="make llamacpp"):
        run_real(wl, SyncRounds(), FixedS(2, 1), draft_gguf=tmp_path / "draft.gguf")
    assert not started
    monkeypatch.setattr(llamacpp, "available", lambda: True)
    run_real(wl, SyncRounds(), FixedS(2, 1), draft_gguf=tmp_path / "draft.gguf", check_mem=False)
    assert started == [1]


# ------------------------------------------------------------------------------------------ the binding (tiny GGUF)
def tiny_pair(seed: int = 0, vocab: int = 96, hidden: int = 64, layers: int = 3):
    """A random Llama target (grouped-query attention) whose later layers barely move the residual stream, and
    a draft made of its first layer: drafts agree often, not always."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         tie_word_embeddings=False)
    target = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(8)
        for layer in target.model.layers[1:]:
            layer.self_attn.o_proj.weight.mul_(0.05)
            layer.mlp.down_proj.weight.mul_(0.05)
    dc = copy.deepcopy(config)
    dc.num_hidden_layers = 1
    draft = LlamaForCausalLM(dc).eval()
    draft.load_state_dict({k: v for k, v in target.state_dict().items()
                           if not k.startswith("model.layers.") or k.startswith("model.layers.0.")})
    return draft, target


@pytest.fixture(scope="module")
def ggufs(tmp_path_factory):
    draft, target = tiny_pair()
    root = tmp_path_factory.mktemp("gguf")
    return (draft, target, gguf_files.write_llama_gguf(draft, root / "draft.gguf"),
            gguf_files.write_llama_gguf(target, root / "target.gguf"))


PROMPT = torch.tensor([5, 17, 42, 8, 77, 3, 61, 29])


@needs_binding
def test_llamacpp_logits_equal_transformers(ggufs):
    """The written GGUF is the same model: llama.cpp's logits at every prompt position are transformers', to the
    rounding of llama.cpp's float16 KV cache (2^-11 relative per cached element; 2e-4 of the largest logit seen)."""
    _, target, _, path = ggufs
    lm = llamacpp.LlamaCppLM(path, n_ctx=64)
    ours = lm.feed(PROMPT, keep=len(PROMPT))
    with torch.inference_mode():
        ref = target(PROMPT[None]).logits[0]
    scale = ref.abs().max().item()
    assert torch.allclose(ours, ref, atol=1e-3 * scale, rtol=0), (ours - ref).abs().max()
    assert torch.equal(ours.argmax(-1), ref.argmax(-1))


@needs_binding
def test_llamacpp_k_token_pass_crop_and_refeed(ggufs):
    """Logits of a k-token pass equal k one-token steps (to float rounding); a crop then a refeed reproduces
    them: the rollback leaves no stale KV cell behind."""
    *_, path = ggufs
    lm = llamacpp.LlamaCppLM(path, n_ctx=64)
    lm.feed(PROMPT[:4])
    block = lm.feed(PROMPT[4:], keep=4)
    lm.crop(4)
    steps = torch.cat([lm.feed(PROMPT[i: i + 1]) for i in range(4, 8)])
    assert torch.allclose(block, steps, atol=1e-4 * block.abs().max().item(), rtol=0)
    lm.crop(4)
    lm.feed(torch.tensor([1, 2, 3]))  # a rejected continuation, then the real one
    lm.crop(4)
    assert torch.allclose(lm.feed(PROMPT[4:], keep=4), block, atol=1e-5 * block.abs().max().item(), rtol=0)


@needs_binding
@pytest.mark.parametrize("gamma", [1, 2, 4])
def test_llamacpp_greedy_speculative_equals_its_autoregressive(ggufs, gamma):
    _, _, dpath, tpath = ggufs
    ar = decoding.autoregressive(llamacpp.LlamaCppLM(tpath, n_ctx=128), PROMPT, 40).tokens
    out = decoding.speculative(llamacpp.LlamaCppLM(dpath, n_ctx=128),
                               llamacpp.LlamaCppVerifier(llamacpp.LlamaCppLM(tpath, n_ctx=128)), PROMPT, 40, gamma=gamma)
    assert torch.equal(out.tokens, ar)
    assert 0 < sum(out.accepted) < sum(out.drafted)  # both verdicts occurred


@needs_binding
def test_dequantized_copy_keeps_the_model(ggufs, tmp_path):
    """``dequantize_gguf`` on an F32 file is the identity on the logits (metadata and tensors carried over)."""
    *_, path = ggufs
    out = gguf_files.dequantize_gguf(path, tmp_path / "copy.gguf", progress=False)
    a = llamacpp.LlamaCppLM(path, n_ctx=32).feed(PROMPT, keep=8)
    b = llamacpp.LlamaCppLM(out, n_ctx=32).feed(PROMPT, keep=8)
    assert torch.equal(a, b)


HAVE_ZOO = (paths.ZOO / "draft-xs").is_dir() and (paths.ZOO / "target-m").is_dir()


@needs_binding
@pytest.mark.skipif(not HAVE_ZOO, reason="no zoo checkpoints (data/zoo/draft-xs, target-m)")
def test_a_zoo_draft_on_llamacpp_drafts_for_the_transformers_target(tmp_path):
    """A zoo draft (tied output layer) written as GGUF gives the zoo model's logits on llama.cpp, and drafting on
    llama.cpp for the transformers target emits exactly the target's greedy AR tokens: mixed backends, one loop."""
    from specedge import zoo

    draft, target = zoo.load_model("draft-xs"), zoo.load_model("target-m")
    path = gguf_files.write_llama_gguf(draft, tmp_path / "draft-xs.gguf")
    text = zoo.eval_prompts("code", 1)[0]
    prompt = torch.tensor(zoo.tokenizer_for("draft-xs")(text, add_special_tokens=False)["input_ids"][-48:])
    ours = llamacpp.LlamaCppLM(path, n_ctx=128).feed(prompt, keep=len(prompt))
    with torch.inference_mode():
        ref = draft(prompt[None]).logits[0]
    assert torch.allclose(ours, ref, atol=1e-3 * ref.abs().max().item(), rtol=0), (ours - ref).abs().max()
    ar = decoding.autoregressive(target, prompt, 40).tokens
    out = decoding.speculative(llamacpp.LlamaCppLM(path, n_ctx=128), target, prompt, 40, gamma=3)
    assert torch.equal(out.tokens, ar)
    assert 0 < sum(out.accepted) < sum(out.drafted)


@needs_binding
@pytest.mark.skipif(not HAVE_ZOO, reason="no zoo checkpoints (data/zoo/draft-xs, target-m)")
def test_an_edge_drafter_on_llamacpp_against_the_verifier_emits_the_targets_greedy_tokens(tmp_path):
    """The serving drafter with a llama.cpp runner (one context, emptied for each prompt) against the verification
    server's verifier: every prompt's output is the transformers target's greedy AR."""
    from specedge import zoo
    from specedge.serving.real.drafter import Drafter
    from specedge.serving.real.verifier import Verifier

    draft, target = zoo.load_model("draft-xs"), zoo.load_model("target-m")
    lm = llamacpp.LlamaCppLM(gguf_files.write_llama_gguf(draft, tmp_path / "draft-xs.gguf"), n_ctx=128)
    tok = zoo.tokenizer_for("draft-xs")
    verifier, accepted = Verifier(target), 0
    for k, text in enumerate(zoo.eval_prompts("code", 2)):
        prompt = tok(text, add_special_tokens=False)["input_ids"][-48:]
        d = Drafter(lm, prompt, 24, f"s{k}")
        while not d.done:
            req, _ = d.propose(3)
            res = verifier.verify([req])[0]
            accepted += res.accepted
            d.commit(res)
        assert d.output == decoding.autoregressive(target, torch.tensor(prompt), 24).tokens.tolist()
    assert accepted > 0


@needs_binding
def test_a_drafter_context_has_room_for_its_prompt_tokens_and_drafts(ggufs):
    *_, path = ggufs
    lm = llamacpp.drafter_lm(path, max_new_tokens=20, prompt_tokens=48)
    assert lm.n_ctx >= 48 + 20 + llamacpp.DRAFT_ROOM and lm.length == 0   # llama.cpp rounds n_ctx up (to 256)
    assert llamacpp.check_drafter(path) == path


def test_the_drafter_cli_refuses_a_llamacpp_backend_without_its_file(tmp_path, capsys):
    from specedge.serving.__main__ import main

    for argv, says in [(["--backend", "llamacpp"], "--backend llamacpp needs --gguf"),
                       (["--backend", "llamacpp", "--gguf", str(tmp_path / "none.gguf")], "an existing .gguf file"),
                       (["--gguf", str(tmp_path / "none.gguf")], "--gguf is read with --backend llamacpp only")]:
        with pytest.raises(SystemExit) as exit_:
            main(["drafter", "--port", "1", *argv])
        assert exit_.value.code == 2 and says in capsys.readouterr().err
