"""The verification server's logic in process (``serving.real.server``): its servicer methods called with wire messages
and a fake context that records the abort code, its scheduling thread run without gRPC (no port), and its round,
pass, drop, late-round and eviction rules called at their boundaries. Outputs are checked against the target's own
greedy decode; the real server over gRPC is tested in tests/processes."""
import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import SimpleNamespace

import grpc
import pytest

from specedge import decoding, zoo
from specedge.serving.real import codec, server as S
from specedge.serving.real import wire_pb2 as pb
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.real.drafter import Drafter
from specedge.serving.interfaces import Pending
from specedge.serving.real.verifier import Request, Verifier

KEY = "k" * 32
CODES = grpc.StatusCode


class Aborted(Exception):
    def __init__(self, code, msg):
        super().__init__(f"{code.name}: {msg}")
        self.code, self.msg = code, msg


class Ctx:
    """What a servicer method sees of gRPC: ``abort`` raises (as grpc's does), callbacks are recorded."""

    def __init__(self):
        self.callbacks = []

    def abort(self, code, msg):
        raise Aborted(code, msg)

    def add_callback(self, fn):
        self.callbacks.append(fn)


@pytest.fixture(scope="module")
def prompts():
    tok = zoo.load_tokenizer()
    return [tok.encode(t)[-16:] for t in zoo.eval_prompts("code", 1) + zoo.eval_prompts("sql", 1)]


def make(target, clients=(0,), former=None, alloc=None, **kw):
    kw.setdefault("key", KEY)
    return S.VerificationServer(Verifier(target), former or FCFS(), alloc or FixedS(4 * len(clients), len(clients)),
                                list(clients), target_name="target-m", **kw)


def hello(srv, c, key=KEY, vocab=0):
    return srv.Hello(pb.HelloRequest(client=c, key=key, vocab_size=vocab), Ctx())


def refusal(fn, *args) -> Aborted:
    with pytest.raises(Aborted) as e:
        fn(*args)
    return e.value


def msg(h, c, rnd, session, new, drafts=(), **kw):
    return pb.VerifyRequest(session=session, client=c, round=rnd, token=h.token, new_tokens=list(new),
                            draft_ids=list(drafts), **kw)


@contextmanager
def scheduling(srv):
    """The server's scheduling thread, without gRPC; stopped (and joined) on exit."""
    srv._thread.start()
    try:
        yield srv
    finally:
        srv.stop()


def queued(srv, n=1):
    """Wait (on the server's condition, no sleep) until ``n`` requests are queued."""
    with srv.cond:
        assert srv.cond.wait_for(lambda: len(srv.queue) >= n, timeout=30)


def generate(srv, h, c, d, sizes=3, rnd0=0):
    """One drafter's loop over the servicer: propose, Verify, commit, until done; returns the next round."""
    rnd = rnd0
    while not d.done:
        req, _ = d.propose(sizes)
        reply = srv.Verify(codec.request_to_wire(req, client=c, round=rnd, token=h.token, top_k=None,
                                                 vocab=srv.verifier.vocab_size), Ctx())
        d.commit(codec.result_from_wire(reply))
        rnd += 1
    return rnd


# ------------------------------------------------------------------------------ construction
@pytest.mark.parametrize("kw, match", [
    (dict(idle_timeout=0), "idle_timeout: must be a finite value > 0"),
    (dict(idle_timeout=float("nan")), "idle_timeout"),
    (dict(client_timeout=True), "client_timeout"),
    (dict(client_timeout=float("inf")), "client_timeout"),
    (dict(max_pass_tokens=0), "max_pass_tokens"),
    (dict(max_cache_bytes=-1.0), "max_cache_bytes"),
    (dict(round_wait=0.0), "round_wait"),
    (dict(idle_timeout=S.MAX_SECONDS * 1.5), "idle_timeout: at most 1e\\+06 s"),
    (dict(round_wait=S.MAX_SECONDS + 1), "round_wait: at most"),
    (dict(max_draft=0), "max_draft: must be >= 1"),
    (dict(max_late_rounds=0), "max_late_rounds: must be an integer >= 1"),
    (dict(max_late_rounds=True), "max_late_rounds"),
    (dict(max_late_rounds=2.0), "max_late_rounds"),
    (dict(key="short"), "key: must be a string of at least 16 characters"),
])
def test_bad_settings_are_refused_naming_them(target, kw, match):
    with pytest.raises(ValueError, match=match):
        make(target, **kw)


