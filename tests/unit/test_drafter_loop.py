"""The edge drafter (``serving.real.drafter``) in process: its propose/commit loop against the server's verifier gives
exactly the target's greedy text (an independent decode), its protocol errors, and ``client_main``'s gRPC loop
against an in-process fake stub (Hello's clock offset, evicted and full-memory retries, a malformed request,
the Bye it owes on failure) — no port is opened."""
import time

import grpc
import pytest
import torch

from specedge import decoding, zoo
from specedge.serving.real import codec, drafter as D
from specedge.serving.real import wire_pb2 as pb
from specedge.serving.real.verifier import Result, Verifier
from specedge.serving.workload import ClientSpec


@pytest.fixture(scope="module")
def prompt():
    return zoo.load_tokenizer().encode(zoo.eval_prompts("sql", 1)[0])[-16:]


class RpcError(grpc.RpcError):
    def __init__(self, code, details=""):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


# ------------------------------------------------------------------------------ the device side, no I/O
def test_propose_and_commit_against_the_verifier_give_the_targets_greedy_text(target, draft, prompt):
    want = decoding.autoregressive(target, prompt, 12).tokens.tolist()
    v, d = Verifier(target), D.Drafter(draft, prompt, 12, "s")
    sizes = iter([0, 1, 3, 5, 8] * 10)
    while not d.done:
        req, seconds = d.propose(next(sizes))
        assert seconds >= 0 and len(req.draft_ids) <= 12 - len(d.output) - 1   # a round cannot overshoot
        d.commit(v.verify([req])[0])
    assert d.output == want and d.rounds >= 3


def test_the_first_request_carries_the_prompt_and_a_follow_up_only_the_verdicts_token(draft, prompt):
    d = D.Drafter(draft, prompt, 10, "s")
    req, _ = d.propose(2)
    assert req.new_tokens == prompt and len(req.draft_ids) == 2 and req.q is None and req.session == "s"
    got = d.commit(Result(1, 77, False, 1.0))
    assert got == [req.draft_ids[0], 77] and d.output == got
    req2, _ = d.propose(0)
    assert req2.new_tokens == [77] and req2.draft_ids == []


def test_commit_keeps_no_more_than_max_new_tokens(draft, prompt):
    d = D.Drafter(draft, prompt, 2, "s")
    req, _ = d.propose(8)
    assert len(req.draft_ids) == 1                        # capped: 2 tokens left, one for the verdict's token
    assert d.commit(Result(1, 5, True, 1.0)) == [req.draft_ids[0], 5] and d.done
    d2 = D.Drafter(draft, prompt, 1, "t")
    assert d2.propose(4)[0].draft_ids == []


def test_protocol_errors(draft, prompt):
    with pytest.raises(ValueError, match="prompt: at least one token"):
        D.Drafter(draft, [], 4, "s")
    with pytest.raises(ValueError, match="temperature"):
        D.Drafter(draft, prompt, 4, "s", temperature=-1.0)
    d = D.Drafter(draft, prompt, 8, "s")
    with pytest.raises(RuntimeError, match="commit\\(\\) without a proposed round"):
        d.commit(Result(0, 1, False, 0.0))
    with pytest.raises(RuntimeError, match="reopen\\(\\) without a proposed round"):
        d.reopen("s~1")
    d.propose(2)
    with pytest.raises(RuntimeError, match="propose\\(\\) called again before commit"):
        d.propose(2)
    with pytest.raises(ValueError, match=r"accepted: 3 outside \[0, 2\]"):
        d.commit(Result(3, 1, False, 0.0))
    d = D.Drafter(draft, prompt, 8, "s")
    d.propose(2)
    with pytest.raises(ValueError, match=r"accepted: -1 outside"):
        d.commit(Result(-1, 1, False, 0.0))
    with pytest.raises(ValueError, match=r"token: a token id is >= 0, got -4"):
        d.commit(Result(1, -4, False, 0.0))


def test_a_refused_verdict_leaves_the_round_proposed(draft, prompt):
    d = D.Drafter(draft, prompt, 8, "s")
    req, _ = d.propose(2)
    with pytest.raises(ValueError, match="accepted"):
        d.commit(Result(3, 1, False, 0.0))
    assert (d.rounds, d.output) == (0, [])
    assert d.reopen("s~1").draft_ids == req.draft_ids          # still proposed: it can be sent again
    assert d.commit(Result(2, 6, False, 1.0)) == [*req.draft_ids, 6] and d.rounds == 1


