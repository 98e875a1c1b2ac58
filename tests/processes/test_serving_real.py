"""The real serving system: processes over gRPC on 127.0.0.1 give exactly single-process output,
and a malformed request or a dead drafter does not take the server or the other clients down."""
import filecmp
import multiprocessing as mp

import pytest
import torch

from specedge import decoding, zoo
from specedge.serving.real import wire
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.real.drafter import prompt_stream
from specedge.serving.real.run import RunFailed, failed_clients, run_real
from specedge.serving.real.verifier import Request, Verifier
from specedge.serving.real.drafter import Drafter
from specedge.serving.workload import ClientSpec, Workload


@pytest.fixture(scope="module")
def target():
    return zoo.load_model("target-m")


def _reference(target, spec):
    tok = zoo.load_tokenizer()
    return [decoding.autoregressive(target, p, spec.max_new_tokens).tokens.tolist()
            for p in prompt_stream(spec, tok)]


def test_generated_code_is_current(tmp_path):
    wire.regenerate(tmp_path)
    for name in wire.GENERATED:
        assert filecmp.cmp(tmp_path / name, wire.HERE / name, shallow=False), f"{name} is stale: run python -m specedge.serving.real.wire"


def test_batched_verification_equals_one_by_one_and_no_cache(target):
    draft = zoo.load_model("draft-xs")
    tok = zoo.load_tokenizer()
    prompts = [tok.encode(t)[-30:] for t in zoo.eval_prompts("code", 2) + zoo.eval_prompts("sql", 1)]
    outs = {}
    for mode in ("batched", "single", "no_cache"):
        v = Verifier(target, cache=mode != "no_cache")
        ds = [Drafter(draft, p, 24, f"s{i}") for i, p in enumerate(prompts)]
        lens = [1, 3, 6]
        while not all(d.done for d in ds):
            live = [(i, d) for i, d in enumerate(ds) if not d.done]
            reqs = [d.propose(lens[i])[0] for i, d in live]
            res = v.verify(reqs) if mode != "single" else [v.verify([r])[0] for r in reqs]
            for (_, d), r in zip(live, res):
                d.commit(r)
        outs[mode] = [d.output for d in ds]
    ref = [decoding.autoregressive(target, p, 24).tokens.tolist() for p in prompts]
    assert outs["batched"] == outs["single"] == outs["no_cache"] == ref


def test_verifier_rejects_malformed_requests_naming_the_field(target):
    v = Verifier(target)
    with pytest.raises(ValueError, match="draft_ids"):
        v.verify([Request("a", [1, 2], [target.config.vocab_size + 1])])
    with pytest.raises(ValueError, match="new_tokens"):
        v.verify([Request("b", [], [3])])
    with pytest.raises(ValueError, match="draft"):
        v.verify([Request("c", [1], [3], q=torch.ones(2, 5), temperature=1.0)])


def test_multi_client_greedy_faults_and_slow_loading(target):
    """Four drafter processes, SyncRounds: the honest ones give exactly single-process greedy tokens
    while one sends a malformed request and one dies; the idle timer (3 s) does not fire while the
    drafters load (counted from the server's start, it would stop a slow-loading run with 0 tokens)."""
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 16),
                               ClientSpec("draft-s", ("math", "chat"), 1, 16),
                               ClientSpec("draft-xs", ("sql",), 1, 12),
                               ClientSpec("draft-xs", ("qa",), 1, 12)), capacity=8)
    log, outs = run_real(wl, SyncRounds(), FixedS(8, 4), label="faults", client_timeout=30.0, idle_timeout=3.0,
                         faults={2: "malformed@1", 3: "die@2"})
    for c in (0, 1, 2):
        assert outs[c] == _reference(target, wl.clients[c]), f"client {c} differs from single-process greedy"
    events = log[log.event != ""]
    assert events.event.str.contains("INVALID_ARGUMENT: draft_ids").any(), events.event.tolist()
    dropped = events[events.event.str.startswith("dropped")]
    assert len(dropped) and (dropped.client == 3).all()
    assert failed_clients(log) == {3: "exit code 3"}
    rows = log[log.event == ""]
    assert rows.S.max() == 2 and (rows.accepted <= rows.S).all()   # S = C // N, capped at the end
    per_batch = rows.groupby("batch").client.nunique()  # wait-for-all rounds: every active client, each batch
    assert per_batch.iloc[0] == 4 and per_batch.is_monotonic_decreasing
    assert 3 not in outs
    assert not mp.active_children()


