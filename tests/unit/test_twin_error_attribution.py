"""The stochastic twin's new models and its error attribution: acceptance by prompt and position, the drafters'
shared core (processor sharing), the replay with drawn outcomes, the held-out time models and the summary."""
import numpy as np
import pandas as pd
import pytest

from _stand_ins import ConstantRule
from specedge.serving.timemodels import measured_times
from specedge.serving.analysis import twin_attribution
from specedge.serving.interfaces import Times
from specedge.serving.sim.processes import Simulation
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.sim.twin import PromptAcceptance, TraceAcceptance, outcome, simulate
from specedge.serving.workload import ClientSpec, Workload


def _frame(rounds_by_prompt):
    """A traces frame of draft-xs on 'code' at T = 0: per prompt its traced rounds, each a list of 0/1 flags
    (the leading run accepted, then the first rejection; a window ends at its length)."""
    rows = []
    for p, rounds in rounds_by_prompt.items():
        for r, flags in enumerate(rounds):
            for i, ok in enumerate(flags):
                rows.append(dict(draft="draft-xs", target="target-m", domain="code", temperature=0.0, prompt=p,
                                 round=r, i=i + 1, q=0.5, p=0.5 if ok else 0.1, accepted=bool(ok), max_prob=0.5,
                                 entropy=1.0, margin=0.1, logit_std=1.0))
    return pd.DataFrame(rows)


# prompt 0: rounds accept 2, then 0, then all 3 (a bonus position); prompt 1: never accepts
FRAME = _frame({0: [[1, 1, 0], [0, 0, 0], [1, 1, 1]], 1: [[0, 0, 0], [0, 0, 0]]})


def test_prompt_sequence_is_the_traced_bits_in_order():
    acc = PromptAcceptance(FRAME)
    bits, ratios, rate = acc.sequence("draft-xs", "code", 0.0, 0)[:3]
    # round 0: positions 0-1 accepted, 2 rejected; round 1 starts at 3: rejected; round 2 at 4: 4-6 accepted, 7 undecided
    assert bits == [1, 1, 0, 0, 1, 1, 1, -1]
    assert rate == pytest.approx(5 / 7)
    assert len(ratios) == len(bits) and np.isnan(ratios[-1])
    assert acc.sequence("draft-xs", "code", 0.0, 1)[:3][0] == [0, 0]
    assert acc.sequence("draft-xs", "code", 0.0, 2)[0] == [1, 1, 0, 0, 1, 1, 1, -1]   # beyond the traced prompts: wraps


def test_draw_at_takes_the_leading_run_at_the_position():
    acc, rng = PromptAcceptance(FRAME), np.random.default_rng(0)
    assert acc.draw_at(rng, "draft-xs", "code", 0.0, 0, 0, 4)[0] == 2      # 1 1 0 ...
    assert acc.draw_at(rng, "draft-xs", "code", 0.0, 0, 1, 1)[0] == 1
    assert acc.draw_at(rng, "draft-xs", "code", 0.0, 0, 3, 4)[0] == 0
    assert acc.draw_at(rng, "draft-xs", "code", 0.0, 0, 4, 3)[0] == 3
    assert all(acc.draw_at(rng, "draft-xs", "code", 0.0, 1, m, 3)[0] == 0 for m in range(5))   # its own level, not the domain's
    n, aps = acc.draw_at(rng, "draft-xs", "code", 0.0, 0, 0, 3)
    assert n == 2 and aps == pytest.approx(1.0 + 1.0 + 0.2)               # traced min(1, p/q): 1, 1, then 0.1 / 0.5
    # an undecided position is drawn with the prompt's rate: over many draws about 5/7 accepted
    draws = [acc.draw_at(rng, "draft-xs", "code", 0.0, 0, 7, 1)[0] for _ in range(4000)]
    assert np.mean(draws) == pytest.approx(5 / 7, abs=0.03)


def test_controlled_round_takes_the_stop_rules_window_and_the_positions_bits():
    acc = PromptAcceptance(FRAME, stop_rules={"yes": ConstantRule(True), "no": ConstantRule(False)})
    rng = np.random.default_rng(0)
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 4, 3, "yes")[:2] == (3, 3)   # whole window; 1 1 1 at 4
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 0, 3, "yes")[:2] == (3, 2)
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 4, 3, "no")[:2] == (0, 0)    # stops before the first
    spec = ClientSpec("draft-xs", ("code",), 2, 10, gamma=3, draft_rule="predictor:yes")
    assert outcome(acc, rng, spec, "code", 0, 4, 3, left=3)[:2] == (2, 2)                # capped at the response's end
    with pytest.raises(KeyError, match="stop rule"):
        acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 0, 3, "mlp")


def test_outcome_caps_at_the_response_end_and_dispatches_on_the_rule():
    acc, rng = PromptAcceptance(FRAME), np.random.default_rng(0)
    spec = ClientSpec("draft-xs", ("code",), 2, 10)
    assert outcome(acc, rng, spec, "code", 0, 4, 6, left=3) == (2, 2, pytest.approx(2.0))
    dom = TraceAcceptance(FRAME)
    s, n, _ = outcome(dom, rng, spec, "code", 0, 0, 3, left=10)
    assert s == 3 and 0 <= n <= 3


def _core_finishes(works, starts, core_slice=None, first=False):
    """Each job's finish time on the drafters' core of a ``Simulation`` (``works`` seconds of work arriving at
    ``starts``): one ``SharedCore``, or with ``core_slice`` a ``SlicedCore``; ``first``: (the time the core says the
    job first ran, its finish)."""
    sim = Simulation(FixedS(16, max(len(works), 1)), len(works), core_slice)
    done = {}

    def job(i):
        yield float(starts[i])
        sim.core.add(gens[i], works[i])
        ran = yield None
        done[i] = (ran, sim.loop.now) if first else sim.loop.now

    gens = [job(i) for i in range(len(works))]
    for g in gens:
        sim.loop.process(g)
    sim.loop.run()
    return done


def test_shared_core_is_processor_sharing():
    """Two drafters of equal work starting together both finish at twice the work; alone, at the work."""
    run = _core_finishes
    assert run([1.0, 1.0], [0.0, 0.0]) == {0: pytest.approx(2.0), 1: pytest.approx(2.0)}
    assert run([1.0], [0.0]) == {0: pytest.approx(1.0)}
    # the second starts at 0.5: the first has 0.5 left, both share until it ends at 1.5; the second then alone
    assert run([1.0, 1.0], [0.0, 0.5]) == {0: pytest.approx(1.5), 1: pytest.approx(2.0)}


