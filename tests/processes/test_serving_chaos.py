"""Chaos against the verification server (loopback only, bounded counts and time; servers started here
are stopped here): bad requests, hijacks, a duplicate in flight, a client that goes away, policies that
raise, a drafter with no server; then a request the verifier cannot take (it fails alone), sessions that
end with Bye or a drop (also with a request in flight), a drafter interrupted and restarted, silent
clients and late joiners under sync rounds, capped passes / requests in flight / session memory, range
checks, the CLIs' exit codes and a bounded soak. After each, the server is still up, the log names the
fault, and honest clients' tokens equal single-process greedy decoding (each probe reproduces a reported
failure)."""
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

from specedge import zoo
from specedge.serving.real import wire_pb2 as pb
from specedge.serving.real import wire_pb2_grpc as pb_grpc
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.real.codec import encode_distribution, request_to_wire
from specedge.serving.real.drafter import Drafter, DrafterError, Link, client_main
from specedge.serving.__main__ import HOLD_ENV
from specedge.serving.real.server import VerificationServer
from specedge.serving.real.verifier import Request, Verifier
from specedge.serving.workload import ClientSpec

from process_waits import read_until, wait_until
from serving_probes import VOCAB, Servers
from serving_probes import cli as _cli
from serving_probes import env as _env
from serving_probes import reference as _reference
from serving_probes import served
from serving_probes import request as _request
from serving_probes import stop as _stop
from serving_probes import verify_round as _round

N_CLIENTS = 12


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


def _refused(srv, msg, code, match):
    with pytest.raises(grpc.RpcError) as info:
        srv["stub"].Verify(msg, timeout=30)
    assert info.value.code() == code, info.value.details()
    assert match in info.value.details(), info.value.details()
    assert any(match in e["event"] for e in srv["server"].events), f"the log does not record {match!r}"


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
        wait_until(lambda: srv["server"].queue, 30, "the request queued")
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
        wait_until(lambda: srv["server"].queue, 30, "the request queued")
        gone.cancel()
        wait_until(lambda: not srv["server"].queue, 30, "a cancelled request to leave the queue")
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
    from specedge.serving.real.codec import decode_distribution
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
    from specedge.serving.real.run import DRAFTER_BYTES, check_memory
    with pytest.raises(MemoryError, match=r"clients: 32 drafter processes need about 4.8 GB .* use at most 6 clients"):
        check_memory(32, available=1e9)
    check_memory(32, available=40 * DRAFTER_BYTES)  # fits: no error


# ---------------------------------------------------------------- a request's failure is its own,
# sessions end, silent clients cannot stall the rest, bounded work, truthful exits
def _keys(server, c):
    """The verifier's sessions of client ``c`` (whatever their internal names)."""
    return [k for k in server.verifier.sessions if k.startswith(f"{c}.") or k.startswith(f"c{c}")]


@pytest.fixture
def one_off(srv):
    """A fresh server on the shared target (its own policies and options), stopped by the test's end."""
    servers = Servers(srv["target"])
    yield servers
    servers.close()


def test_a_follow_up_without_the_last_verdicts_token_is_refused_before_batching(srv):
    """A Verify with new_tokens=[] on a known session used to pass the codec and then fail the
    verifier's logits slice (INTERNAL for its whole batch) or, alone, get a wrong verdict."""
    c = 11
    tok = _hello(srv, c)
    first = _round(srv["stub"], c, tok, "f1", 0, [1, 2, 3])
    _refused(srv, _request(c, tok, "f1", 1, new=[], round=1), grpc.StatusCode.INVALID_ARGUMENT, "new_tokens")
    wrong = (first.token + 1) % VOCAB
    _refused(srv, _request(c, tok, "f1", 1, new=[wrong], round=1), grpc.StatusCode.INVALID_ARGUMENT,
             "last verdict's token")
    ok = _round(srv["stub"], c, tok, "f1", 1, [first.token])
    ref = Verifier(srv["target"]).verify([Request("r", [1, 2, 3, first.token], [5])])[0]
    assert (ok.accepted, ok.token) == (ref.accepted, ref.token)
    srv["stub"].Bye(pb.ByeRequest(client=c, token=tok), timeout=10)


def _release_when_queued(server, n: int, wait_s: float = 10.0) -> None:
    """Open a gated former once ``n`` requests are queued (or ``wait_s`` passed), and wake the server."""
    wait_until(lambda: len(server.queue) >= n, wait_s, f"{n} requests queued")
    server.former.open.set()
    with server.cond:
        server.cond.notify_all()