def test_settings_at_their_edges_are_taken(target):
    srv = make(target, idle_timeout=S.MAX_SECONDS, max_late_rounds=1, key="x" * 16, max_draft=1, round_wait=S.MAX_SECONDS)
    assert srv.max_late_rounds == 1 and srv.max_draft == 1
    assert make(target, key=None).key is None


@pytest.mark.parametrize("port", [-1, 65536, True, 8.0, "80"])
def test_start_refuses_a_bad_port_before_listening(target, port):
    srv = make(target)
    with pytest.raises(ValueError, match="port: must be an integer in 0..65535"):
        srv.start(port)
    assert srv._grpc is None and not srv._thread.is_alive()


# ------------------------------------------------------------------------------ Hello, Bye, forget
def test_hello_answers_with_the_allocation_and_the_targets_limits(target):
    srv = make(target, clients=(0, 1), max_draft=7)
    h = hello(srv, 1, vocab=target.config.vocab_size)
    assert (h.draft_length, h.vocab_size, h.target_model, h.max_draft) == (4, target.config.vocab_size, "target-m", 7)
    assert h.max_positions == target.config.max_position_embeddings and len(h.token) == 32
    assert srv.active == {1} and srv.known == {1} and srv.rounds == {1}     # before the barrier opened
    assert hello(srv, 0).token != h.token


@pytest.mark.parametrize("c, key, vocab, code, match", [
    (5, KEY, 0, CODES.INVALID_ARGUMENT, r"client: 5 is not one of \[0, 1\]"),
    (0, "x" * 32, 0, CODES.PERMISSION_DENIED, "key: not this server's key"),
    (0, "", 0, CODES.PERMISSION_DENIED, "key: not this server's key"),
    (0, KEY, 7, CODES.INVALID_ARGUMENT, "vocab_size: draft has 7, target has"),
])
def test_hello_refusals(target, c, key, vocab, code, match):
    srv = make(target, clients=(0, 1))
    e = refusal(hello, srv, c, key, vocab)
    assert e.code == code and re.search(match, e.msg), e.msg
    assert not srv.active and not srv._clients


def test_a_live_client_cannot_say_hello_again_and_a_stopping_server_takes_none(target):
    srv = make(target)
    hello(srv, 0)
    assert refusal(hello, srv, 0).code == CODES.ALREADY_EXISTS
    srv.stopped.set()
    srv._clients.clear()
    e = refusal(hello, srv, 0)
    assert e.code == CODES.UNAVAILABLE and e.msg == "server stopping"


def test_refusals_are_counted_and_only_the_first_ten_of_a_kind_are_rows(target):
    srv = make(target)
    for _ in range(12):
        refusal(hello, srv, 0, "x" * 32)
    refusal(hello, srv, 9)
    assert srv.refusals[(0, "PERMISSION_DENIED", "key")] == 12 and srv.refusals[("other", "INVALID_ARGUMENT", "client")] == 1
    rows = [e for e in srv.events if "PERMISSION_DENIED" in e["event"]]
    assert len(rows) == S.EVENT_ROWS_PER_KIND and all(e["client"] == 0 for e in rows)
    assert [e["client"] for e in srv.events if "INVALID_ARGUMENT" in e["event"]] == [-1]   # an id not ours: -1
    srv.stop()
    assert srv.events[-1]["event"] == "error: PERMISSION_DENIED: 12 calls refused (key), the first 10 logged"
    assert srv.refusals == {}


def test_bye_needs_the_token_and_says_how_the_hello_ended(target):
    srv = make(target, clients=(0, 1, 2))
    h0, h1 = hello(srv, 0), hello(srv, 1)
    e = refusal(srv.Bye, pb.ByeRequest(client=0, token=h1.token), Ctx())
    assert e.code == CODES.PERMISSION_DENIED and "token: not the token Hello gave client 0" in e.msg
    srv.Bye(pb.ByeRequest(client=0, token=h0.token, finished=True), Ctx())
    srv.Bye(pb.ByeRequest(client=1, token=h1.token, finished=False), Ctx())
    assert srv.ended == {0: "finished nothing: said Bye(finished=true) without a verified round",
                         1: "aborted: said Bye before its last round"}
    assert srv.finished == set() and srv.interrupted == {0: 1, 1: 1} and not srv.active
    assert srv.unfinished() == {0: srv.ended[0], 1: srv.ended[1], 2: "no verified round: never said Hello"}
    assert refusal(srv.Bye, pb.ByeRequest(client=0, token=h0.token), Ctx()).code == CODES.PERMISSION_DENIED  # ended