def test_twin_on_a_shared_core_is_slower_than_on_own_devices():
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(3)), capacity=6)
    acc = PromptAcceptance(FRAME)
    base = dict(draft=[lambda k: 0.01 * k] * 3, verify=lambda b: 0.005)
    own = simulate(wl, FCFS(), FixedS(6, 3), Times(**base), acc, seed=1)
    shared = simulate(wl, FCFS(), FixedS(6, 3), Times(**base, shared_core=True), acc, seed=1)
    assert shared["t_round"].median() > 1.5 * own["t_round"].median()
    assert shared["tokens"].sum() == own["tokens"].sum() == 3 * 12    # the same responses, later


def test_staggered_starts_hold_each_client_and_the_servers_queue_until_the_last_has_started():
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(3)), capacity=6)
    acc = PromptAcceptance(FRAME)
    base = dict(draft=[lambda k: 0.01 * k] * 3, verify=lambda b: 0.005, shared_core=True)
    at_once = simulate(wl, FCFS(), FixedS(6, 3), Times(**base), acc, seed=1)
    assert at_once.equals(simulate(wl, FCFS(), FixedS(6, 3), Times(**base, starts=None), acc, seed=1))
    late = simulate(wl, FCFS(), FixedS(6, 3), Times(**base, starts=(0.2, 0.0, 0.5)), acc, seed=1)
    first = late.sort_values("round").groupby("client").first()
    began = first["arrival"] - first["t_draft"]
    assert began[0] >= 0.2 - 1e-12 and began[1] < 0.1 and began[2] >= 0.5 - 1e-12   # each at its own start
    assert late["start"].min() >= 0.5 - 1e-12          # the queue opens once the last client has started
    assert first.loc[1, "t_queue"] > 0.4               # the first client's first request waits for it
    assert late["tokens"].sum() == at_once["tokens"].sum()   # the same responses
    for bad in ((0.1, 0.2), (0.0, -0.1, 0.0), (0.0, float("nan"), 0.0)):
        with pytest.raises(ValueError, match="starts"):
            simulate(wl, FCFS(), FixedS(6, 3), Times(**base, starts=bad), acc, seed=1)


def _log(rows):
    """A real log of verified rounds: (batch, client, arrival, up, start, t_verify, end) per row."""
    df = pd.DataFrame(rows, columns=["batch", "client", "arrival", "up", "start", "t_verify", "end"])
    return df.assign(event="")


def test_intake_delays_time_a_request_that_reached_the_server_in_a_pass_from_the_idle_requests_link():
    from specedge.serving.log import intake_delays

    # passes: batch 0 [1.000, 1.005) replies by 1.006; batch 1 [1.0062, 1.0112), replies by 1.012
    log = _log([(0, 0, 0.9990, 0.0010, 1.0000, 0.005, 1.0060),      # sent at 0.998, the server idle: link 1 ms
                (0, 1, 0.9995, 0.0010, 1.0000, 0.005, 1.0060),      # idle too
                (1, 2, 1.0040, 0.0030, 1.0062, 0.005, 1.0120),      # sent 1.001 (in pass 0), reached 1.002: waited 2 ms
                (1, 3, 1.0050, 0.0011, 1.0062, 0.005, 1.0120),      # sent 1.0039 (in pass 0), reached 1.0049 in it
                (2, 0, 1.0300, 0.0010, 1.0301, 0.004, 1.0345)])     # idle
    x = intake_delays(log)
    assert x.shape == (2, 2)
    assert x[0] == pytest.approx([0.002, 0.002]) and x[1] == pytest.approx([0.0049, 0.0001])
    # the link is the idle requests' median (1 ms), not every request's: with client 2's 3 ms counted it would move
    slow = log.assign(up=[0.0010, 0.0010, 0.0030, 0.0011, 0.0010])
    slow.loc[[0, 1, 4], "up"] = [0.0008, 0.0012, 0.0010]
    assert intake_delays(slow)[0] == pytest.approx([0.002, 0.002])
    assert intake_delays(log.assign(event="refused")).shape == (0, 2)             # no verified round
    # ties (the logs' times are in microseconds): a request reaching the server as a pass begins is in that pass
    tied = _log([(0, 0, 0.75, 0.25, 1.0, 0.5, 1.5),      # sent at 0.5, the server idle: link 0.25 s
                 (1, 2, 1.25, 0.25, 1.5, 0.5, 2.0),      # sent as pass 0 begins (in it, not idle), reached at 1.25
                 (2, 1, 2.0, 0.75, 2.5, 0.5, 3.0)])      # sent at 1.25, reached at 1.5 as pass 1 begins: waited 0.5 s
    np.testing.assert_array_equal(intake_delays(tied), [[0.25, 0.0], [0.0, 0.5]])
    assert intake_delays(log.drop(columns="up")).shape == (0, 2)


def test_a_pass_runs_from_its_start_to_before_its_end():
    from specedge.serving.log import running_pass

    start, stop = np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.5, 3.5])
    i, inside = running_pass(start, stop, np.array([0.5, 1.0, 1.2, 1.5, 2.0, 2.2, 3.9]))
    assert i.tolist() == [-1, 0, 0, 0, 1, 1, 2]             # at a pass's start: that pass
    assert inside.tolist() == [False, True, True, False, True, True, False]     # at its stop: out of it
    i, inside = running_pass(start, stop, np.array([0.5, 1.0, 1.2, 2.0, 2.2]), at_start=False)
    assert i.tolist() == [-1, -1, 0, 0, 1]                  # at a pass's start: not in it (the request opened it)
    assert inside.tolist() == [False, False, True, False, True]
    i, inside = running_pass(np.zeros(0), np.zeros(0), np.array([1.0]))
    assert i.tolist() == [-1] and inside.tolist() == [False]


def test_intake_draws_a_wait_of_requests_that_came_as_far_into_a_pass():
    records = np.array([[0.0002, 0.003], [0.0004, 0.003], [0.0021, -0.0002], [0.0023, 0.0001], [0.009, 0.0005]])
    rng = np.random.default_rng(0)
    take = measured_times.Intake(records, rng)
    assert {take(0.0001) for _ in range(50)} == {0.003}                    # the first 0.5 ms: its own waits
    assert {take(0.0022) for _ in range(50)} == {0.0, 0.0001}              # never below 0
    assert {take(0.0012) for _ in range(50)} == {0.003}                    # an empty interval: the nearest earlier one
    assert {take(0.05) for _ in range(50)} == {0.0005}                     # past the last interval: the latest's
    late = measured_times.Intake(np.array([[0.003, 0.001]]), rng)          # nothing early: the first interval with one
    assert late(0.0) == 0.001
    with pytest.raises(ValueError, match="no request reached the server during a pass"):
        measured_times.Intake(np.zeros((0, 2)), rng)


