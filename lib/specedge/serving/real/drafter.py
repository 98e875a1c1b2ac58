"""An edge drafter: its own draft model and prompt stream; drafts S tokens, sends, commits the reply.

``Drafter`` is the device side with no I/O (``propose`` -> a ``verifier.Request``, ``commit`` the
server's verdict, a ``verifier.Result``), so the same object runs inside a gRPC client
(``client_main``, which talks to the server only through ``codec`` and the generated stubs) and in
process (tests). It follows ``specedge.decoding``'s loop exactly: the draft cache holds the committed
context plus the drafts, and is cropped to the accepted prefix after each verdict; the correction or
bonus token is sent to the server with the next round's drafts (it is the server's only unseen
committed token then).
"""
from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import dataclass, field

import grpc
import torch

from ... import sampling, zoo
from ...decoding import CausalLM
from . import wire_pb2 as pb
from . import wire_pb2_grpc as pb_grpc
from .codec import request_to_wire, result_from_wire
from .verifier import Request, Result
from ..workload import ClientSpec

PROMPT_TOKENS = 48  # prompts are cut to this many tokens (the zoo's eval prompts vary in length)


@dataclass
class Drafter:
    model: object                       # draft causal LM, or a runner with feed/crop/reset (specedge.llamacpp)
    prompt: list[int]
    max_new_tokens: int
    session: str
    temperature: float = 0.0
    top_k: int | None = None
    seed: int = 0
    stop_rule: object = None            # WISP's controller: stop_rule(i, logits) -> True stops before position i
    greedy_rows: bool = False           # send the drafted rows at T = 0 too (one-hot; greedy verification ignores
                                        # them): the arena's dense / top-K payload on a greedy workload
    output: list[int] = field(default_factory=list)
    rounds: int = 0

    def __post_init__(self):
        if not self.prompt:
            raise ValueError("prompt: at least one token id is needed")
        sampling.check_temperature(self.temperature)
        if hasattr(self.model, "feed"):   # another backend's runner (specedge.llamacpp.LlamaCppLM): emptied per prompt
            self.runner = self.model
            self.runner.reset()
        else:
            self.runner = CausalLM(self.model)
        self.generator = sampling.make_generator(self.seed)
        self._unseen = list(self.prompt)    # tokens the server has not seen
        self._context = list(self.prompt)   # committed tokens
        self._drafts: list[int] = []
        self._pending = False

    @property
    def done(self) -> bool:
        return len(self.output) >= self.max_new_tokens

    @torch.inference_mode()
    def propose(self, s: int) -> tuple[Request, float]:
        """Draft up to ``s`` tokens (capped so the round cannot overshoot); return the request and the
        drafting time in seconds."""
        if self._pending:
            raise RuntimeError(f"session {self.session}: propose() called again before commit() of the last verdict")
        t0 = time.perf_counter()
        s = max(0, min(int(s), self.max_new_tokens - len(self.output) - 1))
        # Feed the committed tokens the draft cache lacks (the last correction token, or the prompt).
        missing = self._context[self.runner.length:]
        drafts, qs = [], []
        stopped = False
        if s > 0:
            logits = self.runner.feed(torch.tensor(missing), keep=1)[-1]
            for j in range(s):
                if self.stop_rule is not None and self.stop_rule(j + 1, logits):
                    stopped = True  # position j + 1 predicted rejected: not drafted (eq 25)
                    break
                dist = sampling.probs(logits, self.temperature, self.top_k)
                tok = int(dist.argmax()) if self.temperature == 0 else int(sampling.sample(dist, self.generator))
                drafts.append(tok)
                qs.append(dist)
                if j + 1 < s:
                    logits = self.runner.feed(torch.tensor([tok]), keep=1)[-1]
            # the last draft is fed next round only if accepted (crop handles the rest); after a stop
            # it was fed already, to get the logits the stop rule saw
            if drafts and not stopped:
                self.runner.feed(torch.tensor([drafts[-1]]), keep=1)
        self._drafts = drafts
        self._pending = True
        q = torch.stack(qs) if (qs and (self.temperature > 0 or self.greedy_rows)) else None
        self._q = q
        req = Request(self.session, list(self._unseen), drafts, q, self.temperature)
        return req, time.perf_counter() - t0

    def reopen(self, session: str) -> Request:
        """The proposed round again, on a new session ``session`` that carries the whole committed context
        (the server evicted the old one): its verdict is the one the old session would have given."""
        if not self._pending:
            raise RuntimeError(f"session {self.session}: reopen() without a proposed round")
        self.session = session
        self._unseen = list(self._context)
        return Request(session, list(self._unseen), list(self._drafts), self._q, self.temperature)

    def commit(self, result: Result) -> list[int]:
        """Apply the server's verdict; returns the tokens committed this round. A verdict refused (its accepted
        count outside the round's drafts, a negative token id) changes nothing: the round stays proposed."""
        n = int(result.accepted)
        if not self._pending:
            raise RuntimeError(f"session {self.session}: commit() without a proposed round")
        if not 0 <= n <= len(self._drafts):
            raise ValueError(f"accepted: {n} outside [0, {len(self._drafts)}]")
        if int(result.token) < 0:
            raise ValueError(f"token: a token id is >= 0, got {int(result.token)}")
        self._pending = False
        new = self._drafts[:n] + [int(result.token)]
        base = len(self._context)
        self._context.extend(new)
        self.runner.crop(min(self.runner.length, base + n))
        self._unseen = [int(result.token)]
        room = self.max_new_tokens - len(self.output)
        self.output.extend(new[:room])
        self.rounds += 1
        return new[:room]


