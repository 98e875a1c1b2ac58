"""The drafters' core of measured speed: the drafting CPU's deviation from each client's line split into the core's
slowness, common to the drafters whose rounds begin in the same interval, and each round's residual
(``measured_times.core_slowness``, ``core_share``); the slowness drawn per interval of simulated time (``_Binned``) and
applied to every job added to the core then (``processes._Slowed``, ``interfaces.Times.core_speed``)."""
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from specedge.experiments.serving_validation import runs as sv
from specedge.serving.interfaces import Times
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.sim.processes import Simulation
from specedge.serving.sim.twin import PromptAcceptance, simulate
from specedge.serving.timemodels import measured_times
from specedge.serving.workload import ClientSpec, Workload
from test_twin_error_attribution import FRAME


def test_the_split_multiplies_back_to_the_measured_factor():
    """Rounds of two runs whose times overlap: bins are per run, each bin's value the mean of its rounds' log factors;
    a round's bin value times its residual is its factor."""
    began = np.array([0.01, 0.05, 0.12, 0.01, 0.02, 0.31])
    run = np.array([0, 0, 0, 1, 1, 1])
    logf = np.log([1.2, 1.4, 0.9, 0.5, 2.0, 1.1])
    bins, resid = measured_times.core_slowness(began, logf, run, bin_s=0.1)
    # bins: run 0 [0, 0.1) holds 1.2 and 1.4, [0.1, 0.2) holds 0.9; run 1 [0, 0.1) holds 0.5 and 2.0, [0.3, 0.4) 1.1
    assert sorted(bins) == pytest.approx(sorted([np.sqrt(1.2 * 1.4), 0.9, 1.0, 1.1]))
    assert resid[0] * np.sqrt(1.2 * 1.4) == pytest.approx(1.2)
    assert resid[3] == pytest.approx(0.5) and resid[4] == pytest.approx(2.0)       # geometric mean 1.0
    assert resid[2] == pytest.approx(1.0) and resid[5] == pytest.approx(1.0)       # alone in its bin
    # with one bin for everything the residuals are the factors over their overall geometric mean
    bins1, resid1 = measured_times.core_slowness(began, logf, np.zeros(6, int), bin_s=10.0)
    assert len(bins1) == 1 and bins1[0] * resid1 == pytest.approx(np.exp(logf))


def test_the_split_keeps_what_it_cannot_judge_apart():
    """A factor that is not finite (a line of zero) is no bin's and keeps no residual; nothing finite: one bin of 1."""
    began = np.array([0.0, 0.01, 0.02])
    logf = np.array([np.log(2.0), np.nan, -np.inf])
    bins, resid = measured_times.core_slowness(began, logf, np.zeros(3, int))
    assert list(bins) == pytest.approx([2.0]) and resid[0] == pytest.approx(1.0) and np.isnan(resid[1:]).all()
    bins, resid = measured_times.core_slowness(np.zeros(2), np.full(2, np.nan), np.zeros(2, int))
    assert list(bins) == [1.0] and len(resid) == 2
    bins, resid = measured_times.core_slowness(np.zeros(0), np.zeros(0), np.zeros(0, int))
    assert list(bins) == [1.0] and len(resid) == 0


def _model(factors_by_client, residuals_by_client):
    clients = tuple(measured_times.ClientTimes(0.0, 1e-3, np.ones(1), np.zeros(1), np.zeros(1), np.zeros(1),
                                               0.0, 1e-3, np.asarray(f, float), None, np.asarray(r, float))
                    for f, r in zip(factors_by_client, residuals_by_client))
    return measured_times.Drawn(clients, np.ones(1), np.zeros(1), np.zeros(1), (), np.ones(1))


def test_core_share_is_the_variance_the_core_carries():
    rng = np.random.default_rng(0)
    common = np.repeat(rng.normal(0, 0.3, 400), 2)                # two drafters a bin, the core's part
    own = rng.normal(0, 0.1, 800)
    f = np.exp(common + own)
    share = measured_times.core_share(_model([f[0::2], f[1::2]], [np.exp(own[0::2]), np.exp(own[1::2])]))
    assert share == pytest.approx(0.09 / 0.10, abs=0.03)
    # nothing common: the residuals are the factors
    assert measured_times.core_share(_model([f], [f])) == pytest.approx(0.0)
    # a single round, or factors that do not vary: no share to speak of
    assert np.isnan(measured_times.core_share(_model([[1.3]], [[1.0]])))
    assert np.isnan(measured_times.core_share(_model([[1.0, 1.0]], [[1.0, 1.0]])))