def test_a_request_reaching_the_server_during_a_pass_waits_for_its_intake_and_one_reaching_it_idle_does_not():
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(2)), capacity=6)
    acc = PromptAcceptance(FRAME)
    # client 1 drafts 2 ms longer than client 0: its request reaches the server 2 ms into client 0's 5 ms pass
    base = dict(draft=[lambda k: 0.010, lambda k: 0.012], verify=lambda b: 0.005)
    seen = []

    def intake(into):
        seen.append(into)
        return 0.004
    plain = simulate(wl, FCFS(), FixedS(2, 2), Times(**base), acc, seed=1)
    taken = simulate(wl, FCFS(), FixedS(2, 2), Times(**base, intake=intake), acc, seed=1)
    assert plain.equals(simulate(wl, FCFS(), FixedS(2, 2), Times(**base, intake=None), acc, seed=1))
    assert seen and all(0 <= t < 0.005 for t in seen)                   # asked only during a pass, with its time into it
    assert seen[0] == pytest.approx(0.002)
    r0, r1 = (taken[(taken["client"] == 1) & (taken["round"] == 0)].iloc[0],
              plain[(plain["client"] == 1) & (plain["round"] == 0)].iloc[0])
    assert r0["arrival"] == pytest.approx(r1["arrival"] + 0.004)       # taken in 4 ms after it reached the server
    assert r1["t_queue"] == pytest.approx(0.003) and r0["t_queue"] == pytest.approx(0.0)   # after its pass: no wait
    first = taken[(taken["client"] == 0) & (taken["round"] == 0)].iloc[0]
    assert first["arrival"] == pytest.approx(0.010)                     # the server idle: at once
    assert taken["tokens"].sum() == plain["tokens"].sum()               # the same responses


def _rounds_log(rows):
    """A real log of verified rounds: (batch, client, round, t_draft, up, arrival, start, t_verify, t_send) per row,
    its reply leaving as its pass ends."""
    df = pd.DataFrame(rows, columns=["batch", "client", "round", "t_draft", "up", "arrival", "start", "t_verify", "t_send"])
    return df.assign(end=df["start"] + df["t_verify"], S=2, accepted=1, tokens=2, n_new=3, n_cached=0, event="")


def test_wake_waits_pair_a_replys_way_and_the_wait_in_hand_with_the_others_busy_as_its_pass_ended():
    from specedge.serving.log import wake_waits

    # client 0 drafts [0, 10) ms, verified [11, 16), reply in at 17, drafts again from 19; client 1 drafts [0, 14),
    # verified [16, 21), reply in at 23, drafts again from 26: as pass 0 ends client 1 waits for the server (0 busy),
    # as pass 1 ends client 0 drafts (1 busy)
    log = _rounds_log([(0, 0, 0, 0.010, 0.001, 0.011, 0.011, 0.005, 0.001),
                       (1, 1, 0, 0.014, 0.001, 0.015, 0.016, 0.005, 0.002),
                       (2, 0, 1, 0.010, 0.001, 0.030, 0.030, 0.005, 0.001),
                       (3, 1, 1, 0.010, 0.001, 0.037, 0.037, 0.005, 0.001)])
    np.testing.assert_allclose(wake_waits(log), [[0, 0.001, 0.002], [1, 0.002, 0.003]], atol=1e-12)
    # ties: two requests of one pass each count the other busy from its end (taking its own reply in)
    tied = _rounds_log([(0, 0, 0, 0.010, 0.001, 0.011, 0.012, 0.005, 0.001),
                        (0, 1, 0, 0.010, 0.001, 0.011, 0.012, 0.005, 0.003),
                        (1, 0, 1, 0.010, 0.001, 0.031, 0.031, 0.005, 0.001),
                        (2, 1, 1, 0.010, 0.001, 0.040, 0.040, 0.005, 0.001)])
    np.testing.assert_allclose(wake_waits(tied)[:, 0], [1, 1])
    np.testing.assert_allclose(wake_waits(tied)[:, 1], [0.001, 0.003], atol=1e-12)
    assert wake_waits(log[log["round"] == 0]).shape == (0, 3)       # no round followed by another
    with pytest.raises(ValueError, match="missing columns"):
        wake_waits(log.drop(columns="t_send"))


def test_batch_order_puts_a_synchronous_batchs_requests_in_their_order_of_arrival():
    from specedge.serving.log import batch_order

    # batch 0: client 1 starts at 2 ms and arrives first (at 8), client 0 starts at 0 and arrives at 12; batch 1: both
    # arrive at 30 (a tie: the log's order kept), client 0 started at 20, client 1 at 24; batch 2 holds one request
    log = _rounds_log([(0, 0, 0, 0.011, 0.001, 0.012, 0.012, 0.005, 0.001),
                       (0, 1, 0, 0.005, 0.001, 0.008, 0.012, 0.005, 0.001),
                       (1, 0, 1, 0.009, 0.001, 0.030, 0.030, 0.005, 0.001),
                       (1, 1, 1, 0.005, 0.001, 0.030, 0.030, 0.005, 0.001),
                       (2, 0, 2, 0.005, 0.001, 0.050, 0.050, 0.005, 0.001)])
    np.testing.assert_allclose(batch_order(log), [[0, 0.002, 0.006], [1, 0.0, 0.012],
                                                  [0, 0.0, 0.010], [1, 0.004, 0.006]], atol=1e-12)
    np.testing.assert_allclose(batch_order(log[log["batch"] == 2]), [[0, 0.0, 0.006]], atol=1e-12)   # one client: full
    assert batch_order(log.iloc[:0]).shape == (0, 3)
    with pytest.raises(ValueError, match="missing columns"):
        batch_order(log.drop(columns="up"))