def threads(n: int = 1) -> None:
    """One torch thread per process: several processes share two cores here."""
    os.environ.setdefault("OMP_NUM_THREADS", str(n))
    torch.set_num_threads(n)


@dataclass(frozen=True)
class Link:
    """An emulated edge link, applied at the drafter: each message waits ``delay_s`` plus its size over
    ``rate_bps`` (bits/s; ``inf``: no serialisation time) before it is sent (uplink) or used (downlink),
    so a loopback run sees an edge network's round trip. The uplink wait counts as network time in the
    server's measured uplink (``t_sent`` is stamped before it)."""
    delay_s: float = 0.0
    rate_bps: float = math.inf

    def __post_init__(self):
        if not (math.isfinite(self.delay_s) and self.delay_s >= 0):
            raise ValueError(f"Link.delay_s: must be a finite value >= 0 s, got {self.delay_s}")
        if not self.rate_bps > 0:
            raise ValueError(f"Link.rate_bps: must be > 0 bits/s, got {self.rate_bps}")

    def seconds(self, nbytes: int) -> float:
        return self.delay_s + 8.0 * nbytes / self.rate_bps

    def wait(self, nbytes: int) -> None:
        t = self.seconds(nbytes)
        if t > 0:
            time.sleep(t)


class DrafterError(RuntimeError):
    """A drafter gave up: one line saying which call failed and why (no gRPC traceback)."""


def prompt_stream(spec: ClientSpec, tokenizer=None, prompt_tokens: int = PROMPT_TOKENS) -> list[list[int]]:
    """The client's prompts in order: ``spec.prompts`` per domain, domain after domain, as ids of
    ``tokenizer`` (default: the draft's own, ``zoo.tokenizer_for(spec.draft)``)."""
    tokenizer = zoo.tokenizer_for(spec.draft) if tokenizer is None else tokenizer
    out = []
    for domain in spec.domains:
        for text in zoo.eval_prompts(domain, spec.prompts):
            out.append(tokenizer.encode(text)[-prompt_tokens:])
    if not out:
        raise ValueError(f"ClientSpec.domains {spec.domains!r} x prompts {spec.prompts} gives no prompt")
    return out


FAULTS = ("die", "malformed")