def test_forget_gives_a_client_up_live_or_not(target):
    srv = make(target, clients=(0, 1))
    hello(srv, 0)
    srv.forget(0, "exit code 3")
    srv.forget(1, "exit code 4")
    assert srv.given_up == {0, 1} and srv.known == {0, 1} and not srv.active
    assert srv.ended == {0: "dropped: exit code 3"}
    assert [e["event"] for e in srv.events] == ["dropped: exit code 3", "dropped: exit code 4"]


def test_write_key_is_private_and_removed_at_stop(target, tmp_path):
    srv = make(target)
    path = tmp_path / "sub" / "key"
    srv.write_key(path)
    assert path.read_text() == KEY + "\n" and (path.stat().st_mode & 0o777) == 0o600
    assert not path.with_name("key.tmp").exists()
    srv.stop()
    assert not path.exists()
    srv.stop()                 # a second stop: the file is gone already, no error


# ------------------------------------------------------------------------------ Verify's checks (no scheduling)
def test_verify_refusals_before_any_payload_is_read(target, prompts):
    srv = make(target)
    h = hello(srv, 0)
    e = refusal(srv.Verify, msg(SimpleNamespace(token="x"), 0, 0, "p", prompts[0]), Ctx())
    assert e.code == CODES.PERMISSION_DENIED and "say Hello first" in e.msg
    srv.stopped.set()
    assert refusal(srv.Verify, msg(h, 0, 0, "p", prompts[0]), Ctx()).code == CODES.UNAVAILABLE
    srv.stopped.clear()
    srv._clients[0].reserved = True
    e = refusal(srv.Verify, msg(h, 0, 0, "p", prompts[0]), Ctx())
    assert e.code == CODES.FAILED_PRECONDITION and "has a request in flight" in e.msg


@pytest.mark.parametrize("kw, match", [
    (dict(round=0), "round: must increase from request to request, got 0 after 0"),
    (dict(slo_class=1.5), "slo_class: must be 0 \\(none\\) or a whole number"),
    (dict(slo_class=1001.0), "slo_class"),
    (dict(t_sent=4.0), "t_sent: 4.0 is earlier than this client's previous request's \\(5.0\\)"),
    (dict(session="other", new=[]), "session: 'other' is unknown and sends no prompt"),
    (dict(new="wrong"), "new_tokens: a follow-up starts with the last verdict's token"),
    (dict(draft_ids=[10 ** 6]), "draft_ids: ids"),
    (dict(temperature=-1.0), "temperature"),
])
def test_verify_refuses_a_malformed_follow_up_naming_the_field(target, prompts, kw, match):
    srv = make(target, start_barrier=False)
    h = hello(srv, 0)
    with scheduling(srv):
        first = srv.Verify(msg(h, 0, 0, "p", prompts[0], t_sent=5.0), Ctx())
        base = dict(round=1, session="p", new=[first.token], t_sent=5.0)
        base.update(kw)
        if base["new"] == "wrong":
            base["new"] = [(first.token + 1) % target.config.vocab_size]
        m = msg(h, 0, base.pop("round"), base.pop("session"), base.pop("new"), base.pop("draft_ids", ()), **base)
        e = refusal(srv.Verify, m, Ctx())
        assert e.code == CODES.INVALID_ARGUMENT and re.search(match, e.msg), e.msg
        assert not srv._clients[0].busy                   # refused: the client may send again
        ok = srv.Verify(msg(h, 0, 1, "p", [first.token], t_sent=5.0), Ctx())   # equal t_sent is not earlier
        assert ok.batch == 1


