"""``early_exit``'s sizing, input checks, trace collection and its resumable ``build`` on tiny stand-ins."""
import json
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from _stand_ins import V, CharTokenizer, llama, pair as stand_in_pair
from specedge import early_exit
from specedge.early_exit import sim


@pytest.fixture(scope="module")
def pair():
    return stand_in_pair()


def test_bottleneck_rank_by_hand(pair):
    _, target = pair
    total = sum(p.numel() for p in target.parameters())
    d, layers = 32, 4
    # each rank unit of an adapter: d (down weight) + 1 (down bias) + d (up weight); the up bias is d per adapter
    for per_layer in (1, 2):
        want = round(0.015 * total / ((per_layer * layers - 1) * (2 * d + 1)))
        assert early_exit.bottleneck_rank(target, 0.015, per_layer) == want
    # a share whose rank is 10.4 with the bias (2d + 1 per unit) and 10.56 without it: 10, not 11
    assert early_exit.bottleneck_rank(target, 10.4 * 3 * (2 * d + 1) / total) == 10
    assert early_exit.bottleneck_rank(target, 1e-9) == 1                  # never below one
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="param_fraction"):
            early_exit.bottleneck_rank(target, bad)


def test_early_exits_refuse_what_they_cannot_attach_to(pair):
    _, target = pair
    with pytest.raises(ValueError, match="decoder-only causal LM"):
        early_exit.EarlyExits(SimpleNamespace(model=None))
    one = llama(1)
    with pytest.raises(ValueError, match="at least 2 exit positions"):
        early_exit.EarlyExits(one)
    assert early_exit.EarlyExits(one, per_layer=2).n_layers == 2         # one layer, two positions: enough
    with pytest.raises(ValueError, match="rank must be >= 1"):
        early_exit.EarlyExits(target, rank=0)
    no_post = llama(2)
    for layer in no_post.model.layers:
        del layer.post_attention_layernorm
    with pytest.raises(ValueError, match="post_attention_layernorm"):
        early_exit.EarlyExits(no_post, per_layer=2)


def test_train_refuses_bad_steps_and_weights(pair):
    _, target = pair
    ee = early_exit.EarlyExits(target, rank=2)
    batches = iter([])
    with pytest.raises(ValueError, match="steps and start_step"):
        early_exit.train(ee, batches, steps=-1, progress=False)
    with pytest.raises(ValueError, match="kl_weight and ce_weight"):
        early_exit.train(ee, batches, steps=1, kl_weight=0.0, ce_weight=0.0, progress=False)
    with pytest.raises(ValueError, match="kl_weight and ce_weight"):
        early_exit.train(ee, batches, steps=1, kl_weight=-1.0, ce_weight=1.0, progress=False)
    g = torch.Generator().manual_seed(0)
    steps = []
    losses = early_exit.train(ee, iter(lambda: torch.randint(0, V, (2, 8), generator=g), None), steps=2, kl_weight=0.0,
                              ce_weight=1.0, progress=False, on_step=lambda s, loss: steps.append(s))
    # the next-token loss alone: at least the entropy floor, far above zero for random tokens of 48
    assert steps == [1, 2] and all(loss > 1.0 for loss in losses)