def test_reply_order_puts_a_synchronous_passs_replies_in_the_order_they_were_in_hand():
    from specedge.serving.log import reply_order

    # pass 0 runs [12, 17) ms: client 1's reply is in hand at 18, its next drafting begins at 21 and arrives at 34;
    # client 0's at 20, 22 and 33. Pass 1 is followed by no round of client 1, pass 2 holds client 0 alone: neither kept
    log = _rounds_log([(0, 0, 0, 0.010, 0.001, 0.011, 0.012, 0.005, 0.003),
                       (0, 1, 0, 0.010, 0.001, 0.012, 0.012, 0.005, 0.001),
                       (1, 0, 1, 0.010, 0.001, 0.033, 0.034, 0.005, 0.001),
                       (1, 1, 1, 0.012, 0.001, 0.034, 0.034, 0.005, 0.001),
                       (2, 0, 2, 0.005, 0.001, 0.050, 0.050, 0.005, 0.001)])
    np.testing.assert_allclose(reply_order(log), [[0, 0.001, 0.004, 0.017], [1, 0.003, 0.005, 0.016]], atol=1e-12)
    assert reply_order(log[log["client"] == 0]).shape == (2, 4)          # one client: each pass but its last
    with pytest.raises(ValueError, match="no verified rounds"):
        reply_order(log.iloc[:0])


def test_wake_draws_a_pair_of_rounds_with_as_many_others_busy():
    records = np.array([[0, 0.001, 0.002], [0, 0.003, 0.004], [2, 0.005, -0.001], [2, 0.007, 0.008]])
    rng = np.random.default_rng(0)
    wake = measured_times.Wake(records, rng)
    assert {wake(0) for _ in range(60)} == {(0.001, 0.002), (0.003, 0.004)}   # its own bin, the pairs kept together
    assert {wake(1) for _ in range(60)} == {(0.001, 0.002), (0.003, 0.004)}   # none with 1 busy: the nearest fewer
    assert {wake(9) for _ in range(60)} == {(0.005, 0.0), (0.007, 0.008)}     # past the most busy; never below 0
    crowded = measured_times.Wake(np.array([[3, 0.004, 0.005]]), rng)        # none fewer: the nearest more
    assert crowded(0) == (0.004, 0.005)
    with pytest.raises(ValueError, match="no round of the fitted runs"):
        measured_times.Wake(np.zeros((0, 3)), rng)
    # the engine's draws: the way less the CPU charged once the reply is in (here 1 ms: ``split`` of the alone runs)
    from dataclasses import replace
    alone = _model(np.array([0.002]))
    for other, way in ((np.array([0.004]), 0.002), (np.zeros(0), 0.003)):
        model = replace(_model(other), wake=np.array([[0, 0.003, 0.004]]))
        t = measured_times.times(model, lambda b: 0.004, shared_core=True, alone=alone, wake=True)
        assert t.wake(0) == (pytest.approx(way), 0.004) and t.wake(5) == t.wake(0)
        assert measured_times.times(model, lambda b: 0.004, shared_core=True, alone=alone).wake is None
    assert measured_times.times(model, lambda b: 0.004, wake=True).wake is None    # only on the drafters' shared core


def test_a_reply_takes_its_drawn_way_and_the_next_drafting_waits_in_hand_with_the_post_work_meanwhile():
    one = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed"),), capacity=2)
    acc = PromptAcceptance(FRAME)
    seen = []

    def wake(busy):
        seen.append(busy)
        return 0.003, 0.004

    base = dict(draft=[lambda k: 0.010], verify=lambda b: 0.005, shared_core=True)
    plain = simulate(one, FCFS(), FixedS(2, 1), Times(**base), acc, seed=1)
    assert plain.equals(simulate(one, FCFS(), FixedS(2, 1), Times(**base, wake=None), acc, seed=1))
    woken = simulate(one, FCFS(), FixedS(2, 1), Times(**base, wake=wake), acc, seed=1)
    assert set(seen) == {0}                                                  # alone: nobody else busy
    np.testing.assert_allclose(plain["t_round"], 0.015)                     # drafting 10 ms + its pass 5 ms
    np.testing.assert_allclose(woken["t_round"], 0.018)                     # + the reply's way
    np.testing.assert_allclose(np.diff(woken["arrival"]), 0.022)            # + the wait in hand, outside the round
    # the reply's work runs on the core during the wait in hand: the drafting starts at the later of the two
    short = simulate(one, FCFS(), FixedS(2, 1), Times(**base, wake=wake, post=lambda c: 0.002), acc, seed=1)
    np.testing.assert_allclose(np.diff(short["arrival"]), 0.022)
    long = simulate(one, FCFS(), FixedS(2, 1), Times(**base, wake=wake, post=lambda c: 0.006), acc, seed=1)
    np.testing.assert_allclose(np.diff(long["arrival"]), 0.024)
    assert woken["tokens"].sum() == plain["tokens"].sum()                   # the same responses
    # two clients verified together: each counts the other busy taking its own reply in
    two = Workload("target-m", one.clients * 2, capacity=4)
    seen.clear()
    both = simulate(two, FCFS(), FixedS(4, 2), Times(**{**base, "draft": [lambda k: 0.010] * 2}, wake=wake), acc, seed=1)
    assert both.groupby("batch")["client"].size().tolist() == [2] * 5 + [1]
    assert seen == [1] * 10 + [0]                       # the last pass's: the other's stream had ended
    np.testing.assert_allclose(sorted(set(both["arrival"].round(9)))[:2], [0.020, 0.052])   # 20 + 5 + 3 + 4 + 20 ms
    with pytest.raises(ValueError, match="shared core"):
        simulate(one, FCFS(), FixedS(2, 1), Times(draft=[lambda k: 0.010], verify=lambda b: 0.005, wake=wake), acc, seed=1)
    with pytest.raises(ValueError, match="core_queued"):      # one job there: no wait in hand to place
        simulate(one, FCFS(), FixedS(2, 1), Times(**base, wake=wake, core_queued=True), acc, seed=1)


