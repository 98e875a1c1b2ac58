"""The drafters' core budget per synchronous round (``serving.analysis.core_budget``) on hand-made logs."""
import numpy as np
import pandas as pd
import pytest

from specedge.serving.analysis import core_budget as cb


def _rounds(rows):
    return pd.DataFrame(rows, columns=cb.COLUMNS)


# two clients, two synchronous batches; batch 1's window opens at the first reply in (client 1's, at 1.0) and
# closes at the last request (client 0's, at 1.9)
TWO = _rounds([
    # batch client round left received drafted arrival cpu draft_cpu
    (0, 0, 0, 0.6, 1.2, 0.0, 0.5, 0.4, 0.3),
    (0, 1, 0, 0.6, 1.0, 0.0, 0.4, 0.3, 0.2),
    (1, 0, 1, 2.5, 2.9, 1.4, 1.9, 0.5, 0.4),
    (1, 1, 1, 2.5, 2.6, 1.1, 1.6, 0.3, 0.25),
])


def test_budget_sums_the_batch_and_opens_at_the_first_reply_in():
    b = cb.budget(TWO)
    assert list(b["batch"]) == [1]   # batch 0 holds first rounds: no window
    row = b.iloc[0]
    assert row["clients"] == 2
    assert row["cpu"] == pytest.approx(0.8)
    assert row["draft_cpu"] == pytest.approx(0.65)
    assert row["window"] == pytest.approx(0.9)
    assert row["busy"] == pytest.approx(0.8 / 0.9)


def test_budget_ties_and_order():
    # both replies in at once, both requests at once: the window is the one interval; rows in any order
    tied = TWO.assign(received=[1.0, 1.0, 2.9, 2.9], arrival=[0.5, 0.5, 1.9, 1.9]).iloc[::-1]
    b = cb.budget(tied)
    assert b["window"].tolist() == pytest.approx([0.9])
    assert b["busy"].tolist() == pytest.approx([0.8 / 0.9])


def test_a_batch_with_a_first_round_has_no_window():
    late = pd.concat([TWO, _rounds([(1, 2, 0, 2.5, 2.7, 1.0, 1.8, 0.2, 0.1)])], ignore_index=True)
    assert cb.budget(late).empty


def test_cycles_split_at_the_drafting():
    d = cb.cycles(TWO).sort_values("client")
    assert d["round"].tolist() == [1, 1]
    assert d["delay"].tolist() == pytest.approx([1.4 - 0.6, 1.1 - 0.6])
    assert d["in_hand"].tolist() == pytest.approx([1.4 - 1.2, 1.1 - 1.0])
    assert d["cycle"].tolist() == pytest.approx([2.9 - 1.2, 2.6 - 1.0])
    assert d["t_round"].tolist() == pytest.approx([2.9 - 1.4, 2.6 - 1.1])
    assert d["reply"].tolist() == pytest.approx([0.4, 0.1])
    assert (d["cycle"] - d["in_hand"] - d["t_round"]).abs().max() < 1e-12


def test_empty_and_missing_columns():
    empty = _rounds([])
    assert cb.budget(empty).empty and cb.cycles(empty).empty
    with pytest.raises(ValueError, match="missing columns.*cpu"):
        cb.budget(TWO.drop(columns=["cpu"]))


def test_real_core_rounds_reads_the_drafters_clocks():
    log = pd.DataFrame(dict(event=["", "", "dropped: x"], batch=[0, 1, 2], client=[0, 0, 0], round=[0, 1, 2],
                            end=[1.0, 2.0, 3.0], t_send=[0.1, 0.2, 0.0], t_round=[0.9, 0.7, 0.0],
                            arrival=[0.5, 1.6, 2.5], t_client_cpu=[0.3, 0.4, 0.0], t_draft_cpu=[0.2, 0.3, 0.0]))
    r = cb.real_core_rounds(log)
    assert len(r) == 2
    assert r["received"].tolist() == pytest.approx([1.1, 2.2])
    assert r["drafted"].tolist() == pytest.approx([0.2, 1.5])
    assert r["cpu"].tolist() == pytest.approx([0.3, 0.4])
    assert np.isnan(cb.real_core_rounds(log.drop(columns=["t_client_cpu"]))["cpu"]).all()


