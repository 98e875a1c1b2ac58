"""Chaos against ONE verification server (module-scoped, loopback only, bounded counts and time): bad
requests, hijacks, a duplicate in flight, a client that goes away, policies that raise, a drafter with
no server. After each, the server is still up, the log names the fault, and honest clients' tokens
equal single-process greedy decoding. (issue 17; each probe reproduces a reported failure.)"""
import math
import os
import signal
import subprocess
import sys
import threading
import time

import grpc
import numpy as np
import pytest
import torch

from specedge import decoding, zoo
from specedge.serving import wire_pb2 as pb
from specedge.serving import wire_pb2_grpc as pb_grpc
from specedge.serving.allocation import FixedS
from specedge.serving.batching import FCFS
from specedge.serving.codec import encode_distribution, request_to_wire
from specedge.serving.drafter import Drafter, DrafterError, Link, client_main, prompt_stream
from specedge.serving.server import VerificationServer
from specedge.serving.verifier import Request, Verifier
from specedge.serving.workload import ClientSpec

N_CLIENTS = 12
VOCAB = 8192


class Gated(FCFS):
    """FCFS that a test can hold (to keep a request in flight) and poison (a client id whose
    requests make it raise, as a scheduler bug would)."""

    def __init__(self):
        super().__init__()
        self.open, self.poison = threading.Event(), set()
        self.open.set()

    def form(self, queue, now, active):
        if any(p.client in self.poison for p in queue):
            raise ZeroDivisionError("a scheduler bug")
        return super().form(queue, now, active) if self.open.is_set() else []


class Poisonable(FixedS):
    def __init__(self, capacity, n):
        super().__init__(capacity, n)
        self.poison = set()

    def update(self, outcomes):
        if any(o.client in self.poison for o in outcomes):
            raise ValueError("alpha: got [nan, 0.5]")
        return super().update(outcomes)


@pytest.fixture(scope="module")
def srv():
    target = zoo.load_model("target-m")
    former, alloc = Gated(), Poisonable(2 * N_CLIENTS, N_CLIENTS)
    server = VerificationServer(Verifier(target), former, alloc, list(range(N_CLIENTS)), label="chaos",
                                target_name="target-m", client_timeout=600, idle_timeout=600,
                                stop_when_done=False, start_barrier=False)
    port = server.start(0)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield dict(server=server, port=port, address=f"127.0.0.1:{port}", target=target, former=former, alloc=alloc,
               stub=pb_grpc.VerifierStub(channel), draft=zoo.load_model("draft-xs"))
    channel.close()
    server.stop()


def _hello(srv, client):
    return srv["stub"].Hello(pb.HelloRequest(client=client, vocab_size=VOCAB), timeout=10).token


def _request(client, token, session, n_draft=2, temperature=0.0, probs=None, new=(1, 2, 3), round=0, **kw):
    msg = pb.VerifyRequest(session=session, client=client, token=token, new_tokens=list(new),
                           draft_ids=[5] * n_draft, temperature=temperature, round=round, **kw)
    if probs is not None:
        msg.draft.CopyFrom(pb.DraftDistribution(vocab_size=VOCAB, probs=probs))
    return msg


def _refused(srv, msg, code, match):
    with pytest.raises(grpc.RpcError) as info:
        srv["stub"].Verify(msg, timeout=30)
    assert info.value.code() == code, info.value.details()
    assert match in info.value.details(), info.value.details()
    assert any(match in e["event"] for e in srv["server"].events), f"the log does not record {match!r}"


def _reference(target, spec):
    return [decoding.autoregressive(target, p, spec.max_new_tokens).tokens.tolist()
            for p in prompt_stream(spec, zoo.load_tokenizer())]


def _honest(srv, client, spec, out, **kw):
    out[client] = client_main(srv["address"], client, spec, model=srv["draft"], rpc_timeout=120, **kw)


def _dense(rows):
    return np.asarray(rows, dtype=np.float32).tobytes()


