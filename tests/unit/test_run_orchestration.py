"""The real run's orchestration (``serving.real.run``) in one process: its checks before any work (memory, faults, pins),
the drafter process's one-line reports, the log it collects (the drafters' timings joined on the server's rows, the
event rows), the printed summary worked by hand, and ``run_real``'s loop with its processes replaced by threads and
its gRPC by in-process calls (no port, no subprocess): a failing drafter is given up, the others finish with the
target's greedy text."""
import queue
import threading

import grpc
import pandas as pd
import pytest

from specedge import decoding, zoo
from specedge.serving.real import drafter as D, run as R, server as S
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.interfaces import LOG_COLUMNS
from specedge.serving.workload import ClientSpec, Workload


# ------------------------------------------------------------------------------ checks before any work
def test_check_memory_at_its_edge():
    # 6 drafters need 0.9 GB: exactly 90 % of 1 GB is allowed, 7 are not
    R.check_memory(6, available=1e9)
    with pytest.raises(MemoryError, match="7 drafter processes need about 1.1 GB .* use at most 6 clients"):
        R.check_memory(7, available=1e9)
    R.check_memory(0, available=0.0)


def test_available_memory_reads_meminfo_and_is_unbounded_without_it(monkeypatch):
    assert 0 < R.available_memory() < float("inf")

    def no_file(*a, **k):
        raise OSError("no /proc")

    monkeypatch.setattr("builtins.open", no_file)
    assert R.available_memory() == float("inf")


def test_drafter_context_is_a_preloaded_forkserver():
    assert R.drafter_context().get_start_method() == "forkserver"


def test_pin_process_binds_every_thread_and_gives_the_old_affinity_back():
    import os
    before = os.sched_getaffinity(0)
    one = {min(before)}
    old = R.pin_process(one)
    try:
        assert old == before and os.sched_getaffinity(0) == one
    finally:
        R.pin_process(old)
    assert os.sched_getaffinity(0) == before


WL = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 6),), capacity=2)


