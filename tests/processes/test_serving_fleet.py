"""The verification server under a real edge fleet's conditions (loopback, bounded counts; servers started
here are stopped here): session memory that runs out without killing an active client, a slow client
that does not pace sync rounds, drafters whose clocks started elsewhere, ids that cannot be squatted or
finished by others, flags the code cannot take refused up front, IPv6 literals, and event rows that
stay bounded. Each test reproduces a reported failure; honest clients' tokens equal single-process greedy
decoding throughout."""
import subprocess
import threading
import time

import grpc
import pytest

from specedge import zoo
from specedge.serving.real import wire_pb2 as pb
from specedge.serving.real import wire_pb2_grpc as pb_grpc
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.real.codec import host_port
from specedge.serving.real.drafter import DrafterError, Link, client_main
from specedge.serving.real.server import MAX_SECONDS, VerificationServer
from specedge.serving.real.verifier import Request, Verifier
from specedge.serving.workload import ClientSpec

from process_waits import read_until, wait_until
from serving_probes import VOCAB, Servers, cli, env, reference, server_cli, stop, verify_round

KEY = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def models():
    return dict(target=zoo.load_model("target-m"), draft=zoo.load_model("draft-xs"))


@pytest.fixture
def servers(models):
    made = Servers(models["target"])
    yield made
    made.close()


def _address(server):
    return f"127.0.0.1:{server.port}"


def _drafter(server, models, client, spec, out, **kw):
    """client_main in a thread: its result, or the DrafterError it raised, lands in ``out[client]``."""
    def run():
        try:
            out[client] = client_main(_address(server), client, spec, model=models["draft"], rpc_timeout=120, **kw)
        except DrafterError as err:
            out[client] = err
    t = threading.Thread(target=run)
    t.start()
    return t


def _session_bytes(target, n_tokens):
    probe = Verifier(target)
    probe.verify([Request("p", list(range(1, n_tokens)), [5])])
    return probe.cache_bytes("p")


def _rows(server, c):
    return [r for r in server.log if r["client"] == c]


# ---------------------------------------------------------------- session memory
def test_an_active_drafter_is_never_evicted_by_a_cache_filler(models, servers):
    """Reported: an attacker touching its own long sessions kept them most recently used, and the honest
    drafters drafting between two rounds were evicted and died. Now the filler's new sessions are refused
    ("retry") while active sessions hold the memory, and the honest drafter finishes with greedy's tokens."""
    cap = _session_bytes(models["target"], 400)
    server, stub = servers(clients=(0, 1), max_cache_bytes=cap, round_wait=30)
    spec = ClientSpec("draft-xs", ("code",), 1, 24)
    out = {}
    honest = _drafter(server, models, 0, spec, out, link=Link(0.02))
    tok = stub.Hello(pb.HelloRequest(client=1, vocab_size=VOCAB), timeout=10).token
    codes = []
    for k in range(6):   # a long new session at each of the honest drafter's rounds
        wait_until(lambda: len(_rows(server, 0)) > k or 0 in out, 60, f"honest round {k}")
        try:
            verify_round(stub, 1, tok, f"fill{k}", 10 + k, list(range(1, 600)))
            codes.append("OK")
        except grpc.RpcError as err:
            codes.append(err.code().name)
            assert "full of active sessions" in err.details() and "retry" in err.details(), err.details()
    honest.join(120)
    assert not isinstance(out[0], Exception), out[0]
    assert out[0]["outputs"] == reference(models["target"], spec)
    assert "RESOURCE_EXHAUSTED" in codes and server.evictions == 0


def test_the_drafter_reopens_an_evicted_session_with_its_whole_context(models, servers):
    """Reported: the shipped drafter never started a new session after an eviction and died. A session idle
    past the round wait is evicted for a filler's new session; the drafter opens a new one with its whole
    context and its tokens equal a clean run's."""
    spec = ClientSpec("draft-xs", ("code",), 1, 24)
    cap = _session_bytes(models["target"], 300)
    server, stub = servers(clients=(0, 1), max_cache_bytes=cap, round_wait=0.05)
    out = {}
    honest = _drafter(server, models, 0, spec, out, link=Link(0.2))   # 0.4 s between rounds: idle past 0.05 s
    tok = stub.Hello(pb.HelloRequest(client=1, vocab_size=VOCAB), timeout=10).token
    wait_until(lambda: len(_rows(server, 0)) >= 2, 60, "two honest rounds")
    k = 0
    while not server.evictions and 0 not in out:   # each try is one request, at most one per honest round
        wait_until(lambda: not server._clients[0].busy or 0 in out, 60, "the honest drafter between rounds")
        try:
            verify_round(stub, 1, tok, f"fill{k}", k, list(range(1, 290)))
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.details()
        k += 1
    honest.join(120)
    assert server.evictions >= 1 and any("evicted" in e["event"] for e in server.events if e["client"] == 0)
    assert not isinstance(out[0], Exception), out[0]
    assert out[0]["outputs"] == reference(models["target"], spec)
    assert any("~1" in r["session"] for r in out[0]["rows"]), "the drafter did not open a new session"