def _bad_requests(srv, client):
    """Each reported malformed request, refused with INVALID_ARGUMENT naming the field."""
    tok = _hello(srv, client)
    one = np.zeros((2, VOCAB), np.float32)
    one[:, 5] = 1.0
    nan = np.full((2, VOCAB), np.nan, np.float32)
    neg = one.copy()
    neg[:, 6] = -0.5
    neg[:, 7] = 0.5
    half = one * 0.5
    zero_at_draft = np.zeros((2, VOCAB), np.float32)
    zero_at_draft[:, 9] = 1.0
    bad = dict(
        nan=(_request(client, tok, f"b{client}", 2, 1.0, _dense(nan)), "non-finite"),
        negative=(_request(client, tok, f"b{client}", 2, 1.0, _dense(neg)), "negative probabilities"),
        unnormalised=(_request(client, tok, f"b{client}", 2, 1.0, _dense(half)), "sums to 0.5"),
        zero_at_draft=(_request(client, tok, f"b{client}", 2, 1.0, _dense(zero_at_draft)), "probability 0"),
        hot=(_request(client, tok, f"b{client}", 2, 1e30, _dense(one)), "temperature"),
        ragged=(_request(client, tok, f"b{client}", 2, 1.0, _dense(one)[:-2]), "draft.probs: 65534 bytes, not a multiple of 4"),
        long=(_request(client, tok, f"b{client}", srv["server"].max_draft + 1), "draft_ids: 65 drafted tokens"),
        positions=(_request(client, tok, f"b{client}", 10, new=[1] * 2040), "2048"),
        vocab=(_request(client, tok, f"b{client}", 0, new=[VOCAB + 3]), "new_tokens"),
    )
    tk = _request(client, tok, f"b{client}", 2, 1.0)
    tk.draft.CopyFrom(pb.DraftDistribution(vocab_size=VOCAB, top_k=2, probs=_dense([[0.5, 0.5]] * 2),
                                           indices=np.asarray([[5, 5]] * 2, np.int32).tobytes()))
    bad["topk_repeat"] = (tk, "repeats")
    for name, (msg, match) in bad.items():
        _refused(srv, msg, grpc.StatusCode.INVALID_ARGUMENT, match)


def _hijacks(srv, a, b):
    """Session ownership: tokens, live ids, sessions of others."""
    ta, tb = _hello(srv, a), _hello(srv, b)
    ra = srv["stub"].Verify(_request(a, ta, f"own{a}", 1), timeout=60)
    # b names a session like a's: it is b's own session (sessions are kept per Hello), a's is untouched
    alone = Verifier(srv["target"]).verify([Request("x", [7, 8, 9], [5])])[0]
    rb = srv["stub"].Verify(_request(b, tb, f"own{a}", 1, new=(7, 8, 9)), timeout=60)
    assert (rb.accepted, rb.token) == (alone.accepted, alone.token)
    assert srv["stub"].Verify(_request(a, ta, f"own{a}", 1, new=[ra.token], round=1), timeout=60).batch >= 0
    _refused(srv, _request(a, tb, f"own{a}", 1), grpc.StatusCode.PERMISSION_DENIED, f"token: not the token Hello gave client {a}")
    _refused(srv, _request(a, "", f"own{a}", 1), grpc.StatusCode.PERMISSION_DENIED, "token")
    with pytest.raises(grpc.RpcError) as info:
        srv["stub"].Hello(pb.HelloRequest(client=a, vocab_size=VOCAB), timeout=10)
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
    with pytest.raises(grpc.RpcError) as info:
        srv["stub"].Bye(pb.ByeRequest(client=a, token=tb), timeout=10)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    srv["stub"].Bye(pb.ByeRequest(client=a, token=ta), timeout=10)
    srv["stub"].Bye(pb.ByeRequest(client=b, token=tb), timeout=10)


def test_probes_while_honest_clients_run_leave_their_tokens_intact(srv):
    specs = {0: ClientSpec("draft-xs", ("code",), 1, 24), 1: ClientSpec("draft-xs", ("sql",), 1, 24)}
    out, threads = {}, []
    for c, spec in specs.items():
        threads.append(threading.Thread(target=_honest, args=(srv, c, spec, out)))
        threads[-1].start()
    _bad_requests(srv, 2)
    _hijacks(srv, 3, 4)
    for t in threads:
        t.join(300)
    for c, spec in specs.items():
        assert out[c]["outputs"] == _reference(srv["target"], spec), f"honest client {c} was disturbed"
    assert not srv["server"].stopped.is_set() and srv["server"].failure is None


