"""The replay twin (serving.sim.replay): a hand-built real log is reproduced exactly when the verify-time
model is exact, and a different allocation is handled as documented."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specedge.serving.log import dispatch_latency
from specedge.serving.sim import replay
from specedge.serving.timemodels import runtime
from specedge.serving.timemodels.estimator import Estimator, features
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.workload import ClientSpec, Workload

C0, C_TOK = 0.010, 0.002           # s per pass, s per verified token
DRAFT = (0.005, 0.008)             # s per round of client 0, 1 (S = 2)
UP, SEND, GAP, POST = 0.001, 0.002, 0.0005, 0.0003   # uplink, reply wire, client's gap, server post-verify
ACCEPTED = [[2, 0, 1, 2, 1], [1, 2, 0, 0, 2]]


def hand_log(s: int = 2, post: float = POST) -> pd.DataFrame:
    """Synchronous rounds of two clients, every time in closed form: both start round r at T_r, client c
    arrives at T_r + DRAFT[c] + UP, the pass starts at the later arrival and takes C0 + C_TOK * 2 (S + 1),
    each reply leaves the server ``post`` after the pass and reaches its client SEND later."""
    rows, t, tv = [], 0.0, C0 + C_TOK * 2 * (s + 1)
    for r in range(len(ACCEPTED[0])):
        arrival = [t + DRAFT[c] + UP for c in (0, 1)]
        start = max(arrival)
        for c in (0, 1):
            rows.append(dict(system="real", policy="hand", batch=r, round=r, client=c, S=s, accepted=ACCEPTED[c][r],
                             tokens=ACCEPTED[c][r] + 1, t_draft=DRAFT[c], t_receive=abs(arrival[1] - arrival[0]),
                             t_queue=start - arrival[c], t_verify=tv, t_send=SEND,
                             t_round=start + tv + post + SEND - t, bytes_up=100, bytes_down=50, arrival=arrival[c],
                             start=start, end=start + tv + post, slo_class=np.nan, deadline=np.nan, event="", up=UP,
                             n_new=(48 if r == 0 else 1) + s, n_cached=0 if r == 0 else 48 + 3 * r,
                             accept_prob_sum=float(ACCEPTED[c][r])))
        t = start + tv + post + SEND + GAP
    return pd.DataFrame(rows).sort_values(["client", "round"]).reset_index(drop=True)


def workload(rule: str = "server") -> Workload:
    return Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 100, 2, rule) for _ in range(2)), capacity=4)


def test_replay_reproduces_a_hand_built_log_exactly():
    real = hand_log()
    out = replay.replay(real, workload(), SyncRounds(), FixedS(4, 2), AffineTokens(C0, C_TOK), label="hand")
    assert replay.mismatches(out) == (0, len(real))
    for col in ("S", "accepted", "tokens", "t_draft", "t_queue", "t_verify", "t_round", "arrival", "start",
                "end", "t_receive"):
        want = real[col].to_numpy(float) - (POST if col == "end" else 0.0)   # the replay's end: the pass's end
        np.testing.assert_allclose(out[col].to_numpy(float), want, rtol=0, atol=1e-12, err_msg=col)


def test_a_wrong_verify_model_shows_in_every_round():
    real = hand_log()
    out = replay.replay(real, workload(), SyncRounds(), FixedS(4, 2), AffineTokens(C0, 2 * C_TOK))
    assert (out["t_round"].to_numpy() > real["t_round"].to_numpy() + 0.005).all()


def test_another_allocation_keeps_the_real_outcomes_within_its_window():
    real = hand_log()
    out = replay.replay(real, workload(), SyncRounds(), FixedS(2, 2), AffineTokens(C0, C_TOK))  # S = 1, real S = 2
    assert replay.mismatches(out) == (len(real), len(real))
    assert (out["S"] == 1).all()
    np.testing.assert_array_equal(out["accepted"], np.minimum(real["accepted"], 1))
    np.testing.assert_array_equal(out["tokens"], real["tokens"] - (real["accepted"] - out["accepted"]))
    # one token fewer drafted: the client's per-token drafting time less
    np.testing.assert_allclose(out["t_draft"], real["t_draft"] / 2, atol=1e-12)
    fixed = replay.replay(real, workload("fixed"), SyncRounds(), FixedS(2, 2), AffineTokens(C0, C_TOK))
    assert replay.mismatches(fixed)[0] == 0   # a drafter with its own rule drafts its real S


def test_fcfs_replay_queues_a_late_arrival_behind_the_pass():
    real = hand_log()
    out = replay.replay(real, workload(), FCFS(), FixedS(4, 2), AffineTokens(C0, C_TOK))
    first = out[out["round"] == 1]   # round 0: the start barrier holds both; from round 1 client 0 goes alone
    assert first["batch"].nunique() == 2
    assert first.loc[first.client == 1, "t_queue"].iloc[0] > 0


def test_log_batches_fit_recovers_eq19_and_missing_columns_are_named():
    rng = np.random.default_rng(0)
    rows = []
    for b in range(40):
        for c in range(int(rng.integers(1, 4))):
            rows.append(dict(batch=b, client=c, n_new=int(rng.integers(1, 9)), n_cached=int(rng.integers(0, 200)),
                             event=""))
    log = pd.DataFrame(rows)
    truth = Estimator(a=2e-4, b_compute=1e-7, b_read=3e-6, c=4e-3)
    t = {b: truth.time(*features(list(zip(g.n_new, g.n_cached)))) for b, g in log.groupby("batch")}
    log["t_verify"] = log["batch"].map(t)
    est = runtime.fit_log_batches(runtime.log_batches(log))
    for k in ("a", "b_compute", "b_read", "c"):
        assert getattr(est, k) == pytest.approx(getattr(truth, k), rel=1e-6, abs=1e-12)
    with pytest.raises(ValueError, match="n_new"):
        replay.replay(log.drop(columns="n_new"), workload(), SyncRounds(), FixedS(4, 2), est)


def test_measured_passes_and_dispatch_latency():
    real = hand_log()
    measured = replay.MeasuredPasses(real, AffineTokens(1.0, 0.0))   # a fallback that would show
    out = replay.replay(real, workload(), SyncRounds(), FixedS(4, 2), measured)
    assert (measured.hits, measured.misses) == (5, 0)
    np.testing.assert_allclose(out["t_round"], real["t_round"], atol=1e-12)  # post-verify work: in `down`
    lat = dispatch_latency(real)
    np.testing.assert_allclose(lat, 0.0, atol=1e-12)   # the hand log starts each pass at the last arrival
    late = replay.replay(real, workload(), SyncRounds(), FixedS(4, 2), AffineTokens(C0, C_TOK), dispatch=0.001)
    np.testing.assert_allclose(late["t_queue"] - out["t_queue"], 0.001, atol=1e-12)