def test_slo_class_edges_and_the_deadline_of_eq_6(target, prompts):
    srv = make(target, start_barrier=False)
    h = hello(srv, 0)
    pool = ThreadPoolExecutor(1)
    # no scheduling thread: the request stays queued where its deadline can be read
    fut = pool.submit(srv.Verify, msg(h, 0, 0, "p", prompts[0], [5, 6, 7, 8], slo_class=8.0, t_draft=0.05,
                                      alpha=0.5), Ctx())
    queued(srv)
    p = srv.queue[0].pending
    # eq (6): alpha S / class - T_draft - T_network = 0.5 x 4 / 8 - 0.05 - 0 (t_sent 0: no uplink measured)
    assert p.deadline - p.arrival == pytest.approx(0.2) and p.expected_tokens == 2.0 and p.slo_class == 8
    assert (p.n_draft, p.n_new, p.n_cached) == (4, len(prompts[0]) + 4, 0)
    srv.stop()
    with pytest.raises(Aborted) as err:
        fut.result(timeout=30)
    assert err.value.code == CODES.UNAVAILABLE and err.value.msg == "server stopped"
    srv2 = make(target, start_barrier=False)
    h2 = hello(srv2, 0)
    fut = pool.submit(srv2.Verify, msg(h2, 0, 0, "p", prompts[0], [5, 6, 7, 8], slo_class=1000.0, t_draft=0.05), Ctx())
    queued(srv2)
    p = srv2.queue[0].pending
    assert p.deadline - p.arrival == pytest.approx(4 / 1000 - 0.05)   # alpha 0: taken as 1; may be negative
    srv2.stop()
    pool.shutdown()


def test_a_queued_request_is_cancelled_when_its_client_goes_away_or_says_bye(target, prompts):
    srv = make(target, clients=(0, 1), start_barrier=False)
    h0, h1 = hello(srv, 0), hello(srv, 1)
    pool = ThreadPoolExecutor(2)
    ctx = Ctx()
    f0 = pool.submit(srv.Verify, msg(h0, 0, 0, "p", prompts[0]), ctx)
    queued(srv)
    f1 = pool.submit(srv.Verify, msg(h1, 0, 0, "q", prompts[1]), Ctx())   # client 1's token for client 0: refused
    assert f1.exception(timeout=30).code == CODES.PERMISSION_DENIED
    f1 = pool.submit(srv.Verify, msg(h1, 1, 0, "q", prompts[1]), Ctx())
    queued(srv, 2)
    srv._cancelled(srv.queue[0])
    e = f0.exception(timeout=30)
    assert (e.code, e.msg) == (CODES.CANCELLED, "client cancelled")
    assert srv.events[-1]["event"] == "error: CANCELLED: the client went away while queued"
    srv.Bye(pb.ByeRequest(client=1, token=h1.token), Ctx())
    e = f1.exception(timeout=30)
    assert e.code == CODES.CANCELLED and "with this request queued" in e.msg
    assert srv.queue == [] and not srv._clients[0].busy
    pool.shutdown()


# ------------------------------------------------------------------------------ the scheduling thread
def test_served_rounds_give_the_targets_greedy_text_and_a_full_log(target, draft, prompts):
    srv = make(target, start_barrier=False, stop_when_done=True)
    h = hello(srv, 0)
    with scheduling(srv):
        d = Drafter(draft, prompts[0], 10, "p0")
        rnd = generate(srv, h, 0, d)
        d2 = Drafter(draft, prompts[1], 6, "p1")          # the next prompt: a new session, the old one closed
        generate(srv, h, 0, d2, sizes=2, rnd0=rnd)
        assert list(srv.verifier.sessions) == ["0.1/p1"]
        srv.Bye(pb.ByeRequest(client=0, token=h.token, finished=True), Ctx())
        assert srv.wait(30)                                 # every client finished: the server stops by itself
    assert d.output == decoding.autoregressive(target, prompts[0], 10).tokens.tolist()
    assert d2.output == decoding.autoregressive(target, prompts[1], 6).tokens.tolist()
    assert srv.finished == {0} and srv.ended == {0: "finished"} and srv.unfinished() == {}
    log = srv.log
    assert [r["round"] for r in log] == list(range(len(log))) and [r["batch"] for r in log] == list(range(len(log)))
    assert all(r["tokens"] == r["accepted"] + 1 and r["accepted"] <= r["S"] for r in log)
    assert log[0]["n_cached"] == 0 and log[1]["n_cached"] == len(prompts[0]) + log[0]["accepted"]
    assert len(srv._gaps) == len(log) - 1 and srv.passes == len(log)