def test_one_request_per_session_in_flight_and_a_client_that_goes_away(srv):
    c = 5
    tok = _hello(srv, c)
    srv["former"].open.clear()  # hold every request in the queue
    try:
        first = srv["stub"].Verify.future(_request(c, tok, "inflight", 1), timeout=60)
        deadline = time.monotonic() + 30
        while not srv["server"].queue and time.monotonic() < deadline:
            time.sleep(0.01)
        _refused(srv, _request(c, tok, "inflight", 1), grpc.StatusCode.FAILED_PRECONDITION, "in flight")
    finally:
        srv["former"].open.set()
        with srv["server"].cond:
            srv["server"].cond.notify_all()
    answered = first.result(timeout=60)
    assert answered.batch >= 0  # the one in flight is answered
    srv["former"].open.clear()
    try:
        gone = srv["stub"].Verify.future(_request(c, tok, "inflight", 1, new=[answered.token], round=1), timeout=60)
        while not srv["server"].queue and time.monotonic() < deadline + 30:
            time.sleep(0.01)
        gone.cancel()
        while srv["server"].queue and time.monotonic() < deadline + 60:
            time.sleep(0.01)
        assert not srv["server"].queue, "a cancelled request stayed queued"
        assert any("CANCELLED" in e["event"] for e in srv["server"].events)
    finally:
        srv["former"].open.set()
    srv["stub"].Bye(pb.ByeRequest(client=c, token=tok), timeout=10)


def test_a_verify_without_answer_gives_up_with_one_line_at_its_deadline(srv):
    srv["former"].open.clear()
    try:
        with pytest.raises(DrafterError, match=r"drafter 6: Verify of round 0 to .* failed: DEADLINE_EXCEEDED"):
            client_main(srv["address"], 6, ClientSpec("draft-xs", ("code",), 1, 4), model=srv["draft"],
                        rpc_timeout=1.0)
    finally:
        srv["former"].open.set()


def test_no_server_is_one_line_not_a_traceback(srv):
    with pytest.raises(DrafterError, match="drafter 0: Hello to 127.0.0.1:9 failed: DEADLINE_EXCEEDED"):
        client_main("127.0.0.1:9", 0, ClientSpec("draft-xs", ("code",), 1, 4), model=srv["draft"], hello_timeout=1.0)


@pytest.mark.parametrize("policy", ["former", "alloc"])
def test_a_policy_that_raises_fails_only_its_requests_and_the_server_goes_on(srv, policy):
    c = 7 if policy == "former" else 8
    srv[policy].poison.add(c)
    tok = _hello(srv, c)
    try:
        _refused(srv, _request(c, tok, f"poison{c}", 1), grpc.StatusCode.INTERNAL,
                 "ZeroDivisionError: a scheduler bug" if policy == "former" else "ValueError: alpha")
    finally:
        srv[policy].poison.discard(c)
    assert any("failed" in m for m in srv["server"].policy_errors)
    spec = ClientSpec("draft-xs", ("math",), 1, 12)
    out = {}
    _honest(srv, 9, spec, out)
    assert out[9]["outputs"] == _reference(srv["target"], spec)
    assert not srv["server"].stopped.is_set()


def test_link_model_delays_every_message_at_the_drafter(srv):
    link = Link(delay_s=0.02, rate_bps=8e6)
    assert link.seconds(1000) == pytest.approx(0.02 + 0.001)
    with pytest.raises(ValueError, match="rate_bps"):
        Link(0.0, 0.0)
    spec = ClientSpec("draft-xs", ("qa",), 1, 6)
    out = {}
    _honest(srv, 10, spec, out, link=link)
    rows = [r for r in srv["server"].log if r["client"] == 10]
    assert rows and min(r["up"] for r in rows) >= 0.02  # the uplink wait is network time at the server
    assert out[10]["outputs"] == _reference(srv["target"], spec)
    assert all(r["t_round"] >= 0.04 for r in out[10]["rows"])


def test_hello_counts_as_activity_for_the_idle_timer(srv):
    before = srv["server"].last_activity
    tok = _hello(srv, 11)
    assert srv["server"].last_activity > before
    srv["stub"].Bye(pb.ByeRequest(client=11, token=tok), timeout=10)