def test_the_slowness_is_one_draw_per_interval():
    b = measured_times._Binned(np.array([1.0, 2.0, 3.0]), 0.1, np.random.default_rng(1))
    first = b(0.01)
    assert b(0.099) == first and b(0.0) == first                  # one interval, one value
    values = [b(0.1 * i + 0.05) for i in range(200)]
    assert set(values) == {1.0, 2.0, 3.0}                         # drawn from the measured values, each interval anew
    assert values[0] == first
    again = measured_times._Binned(np.array([1.0, 2.0, 3.0]), 0.1, np.random.default_rng(1))
    assert [again(0.1 * i + 0.05) for i in range(200)] == values  # deterministic under its seed


def _finishes(works, starts, speed, core_slice=None, period=None):
    sim = Simulation(FixedS(16, max(len(works), 1)), len(works), core_slice, core_speed=speed, core_period=period)
    done = {}

    def job(i):
        yield float(starts[i])
        sim.core.add(gens[i], works[i])
        yield None
        done[i] = sim.loop.now

    gens = [job(i) for i in range(len(works))]
    for g in gens:
        sim.loop.process(g)
    sim.loop.run()
    return done


@pytest.mark.parametrize("core_slice", [None, 0.25])
def test_a_job_does_its_work_times_the_slowness_when_added(core_slice):
    """Processor sharing and slices alike: the slowness at a job's start scales its whole work."""
    assert _finishes([1.0, 1.0], [0.0, 0.0], lambda t: 1.0, core_slice) == {0: pytest.approx(2.0 if core_slice is None else 1.75),
                                                                          1: pytest.approx(2.0)}
    assert _finishes([1.0], [0.0], lambda t: 2.0, core_slice) == {0: pytest.approx(2.0)}
    # the second job starts at 3.0, where the core is twice as slow: 1.0 of work takes 2.0
    slow = lambda t: 1.0 if t < 2.0 else 2.0   # noqa: E731
    assert _finishes([1.0, 1.0], [0.0, 3.0], slow, core_slice) == {0: pytest.approx(1.0), 1: pytest.approx(5.0)}


def _twin(core_speed, seed=3):
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(3)), capacity=6)
    times = Times(draft=[lambda k: 0.004 * k] * 3, verify=lambda b: 0.005, shared_core=True, core_speed=core_speed)
    return simulate(wl, FCFS(), FixedS(6, 3), times, PromptAcceptance(FRAME), seed=seed)


def test_the_twin_on_a_core_of_unit_speed_is_the_twin_without_one():
    pd.testing.assert_frame_equal(_twin(lambda t: 1.0), _twin(None))
    slower = _twin(lambda t: 3.0)
    assert slower["t_round"].median() > 2.0 * _twin(None)["t_round"].median()
    assert slower["tokens"].sum() == 3 * 12                      # the same responses, later


@pytest.fixture(scope="module")
def runs():
    return sv.load_repeats()


def test_fitted_on_real_runs_the_split_is_the_measured_factors(runs):
    keys = [("tran2025", "GOODSPEED", 4, 1), ("tran2025", "GOODSPEED", 4, 2)]
    wl = sv.setup("tran2025").workload(4, "full", 0)
    m = measured_times.fit(runs, keys, lambda r, c: sv.draft_passes(r, wl.clients[c]), None)
    assert len(m.clients) == 4 and m.core_bin_s == measured_times.CORE_BIN_S
    assert list(m.verify_factors) == [1.0]                        # no verify model: no factors
    for c in m.clients:
        assert len(c.cpu_residuals) == len(c.cpu_factors)
        assert np.isfinite(c.cpu_residuals).all() and (c.cpu_residuals > 0).all()
    # each bin's residuals average to 0 in log, so all of them do
    r = np.concatenate([np.log(c.cpu_residuals) for c in m.clients])
    assert abs(np.mean(r)) < 1e-9 and np.std(r) > 0
    assert 0.0 < measured_times.core_share(m) < 1.0
    # a longer interval puts fewer values in the core: none shorter than the rounds' spread apart
    assert len(measured_times.fit(runs, keys, lambda r, c: sv.draft_passes(r, wl.clients[c]), None, bin_s=1.0).core) \
        < len(m.core)


