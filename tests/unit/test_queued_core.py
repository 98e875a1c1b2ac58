"""The drafters' core sends each job the time it first ran (``SharedCore``: when added; ``SlicedCore``: when it first
got a slice), and the twin's queued drafter core (``Times.core_queued``): a client's post-reply work and next drafting
as one job whose round starts when it first runs."""
import pandas as pd
import pytest

from specedge.serving.interfaces import Times
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.sim.twin import PromptAcceptance, simulate
from specedge.serving.workload import ClientSpec, Workload
from test_twin_error_attribution import FRAME, _core_finishes


def _first_runs(works, starts, core_slice=None):
    """Per job (``works`` seconds arriving at ``starts``): (the time the core says it first ran, its finish)."""
    return _core_finishes(works, starts, core_slice, first=True)


def test_a_sliced_core_starts_tied_jobs_a_slice_apart_in_arrival_order():
    """Three jobs of 0.5 s at 0 in slices of 0.25: they first run at 0, 0.25, 0.5 and end at 1.0, 1.25, 1.5."""
    done = _first_runs([0.5, 0.5, 0.5], [0.0, 0.0, 0.0], 0.25)
    assert [done[i][0] for i in range(3)] == [pytest.approx(0.0), pytest.approx(0.25), pytest.approx(0.5)]
    assert [done[i][1] for i in range(3)] == [pytest.approx(1.0), pytest.approx(1.25), pytest.approx(1.5)]


def test_a_job_arriving_at_a_busy_core_first_runs_when_the_slice_ends():
    """The first runs alone from 0; the second arrives at 0.6, inside its third slice, and first runs at 0.75 (its
    first run kept though it runs again later: 0.75, not its last slice's 1.25)."""
    done = _first_runs([1.0, 1.0], [0.0, 0.6], 0.25)
    assert done[0] == (pytest.approx(0.0), pytest.approx(1.25))
    assert done[1] == (pytest.approx(0.75), pytest.approx(2.0))


def test_processor_sharing_runs_every_job_from_its_arrival():
    done = _first_runs([1.0, 1.0, 0.2], [0.0, 0.5, 0.7], None)
    assert [done[i][0] for i in range(3)] == [0.0, 0.5, 0.7]


@pytest.mark.parametrize("core_slice", [None, 0.25])
def test_an_empty_core_and_work_zero(core_slice):
    assert _first_runs([], [], core_slice) == {}
    # work 0 on an idle core first runs and ends at its arrival
    assert _first_runs([0.0], [2.0], core_slice) == {0: (pytest.approx(2.0), pytest.approx(2.0))}


def _twin(queued: bool, core_slice=0.004, post=0.003, clients=3):
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(clients)), capacity=2 * clients)
    times = Times(draft=[lambda k: 0.01 * k] * clients, verify=lambda b: 0.005, shared_core=True,
                  post=(lambda c: post), core_slice=core_slice, core_queued=queued)
    return simulate(wl, FCFS(), FixedS(2 * clients, clients), times, PromptAcceptance(FRAME), seed=1)


def test_the_first_rounds_start_when_each_drafter_first_gets_the_core():
    """The first rounds have no post-reply work before them: the same schedule either way, each round's time shorter
    by its drafter's wait for its first slice (0, 4, 8 ms in the order the drafters were added)."""
    a, b = _twin(False), _twin(True)
    r0a, r0b = a[a["round"] == 0].set_index("client"), b[b["round"] == 0].set_index("client")
    pd.testing.assert_series_equal(r0a["end"], r0b["end"])
    assert (r0a["t_round"] - r0b["t_round"]).sort_index().tolist() == pytest.approx([0.0, 0.004, 0.008])


@pytest.mark.parametrize("clients", [2, 3])
def test_a_queued_round_lies_inside_its_cycle_and_no_tokens_are_lost(clients):
    """A round starts after the previous reply is in (its reply in = its pass's end: no link here) and ends with its
    own: 0 < t_round <= the cycle; every client commits its tokens."""
    b = _twin(True, clients=clients)
    assert b["tokens"].sum() == clients * 12
    for _, g in b.sort_values("round").groupby("client"):
        cycle = g["end"].diff().dropna()
        assert (g["t_round"] > 0).all()
        assert (g["t_round"].iloc[1:].to_numpy() <= cycle.to_numpy() + 1e-12).all()
    # later rounds: the post-reply work (3 ms) now falls inside the queued round, the wait before it outside
    a = _twin(False, clients=clients)
    assert b["t_round"].mean() != pytest.approx(a["t_round"].mean())


def test_queued_on_processor_sharing_without_post_work_changes_nothing():
    """Processor sharing runs a job from its arrival and without post-reply work the job is the drafting alone: the
    same log, row for row."""
    pd.testing.assert_frame_equal(_twin(False, None, 0.0), _twin(True, None, 0.0))