def test_a_pass_that_raises_is_retried_one_by_one_and_fails_only_the_culprit(srv, one_off):
    server, stub = one_off(former=Gated())
    real = server.verifier.verify

    def verify(requests):   # a request the verifier cannot take (a bug, an edge the checks missed)
        if any(r.stream == "culprit" for r in requests):
            raise RuntimeError("The expanded size of the tensor (2) must match the existing size (0)")
        return real(requests)
    server.verifier.verify = verify
    t0, t1 = (stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=10).token for c in (0, 1))
    server.former.open.clear()
    honest = stub.Verify.future(_request(0, t0, "honest", 2, new=(4, 5, 6)), timeout=30)
    bad = stub.Verify.future(_request(1, t1, "culprit", 2), timeout=30)
    _release_when_queued(server, 2)
    reply = honest.result(timeout=30)
    ref = Verifier(srv["target"]).verify([Request("r", [4, 5, 6], [5, 5])])[0]
    assert (reply.accepted, reply.token) == (ref.accepted, ref.token)
    with pytest.raises(grpc.RpcError) as info:
        bad.result(timeout=30)
    assert info.value.code() == grpc.StatusCode.INTERNAL and "expanded size" in info.value.details()
    assert server.request_errors == 1 and not server.policy_errors and not server.stopped.is_set()


def test_a_new_hello_never_continues_an_old_session(srv):
    """The dead client's session outlived it and a new Hello's prompt was appended to it (n_cached=381)."""
    c = 10
    server = srv["server"]
    tok = _hello(srv, c)
    r0 = _round(srv["stub"], c, tok, "c10-p0", 0, list(range(1, 41)))
    assert r0.batch >= 0 and _keys(server, c)
    srv["stub"].Bye(pb.ByeRequest(client=c, token=tok, finished=False), timeout=10)   # interrupted
    assert not _keys(server, c), "Bye left the session's cache behind"
    tok2 = _hello(srv, c)
    assert tok2 != tok
    _round(srv["stub"], c, tok2, "c10-p0", 0, list(range(1, 41)))
    row = [r for r in server.log if r["client"] == c][-1]
    assert row["n_cached"] == 0 and row["n_new"] == 41, "the new Hello continued the old session"
    with pytest.raises(grpc.RpcError) as info:   # the old token is dead
        _round(srv["stub"], c, tok, "c10-p0", 5, [r0.token])
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    srv["stub"].Bye(pb.ByeRequest(client=c, token=tok2, finished=True), timeout=10)
    assert not _keys(server, c)


def test_a_drop_ends_the_session_frees_it_and_the_id_comes_back_with_a_fresh_token(one_off):
    server, stub = one_off(clients=(0,), client_timeout=0.5)
    tok = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB), timeout=10).token
    first = _round(stub, 0, tok, "s", 0, [1, 2, 3])
    wait_until(lambda: 0 not in server.active, 30, "the silent client's drop")
    assert not server.verifier.sessions, "a dropped client's session outlived it"
    assert server.ended[0].startswith("dropped: no request for 0.5 s")
    with pytest.raises(grpc.RpcError) as info:   # after a drop no one continues the dead client's session
        _round(stub, 0, tok, "s", 1, [first.token])
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    tok2 = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB), timeout=10).token
    assert tok2 != tok
    _round(stub, 0, tok2, "s", 0, [first.token])   # the same name: a new session, not the old one
    assert server.log[-1]["n_cached"] == 0