def test_one_allocator_object_drives_an_fcfs_run_and_the_twin(target):
    """The policy objects are plain: the very same instance runs in the real server and in the twin."""
    from specedge.serving.policies.allocation import GoodspeedAllocator
    from specedge.serving.timemodels.runtime import AffineTokens
    from specedge.serving.interfaces import Times
    from specedge.serving.sim.twin import IIDAcceptance, simulate

    alloc, former = GoodspeedAllocator(6), FCFS()
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 8), ClientSpec("draft-s", ("sql",), 1, 8)), capacity=6)
    real, outs = run_real(wl, former, alloc, label="GOODSPEED")
    assert outs[0] == _reference(target, wl.clients[0]) and outs[1] == _reference(target, wl.clients[1])
    x_after_real = dict(alloc.X)
    assert set(x_after_real) == {0, 1} and x_after_real != {0: 1.0, 1: 1.0}  # the object passed in was used
    twin = simulate(wl, former, alloc, Times([lambda s: 0.001 * s] * 2, AffineTokens(0.01, 0.0)), IIDAcceptance(0.5))
    assert set(alloc.X) == {0, 1} and len(twin) > 0 and len(real[real.event == ""]) > 0


def test_cli_run_sampled_top_k_prints_the_summary_and_exits_0(tmp_path, capsys):
    from specedge.serving.__main__ import main
    out = tmp_path / "run.csv"
    rc = main(["run", "--clients", "1", "--capacity", "3", "--tokens", "6", "--temperature", "1.0", "--top-k", "8",
               "--link-delay-ms", "1", "--show-text", "--out", str(out)])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    assert "1 drafters" in printed.out and "6 tokens" in printed.out
    assert "p50" in printed.out and "p99" in printed.out and "acceptance" in printed.out
    assert "client 0: 6 tokens" in printed.out and "tokens/s" in printed.out and "text: " in printed.out
    assert out.exists()


def test_sampled_verification_follows_the_target_distribution(target):
    """At T = 1 the first token committed by a drafter + verifier round follows the target's p exactly
    (chi-square over the likely tokens), as single-process speculative decoding does."""
    from scipy import stats
    from specedge import sampling

    draft = zoo.load_model("draft-xs")
    prompt = zoo.load_tokenizer().encode(zoo.eval_prompts("chat", 1)[0])[-12:]
    with torch.inference_mode():
        p = sampling.probs(target(torch.tensor([prompt])).logits[0, -1], 1.0)
    n = 2500
    counts = torch.zeros_like(p)
    for seed in range(n):
        v = Verifier(target, seed=seed)
        d = Drafter(draft, prompt, 3, "s", temperature=1.0, seed=10_000 + seed)
        req, _ = d.propose(2)
        counts[d.commit(v.verify([req])[0])[0]] += 1
    expected = p * n
    big = expected >= 8
    obs = torch.cat([counts[big], counts[~big].sum()[None]]).numpy()
    exp = torch.cat([expected[big], expected[~big].sum()[None]]).numpy()
    assert big.sum() >= 5
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3


class _BrokenFormer:
    label = "broken"

    def form(self, queue, now, active):
        raise ZeroDivisionError("a scheduler bug")


def test_a_failing_batch_former_fails_its_requests_and_the_run_says_so(target):
    """A policy that raises fails the requests it was given (each drafter gives up with one line), the
    server keeps answering, and the run ends with RunFailed carrying the log (no hang, no success)."""
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 6),), capacity=4)
    with pytest.raises(RunFailed, match="batch former broken failed: ZeroDivisionError") as info:
        run_real(wl, _BrokenFormer(), FixedS(4, 1), label="broken", client_timeout=5.0)
    failed = failed_clients(info.value.log)
    assert set(failed) == {0} and all("INTERNAL: batch former broken failed" in m for m in failed.values())
    assert not mp.active_children()


def test_a_drafter_encodes_its_prompts_with_its_own_models_tokenizer(tmp_path):
    """A real pair's drafter must not send zoo-tokenizer ids to a Qwen target (it did: the drafter always
    loaded the zoo tokenizer, and the real pair served garbage prompts)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    words = sorted({w for t in zoo.eval_prompts("code", 1) for w in t.split()})
    core = Tokenizer(models.WordLevel({"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    own = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]")
    own.save_pretrained(tmp_path)
    LlamaConfig(vocab_size=len(words) + 1).save_pretrained(tmp_path)
    spec = ClientSpec(str(tmp_path), ("code",), 1, 4)
    want = [own.encode(zoo.eval_prompts("code", 1)[0])[-48:]]
    assert prompt_stream(spec, prompt_tokens=48) == want
    assert zoo.tokenizer_for(spec.draft).encode("def f") == own.encode("def f")
    assert want != [zoo.load_tokenizer().encode(zoo.eval_prompts("code", 1)[0])[-48:]]
