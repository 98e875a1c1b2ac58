"""The twin's outputs for fixed seeds are pinned: a speed-up of the twin must leave every log byte for
byte as it was (hashes of the log CSVs and of WISP sweep rows recorded with the SimPy implementation,
before the hot path and the event loop were rewritten). The li2026 logs were pinned again when the
true verification time moved onto the nanosecond grid (``serving.timegrid``): their last
digits changed, their sweep rows did not; and once more when a round that WISP's stop rule ended was
charged the draft pass whose logits the rule judged (WISP, FCFS and EDF-only run the rule's
devices, SLED's fixed window did not change)."""
import hashlib

import pytest

from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator, RandomS
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.analysis.capacity import Curve
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.interfaces import Times
from specedge.serving.sim.twin import IIDAcceptance, TraceAcceptance, simulate
from specedge.serving.workload import ClientSpec, Workload
from specedge.experiments.li2026 import serving_runs as li

GOLDEN = {
    "sync_fixed": ("0621b0189fe46c8c", 3200),
    "sync_goodspeed": ("87dd529e429af34c", 3200),
    "sync_random": ("a65f9d547ab9f6d2", 3200),
    "sync_stream": ("1073039e04956af2", 2896),
    "fcfs_iid": ("5b1ee48f3dea7d92", 893),
    "li_WISP": ("96334b03d4bf1fe5", 7675),
    "li_row_WISP": ("09a8cab982e198cc", 0),
    "li_FCFS": ("87cda51d71637cef", 7737),
    "li_row_FCFS": ("32586e528ad3251b", 0),
    "li_SLED": ("5c3cd8f506ba069e", 2195),
    "li_row_SLED": ("db97752a67a2ebf1", 0),
    "li_EDF-only": ("25d8cd317a938ef4", 7656),
    "li_row_EDF-only": ("e88199827fe8289f", 0),
}


def _h(log):
    return hashlib.sha256(log.to_csv(index=False).encode()).hexdigest()[:16], len(log)


@pytest.fixture(scope="module")
def sync_setup():
    wl = Workload("target-m", tuple(ClientSpec(("draft-xs", "draft-s")[i % 2], ("code", "math"), 2, 150)
                                    for i in range(8)), capacity=20)
    times = Times([lambda s: 0.004 * s] * 8, AffineTokens(0.009, 6e-5), up=lambda c, s: 1e-4 * (c + 1) + 1e-5 * s,
                  down=lambda c: 2e-4)
    return wl, times, TraceAcceptance()


@pytest.mark.parametrize("name", ["fixed", "goodspeed", "random"])
def test_sync_rounds_logs_are_unchanged(sync_setup, name):
    wl, times, acc = sync_setup
    alloc = {"fixed": FixedS(20, 8), "goodspeed": GoodspeedAllocator(20, beta=0.5), "random": RandomS(20, seed=3)}[name]
    assert _h(simulate(wl, SyncRounds(), alloc, times, acc, rounds=400, seed=5)) == GOLDEN["sync_" + name]


def test_stream_and_fcfs_logs_are_unchanged(sync_setup):
    wl, times, acc = sync_setup
    assert _h(simulate(wl, SyncRounds(), FixedS(20, 8), times, acc, seed=1)) == GOLDEN["sync_stream"]
    log = simulate(wl, FCFS(max_batch=3), GoodspeedAllocator(20), times, IIDAcceptance(0.6), rounds=300, seed=2)
    assert _h(log) == GOLDEN["fcfs_iid"]


@pytest.mark.parametrize("system", ["WISP", "FCFS", "SLED", "EDF-only"])
def test_wisp_sweep_logs_and_rows_are_unchanged(system):
    p = li.SCENARIO.point(system, 24, None, seed=7, setting=li.SCENARIO.setting(horizon_s=30.0, warmup_s=5.0))
    assert _h(li.run_log(p)) == GOLDEN["li_" + system]
    row = hashlib.sha256(repr(sorted(li.run_point(p).items())).encode()).hexdigest()[:16]
    assert (row, 0) == GOLDEN["li_row_" + system]


def test_capacity_searches_share_points_through_the_cache(tmp_path, monkeypatch):
    """capacity_of with a point cache gives the same row as without, and a second search meeting the
    same (N, seed) points (the epsilon sensitivity next to Table 2) simulates none of them again."""
    st = li.SCENARIO.setting(horizon_s=8.0, warmup_s=2.0)
    plain = li.capacity_of(Curve("WISP", "Qwen3-32B", 8, 0.05, 1, 0, 12, st))
    calls = []
    run_point = li.run_point
    monkeypatch.setattr(li, "run_point", lambda p: calls.append(p.devices) or run_point(p))
    cached = li.capacity_of(Curve("WISP", "Qwen3-32B", 8, 0.05, 1, 0, 12, st, str(tmp_path)))
    assert cached == plain and calls
    n = len(calls)
    again = li.capacity_of(Curve("WISP", "Qwen3-32B", 8, 0.10, 1, 0, 12, st, str(tmp_path)))
    assert again["capacity"] >= plain["capacity"]
    evaluated = {int(e.split(":")[0]) for e in again["evaluated"].split()}
    assert len(calls) - n == len(evaluated - set(calls[:n]))       # only points not seen before are simulated
