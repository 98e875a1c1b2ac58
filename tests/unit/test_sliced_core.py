"""The drafters' core in time slices (``processes.SlicedCore``): its invariants against processor sharing
(``SharedCore``), the slice's source (the kernel's fair scheduler), the twin run on it, and the queueing delay's
mechanism rows of the attribution (``twin_attribution.queueing_mechanism``)."""
import numpy as np
import pandas as pd
import pytest

from specedge.serving.analysis import twin_attribution
from specedge.serving.interfaces import Times
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.sim import processes
from specedge.serving.sim.engine import EventLoop
from specedge.serving.sim.processes import SharedCore, SlicedCore, Simulation
from specedge.serving.sim.twin import PromptAcceptance, simulate
from specedge.serving.workload import ClientSpec, Workload
from test_twin_error_attribution import FRAME, _core_finishes as _finishes


def test_one_job_alone_runs_at_full_speed_over_many_slices():
    assert _finishes([1.0], [0.0], 0.25) == {0: pytest.approx(1.0)}
    assert _finishes([0.1], [2.0], 0.25) == {0: pytest.approx(2.1)}     # shorter than a slice


def test_two_equal_jobs_started_together_finish_a_slice_apart():
    """Processor sharing ends both at 2.0 together; slices of 0.25 end the first a slice earlier, the second the same."""
    assert _finishes([1.0, 1.0], [0.0, 0.0], None) == {0: pytest.approx(2.0), 1: pytest.approx(2.0)}
    assert _finishes([1.0, 1.0], [0.0, 0.0], 0.25) == {0: pytest.approx(1.75), 1: pytest.approx(2.0)}
    # work not a whole number of slices: the last slices are the remainders (0.15 each), in turn
    assert _finishes([0.9, 0.9], [0.0, 0.0], 0.25) == {0: pytest.approx(1.65), 1: pytest.approx(1.8)}


def test_ties_run_in_arrival_order():
    """Three equal jobs at once: round-robin in the order they were added, each a slice after the one before."""
    done = _finishes([0.5, 0.5, 0.5], [0.0, 0.0, 0.0], 0.25)
    assert [done[i] for i in range(3)] == [pytest.approx(1.0), pytest.approx(1.25), pytest.approx(1.5)]


def test_a_job_running_alone_keeps_its_slice_when_another_arrives():
    """The first runs alone from 0; the second arrives at 0.6, inside the first's third slice: the first runs to 0.75,
    the second 0.75-1.0, the first ends 1.0-1.25, the second alone to 2.0."""
    assert _finishes([1.0, 1.0], [0.0, 0.6], 0.25) == {0: pytest.approx(1.25), 1: pytest.approx(2.0)}


@pytest.mark.parametrize("core_slice", [None, 0.25, 0.01])
def test_work_is_conserved(core_slice):
    """A busy period ends at its start plus every job's work in it, whatever the discipline; an idle gap starts a new
    one; no job ends before its arrival plus its work; work 0 ends at once on an idle core."""
    works, starts = [1.0, 0.5, 0.25, 0.1, 0.0], [0.0, 0.2, 0.3, 5.0, 6.0]
    done = _finishes(works, starts, core_slice)
    assert max(done[i] for i in range(3)) == pytest.approx(1.75)
    assert done[3] == pytest.approx(5.1) and done[4] == pytest.approx(6.0)
    assert all(done[i] >= starts[i] + works[i] - 1e-12 for i in done)


def test_an_empty_core_and_a_small_slice():
    assert _finishes([], [], 0.25) == {}
    # slices far shorter than the work: every finish within a slice of processor sharing's
    works, starts = [0.3, 0.2, 0.1], [0.0, 0.05, 0.1]
    ps, rr = _finishes(works, starts, None), _finishes(works, starts, 1e-3)
    assert all(abs(ps[i] - rr[i]) <= 2e-3 for i in ps)


def test_the_slice_is_the_kernels_default_for_the_cpu_count():
    """EEVDF's base slice (0.75 ms normalised) x (1 + ilog2(min(CPUs, 8))): 1.5 ms on the real runs' 2-CPU host."""
    assert processes.KERNEL_BASE_SLICE_S == 0.75e-3
    assert processes.kernel_slice(1) == pytest.approx(0.75e-3)
    assert processes.kernel_slice(2) == pytest.approx(1.5e-3)
    assert processes.kernel_slice(3) == pytest.approx(1.5e-3)     # ilog2 floors
    assert processes.kernel_slice(4) == pytest.approx(2.25e-3)
    assert processes.kernel_slice(64) == pytest.approx(3.0e-3)    # the factor stops at 8 CPUs
    assert processes.DRAFTER_CORE_SLICE_S == pytest.approx(1.5e-3)
    with pytest.raises(ValueError, match="cpus"):
        processes.kernel_slice(0)
    with pytest.raises(ValueError, match="slice_s"):
        SlicedCore(EventLoop(), 0.0)