def test_eviction_takes_sessions_over_their_share_first(models, servers):
    """Two idle sessions: the larger one (over its client's share, cap / clients) goes first although the
    smaller one is the least recently used; an active one is never taken."""
    big = _session_bytes(models["target"], 700)
    server, stub = servers(clients=(0, 1, 2), max_cache_bytes=1.2 * big, round_wait=0.05)
    toks = [stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=10).token for c in range(3)]
    verify_round(stub, 0, toks[0], "small", 0, list(range(1, 40)))    # least recently used, under its share
    verify_round(stub, 1, toks[1], "big", 0, list(range(1, 700)))     # over its share (cap / 3)
    wait_until(lambda: all(time.monotonic() - server._clients[c].last_reply > 0.05 for c in (0, 1)), 10,
               "both sessions idle past the round wait")
    verify_round(stub, 2, toks[2], "new", 0, list(range(1, 300)))
    assert server.evictions == 1
    assert [e["client"] for e in server.events if e["event"].startswith("evicted")] == [1]


# ---------------------------------------------------------------- liveness against slowness
def _sync_fleet(models, servers, max_late_rounds, slow_tokens=12, honest_tokens=24):
    honest = {0: ClientSpec("draft-xs", ("code",), 1, honest_tokens), 1: ClientSpec("draft-xs", ("sql",), 1, honest_tokens)}
    slow = ClientSpec("draft-xs", ("math",), 1, slow_tokens)
    server, _ = servers(clients=(0, 1, 2), former=SyncRounds(), round_wait=0.3, max_late_rounds=max_late_rounds,
                        client_timeout=60, start_barrier=True)
    out = {}
    threads = [_drafter(server, models, c, s, out) for c, s in honest.items()]
    threads.append(_drafter(server, models, 2, slow, out, link=Link(0.5)))   # >= 1 s between its rounds
    for t in threads:
        t.join(300)
    return server, out, honest, slow


def test_a_slow_client_does_not_pace_sync_rounds_and_keeps_its_tokens(models, servers):
    """Reported: one client sending a valid request every 9.5 s (under the drop timeout) held every sync
    round. A round waits for a missing client at most the round wait, then goes on; the late request
    joins the next round, and the slow client's own tokens are exact too."""
    server, out, honest, slow = _sync_fleet(models, servers, max_late_rounds=1000)
    for c, spec in honest.items():
        assert out[c]["outputs"] == reference(models["target"], spec), f"honest client {c}"
    assert out[2]["outputs"] == reference(models["target"], slow), "the slow client's own tokens"
    batches = {}
    for r in server.log:
        batches.setdefault(r["batch"], set()).add(r["client"])
    slow_end = max(r["batch"] for r in _rows(server, 2))
    without = [b for b, who in batches.items() if b < slow_end and who == {0, 1}]
    assert without, "every round waited for the slow client"
    assert server.late_rounds >= 1 and any(e["event"].startswith("late:") for e in server.events if e["client"] == 2)


def test_a_client_late_round_after_round_is_dropped_with_a_reason(models, servers):
    # the honest drafters outlast the slow one's three late rounds: each of their rounds without it waits 0.3 s,
    # each of its rounds takes >= 1 s of link delay, and they need >= 30 rounds for 96 tokens at S = 2
    server, out, honest, _ = _sync_fleet(models, servers, max_late_rounds=2, slow_tokens=40, honest_tokens=96)
    for c, spec in honest.items():
        assert out[c]["outputs"] == reference(models["target"], spec), f"honest client {c}"
    assert isinstance(out[2], DrafterError) and "PERMISSION_DENIED" in str(out[2])
    assert server.ended[2].startswith("dropped: late for 3 rounds in a row")