@pytest.mark.parametrize("kw, err, match", [
    (dict(workload=Workload("target-m", ())), ValueError, "workload.clients: at least one client"),
    (dict(faults={0: "explode@1"}), ValueError, "fault must be"),
    (dict(faults={1: "die@1"}), ValueError, "faults: client 1 is not in 0..0"),
    (dict(pin=(0,)), ValueError, "pin: expected \\(server_cpu, drafter_cpu\\)"),
    (dict(pin=(1, 1)), ValueError, "pin"),
    (dict(pin=(0, 99)), ValueError, "pin"),
])
def test_run_real_refuses_bad_input_before_any_work(monkeypatch, kw, err, match):
    monkeypatch.setattr(R.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(R, "_run_real", lambda *a, **k: pytest.fail("no work may start"))
    wl = kw.pop("workload", WL)
    with pytest.raises(err, match=match):
        R.run_real(wl, FCFS(), FixedS(2, 1), check_mem=False, **kw)


def test_run_real_checks_memory_and_restores_the_pin_even_on_failure(monkeypatch):
    monkeypatch.setattr(R, "available_memory", lambda: 0.1e9)
    with pytest.raises(MemoryError):
        R.run_real(WL, FCFS(), FixedS(2, 1))
    pins, seen = [], {}
    monkeypatch.setattr(R.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(R, "pin_process", lambda cpus: (pins.append(set(cpus)), {0, 1, 2})[1])

    def fake(*a, **k):
        seen.update(k)
        raise RuntimeError("the run failed")

    monkeypatch.setattr(R, "_run_real", fake)
    with pytest.raises(RuntimeError, match="the run failed"):
        R.run_real(WL, FCFS(), FixedS(2, 1), check_mem=False, pin=(2, 0))
    assert pins == [{2}, {0, 1, 2}] and seen["drafter_cpus"] == {0}


# ------------------------------------------------------------------------------ a drafter process's reports
def test_drafter_process_reports_ready_done_or_one_failure_line(monkeypatch):
    results, pinned = queue.Queue(), []
    monkeypatch.setattr(R, "pin_process", pinned.append)

    def ok(address, client, spec, on_ready, **kw):
        on_ready()
        return {"rows": [], "outputs": [[1]]}

    monkeypatch.setattr(R, "client_main", ok)
    R._drafter_process("a", 3, WL.clients[0], {}, results, cpus={1})
    assert [results.get_nowait()[0] for _ in range(2)] == ["ready", "done"] and pinned == [{1}]
    for exc, line in ((D.DrafterError("drafter 3: Hello to a failed: X"), "drafter 3: Hello to a failed: X"),
                      (KeyError("no-such-model"), "drafter 3: KeyError: 'no-such-model'")):
        def bad(*a, exc=exc, **k):
            raise exc

        monkeypatch.setattr(R, "client_main", bad)
        with pytest.raises(SystemExit) as e:
            R._drafter_process("a", 3, WL.clients[0], {}, results)
        assert e.value.code == 1 and results.get_nowait() == ("failed", 3, line)


# ------------------------------------------------------------------------------ the collected log, the summary
class _Proc:
    def __init__(self, exitcode):
        self.exitcode = exitcode


def _server_rows():
    base = dict(system="real", policy="P", S=2, t_draft=0.01, t_receive=0.0, t_queue=0.001, t_verify=0.02, bytes_up=10,
                bytes_down=5, arrival=0.0, start=0.0, end=0.0, slo_class=None, deadline=None, event="", up=0.0,
                accept_prob_sum=1.0, n_new=3, n_cached=0, t_verify_cpu=0.02)
    return [dict(base, batch=0, round=0, client=0, accepted=1, tokens=2),
            dict(base, batch=1, round=1, client=0, accepted=2, tokens=3),
            dict(base, batch=0, round=0, client=1, accepted=0, tokens=1)]


def test_collect_joins_the_drafters_timings_and_adds_event_rows():
    server = type("Srv", (), dict(log=_server_rows(), events=[dict(system="real", policy="P", client=2, end=1.0,
                                                                   event="dropped: gone")]))()
    done = {0: dict(rows=[dict(client=0, round=0, t_round=0.1, t_send=0.01, tokens_committed=2, t_draft_cpu=0.01,
                               session="s", event=""),
                          dict(client=0, round=1, t_round=0.2, t_send=0.01, tokens_committed=1, t_draft_cpu=0.01,
                               session="s", event=""),   # the last round: one token of three kept (max_new_tokens)
                          dict(client=0, round=2, event="error: INVALID_ARGUMENT: draft_ids")],
                    outputs=[[5, 6, 7]])}
    log, outputs = R._collect(server, "P", done, {3: "drafter 3: KeyError: 'x'"}, [_Proc(0), _Proc(None), _Proc(1), _Proc(1)])
    assert outputs == {0: [[5, 6, 7]]} and list(log.columns[: len(LOG_COLUMNS)]) == LOG_COLUMNS
    rounds = log[log.event == ""]
    # the drafter's committed count replaces the server's accepted + 1; a round the drafter did not report keeps it
    assert rounds.tokens.tolist() == [2, 1, 1] and rounds.t_round.tolist()[:2] == [0.1, 0.2]
    assert pd.isna(rounds.t_round.iloc[2])
    assert set(log[log.event != ""].event) == {"dropped: gone", "error: INVALID_ARGUMENT: draft_ids",
                                               "failed: stopped before finishing", "failed: exit code 1",
                                               "failed: drafter 3: KeyError: 'x'"}
    assert (log.system == "real").all() and (log.policy == "P").all()
    assert R.failed_clients(log) == {1: "stopped before finishing", 2: "exit code 1", 3: "drafter 3: KeyError: 'x'"}


def test_collect_with_no_rounds_has_every_column():
    server = type("Srv", (), dict(log=[], events=[]))()
    log, outputs = R._collect(server, "P", {}, {}, [_Proc(0)])
    assert outputs == {} and set(LOG_COLUMNS) <= set(log.columns) and log.event.tolist() == ["failed: stopped before finishing"]


def test_summary_lines_by_hand():
    log = pd.DataFrame(dict(client=[0, 0, 1, 1], S=[2, 2, 4, 0], accepted=[1, 2, 1, 0], tokens=[2, 3, 2, 1],
                            t_round=[0.1, 0.3, 0.2, 0.2], event=["", "", "", ""]))
    log = pd.concat([log, pd.DataFrame([dict(client=1, event="dropped: x")])], ignore_index=True)

    class Tok:
        def decode(self, ids):
            return "-".join(map(str, ids))

    lines = R.summary(log, {0: [[1, 2]]}, 3, Tok())
    # round times 0.1, 0.3, 0.2, 0.2: p50 200 ms; acceptance 4 of 8 drafted
    assert lines[0].startswith("round time p50 200.0 ms") and "over 4 rounds; acceptance 0.500 (4 of 8 drafted tokens)" in lines[0]
    assert lines[1] == "client 0: 5 tokens, 12.5 tokens/s, acceptance 0.750"     # 5 tokens in 0.4 s; 3 of 4
    assert lines[2] == "  text: '1-2'"
    assert lines[3] == "client 1: 3 tokens, 7.5 tokens/s, acceptance 0.250"
    assert len(lines) == 4                                                       # client 2 ran no round
    nothing = R.summary(log.assign(S=0, accepted=0), {}, 1)
    assert "acceptance nan" in nothing[0] and nothing[1].endswith("acceptance nan")


def test_workload_summary():
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code", "sql")), ClientSpec("draft-s", ("qa",))))
    assert R.workload_summary(wl) == "client 0: draft-xs on code/sql, client 1: draft-s on qa"


# ------------------------------------------------------------------------------ run_real's loop, in threads
class _ThreadProcess:
    """``multiprocessing.Process``'s surface over a thread (exit code from ``sys.exit``)."""

    def __init__(self, target, name, args, daemon):
        self._target, self._args, self.name, self.exitcode, self.pid = target, args, name, None, None

    def _run(self):
        try:
            self._target(*self._args)
            self.exitcode = 0
        except SystemExit as e:
            self.exitcode = e.code if isinstance(e.code, int) else 1

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def is_alive(self):
        return self._thread.is_alive()

    def terminate(self):
        pass

    def join(self, timeout=None):
        self._thread.join(timeout)


class _ThreadContext:
    Process = _ThreadProcess

    def Queue(self):
        q = queue.Queue()
        q.close = lambda: None
        return q


class _Aborted(grpc.RpcError):
    def __init__(self, code, msg):
        self._code, self._msg = code, msg

    def code(self):
        return self._code

    def details(self):
        return self._msg


class _Ctx:
    def abort(self, code, msg):
        raise _Aborted(code, msg)

    def add_callback(self, fn):
        pass


class _InProcessStub:
    """The drafters' stub calling the server's servicer methods directly."""

    def __init__(self, server):
        self.server = server

    def Hello(self, msg, timeout=None, wait_for_ready=None):
        return self.server.Hello(msg, _Ctx())

    def Verify(self, msg, timeout=None):
        return self.server.Verify(msg, _Ctx())

    def Bye(self, msg, timeout=None):
        return self.server.Bye(msg, _Ctx())


@pytest.fixture
def in_process(monkeypatch):
    servers = []

    def start(self, port=0, host="127.0.0.1"):
        servers.append(self)
        self._thread.start()
        return 0

    monkeypatch.setattr(S.VerificationServer, "start", start)
    monkeypatch.setattr(R, "drafter_context", _ThreadContext)
    monkeypatch.setattr(R, "pin_process", lambda cpus: set())
    monkeypatch.setattr(R, "threads", lambda n=1: None)
    monkeypatch.setattr(D, "threads", lambda n=1: None)
    monkeypatch.setattr(D.pb_grpc, "VerifierStub", lambda channel: _InProcessStub(servers[-1]))
    # each real drafter loads its model in a process of its own; here they are threads of one process, and
    # transformers' loading is not thread-safe (its initialisation switches are module globals: two loads at once
    # can leave them switched, and every later load in this process then leaves the tied lm_head uninitialised)
    lock = threading.Lock()
    for name in ("load_model", "tokenizer_for"):
        def one_at_a_time(*a, _load=getattr(zoo, name), **k):
            with lock:
                return _load(*a, **k)
        monkeypatch.setattr(zoo, name, one_at_a_time)
    return servers


def test_run_real_gives_up_a_failing_drafter_and_the_others_finish_with_greedy_text(in_process, target):
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 8), ClientSpec("no-such-draft", ("sql",), 1, 8),
                               ClientSpec("draft-xs", ("sql",), 1, 6)), capacity=6)
    log, outs = R.run_real(wl, FCFS(), FixedS(6, 3), label="threads", target=target, check_mem=False, client_timeout=30.0,
                           faults={2: "malformed@1"})
    tok = zoo.load_tokenizer()
    for c in (0, 2):
        (prompt,) = D.prompt_stream(wl.clients[c], tok)
        assert outs[c] == [decoding.autoregressive(target, prompt, wl.clients[c].max_new_tokens).tokens.tolist()]
    failed = R.failed_clients(log)
    assert list(failed) == [1] and failed[1].startswith("drafter 1: ")
    events = log[log.event != ""].event.tolist()
    assert "dropped: drafter process exited with code 1" in events
    assert any(e.startswith("error: INVALID_ARGUMENT: draft_ids") for e in events)
    rounds = log[log.event == ""]
    assert set(rounds.client) == {0, 2} and (rounds.policy == "threads").all() and rounds.t_round.notna().all()
    assert 1 not in outs and in_process[-1].stopped.is_set()