def test_reopen_sends_the_whole_context_with_the_same_drafts(draft, prompt):
    d = D.Drafter(draft, prompt, 10, "c0-p0")
    d.propose(1)
    d.commit(Result(1, 9, False, 1.0))
    req, _ = d.propose(2)
    again = d.reopen("c0-p0~1")
    assert again.session == d.session == "c0-p0~1"
    assert again.new_tokens == prompt + d.output and again.draft_ids == req.draft_ids


def test_a_stop_rule_ends_the_round_before_the_position_it_predicts_rejected(draft, prompt):
    seen = []

    def stop(i, logits):
        seen.append(i)
        return i == 3            # position 3 predicted rejected: two drafts

    d = D.Drafter(draft, prompt, 20, "s", stop_rule=stop)
    req, _ = d.propose(6)
    assert len(req.draft_ids) == 2 and seen == [1, 2, 3]
    d.commit(Result(2, 4, False, 2.0))
    ref = D.Drafter(draft, prompt, 20, "r")
    assert ref.propose(2)[0].draft_ids == req.draft_ids     # the same drafts as an unstopped round of two


def test_rows_are_sent_when_sampling_or_asked_for(draft, prompt):
    g = D.Drafter(draft, prompt, 10, "s", greedy_rows=True)
    q = g.propose(3)[0].q
    assert q.shape == (3, draft.config.vocab_size) and torch.equal(q.sum(-1), torch.ones(3))
    assert torch.equal(q.argmax(-1), torch.tensor(g._drafts))            # one-hot rows of the greedy drafts
    s = D.Drafter(draft, prompt, 10, "s", temperature=1.0, top_k=4, seed=1)
    req = s.propose(3)[0]
    assert req.temperature == 1.0 and ((req.q > 0).sum(-1) <= 4).all()
    assert (req.q.gather(1, torch.tensor(req.draft_ids)[:, None]) > 0).all()
    again = D.Drafter(draft, prompt, 10, "t", temperature=1.0, top_k=4, seed=1).propose(3)[0]
    assert again.draft_ids == req.draft_ids                               # seeded


# ------------------------------------------------------------------------------ pure helpers
def test_link_seconds_and_its_checks(monkeypatch):
    link = D.Link(delay_s=0.01, rate_bps=1e6)
    assert link.seconds(1000) == pytest.approx(0.01 + 8000 / 1e6)
    assert D.Link().seconds(10 ** 9) == 0.0
    slept = []
    monkeypatch.setattr(D.time, "sleep", slept.append)
    D.Link().wait(100)
    link.wait(0)
    assert slept == [0.01]
    for kw, match in ((dict(delay_s=-1e-3), "delay_s"), (dict(delay_s=float("inf")), "delay_s"),
                      (dict(rate_bps=0.0), "rate_bps"), (dict(rate_bps=float("nan")), "rate_bps")):
        with pytest.raises(ValueError, match=match):
            D.Link(**kw)


@pytest.mark.parametrize("fault, want", [(None, ("", -1)), ("", ("", -1)), ("die@0", ("die", 0)),
                                         ("malformed@12", ("malformed", 12))])
def test_parse_fault(fault, want):
    assert D.parse_fault(fault) == want


@pytest.mark.parametrize("fault", ["die", "die@", "die@-1", "die@x", "crash@1", "@1"])
def test_parse_fault_refuses(fault):
    with pytest.raises(ValueError, match="fault must be"):
        D.parse_fault(fault)


def test_backoff_doubles_from_a_tenth_and_caps_at_two_seconds():
    assert [D._backoff(k) for k in range(6)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0])
    assert D._backoff(1000) == 2.0


def test_shifted_clock(monkeypatch):
    monkeypatch.setattr(D.time, "monotonic", lambda: 100.0)
    assert D.shifted_clock(-2.5)() == 97.5


def test_stop_rule_for_each_rule():
    assert D.stop_rule_for(ClientSpec(draft_rule="server")) is None
    assert D.stop_rule_for(ClientSpec(draft_rule="fixed")) is None
    assert callable(D.stop_rule_for(ClientSpec(draft_rule="predictor:mlp", gamma=4)))
    with pytest.raises(ValueError, match="draft_rule: expected 'server', 'fixed' or 'predictor:<name>', got 'always'"):
        D.stop_rule_for(ClientSpec(draft_rule="always"))