def test_the_twin_runs_its_drafters_on_the_core_its_times_name():
    """``Times.core_slice`` picks the discipline; the same responses come out either way, at other times."""
    assert type(Simulation(FixedS(4, 2), 2).core) is SharedCore
    assert type(Simulation(FixedS(4, 2), 2, 1.5e-3).core) is SlicedCore
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(3)), capacity=6)
    base = dict(draft=[lambda k: 0.01 * k] * 3, verify=lambda b: 0.005, shared_core=True)
    ps = simulate(wl, FCFS(), FixedS(6, 3), Times(**base), PromptAcceptance(FRAME), seed=1)
    rr = simulate(wl, FCFS(), FixedS(6, 3), Times(**base, core_slice=0.004), PromptAcceptance(FRAME), seed=1)
    assert rr["tokens"].sum() == ps["tokens"].sum() == 3 * 12
    # the first round: three drafters of 0.02 s start together; in slices they arrive one after another
    first = rr[rr["round"] == 0].sort_values("arrival")["arrival"].to_numpy()
    assert np.diff(first).min() > 0.003
    assert ps[ps["round"] == 0]["arrival"].nunique() == 1


def _log(arrivals, starts, tv):
    """A verified log: one request per arrival, each in the pass starting at ``starts[i]`` of ``tv[i]`` seconds."""
    b = {s: j for j, s in enumerate(dict.fromkeys(starts))}
    return pd.DataFrame(dict(event="", batch=[b[s] for s in starts], arrival=arrivals, start=starts, t_verify=tv,
                             t_queue=np.array(starts) - np.array(arrivals)))


def test_queueing_mechanism_splits_requests_by_whether_a_pass_was_running():
    """Pass 0 runs [0, 1); requests arriving at 0.3 and 0.9 wait for pass 1 at 1.1 (in a pass, one in its first half),
    the one at 3.0 finds the server idle and waits 0.1 s for pass 2; the first request waited 0."""
    log = _log([0.0, 0.3, 0.9, 3.0], [0.0, 1.1, 1.1, 3.1], [1.0, 1.0, 1.0, 0.5])
    m = twin_attribution.queueing_mechanism(log)
    assert m["in_pass_share"] == pytest.approx(0.5) and m["early_in_pass_share"] == pytest.approx(0.5)
    assert m["queue_in_pass_p50_s"] == pytest.approx(0.5)      # waits 0.8 and 0.2
    assert m["queue_idle_p50_s"] == pytest.approx(0.05)        # waits 0 and 0.1
    assert m["requests_per_pass"] == pytest.approx(4 / 3) and m["pass_p50_s"] == pytest.approx(1.0)
    three = twin_attribution.queueing_mechanism(_log([0.0, 0.5, 0.9], [0.0, 1.1, 1.1], [1.0, 1.0, 1.0]))
    assert three["in_pass_share"] == pytest.approx(2 / 3) and three["requests_per_pass"] == pytest.approx(1.5)
    assert three["early_in_pass_share"] == 0.0                 # 0.5 and 0.9 of a pass of 1.0: its second half
    with pytest.raises(ValueError, match="verified"):
        twin_attribution.queueing_mechanism(log.assign(event="dropped"))


def test_mechanism_rows_average_the_seeds_and_name_their_quantile():
    real = _log([0.0, 0.5, 0.9, 3.0], [0.0, 1.1, 1.1, 3.1], [1.0, 1.0, 1.0, 0.5])
    idle = _log([0.0, 2.0, 4.0], [0.0, 2.1, 4.1], [1.0, 1.0, 1.0])              # nobody arrives in a pass
    busy = _log([0.0, 0.25], [0.0, 1.0], [1.0, 1.0])                             # half in a pass
    rows = {r["metric"]: r for r in twin_attribution.mechanism_differences(real, [idle, busy])}
    assert set(rows) == set(twin_attribution.QUEUEING)
    assert rows["in_pass_share"]["twin"] == pytest.approx(0.25) and rows["in_pass_share"]["quantile"] == "mean"
    assert rows["in_pass_share"]["diff_pct"] == pytest.approx(-50.0)
    assert rows["pass_p50_s"]["quantile"] == "p50" and rows["requests_per_pass"]["twin"] == pytest.approx(1.0)
    assert rows["early_in_pass_share"]["twin"] == pytest.approx(1.0)   # idle has none in a pass; busy's at 0.25 of 1.0