def test_load_without_adapters_names_the_build_command(pair, tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m specedge.early_exit build"):
        early_exit.load(pair[1], tmp_path)


def test_collect_trace_frames_equal_the_traces_of_each_prompt_and_time_every_round(pair):
    draft, target = pair
    ee = early_exit.EarlyExits(target, rank=2)
    prompts = {"a": [torch.arange(5), torch.arange(3, 9)], "b": [torch.arange(7, 12)]}
    logged = []
    rounds, times = early_exit.collect_trace_frames(draft, ee, prompts, 7, gamma=3, log=logged.append)
    per_prompt = early_exit.collect_traces(draft, ee, [p for ps in prompts.values() for p in ps], 7, gamma=3, progress=False)
    assert list(rounds.columns) == ["benchmark", *sim.TRACE_COLUMNS]
    want = pd.concat([sim.traces_frame(per_prompt[:2]).assign(benchmark="a"), sim.traces_frame(per_prompt[2:]).assign(benchmark="b")],
                     ignore_index=True)[rounds.columns]
    pd.testing.assert_frame_equal(rounds, want)
    n_rounds = [len(t) for t in per_prompt]
    assert len(times) == sum(n_rounds) and times.groupby(["benchmark", "sequence"]).size().tolist() == n_rounds
    assert (times.drafted <= 3).all() and (times[["t_draft", "t_target", "t_exits"]] >= 0).all().all()
    assert logged == [f"a prompt 0: {n_rounds[0]} rounds, 7 tokens", f"a prompt 1: {n_rounds[1]} rounds, 7 tokens",
                      f"b prompt 0: {n_rounds[2]} rounds, 7 tokens"]


class _Corpus:
    DOMAINS = ("x", "y")

    def __init__(self, n=5, size=10):
        self.records = {d: [dict(prompt=f"{d}{i}", completion="." * (size - 2)) for i in range(n)] for d in self.DOMAINS}

    def load(self, split, domain):
        assert split == "train"
        return self.records[domain]


def test_training_texts_stop_once_a_domain_reaches_its_characters():
    # records of 10 characters: 10 < 20 takes a second, 20 >= 20 stops (exactly the budget is enough)
    texts = early_exit._training_texts(_Corpus(), chars_per_domain=20)
    assert texts == ["x0........", "x1........", "y0........", "y1........"]
    assert len(early_exit._training_texts(_Corpus(), chars_per_domain=21)) == 6


def test_blocks_cut_contiguous_windows_of_the_tokenised_texts_with_eos_between():
    tok = CharTokenizer(keep=100)
    tok.eos_token_id = 0
    texts = ["abcdefgh", "ABCDEFGH"]
    data = [ord(c) % V for c in texts[0]] + [0] + [ord(c) % V for c in texts[1]] + [0]
    gen = early_exit._blocks(tok, texts, context=5, batch=3, seed=1)
    for _ in range(4):
        b = next(gen)
        assert b.shape == (3, 5)
        for row in b.tolist():
            assert any(data[s: s + 5] == row for s in range(len(data) - 5 + 1))
    assert next(early_exit._blocks(tok, texts, 5, 3, 1)).tolist() == next(early_exit._blocks(tok, texts, 5, 3, 1)).tolist()
    with pytest.raises(ValueError, match="too short for context 17: 18 tokens"):
        next(early_exit._blocks(tok, texts, context=17, batch=1, seed=0))
    assert next(early_exit._blocks(tok, texts, context=16, batch=1, seed=0)).shape == (1, 16)   # 18 > 16 + 1


@pytest.fixture
def zoo_of_one(monkeypatch, tmp_path):
    from specedge import zoo
    loads = []
    monkeypatch.setattr(zoo, "load_tokenizer", lambda: CharTokenizer(keep=1000))
    monkeypatch.setattr(zoo, "load_model", lambda name: (loads.append(name), llama(2, seed=1))[1])
    monkeypatch.setattr(early_exit, "_training_texts", lambda c: ["the quick brown fox jumps over the lazy dog"] * 4)
    return loads, tmp_path


def test_build_trains_saves_skips_resumes_and_restarts_on_another_layout(zoo_of_one, capsys):
    loads, folder = zoo_of_one
    kw = dict(steps=3, context=8, batch=2, folder=folder, per_layer=1)
    out = early_exit.build(["tiny"], **kw)
    meta = json.loads((folder / "tiny" / "meta.json").read_text())
    assert out == [folder / "tiny"] and meta["complete"] and meta["steps_done"] == 3 and meta["per_layer"] == 1
    assert meta["loss"] == "KL(final || exit)" and meta["target"] == "tiny" and loads == ["tiny"]
    early_exit.build(["tiny"], **kw)                                   # complete, same layout: skipped, nothing loaded
    assert loads == ["tiny"] and "adapters present" in capsys.readouterr().out
    # a partial run (2 of 3 steps) resumes from its saved step and adds its time
    (folder / "tiny" / "meta.json").write_text(json.dumps(dict(meta, complete=False, steps_done=2, train_seconds=100.0)))
    early_exit.build(["tiny"], **kw)
    resumed = json.loads((folder / "tiny" / "meta.json").read_text())
    assert resumed["complete"] and resumed["steps_done"] == 3 and resumed["train_seconds"] >= 100.0
    # nothing left to train (steps done already): marked complete as it is
    (folder / "tiny" / "meta.json").write_text(json.dumps(dict(resumed, complete=False, steps_done=3, train_seconds=5.0)))
    early_exit.build(["tiny"], **kw)
    again = json.loads((folder / "tiny" / "meta.json").read_text())
    assert again["complete"] and again["train_seconds"] == 5.0
    # another exit layout starts over
    early_exit.build(["tiny"], **dict(kw, per_layer=2))
    other = json.loads((folder / "tiny" / "meta.json").read_text())
    assert other["per_layer"] == 2 and other["n_exits"] == 3 and other["steps_done"] == 3 and other["train_seconds"] < 100.0


def test_main_build_passes_its_options(monkeypatch, tmp_path, capsys):
    got = {}
    monkeypatch.setattr(early_exit, "build", lambda targets, **kw: (got.update(targets=targets, **kw), [tmp_path / "t"])[1])
    assert early_exit.main(["build", "--targets", "a", "b", "--steps", "7", "--per-layer", "1", "--force"]) == 0
    assert got == dict(targets=["a", "b"], steps=7, context=128, batch=4, force=True, per_layer=1)
    assert str(tmp_path / "t") in capsys.readouterr().out
    with pytest.raises(SystemExit):
        early_exit.main(["build", "--per-layer", "3"])
