"""The server's verifier: the target model, a prefix cache per session, one forward pass per batch.

``Verifier.verify(requests)`` verifies the drafts of several sessions — different draft lengths,
different cached lengths — in ONE batched forward pass, with ``specedge.sampling``'s acceptance rule
(``verify_greedy`` at T = 0, ``verify`` otherwise; the one rule of the repository).

Why not transformers' paged cache. ``transformers.generation.continuous_batching`` (its
``PagedAttentionCache`` and ``ContinuousBatchingManager``, transformers 5) schedules *generation*:
requests are prompts, the manager decides which tokens to feed and samples one new token per request
and step itself. A verifier needs the opposite: feed tokens that someone else chose (the committed
tokens and the drafts), read the logits at every drafted position, then keep only the accepted
prefix in the cache. The manager exposes none of these three (no API to append given tokens to a
request, logits are reduced to the last position per request inside the step, and there is no way to
roll a request's blocks back to a shorter length), so we keep one ``DynamicCache`` per session and
pack the sessions of a batch into ONE row for the pass, as vLLM's varlen kernels do: the sessions'
cached keys side by side, then all new tokens, a block-diagonal causal mask so that each token sees
only its own session, and each session's own position ids; then each session's kept slots are
scattered back. Packing rather than padding matters for WISP: a padded batch computes every request at
the longest one's length, which is not eq (19)'s additive cost (Fig 4 measured both ways showed it).

``cache=False`` recomputes every session's whole prefix at every verification (SLED's behaviour, the
WISP baseline): same pass, no cached slots.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from ... import sampling
from ...kv_cache_arg import cache_kw


@dataclass
class Request:
    """One session's verification: tokens the server has not seen, then the drafts."""
    session: str
    new_tokens: list[int]          # committed/prompt tokens not yet fed for the session
    draft_ids: list[int]           # S drafted tokens (may be empty)
    q: torch.Tensor | None = None  # (S, V) draft distributions (None at temperature 0)
    temperature: float = 0.0
    stream: str | None = None      # the name seeding the session's acceptance draws (None: ``session``)


@dataclass
class Result:
    accepted: int
    token: int
    bonus: bool
    accept_prob_sum: float         # sum_j min(1, p_j(s_j)/q_j(s_j)) over all S drafts (GOODSPEED eq 3)


@dataclass
class _Session:
    cache: DynamicCache | None = None
    tokens: list[int] = field(default_factory=list)   # committed tokens the server holds
    generator: torch.Generator | None = None
    nbytes: int = 0                                   # bytes of its cached keys and values