def test_prompt_stream_goes_domain_after_domain_and_cuts_each_prompt():
    tok = zoo.load_tokenizer()
    spec = ClientSpec(domains=("sql", "code"), prompts=2)
    out = D.prompt_stream(spec, tok, prompt_tokens=5)
    texts = zoo.eval_prompts("sql", 2) + zoo.eval_prompts("code", 2)
    assert out == [tok.encode(t)[-5:] for t in texts]
    assert D.prompt_stream(spec, prompt_tokens=5) == out                   # the draft's own tokenizer is the zoo's
    with pytest.raises(ValueError, match="gives no prompt"):
        D.prompt_stream(ClientSpec(domains=(), prompts=2), tok)


def test_threads_sets_one_torch_thread(monkeypatch):
    calls = []
    monkeypatch.setattr(D.torch, "set_num_threads", calls.append)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    D.threads(1)
    assert calls == [1] and D.os.environ["OMP_NUM_THREADS"] == "1"


def test_failed_says_which_call_and_why():
    err = D._failed("Hello", 3, "h:1", RpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "ignored"))
    assert str(err) == "drafter 3: Hello to h:1 failed: DEADLINE_EXCEEDED: no answer within the deadline"
    err = D._failed("Verify of round 2", 3, "h:1", RpcError(grpc.StatusCode.INTERNAL, "boom"))
    assert str(err) == "drafter 3: Verify of round 2 to h:1 failed: INTERNAL: boom"


def test_read_key_waits_for_the_file_and_gives_up_at_the_deadline(tmp_path, monkeypatch):
    path = tmp_path / "key"
    path.write_text("  abc \n")
    assert D._read_key(path, 0, time.monotonic() + 5) == "abc"
    # missing, then empty, then written: each wait is where the server would write it
    path.unlink()
    writes = iter(["", "k" * 32])
    monkeypatch.setattr(D.time, "sleep", lambda s: path.write_text(next(writes)))
    assert D._read_key(path, 0, time.monotonic() + 5) == "k" * 32
    path.unlink()
    with pytest.raises(D.DrafterError, match="key file .* not found or empty"):
        D._read_key(path, 0, time.monotonic() - 1)


# ------------------------------------------------------------------------------ the gRPC loop on a fake stub
class FakeStub:
    """The server's side in process: ``Verify`` decodes with ``codec`` and verifies with a ``Verifier``."""

    def __init__(self, target, *, hello_errors=(), verify_errors=(), t_server=0.0, max_positions=0, bye_error=None,
                 draft_length=3):
        self.v, self.vocab = Verifier(target), int(target.config.vocab_size)
        self.hello_errors, self.verify_errors = list(hello_errors), list(verify_errors)
        self.t_server, self.max_positions, self.bye_error = t_server, max_positions, bye_error
        self.draft_length, self.calls, self.byes, self.sent = draft_length, [], [], []

    def Hello(self, msg, timeout, wait_for_ready):
        self.calls.append("Hello")
        if self.hello_errors:
            raise self.hello_errors.pop(0)
        return pb.HelloReply(draft_length=self.draft_length, vocab_size=self.vocab, target_model="target-m", token="tok",
                             max_draft=4, max_positions=self.max_positions, t_server=self.t_server)

    def Verify(self, msg, timeout):
        self.calls.append("Verify")
        self.sent.append(pb.VerifyRequest.FromString(msg.SerializeToString()))
        if self.verify_errors:
            raise self.verify_errors.pop(0)
        try:
            req = codec.request_from_wire(msg, self.vocab, 4)
        except ValueError as err:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, str(err)) from None
        r = self.v.verify([req])[0]
        return pb.VerifyReply(accepted=r.accepted, token=r.token, bonus=r.bonus, next_draft_length=2,
                              accept_prob_sum=r.accept_prob_sum, t_reply=0.0)

    def Bye(self, msg, timeout):
        self.byes.append(bool(msg.finished))
        if self.bye_error is not None:
            raise self.bye_error
        return pb.ByeReply()


@pytest.fixture
def no_wait(monkeypatch):
    slept = []
    monkeypatch.setattr(D.time, "sleep", slept.append)
    return slept


