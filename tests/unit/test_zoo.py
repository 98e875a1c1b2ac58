"""The embedded model zoo: loading (zoo name, local dir, hub id), corpus split, sizes, cards."""
import shutil

import pytest
import torch

from specedge import paths, zoo
from specedge.zoo import net2net
from specedge.zoo import corpus, train

MODELS = zoo.TARGETS + zoo.DRAFTS
CARD_KEYS = {"parameters", "training_tokens", "heldout_loss_nats", "train_wall_s", "device"}


def _fake_hub_cache(root, repo_id, src):
    """Lay ``src`` out as the Hugging Face hub cache does: models--org--name/snapshots/<rev>/."""
    rev = "0" * 40
    base = root / ("models--" + repo_id.replace("/", "--"))
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(rev)
    shutil.copytree(src, base / "snapshots" / rev)
    return root


def test_hub_id_loads_from_local_cache(tmp_path):
    cache = _fake_hub_cache(tmp_path, "specedge/draft-xs", paths.ZOO / "draft-xs")
    assert zoo.resolve("specedge/draft-xs")[0] == "hub"
    via_hub = zoo.load_model("specedge/draft-xs", cache_dir=cache)
    via_zoo = zoo.load_model("draft-xs")
    x = torch.tensor([[5, 17, 300, 42]])
    with torch.no_grad():
        torch.testing.assert_close(via_hub(input_ids=x).logits, via_zoo(input_ids=x).logits)


def test_unknown_hub_id_fails_naming_it(tmp_path):
    with pytest.raises(OSError, match="no model hub is reachable") as err:
        zoo.load_model("nobody-here/no-such-model-7b", cache_dir=tmp_path)
    assert "nobody-here/no-such-model-7b" in str(err.value)
    assert "draft-xs" in str(err.value)   # lists the zoo names


def test_local_directory_and_pair(tmp_path):
    shutil.copytree(paths.ZOO / "draft-s", tmp_path / "mine")
    assert zoo.resolve(tmp_path / "mine")[0] == "local"
    d, t, tok = zoo.load_pair(str(tmp_path / "mine"), zoo.TARGETS[0])
    assert d.config.vocab_size == t.config.vocab_size == len(tok)


@pytest.mark.parametrize("text", ["def f(x):\n    return x + 1\n", "SELECT name FROM singer WHERE age > 30;",
                                  "Ünïcödé — 東京 🙂 tabs\tand  spaces", ""])
def test_tokenizer_round_trip(text):
    tok = zoo.load_tokenizer()
    assert tok.decode(tok(text)["input_ids"]) == text
    assert 7000 <= len(tok) <= 9000
    assert None not in (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)


def test_heldout_prompts_disjoint_from_training():
    train_prompts = {r["prompt"] for r in corpus.load("train")}
    assert len(corpus.DOMAINS) >= 6
    for d in corpus.DOMAINS:
        ev = zoo.eval_prompts(d)
        assert len(ev) >= 50, d
        assert not set(ev) & train_prompts, d
        assert zoo.eval_prompts(d, 3) == ev[:3]


def test_sizes_cards_and_budget():
    assert len(zoo.TARGETS) >= 2 and len(zoo.DRAFTS) >= 4
    params = {m: zoo.model_card(m)["parameters"] for m in MODELS}
    drafts = [params[m] for m in zoo.DRAFTS]
    assert drafts == sorted(drafts) and len(set(drafts)) == len(drafts)   # increasing size
    assert len({params[m] for m in zoo.TARGETS}) == len(zoo.TARGETS)
    assert max(drafts) < min(params[m] for m in zoo.TARGETS)
    total = 0
    for m in MODELS:
        card = zoo.model_card(m)
        assert CARD_KEYS <= card.keys(), m
        assert set(card["heldout_loss_nats"]) == set(corpus.DOMAINS)
        assert (paths.ZOO / m / "README.md").exists()
        assert not list((paths.ZOO / m).glob("*.bin")) and not list((paths.ZOO / m).glob("*.pt"))
        total += sum(f.stat().st_size for f in (paths.ZOO / m).iterdir())
    assert total <= 40 * 2**20


@pytest.mark.parametrize("name", MODELS)
def test_logits_finite(name):
    tok = zoo.load_tokenizer()
    ids = torch.tensor([tok(zoo.eval_prompts("math", 1)[0])["input_ids"]])
    with torch.no_grad():
        logits = zoo.load_model(name)(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], tok.vocab_size) or logits.shape[-1] == len(tok)
    assert torch.isfinite(logits).all()