def parse_fault(fault: str | None) -> tuple[str, int]:
    """``"die@<round>"`` / ``"malformed@<round>"`` -> (kind, round); ``None`` -> ("", -1)."""
    if not fault:
        return "", -1
    kind, _, at = fault.partition("@")
    if kind not in FAULTS or not at.isdigit():
        raise ValueError(f"fault must be 'die@<round>' or 'malformed@<round>', got {fault!r}")
    return kind, int(at)


def stop_rule_for(spec: ClientSpec):
    """The drafting controller of ``spec.draft_rule`` = "predictor:<name>" (a committed predictor in
    data/predictor, WISP's stop before the first predicted rejection), or None."""
    if not spec.draft_rule.stops:
        return None
    from ... import paths
    from ...predictor import controller, persistence

    pred = persistence.load(paths.DATA / "predictor", spec.draft_rule.model)
    return controller.StopAtFirstPredictedRejection(pred, spec.gamma).stop_rule


def shifted_clock(offset: float):
    """This machine's monotonic clock shifted by ``offset`` s (picklable): a device whose clock started elsewhere."""
    return functools.partial(_shifted, float(offset))


def _shifted(offset: float) -> float:
    return time.monotonic() + offset


def _failed(what: str, client: int, address: str, err: grpc.RpcError) -> DrafterError:
    code = err.code()
    why = "no answer within the deadline" if code == grpc.StatusCode.DEADLINE_EXCEEDED else err.details()
    return DrafterError(f"drafter {client}: {what} to {address} failed: {code.name}: {why}")


BACKOFF = (0.1, 2.0)   # s: the first and the longest wait between retries (doubling)


def _backoff(k: int) -> float:
    return min(BACKOFF[1], BACKOFF[0] * 2 ** min(k, 16))


def _read_key(key_file, client: int, deadline: float) -> str:
    """The server's key from ``key_file``, waiting for the file until ``deadline`` (the server may still
    be starting)."""
    from pathlib import Path
    path = Path(key_file)
    k = 0
    while True:
        try:
            key = path.read_text().strip()
            if key:
                return key
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise DrafterError(f"drafter {client}: key file {path} not found or empty: start the server first "
                               f"(it writes its key there), or pass the file a server wrote with --key-file")
        time.sleep(_backoff(k))
        k += 1


def _hello(stub, address, client, spec, vocab, key, key_file, hello_timeout, clock):
    """Hello, retried with backoff while the id is taken (``ALREADY_EXISTS``: a killed drafter's Hello
    lasts until the server drops it) until ``hello_timeout`` s have passed. Returns (reply, offset,
    uncertainty): the server's clock minus this one's, estimated as NTP does from the Hello's round trip
    (0 when the estimate's interval holds 0: the same machine's clock)."""
    deadline = time.monotonic() + hello_timeout
    k = 0
    while True:
        if key_file is not None:
            key = _read_key(key_file, client, deadline)
        t0 = clock()
        try:
            reply = stub.Hello(pb.HelloRequest(client=client, draft_model=spec.draft, vocab_size=vocab,
                                               slo_class=float(spec.slo_class or 0), key=key or ""),
                               timeout=max(deadline - time.monotonic(), 0.1), wait_for_ready=True)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.ALREADY_EXISTS and time.monotonic() + _backoff(k) < deadline:
                time.sleep(_backoff(k))
                k += 1
                continue
            if err.code() == grpc.StatusCode.ALREADY_EXISTS:
                raise DrafterError(f"drafter {client}: Hello to {address} failed: ALREADY_EXISTS: {err.details()}; "
                                   f"still taken after retrying for {hello_timeout:g} s") from None
            raise _failed("Hello", client, address, err) from None
        t1 = clock()
        offset, uncertainty = reply.t_server - (t0 + t1) / 2, (t1 - t0) / 2
        return reply, (0.0 if abs(offset) <= uncertainty or not reply.t_server else offset), uncertainty