def test_sync_rounds_batch_both_clients_and_their_texts_are_each_the_targets(target, draft, prompts):
    srv = make(target, clients=(0, 1), former=SyncRounds())
    hs = [hello(srv, c) for c in (0, 1)]
    outs = {}

    def client(c):
        d = Drafter(draft, prompts[c], 8, f"p{c}")
        generate(srv, hs[c], c, d, sizes=2)
        outs[c] = d.output
        srv.Bye(pb.ByeRequest(client=c, token=hs[c].token, finished=True), Ctx())

    with scheduling(srv), ThreadPoolExecutor(2) as pool:
        list(pool.map(client, (0, 1)))
        assert srv.wait(30)
    for c in (0, 1):
        assert outs[c] == decoding.autoregressive(target, prompts[c], 8).tokens.tolist()
    first = [r for r in srv.log if r["batch"] == 0]
    assert sorted(r["client"] for r in first) == [0, 1]         # the first round waited for both


def test_a_round_goes_on_without_a_late_client_after_the_round_wait(target, prompts):
    srv = make(target, clients=(0, 1), former=SyncRounds(), round_wait=0.05)
    h0 = hello(srv, 0)
    hello(srv, 1)                                              # says Hello, never sends a request
    with scheduling(srv):
        reply = srv.Verify(msg(h0, 0, 0, "p", prompts[0]), Ctx())
    assert reply.batch == 0 and srv.late_rounds == 1
    assert any(e["event"].startswith("late: a round went on without client 1") for e in srv.events)
    assert srv._clients == {} and srv.ended[1] == "live when the server stopped (mid-generation)"


def test_the_first_round_waits_for_every_hello_at_most_the_client_timeout(target, prompts):
    srv = make(target, clients=(0, 1), client_timeout=0.1)
    h0 = hello(srv, 0)                                         # client 1 never says Hello
    with scheduling(srv):
        reply = srv.Verify(msg(h0, 0, 0, "p", prompts[0]), Ctx())
        assert reply.accepted == 0 and srv.barrier_open


def test_an_idle_server_stops_by_itself_unless_drafters_are_loading(target):
    srv = make(target, idle_timeout=0.05)
    with scheduling(srv):
        assert srv.wait(30)
    assert srv.events[-1]["event"] == "stopped: idle for 0.05 s (no Hello or request)" and srv.failure is None
    srv = make(target, idle_timeout=0.05)
    srv.loading(True)                    # held while drafters load; released, idleness counts from then
    with scheduling(srv):
        assert srv.drafters_loading and not srv.stopped.is_set()
        srv.loading(False)
        assert srv.wait(30)


class Raising:
    label = "broken"

    def form(self, queue, now, active):
        raise ZeroDivisionError("no batch")


class RaisingAlloc(FixedS):
    def update(self, outcomes):
        raise KeyError("no allocation")


def test_a_policy_that_raises_fails_only_its_requests(target, prompts):
    srv = make(target, former=Raising(), start_barrier=False)
    h = hello(srv, 0)
    with scheduling(srv):
        e = refusal(srv.Verify, msg(h, 0, 0, "p", prompts[0]), Ctx())
        assert e.code == CODES.INTERNAL and e.msg == "batch former broken failed: ZeroDivisionError: no batch"
        assert srv._thread.is_alive()                         # the server goes on
    srv = make(target, alloc=RaisingAlloc(4, 1), start_barrier=False)
    h = hello(srv, 0)
    with scheduling(srv):
        e = refusal(srv.Verify, msg(h, 0, 0, "p", prompts[0]), Ctx())
        assert e.code == CODES.INTERNAL and e.msg.startswith("draft allocator Fixed-S failed: KeyError")
    assert len(srv.policy_errors) == 1


