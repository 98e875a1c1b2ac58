"""``python -m specedge.serving``: the verification server and edge drafters on 127.0.0.1.

    python -m specedge.serving run --clients 2 --allocator goodspeed --capacity 8 --out build/run.csv
    python -m specedge.serving server --clients 2 --allocator goodspeed --capacity 8 --port 50051
    python -m specedge.serving drafter --port 50051 --client 0 --draft draft-xs --domains code

``run`` starts the server and one process per client, runs them to completion and stops them all;
``server`` and ``drafter`` are the two halves for two terminals (the server stops by itself when every
client said Bye, or after --idle-timeout seconds without a request).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from .. import paths, zoo
from .allocation import FixedS, GoodspeedAllocator, RandomS
from .batching import FCFS, SyncRounds
from .workload import ClientSpec, Workload

DOMAINS = ("chat", "code", "math", "qa", "sql", "summarize")


def _allocator(name: str, capacity: int, n: int, seed: int):
    if name == "goodspeed":
        return GoodspeedAllocator(capacity)
    if name == "fixed":
        return FixedS(capacity, n)
    if name == "random":
        return RandomS(capacity, seed=seed)
    raise ValueError(f"--allocator must be goodspeed, fixed or random, got {name!r}")


def _former(name: str):
    if name == "sync":
        return SyncRounds()
    if name == "fcfs":
        return FCFS()
    raise ValueError(f"--former must be sync or fcfs, got {name!r}")


def _common(ap):
    ap.add_argument("--clients", type=int, default=2, help="number of drafters (default 2)")
    ap.add_argument("--capacity", type=int, default=8, help="C: draft tokens per pass over all clients")
    ap.add_argument("--allocator", default="goodspeed", choices=["goodspeed", "fixed", "random"])
    ap.add_argument("--former", default="sync", choices=["sync", "fcfs"])
    ap.add_argument("--target", default="target-m", help="zoo name, local dir or cached hub id")
    ap.add_argument("--no-cache", action="store_true", help="recompute every prefix (SLED)")
    ap.add_argument("--seed", type=int, default=0)


def _check(args) -> None:
    if args.clients < 1:
        raise SystemExit(f"--clients must be >= 1, got {args.clients}")
    if args.capacity < args.clients:
        raise SystemExit(f"--capacity must be >= --clients ({args.clients}), got {args.capacity}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.serving", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="server + N drafter processes, to completion")
    _common(run)
    run.add_argument("--draft", default="draft-xs")
    run.add_argument("--tokens", type=int, default=32, help="tokens generated per prompt")
    run.add_argument("--prompts", type=int, default=1, help="prompts per domain per client")
    run.add_argument("--out", type=Path, default=None, help="per-round log CSV (default: build/serving/run.csv)")
    srv = sub.add_parser("server", help="the verification server alone")
    _common(srv)
    srv.add_argument("--port", type=int, default=50051)
    srv.add_argument("--idle-timeout", type=float, default=120.0)
    srv.add_argument("--out", type=Path, default=None, help="per-round log CSV written when the server stops")
    dr = sub.add_parser("drafter", help="one drafter process")
    dr.add_argument("--port", type=int, default=50051)
    dr.add_argument("--client", type=int, default=0)
    dr.add_argument("--draft", default="draft-xs")
    dr.add_argument("--domains", nargs="+", default=["code"], choices=DOMAINS)
    dr.add_argument("--tokens", type=int, default=32)
    dr.add_argument("--prompts", type=int, default=1)
    args = ap.parse_args(argv)

    if args.cmd == "drafter":
        from .run import client_main
        with tempfile.TemporaryDirectory() as tmp:
            spec = ClientSpec(args.draft, tuple(args.domains), args.prompts, args.tokens)
            client_main(args.port, args.client, spec, f"{tmp}/c.csv")
            rows = pd.read_csv(f"{tmp}/c.csv", keep_default_na=False)
        done = rows[rows.output != ""]
        print(f"drafter {args.client}: {len(rows)} rounds, {rows.tokens_committed.sum()} tokens, "
              f"median round {1e3 * rows.t_round.median():.1f} ms")
        for out in done.output:
            print("  tokens:", out[:120])
        return 0

    _check(args)
    alloc = _allocator(args.allocator, args.capacity, args.clients, args.seed)
    former = _former(args.former)
    if args.cmd == "run":
        from .run import run_real
        wl = Workload(args.target, tuple(ClientSpec(args.draft, (DOMAINS[i % 6],), args.prompts, args.tokens, seed=args.seed)
                                         for i in range(args.clients)), capacity=args.capacity, cache=not args.no_cache)
        t0 = time.perf_counter()
        log, outputs = run_real(wl, former, alloc, label=args.allocator, seed=args.seed)
        out = args.out or paths.BUILD / "serving" / "run.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        log.to_csv(out, index=False)
        ok = log[log.event == ""]
        print(f"{args.clients} drafters, {ok.batch.nunique()} batches, {int(ok.tokens.sum())} tokens in "
              f"{time.perf_counter() - t0:.1f} s; mean accepted/round {ok.accepted.mean():.2f}; "
              f"median verify {1e3 * ok.t_verify.median():.1f} ms; log -> {out}")
        for e in log[log.event != ""].event:
            print("  event:", e)
        return 0

    # server
    from .drafter import threads
    from .server import VerificationServer
    from .verifier import Verifier
    threads(1)
    verifier = Verifier(zoo.load_model(args.target), cache=not args.no_cache, seed=args.seed)
    server = VerificationServer(verifier, former, alloc, list(range(args.clients)), label=args.allocator,
                                target_name=args.target, idle_timeout=args.idle_timeout)
    port = server.start(args.port)
    print(f"verification server on 127.0.0.1:{port} (target {args.target}, {args.clients} clients, "
          f"{args.allocator}, C={args.capacity}); waiting for drafters", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    log = pd.DataFrame(server.log + server.events)
    print(f"served {server.batches} batches, {int(log['tokens'].sum()) if len(log) else 0} tokens")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        log.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
