"""The wire codec (``serving.real.codec``): every field a received request carries is checked at its boundary, and
what is encoded decodes to the same distribution (dense and TK-SLT top-K)."""
import math

import numpy as np
import pytest
import torch

from specedge.serving.real import codec
from specedge.serving.real import wire_pb2 as pb
from specedge.serving.real.verifier import Request

V = 6


def _dense(rows) -> pb.DraftDistribution:
    return pb.DraftDistribution(vocab_size=V, probs=np.asarray(rows, np.float32).tobytes())


def _sparse(idx, probs, k) -> pb.DraftDistribution:
    return pb.DraftDistribution(vocab_size=V, top_k=k, probs=np.asarray(probs, np.float32).tobytes(),
                                indices=np.asarray(idx, np.int32).tobytes())


def _msg(**kw) -> pb.VerifyRequest:
    base = dict(session="s", client=0, round=0, token="t", new_tokens=[1, 2], draft_ids=[3], temperature=0.0)
    base.update(kw)
    return pb.VerifyRequest(**base)


# ------------------------------------------------------------------------------ distributions
def test_nothing_drafted_decodes_to_none_whatever_the_message():
    assert codec.decode_distribution(pb.DraftDistribution(vocab_size=99, probs=b"xyz"), [], V) is None


def test_a_dense_row_decodes_to_itself():
    row = [0.1, 0.2, 0.3, 0.4, 0.0, 0.0]
    q = codec.decode_distribution(_dense([row]), [3], V)
    assert q.shape == (1, V) and torch.allclose(q, torch.tensor([row]))


def test_top_k_rows_are_scattered_back_to_their_ids():
    # row 0: ids 5 and 0; row 1: ids 2 and 4 (order within a row is the sender's)
    q = codec.decode_distribution(_sparse([5, 0, 2, 4], [0.75, 0.25, 0.5, 0.5], 2), [5, 4], V)
    want = torch.zeros((2, V))
    want[0, 5], want[0, 0], want[1, 2], want[1, 4] = 0.75, 0.25, 0.5, 0.5
    assert torch.equal(q, want)


@pytest.mark.parametrize("top_k", [None, 0, 2])
def test_encode_then_decode_is_the_identity_on_rows_with_at_most_k_entries(top_k):
    q = torch.tensor([[0.0, 0.6, 0.0, 0.4, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.9, 0.1]])
    back = codec.decode_distribution(codec.encode_distribution(q, top_k, V), [1, 4], V)
    assert torch.equal(back, q)


def test_encode_of_no_distribution_is_an_empty_message():
    assert codec.encode_distribution(None, 4, V).ByteSize() == 0


@pytest.mark.parametrize("dist, ids, match", [
    (pb.DraftDistribution(vocab_size=V + 1, probs=b""), [0], "vocab_size: 7"),
    (pb.DraftDistribution(vocab_size=V, probs=b"\0" * 5), [0], "5 bytes, not a multiple of 4"),
    (_dense([[1, 0, 0, 0, 0, 0]] * 2), [0], "12 values, expected S x V = 1 x 6"),
    (_sparse([0] * 7, [1.0] * 7, 7), [0], "top_k: 7 exceeds"),
    (_sparse([0, 1], [0.5, 0.5, 0.0], 2), [0], "expected S x K = 1 x 2 entries each, got 2 and 3"),
    (_sparse([0, V], [0.5, 0.5], 2), [0], r"indices: outside \[0, 6\)"),
    (_sparse([-1, 0], [0.5, 0.5], 2), [0], r"indices: outside"),
    (_sparse([3, 3], [0.5, 0.5], 2), [3], "repeats within a row"),
    (_dense([[math.nan, 1, 0, 0, 0, 0]]), [1], "non-finite"),
    (_dense([[math.inf, 1, 0, 0, 0, 0]]), [1], "non-finite"),
    (_dense([[-0.5, 1.5, 0, 0, 0, 0]]), [1], "negative probabilities"),
    (_dense([[1, 0, 0, 0, 0, 0], [0.5, 0.4, 0, 0, 0, 0]]), [0, 0], "row 1 sums to 0.9"),
    (_dense([[0.5, 0.5, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0, 0]]), [0, 2], "row 1 gives its drafted token 2 probability 0"),
])
def test_a_malformed_distribution_is_refused_naming_the_field(dist, ids, match):
    with pytest.raises(ValueError, match=match):
        codec.decode_distribution(dist, ids, V)


def test_a_row_sum_off_by_half_the_tolerance_passes_and_by_twice_fails():
    # float32 rows summing to 1 + tol / 2 pass, 1 + 2 tol fail (the check is on the float64 sum)
    ok = [1.0, codec.SUM_TOLERANCE / 2, 0, 0, 0, 0]
    bad = [1.0, 2 * codec.SUM_TOLERANCE, 0, 0, 0, 0]
    assert codec.decode_distribution(_dense([ok]), [0], V) is not None
    with pytest.raises(ValueError, match="row 0 sums to 1.002"):
        codec.decode_distribution(_dense([bad]), [0], V)