def _client(stub, draft, prompts, monkeypatch, **kw):
    monkeypatch.setattr(D.pb_grpc, "VerifierStub", lambda channel: stub)
    monkeypatch.setattr(D, "threads", lambda n=1: None)   # the test process keeps its own thread settings
    spec = kw.pop("spec", ClientSpec(draft="draft-xs", max_new_tokens=10))
    return D.client_main("127.0.0.1:9", 0, spec, model=draft, prompts=prompts, **kw)


def test_client_main_generates_the_targets_greedy_text_and_says_bye_finished(target, draft, prompt, monkeypatch, no_wait):
    stub, ready, rounds = FakeStub(target), [], []
    out = _client(stub, draft, [prompt, prompt[3:]], monkeypatch, on_ready=lambda: ready.append(1), on_round=rounds.append)
    assert out["outputs"] == [decoding.autoregressive(target, p, 10).tokens.tolist() for p in (prompt, prompt[3:])]
    assert ready == [1] and stub.byes == [True] and rounds == list(range(len(rounds)))
    rows = out["rows"]
    assert [r["round"] for r in rows] == rounds and all(r["event"] == "" for r in rows)
    assert sum(r["tokens_committed"] for r in rows) == 20
    assert {r["session"] for r in rows} == {"c0-p0", "c0-p1"}
    # S follows the server: 3 (Hello's) first, then each reply's next_draft_length (2), never above max_draft
    assert [len(m.draft_ids) for m in stub.sent[:2]] == [3, 2]
    assert [m.round for m in stub.sent] == list(range(len(stub.sent)))


def test_a_fixed_rule_drafts_gamma_capped_by_the_servers_max_draft(target, draft, prompt, monkeypatch, no_wait):
    stub = FakeStub(target)
    _client(stub, draft, [prompt], monkeypatch, spec=ClientSpec(draft="draft-xs", max_new_tokens=12, gamma=6,
                                                                  draft_rule="fixed"))
    assert len(stub.sent[0].draft_ids) == 4            # gamma 6, the server takes at most 4


def test_hello_retries_a_taken_id_and_measures_the_clock_offset(target, draft, prompt, monkeypatch, no_wait):
    taken = RpcError(grpc.StatusCode.ALREADY_EXISTS, "live")
    stub = FakeStub(target, hello_errors=[taken, taken], t_server=1000.0)
    ticks = iter(range(0, 10 ** 6, 2))
    clock = lambda: float(next(ticks))   # noqa: E731 - each reading 2 s after the last
    _client(stub, draft, [prompt], monkeypatch, clock=clock)
    assert stub.calls[:3] == ["Hello"] * 3 and no_wait[:2] == [0.1, 0.2]
    # Hello sent at 4, answered at 6: offset 1000 - 5; the round starts at 8, its request is sent at 10 (+ 995)
    assert stub.sent[0].t_sent == pytest.approx(10.0 + 995.0)


def test_an_offset_within_the_round_trip_counts_as_the_same_clock(target, monkeypatch):
    stub = FakeStub(target, t_server=5.5)
    ticks = iter([5.0, 6.0])
    reply, offset, unc = D._hello(stub, "a", 0, ClientSpec(), 8, None, None, 5.0, lambda: next(ticks))
    assert (offset, unc) == (0.0, 0.5)                  # |5.5 - 5.5| <= 0.5
    ticks = iter([5.0, 6.0])
    stub.t_server = 7.0
    assert D._hello(stub, "a", 0, ClientSpec(), 8, None, None, 5.0, lambda: next(ticks))[1] == 1.5


def test_hello_gives_up_on_a_taken_id_at_its_deadline_and_on_other_errors(target, monkeypatch, no_wait):
    stub = FakeStub(target, hello_errors=[RpcError(grpc.StatusCode.ALREADY_EXISTS, "live")])
    with pytest.raises(D.DrafterError, match="ALREADY_EXISTS: live; still taken after retrying for 0 s"):
        D._hello(stub, "a", 0, ClientSpec(), 8, None, None, 0.0, time.monotonic)
    stub = FakeStub(target, hello_errors=[RpcError(grpc.StatusCode.PERMISSION_DENIED, "key: no")])
    with pytest.raises(D.DrafterError, match="drafter 0: Hello to a failed: PERMISSION_DENIED: key: no"):
        D._hello(stub, "a", 0, ClientSpec(), 8, "k", None, 5.0, time.monotonic)