def test_the_wake_up_read_on_the_drafters_clocks_moves_their_rounds_not_their_work():
    one = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed"),), capacity=2)
    acc = PromptAcceptance(FRAME)
    base = dict(draft=[lambda k: 0.010], verify=lambda b: 0.005, shared_core=True)
    plain = simulate(one, FCFS(), FixedS(2, 1), Times(**base), acc, seed=1)
    wake = lambda busy: (0.003, 0.004)                                      # noqa: E731
    stamped = simulate(one, FCFS(), FixedS(2, 1), Times(**base, wake=wake, wake_stamps=True), acc, seed=1)
    rest = [c for c in plain.columns if c != "t_round"]
    assert stamped[rest].equals(plain[rest])                                 # the same work, requests and passes
    np.testing.assert_allclose(plain["t_round"], 0.015)
    # the reply in hand 3 ms after its pass; alone on the core the drafting could not begin later than it did
    np.testing.assert_allclose(stamped["t_round"], 0.018)
    # nothing drawn: the rounds of the plain twin (a reply is never in hand before it came: here 2 ms after its pass)
    down = dict(base, down=lambda c: 0.002)
    none = simulate(one, FCFS(), FixedS(2, 1), Times(**down, wake=lambda b: (0.0, 0.0), wake_stamps=True), acc, seed=1)
    assert none.equals(simulate(one, FCFS(), FixedS(2, 1), Times(**down), acc, seed=1))
    # two clients verified together: each drafting shares the core, 20 ms for the two; on its clock the next one
    # begins once the wait in hand has passed, 3 + 4 ms after the pass, 7 ms into the 20 (not later than the 10 ms
    # of its own work leave), and ends 3 ms after the next pass: 20 + 5 + 3 - 7 ms
    two = Workload("target-m", one.clients * 2, capacity=4)
    both = dict(base, draft=[lambda k: 0.010] * 2)
    plain2 = simulate(two, FCFS(), FixedS(4, 2), Times(**both), acc, seed=1)
    seen = []
    stamped2 = simulate(two, FCFS(), FixedS(4, 2), Times(**both, wake=lambda b: seen.append(b) or (0.003, 0.004),
                                                         wake_stamps=True), acc, seed=1)
    assert stamped2[rest].equals(plain2[rest]) and seen[:2] == [1, 1]       # the other busy taking its reply in
    np.testing.assert_allclose(plain2.loc[plain2["round"] > 0, "t_round"].iloc[:4], 0.025)
    np.testing.assert_allclose(stamped2.loc[stamped2["round"] == 0, "t_round"], 0.028)
    np.testing.assert_allclose(stamped2.loc[(stamped2["round"] > 0) & (stamped2["batch"] < 4), "t_round"], 0.021)
    # the stamps read ``wake``'s draws, whole (not less the CPU once the reply is in), and only with them
    with pytest.raises(ValueError, match="times.wake is None"):
        simulate(one, FCFS(), FixedS(2, 1), Times(**base, wake_stamps=True), acc, seed=1)
    from dataclasses import replace
    alone = _model(np.array([0.002]))
    model = replace(_model(np.array([0.004])), wake=np.array([[0, 0.003, 0.004]]))
    t = measured_times.times(model, lambda b: 0.004, shared_core=True, alone=alone, wake_stamps=True)
    assert t.wake_stamps and t.wake(0) == (0.003, 0.004)
    assert not measured_times.times(model, lambda b: 0.004, shared_core=True, alone=alone, wake=True).wake_stamps
    with pytest.raises(ValueError, match="one of the two"):
        measured_times.times(model, lambda b: 0.004, shared_core=True, alone=alone, wake=True, wake_stamps=True)


def test_prompt_lengths_are_each_sessions_first_verification_less_its_drafts_in_stream_order():
    from specedge.serving.log import prompt_lengths

    log = pd.DataFrame(dict(client=[0, 0, 0, 1, 1, 0], round=[0, 1, 2, 0, 1, 3], S=[2, 1, 0, 3, 0, 1],
                            n_new=[27, 2, 1, 51, 1, 10], n_cached=[0, 27, 29, 0, 54, 0], event=""))
    assert prompt_lengths(log) == {0: (25, 9), 1: (48,)}
    shuffled = log.sample(frac=1.0, random_state=3)
    assert prompt_lengths(shuffled) == {0: (25, 9), 1: (48,)}                 # the stream's order, not the log's
    assert prompt_lengths(log.assign(event="refused")) == {}
    with pytest.raises(ValueError, match="n_cached"):
        prompt_lengths(log.drop(columns="n_cached"))


def test_each_prompt_feeds_its_own_length_to_its_sessions_first_verification():
    acc = PromptAcceptance(FRAME)
    spec = dict(draft="draft-xs", domains=("code",), prompts=3, max_new_tokens=6, gamma=2, draft_rule="fixed")
    seen = []

    def verify(batch):
        seen.extend((p.n_new, p.n_cached, p.n_draft) for p in batch)
        return 0.001
    one = Workload("target-m", (ClientSpec(**spec, prompt_tokens=(30, 7, 12)),), capacity=4)
    simulate(one, FCFS(), FixedS(2, 1), Times(draft=[lambda k: 0.001], verify=verify), acc, seed=0)
    firsts = [new - s for new, cached, s in seen if cached == 0]
    assert firsts == [30, 7, 12]                                             # each prompt's own, in the stream's order
    seen.clear()
    same = Workload("target-m", (ClientSpec(**spec, prompt_tokens=30),), capacity=4)
    simulate(same, FCFS(), FixedS(2, 1), Times(draft=[lambda k: 0.001], verify=verify), acc, seed=0)
    assert [new - s for new, cached, s in seen if cached == 0] == [30, 30, 30]
    for bad in ((), (5, -1), (2.5,)):
        with pytest.raises(ValueError, match="prompt_tokens"):
            ClientSpec(**spec, prompt_tokens=bad)


def test_the_held_out_runs_give_each_client_its_prompts_lengths():
    from specedge.experiments.serving_validation import runs as sv

    def log(lengths_by_client):
        rows = [dict(client=c, round=j, S=1, n_new=t + 1, n_cached=0, event="")
                for c, ts in lengths_by_client.items() for j, t in enumerate(ts)]
        return pd.DataFrame(rows)
    runs = {"a": log({0: (20, 9), 1: (48,)}), "b": log({0: (20,), 1: (48, 31), 2: (5,)})}
    assert sv._prompt_lengths(runs, ["a", "b"], 2) == {0: (20, 9), 1: (48, 31)}   # the fullest stream; clients < N
    assert sv._prompt_lengths(runs, [], 2) == {}


def test_first_starts_draw_one_fitted_runs_starts_after_its_first_client():
    model = measured_times.Drawn((), np.ones(1), np.zeros(1), np.zeros(1), ("a", "b", "c"),
                                 starts=np.array([[0.0, 0.3, 0.1], [0.2, 0.0, np.nan], [0.5, 0.0, 0.4]]))
    drawn = {measured_times.first_starts(model, 3, seed) for seed in range(40)}
    assert drawn == {(0.0, 0.3, 0.1), (0.5, 0.0, 0.4)}         # whole runs, never the one missing a client
    assert measured_times.first_starts(model, 2, 0) in {(0.0, 0.3), (0.2, 0.0), (0.5, 0.0)}
    # the first clients of a run whose first client is beyond them: their starts after the earliest of them
    late = measured_times.Drawn((), np.ones(1), np.zeros(1), np.zeros(1), ("a",), starts=np.array([[0.3, 0.5, 0.0]]))
    assert measured_times.first_starts(late, 2) == pytest.approx((0.0, 0.2))
    assert measured_times.first_starts(model, 3, 7) == measured_times.first_starts(model, 3, 7)   # seeded
    with pytest.raises(ValueError, match="start for each of 4 clients"):
        measured_times.first_starts(model, 4)
    with pytest.raises(ValueError, match="no fitted run"):
        measured_times.first_starts(measured_times.Drawn((), np.ones(1), np.zeros(1), np.zeros(1), ()), 1)