def client_main(address: str, client: int, spec: ClientSpec, *, fault: str | None = None,
                top_k: int | None = None, prompt_tokens: int = PROMPT_TOKENS, link: Link | None = None,
                rpc_timeout: float = 60.0, hello_timeout: float = 60.0, model=None, on_ready=None,
                greedy_rows: bool = False, key: str | None = None, key_file=None, clock=time.monotonic,
                on_round=None, prompts: list[list[int]] | None = None) -> dict:
    """A drafter: Hello, then every prompt of its stream round by round, then Bye; returns
    ``{"rows": per-round client timings, "outputs": generated ids per prompt}``.

    Every call has a deadline: Hello waits up to ``hello_timeout`` s for the server to come up (and for
    a taken id to come free, retrying with backoff), each Verify ``rpc_timeout`` s (not retried once
    answered: the server has committed the round); a failure raises ``DrafterError`` with one line.
    ``key`` (or ``key_file``, read when saying Hello): the server's key. ``clock``: this device's
    monotonic clock; requests carry it converted to the server's by the offset measured at Hello, so a
    drafter on a machine whose clock started elsewhere is served the same. A session the server evicted
    is opened again with the whole context; a new session refused while the server's memory is full is
    retried with backoff (both within ``rpc_timeout``). ``on_round(round)`` is called after each
    verified round. A failure or an interrupt (SIGINT) after Hello first
    says ``Bye(finished=False)``: the server ends the session at once, and a restarted drafter starts
    afresh (its tokens are a clean run's); the last Bye says ``finished=True``. ``on_ready()`` is called once the models are loaded.
    ``prompts``: token ids to generate from instead of ``spec``'s prompt stream.
    ``greedy_rows``: send the drafted rows (``Drafter.greedy_rows``) even when greedy.
    """
    threads(1)
    kind, at = parse_fault(fault)
    link = link or Link()
    draft = zoo.load_model(spec.draft) if model is None else model
    vocab = int(draft.config.vocab_size)
    if prompts is None:   # the draft's tokenizer; all loading before Hello
        prompts = prompt_stream(spec, prompt_tokens=prompt_tokens)
    stop_rule = stop_rule_for(spec)
    if on_ready is not None:
        on_ready()
    rows, outputs = [], []
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.VerifierStub(channel)
        hello, offset, _ = _hello(stub, address, client, spec, vocab, key, key_file, hello_timeout, clock)
        try:
            longest = max(map(len, prompts)) + spec.max_new_tokens
            if hello.max_positions and longest > hello.max_positions:
                raise DrafterError(f"drafter {client}: --tokens {spec.max_new_tokens} with a {longest - spec.max_new_tokens}"
                                   f"-token prompt needs {longest} positions, the server's target "
                                   f"{hello.target_model} has {hello.max_positions}")
            _generate(stub, hello, address, client, spec, draft, vocab, prompts, stop_rule, kind, at, top_k, link,
                      rpc_timeout, greedy_rows, rows, outputs, clock=lambda: clock() + offset, on_round=on_round)
        except BaseException:   # interrupted or failed: end the session now, so that the server frees it and
            try:                # a restarted drafter can say Hello at once (best effort, short deadline)
                stub.Bye(pb.ByeRequest(client=client, token=hello.token, finished=False), timeout=2.0)
            except grpc.RpcError:
                pass
            raise
        try:
            stub.Bye(pb.ByeRequest(client=client, token=hello.token, finished=True), timeout=10.0)
        except grpc.RpcError as err:  # the tokens are ours already; say so and go on
            rows.append(dict(client=client, round=max((r["round"] for r in rows), default=-1) + 1, event=f"error: Bye failed: {err.code().name}"))
    return dict(rows=rows, outputs=outputs)


