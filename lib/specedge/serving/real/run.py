"""The real run: one verification server and N drafter processes on 127.0.0.1, to completion.

``run_real(workload, former, allocator)`` starts the server in this process (so the policy objects
passed in are the very ones it uses), spawns one process per client, waits for all of them, stops
every process it started (by pid, also on errors and interrupts) and returns the per-round log
(``interfaces.LOG_COLUMNS``, ``system="real"``; event rows say when a client was dropped, failed or
sent a malformed request). Drafters report their timings and tokens back over a queue. While any
drafter is still loading its model the server counts that as activity (readiness, not a timer); a
drafter that exits before its Hello is given up at once. ``python -m specedge.serving`` wraps it. The server has a fresh key that only
the run's drafters are given, so no other process can claim their ids.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import secrets
import sys
import time

import pandas as pd

from ... import zoo
from .codec import host_port
from .drafter import PROMPT_TOKENS, DrafterError, Link, client_main, parse_fault, threads
from ..interfaces import LOG_COLUMNS, BatchFormer, DraftAllocator
from ..log import verified
from .server import CLIENT_TIMEOUT, MAX_CACHE_BYTES, VerificationServer
from .verifier import Verifier
from ..workload import Workload

CLIENT_COLUMNS = ["client", "round", "t_round", "t_send", "tokens_committed", "t_draft_cpu", "t_client_cpu", "session",
                  "event"]
# A bound on one drafter's memory, 3x what was measured: forked from the preloaded forkserver the
# drafters share torch's pages, and 32 drafters + the server peaked at 2.12 GB PSS in all, about 0.05 GB
# per drafter (benchmarks/bench_serving_load.py, figures/bench/serving_load.csv). Spawned
# processes, each importing torch + transformers on its own, used 0.45 GB per drafter.
DRAFTER_BYTES = 0.15e9
STOP_GRACE = 5.0   # s drafters have to report after the server stopped, before they are stopped


class RunFailed(RuntimeError):
    """The run ended without a trustworthy result; ``log`` holds what was recorded."""

    def __init__(self, msg: str, log: pd.DataFrame, outputs: dict):
        super().__init__(msg)
        self.log, self.outputs = log, outputs


class RunInterrupted(RunFailed):
    """SIGINT/SIGTERM: every process was stopped; ``log`` holds the rounds run so far."""


def available_memory() -> float:
    """Bytes the kernel says new processes can use (MemAvailable), inf when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float("inf")


def check_memory(n_clients: int, available: float | None = None) -> None:
    """Refuse up front a run whose drafters cannot fit (``DRAFTER_BYTES`` each, 10 % headroom)."""
    available = available_memory() if available is None else available
    need = n_clients * DRAFTER_BYTES
    if need > 0.9 * available:
        raise MemoryError(f"clients: {n_clients} drafter processes need about {need / 1e9:.1f} GB "
                          f"({DRAFTER_BYTES / 1e9:.2f} GB each), this machine has {available / 1e9:.1f} GB "
                          f"available; use at most {int(0.9 * available // DRAFTER_BYTES)} clients")


PRELOAD = ["torch", "grpc", "transformers.models.llama.modeling_llama", "specedge.serving.real.drafter"]