def test_training_resumes_to_the_same_weights(tmp_path, monkeypatch):
    """An interrupted run resumed from its checkpoint ends where an uninterrupted one does."""
    torch.manual_seed(0)
    stream = torch.randint(0, train.VOCAB_SIZE, (4000,)).numpy()
    spec = train.Spec("t", "target", hidden=16, layers=1, heads=2, intermediate=32, tokens=6 * 2 * 16,
                      lr=1e-2, stands_in_for="test", seq_len=16, batch=2)
    monkeypatch.setattr(train, "CHECKPOINT_EVERY_S", -1.0)   # checkpoint after every step
    monkeypatch.setattr(train, "WORK", tmp_path / "a")
    [(ref, _)] = train.train([spec], stream)

    monkeypatch.setattr(train, "WORK", tmp_path / "b")
    real = train.batch_at

    def crash_at_3(s, sp, step):
        if step == 3:
            raise KeyboardInterrupt
        return real(s, sp, step)
    monkeypatch.setattr(train, "batch_at", crash_at_3)
    with pytest.raises(KeyboardInterrupt):
        train.train([spec], stream)
    monkeypatch.setattr(train, "batch_at", real)
    [(resumed, state)] = train.train([spec], stream)
    assert state["step"] == 6
    for (k, a), b in zip(ref.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(a, b, msg=k)


# --------------------------------------------------------------------------- widen (Net2Net padding)
def _gqa_llama(seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False,
                      max_position_embeddings=128)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # trained-looking norms, so their rescaling is exercised
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
    return model


@pytest.mark.parametrize("make, shape", [
    (lambda: zoo.load_model("target-l"), (320, 640, 6)),   # tied embeddings, MHA
    (_gqa_llama, (64, 96, 3)),                               # untied head, 2 heads per KV head
])
def test_widen_keeps_the_logits_and_costs_its_shape(make, shape):
    from specedge import decoding
    small = make()
    big = net2net.widen(small, *shape)
    c = big.config
    assert (c.hidden_size, c.intermediate_size, c.num_hidden_layers) == shape
    assert c.num_attention_heads // c.num_key_value_heads == (
        small.config.num_attention_heads // small.config.num_key_value_heads)
    assert sum(p.numel() for p in big.parameters()) > 2 * sum(p.numel() for p in small.parameters())
    ids = torch.randint(0, small.config.vocab_size, (2, 30), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        a, b = small(ids).logits, big(ids).logits
        torch.testing.assert_close(b, a, atol=1e-4, rtol=0)
        assert torch.equal(decoding.autoregressive(big, ids[0], 12).tokens,
                           decoding.autoregressive(small, ids[0], 12).tokens)
    # the extra weights are not all zero: the widened model really computes at its size
    assert big.model.layers[-1].self_attn.q_proj.weight.abs().sum() > 0


def test_widen_rejects_bad_shapes():
    small = _gqa_llama()
    with pytest.raises(ValueError, match="hidden_size"):
        net2net.widen(small, 16, 96, 3)                  # smaller than the model's 32
    with pytest.raises(ValueError, match="multiple of head_dim"):
        net2net.widen(small, 40, 96, 3)                  # 40 is not a multiple of 8 x 2
    with pytest.raises(ValueError, match="num_hidden_layers"):
        net2net.widen(small, 64, 96, 1)


def test_a_missing_zoo_checkpoint_is_an_error_naming_the_file_and_make_target(tmp_path, monkeypatch):
    from specedge import paths
    from specedge.serving.sim.twin import TraceAcceptance
    monkeypatch.setattr(paths, "ZOO", tmp_path)           # an empty zoo directory
    with pytest.raises(FileNotFoundError, match=r"target-m is missing.*make zoo"):
        zoo.load_model("target-m")
    with pytest.raises(FileNotFoundError, match="make zoo"):
        zoo.load_tokenizer()
    with pytest.raises(FileNotFoundError, match="make zoo"):
        TraceAcceptance(tmp_path / "li2026_traces.csv.gz")


def test_eval_sequences_are_prompt_plus_completion_cut_to_max_tokens():
    tok = zoo.load_tokenizer()
    seqs = zoo.eval_sequences(tok, ["code", "qa"], 2, max_tokens=16)
    recs = zoo.eval_records("code", 2) + zoo.eval_records("qa", 2)
    assert len(seqs) == 4 and all(0 < len(s) <= 16 for s in seqs)
    assert seqs[0] == tok(recs[0]["prompt"] + recs[0]["completion"], add_special_tokens=False)["input_ids"][:16]


def test_realpair_records_and_committed_measurements():
    from specedge.zoo import realpair

    class Template:
        def apply_chat_template(self, turns, tokenize, add_generation_prompt):
            return f"<user>{turns[0]['content']}</user><assistant>"

    assert realpair.records("code", 2, None) == zoo.eval_records("code", 2)
    wrapped = realpair.records("code-instruct", 2, Template())
    assert [r["domain"] for r in wrapped] == ["code-instruct"] * 2
    assert wrapped[0]["prompt"] == f"<user>{zoo.eval_records('code', 1)[0]['prompt']}</user><assistant>"
    assert wrapped[0]["completion"] == zoo.eval_records("code", 1)[0]["completion"]
    assert set(realpair.ALL_DOMAINS) == set(corpus.DOMAINS) | {"chat-instruct", "code-instruct"}
    assert set(realpair.load("acceptance_teacher").domain) == set(realpair.ALL_DOMAINS)
    with pytest.raises(ValueError, match="unknown real-pair measurement 'nope'"):
        realpair.load("nope")