def test_summary_takes_the_worst_run_and_floors_small_queueing():
    t = pd.DataFrame(dict(paper="p", component="c", metric=["round_time_s"] * 2 + ["queue_s"] * 2, quantile="p50",
                          diff_pct=[3.0, -8.0, 400.0, 50.0], diff=[0.001, -0.002, 1e-4, 0.01], real=1.0, twin=1.0))
    s = twin_attribution.summary(t, floor=2e-4).set_index("metric")
    assert s.loc["round_time_s", "error_pct"] == 8.0 and s.loc["round_time_s", "mean_error_pct"] == 5.5
    assert s.loc["queue_s", "error_pct"] == 50.0          # the 400 % within the wake-up floor counts as 0


def test_own_repeats_predict_each_run_by_the_median_of_its_other_repeats(monkeypatch):
    from specedge.serving.analysis import validation
    monkeypatch.setattr(validation, "metric_values", lambda x: x)   # each "log" is its metric values already
    runs = {("p", "X", 2, r): {"round_time_s": np.array([t])} for r, t in zip((1, 2, 3, 4), (1.0, 2.0, 4.0, 10.0))}
    runs[("p", "Y", 2, 1)] = {"round_time_s": np.array([5.0])}      # no other repeat: not predicted
    t = twin_attribution.own_repeats(runs, quantiles=(50,)).set_index("repeat")
    assert set(t.component) == {twin_attribution.OWN} and set(t.policy) == {"X"}
    assert t.twin.to_dict() == {1: 4.0, 2: 4.0, 3: 2.0, 4: 2.0}            # the median of the three others
    assert t.loc[4, "diff"] == pytest.approx(-8.0) and t.loc[4, "diff_pct"] == pytest.approx(-80.0)
    assert t.loc[1, "diff_pct"] == pytest.approx(300.0)                    # asymmetric: in % of the judged run
    assert twin_attribution.own_repeats({("p", "X", 1, 1): None}).empty


def _judged(component, diffs, real=1.0, metric="round_time_s", ns=(1,)):
    return pd.DataFrame([dict(paper="p", policy="X", n_clients=n, repeat=r, component=component, metric=metric,
                              quantile="p50", real=real, twin=real * (1 + d / 100), diff=real * d / 100, diff_pct=d)
                         for n in ns for r, d in enumerate(diffs, 1)])


def test_beyond_own_is_the_mean_error_above_the_real_runs_own_on_the_same_runs():
    own = _judged(twin_attribution.OWN, [10.0, -20.0, 0.0])
    twin = _judged("twin", [15.0, -5.0, 40.0, 100.0])          # a fourth run without an own prediction is not counted
    e = twin_attribution.beyond_own(pd.concat([own, twin]), 2e-4, "twin").iloc[0]
    assert e.runs == 3 and e.mean_pct == pytest.approx(20.0) and e.own_mean_pct == pytest.approx(10.0)
    assert e.excess_pct == pytest.approx(10.0) and e.worst_pct == 40.0 and e.own_worst_pct == 20.0
    # a queueing delay within the floor counts as 0 on both sides
    q = pd.concat([_judged(twin_attribution.OWN, [50.0], real=1e-4, metric="queue_s"),
                   _judged("twin", [150.0], real=1e-4, metric="queue_s")])
    assert twin_attribution.beyond_own(q, 2e-4, "twin").iloc[0][["mean_pct", "own_mean_pct"]].tolist() == [0.0, 0.0]


def test_bias_is_the_geometric_mean_ratio_per_n_with_its_standard_error():
    t = pd.concat([_judged("twin", [100.0, -50.0], ns=(2,)), _judged("twin", [10.0, 10.0, 10.0], ns=(4,)),
                   _judged("other", [500.0], ns=(2,))])
    b = twin_attribution.bias(t, 2e-4, "twin").set_index("n_clients")
    assert b.loc[2, "bias_pct"] == pytest.approx(0.0, abs=1e-9)       # x2 and x0.5: no bias, though the mean of % is +25
    assert b.loc[2, "se_pct"] == pytest.approx(100 * np.std(np.log([2.0, 0.5]), ddof=1) / np.sqrt(2))
    assert b.loc[4, "bias_pct"] == pytest.approx(10.0) and b.loc[4, "se_pct"] == pytest.approx(0.0)
    assert b.runs.to_dict() == {2: 2, 4: 3}
    zero = pd.concat([_judged("twin", [-100.0, 20.0], ns=(2,)),                      # a twin value of 0: left out
                      _judged("twin", [150.0], real=1e-4, metric="queue_s", ns=(2,))])   # within the floor: ratio 1
    z = twin_attribution.bias(zero, 2e-4, "twin").set_index("metric")
    assert z.loc["round_time_s", "bias_pct"] == pytest.approx(20.0) and z.loc["round_time_s", "runs"] == 1
    assert z.loc["queue_s", "bias_pct"] == pytest.approx(0.0)


def test_variant_rejects_an_unknown_component():
    with pytest.raises(ValueError, match="component"):
        twin_attribution.variant(None, "no such component", 0)


def test_held_out_models_draw_measured_values():
    rng = np.random.default_rng(0)
    draws = measured_times._Draws(np.array([1.0, 2.0, np.nan]), rng)
    vals = {draws() for _ in range(200)}
    assert vals == {1.0, 2.0}
    c = measured_times.ClientTimes(0.0, 0.01, np.ones(3), np.array([0.001]), np.array([0.002]), np.array([0.003]),
                                   0.0, 0.005, np.ones(3))
    model = measured_times.Drawn((c,), np.ones(2), np.zeros(1), np.zeros(1), ())
    t = measured_times.times(model, lambda b: 0.004, seed=0)
    assert t.draft[0](4) == pytest.approx(0.04 + 0.001) and t.up(0, 4) == 0.002 and t.down(0) == 0.003
    t = measured_times.times(model, lambda b: 0.004, seed=0, shared_core=True)
    assert t.shared_core and t.draft[0](4) == pytest.approx(0.02 + 0.001) and t.verify([]) == pytest.approx(0.004)