def test_readme_two_terminals_survive_ctrl_c_and_restart_of_the_drafter(srv, tmp_path):
    """The README's two-terminal example: Ctrl-C the drafter mid-generation, start it again at once:
    the same tokens as a clean run, and the server finishes with exit 0."""
    spec = ClientSpec("draft-xs", ("code",), 1, 200)   # >= 40 rounds of 2 x 60 ms link delay after round 0, any host
    clean = " ".join(map(str, _reference(srv["target"], spec)[0]))[:120]
    server = subprocess.Popen(_cli("server", "--clients", 1, "--allocator", "goodspeed", "--capacity", 4, "--port", 0,
                                   "--out", tmp_path / "server.csv", "--idle-timeout", 60),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    drafters = []
    try:
        port = int(server.stdout.readline().split("127.0.0.1:")[1].split()[0])
        cmd = _cli("drafter", "--port", port, "--client", 0, "--draft", "draft-xs", "--domains", "code", "--tokens", 200,
                   "--link-delay-ms", 60)
        # SIGINT as a terminal's Ctrl-C delivers it: a test runner started in the background (`make test &`) runs
        # with SIGINT ignored, and a child inherits that; the drafter gets the default disposition back
        first = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**_env(), HOLD_ENV: "1"},
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        drafters.append(first)
        read_until(first.stdout, "round 0 verified")   # mid-generation on any host: it holds there (HOLD_ENV)
        first.send_signal(signal.SIGINT)
        assert first.wait(30) == 130, first.stderr.read()
        again = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=120)
        assert again.returncode == 0, again.stderr
        tokens = [line.split("tokens:", 1)[1].strip() for line in again.stdout.splitlines() if "tokens:" in line]
        assert tokens == [clean], f"restarted drafter got {tokens}, a clean run gives {clean}"
        assert server.wait(60) == 0, server.stderr.read()
    finally:
        for p in drafters + [server]:
            _stop(p)


def test_bye_with_its_request_in_flight_answers_cancelled_and_frees_the_session(srv, one_off):
    server, stub = one_off(clients=(0,), former=Gated())
    inside, release = threading.Event(), threading.Event()
    real = server.verifier.verify

    def verify(requests):   # hold the pass, to Bye while the request is being verified
        if any(r.stream == "busy" for r in requests):
            inside.set()
            release.wait(10)
        return real(requests)
    server.verifier.verify = verify
    for cycle in range(20):
        tok = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB), timeout=10).token
        queued = cycle % 2 == 0
        if queued:
            server.former.open.clear()
        fut = stub.Verify.future(_request(0, tok, "queued" if queued else "busy", 2, new=list(range(1, 200))),
                                 timeout=30)
        wait_until(lambda: server.queue if queued else inside.is_set(), 30, "the request queued or in its pass")
        stub.Bye(pb.ByeRequest(client=0, token=tok), timeout=10)
        release.set()
        with pytest.raises(grpc.RpcError) as info:
            fut.result(timeout=30)
        assert info.value.code() == grpc.StatusCode.CANCELLED, info.value.details()
        server.former.open.set()
        inside.clear()
        release.clear()
        wait_until(lambda: not (server.verifier.sessions or server._busy), 30,
                   f"cycle {cycle}: the session to end with its Bye")
    assert not server.queue


def test_silent_clients_are_dropped_and_late_joiners_do_not_stall_sync_rounds(srv, one_off):
    from specedge.serving.__main__ import main
    from specedge.serving.policies.batching import SyncRounds
    from specedge.serving.real.server import CLIENT_TIMEOUT
    assert CLIENT_TIMEOUT <= 10
    with pytest.raises(SystemExit) as info:
        main(["server", "--client-timeout", "0"])
    assert info.value.code == 2
    formed = []

    class Recording(SyncRounds):   # the clients each formed batch waited for
        def form(self, queue, now, active):
            batch = super().form(queue, now, active)
            if batch:
                formed.append((frozenset(p.client for p in batch), active))
            return batch
    server, stub = one_off(clients=(0, 1, 2), former=Recording(), client_timeout=1.0, start_barrier=True,
                           round_wait=600)
    t0, t1 = (stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=10).token for c in (0, 1))

    def both(rnd, new0, new1):
        f0 = stub.Verify.future(_request(0, t0, "a", 1, new=new0, round=rnd), timeout=30)
        f1 = stub.Verify.future(_request(1, t1, "b", 1, new=new1, round=rnd), timeout=30)
        return f0.result(), f1.result()
    start = time.monotonic()
    r0, r1 = both(0, [1, 2, 3], [4, 5, 6])   # client 2 never says Hello: the barrier opens after 1 s
    assert time.monotonic() - start > 0.9    # a lower bound: the barrier's own wait, on any host
    silent = stub.Hello(pb.HelloRequest(client=2, vocab_size=VOCAB), timeout=10).token   # joins late, stays silent
    assert silent and server.barrier_open
    for rnd in range(1, 4):
        r0, r1 = both(rnd, [r0.token], [r1.token])
    assert [a for _, a in formed] == [frozenset({0, 1})] * 4, "a silent late joiner was waited for"
    wait_until(lambda: 2 not in server.active, 30, "the silent late joiner's drop")
    assert server.ended[2].startswith("dropped: no request for 1 s")