def test_the_model_draws_residuals_and_the_core_only_on_request(runs):
    key = ("tran2025", "GOODSPEED", 4, 1)
    wl = sv.setup("tran2025").workload(4, "full", 0)
    m = measured_times.fit(runs, [key], lambda r, c: sv.draft_passes(r, wl.clients[c]), None)
    verify = lambda batch: 0.005   # noqa: E731
    assert measured_times.times(m, verify, 0, shared_core=True).core_speed is None
    assert measured_times.times(m, verify, 0, shared_core=False, core_speed=True).core_speed is None
    t = measured_times.times(m, verify, 0, shared_core=True, core_speed=True)
    assert t.core_speed is not None and t.core_speed(0.05) in set(m.core)
    # the drafting's own factor is drawn from the residuals (without the drafter's other CPU and gap, added to it)
    bare = replace(m, clients=tuple(replace(c, other_cpu=None, gaps=np.zeros(1)) for c in m.clients))
    c = m.clients[0]
    for common, source in ((True, c.cpu_residuals), (False, c.cpu_factors)):
        t = measured_times.times(bare, verify, 0, shared_core=True, core_speed=common)
        drawn = {round(t.draft[0](3) / (c.cpu_e0 + 3 * c.cpu_e1), 9) for _ in range(300)}
        assert len(drawn) > 10 and drawn <= {round(v, 9) for v in source}


def test_the_table_of_the_real_runs(runs):
    keys = [("tran2025", "GOODSPEED", 8, 1), ("li2026", "WISP", 2, 0)]
    t = sv.core_slowness(runs, keys)
    assert list(t.columns) == ["paper", "policy", "n_clients", "repeat", "rounds", "sd_log_factor", "core_share_pct",
                               "bin_s"]
    assert [tuple(r) for r in t[["paper", "policy", "n_clients", "repeat"]].itertuples(index=False)] == keys
    assert ((t.core_share_pct > 0) & (t.core_share_pct < 100)).all() and (t.rounds > 50).all()
    # the repeats' GOODSPEED-setting drafters at N = 8 move together: most of the variance is the core's
    assert t.core_share_pct.iloc[0] > 50


def test_busy_periods_join_the_draftings_that_overlap():
    """In order of their beginnings, per run: a drafting that begins before every earlier one has ended joins their
    period (one that begins as the last ends too), one that begins after them opens the next."""
    began = np.array([0.0, 1.0, 5.0, 2.0, 10.0, 10.5, 0.0, 4.0, 6.0])
    ended = np.array([3.0, 2.0, 6.0, 4.0, 11.0, 12.0, 1.0, 4.5, 7.0])
    run = np.array([0, 0, 0, 0, 0, 0, 1, 0, 1])
    # run 0: [0, 3], [1, 2], [2, 4] and [4, 4.5] (begins as [2, 4] ends) are one; [5, 6]; [10, 11] and [10.5, 12];
    # run 1: [0, 1] then [6, 7], numbered apart from run 0
    assert list(measured_times.busy_periods(began, ended, run)) == [0, 0, 1, 0, 2, 2, 0, 0, 1]
    # a long drafting holds the period open past the ones that began after it and ended before
    assert list(measured_times.busy_periods([0.0, 1.0, 3.0, 9.0], [8.0, 2.0, 4.0, 9.5], np.zeros(4, int))) == [0, 0, 0, 1]
    assert len(measured_times.busy_periods(np.zeros(0), np.zeros(0), np.zeros(0, int))) == 0


