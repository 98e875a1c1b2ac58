"""``python -m specedge.serving``: the verification server and edge drafters (127.0.0.1 by default).

    python -m specedge.serving run --clients 2 --allocator goodspeed --capacity 8 --out build/run.csv
    python -m specedge.serving server --clients 2 --allocator goodspeed --capacity 8 --port 50051
    python -m specedge.serving drafter --port 50051 --client 0 --draft draft-xs --domains code
    python -m specedge.serving drafter --backend llamacpp --gguf models/draft-xs.gguf --draft draft-xs   # make llamacpp

``run`` starts the server and one process per client, runs them to completion and stops them all;
``server`` and ``drafter`` are the two halves for two terminals (the server stops by itself when every
client finished, or after --idle-timeout seconds without a Hello or request; an interrupted drafter can be
started again at once and generates from the start, docs/serving-guarantees.md). The server writes a fresh
key to --key-file (default build/serving/server-<port>.key, readable by its user only) and says Hello only
to drafters that send it; a drafter reads it from the same default path (another machine: copy the file
and pass --key-file).

Exit codes: 0 when every drafter finished and tokens were produced; 1 when a drafter failed or was
dropped and did not come back to finish, no token was produced, the verifier raised on a request, a
policy raised or the server's loop crashed (one line per failed client); 2 for a usage error (refused
before anything starts); 130/143 on SIGINT/SIGTERM. The log is written in every case. ``run`` ends
when the server stopped, whatever its drafters are doing (they are stopped).
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from pathlib import Path

import pandas as pd

from .. import paths, zoo
from . import policies
from .real.codec import MAX_TEMPERATURE
from .log import verified
from .real.server import CLIENT_TIMEOUT, MAX_CACHE_BYTES, MAX_DRAFT, MAX_SECONDS
from .workload import ClientSpec, Workload

MAX_CLIENTS = 4096    # client ids 0..MAX_CLIENTS-1 (the server keeps per-client state, a thread each in flight)
# with this variable set to 1 a drafter waits after its first verified round for a line on stdin (or a signal):
# "mid-generation" on any host, however fast (the README's Ctrl-C test holds it there)
HOLD_ENV = "SPECEDGE_DRAFTER_HOLD"
MIN_LINK_MBPS = 1e-3  # 1 kbit/s: a 2 MB request then takes 4.6 h to send, still inside MAX_SECONDS

DOMAINS = ("chat", "code", "math", "qa", "sql", "summarize")


def _common(ap):
    ap.add_argument("--clients", type=int, default=2, help="number of drafters (default 2)")
    ap.add_argument("--capacity", type=int, default=8, help="C: draft tokens per pass over all clients")
    ap.add_argument("--allocator", default="goodspeed", choices=["goodspeed", "fixed", "random"])
    ap.add_argument("--former", default="sync", choices=["sync", "fcfs"])
    ap.add_argument("--target", default="target-m", help="zoo name, local dir or cached hub id")
    ap.add_argument("--no-cache", action="store_true", help="recompute every prefix (SLED)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--idle-timeout", type=float, default=120.0,
                    help="s without a Hello or request before the server stops (default 120)")
    ap.add_argument("--client-timeout", type=float, default=CLIENT_TIMEOUT,
                    help=f"s a client may stay silent while it owes a request before it is dropped and its "
                         f"session freed (default {CLIENT_TIMEOUT:g})")
    ap.add_argument("--max-cache-mb", type=float, default=MAX_CACHE_BYTES / 1e6,
                    help=f"MB of KV cache over all sessions (default {MAX_CACHE_BYTES / 1e6:g}): beyond it idle sessions "
                         "are evicted and new ones wait, docs/serving-guarantees.md")
    ap.add_argument("--round-wait", type=float, default=None,
                    help="s a sync round waits for a missing client before it goes on without it (default: "
                         "4 x the median gap between a reply and the next request over recent rounds, at least 1 s)")


def _host(ap):
    ap.add_argument("--host", default="127.0.0.1",
                    help="address to listen on / connect to (default 127.0.0.1: this machine only; IPv6 "
                         "literals with or without brackets; anything else exposes an unencrypted server, "
                         "see docs/serving-layer.md)")


def _key(ap, what):
    ap.add_argument("--key-file", type=Path, default=None,
                    help=f"the file the server's key is {what} (default build/serving/server-<port>.key)")


def key_path(port: int) -> Path:
    return paths.BUILD / "serving" / f"server-{port}.key"


def _sampling(ap):
    ap.add_argument("--draft", default="draft-xs", help="zoo name, local dir or cached hub id")
    ap.add_argument("--tokens", type=int, default=32, help="tokens generated per prompt (>= 1)")
    ap.add_argument("--prompts", type=int, default=1, help="prompts per domain per client (>= 1)")
    ap.add_argument("--temperature", type=float, default=0.0, help="T: 0 greedy (default), > 0 sampled")
    ap.add_argument("--top-k", type=int, default=None, help="TK-SLT: send only the K largest draft "
                    "probabilities per token (sampled runs; default: the dense distribution)")
    ap.add_argument("--link-delay-ms", type=float, default=0.0, help="emulated one-way link delay, ms")
    ap.add_argument("--link-mbps", type=float, default=math.inf, help="emulated link rate, Mbit/s")
    ap.add_argument("--rpc-timeout", type=float, default=60.0, help="s a drafter waits for each reply")
    ap.add_argument("--show-text", action="store_true", help="print the generated text")


def _model_exists(name: str) -> bool:
    try:
        kind, where = zoo.resolve(name)
    except FileNotFoundError:
        return False
    if kind != "hub":
        return True
    try:
        from huggingface_hub import try_to_load_from_cache
        return isinstance(try_to_load_from_cache(where, "config.json"), str)
    except Exception:  # noqa: BLE001 - no hub client or a malformed id: not loadable offline
        return False


def _check(ap, args) -> None:
    """Usage errors, refused before anything starts (argparse exits with 2)."""
    if getattr(args, "clients", 1) < 1:
        ap.error(f"--clients must be >= 1, got {args.clients}")
    if hasattr(args, "capacity") and args.capacity < args.clients:
        ap.error(f"--capacity must be >= --clients ({args.clients}), got {args.capacity}")
    if getattr(args, "clients", 1) > MAX_CLIENTS:
        ap.error(f"--clients must be <= {MAX_CLIENTS}, got {args.clients}")
    if hasattr(args, "capacity") and args.capacity > args.clients * MAX_DRAFT:
        ap.error(f"--capacity must be <= --clients x {MAX_DRAFT} (the drafts a request may carry) = "
                 f"{args.clients * MAX_DRAFT}, got {args.capacity}")
    for flag in ("idle_timeout", "client_timeout", "round_wait", "rpc_timeout"):
        v = getattr(args, flag, None)
        if v is not None and not (math.isfinite(v) and 0 < v <= MAX_SECONDS):
            ap.error(f"--{flag.replace('_', '-')} must be a finite value in (0, {MAX_SECONDS:g}] s, got {v}")
    if hasattr(args, "port") and not 0 <= args.port <= 65535:
        ap.error(f"--port must lie in 0..65535 (0: any free port), got {args.port}")
    if hasattr(args, "max_cache_mb") and not (math.isfinite(args.max_cache_mb) and 0 < args.max_cache_mb <= 1e9):
        ap.error(f"--max-cache-mb must be a finite value in (0, 1e9], got {args.max_cache_mb}")
    if hasattr(args, "client") and not 0 <= args.client < MAX_CLIENTS:
        ap.error(f"--client must lie in 0..{MAX_CLIENTS - 1}, got {args.client}")
    if hasattr(args, "seed") and not 0 <= args.seed < 2 ** 31:
        ap.error(f"--seed must lie in 0..{2 ** 31 - 1}, got {args.seed}")
    if hasattr(args, "host") and not args.host.strip("[] "):
        ap.error("--host must name an address, got an empty one")
    for flag in ("target", "draft"):
        name = getattr(args, flag, None)
        if name is not None and not _model_exists(name):
            ap.error(f"--{flag}: {name!r} is not a zoo model ({', '.join(zoo.TARGETS + zoo.DRAFTS)}), "
                     "a local directory or a hub id in the local cache")
    if hasattr(args, "tokens"):
        for flag in ("tokens", "prompts"):
            if getattr(args, flag) < 1:
                ap.error(f"--{flag} must be >= 1, got {getattr(args, flag)}")
        if not (math.isfinite(args.temperature) and 0 <= args.temperature <= MAX_TEMPERATURE):
            ap.error(f"--temperature must lie in [0, {MAX_TEMPERATURE:g}], got {args.temperature}")
        if args.top_k is not None and not 1 <= args.top_k <= 65536:
            ap.error(f"--top-k must lie in 1..65536, got {args.top_k}")
        if not (math.isfinite(args.link_delay_ms) and 0 <= args.link_delay_ms <= 1e3 * MAX_SECONDS):
            ap.error(f"--link-delay-ms must lie in [0, {1e3 * MAX_SECONDS:g}] ms, got {args.link_delay_ms}")
        if not (args.link_mbps >= MIN_LINK_MBPS):
            ap.error(f"--link-mbps must be >= {MIN_LINK_MBPS:g} (or inf), got {args.link_mbps}")
        if args.prompts > 1000:
            ap.error(f"--prompts must be <= 1000, got {args.prompts}")
    if getattr(args, "backend", "transformers") == "llamacpp":
        from ..llamacpp import MISSING, available
        if args.gguf is None or args.gguf.suffix != ".gguf" or not args.gguf.is_file():
            ap.error(f"--backend llamacpp needs --gguf, an existing .gguf file, got {args.gguf}")
        if not available():
            ap.error(MISSING)
    elif getattr(args, "gguf", None) is not None:
        ap.error("--gguf is read with --backend llamacpp only")


def _pin(text: str) -> tuple[int, int]:
    import os
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected SERVER_CPU,DRAFTER_CPU (e.g. 0,1), got {text!r}")
    pin = (int(parts[0]), int(parts[1]))
    have = os.sched_getaffinity(0)
    if pin[0] == pin[1] or not set(pin) <= have:
        raise argparse.ArgumentTypeError(f"two different cores of {sorted(have)} are needed, got {text!r}")
    return pin


def _link(args):
    from .real.drafter import Link
    return Link(args.link_delay_ms / 1e3, args.link_mbps * 1e6)


class _Terminated(KeyboardInterrupt):
    pass


def _on_sigterm(signum, frame):
    raise _Terminated()


def _write(log: pd.DataFrame, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    log.to_csv(out, index=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.serving", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="server + N drafter processes, to completion")
    _common(run)
    _host(run)
    _sampling(run)
    run.add_argument("--out", type=Path, default=None, help="per-round log CSV (default: build/serving/run.csv)")
    run.add_argument("--pin", type=_pin, default=None, metavar="SERVER_CPU,DRAFTER_CPU",
                     help="run the server on one core and every drafter on another, e.g. 0,1 (default: unpinned)")
    srv = sub.add_parser("server", help="the verification server alone")
    _common(srv)
    _host(srv)
    srv.add_argument("--port", type=int, default=50051, help="0: any free port (printed)")
    srv.add_argument("--out", type=Path, default=None, help="per-round log CSV (default: build/serving/server.csv)")
    _key(srv, "written to (a fresh one at every start, removed at the end)")
    dr = sub.add_parser("drafter", help="one drafter process")
    _host(dr)
    dr.add_argument("--port", type=int, default=50051)
    dr.add_argument("--client", type=int, default=0)
    dr.add_argument("--domains", nargs="+", default=["code"], choices=DOMAINS)
    dr.add_argument("--backend", choices=("transformers", "llamacpp"), default="transformers",
                    help="llamacpp: the draft is the GGUF file --gguf on llama.cpp (make llamacpp); --draft then names "
                         "the model whose tokenizer encodes the prompts")
    dr.add_argument("--gguf", type=Path, default=None, help="the draft's GGUF file (--backend llamacpp)")
    _key(dr, "read from")
    _sampling(dr)
    args = ap.parse_args(argv)
    _check(ap, args)
    signal.signal(signal.SIGTERM, _on_sigterm)
    if args.cmd == "drafter":
        return _drafter(args)
    if args.cmd == "run":
        return _run(args)
    return _server(args)


def _drafter(args) -> int:
    from .real.drafter import DrafterError, client_main
    spec = ClientSpec(args.draft, tuple(args.domains), args.prompts, args.tokens, temperature=args.temperature,
                      seed=args.seed if hasattr(args, "seed") else 0)
    from .real.codec import host_port
    hold = os.environ.get(HOLD_ENV) == "1"

    def first_round(rnd: int) -> None:
        if rnd == 0:
            print(f"drafter {args.client}: round 0 verified", flush=True)
            if hold:   # mid-generation on any host, however fast: wait here for a line (or a signal)
                sys.stdin.readline()
    model, loaded = None, args.draft
    if args.backend == "llamacpp":   # one llama.cpp context: room for a prompt, its tokens and a round's drafts
        from ..llamacpp import drafter_lm
        from .real.drafter import PROMPT_TOKENS
        model, loaded = drafter_lm(args.gguf, args.tokens, PROMPT_TOKENS), f"{args.gguf} (llama.cpp)"
    try:
        address = host_port(args.host, args.port)
        res = client_main(address, args.client, spec, top_k=args.top_k, link=_link(args), rpc_timeout=args.rpc_timeout,
                          key_file=args.key_file or key_path(args.port), on_round=first_round, model=model,
                          on_ready=lambda: print(f"drafter {args.client}: {loaded} loaded; generating with the "
                                                 f"server on {address}", flush=True))
    except DrafterError as err:
        print(err, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"drafter {args.client}: interrupted", file=sys.stderr)
        return 143 if isinstance(sys.exc_info()[1], _Terminated) else 130
    rows = pd.DataFrame(res["rows"])
    ok = verified(rows)
    tok = int(ok.tokens_committed.sum())
    print(f"drafter {args.client}: {len(ok)} rounds, {tok} tokens, {tok / ok.t_round.sum():.1f} tokens/s, "
          f"round p50 {1e3 * ok.t_round.quantile(.5):.1f} ms p90 {1e3 * ok.t_round.quantile(.9):.1f} ms "
          f"p99 {1e3 * ok.t_round.quantile(.99):.1f} ms, drafting p50 {1e3 * ok.t_draft_cpu.quantile(.5):.1f} ms CPU")
    tokenizer = zoo.tokenizer_for(args.draft) if args.show_text else None
    for out in res["outputs"]:
        print("  tokens:", " ".join(map(str, out))[:120])
        if tokenizer is not None:
            print(f"  text: {tokenizer.decode(out)!r}")
    return 0 if tok else 1


def _run(args) -> int:
    from .real.run import RunFailed, RunInterrupted, failed_clients, run_real, summary
    wl = Workload(args.target, tuple(ClientSpec(args.draft, (DOMAINS[i % 6],), args.prompts, args.tokens,
                                                temperature=args.temperature, seed=args.seed)
                                     for i in range(args.clients)),
                  capacity=args.capacity, cache=not args.no_cache, top_k=args.top_k)
    out = args.out or paths.BUILD / "serving" / "run.csv"
    t0 = time.perf_counter()
    code = 0
    try:
        log, outputs = run_real(wl, policies.former(args.former), policies.allocator(args.allocator, capacity=args.capacity, clients=args.clients, seed=args.seed),
                                label=args.allocator, seed=args.seed, idle_timeout=args.idle_timeout,
                                client_timeout=args.client_timeout, round_wait=args.round_wait,
                                max_cache_bytes=args.max_cache_mb * 1e6,
                                rpc_timeout=args.rpc_timeout, link=_link(args), host=args.host, pin=args.pin)
    except MemoryError as err:
        print(f"refused: {err}", file=sys.stderr)
        return 2
    except RunFailed as err:
        log, outputs = err.log, err.outputs
        print(f"FAILED: {err}", file=sys.stderr)
        code = 143 if isinstance(err, RunInterrupted) and isinstance(err.__cause__, _Terminated) else \
            130 if isinstance(err, RunInterrupted) else 1
    except KeyboardInterrupt as err:  # before the server and drafters existed (loading the target)
        from .interfaces import LOG_COLUMNS
        log, outputs = pd.DataFrame([dict(system="real", policy=args.allocator, client=-1,
                                          event="failed: interrupted while loading the target")],
                                    columns=LOG_COLUMNS), {}
        print("FAILED: interrupted while loading the target", file=sys.stderr)
        code = 143 if isinstance(err, _Terminated) else 130
    _write(log, out)
    ok = verified(log)
    tokens = int(ok.tokens.sum()) if len(ok) else 0
    print(f"{args.clients} drafters, {ok.batch.nunique()} batches, {tokens} tokens in "
          f"{time.perf_counter() - t0:.1f} s; log -> {out}")
    for line in summary(log, outputs, args.clients, zoo.tokenizer_for(args.draft) if args.show_text else None):
        print(line)
    for e in log[(log.event != "") & ~log.event.str.startswith("failed: ")].event:
        print("  event:", e)
    failed = failed_clients(log)
    for c, why in sorted(failed.items()):
        print(f"client {c} FAILED: {why}", file=sys.stderr)
    if code == 0 and (failed or tokens == 0):
        code = 1
        if tokens == 0:
            print("FAILED: no token was produced", file=sys.stderr)
    return code


def _server(args) -> int:
    import secrets

    from .real.codec import host_port
    from .real.drafter import threads
    from .real.server import VerificationServer
    from .real.verifier import Verifier
    threads(1)
    verifier = Verifier(zoo.load_model(args.target), cache=not args.no_cache, seed=args.seed)
    server = VerificationServer(verifier, policies.former(args.former), policies.allocator(args.allocator, capacity=args.capacity, clients=args.clients, seed=args.seed),
                                list(range(args.clients)), label=args.allocator, target_name=args.target,
                                idle_timeout=args.idle_timeout, client_timeout=args.client_timeout,
                                round_wait=args.round_wait, key=secrets.token_hex(16),
                                max_cache_bytes=args.max_cache_mb * 1e6)
    try:
        port = server.start(args.port, args.host)
    except OSError as err:
        print(f"refused: {err}", file=sys.stderr)
        return 2
    server.write_key(args.key_file or key_path(port))
    code = 0
    try:   # from here on a SIGTERM/SIGINT (even one that lands inside this print) stops the server with its log
        print(f"verification server on {host_port(args.host, port)} (target {args.target}, {args.clients} clients, "
              f"{args.allocator}, C={args.capacity}; key in {server.key_file}); waiting for drafters", flush=True)
        server.wait()
    except KeyboardInterrupt as err:
        code = 143 if isinstance(err, _Terminated) else 130
        print("interrupted: stopping", file=sys.stderr)
    finally:
        server.stop()
    log = pd.DataFrame(server.log + server.events)
    out = args.out or paths.BUILD / "serving" / "server.csv"
    _write(log, out)
    tokens = int(pd.to_numeric(log.get("tokens", pd.Series(dtype=float))).sum()) if len(log) else 0
    print(f"served {server.batches} batches, {tokens} tokens; log -> {out}")
    unfinished = server.unfinished()
    for c, why in sorted(unfinished.items()):
        print(f"client {c} FAILED: {why}", file=sys.stderr)
    for c, n in sorted(server.interrupted.items()):
        if c not in unfinished:
            print(f"client {c}: finished after {n} earlier Hello(s) ended before their last round", file=sys.stderr)
    if server.request_errors:
        print(f"FAILED: {server.request_errors} request(s) the verifier raised on (each failed alone; see the log)",
              file=sys.stderr)
    if server.failure is not None or server.policy_errors:
        print(f"FAILED: {server.failure!r}" if server.failure else f"FAILED: {server.policy_errors[0]}", file=sys.stderr)
        code = code or 1
    if tokens == 0 or unfinished or server.request_errors:
        code = code or 1
    return code


if __name__ == "__main__":
    sys.exit(main())