def test_a_batch_beyond_max_pass_tokens_runs_in_several_passes_with_the_same_verdicts(srv, one_off):
    server, stub = one_off(former=Gated(), max_pass_tokens=400)
    toks = [stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=10).token for c in (0, 1, 2)]
    prompts = [list(range(10 + c, 10 + c + 250)) for c in range(3)]
    server.former.open.clear()
    futs = [stub.Verify.future(_request(c, toks[c], f"long{c}", 3, new=prompts[c]), timeout=60) for c in range(3)]
    _release_when_queued(server, 3)
    replies = [f.result(timeout=60) for f in futs]
    assert len({r.batch for r in replies}) == 1 and server.passes == 3   # one batch, one pass per request
    for c, r in enumerate(replies):
        ref = Verifier(srv["target"]).verify([Request("r", prompts[c], [5, 5, 5])])[0]
        assert (r.accepted, r.token) == (ref.accepted, ref.token)
    with pytest.raises(ValueError, match="max_pass_tokens"):
        VerificationServer(Verifier(srv["target"]), FCFS(), FixedS(2, 1), [0], max_pass_tokens=0)


def test_one_request_in_flight_per_client_is_checked_before_parsing(srv, one_off):
    server, stub = one_off(clients=(0,), former=Gated())
    parsed = []
    real = server._parse
    server._parse = lambda *a: parsed.append(1) or real(*a)
    tok = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB), timeout=10).token
    server.former.open.clear()
    held = stub.Verify.future(_request(0, tok, "s", 2, 1.0, _dense(np.full((2, VOCAB), 1 / VOCAB)), round=0),
                              timeout=30)
    wait_until(lambda: server.queue, 30, "the held request queued")
    at_cap = _request(0, tok, "s", 64, 1.0, _dense(np.full((64, VOCAB), 1 / VOCAB)), round=1)
    futs = [stub.Verify.future(at_cap, timeout=30) for _ in range(12)]
    codes = [f.exception(timeout=30).code() for f in futs]
    assert codes == [grpc.StatusCode.FAILED_PRECONDITION] * 12 and len(parsed) == 1
    server.former.open.set()
    with server.cond:
        server.cond.notify_all()
    assert held.result(timeout=30).batch >= 0


def test_refused_calls_are_counted_not_each_logged(one_off):
    server, stub = one_off(clients=(0,))
    rows = len(server.events)
    for _ in range(300):
        with pytest.raises(grpc.RpcError):
            stub.Verify(_request(0, "forged", "s", 1), timeout=10)
    assert server.refusals[(0, "PERMISSION_DENIED", "token")] == 300
    assert len(server.events) - rows <= 10


def test_numeric_fields_are_range_checked(srv):
    c = 9
    tok = _hello(srv, c)
    for kw, match in ((dict(t_sent=-1.0), "t_sent"), (dict(t_sent=math.nan), "t_sent"), (dict(slo_class=1e9), "slo_class"),
                      (dict(slo_class=2.5), "slo_class")):
        _refused(srv, _request(c, tok, "n", 1, **kw), grpc.StatusCode.INVALID_ARGUMENT, match)
    r = _round(srv["stub"], c, tok, "n", 4, [1, 2, 3])
    _refused(srv, _request(c, tok, "n", 1, new=[r.token], round=4), grpc.StatusCode.INVALID_ARGUMENT, "round")
    srv["stub"].Bye(pb.ByeRequest(client=c, token=tok), timeout=10)