def test_run_real_raises_with_the_log_when_a_policy_fails(in_process, target):
    class Broken:
        label = "broken"

        def form(self, queue, now, active):
            raise ZeroDivisionError("no batch")

    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 4),), capacity=2)
    with pytest.raises(R.RunFailed, match="batch former broken failed: ZeroDivisionError") as e:
        R.run_real(wl, Broken(), FixedS(2, 1), target=target, check_mem=False)
    assert R.failed_clients(e.value.log) == {0: "drafter 0: Verify of round 0 to 127.0.0.1:0 failed: INTERNAL: "
                                                "batch former broken failed: ZeroDivisionError: no batch"}


def test_run_real_raises_when_the_scheduling_thread_crashed(in_process, target, monkeypatch):
    def crash(self):
        raise RuntimeError("scheduler bug")

    monkeypatch.setattr(S.VerificationServer, "_schedule", crash)
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 4),), capacity=2)
    with pytest.raises(R.RunFailed, match="scheduling thread failed: RuntimeError\\('scheduler bug'\\)") as e:
        R.run_real(wl, SyncRounds(), FixedS(2, 1), target=target, check_mem=False, rpc_timeout=5.0, idle_timeout=5.0)
    assert "stopped: scheduling thread crashed" in " ".join(e.value.log.event)