def _verify(stub, msg, d, req, address, client, rnd, rpc_timeout, clock, link, sessions):
    """One Verify of round ``rnd``: an evicted session is opened again with the whole context, a new
    session refused while the server's memory is full is retried with backoff, both until
    ``rpc_timeout`` s have passed; returns (reply, request as sent)."""
    deadline = time.monotonic() + rpc_timeout
    k = 0
    while True:
        msg.t_sent = clock()
        link.wait(msg.ByteSize())
        try:
            return stub.Verify(msg, timeout=max(deadline - time.monotonic(), 0.1)), req
        except grpc.RpcError as err:
            retry = err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
            if retry and "was evicted" in (err.details() or ""):
                sessions[0] += 1
                req = d.reopen(f"{d.session.split('~')[0]}~{sessions[0]}")
                del msg.new_tokens[:]
                msg.new_tokens.extend(req.new_tokens)
                msg.session = req.session
                continue
            if retry and "retry" in (err.details() or ""):
                time.sleep(min(_backoff(k), max(deadline - time.monotonic(), 0.0)))
                k += 1
                continue
            raise _failed(f"Verify of round {rnd}", client, address, err) from None


def _generate(stub, hello, address, client, spec, draft, vocab, prompts, stop_rule, kind, at, top_k, link,
              rpc_timeout, greedy_rows, rows, outputs, clock=time.monotonic, on_round=None) -> None:
    """Every prompt of the stream, round by round (``client_main``'s loop); appends to rows / outputs.
    ``clock``: the server's clock as this drafter estimates it."""
    s_next = hello.draft_length if spec.draft_rule == "server" else spec.gamma
    s_cap = hello.max_draft or s_next
    rnd = 0
    sessions = [0]   # sessions opened again after an eviction
    proc_mark = time.process_time()   # the process's CPU over all its threads, at the end of the last round
    for k, prompt in enumerate(prompts):
        d = Drafter(draft, prompt, spec.max_new_tokens, f"c{client}-p{k}", spec.temperature, top_k,
                    seed=spec.seed * 100_003 + client * 1009 + k, stop_rule=stop_rule, greedy_rows=greedy_rows)
        while not d.done:
            if kind == "die" and rnd == at:
                os._exit(3)  # a drafter that dies without a word
            cpu0 = time.thread_time()
            req, t_draft = d.propose(min(s_next, s_cap))
            t_draft_cpu = time.thread_time() - cpu0   # the drafter's CPU time (t_draft: its wall time)
            msg = request_to_wire(req, client=client, round=rnd, token=hello.token, top_k=top_k, vocab=vocab,
                                  slo_class=float(spec.slo_class or 0), t_draft=t_draft,
                                  alpha=float(spec.alpha or 0.0))
            if kind == "malformed" and rnd == at:
                bad = pb.VerifyRequest()
                bad.CopyFrom(msg)
                bad.draft_ids.append(vocab + 7)
                try:
                    stub.Verify(bad, timeout=rpc_timeout)
                    rows.append(dict(client=client, round=rnd, event="error: malformed request accepted"))
                except grpc.RpcError as err:
                    rows.append(dict(client=client, round=rnd,
                                     event=f"error: {err.code().name}: {err.details()}"))
                kind = ""
            t_round0 = clock() - t_draft
            reply, req = _verify(stub, msg, d, req, address, client, rnd, rpc_timeout, clock, link, sessions)
            link.wait(reply.ByteSize())
            t_recv = clock()
            committed = d.commit(result_from_wire(reply))
            # t_client_cpu: the whole drafter process's CPU (every thread: drafting, gRPC, reply handling) since the
            # last round ended
            proc_now = time.process_time()
            round_timings = dict(t_round=t_recv - t_round0,
                                 t_send=t_recv - reply.t_reply, t_draft_cpu=t_draft_cpu,
                                 t_client_cpu=proc_now - proc_mark)
            proc_mark = proc_now
            rows.append(dict(client=client, round=rnd, **round_timings, tokens_committed=len(committed),
                             session=req.session, event=""))
            if spec.draft_rule == "server":
                s_next = reply.next_draft_length
            if on_round is not None:
                on_round(rnd)
            rnd += 1
        outputs.append(list(d.output))
