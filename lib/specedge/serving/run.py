"""The real run: one verification server and N drafter processes on 127.0.0.1, to completion.

``run_real(workload, former, allocator)`` starts the server in this process (so the policy objects
passed in are the very ones it uses), spawns one process per client, waits for all of them, stops
every process it started (by pid, also on errors) and returns the per-round log
(``interfaces.LOG_COLUMNS``, ``system="real"``; event rows say when a client was dropped or sent a
malformed request). ``client_main`` is a drafter process; ``python -m specedge.serving`` wraps both.
"""
from __future__ import annotations

import csv
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

import grpc
import pandas as pd

from .. import zoo
from . import wire_pb2 as pb
from . import wire_pb2_grpc as pb_grpc
from .drafter import Drafter, threads
from .interfaces import LOG_COLUMNS, BatchFormer, DraftAllocator
from .server import VerificationServer, encode_distribution
from .verifier import Verifier
from .workload import ClientSpec, Workload

PROMPT_TOKENS = 48  # prompts are cut to this many tokens (the zoo's eval prompts vary in length)


def prompt_stream(spec: ClientSpec, tokenizer, prompt_tokens: int = PROMPT_TOKENS) -> list[list[int]]:
    """The client's prompts in order: ``spec.prompts`` per domain, domain after domain."""
    out = []
    for domain in spec.domains:
        for text in zoo.eval_prompts(domain, spec.prompts):
            out.append(tokenizer.encode(text)[-prompt_tokens:])
    if not out:
        raise ValueError(f"ClientSpec.domains {spec.domains!r} x prompts {spec.prompts} gives no prompt")
    return out


def _fault(fault: str | None) -> tuple[str, int]:
    if not fault:
        return "", -1
    kind, _, at = fault.partition("@")
    if kind not in ("die", "malformed") or not at.isdigit():
        raise ValueError(f"fault must be 'die@<round>' or 'malformed@<round>', got {fault!r}")
    return kind, int(at)


def stop_rule_for(spec: ClientSpec):
    """The drafting controller of ``spec.draft_rule`` = "predictor:<name>" (a committed predictor in
    data/predictor, WISP's stop before the first predicted rejection), or None."""
    if not spec.draft_rule.startswith("predictor:"):
        if spec.draft_rule not in ("server", "fixed"):
            raise ValueError(f"draft_rule: expected 'server', 'fixed' or 'predictor:<name>', got {spec.draft_rule!r}")
        return None
    from .. import paths, predictor

    pred = predictor.load(paths.DATA / "predictor", spec.draft_rule.split(":", 1)[1])
    return predictor.StopAtFirstPredictedRejection(pred, spec.gamma).stop_rule


def client_main(port: int, client: int, spec: ClientSpec, out_csv: str, fault: str | None = None,
                top_k: int | None = None, prompt_tokens: int = PROMPT_TOKENS) -> None:
    """A drafter process: Hello, then every prompt of its stream round by round, then Bye."""
    threads(1)
    kind, at = _fault(fault)
    draft = zoo.load_model(spec.draft)
    tok = zoo.load_tokenizer()
    vocab = int(draft.config.vocab_size)
    prompts = prompt_stream(spec, tok, prompt_tokens)  # all loading before Hello: the server times us
    stop_rule = stop_rule_for(spec)
    rows = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.VerifierStub(channel)
        hello = stub.Hello(pb.HelloRequest(client=client, draft_model=spec.draft, vocab_size=vocab,
                                           slo_class=float(spec.slo_class or 0)))
        s_next = hello.draft_length if spec.draft_rule == "server" else spec.gamma
        rnd = 0
        for k, prompt in enumerate(prompts):
            d = Drafter(draft, prompt, spec.max_new_tokens, f"c{client}-p{k}", spec.temperature, top_k,
                        seed=spec.seed * 100_003 + client * 1009 + k, stop_rule=stop_rule)
            while not d.done:
                if kind == "die" and rnd == at:
                    os._exit(3)  # a drafter that dies without a word
                req, t_draft = d.propose(s_next)
                msg = pb.VerifyRequest(session=req.session, client=client, round=rnd,
                                       new_tokens=req.new_tokens, draft_ids=req.draft_ids,
                                       draft=encode_distribution(req.q, top_k, vocab),
                                       temperature=req.temperature, slo_class=float(spec.slo_class or 0),
                                       t_draft=t_draft, alpha=float(spec.alpha or 0.0))
                if kind == "malformed" and rnd == at:
                    bad = pb.VerifyRequest()
                    bad.CopyFrom(msg)
                    bad.draft_ids.append(vocab + 7)
                    try:
                        stub.Verify(bad)
                        rows.append(dict(client=client, round=rnd, event="error: malformed request accepted"))
                    except grpc.RpcError as err:
                        rows.append(dict(client=client, round=rnd,
                                         event=f"error: {err.code().name}: {err.details()}"))
                    kind = ""
                t_round0 = time.monotonic() - t_draft
                msg.t_sent = time.monotonic()
                reply = stub.Verify(msg)
                t_recv = time.monotonic()
                committed = d.commit(reply)
                rows.append(dict(client=client, round=rnd, t_round=t_recv - t_round0,
                                 t_send=t_recv - reply.t_reply, tokens_committed=len(committed),
                                 session=req.session, output=" ".join(map(str, d.output)) if d.done else "",
                                 event=""))
                if spec.draft_rule == "server":
                    s_next = reply.next_draft_length
                rnd += 1
        stub.Bye(pb.ByeRequest(client=client))
    with open(out_csv, "w", newline="") as fh:
        cols = ["client", "round", "t_round", "t_send", "tokens_committed", "session", "output", "event"]
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})


