"""An edge drafter: its own draft model and prompt stream; drafts S tokens, sends, commits the reply.

``Drafter`` is the device side with no I/O (``propose`` -> a ``verifier.Request``, ``commit`` the
server's verdict), so the same object runs inside a gRPC client process (``client_main``) and in
process (tests). It follows ``specedge.decoding``'s loop exactly: the draft cache holds the committed
context plus the drafts, and is cropped to the accepted prefix after each verdict; the correction or
bonus token is sent to the server with the next round's drafts (it is the server's only unseen
committed token then).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import torch

from .. import sampling
from ..decoding import CausalLM
from .verifier import Request, Result


@dataclass
class Drafter:
    model: object                       # draft causal LM
    prompt: list[int]
    max_new_tokens: int
    session: str
    temperature: float = 0.0
    top_k: int | None = None
    seed: int = 0
    stop_rule: object = None            # WISP's controller: stop_rule(i, logits) -> True stops before position i
    output: list[int] = field(default_factory=list)
    rounds: int = 0

    def __post_init__(self):
        if not self.prompt:
            raise ValueError("prompt: at least one token id is needed")
        sampling.check_temperature(self.temperature)
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
        q = torch.stack(qs) if (qs and self.temperature > 0) else None
        req = Request(self.session, list(self._unseen), drafts, q, self.temperature)
        return req, time.perf_counter() - t0

    def commit(self, result: Result) -> list[int]:
        """Apply the server's verdict; returns the tokens committed this round."""
        n = int(result.accepted)
        if not self._pending:
            raise RuntimeError(f"session {self.session}: commit() without a proposed round")
        self._pending = False
        if not 0 <= n <= len(self._drafts):
            raise ValueError(f"accepted: {n} outside [0, {len(self._drafts)}]")
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
