"""The twin's clock, term by term: a round's time is its drafting, its uplink, its wait in the queue,
the whole batch's verification and the reply — with every term non-zero and distinct, so leaving one
out (the uplink, or all but the first request of a batch) shows (both would go unnoticed
with a zero uplink and a per-batch constant verification time)."""
import numpy as np

from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.interfaces import Times
from specedge.serving.sim.twin import IIDAcceptance, simulate
from specedge.serving.workload import ClientSpec, Workload

UP, DOWN = 0.030, 0.007                   # s: distinct from every other term


def _run(clients: int = 3, verify=None, rounds: int = 60):
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 10_000) for _ in range(clients)),
                  capacity=4 * clients)
    times = Times([lambda s, k=k: 0.002 * (k + 1) * s for k in range(clients)],
                  verify or (lambda batch: 0.011 + 0.005 * len(batch)),   # s per pass + s per request
                  up=lambda c, s: UP + 0.001 * s, down=lambda c: DOWN)
    return simulate(wl, SyncRounds(), FixedS(4 * clients, clients), times, IIDAcceptance(0.6), rounds=rounds, seed=3)


def test_a_round_is_draft_plus_uplink_plus_queue_plus_verify_plus_reply():
    log = _run()
    up = UP + 0.001 * log["S"]
    np.testing.assert_allclose(log["t_round"], log["t_draft"] + up + log["t_queue"] + log["t_verify"] + log["t_send"],
                               rtol=0, atol=1e-12)
    assert (log["t_send"] == DOWN).all()
    # the request reaches the server after drafting and sending it (round 0 starts at t = 0)
    starts = log["arrival"] - log["t_draft"] - up
    assert (starts >= -1e-12).all()


def test_a_batch_costs_the_verification_of_all_its_requests():
    log = _run()
    size = log.groupby("batch")["client"].transform("size")
    assert (size == 3).all()                                   # SyncRounds: every client in every batch
    np.testing.assert_allclose(log["t_verify"], 0.011 + 0.005 * size, rtol=0, atol=1e-12)
    np.testing.assert_allclose(log["end"] - log["start"], log["t_verify"], rtol=0, atol=1e-12)


def test_the_verification_model_sees_the_whole_batch():
    calls, values = [], []

    def verify(batch):
        calls.append(sorted(p.client for p in batch))
        values.append(0.01 + 0.001 * sum(p.n_new for p in batch))
        return values[-1]

    log = _run(verify=verify, rounds=20)
    assert calls == [[0, 1, 2]] * 20                            # SyncRounds: every request of the batch
    np.testing.assert_allclose(log.groupby("batch")["t_verify"].first(), values, rtol=0, atol=1e-12)
