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
  honest client's tokens equal single-process greedy decoding.

Minutes of CPU: not run by CI; by hand,

    python benchmarks/bench_serving_chaos.py --out figures/bench/serving_chaos.csv
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pandas as pd

from specedge import decoding, zoo
from specedge.serving import wire_pb2 as pb
from specedge.serving import wire_pb2_grpc as pb_grpc
from specedge.serving.drafter import client_main, prompt_stream
from specedge.serving.workload import ClientSpec

VOCAB = 8192


def _cpu() -> str:
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    return platform.machine()


def _mem(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out


class Server:
    def __init__(self, clients: int, former: str = "fcfs", client_timeout: float = 600.0):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path))
        self.proc = subprocess.Popen([sys.executable, "-m", "specedge.serving", "server", "--port", "0",
                                      "--clients", str(clients), "--capacity", str(2 * clients), "--allocator", "fixed",
                                      "--former", former, "--client-timeout", str(client_timeout),
                                      "--idle-timeout", "600", "--out", os.devnull],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        port = int(self.proc.stdout.readline().split("127.0.0.1:")[1].split()[0])
        self.address = f"127.0.0.1:{port}"
        self.channel = grpc.insecure_channel(self.address)
        self.stub = pb_grpc.VerifierStub(self.channel)

    def mb(self) -> float:
        return _mem(self.proc.pid)["VmRSS"] / 1e6

    def peak_mb(self) -> float:
        return _mem(self.proc.pid)["VmHWM"] / 1e6

    def hello(self, c: int) -> str:
        return self.stub.Hello(pb.HelloRequest(client=c, vocab_size=VOCAB), timeout=30).token

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
                if client_main(s.address, c, specs[c], model=draft, rpc_timeout=60)["outputs"] != ref[c]:
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--cycles", type=int, default=90)
    ap.add_argument("--refused-calls", type=int, default=20_000)
    ap.add_argument("--soak-s", type=float, default=45.0)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args(argv)
    runs = dict(bye_in_flight=lambda: bye_in_flight(args.cycles), pass_cap=pass_cap,
                amplification=lambda: amplification(args.refused_calls),
                idle_sessions_48=lambda: idle_sessions(200, 48), idle_sessions_2044=lambda: idle_sessions(120, 2044),
                soak=lambda: soak(args.soak_s))
    rows = []
    for name, fn in runs.items():
        if args.only and name not in args.only:
            continue
        t = time.monotonic()
        row = dict(fn(), wall_s=round(time.monotonic() - t, 1), cpu=_cpu(),
                   load_avg=round(os.getloadavg()[0], 1), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        rows.append(row)
        print(f"{name}: RSS {row['rss_before_mb']:.0f} -> peak {row['rss_peak_mb']:.0f} -> {row['rss_after_mb']:.0f} MB;"
              f" {row['detail']}", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(args.out, index=False, float_format="%.1f")
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