# ---------------------------------------------------------------- one-off servers (no model loading)
def test_ports_are_checked_and_a_busy_port_is_refused(srv):
    other = VerificationServer(Verifier(srv["target"]), FCFS(), FixedS(2, 1), [0])
    for bad in (70000, -3):
        with pytest.raises(ValueError, match=f"port: must be an integer in 0..65535.*{bad}"):
            other.start(bad)
    with pytest.raises(OSError, match=f"port {srv['port']} on 127.0.0.1"):
        other.start(srv["port"])  # no SO_REUSEPORT: the first server keeps every drafter


def test_a_crash_in_the_scheduling_loop_stops_the_server_and_says_so(srv, capfd):
    server = VerificationServer(Verifier(srv["target"]), FCFS(), FixedS(2, 1), [0], start_barrier=False)

    def broken(now):
        raise RuntimeError("loop bug")
    server._drop_dead = broken
    server.start(0)
    assert server.wait(timeout=30), "a crashed loop must stop the server"
    server.stop()
    assert isinstance(server.failure, RuntimeError)
    assert "scheduling thread crashed" in capfd.readouterr().err
    assert any("crashed" in e["event"] for e in server.events)


def test_cli_refuses_usage_errors_up_front():
    from specedge.serving.__main__ import main
    for argv, match in ((["run", "--tokens", "0"], "--tokens"), (["run", "--tokens", "-5"], "--tokens"),
                        (["run", "--draft", "no-such-draft"], "--draft"), (["server", "--port", "70000"], "--port"),
                        (["server", "--idle-timeout", "-1"], "--idle-timeout"),
                        (["run", "--temperature", "1e30"], "--temperature")):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2, argv


def test_server_cli_writes_its_log_on_sigterm_and_exits_non_zero(tmp_path):
    out = tmp_path / "server.csv"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "specedge.serving", "server", "--port", "0", "--clients", "1",
                             "--capacity", "2", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("verification server on 127.0.0.1:"), line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        assert port > 0  # --port 0 picked a free port and printed it
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 143 and out.exists()
    assert "client 0 FAILED: no verified round" in proc.stderr.read()


def test_the_profile_typo_names_the_unknown_key_and_the_known_one(tmp_path):
    from specedge import hardware, paths
    text = (paths.DATA / "profiles" / "zoo_cpu.yaml").read_text()
    key = "bandwidth_hz" if "bandwidth_hz" in text else "rate_bps"
    bad = tmp_path / "typo.yaml"
    bad.write_text(text.replace(key, "bandwith_hz", 1))
    with pytest.raises(ValueError, match=r"bandwith_hz.*did you mean 'bandwidth_hz'"):
        hardware.load_profile(bad)


def test_codec_round_trip_and_in_process_verification_agree(srv):
    """The codec is what both sides use: dense and top-K encode/decode give back q's rows."""
    from specedge.serving.codec import decode_distribution
    q = torch.softmax(torch.randn(3, VOCAB), -1)
    ids = q.argmax(-1).tolist()
    assert torch.allclose(decode_distribution(encode_distribution(q, None, VOCAB), ids, VOCAB), q)
    top = torch.zeros_like(q).scatter_(1, q.topk(4, -1).indices, 0.25)
    assert torch.allclose(decode_distribution(encode_distribution(top, 4, VOCAB), ids, VOCAB), top)
    d = Drafter(srv["draft"], [1, 2, 3], 4, "x", temperature=1.0, seed=1)
    req, _ = d.propose(2)
    msg = request_to_wire(req, client=0, round=0, token="t", top_k=None, vocab=VOCAB)
    assert list(msg.draft_ids) == req.draft_ids and math.isclose(msg.temperature, 1.0)


def test_a_run_that_cannot_fit_in_memory_is_refused_up_front():
    from specedge.serving.run import DRAFTER_BYTES, check_memory
    with pytest.raises(MemoryError, match=r"clients: 32 drafter processes need about 4.8 GB .* use at most 6 clients"):
        check_memory(32, available=1e9)
    check_memory(32, available=40 * DRAFTER_BYTES)  # fits: no error