def test_the_twins_rounds_read_back_from_its_recorded_draws():
    """Three drafters on one processor-shared core: drafting 0.01 s of CPU per pass, 0.002 s once each reply is in,
    replies 0.001 s on the way: every reply reaches its drafter 0.001 s after its pass, the round's CPU is what was
    drawn, a cycle is its in-hand wait plus its round, and one core never does more work than its window holds; replies
    of 1-4 ms drawn at random: the first draw of each pair is the reply's delay, the second the logged ``t_send``."""
    from specedge.serving.interfaces import Times
    from specedge.serving.policies.allocation import FixedS
    from specedge.serving.policies.batching import FCFS
    from specedge.serving.sim.twin import PromptAcceptance, simulate
    from specedge.serving.workload import ClientSpec, Workload
    from test_twin_error_attribution import FRAME

    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                    for _ in range(3)), capacity=6)
    rng = np.random.default_rng(3)
    times = Times(draft=[lambda k: 0.01 * k] * 3, verify=lambda b: 0.005, up=lambda c, s: 0.0005,
                  down=lambda c: float(rng.uniform(0.001, 0.004)), shared_core=True, post=lambda c: 0.002)
    rec = cb.Recorder(share_before=0.5)
    log = simulate(wl, FCFS(), FixedS(6, 3), rec.wrap(times), PromptAcceptance(FRAME), seed=1)
    r = cb.twin_core_rounds(log, rec)
    assert len(r) == len(log)
    reply = (r["received"] - r["left"]).to_numpy()
    assert reply.min() >= 0.001 and reply.max() <= 0.004
    assert (reply != log.sort_values(["client", "round"])["t_send"].to_numpy()).all()
    assert r["cpu"].to_numpy() == pytest.approx(0.01 * log.sort_values(["client", "round"])["S"].to_numpy() + 0.002)
    assert r["draft_cpu"].to_numpy() == pytest.approx(r["cpu"].to_numpy() - 0.004)   # the CPU besides: 0.002 / 0.5
    c = cb.cycles(r)
    assert (c["cycle"] - c["in_hand"] - c["t_round"]).abs().max() < 1e-12
    assert c["in_hand"].min() >= 0.002 - 1e-12           # the reply's work is done before the next drafting
    assert (r["drafted"] <= r["arrival"] - 0.0005 + 1e-12).all()
    b = cb.budget(r)
    assert len(b) and (b["busy"] <= 1 + 1e-9).all()
    with pytest.raises(ValueError, match="shared-core"):
        cb.Recorder().wrap(Times(draft=[lambda k: 0.0], verify=lambda b: 0.0))
    short = cb.Recorder()
    short.draft, short.post, short.down = {0: [0.0]}, {0: [0.0]}, {0: [0.0]}
    with pytest.raises(ValueError, match="fewer recorded draws"):
        cb.twin_core_rounds(log, short)


def test_held_out_pool_of_the_same_policy():
    """``held_out(..., same_policy=True)`` keeps the judged run's policy among the other repeats; where its campaign has
    no other repeat (repeat 0) the pool is the other policy's run, as without it."""
    from specedge.experiments.serving_validation.runs import held_out

    runs = {(p, pol, n, r): None for p in ("a",) for pol in ("X", "Y") for n in (4, 8) for r in (0, 1, 2)}
    key = ("a", "X", 4, 1)
    assert sorted(held_out(runs, key)) == [("a", "X", 4, 2), ("a", "Y", 4, 2)]
    assert held_out(runs, key, same_policy=True) == [("a", "X", 4, 2)]
    assert held_out(runs, ("a", "X", 4, 0), same_policy=True) == [("a", "Y", 4, 0)] == held_out(runs, ("a", "X", 4, 0))
    alone = {k: None for k in runs if k[1] == "Y" or k[3] != 2}   # X's other repeat gone: the other policy's
    assert held_out(alone, key, same_policy=True) == [("a", "Y", 4, 2)] == held_out(alone, key)


def test_core_budget_table_on_two_committed_repeats():
    """``serving_validation.core_budget_table`` on GOODSPEED's repeats 1-2 at N = 4 (the held-out pool: the other repeat
    and Fixed-S's two): a real and a twin row per run, the real core saturated in its window (nothing else runs on it),
    every quantity positive and the cycle split into the wait in hand and the round; and its refusal of no repeats."""
    from specedge.experiments.serving_validation import runs as sv

    every = sv.load_repeats()
    runs = {k: v for k, v in every.items() if k[0] == "tran2025" and k[2] == 4 and k[3] in (1, 2)}
    table = sv.core_budget_table(sizes=(4,), seeds=1, runs=runs)
    assert list(zip(table.repeat, table.side)) == [(1, "real"), (1, "twin"), (2, "real"), (2, "twin")]
    assert set(table.policy) == {"GOODSPEED"} and set(table.n_clients) == {4}
    real, twin = table[table.side == "real"], table[table.side == "twin"]
    assert np.allclose(real.cpu / real.window, 1.0, atol=0.05), real[["cpu", "window"]]
    assert (twin.cpu <= twin.window * 1.05).all()
    cols = ["cpu", "window", "t_verify", "cycle", "in_hand", "t_round", "t_round_p50", "delay_p50"]
    assert (table[cols] > 0).all().all()
    assert np.allclose(table.cycle, table.in_hand + table.t_round, rtol=0.02)
    queued = sv.core_budget_table(sizes=(4,), seeds=1, runs=runs, kind="queued core")
    assert queued[queued.side == "real"].equals(real)                 # the real side does not depend on the twin
    # its wait falls before the round: the tail of the wait in hand grows by a third or more
    assert (queued[queued.side == "twin"].in_hand_p90.values > 1.3 * twin.in_hand_p90.values).all()
    with pytest.raises(ValueError, match="no repeats of 'tran2025' 'GOODSPEED' at N in \\(16,\\)"):
        sv.core_budget_table(sizes=(16,), runs=runs)