def test_time_models_are_fitted_on_other_runs_of_the_same_campaign_and_n():
    from specedge.experiments.serving_validation import runs as sv

    runs = {(p, pol, n, r): None for p in ("a",) for pol in ("X", "Y") for n in (1, 2) for r in (0, 1, 2)}
    assert sorted(sv.held_out(runs, ("a", "X", 2, 1))) == [("a", "X", 2, 2), ("a", "Y", 2, 2)]   # other repeats, same N
    assert sv.held_out(runs, ("a", "X", 2, 0)) == [("a", "Y", 2, 0)]                            # repeat 0: the other policy
    assert ("a", "X", 2, 1) not in sv.held_out(runs, ("a", "X", 2, 1))
    assert set(sv.campaign(runs, ("a", "X", 1, 0))) == {k for k in runs if k[3] == 0}


# --------------------------------------------------------------------------- the stop rule at the round's positions
def _featured(rounds_by_prompt):
    """A traces frame whose rows carry a max_prob per position: per prompt its rounds as (flags, max_probs)."""
    rows = []
    for p, rounds in rounds_by_prompt.items():
        for r, (flags, probs) in enumerate(rounds):
            for i, (ok, mp) in enumerate(zip(flags, probs)):
                rows.append(dict(draft="draft-xs", target="target-m", domain="code", temperature=0.0, prompt=p, round=r,
                                 i=i + 1, q=0.5, p=0.5 if ok else 0.1, accepted=bool(ok), max_prob=mp, entropy=1.0,
                                 margin=0.1, logit_std=1.0))
    return pd.DataFrame(rows)


class _Confident:
    """Predicts "accepted" where max_prob > 0.5 (the features' first column)."""

    def predict(self, x):
        return (np.asarray(x)[:, 0] > 0.5).astype(int)


class _Early:
    """Predicts "accepted" at window indices 1 and 2 only (the features' last column)."""

    def predict(self, x):
        return (np.asarray(x)[:, -1] <= 2).astype(int)


# prompt 0: round 0 at position 0 accepts 2, is rejected at 2, then drafts one unconfident position past it; round 1
# at position 3 accepts 1, is rejected at 4, then two confident positions past it
STOPS = _featured({0: [([1, 1, 0, 1], [0.9, 0.9, 0.9, 0.2]), ([1, 0, 0, 0], [0.9, 0.9, 0.9, 0.9])]})


def test_the_stop_rule_judges_the_features_at_the_rounds_own_positions():
    acc = PromptAcceptance(STOPS, stop_rules={"conf": _Confident(), "early": _Early()})
    rng = np.random.default_rng(0)
    assert acc.sequence("draft-xs", "code", 0.0, 0)[0] == [1, 1, 0, 1, 0]
    # at 0: positions 0, 1 accepted, 2 drafted and rejected, then the position past it (0.2) stops the round
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 0, 4, "conf")[:2] == (3, 2)
    # at 3: 3 accepted, 4 rejected, the two positions past it confident: the whole window
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 3, 4, "conf")[:2] == (4, 1)
    # a round starting at 1 (no traced round started there): 1 accepted, 2 rejected, past it the traced continuation
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 1, 4, "conf")[:2] == (2, 1)
    # the window index is the round's own (1, 2, ...), not the traced round's: at 1 the rule drafts two positions
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 1, 4, "early")[:2] == (2, 1)
    assert acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 3, 4, "early")[:2] == (2, 1)
    n, aps = acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 0, 4, "conf")[1:]
    assert aps == pytest.approx(1.0 + 1.0 + 0.2)          # the traced min(1, p/q) of the drafted positions
    with pytest.raises(KeyError, match="stop rule"):
        acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 0, 4, "mlp")


def test_an_undecided_position_draws_its_outcome_with_features_of_such_a_position():
    """A rule that knows the outcome (confident exactly where accepted) never drafts a rejected token, also where the
    traces decide nothing: there the features are drawn with the drawn outcome, and the accepted run follows the
    prompt's rate."""
    frame = _featured({0: [([1, 1, 0], [0.9, 0.9, 0.1]), ([0, 0, 0], [0.1, 0.1, 0.1]), ([1, 1, 1], [0.9, 0.9, 0.9])]})
    acc, rng = PromptAcceptance(frame, stop_rules={"oracle": _Confident()}), np.random.default_rng(1)
    bits, _, rate = acc.sequence("draft-xs", "code", 0.0, 0)[:3]
    assert bits == [1, 1, 0, 0, 1, 1, 1, -1] and rate == pytest.approx(5 / 7)
    draws = [acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, 7, 3, "oracle") for _ in range(3000)]
    assert all(s == n for s, n, _ in draws)                              # stops before the first rejection
    assert np.mean([n >= 1 for _, n, _ in draws]) == pytest.approx(5 / 7, abs=0.03)
    assert np.mean([n == 3 for _, n, _ in draws]) == pytest.approx((5 / 7) ** 3, abs=0.03)
    assert all(acc.controlled_at(rng, "draft-xs", "code", 0.0, 0, m, 3, "oracle")[:2] == (n, n)
               for m, n in [(0, 2), (2, 0), (4, 3)])
    assert acc.rule_table("draft-xs", "code", 0.0, 0, 3, "oracle") is acc.rule_table("draft-xs", "code", 0.0, 2, 3, "oracle")


def test_the_walk_reproduces_the_real_drafters_rounds_on_their_own_prompts():
    """On the committed traces of the real runs' prompts (``serving_validation.traces``) the MLP stop rule at each
    round's position gives the real WISP-setting drafters' rounds (S and accepted) in >= 98 % of the committed runs'
    rounds (the rest: positions the traces leave undecided, drawn); on the zoo's traces (the prompts cut at 96 tokens,
    not 48) far fewer."""
    from specedge import paths
    from specedge.predictor import persistence
    from specedge.experiments.serving_validation import runs as sv
    from specedge.serving.log import real_rounds

    rules = {"mlp": persistence.load(paths.DATA / "predictor", "mlp")}
    runs = sv.load_real_runs()

    def match(acc):
        rng, same, total = np.random.default_rng(0), 0, 0
        for (paper, pol, n), log in runs.items():
            if paper != "li2026":
                continue
            wl = sv.workload(paper, n)
            for c, r in real_rounds(log).items():
                spec, made, j = wl.clients[c], 0, 0
                for s_real, n_real in zip(r["S"], r["accepted"]):
                    s, k, _ = outcome(acc, rng, spec, spec.domains[0], j, made, spec.gamma, 48 - made)
                    same += (s, k) == (s_real, n_real)
                    total += 1
                    made += n_real + 1
                    made, j = (0, j + 1) if made >= 48 else (made, j)
        return same / total

    assert match(PromptAcceptance(sv.TRACES, stop_rules=rules)) >= 0.98
    assert match(PromptAcceptance(stop_rules=rules)) < 0.9