def test_server_cli_exits_non_zero_when_a_client_was_dropped_mid_generation(tmp_path):
    proc = subprocess.Popen(_cli("server", "--port", 0, "--clients", 1, "--capacity", 2, "--client-timeout", 1,
                                 "--idle-timeout", 3, "--out", tmp_path / "s.csv"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        port, key = served(proc.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.VerifierStub(channel)
            tok = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB, key=key), timeout=10).token
            assert _round(stub, 0, tok, "s", 0, [1, 2, 3]).batch == 0   # one round, then silence
        rc = proc.wait(60)
        err = proc.stderr.read()
    finally:
        _stop(proc)
    assert rc == 1, err
    assert "client 0 FAILED: dropped: no request for 1 s" in err


def test_run_exits_when_the_server_stopped_whatever_its_drafters_do(tmp_path):
    start = time.monotonic()
    done = subprocess.run(_cli("run", "--clients", 1, "--capacity", 2, "--tokens", 4, "--link-delay-ms", 1e9,
                               "--client-timeout", 1, "--idle-timeout", 2, "--out", tmp_path / "r.csv"),
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - start < 90


def test_soak_honest_and_hostile_clients_leave_no_session_behind(srv, one_off):
    """A bounded soak (three honest runs each, four cycles of every hostile client): honest drafters beside forged tokens, follow-ups without the
    verdict's token, Bye in flight, silent clients and at-cap floods. Honest tokens equal greedy
    decoding; once every client left, no session, cache, queued request or live client remains. (The
    server's resident memory over a longer soak: benchmarks/bench_serving_chaos.py, docs/serving-guarantees.md.)"""
    server, stub = one_off(clients=tuple(range(6)), client_timeout=1.0)
    specs = {0: ClientSpec("draft-xs", ("code",), 1, 12), 1: ClientSpec("draft-xs", ("sql",), 1, 12)}
    stop, out, errors, cycles = threading.Event(), {}, [], {}
    address = f"127.0.0.1:{server.port}"
    uniform = _dense(np.full((64, VOCAB), 1 / VOCAB))

    def honest(c):
        out[c] = runs = []
        while not stop.is_set() or not runs:
            runs.append(client_main(address, c, specs[c], model=srv["draft"], rpc_timeout=60)["outputs"])

    def hostile(c):
        k = 0
        while not stop.is_set():
            k += 1
            cycles[c] = k
            try:
                tok = stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=10).token
            except grpc.RpcError:
                wait_until(lambda: c not in server.active, 30, f"client {c}'s drop")   # still live
                continue
            try:
                if c == 2:
                    for msg in (_request(c, "forged", "s", 1), _request(c, tok, "s", 1, new=[])):
                        with pytest.raises(grpc.RpcError):
                            stub.Verify(msg, timeout=10)
                    r = _round(stub, c, tok, "s", 0, list(range(1, 100 + k)))
                    with pytest.raises(grpc.RpcError):
                        _round(stub, c, tok, "s", 1, [])
                    _round(stub, c, tok, "s", 2, [r.token])
                elif c == 3:
                    fut = stub.Verify.future(_request(c, tok, "s", 1, new=list(range(1, 600))), timeout=30)
                    if k % 2:   # Bye with the request in its pass, or still on its way / queued
                        wait_until(lambda: server._busy or fut.done(), 30, "the request in its pass")
                    stub.Bye(pb.ByeRequest(client=c, token=tok), timeout=10)
                    fut.exception()
                    continue
                elif c == 4:
                    _round(stub, c, tok, "s", 0, list(range(1, 300)))
                    wait_until(lambda: c not in server.active, 30, "the silent client's drop")
                    continue
                else:
                    futs = [stub.Verify.future(_request(c, tok, "s", 64, 1.0, uniform, round=r), timeout=30)
                            for r in range(4)]
                    for f in futs:
                        f.exception()
                stub.Bye(pb.ByeRequest(client=c, token=tok), timeout=10)
            except (grpc.RpcError, AssertionError, pytest.fail.Exception) as err:
                errors.append(f"client {c}: {err!r}"[:300])
    threads = [threading.Thread(target=honest, args=(c,)) for c in specs]
    threads += [threading.Thread(target=hostile, args=(c,)) for c in (2, 3, 4, 5)]
    for t in threads:
        t.start()
    # the traffic's extent is counted, not timed: three honest runs each, four cycles of every hostile client
    wait_until(lambda: all(len(out.get(c, [])) >= 3 for c in specs) and all(cycles.get(c, 0) >= 4 for c in (2, 3, 4, 5)),
               240, "three honest runs each and four hostile cycles each")
    stop.set()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    wait_until(lambda: not (server.active or server.verifier.sessions), 30, "every client gone and its session freed")
    assert not errors, errors[:3]
    for c, spec in specs.items():
        ref = _reference(srv["target"], spec)
        assert out[c] and all(run == ref for run in out[c]), f"honest client {c} was disturbed"
    assert not server.active and not server.queue and not server._busy
    assert not server.verifier.sessions and not server._last_used and not server._expect
    assert server.request_errors == 0 and not server.policy_errors and server.failure is None
    assert len(server.events) < 2000   # refused calls are counted, not each kept
    assert server.interrupted.get(3, 0) >= 3 and server.interrupted.get(4, 0) >= 3   # the traffic happened
    assert sum(server.refusals.values()) >= 10 and len(out[0]) >= 1