def test_hello_reads_the_key_file(target, tmp_path, monkeypatch):
    (tmp_path / "key").write_text("s" * 32)
    seen = []
    stub = FakeStub(target)
    hello = stub.Hello
    stub.Hello = lambda msg, **kw: (seen.append(msg.key), hello(msg, **kw))[1]
    D._hello(stub, "a", 0, ClientSpec(), 8, None, tmp_path / "key", 5.0, time.monotonic)
    assert seen == ["s" * 32]


def test_an_evicted_session_is_reopened_with_the_whole_context(target, draft, prompt, monkeypatch, no_wait):
    evicted = RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "session: 'c0-p0' was evicted (...)")
    stub = FakeStub(target)
    real_verify = stub.Verify
    n = {"calls": 0}

    def verify(msg, timeout):
        n["calls"] += 1
        if n["calls"] == 3:          # the third request (round 2) finds its session evicted
            stub.sent.append(pb.VerifyRequest.FromString(msg.SerializeToString()))
            stub.v.close(msg.session)
            raise evicted
        return real_verify(msg, timeout)

    stub.Verify = verify
    out = _client(stub, draft, [prompt], monkeypatch)
    assert out["outputs"] == [decoding.autoregressive(target, prompt, 10).tokens.tolist()]
    again = stub.sent[3]
    assert again.session == "c0-p0~1" and again.round == stub.sent[2].round
    assert list(again.new_tokens[: len(prompt)]) == prompt and len(again.new_tokens) > len(prompt)
    assert {r["session"] for r in out["rows"][2:]} == {"c0-p0~1"}


def test_a_full_memory_is_retried_with_backoff_and_other_errors_fail_with_a_bye(target, draft, prompt, monkeypatch, no_wait):
    full = RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "session memory is full: retry this request shortly")
    stub = FakeStub(target, verify_errors=[full, full])
    out = _client(stub, draft, [prompt], monkeypatch)
    assert no_wait[:2] == [0.1, 0.2] and out["outputs"][0] == decoding.autoregressive(target, prompt, 10).tokens.tolist()
    stub = FakeStub(target, verify_errors=[RpcError(grpc.StatusCode.INTERNAL, "pass failed")])
    with pytest.raises(D.DrafterError, match="drafter 0: Verify of round 0 to 127.0.0.1:9 failed: INTERNAL: pass failed"):
        _client(stub, draft, [prompt], monkeypatch)
    assert stub.byes == [False]                           # the session is ended at once


def test_a_malformed_request_is_reported_and_the_run_goes_on(target, draft, prompt, monkeypatch, no_wait):
    stub = FakeStub(target)
    out = _client(stub, draft, [prompt], monkeypatch, fault="malformed@1")
    bad = [r for r in out["rows"] if r["event"]]
    assert len(bad) == 1 and bad[0]["round"] == 1 and bad[0]["event"].startswith("error: INVALID_ARGUMENT: draft_ids")
    assert out["outputs"] == [decoding.autoregressive(target, prompt, 10).tokens.tolist()]


def test_a_prompt_too_long_for_the_target_fails_before_any_round(target, draft, prompt, monkeypatch, no_wait):
    stub = FakeStub(target, max_positions=len(prompt) + 9)
    with pytest.raises(D.DrafterError, match=f"needs {len(prompt) + 10} positions, the server's target target-m has "
                                             f"{len(prompt) + 9}"):
        _client(stub, draft, [prompt], monkeypatch)
    assert "Verify" not in stub.calls and stub.byes == [False]
    ok = FakeStub(target, max_positions=len(prompt) + 10)     # exactly enough
    assert len(_client(ok, draft, [prompt], monkeypatch)["outputs"][0]) == 10


def test_a_failed_last_bye_is_a_row_not_an_error(target, draft, prompt, monkeypatch, no_wait):
    stub = FakeStub(target, bye_error=RpcError(grpc.StatusCode.UNAVAILABLE, "gone"))
    out = _client(stub, draft, [prompt], monkeypatch)
    last = out["rows"][-1]
    assert last["event"] == "error: Bye failed: UNAVAILABLE" and last["round"] == out["rows"][-2]["round"] + 1