def run_real(workload: Workload, former: BatchFormer, allocator: DraftAllocator, *, label: str = "",
             seed: int = 0, client_timeout: float = 30.0, faults: dict[int, str] | None = None,
             prompt_tokens: int = PROMPT_TOKENS, target=None) -> tuple[pd.DataFrame, dict]:
    """Run ``workload`` for real; returns (per-round log, {client: [generated token ids per prompt]})."""
    if not workload.clients:
        raise ValueError("workload.clients: at least one client is needed")
    faults = dict(faults or {})
    for c, f in faults.items():
        _fault(f)
        if not 0 <= c < len(workload.clients):
            raise ValueError(f"faults: client {c} is not in 0..{len(workload.clients) - 1}")
    threads(1)
    target = zoo.load_model(workload.target) if target is None else target
    verifier = Verifier(target, cache=workload.cache, seed=seed)
    clients = list(range(len(workload.clients)))
    server = VerificationServer(verifier, former, allocator, clients, label=label,
                                target_name=workload.target, client_timeout=client_timeout)
    port = server.start(0)
    ctx = mp.get_context("spawn")
    procs = []
    with tempfile.TemporaryDirectory(prefix="specedge-run-") as tmp:
        try:
            for c, spec in enumerate(workload.clients):
                p = ctx.Process(target=client_main, name=f"drafter-{c}",
                                args=(port, c, spec, f"{tmp}/c{c}.csv", faults.get(c), workload.top_k,
                                      prompt_tokens), daemon=True)
                p.start()
                procs.append(p)
            for p in procs:
                p.join()
            server.wait(timeout=client_timeout + 5)
        finally:
            for p in procs:  # stop every process this run started, by pid
                if p.is_alive():
                    p.terminate()
                    p.join(5)
                if p.is_alive():
                    os.kill(p.pid, 9)
                    p.join(1)
            server.stop()
        if server.failure is not None:
            raise RuntimeError(f"run_real: the server's scheduling thread failed: {server.failure!r}") from server.failure
        client_rows = [pd.read_csv(f, keep_default_na=False) for f in sorted(Path(tmp).glob("c*.csv"))]
    crow = pd.concat(client_rows, ignore_index=True) if client_rows else pd.DataFrame(
        columns=["client", "round", "t_round", "t_send", "tokens_committed", "session", "output", "event"])
    log = pd.DataFrame(server.log)
    outputs: dict[int, list[list[int]]] = {}
    ok = crow[crow["event"] == ""] if len(crow) else crow
    for r in ok.itertuples():
        if r.output != "":
            outputs.setdefault(int(r.client), []).append([int(t) for t in str(r.output).split()])
    if len(log):
        log = log.merge(ok[["client", "round", "t_round", "t_send", "tokens_committed"]], on=["client", "round"],
                        how="left")
        log["tokens"] = log["tokens_committed"].where(log["tokens_committed"].notna(), log["tokens"])
    events = [dict(e) for e in server.events]
    events += [dict(system="real", policy=label, client=int(r.client), round=int(r.round), event=r.event)
               for r in crow.itertuples() if r.event]
    for c, p in enumerate(procs):
        if p.exitcode not in (0, None):
            events.append(dict(system="real", policy=label, client=c, event=f"exit code {p.exitcode}"))
    full = pd.concat([log, pd.DataFrame(events)], ignore_index=True) if events else log
    for col in LOG_COLUMNS:
        if col not in full.columns:
            full[col] = "" if col == "event" else float("nan")
    full["system"], full["policy"] = "real", label
    full["event"] = full["event"].fillna("")
    extra = [c for c in ("up", "accept_prob_sum") if c in full.columns]
    return full[LOG_COLUMNS + extra].reset_index(drop=True), outputs


def workload_summary(workload: Workload) -> str:
    return ", ".join(f"client {i}: {c.draft} on {'/'.join(c.domains)}" for i, c in enumerate(workload.clients))


__all__ = ["run_real", "client_main", "prompt_stream"]