def test_the_split_by_busy_periods_multiplies_back_to_the_measured_factor():
    """``core_slowness`` with the draftings' ends: the mean is taken over each busy period instead of each interval."""
    began = np.array([0.00, 0.01, 0.30, 0.00])
    ended = np.array([0.02, 0.03, 0.31, 0.05])
    run = np.array([0, 0, 0, 1])
    logf = np.log([1.2, 1.4, 0.9, 2.0])
    periods, resid = measured_times.core_slowness(began, logf, run, ended=ended)
    assert sorted(periods) == pytest.approx(sorted([np.sqrt(1.2 * 1.4), 0.9, 2.0]))
    assert resid[0] * np.sqrt(1.2 * 1.4) == pytest.approx(1.2) and resid[1] * np.sqrt(1.2 * 1.4) == pytest.approx(1.4)
    assert resid[2] == pytest.approx(1.0) and resid[3] == pytest.approx(1.0)   # alone in their periods
    # the same rounds in 0.1 s intervals: [0, 0.1) of run 0 holds the first two, as their period does
    bins, _ = measured_times.core_slowness(began, logf, run, bin_s=0.1)
    assert sorted(bins) == pytest.approx(sorted(periods))
    # a drafting with no end is in no period
    _, resid = measured_times.core_slowness(began, logf, run, ended=np.array([0.02, np.nan, 0.31, 0.05]))
    assert np.isnan(resid[1]) and resid[0] == pytest.approx(1.0)


def test_the_slowness_is_one_draw_per_busy_period_of_the_core():
    """A job added to the idle core draws the slowness; one added while the core is busy does the same factor of its
    work; once the core has emptied, the next job draws anew."""
    # job 0 at 0 draws 2.0 (2 s of work alone until 1, then shared); job 1 joins at 1 with the same 2.0: both have
    # 1 and 2 s left at 1, shared: job 0 ends at 3, job 1 at 3 + 1 = 4; job 2 at 5 finds the core idle, draws 3.0
    values = iter([2.0, 3.0, 4.0])
    done = _finishes([1.0, 1.0, 1.0], [0.0, 1.0, 5.0], None, period=lambda: next(values))
    assert done == {0: pytest.approx(3.0), 1: pytest.approx(4.0), 2: pytest.approx(8.0)}
    with pytest.raises(ValueError, match="core_speed, core_period"):
        Simulation(FixedS(4, 1), 1, core_speed=lambda t: 1.0, core_period=lambda: 1.0)


@pytest.mark.parametrize("core_slice, wake_first, kind", [(None, False, "SharedCore"), (0.25, False, "SlicedCore"),
                                                            (0.25, True, "WakeFirstCore")])
def test_every_core_says_when_it_is_idle(core_slice, wake_first, kind):
    sim = Simulation(FixedS(4, 1), 1, core_slice, wake_first=wake_first)
    assert type(sim.core).__name__ == kind and sim.core.idle() is True

    def job():
        sim.core.add(g, 1.0)
        busy.append(sim.core.idle())
        yield None
        busy.append(sim.core.idle())
    busy = []
    g = job()
    sim.loop.process(g)
    sim.loop.run()
    assert busy == [False, True]


def test_the_model_draws_the_slowness_per_busy_period_only_on_request(runs):
    key = ("tran2025", "GOODSPEED", 4, 1)
    wl = sv.setup("tran2025").workload(4, "full", 0)
    m = measured_times.fit(runs, [key], lambda r, c: sv.draft_passes(r, wl.clients[c]), None)
    verify = lambda batch: 0.005   # noqa: E731
    # the periods of a synchronous run hold its batches' draftings: fewer of them than rounds, more than the 0.1 s bins
    rounds = sum(len(c.period_residuals) for c in m.clients)
    assert len(m.core) < len(m.periods) < rounds
    r = np.concatenate([np.log(c.period_residuals) for c in m.clients])
    assert abs(np.mean(r)) < 1e-9 and 0 < np.std(r) < np.std(np.concatenate([np.log(c.cpu_residuals) for c in m.clients]))
    assert measured_times.times(m, verify, 0, shared_core=True).core_period is None
    t = measured_times.times(m, verify, 0, shared_core=True, core_periods=True)
    assert t.core_speed is None and t.core_period() in set(m.periods)
    with pytest.raises(ValueError, match="core_speed, core_periods"):
        measured_times.times(m, verify, 0, shared_core=True, core_speed=True, core_periods=True)
    bare = replace(m, clients=tuple(replace(c, other_cpu=None, gaps=np.zeros(1)) for c in m.clients))
    c = m.clients[0]
    t = measured_times.times(bare, verify, 0, shared_core=True, core_periods=True)
    drawn = {round(t.draft[0](3) / (c.cpu_e0 + 3 * c.cpu_e1), 9) for _ in range(300)}
    assert len(drawn) > 10 and drawn <= {round(v, 9) for v in c.period_residuals}