def test_a_crashed_scheduling_thread_stops_the_server_and_fails_the_waiters(target, prompts, capsys):
    srv = make(target, start_barrier=False)
    h = hello(srv, 0)
    pool = ThreadPoolExecutor(1)
    fut = pool.submit(srv.Verify, msg(h, 0, 0, "p", prompts[0]), Ctx())
    queued(srv)

    def crash():
        raise RuntimeError("bug")

    srv._schedule = crash
    srv._loop()
    e = fut.exception(timeout=30)
    assert e.code == CODES.INTERNAL and e.msg == "server crashed: RuntimeError('bug')"
    assert isinstance(srv.failure, RuntimeError) and srv.stopped.is_set() and srv.queue == []
    assert srv.events[-1]["event"] == "stopped: scheduling thread crashed: RuntimeError('bug')"
    assert "the scheduling thread crashed" in capsys.readouterr().err
    pool.shutdown()


# ------------------------------------------------------------------------------ the rules, at their boundaries
def _slot(client, n_new, n_cached=0, arrival=0.0):
    return SimpleNamespace(pending=Pending(client, f"s{client}", 0, arrival, 0, n_new, n_cached), request=client)


def test_passes_split_at_max_pass_tokens_inclusive(target):
    srv = make(target, max_pass_tokens=10)
    slots = [_slot(0, 4), _slot(1, 2, 4), _slot(2, 4), _slot(3, 20), _slot(4, 1)]
    # 4 + 6 = 10 fits (the cap is inclusive); 4 alone; 20 over the cap alone in its own pass; 1
    assert [[s.pending.client for s in p] for p in srv._passes(slots)] == [[0, 1], [2], [3], [4]]


def test_a_pass_that_raises_is_retried_one_request_at_a_time(target):
    srv = make(target)

    class Fake:
        def verify(self, reqs):
            if 1 in reqs:
                raise ValueError("bad request")
            return [f"r{r}" for r in reqs]

    srv.verifier = Fake()
    slots = [_slot(0, 1), _slot(1, 1), _slot(2, 1)]
    results, errors = srv._run_passes(slots)
    assert sorted(results.values()) == ["r0", "r2"] and list(errors) == [id(slots[1])]
    assert srv.passes == 2                                      # the failed batch pass is not counted
    srv.passes = 0
    results, errors = srv._run_passes([slots[1]])               # alone: failed once, not retried
    assert results == {} and list(errors) == [id(slots[1])] and srv.passes == 0


@pytest.mark.parametrize("gaps, want", [([], 10.0), ([0.01], S.ROUND_WAIT_FLOOR), ([0.1, 0.5, 2.0], 2.0),
                                        ([1.0, 3.0], 10.0), ([0.5, 0.75], 3.0), ([100.0], 10.0)])
def test_the_adaptive_round_wait(target, gaps, want):
    srv = make(target, client_timeout=10.0)
    srv._gaps = list(gaps)
    # 4 x the median gap (the upper of two middles: [0.5, 0.75] -> 3.0, not 2.0), within [1 s, client_timeout]
    assert srv._round_wait() == pytest.approx(want)
    srv.round_wait = 0.3
    assert srv._round_wait() == 0.3


def test_drop_dead_drops_only_silent_idle_clients_and_says_when_the_next_is_due(target):
    srv = make(target, clients=(0, 1, 2), client_timeout=10.0)
    for c in (0, 1, 2):
        hello(srv, c)
    now = 1000.0                                                # exact in binary: equality below is exact
    srv.last_seen.update({0: now - 10.5, 1: now - 3.0, 2: now - 50.0})
    srv._clients[2].reserved = True                             # a request in flight: never dropped
    with srv.cond:                                              # the scheduling thread holds it
        due = srv._drop_dead(now)
    assert set(srv._clients) == {1, 2} and srv.ended[0] == "dropped: no request for 10 s"
    assert due == pytest.approx(7.0)
    srv.last_seen[1] = now - 10.0                               # exactly the timeout: not yet
    with srv.cond:
        srv._drop_dead(now)
    assert 1 in srv._clients


