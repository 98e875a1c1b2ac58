"""Memory of one verification server under hostile clients, and a bounded soak: each scenario starts the
``server`` CLI (target-m, loopback, a free port) as its own process, drives it from this one, reads the
server's resident memory (VmRSS, and its peak VmHWM) from /proc, stops it and writes one CSV row.

- ``bye_in_flight``: cycles of Hello, a Verify of a 1,000-token prompt, Bye while it is in flight;
- ``pass_cap``: six 2,040-token prompts in one sync round (one batch, passes of at most 4,096 tokens);
- ``amplification``: one client's 12 concurrent at-cap requests beside another client's 1-token request,
  then refused calls with a forged token;
- ``idle_sessions_48`` / ``idle_sessions_2044``: clients that open a session and fall silent until the
  server drops them;
- ``soak``: honest drafters (greedy, draft-xs) beside hostile clients (forged tokens, follow-ups without
  the verdict's token, Bye in flight, silent Hellos, at-cap floods) for ``--soak-s`` seconds; passes when
  the server's memory after every client left is within 10 % of its memory after the warm-up and every
  honest client's tokens equal single-process greedy decoding;
- ``fleet_<N>`` (and ``fleet_<N>_cap<MB>`` with ``--fleet-cache-mb``): a deployment-shaped run under sync
  rounds, N honest drafter processes (forked like ``run``'s) with long prompts (``--fleet-prompt``
  tokens) at the server's cache cap, two of them with clocks a day ahead / behind, beside hostile clients
  in this process: id squatters (Hello on every id without the key), cache fillers (key holders opening
  2,040-token sessions again and again, then idling), a slow client (a valid request every 3 s); passes
  when every honest drafter finishes with single-process greedy decoding's tokens and the server's peak
  memory stays under its memory before + the cache cap + 1 GB.

Minutes of CPU: not run by CI; by hand,

    python benchmarks/bench_serving_chaos.py --out figures/bench/serving_chaos.csv
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pandas as pd

from specedge import decoding, zoo
from specedge.serving.real import wire_pb2 as pb
from specedge.serving.real import wire_pb2_grpc as pb_grpc
from specedge.serving.real.drafter import client_main, prompt_stream
from specedge.serving.workload import ClientSpec

from report import host_columns, save

VOCAB = 8192


def _mem(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out


class Server:
    def __init__(self, clients: int, former: str = "fcfs", client_timeout: float = 600.0, out: str = os.devnull,
                 extra: tuple = ()):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path))
        self.proc = subprocess.Popen([sys.executable, "-m", "specedge.serving", "server", "--port", "0",
                                      "--clients", str(clients), "--capacity", str(2 * clients), "--allocator", "fixed",
                                      "--former", former, "--client-timeout", str(client_timeout),
                                      "--idle-timeout", "600", "--out", out, *map(str, extra)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        line = self.proc.stdout.readline()
        port = int(line.split("127.0.0.1:")[1].split()[0])
        self.key = Path(line.split("key in ")[1].split(")")[0]).read_text().strip()
        self.address = f"127.0.0.1:{port}"
        self.channel = grpc.insecure_channel(self.address)
        self.stub = pb_grpc.VerifierStub(self.channel)

    def mb(self) -> float:
        return _mem(self.proc.pid)["VmRSS"] / 1e6

    def peak_mb(self) -> float:
        return _mem(self.proc.pid)["VmHWM"] / 1e6

    def hello(self, c: int) -> str:
        return self.stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB, key=self.key), timeout=30).token

    def close(self) -> None:
        self.channel.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _req(c, tok, session, new, n_draft=1, rnd=0, temperature=0.0, probs=None):
    msg = pb.VerifyRequest(session=session, client=c, token=tok, new_tokens=list(new), draft_ids=[5] * n_draft,
                           round=rnd, temperature=temperature)
    if probs is not None:
        msg.draft.CopyFrom(pb.DraftDistribution(vocab_size=VOCAB, probs=probs))
    return msg


def _prompt(n, seed=0):
    return [int(t) for t in np.random.default_rng(seed).integers(1, VOCAB, n)]


def _settle(s: Server, seconds: float = 1.0) -> None:
    time.sleep(seconds)


def bye_in_flight(cycles: int) -> dict:
    s = Server(1)
    try:
        tok = s.hello(0)
        s.stub.Verify(_req(0, tok, "warm", _prompt(1000)), timeout=60)
        s.stub.Bye(pb.ByeRequest(client=0, token=tok), timeout=10)
        _settle(s)
        before, cancelled = s.mb(), 0
        for k in range(cycles):
            tok = s.hello(0)
            fut = s.stub.Verify.future(_req(0, tok, f"s{k}", _prompt(1000, k)), timeout=60)
            time.sleep(0.02)
            s.stub.Bye(pb.ByeRequest(client=0, token=tok), timeout=10)
            try:
                fut.result()
            except grpc.RpcError as err:
                cancelled += err.code() == grpc.StatusCode.CANCELLED
        _settle(s)
        return dict(scenario="bye_in_flight", detail=f"{cycles} cycles, {cancelled} answered CANCELLED",
                    rss_before_mb=before, rss_peak_mb=s.peak_mb(), rss_after_mb=s.mb())
    finally:
        s.close()


def pass_cap() -> dict:
    s = Server(6, former="sync")
    try:
        toks = [s.hello(c) for c in range(6)]
        _settle(s)
        before = s.mb()
        t0 = time.monotonic()
        futs = [s.stub.Verify.future(_req(c, toks[c], "long", _prompt(2040, c)), timeout=300) for c in range(6)]
        batches = {f.result().batch for f in futs}
        took = time.monotonic() - t0
        peak = s.peak_mb()
        for c in range(6):
            s.stub.Bye(pb.ByeRequest(client=c, token=toks[c]), timeout=10)
        _settle(s)
        return dict(scenario="pass_cap", detail=f"six 2040-token prompts, {len(batches)} batch(es), {took:.1f} s",
                    rss_before_mb=before, rss_peak_mb=peak, rss_after_mb=s.mb())
    finally:
        s.close()


def amplification(refused_calls: int) -> dict:
    s = Server(2)
    try:
        t0, t1 = s.hello(0), s.hello(1)
        s.stub.Verify(_req(1, t1, "w", [1, 2, 3]), timeout=30)
        _settle(s)
        before = s.mb()
        uniform = np.full((64, VOCAB), 1 / VOCAB, np.float32).tobytes()
        at_cap = [_req(0, t0, "cap", [1, 2, 3], 64, rnd, 1.0, uniform) for rnd in range(12)]
        futs = [s.stub.Verify.future(m, timeout=60) for m in at_cap]
        t = time.monotonic()
        s.stub.Verify(_req(1, t1, "x", [4, 5, 6], rnd=1), timeout=60)
        other = time.monotonic() - t
        codes = [f.exception() for f in futs]
        refused = sum(e is not None and e.code() == grpc.StatusCode.FAILED_PRECONDITION for e in codes)
        peak = s.peak_mb()
        mid = s.mb()
        t = time.monotonic()
        forged = _req(0, "forged", "s", [1])
        for _ in range(refused_calls):
            try:
                s.stub.Verify(forged, timeout=10)
            except grpc.RpcError:
                pass
        rate = refused_calls / (time.monotonic() - t)
        _settle(s)
        return dict(scenario="amplification",
                    detail=f"12 concurrent at-cap requests: {refused} refused before parsing; the other client's "
                           f"1-token request {1e3 * other:.0f} ms; then {refused_calls} forged-token calls "
                           f"({rate:.0f}/s): RSS {mid:.0f} -> {s.mb():.0f} MB",
                    rss_before_mb=before, rss_peak_mb=peak, rss_after_mb=s.mb())
    finally:
        s.close()


def idle_sessions(n: int, tokens: int) -> dict:
    s = Server(n, client_timeout=5.0)
    try:
        _settle(s)
        before = s.mb()
        toks = [s.hello(c) for c in range(n)]
        lock = threading.Lock()
        todo = list(range(n))

        def work():
            while True:
                with lock:
                    if not todo:
                        return
                    c = todo.pop()
                try:
                    s.stub.Verify(_req(c, toks[c], "idle", _prompt(tokens, c)), timeout=600)
                except grpc.RpcError:
                    pass
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        held = s.mb()
        time.sleep(7.0)   # every client is dropped (5 s), its session freed
        return dict(scenario=f"idle_sessions_{tokens}",
                    detail=f"{n} clients, one {tokens}-token session each, then silent: RSS {held:.0f} MB while held, "
                           "dropped after 5 s",
                    rss_before_mb=before, rss_peak_mb=s.peak_mb(), rss_after_mb=s.mb())
    finally:
        s.close()


def soak(seconds: float, warm_s: float = 5.0) -> dict:
    """Honest drafters (clients 0-1) beside hostile clients (2-5): ``warm_s`` seconds of it, then the
    server's memory, ``seconds`` more, every client leaves, the memory again."""
    target, draft = zoo.load_model("target-m"), zoo.load_model("draft-xs")
    specs = {0: ClientSpec("draft-xs", ("code",), 1, 16), 1: ClientSpec("draft-xs", ("sql",), 1, 16)}
    ref = {c: [decoding.autoregressive(target, p, sp.max_new_tokens).tokens.tolist()
               for p in prompt_stream(sp, zoo.load_tokenizer())] for c, sp in specs.items()}
    s = Server(6, client_timeout=2.0)
    bad, stop = [], threading.Event()
    try:
        def honest(c):
            while not stop.is_set():
                if client_main(s.address, c, specs[c], model=draft, rpc_timeout=60, key=s.key)["outputs"] != ref[c]:
                    bad.append(c)

        def hostile(c):
            uniform = np.full((64, VOCAB), 1 / VOCAB, np.float32).tobytes()
            k = 0
            while not stop.is_set():
                k += 1
                try:
                    tok = s.hello(c)
                except grpc.RpcError:   # still live from the last cycle: wait for the drop
                    time.sleep(0.5)
                    continue
                try:
                    if c == 2:   # forged tokens, then a follow-up without the verdict's token
                        for _ in range(50):
                            try:
                                s.stub.Verify(_req(c, "forged", "s", [1]), timeout=10)
                            except grpc.RpcError:
                                pass
                        r = s.stub.Verify(_req(c, tok, "s", _prompt(200, k)), timeout=30)
                        try:
                            s.stub.Verify(_req(c, tok, "s", [], rnd=1), timeout=30)
                        except grpc.RpcError:
                            pass
                        s.stub.Verify(_req(c, tok, "s", [r.token], rnd=2), timeout=30)
                    elif c == 3:   # Bye with a long prompt in flight
                        fut = s.stub.Verify.future(_req(c, tok, "s", _prompt(1500, k)), timeout=30)
                        time.sleep(0.01)
                        s.stub.Bye(pb.ByeRequest(client=c, token=tok), timeout=10)
                        try:
                            fut.result()
                        except grpc.RpcError:
                            pass
                        continue
                    elif c == 4:   # a session, then silence until the drop
                        s.stub.Verify(_req(c, tok, "s", _prompt(500, k)), timeout=30)
                        time.sleep(3.0)
                        continue
                    else:          # at-cap floods
                        futs = [s.stub.Verify.future(_req(c, tok, "s", [1, 2], 64, r, 1.0, uniform), timeout=30)
                                for r in range(6)]
                        for f in futs:
                            f.exception()
                    s.stub.Bye(pb.ByeRequest(client=c, token=tok), timeout=10)
                except grpc.RpcError:
                    pass
        def phase(length: float) -> float:
            stop.clear()
            threads = [threading.Thread(target=honest, args=(c,)) for c in specs]
            threads += [threading.Thread(target=hostile, args=(c,)) for c in (2, 3, 4, 5)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            time.sleep(length)
            stop.set()
            for t in threads:
                t.join(120)
            time.sleep(4.0)   # the silent ones are dropped, the server trims its heap when idle
            return time.monotonic() - t0
        phase(warm_s)         # warm-up: the gRPC thread pool and the heap's arenas exist from here on
        before = s.mb()
        took = phase(seconds)
        after = s.mb()
        ok = not bad and after <= 1.10 * before
        return dict(scenario="soak", detail=f"{took:.0f} s after a {warm_s:g} s warm-up, 2 honest + 4 hostile clients; honest runs with other "
                    f"tokens than greedy decoding: {len(bad)}; memory back within 10 %: {after <= 1.10 * before}",
                    rss_before_mb=before, rss_peak_mb=s.peak_mb(), rss_after_mb=after, ok=ok)
    finally:
        stop.set()
        s.close()


def _long_prompts(n: int, tokens: int) -> list[list[int]]:
    """``n`` distinct prompts of ``tokens`` tokens: every domain's evaluation prompts, concatenated, each
    client's rotated to start elsewhere."""
    tok = zoo.load_tokenizer()
    ids = [t for d in ("summarize", "code", "sql", "math", "qa", "chat") for p in zoo.eval_prompts(d, 8)
           for t in tok.encode(p)]
    if len(ids) < tokens:
        raise ValueError(f"--fleet-prompt: the evaluation prompts hold {len(ids)} tokens, fewer than {tokens}")
    return [(ids[(k * 211) % len(ids):] + ids)[:tokens] for k in range(n)]


def fleet(n: int, prompt_tokens: int, tokens: int, fillers: int, cache_mb: float | None) -> dict:
    """``n`` honest drafter processes beside squatters, cache fillers and a slow client (module docstring)."""
    from specedge.serving.real.drafter import shifted_clock
    from specedge.serving.real.run import _drafter_process, drafter_context

    target = zoo.load_model("target-m")
    prompts = _long_prompts(n, prompt_tokens)
    t_ref = time.monotonic()
    ref = [decoding.autoregressive(target, p, tokens).tokens.tolist() for p in prompts]
    t_ref = time.monotonic() - t_ref
    del target
    slow_id, ids = n + fillers, n + fillers + 1
    log = Path(f"/tmp/fleet-{os.getpid()}.csv")
    extra = ("--max-cache-mb", cache_mb) if cache_mb else ()
    s = Server(ids, former="sync", client_timeout=10.0, out=str(log), extra=extra)
    stop, counts, lock = threading.Event(), dict(squat_refused=0, fill_ok=0, fill_refused=0, slow_rounds=0), threading.Lock()

    def count(k, v=1):
        with lock:
            counts[k] += v

    def squatter():
        while not stop.is_set():
            for c in range(ids):
                try:
                    s.stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=10)
                except grpc.RpcError as err:
                    count("squat_refused", err.code() == grpc.StatusCode.PERMISSION_DENIED)
            stop.wait(0.5)

    def filler(c):
        tok = s.hello(c)
        for k in range(3):
            if stop.is_set():
                break
            try:
                r = s.stub.Verify(_req(c, tok, f"fill{k}", _prompt(2040, 1000 * c + k), rnd=2 * k), timeout=120)
                count("fill_ok")
                stop.wait(2.0)   # idle: its session may be evicted
                s.stub.Verify(_req(c, tok, f"fill{k}", [r.token], rnd=2 * k + 1), timeout=120)
            except grpc.RpcError as err:
                count("fill_refused")
                if err.code() == grpc.StatusCode.PERMISSION_DENIED:   # dropped (late, or silent): come back
                    tok = s.hello(c)
                stop.wait(1.0)
        try:
            s.stub.Bye(pb.ByeRequest(client=c, token=tok), timeout=10)
        except grpc.RpcError:
            pass

    def slow():
        tok, rnd, last = s.hello(slow_id), 0, None
        while not stop.is_set():
            try:
                new = _prompt(64, 7) if last is None else [last]
                last = s.stub.Verify(_req(slow_id, tok, "slow", new, rnd=rnd), timeout=120).token
                count("slow_rounds")
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.PERMISSION_DENIED:   # dropped: a new Hello, a new session
                    tok, last = s.hello(slow_id), None
            rnd += 1
            stop.wait(3.0)

    ctx = drafter_context()
    results = ctx.Queue()
    procs, done, failed = [], {}, {}
    hostile = [threading.Thread(target=squatter, daemon=True), threading.Thread(target=slow, daemon=True)]
    hostile += [threading.Thread(target=filler, args=(n + f,), daemon=True) for f in range(fillers)]
    try:
        time.sleep(1.0)
        before = s.mb()
        t0 = time.monotonic()
        for t in hostile:
            t.start()
        for c in range(n):
            spec = ClientSpec("draft-xs", ("code",), 1, tokens)
            kw = dict(key=s.key, rpc_timeout=900, hello_timeout=300, prompts=[prompts[c]],
                      clock=shifted_clock({0: 86400.0, 1: -86400.0}.get(c, 0.0)))
            p = ctx.Process(target=_drafter_process, args=(s.address, c, spec, kw, results), daemon=True)
            p.start()
            procs.append(p)
        while len(done) + len(failed) < n:
            kind, c, payload = results.get(timeout=1200)
            if kind == "done":
                done[c] = payload
            elif kind == "failed":
                failed[c] = payload
        took = time.monotonic() - t0
        stop.set()
        for t in hostile:
            t.join(150)
        peak = s.peak_mb()
        time.sleep(4.0)
        after = s.mb()
    finally:
        stop.set()
        for p in procs:   # every process this scenario started, by pid
            if p.is_alive():
                p.terminate()
                p.join(5)
        s.close()
    exact = sum(done[c]["outputs"] == [ref[c]] for c in done)
    events = pd.read_csv(log).get("event", pd.Series(dtype=str)).fillna("") if log.exists() else pd.Series(dtype=str)
    log.unlink(missing_ok=True)
    ev = {k: int(events.str.startswith(k).sum()) for k in ("evicted", "late:", "dropped: late", "counted:")}
    cap = cache_mb or 1000.0
    ok = exact == n and not failed and peak < before + cap + 1000
    return dict(scenario=f"fleet_{n}" + (f"_cap{cache_mb:g}" if cache_mb else ""),
                detail=f"{n} honest drafters ({prompt_tokens}-token prompts, {tokens} tokens, two with clocks +-1 day) "
                       f"in {took:.0f} s: {exact} finished with greedy's tokens, {len(failed)} failed"
                       f"{' (' + next(iter(failed.values()))[:120] + ')' if failed else ''}; cache cap {cap:g} MB; "
                       f"squatter Hellos refused {counts['squat_refused']}; {fillers} fillers' 2040-token sessions "
                       f"{counts['fill_ok']} opened, {counts['fill_refused']} calls refused; slow client "
                       f"{counts['slow_rounds']} rounds; server events: {ev['evicted']} evicted, {ev['late:']} late, "
                       f"{ev['dropped: late']} dropped late, {ev['counted:']} counted-kind rows; greedy references "
                       f"{t_ref:.0f} s",
                rss_before_mb=before, rss_peak_mb=peak, rss_after_mb=after, ok=ok,
                honest=n, honest_exact=exact, prompt_tokens=prompt_tokens)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--cycles", type=int, default=90)
    ap.add_argument("--refused-calls", type=int, default=20_000)
    ap.add_argument("--soak-s", type=float, default=45.0)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--fleet", type=int, default=64, help="honest drafters of the fleet scenario")
    ap.add_argument("--fleet-prompt", type=int, default=1024, help="tokens of each honest drafter's prompt")
    ap.add_argument("--fleet-tokens", type=int, default=24)
    ap.add_argument("--fleet-fillers", type=int, default=16)
    ap.add_argument("--fleet-cache-mb", type=float, default=None,
                    help="also run the fleet with this cache cap (MB), where eviction and admission engage")
    args = ap.parse_args(argv)
    runs = dict(bye_in_flight=lambda: bye_in_flight(args.cycles), pass_cap=pass_cap,
                amplification=lambda: amplification(args.refused_calls),
                idle_sessions_48=lambda: idle_sessions(200, 48), idle_sessions_2044=lambda: idle_sessions(120, 2044),
                soak=lambda: soak(args.soak_s),
                fleet=lambda: fleet(args.fleet, args.fleet_prompt, args.fleet_tokens, args.fleet_fillers, None))
    if args.fleet_cache_mb:
        runs["fleet_cap"] = lambda: fleet(args.fleet, args.fleet_prompt, args.fleet_tokens, args.fleet_fillers,
                                          args.fleet_cache_mb)
    rows = []
    for name, fn in runs.items():
        if args.only and name not in args.only:
            continue
        t = time.monotonic()
        # the server (the process measured) runs target-m in float32 on one torch thread (OMP_NUM_THREADS=1)
        row = dict(fn(), wall_s=round(time.monotonic() - t, 1), **host_columns("float32", 1),
                   date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        rows.append(row)
        print(f"{name}: RSS {row['rss_before_mb']:.0f} -> peak {row['rss_peak_mb']:.0f} -> {row['rss_after_mb']:.0f} MB;"
              f" {row['detail']}", flush=True)
    if args.out:
        old = pd.read_csv(args.out) if args.out.exists() and args.only else pd.DataFrame()
        new = pd.DataFrame(rows)
        if len(old):   # --only: the other scenarios' rows stay as they were measured
            old = old[~old.scenario.isin(new.scenario)]
        save(pd.concat([old, new], ignore_index=True).round(1), args.out)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