class Verifier:
    """Target model + per-session prefix caches. ``seed`` seeds each session's acceptance draws
    (a session's generator is ``sampling.make_generator(hash of seed and session)``)."""

    def __init__(self, model, cache: bool = True, seed: int = 0):
        self.model = model
        self.vocab_size = int(model.config.vocab_size)
        self.use_cache = bool(cache)
        self.seed = int(seed)
        self.sessions: dict[str, _Session] = {}

    # ---------------------------------------------------------------- sessions
    def cached_length(self, session: str) -> int:
        s = self.sessions.get(session)
        if s is None or s.cache is None:
            return 0
        return s.cache.get_seq_length()

    def cache_bytes(self, session: str) -> int:
        s = self.sessions.get(session)
        return 0 if s is None else s.nbytes

    def close(self, session: str) -> None:
        self.sessions.pop(session, None)

    def _session(self, name: str, stream: str | None = None) -> _Session:
        if name not in self.sessions:
            import zlib
            gen = sampling.make_generator(zlib.crc32(f"{self.seed}/{stream or name}".encode()))
            self.sessions[name] = _Session(generator=gen)
        return self.sessions[name]

    def check(self, req: Request) -> None:
        """Raise ValueError naming the field when a request cannot be verified."""
        v = self.vocab_size
        sess = self.sessions.get(req.session)
        if sess is None and not req.new_tokens:
            raise ValueError("new_tokens: a new session must send its prompt")
        for name, ids in (("new_tokens", req.new_tokens), ("draft_ids", req.draft_ids)):
            bad = [t for t in ids if not 0 <= int(t) < v]
            if bad:
                raise ValueError(f"{name}: ids {bad[:5]} outside the vocabulary [0, {v})")
        if not req.new_tokens and not req.draft_ids:
            raise ValueError("new_tokens: nothing to verify (no new tokens and no drafts)")
        if sess is not None and sess.tokens and not req.new_tokens:
            # every verdict commits a token the session has not fed (the correction or bonus token):
            # without it the drafts' logits would be read off positions that do not exist
            raise ValueError("new_tokens: empty on a session that holds tokens; a follow-up carries at least "
                             "the last verdict's token")
        if req.temperature < 0:
            raise ValueError(f"temperature: must be >= 0, got {req.temperature}")
        if req.temperature > 0 and req.draft_ids:
            if req.q is None or tuple(req.q.shape) != (len(req.draft_ids), v):
                got = None if req.q is None else tuple(req.q.shape)
                raise ValueError(f"draft: distribution of shape ({len(req.draft_ids)}, {v}) needed at "
                                 f"temperature > 0, got {got}")

    # ---------------------------------------------------------------- one batched pass
    @torch.inference_mode()
    def verify(self, requests: list[Request]) -> list[Result]:
        """Verify every request in ONE forward pass; sessions' caches keep their accepted prefix."""
        if not requests:
            return []
        if len({r.session for r in requests}) != len(requests):
            raise ValueError("session: one request per session per batch")
        for r in requests:
            self.check(r)
        fresh = [r.session for r in requests if r.session not in self.sessions]
        try:
            return self._verify(requests, [self._session(r.session, r.stream) for r in requests])
        except BaseException:
            for name in fresh:   # a failed pass leaves no trace: a session it created is gone again
                self.sessions.pop(name, None)
            raise

    def _verify(self, requests: list[Request], sessions: list[_Session]) -> list[Result]:
        # Inputs: (cached prefix or, without a cache, the whole committed prefix) + new + drafts.
        feeds, past = [], []
        for r, s in zip(requests, sessions):
            if self.use_cache:
                feeds.append(list(r.new_tokens) + list(r.draft_ids))
                past.append(s.cache.get_seq_length() if s.cache is not None else 0)
            else:
                feeds.append(s.tokens + list(r.new_tokens) + list(r.draft_ids))
                past.append(0)
        # One packed row (varlen, as vLLM's kernels): every session's cached keys side by side, then
        # every session's new tokens; a block mask lets each token see only its own session's cache and
        # its own earlier new tokens, and position ids continue each session's own positions.
        lens = [len(f) for f in feeds]
        kc, q = sum(past), sum(lens)
        koff = [sum(past[:i]) for i in range(len(past))]
        qoff = [sum(lens[:i]) for i in range(len(lens))]
        ids = torch.tensor([t for f in feeds for t in f], dtype=torch.long)[None]
        position_ids = torch.cat([torch.arange(l, l + n) for l, n in zip(past, lens)])[None]
        cache = DynamicCache(config=self.model.config)
        if kc:
            holders = [s for s, l in zip(sessions, past) if l]
            for layer in range(len(holders[0].cache.layers)):
                cache.update(torch.cat([h.cache.layers[layer].keys for h in holders], dim=2),
                             torch.cat([h.cache.layers[layer].values for h in holders], dim=2), layer)
        kwargs = dict(position_ids=position_ids)
        if len(requests) > 1:  # one sequence alone needs no more than the plain causal mask
            mask = torch.zeros((q, kc + q), dtype=torch.bool)
            for ko, l, qo, n in zip(koff, past, qoff, lens):
                mask[qo: qo + n, ko: ko + l] = True
                mask[qo: qo + n, kc + qo: kc + qo + n] = torch.ones((n, n), dtype=torch.bool).tril()
            kwargs["attention_mask"] = mask[None, None]
        out = self.model(input_ids=ids, **cache_kw(self.model, cache), use_cache=True, **kwargs)
        # Logits predicting each draft and the token after: the last S + 1 positions of each session.
        gmax = max(len(r.draft_ids) for r in requests)
        logits = torch.zeros((len(requests), gmax + 1, out.logits.shape[-1]))
        for i, (qo, n, r) in enumerate(zip(qoff, lens, requests)):
            g = len(r.draft_ids)
            logits[i, : g + 1] = out.logits[0, qo + n - g - 1: qo + n].float()
        # Each session's next state: its cached slots + new tokens + accepted drafts. Built for every
        # session first and assigned after, so a pass that raises changes no session (the server then
        # retries its requests one by one).
        gens = [_copy(s.generator) for s in sessions]
        results = self._accept(requests, gens, logits)
        states = []
        for i, (r, res) in enumerate(zip(requests, results)):
            keep = len(r.new_tokens) + res.accepted
            new, nbytes = None, 0
            if self.use_cache:
                ko, l, qo = koff[i], past[i], qoff[i]
                new = DynamicCache(config=self.model.config)
                for layer, data in enumerate(cache.layers):
                    k = torch.cat([data.keys[:, :, ko: ko + l], data.keys[:, :, kc + qo: kc + qo + keep]], dim=2)
                    v = torch.cat([data.values[:, :, ko: ko + l], data.values[:, :, kc + qo: kc + qo + keep]], dim=2)
                    new.update(k.clone(), v.clone(), layer)
                    nbytes += k.nbytes + v.nbytes
            states.append((list(r.new_tokens) + list(r.draft_ids[: res.accepted]), new, nbytes))
        for s, gen, (tokens, new, nbytes) in zip(sessions, gens, states):
            s.tokens.extend(tokens)
            s.generator.set_state(gen.get_state())
            if self.use_cache:
                s.cache, s.nbytes = new, nbytes
        return results

    def _accept(self, requests, generators, logits) -> list[Result]:
        """The acceptance rule per session, drawing from ``generators`` (copies of the sessions' own:
        they replace them once the pass commits)."""
        results = []
        for i, (r, gen) in enumerate(zip(requests, generators)):
            g = len(r.draft_ids)
            drafts = torch.tensor(r.draft_ids, dtype=torch.long)
            if r.temperature == 0:
                target = logits[i, : g + 1].argmax(-1)
                v = sampling.verify_greedy(drafts, target)
                ratio = (drafts == target[:g]).float()
            else:
                p = sampling.probs(logits[i, : g + 1], r.temperature)
                q = r.q.float() if g else torch.zeros((0, p.shape[-1]))
                v = sampling.verify(drafts, q, p, gen)
                if g:
                    idx = drafts[:, None]
                    ratio = torch.clamp(p[:g].gather(-1, idx)[:, 0] / q.gather(-1, idx)[:, 0], max=1.0)
                else:
                    ratio = torch.zeros(0)
            results.append(Result(int(v.accepted), int(v.token), bool(v.bonus), float(ratio.sum())))
        return results


def _copy(gen: torch.Generator) -> torch.Generator:
    out = torch.Generator(device=gen.device)
    out.set_state(gen.get_state())
    return out


def timed_verify(verifier: Verifier, requests: list[Request]) -> tuple[list[Result], float]:
    t0 = time.perf_counter()
    res = verifier.verify(requests)
    return res, time.perf_counter() - t0