def drafter_context():
    """Drafter processes fork from a server process that imported torch/transformers once: each starts
    in well under a second and shares those pages (copy-on-write) instead of importing them again."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def pin_process(cpus) -> set[int]:
    """Bind every thread of this process (and the threads and processes it starts later) to ``cpus``;
    returns the affinity it had. ``os.sched_setaffinity(0, ...)`` binds the calling thread only, so
    each task of /proc/self/task is bound."""
    cpus = {int(c) for c in cpus}
    old = os.sched_getaffinity(0)
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, FileNotFoundError):  # a thread that just ended
            pass
    return old


def _drafter_process(address, client, spec, kw, results, cpus=None) -> None:
    """One drafter process: reports ready / done / failed (one line) over ``results``."""
    if cpus is not None:
        pin_process(cpus)
    try:
        gguf = kw.pop("gguf", None)
        if gguf is not None:   # the draft on llama.cpp (``run_real(draft_gguf=)``), loaded in this process
            from ...llamacpp import drafter_lm
            kw["model"] = drafter_lm(gguf, spec.max_new_tokens, kw.get("prompt_tokens", PROMPT_TOKENS))
        res = client_main(address, client, spec, on_ready=lambda: results.put(("ready", client, None)), **kw)
    except DrafterError as err:
        results.put(("failed", client, str(err)))
        sys.exit(1)
    except Exception as err:  # noqa: BLE001 - a bad model name, a missing file: one line, not a traceback
        results.put(("failed", client, f"drafter {client}: {type(err).__name__}: {err}"))
        sys.exit(1)
    results.put(("done", client, res))


def run_real(workload: Workload, former: BatchFormer, allocator: DraftAllocator, *, label: str = "",
             seed: int = 0, client_timeout: float = CLIENT_TIMEOUT, faults: dict[int, str] | None = None,
             prompt_tokens: int = PROMPT_TOKENS, target=None, idle_timeout: float = 120.0,
             rpc_timeout: float = 60.0, link: Link | None = None, host: str = "127.0.0.1",
             check_mem: bool = True, pin: tuple[int, int] | None = None,
             greedy_rows: bool = False, round_wait: float | None = None,
             max_cache_bytes: float = MAX_CACHE_BYTES, draft_gguf=None) -> tuple[pd.DataFrame, dict]:
    """Run ``workload`` for real; returns (per-round log, {client: [generated token ids per prompt]}).

    ``draft_gguf``: every drafter drafts on llama.cpp with this GGUF file (``specedge.llamacpp``; its clients'
    ``draft`` then names the model whose tokenizer encodes the prompts); the file and the binding are checked
    before anything starts.

    ``pin=(server_cpu, drafter_cpu)``: the server (its gRPC and scheduling threads) runs on one core and
    every drafter on the other, so that drafting and verification do not contend for a core and the
    drafters' own clocks time their drafting alone (the twin's validation); the calling
    process gets its affinity back when the run ends. ``greedy_rows``: greedy drafters send their drafted
    rows anyway (dense, or top-K with ``workload.top_k``: the arena's payloads at T = 0).

    The run ends when every drafter process ended or when the server stopped (idle, or its loop crashed),
    whatever the drafters are doing then (they are stopped). Raises ``RunFailed`` (with the log) when the
    server's loop crashed or a policy raised, and
    ``RunInterrupted`` on SIGINT/SIGTERM; a drafter that failed is an event row ("failed: ...")."""
    if not workload.clients:
        raise ValueError("workload.clients: at least one client is needed")
    faults = dict(faults or {})
    for c, f in faults.items():
        parse_fault(f)
        if not 0 <= c < len(workload.clients):
            raise ValueError(f"faults: client {c} is not in 0..{len(workload.clients) - 1}")
    if draft_gguf is not None:
        from ...llamacpp import check_drafter
        draft_gguf = str(check_drafter(draft_gguf))
    if check_mem:
        check_memory(len(workload.clients))
    if pin is not None:
        have = os.sched_getaffinity(0)
        if len(pin) != 2 or pin[0] == pin[1] or not set(pin) <= have:
            raise ValueError(f"pin: expected (server_cpu, drafter_cpu), two different cores of {sorted(have)}, "
                             f"got {pin!r}")
        restore = pin_process({pin[0]})
    try:
        return _run_real(workload, former, allocator, label=label, seed=seed, client_timeout=client_timeout,
                         faults=faults, prompt_tokens=prompt_tokens, target=target, idle_timeout=idle_timeout,
                         rpc_timeout=rpc_timeout, link=link, host=host, greedy_rows=greedy_rows,
                         drafter_cpus=None if pin is None else {pin[1]}, round_wait=round_wait,
                         max_cache_bytes=max_cache_bytes, draft_gguf=draft_gguf)
    finally:
        if pin is not None:
            pin_process(restore)


def _run_real(workload, former, allocator, *, label, seed, client_timeout, faults, prompt_tokens, target,
              idle_timeout, rpc_timeout, link, host, drafter_cpus, greedy_rows=False, round_wait=None,
              max_cache_bytes=MAX_CACHE_BYTES, draft_gguf=None):
    threads(1)
    target = zoo.load_model(workload.target) if target is None else target
    verifier = Verifier(target, cache=workload.cache, seed=seed)
    n = len(workload.clients)
    key = secrets.token_hex(16)   # the drafters' claim on their ids: no other process can say Hello
    server = VerificationServer(verifier, former, allocator, list(range(n)), label=label,
                                target_name=workload.target, client_timeout=client_timeout,
                                idle_timeout=idle_timeout, key=key, round_wait=round_wait,
                                max_cache_bytes=max_cache_bytes)
    server.loading(True)
    port = server.start(0, host)
    address = host_port(host, port)
    ctx = drafter_context()
    results = ctx.Queue()
    procs, done, failed, given_up = [], {}, {}, set()
    interrupted = None
    try:
        for c, spec in enumerate(workload.clients):
            kw = dict(fault=faults.get(c), top_k=workload.top_k, prompt_tokens=prompt_tokens, link=link,
                      rpc_timeout=rpc_timeout, greedy_rows=greedy_rows, key=key)
            if draft_gguf is not None:
                kw["gguf"] = draft_gguf
            p = ctx.Process(target=_drafter_process, name=f"drafter-{c}", args=(address, c, spec, kw, results, drafter_cpus),
                            daemon=True)
            p.start()
            procs.append(p)
        stopped_at = None
        while any(p.is_alive() for p in procs) or not results.empty():
            if server.stopped.is_set():   # drafters get STOP_GRACE s to report, then are stopped below
                stopped_at = stopped_at or time.monotonic()
                if time.monotonic() - stopped_at > STOP_GRACE:
                    break
            try:
                kind, c, payload = results.get(timeout=0.2)
                if kind == "done":
                    done[c] = payload
                elif kind == "failed":
                    failed[c] = payload
            except queue_mod.Empty:
                pass
            for c, p in enumerate(procs):
                if p.exitcode not in (None, 0) and c not in given_up and c not in done:
                    given_up.add(c)
                    server.forget(c, f"drafter process exited with code {p.exitcode}")
            if server.drafters_loading and all(c in server.known or not p.is_alive() for c, p in enumerate(procs)):
                server.loading(False)  # every drafter said Hello or ended: from now on idleness counts
        server.wait(timeout=client_timeout + 5)
    except KeyboardInterrupt as err:
        interrupted = err
        server._event(-1, "stopped: interrupted (SIGINT/SIGTERM)")
    finally:
        for p in procs:  # stop every process this run started, by pid
            if p.is_alive():
                p.terminate()
                p.join(5)
            if p.is_alive():
                os.kill(p.pid, 9)
                p.join(1)
        server.stop()
        results.close()
    log, outputs = _collect(server, label, done, failed, procs)
    if interrupted is not None:
        raise RunInterrupted("run_real: interrupted; every process stopped", log, outputs) from interrupted
    if server.failure is not None:
        raise RunFailed(f"run_real: the server's scheduling thread failed: {server.failure!r}", log, outputs)
    if server.policy_errors:
        raise RunFailed(f"run_real: {server.policy_errors[0]} (its requests failed, the server kept serving)",
                        log, outputs)
    return log, outputs


def _collect(server: VerificationServer, label: str, done: dict, failed: dict, procs) -> tuple[pd.DataFrame, dict]:
    """The per-round log: the server's rows joined with the drafters' own timings, then event rows."""
    rows = [r for c in sorted(done) for r in done[c]["rows"]]
    crow = pd.DataFrame(rows, columns=CLIENT_COLUMNS)
    crow["event"] = crow["event"].fillna("")
    outputs = {c: done[c]["outputs"] for c in sorted(done)}
    log = pd.DataFrame(server.log)
    ok = verified(crow)
    if len(log):
        log = log.merge(ok[["client", "round", "t_round", "t_send", "tokens_committed", "t_draft_cpu", "t_client_cpu"]],
                        on=["client", "round"],
                        how="left")
        log["tokens"] = log["tokens_committed"].where(log["tokens_committed"].notna(), log["tokens"])
    events = [dict(e) for e in server.events]
    events += [dict(system="real", policy=label, client=int(r.client), round=int(r.round), event=r.event)
               for r in crow.itertuples() if r.event]
    for c, p in enumerate(procs):
        if c in failed:
            events.append(dict(system="real", policy=label, client=c, event=f"failed: {failed[c]}"))
        elif p.exitcode not in (0, None):
            events.append(dict(system="real", policy=label, client=c, event=f"failed: exit code {p.exitcode}"))
        elif c not in done:
            events.append(dict(system="real", policy=label, client=c, event="failed: stopped before finishing"))
    full = pd.concat([log, pd.DataFrame(events)], ignore_index=True) if events else log
    for col in LOG_COLUMNS:
        if col not in full.columns:
            full[col] = "" if col == "event" else float("nan")
    full["system"], full["policy"] = "real", label
    full["event"] = full["event"].fillna("")
    extra = [c for c in ("up", "accept_prob_sum", "n_new", "n_cached", "t_verify_cpu", "t_draft_cpu",
                                  "t_client_cpu") if c in full.columns]
    return full[LOG_COLUMNS + extra].reset_index(drop=True), outputs


def failed_clients(log: pd.DataFrame) -> dict[int, str]:
    """{client: why} for every client the log says failed (one line each)."""
    ev = log[log.event.str.startswith("failed: ")]
    return {int(r.client): r.event[len("failed: "):] for r in ev.itertuples()}


def summary(log: pd.DataFrame, outputs: dict, n_clients: int, tokenizer=None) -> list[str]:
    """The lines a run prints: tokens/s per client (tokens over the client's summed round times),
    round-time p50/p90/p99 over all rounds, acceptance (accepted / drafted), and with a
    ``tokenizer`` the generated text."""
    ok = verified(log)
    lines = []
    if len(ok):
        t = ok.t_round.dropna()
        drafted = ok.S.sum()
        acc = ok.accepted.sum() / drafted if drafted else float("nan")
        lines.append(f"round time p50 {1e3 * t.quantile(.5):.1f} ms, p90 {1e3 * t.quantile(.9):.1f} ms, "
                     f"p99 {1e3 * t.quantile(.99):.1f} ms over {len(t)} rounds; acceptance {acc:.3f} "
                     f"({int(ok.accepted.sum())} of {int(drafted)} drafted tokens)")
    for c in range(n_clients):
        mine = ok[ok.client == c]
        if not len(mine):
            continue
        tok, span = int(mine.tokens.sum()), float(mine.t_round.sum())
        drafted = mine.S.sum()
        lines.append(f"client {c}: {tok} tokens, {tok / span if span > 0 else float('nan'):.1f} tokens/s, "
                     f"acceptance {mine.accepted.sum() / drafted if drafted else float('nan'):.3f}")
        if tokenizer is not None:
            for ids in outputs.get(c, []):
                lines.append(f"  text: {tokenizer.decode(ids)!r}")
    return lines


def workload_summary(workload: Workload) -> str:
    return ", ".join(f"client {i}: {c.draft} on {'/'.join(c.domains)}" for i, c in enumerate(workload.clients))


__all__ = ["run_real", "summary", "failed_clients", "RunFailed", "RunInterrupted", "check_memory"]
