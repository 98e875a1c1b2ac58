"""The pinned real run (``run_real(pin=...)``): server on one core, drafters on the other, at
tiny scale; what it logs is what the replay needs, and the replay of it keeps every real S. No timing
assertions."""
from __future__ import annotations

import os

import numpy as np
import pytest

from specedge.serving.sim import replay
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.real.run import run_real
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.workload import ClientSpec, Workload

CORES = sorted(os.sched_getaffinity(0))


def test_pin_is_checked_before_anything_starts():
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 4),), capacity=2)
    with pytest.raises(ValueError, match="two different cores"):
        run_real(wl, SyncRounds(), FixedS(2, 1), pin=(CORES[0], CORES[0]))
    with pytest.raises(ValueError, match="two different cores"):
        run_real(wl, SyncRounds(), FixedS(2, 1), pin=(CORES[0], 10_000))


@pytest.mark.skipif(len(CORES) < 2, reason="pinning needs two cores")
def test_pinned_run_logs_what_the_replay_needs_and_restores_affinity():
    before = os.sched_getaffinity(0)
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 10), ClientSpec("draft-xs", ("sql",), 1, 8)),
                  capacity=6)
    log, outs = run_real(wl, SyncRounds(), FixedS(6, 2), label="pinned", pin=(CORES[0], CORES[1]))
    assert os.sched_getaffinity(0) == before
    assert (log["event"] == "").all() and len(outs) == 2
    for col in ("n_new", "n_cached", "t_verify_cpu", "t_draft_cpu", "t_client_cpu", "up"):
        assert np.isfinite(log[col].to_numpy(float)).all(), col
    # the drafter process's CPU over a round holds its drafting's CPU and more (gRPC, reply handling)
    assert (log["t_client_cpu"] > log["t_draft_cpu"]).all()
    assert (log["n_new"] >= log["S"]).all() and (log.groupby("client")["n_cached"].first() == 0).all()
    out = replay.replay(log, wl, SyncRounds(), FixedS(6, 2), replay.MeasuredPasses(log, AffineTokens(0.01, 0.0)))
    assert replay.mismatches(out) == (0, len(log))
    np.testing.assert_array_equal(out["accepted"].to_numpy(), log.sort_values(["client", "round"])["accepted"].to_numpy())
