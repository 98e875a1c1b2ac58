"""The drafters' core as the kernel serves a task that wakes (``processes.WakeFirstCore``): a job added runs first,
alone, for a slice once the running jobs' slice ends, the rest processor-shared; and the twin run on it."""
import pytest

from specedge.serving.interfaces import Times
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.sim.engine import EventLoop
from specedge.serving.sim.processes import Simulation, WakeFirstCore
from specedge.serving.sim.twin import PromptAcceptance, simulate
from specedge.serving.workload import ClientSpec, Workload
from test_twin_error_attribution import FRAME


def _runs(works, starts, slice_s=0.25):
    """Each job's (the time it first ran, its finish) on a ``WakeFirstCore`` of ``slice_s``."""
    sim = Simulation(FixedS(16, max(len(works), 1)), len(works), slice_s, wake_first=True)
    assert isinstance(sim.core, WakeFirstCore)
    done = {}

    def job(i):
        yield float(starts[i])
        sim.core.add(gens[i], works[i])
        ran = yield None
        done[i] = (ran, sim.loop.now)

    gens = [job(i) for i in range(len(works))]
    for g in gens:
        sim.loop.process(g)
    sim.loop.run()
    return done


def _same(got: dict, want: dict) -> bool:
    return got.keys() == want.keys() and all(pytest.approx(want[k]) == got[k] for k in want)


def test_a_job_alone_runs_at_once_at_full_speed():
    assert _same(_runs([1.0], [0.0]), {0: (0.0, 1.0)})
    assert _same(_runs([0.1], [2.0]), {0: (2.0, 2.1)})


def test_jobs_woken_together_take_their_first_slices_in_turn_then_share():
    """Each runs a slice alone (0-0.25, 0.25-0.5), then both share the core: 0.75 left each, both end at 2.0."""
    assert _same(_runs([1.0, 1.0], [0.0, 0.0]), {0: (0.0, 2.0), 1: (0.25, 2.0)})
    # a short one woken meanwhile waits for the slice in progress, runs alone and ends inside its own slice
    assert _same(_runs([1.0, 1.0, 0.2], [0.0, 0.0, 0.1]), {2: (0.5, 0.7), 0: (0.0, 2.2), 1: (0.25, 2.2)})


def test_a_woken_job_waits_for_the_running_ones_slice_to_end():
    """Job 1 runs its first slice 0-0.25, then shares the core alone from 0.25; job 0 wakes at 0.6, inside that
    sharing's second slice (0.5-0.75): it runs 0.75-0.85, and job 1 ends its last 0.25 at 1.1."""
    assert _same(_runs([0.1, 1.0], [0.6, 0.0]), {0: (0.75, 0.85), 1: (0.0, 1.1)})


def test_a_woken_job_does_not_wait_on_a_core_that_empties():
    """Job 1 ends at 0.4, before the slice job 0 waits for (to 0.5): job 0 runs from 0.4."""
    assert _same(_runs([0.1, 0.4], [0.3, 0.0]), {1: (0.0, 0.4), 0: (0.4, 0.5)})


@pytest.mark.parametrize("slice_s", [0.25, 0.01, 3.0])
def test_work_is_conserved(slice_s):
    works, starts = [1.0, 0.5, 0.25, 0.1, 0.0], [0.0, 0.2, 0.3, 5.0, 6.0]
    done = _runs(works, starts, slice_s)
    assert max(done[i][1] for i in range(3)) == pytest.approx(1.75)
    assert done[3][1] == pytest.approx(5.1) and done[4][1] == pytest.approx(6.0)
    assert all(done[i][1] >= starts[i] + works[i] - 1e-12 and done[i][0] >= starts[i] - 1e-12 for i in done)


def test_the_slice_must_be_positive():
    with pytest.raises(ValueError, match="slice_s"):
        WakeFirstCore(EventLoop(), 0.0)


def test_the_twin_on_it_makes_the_same_responses():
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(3)), capacity=6)
    base = dict(draft=[lambda k: 0.004 * k] * 3, verify=lambda b: 0.005, shared_core=True, core_slice=1.5e-3,
                post=lambda c: 3e-4)
    shared = simulate(wl, FCFS(), FixedS(6, 3), Times(**{**base, "core_slice": None}), PromptAcceptance(FRAME), seed=2)
    woken = simulate(wl, FCFS(), FixedS(6, 3), Times(**base, wake_first=True, core_queued=True),
                     PromptAcceptance(FRAME), seed=2)
    assert woken["tokens"].sum() == shared["tokens"].sum() == 3 * 12
    assert not woken[["arrival", "t_round"]].equals(shared[["arrival", "t_round"]])


def test_the_real_drafters_short_rounds_run_at_their_own_speed():
    """The real runs' drafting wall time over its CPU by the number of passes (``drafting_stretch``): WISP's rounds of
    one pass (S = 0) take about their own CPU at N = 8, longer ones several times theirs: what processor sharing,
    which stretches every drafting alike, cannot give."""
    from specedge.experiments.serving_validation import runs as sv
    runs = sv.load_repeats()
    t = sv.drafting_stretch(runs, [("li2026", "WISP", 8, 1), ("tran2025", "Fixed-S", 1, 1)])
    assert list(t.columns) == ["paper", "policy", "n_clients", "repeat", "k_passes", "rounds", "cpu_ms", "wall_ms",
                               "stretch"]
    w = t[t.paper == "li2026"].set_index("k_passes")
    assert w.loc[1, "stretch"] < 1.3 and w.loc[1, "rounds"] > 100
    assert (w.loc[2:, "stretch"] > 2.5).all()
    alone = t[t.paper == "tran2025"]
    assert alone.stretch.between(0.9, 1.2).all()     # one drafter alone on its core: wall = CPU