def test_late_clients_and_the_drop_after_max_late_rounds(target):
    srv = make(target, clients=(0, 1, 2), round_wait=1.0, max_late_rounds=2)
    for c in (0, 1, 2):
        hello(srv, c)
    srv._clients[0].reserved = True                              # has its request in
    given = [_slot(0, 1, arrival=5.0)]
    srv.t0 = 100.0                                               # exact arithmetic at the boundary
    assert srv._late(106.0, given) == set()                      # waited exactly the round wait: not late yet
    assert srv._late(106.001, given) == {1, 2}
    with srv.cond:
        srv._record_late({1}, 1.0)
        srv._record_late({1}, 1.0)                               # the same missing request: not a second late round
    assert srv._clients[1].late == 1 and srv._clients[1].missed == 2 and srv.late_rounds == 2
    for expect_live in (True, False):                            # late again after coming in late: 2, then 3 > 2
        srv._clients[1].missed = 0
        with srv.cond:
            srv._record_late({1}, 1.0)
        assert (1 in srv._clients) is expect_live
    assert srv.ended[1].startswith("dropped: late for 3 rounds in a row")


def _per_token(model):
    c = model.config
    dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return 2 * c.num_hidden_layers * c.num_key_value_heads * dim * 4


def test_bytes_per_token_from_the_shape_then_from_what_sessions_hold(target, prompts):
    srv = make(target)
    assert srv._bytes_per_token() == _per_token(target)
    srv.verifier.verify([Request("a", prompts[0], [])])
    assert srv._bytes_per_token() == pytest.approx(_per_token(target))
    nocache = S.VerificationServer(Verifier(target, cache=False), FCFS(), FixedS(1, 1), [0])
    assert nocache._bytes_per_token() == 0.0


def test_an_idle_session_is_evicted_for_a_new_one_and_an_active_one_never(target, prompts):
    per = _per_token(target)
    n = len(prompts[0])
    srv = make(target, clients=(0, 1), start_barrier=False, max_cache_bytes=1.5 * n * per, round_wait=60.0,
               client_timeout=1000.0)
    h0, h1 = hello(srv, 0), hello(srv, 1)
    with scheduling(srv):
        first = srv.Verify(msg(h0, 0, 0, "p", prompts[0]), Ctx())
        held = srv.verifier.cache_bytes("0.1/p")
        assert held == n * per
        # client 0 is active (it just got its reply): client 1's session cannot fit beside it
        e = refusal(srv.Verify, msg(h1, 1, 0, "q", prompts[1][:n]), Ctx())
        assert e.code == CODES.RESOURCE_EXHAUSTED and "retry this request shortly" in e.msg
        # client 0 idle for longer than the round wait: its session goes
        with srv.cond:
            # silent 100 s: past the round wait (60 s), not the client timeout (1000 s) that drops a client
            srv._clients[0].last_reply = srv.last_seen[0] = time.monotonic() - 100.0
        srv.Verify(msg(h1, 1, 1, "q", prompts[1][:n]), Ctx())
        assert srv.evictions == 1 and "0.1/p" not in srv.verifier.sessions
        assert any(e["event"].startswith("evicted: session 'p'") for e in srv.events)
        e = refusal(srv.Verify, msg(h0, 0, 1, "p", [first.token]), Ctx())
        assert e.code == CODES.RESOURCE_EXHAUSTED and "'p' was evicted" in e.msg
        # a new session with the whole context is served once client 1's idle session made room
        with srv.cond:
            srv._clients[1].last_reply = srv.last_seen[1] = time.monotonic() - 100.0
        again = srv.Verify(msg(h0, 0, 2, "p~1", prompts[0] + [first.token]), Ctx())
        assert again.accepted == 0 and srv.evictions == 2


def test_a_session_that_would_exceed_the_targets_positions_is_refused(target, prompts):
    srv = make(target, start_barrier=False)
    srv.max_positions = len(prompts[0]) + 2
    h = hello(srv, 0)
    e = refusal(srv.Verify, msg(h, 0, 0, "p", prompts[0], [1, 2, 3]), Ctx())
    assert e.code == CODES.INVALID_ARGUMENT and f"would reach {len(prompts[0]) + 3} positions, the target has" in e.msg
    with scheduling(srv):
        assert srv.Verify(msg(h, 0, 1, "p", prompts[0], [1, 2]), Ctx()).batch == 0     # exactly the positions


def test_stop_ends_live_clients_and_summarises_counted_events(target):
    srv = make(target, clients=(0,))
    hello(srv, 0)
    srv.event_counts[(0, "late")] = 13
    srv.stop()
    assert srv.ended[0] == "live when the server stopped (mid-generation)"
    assert srv.events[-1]["event"] == "counted: 13 'late' events, the first 10 logged" and srv.event_counts == {}