# ---------------------------------------------------------------- clocks
@pytest.mark.parametrize("offset", [86400.0, -86400.0])
def test_a_drafter_whose_clock_is_a_day_off_is_served(models, servers, offset):
    """Reported: a drafter on a machine whose monotonic clock was a day ahead was refused at round 0
    ("t_sent ... later than the server's receipt"). The drafter converts its clock by the offset it
    measured at Hello; the server checks only that t_sent does not decrease within a Hello."""
    server, stub = servers(clients=(0, 1))
    spec = ClientSpec("draft-xs", ("qa",), 1, 12)
    res = client_main(_address(server), 0, spec, model=models["draft"], clock=lambda: time.monotonic() + offset)
    assert res["outputs"] == reference(models["target"], spec)
    ups = [r["up"] for r in _rows(server, 0)]
    assert ups and all(abs(u) < 5 for u in ups), ups   # the uplink on the server's clock, not a day
    tok = stub.Hello(pb.HelloRequest(client=1, vocab_size=VOCAB), timeout=10).token   # a raw client, unconverted
    ahead = time.monotonic() + offset + 86400
    r = verify_round(stub, 1, tok, "s", 0, [1, 2, 3], t_sent=ahead)
    with pytest.raises(grpc.RpcError) as info:
        verify_round(stub, 1, tok, "s", 1, [r.token], t_sent=ahead - 1)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "t_sent" in info.value.details()


# ---------------------------------------------------------------- ids
def test_ids_cannot_be_claimed_without_the_key(models, servers):
    server, stub = servers(clients=(0,), key=KEY)
    for key in ("", "f" * 32):
        with pytest.raises(grpc.RpcError) as info:
            stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB, key=key), timeout=10)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED and "key" in info.value.details()
    assert not server.active
    spec = ClientSpec("draft-xs", ("code",), 1, 8)
    assert client_main(_address(server), 0, spec, model=models["draft"], key=KEY)["outputs"] == \
        reference(models["target"], spec)


def test_server_cli_outsiders_cannot_squat_ids_and_the_drafter_finishes(tmp_path):
    """Reported: a script saying Hello on every id before the drafters did locked them out (ALREADY_EXISTS).
    The CLI server only lets drafters with its key (its key file) claim an id."""
    server, port, _ = server_cli(tmp_path, "--clients", 1, "--idle-timeout", 60)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.RpcError) as info:   # the squatter has no key
                pb_grpc.VerifierStub(channel).Hello(pb.HelloRequest(client=0, vocab_size=VOCAB), timeout=10)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        done = subprocess.run(cli("drafter", "--port", port, "--client", 0, "--tokens", 8), capture_output=True,
                              text=True, env=env(), timeout=120)
        assert done.returncode == 0, done.stderr
        assert server.wait(60) == 0, server.stderr.read()
    finally:
        stop(server)


def test_the_drafter_retries_a_transiently_taken_id(models, servers):
    """Reported: a drafter whose id was held (a squatter, a killed drafter before its drop) died at once
    with ALREADY_EXISTS. It retries with backoff and goes on once the id is free."""
    server, stub = servers(clients=(0,))
    holder = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB), timeout=10).token
    spec = ClientSpec("draft-xs", ("sql",), 1, 8)
    out = {}
    t = _drafter(server, models, 0, spec, out)
    wait_until(lambda: server.refusals.get((0, "ALREADY_EXISTS", "client"), 0) >= 2, 30, "the drafter's retries")
    stub.Bye(pb.ByeRequest(client=0, token=holder, finished=False), timeout=10)
    t.join(120)
    assert not isinstance(out[0], Exception), out[0]
    assert out[0]["outputs"] == reference(models["target"], spec)


def test_bye_finished_without_a_round_finishes_nothing_and_stops_nothing(models, servers):
    """Reported: Hello then Bye(finished=true) on every id, before the drafters came, stopped the server
    (0 tokens, exit 0). Such a Bye counts as "finished nothing": the server waits for real drafters."""
    server, stub = servers(clients=(0, 1), stop_when_done=True)
    for c in (0, 1):
        tok = stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=10).token
        stub.Bye(pb.ByeRequest(client=c, token=tok, finished=True), timeout=10)
    assert server.unfinished() == {c: "finished nothing: said Bye(finished=true) without a verified round"
                                   for c in (0, 1)}
    specs = {0: ClientSpec("draft-xs", ("code",), 1, 8), 1: ClientSpec("draft-xs", ("qa",), 1, 8)}
    out = {}
    for t in [_drafter(server, models, c, s, out) for c, s in specs.items()]:
        t.join(120)
    for c, spec in specs.items():
        assert not isinstance(out[c], Exception), out[c]
        assert out[c]["outputs"] == reference(models["target"], spec)
    assert server.wait(30) and server.unfinished() == {}


def test_server_cli_says_finished_nothing_and_exits_non_zero(tmp_path):
    proc, port, key = server_cli(tmp_path, "--clients", 1, "--idle-timeout", 2)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.VerifierStub(channel)
            tok = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB, key=key), timeout=10).token
            stub.Bye(pb.ByeRequest(client=0, token=tok, finished=True), timeout=10)
        rc = proc.wait(60)
        err = proc.stderr.read()
    finally:
        stop(proc)
    assert rc == 1 and "client 0 FAILED: finished nothing" in err, err