# ------------------------------------------------------------------------------ requests
def test_request_round_trip_keeps_every_field():
    q = torch.tensor([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0]])
    req = Request("c0-p1", [1, 2], [3], q, 0.7)
    msg = codec.request_to_wire(req, client=4, round=9, token="tok", top_k=None, vocab=V, slo_class=8.0, t_draft=0.25,
                                alpha=0.5)
    assert (msg.client, msg.round, msg.token, msg.slo_class, msg.t_draft, msg.alpha) == (4, 9, "tok", 8.0, 0.25, 0.5)
    back = codec.request_from_wire(msg, V, max_draft=1)
    assert (back.session, back.new_tokens, back.draft_ids) == ("c0-p1", [1, 2], [3])
    assert back.temperature == pytest.approx(0.7, rel=1e-6) and torch.equal(back.q, q)


def test_greedy_requests_carry_no_distribution_even_when_one_is_sent():
    # at T = 0 the rows are never read, so a garbage one cannot fail the request
    assert codec.request_from_wire(_msg(draft=_dense([[9, 9, 9, 9, 9, 9]])), V, 4).q is None


@pytest.mark.parametrize("kw, match", [
    (dict(session=""), "session: empty"),
    (dict(temperature=-0.5), r"temperature: must lie in \[0, 100\]"),
    (dict(temperature=100.5), "temperature"),
    (dict(temperature=math.nan), "temperature"),
    (dict(temperature=math.inf), "temperature"),
    (dict(draft_ids=[1, 2, 3]), "draft_ids: 3 drafted tokens, the server accepts at most 2"),
    (dict(new_tokens=[1, V]), r"new_tokens: ids \[6\] outside"),
    (dict(draft_ids=[V + 3]), r"draft_ids: ids \[9\] outside"),
    (dict(slo_class=-1.0), "slo_class: must be a finite value >= 0"),
    (dict(t_draft=math.inf), "t_draft"),
    (dict(t_sent=-1e-9), "t_sent"),
    (dict(alpha=1.5), r"alpha: must lie in \[0, 1\]"),
    (dict(alpha=-0.25), "alpha"),
    (dict(alpha=math.nan), "alpha"),
])
def test_a_malformed_request_is_refused_naming_the_field(kw, match):
    with pytest.raises(ValueError, match=match):
        codec.request_from_wire(_msg(**kw), V, max_draft=2)


@pytest.mark.parametrize("kw", [dict(temperature=0.0), dict(temperature=100.0, draft_ids=[]), dict(draft_ids=[1, 2]),
                                dict(new_tokens=[V - 1]), dict(alpha=0.0), dict(alpha=1.0), dict(slo_class=0.0)])
def test_values_at_the_edges_of_their_ranges_are_taken(kw):
    assert codec.request_from_wire(_msg(**kw), V, max_draft=2).session == "s"


def test_result_from_wire():
    r = codec.result_from_wire(pb.VerifyReply(accepted=2, token=5, bonus=True, accept_prob_sum=1.5))
    assert (r.accepted, r.token, r.bonus, r.accept_prob_sum) == (2, 5, True, 1.5)


# ------------------------------------------------------------------------------ sizes, addresses
def test_payload_bytes_grow_by_a_row_per_drafted_token():
    v, k = 64, 4
    dense = [codec.payload_bytes("dense", s, v, k) for s in (1, 2)]
    topk = [codec.payload_bytes("topk", s, v, k) for s in (1, 2)]
    ids = [codec.payload_bytes("ids", s, v, k) for s in (1, 2)]
    # a dense row is V float32 (4 V bytes), a top-K row K float32 + K int32 (8 K); an id is one varint byte
    # (63 < 128); the field's length prefix may grow by a byte
    assert 4 * v + 1 <= dense[1] - dense[0] <= 4 * v + 2
    assert 8 * k + 1 <= topk[1] - topk[0] <= 8 * k + 2
    assert ids[1] - ids[0] == 1
    assert ids[0] < topk[0] < dense[0]
    assert codec.payload_bytes("dense", 0, v, k) == codec.payload_bytes("ids", 0, v, k)   # nothing drafted: no rows
    with pytest.raises(ValueError, match="payload: expected one of"):
        codec.payload_bytes("sparse", 1, v, k)


@pytest.mark.parametrize("host, want", [("127.0.0.1", "127.0.0.1:50"), (" localhost ", "localhost:50"),
                                        ("::1", "[::1]:50"), ("[::1]", "[::1]:50")])
def test_host_port_brackets_ipv6_literals_once(host, want):
    assert codec.host_port(host, 50) == want