# --------------------------------------------------------------------------- the drafters' whole CPU on their core
def test_shared_core_conserves_work():
    """The core is busy exactly as long as the work charged on it: a busy period ends at its start plus the work of
    every job in it, whatever their sizes and arrivals; an idle gap starts a new period; work 0 ends at once."""
    works, starts = [1.0, 0.5, 0.25, 0.1, 0.0], [0.0, 0.2, 0.3, 5.0, 6.0]
    done = _core_finishes(works, starts)
    assert max(done[i] for i in range(3)) == pytest.approx(1.75)        # 0 + 1 + 0.5 + 0.25
    assert done[3] == pytest.approx(5.1) and done[4] == pytest.approx(6.0)
    # processor sharing: the shortest of the three finishes first, each no earlier than alone
    assert done[2] < done[1] < done[0] and all(done[i] >= starts[i] + works[i] - 1e-12 for i in done)
    # ties: three equal jobs at once end together, at three times the work
    assert set(round(t, 12) for t in _core_finishes([0.3] * 3, [0.0] * 3).values()) == {0.9}
    assert _core_finishes([], []) == {}


def _model(other, n=1, gap=0.001, up=0.002, down=0.003):
    c = measured_times.ClientTimes(0.0, 0.01, np.ones(1), np.array([gap]), np.array([up]), np.array([down]),
                                   0.0, 0.005, np.ones(1), other)
    return measured_times.Drawn((c,) * n, np.ones(1), np.zeros(1), np.zeros(1), ())


def test_no_cpu_besides_drafting_leaves_a_client_alone_as_it_was():
    """A client alone on its core whose CPU besides drafting is 0 takes as long per round as the shared-core twin
    without that model (its gap then on the wire, not on the core: alone, the same)."""
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed"),), capacity=2)
    acc = PromptAcceptance(FRAME)
    logs = []
    for other in (None, np.zeros(3)):
        t = measured_times.times(_model(other), lambda b: 0.004, shared_core=True, alone=_model(other))
        assert (t.post is None) == (other is None)
        logs.append(simulate(wl, FCFS(), FixedS(2, 1), t, acc, seed=1))
    a, b = logs
    assert len(a) == len(b) and a["tokens"].sum() == b["tokens"].sum()
    np.testing.assert_allclose(a["t_round"], b["t_round"], rtol=1e-12)
    np.testing.assert_allclose(a["start"], b["start"], rtol=1e-12)


def test_cpu_besides_drafting_is_charged_on_the_core_split_as_the_alone_runs_wall_time():
    """The alone runs' gap + up (0.003 s) and reply (0.003 s) place half of the CPU besides drafting before the send
    and half once the reply is in; alone, a client's rounds then take as long as the wall times say (the CPU they hold
    taken out of them), and with other drafters on the core the work is shared."""
    alone = _model(np.array([0.002]))
    share, pre, post = measured_times.split(alone.clients[0])
    assert (share, pre, post) == (pytest.approx(0.5), pytest.approx(0.001), pytest.approx(0.001))
    t = measured_times.times(_model(np.array([0.004])), lambda b: 0.004, shared_core=True, alone=alone)
    assert t.draft[0](2) == pytest.approx(0.01 + 0.002)          # the line, then half of the drawn 4 ms
    assert t.post(0) == pytest.approx(0.002)                     # the other half, drawn with it
    assert t.up(0, 2) == pytest.approx(0.001 + 0.002 - 0.001) and t.down(0) == pytest.approx(0.003 - 0.001)
    # a model without the column draws none: the shared core as it was
    assert measured_times.times(_model(np.zeros(0)), lambda b: 0.004, shared_core=True, alone=alone).post is None
    with pytest.raises(ValueError, match="clients"):
        measured_times.with_client_cpu(_model(np.zeros(0), n=2), alone)
    moved = measured_times.with_client_cpu(_model(np.zeros(0)), alone)
    assert list(moved.clients[0].other_cpu) == [0.002] and moved.clients[0].e1 == 0.01


def test_the_reply_work_is_done_before_the_next_drafting_outside_the_round():
    """Work once the reply is in delays the client's next round (fewer rounds in the same time), not the round's own
    time; and where drafters share the core it is shared too."""
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(2)), capacity=4)
    acc = PromptAcceptance(FRAME)
    base = dict(draft=[lambda k: 0.01 * k] * 2, verify=lambda b: 0.005, shared_core=True)
    plain = simulate(wl, FCFS(), FixedS(4, 2), Times(**base), acc, seed=1)
    busy = simulate(wl, FCFS(), FixedS(4, 2), Times(**base, post=lambda c: 0.01), acc, seed=1)
    assert busy["tokens"].sum() == plain["tokens"].sum()
    assert busy["end"].max() > plain["end"].max() + 0.01 * (busy["round"].max())   # every round's reply work, waited out
    # a round's own time: drafting (shared) + verification; the reply work of the other client may share the core
    assert busy["t_round"].min() == pytest.approx(plain["t_round"].min(), rel=1e-9)


def test_the_docs_quote_the_validated_twins_errors_as_committed():
    """docs/twin-validation.md's table of the stochastic twin against the real runs quotes, for the committed runs, the
    validated twin's worst |difference| at p50 (p90) of round time and goodput as ``serving.analysis.twin_error`` reads them from
    the committed ``stochastic_vs_real.csv`` (a number typed there goes stale when the validation is measured again)."""
    import re

    from specedge import paths
    from specedge.serving.analysis import twin_error as te

    text = (paths.ROOT / "docs" / "twin-validation.md").read_text()
    names = {"tran2025": "GOODSPEED's", "li2026": "WISP's"}
    for setting, name in names.items():
        for metric, label in (("round_time_s", "round time"), ("goodput_tok_s", "per-client goodput")):
            m = re.search(rf"^\| {re.escape(name)}, {label} \| [^|]*→ \**([\d.]+) \(([\d.]+)\)", text, re.M)
            assert m, f"docs/twin-validation.md: no committed-runs row for {name} {label}"
            quoted = [float(g) for g in m.groups()]
            assert quoted == [round(te.stochastic_pct(metric, setting, quantile=q), 1) for q in ("p50", "p90")], (setting, metric)
