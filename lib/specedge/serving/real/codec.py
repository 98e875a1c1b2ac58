"""The wire codec: ``verifier.Request`` / ``Result`` <-> ``wire.proto`` messages, validated on receipt.

Both sides import this module (the drafter never imports the server). ``request_from_wire`` checks
every field a policy or the verifier would otherwise trust, and raises ``ValueError`` naming the field:
the byte buffers (float32 / int32: a multiple of 4 bytes), the draft distribution (finite,
non-negative, each row summing to 1 within ``SUM_TOLERANCE``, dense or TK-SLT top-K, the drafted
token itself with probability > 0: the acceptance ratio min(1, p/q) of tran2025 eq (3) divides by
it), the temperature (``0 <= T <= MAX_TEMPERATURE``) and the draft length (``<= max_draft``).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from . import wire_pb2 as pb
from .verifier import Request, Result

SUM_TOLERANCE = 1e-3      # |sum_v q(v) - 1| per drafted row (float32 sums of 8k entries err ~1e-6)
MAX_TEMPERATURE = 100.0   # above this every distribution is uniform to float32 precision anyway


def _buffer(raw: bytes, dtype, field: str) -> np.ndarray:
    if len(raw) % 4:
        raise ValueError(f"{field}: {len(raw)} bytes, not a multiple of 4 ({np.dtype(dtype).name} values)")
    return np.frombuffer(raw, dtype=dtype)


def _check_rows(q: torch.Tensor, draft_ids: list[int], field: str) -> None:
    if not torch.isfinite(q).all():
        raise ValueError(f"{field}: non-finite probabilities (NaN or inf)")
    if (q < 0).any():
        raise ValueError(f"{field}: negative probabilities (min {float(q.min()):.3g})")
    sums = q.double().sum(-1)
    bad = (sums - 1).abs() > SUM_TOLERANCE
    if bad.any():
        j = int(bad.nonzero()[0, 0])
        raise ValueError(f"{field}: row {j} sums to {float(sums[j]):.6g}, expected 1 within {SUM_TOLERANCE:g}")
    chosen = q.gather(1, torch.tensor(draft_ids, dtype=torch.long)[:, None])[:, 0]
    if (chosen <= 0).any():
        j = int((chosen <= 0).nonzero()[0, 0])
        raise ValueError(f"{field}: row {j} gives its drafted token {draft_ids[j]} probability 0")


def decode_distribution(msg: pb.DraftDistribution, draft_ids: list[int], vocab: int) -> torch.Tensor | None:
    """The (S, V) draft distribution of a request: dense, or TK-SLT's top-K rows scattered back;
    validated (see the module docstring). ``None`` when nothing is drafted."""
    s = len(draft_ids)
    if s == 0:
        return None
    if msg.vocab_size != vocab:
        raise ValueError(f"draft.vocab_size: {msg.vocab_size}, the target's vocabulary has {vocab}")
    probs = _buffer(msg.probs, np.float32, "draft.probs")
    if msg.top_k == 0:
        if probs.size != s * vocab:
            raise ValueError(f"draft.probs: {probs.size} values, expected S x V = {s} x {vocab}")
        q = torch.from_numpy(probs.copy()).view(s, vocab)
    else:
        k = int(msg.top_k)
        if k > vocab:
            raise ValueError(f"draft.top_k: {k} exceeds the vocabulary ({vocab})")
        idx = _buffer(msg.indices, np.int32, "draft.indices")
        if probs.size != s * k or idx.size != s * k:
            raise ValueError(f"draft.indices/probs: expected S x K = {s} x {k} entries each, "
                             f"got {idx.size} and {probs.size}")
        if idx.min() < 0 or idx.max() >= vocab:
            raise ValueError(f"draft.indices: outside [0, {vocab})")
        rows = np.sort(idx.reshape(s, k), axis=1)
        if (rows[:, 1:] == rows[:, :-1]).any():
            raise ValueError("draft.indices: a token id repeats within a row")
        q = torch.zeros((s, vocab))
        q.scatter_(1, torch.from_numpy(idx.astype(np.int64)).view(s, k), torch.from_numpy(probs.copy()).view(s, k))
    _check_rows(q, draft_ids, "draft.probs")
    return q


def encode_distribution(q: torch.Tensor | None, top_k: int | None, vocab: int) -> pb.DraftDistribution:
    """``q`` (S, V) dense, or its ``top_k`` largest entries per row (TK-SLT); empty for ``None``."""
    if q is None:
        return pb.DraftDistribution()
    if not top_k:
        return pb.DraftDistribution(vocab_size=vocab, probs=q.float().numpy().tobytes())
    vals, idx = q.float().topk(top_k, dim=-1)
    return pb.DraftDistribution(vocab_size=vocab, top_k=top_k, probs=vals.numpy().tobytes(),
                                indices=idx.to(torch.int32).numpy().tobytes())


def request_to_wire(req: Request, *, client: int, round: int, token: str, top_k: int | None, vocab: int,
                    slo_class: float = 0.0, t_draft: float = 0.0, alpha: float = 0.0) -> pb.VerifyRequest:
    return pb.VerifyRequest(session=req.session, client=client, round=round, token=token,
                            new_tokens=req.new_tokens, draft_ids=req.draft_ids,
                            draft=encode_distribution(req.q, top_k, vocab), temperature=req.temperature,
                            slo_class=slo_class, t_draft=t_draft, alpha=alpha)


def request_from_wire(msg: pb.VerifyRequest, vocab: int, max_draft: int) -> Request:
    """The ``Request`` of a received message, every field checked (ValueError naming it)."""
    if not msg.session:
        raise ValueError("session: empty")
    t = float(msg.temperature)
    if not math.isfinite(t) or not 0 <= t <= MAX_TEMPERATURE:
        raise ValueError(f"temperature: must lie in [0, {MAX_TEMPERATURE:g}], got {t}")
    s = len(msg.draft_ids)
    if s > max_draft:
        raise ValueError(f"draft_ids: {s} drafted tokens, the server accepts at most {max_draft} per request")
    for name, ids in (("new_tokens", msg.new_tokens), ("draft_ids", msg.draft_ids)):
        if ids and max(ids) >= vocab:
            raise ValueError(f"{name}: ids {[i for i in ids if i >= vocab][:5]} outside the vocabulary [0, {vocab})")
    for name in ("slo_class", "t_draft", "t_sent"):
        v = float(getattr(msg, name))
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name}: must be a finite value >= 0, got {v}")
    if not (math.isfinite(msg.alpha) and 0 <= msg.alpha <= 1):
        raise ValueError(f"alpha: must lie in [0, 1], got {msg.alpha}")
    q = decode_distribution(msg.draft, list(msg.draft_ids), vocab) if t > 0 else None
    return Request(msg.session, list(msg.new_tokens), list(msg.draft_ids), q, t)


def result_from_wire(reply: pb.VerifyReply) -> Result:
    """The verdict a drafter commits (``Drafter.commit``)."""
    return Result(int(reply.accepted), int(reply.token), bool(reply.bonus), float(reply.accept_prob_sum))


PAYLOADS = ("dense", "topk", "ids")   # a request's draft rows: |V| float32 each, TK-SLT's top-K pairs, none


@lru_cache(maxsize=None)
def payload_bytes(payload: str, s: int, vocab: int, top_k: int) -> int:
    """Bytes of one request carrying ``s`` drafted tokens, as ``request_to_wire`` encodes it: ids only
    (T = 0's message), TK-SLT's top-K rows, or dense rows of the whole vocabulary."""
    if payload not in PAYLOADS:
        raise ValueError(f"payload: expected one of {PAYLOADS}, got {payload!r}")
    q = None if payload == "ids" or s == 0 else torch.full((s, vocab), 1.0 / vocab)
    req = Request("c0-p0", [vocab - 1], [vocab - 1] * s, q, 1.0 if q is not None else 0.0)
    msg = request_to_wire(req, client=0, round=0, token="t" * 32, top_k=top_k if payload == "topk" else None,
                          vocab=vocab, slo_class=8.0, t_draft=0.1, alpha=0.5)
    return int(msg.ByteSize())


def host_port(host: str, port: int) -> str:
    """``host:port`` for gRPC; an IPv6 literal is bracketed (``::1`` and ``[::1]`` both give ``[::1]:port``)."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