# ---------------------------------------------------------------- flags, addresses, bounded rows
@pytest.mark.parametrize("argv, flag", [
    (["server", "--idle-timeout", "1e10"], "--idle-timeout"),
    (["server", "--client-timeout", "1e10"], "--client-timeout"),
    (["server", "--round-wait", "0"], "--round-wait"),
    (["server", "--clients", "100000000", "--capacity", "100000000"], "--clients"),
    (["server", "--clients", "2", "--capacity", "1000"], "--capacity"),
    (["drafter", "--rpc-timeout", "1e10"], "--rpc-timeout"),
    (["drafter", "--link-delay-ms", "1e13"], "--link-delay-ms"),
    (["drafter", "--link-mbps", "1e-300"], "--link-mbps"),
    (["drafter", "--client", "-1"], "--client"),
    (["server", "--seed", "-1"], "--seed"),
    (["run", "--seed", str(2 ** 64)], "--seed"),
    (["run", "--top-k", "1000000"], "--top-k"),
])
def test_every_flag_is_range_checked_naming_it(argv, flag, monkeypatch, capsys):
    """Reported: finite but huge values passed the checks and failed later (a crashed scheduling thread,
    an immediate DEADLINE_EXCEEDED, a traceback, a server that never came up). Refused as usage errors."""
    from specedge.serving import __main__ as cmd

    def started(args):
        raise AssertionError(f"{argv} started instead of being refused")
    for name in ("_server", "_drafter", "_run"):
        monkeypatch.setattr(cmd, name, started)
    with pytest.raises(SystemExit) as info:
        cmd.main(argv)
    assert info.value.code == 2
    assert flag in capsys.readouterr().err
    assert MAX_SECONDS < threading.TIMEOUT_MAX


def test_a_drafter_asking_more_positions_than_the_target_has_is_refused_up_front(models, servers):
    """An unclear error found the same way: --tokens beyond the target's positions ran ~2,000 positions
    and then failed mid-generation with a field error; now one line before any round."""
    server, _ = servers(clients=(0,))
    with pytest.raises(DrafterError, match=r"--tokens 3000 .* needs \d+ positions, .* has 2048"):
        client_main(_address(server), 0, ClientSpec("draft-xs", ("code",), 1, 3000), model=models["draft"])
    assert not server.log


@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_ipv6_literals_with_or_without_brackets(models, host):
    """Reported: --host ::1 was refused as "in use by another process, or not an address of this machine"."""
    server = VerificationServer(Verifier(models["target"]), SyncRounds(), _fixed(), [0], start_barrier=False)
    try:
        port = server.start(0, host)
        assert host_port(host, port) == f"[::1]:{port}"
        spec = ClientSpec("draft-xs", ("chat",), 1, 6)
        res = client_main(host_port(host, port), 0, spec, model=models["draft"])
        assert res["outputs"] == reference(models["target"], spec)
    finally:
        server.stop()


def _fixed():
    from specedge.serving.policies.allocation import FixedS
    return FixedS(2, 1)


def test_ended_hellos_are_counted_not_each_logged(servers):
    """Reported: 20,000 Hello/Bye cycles left 20,000 event rows. The first few of a kind are rows, the rest a
    count (one summary row when the server stops)."""
    server, stub = servers(clients=(0,))
    for _ in range(300):
        tok = stub.Hello(pb.HelloRequest(client=0, vocab_size=VOCAB), timeout=10).token
        stub.Bye(pb.ByeRequest(client=0, token=tok, finished=False), timeout=10)
    assert server.event_counts[(0, "aborted")] == 300 and len(server.events) <= 10
    server.stop()
    assert any("300 'aborted' events" in e["event"] for e in server.events)


def test_the_second_terminal_can_use_an_ipv6_server(tmp_path):
    """The CLI pair on ::1 (the README's two terminals with --host): the server prints a bracketed address."""
    server = subprocess.Popen(cli("server", "--clients", 1, "--capacity", 2, "--port", 0, "--host", "::1",
                                  "--idle-timeout", 60, "--out", tmp_path / "s.csv"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env())
    try:
        line = read_until(server.stdout, "verification server on [::1]:")
        port = int(line.split("[::1]:")[1].split()[0])
        done = subprocess.run(cli("drafter", "--host", "[::1]", "--port", port, "--client", 0, "--tokens", 6),
                              capture_output=True, text=True, env=env(), timeout=120)
        assert done.returncode == 0, done.stderr
        assert server.wait(60) == 0, server.stderr.read()
    finally:
        stop(server)
