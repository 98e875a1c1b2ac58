"""early_exit's stated definitions, agreement table, Fig 4a/4b verdicts and γ-sweep statistics at their boundaries,
each against a hand-worked value: an exit agrees on (accepted count, token), not on the token alone."""
import math

import numpy as np
import pandas as pd
import pytest

from specedge.early_exit import draft_length, offline, sim
from specedge.experiments.venkatesha2025 import verdicts as vx
from specedge.early_exit.sim import ExitOutcome, RoundTrace


def _round(accepted, token, exits, n_layers=4):
    return RoundTrace(drafted=4, accepted=accepted, token=token, n_layers=n_layers,
                      exits=tuple(ExitOutcome(layer, a, t, 0.5) for layer, (a, t) in enumerate(exits, start=1)))


# the final accepted 2 and emitted token 7; exit 1 has the token but 3 accepted, exit 2 both, exit 3 the count only
AGREES_AT_2 = _round(2, 7, [(3, 7), (2, 7), (2, 9)])
TOKEN_ONLY = _round(2, 7, [(1, 7), (3, 7), (0, 7)])       # every exit has the token, none the count
COUNT_ONLY = _round(2, 7, [(2, 1), (2, 2), (2, 3)])       # every exit has the count, none the token


def test_the_earliest_exit_agrees_on_the_accepted_count_and_the_token():
    assert AGREES_AT_2.earliest_exit() == 2
    assert TOKEN_ONLY.earliest_exit() == COUNT_ONLY.earliest_exit() == 4       # none: the final, L
    assert _round(2, 7, []).earliest_exit() == 4


def test_stated_miss_rate_is_the_share_of_rounds_no_exit_agrees_with():
    assert sim.stated_miss_rate([[AGREES_AT_2, TOKEN_ONLY], [COUNT_ONLY]]) == pytest.approx(2 / 3)
    assert sim.stated_miss_rate([[AGREES_AT_2]]) == 0.0
    assert math.isnan(sim.stated_miss_rate([[]])) and math.isnan(sim.stated_miss_rate([]))


def test_stated_average_early_exit_counts_only_rounds_where_an_exit_agrees():
    first = _round(0, 3, [(0, 3), (0, 3), (0, 3)])             # exit 1 agrees
    seqs = [[AGREES_AT_2, TOKEN_ONLY], [first]]
    assert sim.stated_average_early_exit(seqs) == pytest.approx((2 + 1) / 2)
    assert sim.average_early_exit(seqs) == pytest.approx((2 + 4 + 1) / 3)     # the final (4) where none agrees
    assert math.isnan(sim.stated_average_early_exit([[TOKEN_ONLY, COUNT_ONLY]]))
    assert math.isnan(sim.average_early_exit([]))


def test_the_trace_frame_keeps_a_round_without_exits_and_reads_it_back():
    seqs = [[AGREES_AT_2, _round(1, 5, [])]]
    f = sim.traces_frame(seqs)
    assert len(f) == 3 + 1 and f.iloc[-1][["exit", "exit_accepted", "exit_token"]].tolist() == [0, -1, -1]
    assert sim.traces_from_frame(f) == seqs


# ------------------------------------------------------------------------------------------ agreement table
def _agree_frame():
    # 2 exits of a 3-position target, 2 records of 2 positions each; exit 1 agrees at 1 of 4, exit 2 at 3 of 4
    rows = []
    for e, flags, conf in ((1, [1, 0, 0, 0], [0.2, 0.4, 0.4, 0.2]), (2, [1, 1, 0, 1], [0.9, 0.7, 0.6, 0.8])):
        rows += [dict(position=p, record=p // 2, exit=e, kind="adapters", agree=bool(a), confidence=c)
                 for p, (a, c) in enumerate(zip(flags, conf))]
    return pd.DataFrame(rows)


def test_agreement_table_gives_each_exits_share_depth_and_confidence():
    t = offline.agreement_table(_agree_frame(), n_boot=200, seed=0).set_index("exit")
    assert t.agreement.tolist() == [0.25, 0.75] and t.positions.tolist() == [4, 4]
    # depth = exit / P, P = the exit positions + the final: 3 here
    assert t.depth.to_numpy() == pytest.approx([1 / 3, 2 / 3])
    assert t.confidence.to_numpy() == pytest.approx([0.3, 0.75])
    # resampling whole records: record 0 agrees at 1/2 and 2/2, record 1 at 0 and 1/2 -> bounds are record means
    assert t.loc[1, "low"] == pytest.approx(0.0) and t.loc[1, "high"] == pytest.approx(0.5)
    assert t.loc[2, "low"] == pytest.approx(0.5) and t.loc[2, "high"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="'record' column"):
        offline.agreement_table(_agree_frame().drop(columns="record"))


# ------------------------------------------------------------------------------------------ Fig 4a / 4b verdicts
def test_plateau_threads_reaches_the_share_at_equality():
    f = pd.DataFrame(dict(threads=[1, 5, 9], speedup_sd_fsd=[1.0, 1.5, 2.0]))    # gains 0, 0.5, 1.0
    assert vx.plateau_threads(f, share=0.5) == 5.0                                # 0.5 >= 0.5 x 1.0
    assert vx.plateau_threads(f, share=0.51) == 9.0
    assert vx.plateau_threads(f, share=1.0) == 9.0


def test_first_gamma_below_is_strictly_below_the_level():
    f = pd.DataFrame(dict(gamma=[2, 4, 6], speedup_ar_sd=[1.2, 1.0, 0.9]))
    assert vx.first_gamma_below(f) == 6.0                  # exactly 1x at gamma 4 is not below 1x
    assert vx.first_gamma_below(f, level=1.2) == 4.0
    assert vx.first_gamma_below(f.iloc[:1]) is None


def test_fsd_gain_and_miss_rate_ties_fail():
    f = pd.DataFrame(dict(gamma=[2, 8], speedup_sd_fsd=[1.1, 1.1]))
    assert not vx.fsd_gain_grows_with_gamma(f).holds
    assert vx.fsd_gain_grows_with_gamma(f.assign(speedup_sd_fsd=[1.1, 1.1000001])).holds
    same_end = pd.DataFrame(dict(threads=[1, 2], miss_rate=[0.3, 0.3]))
    assert not vx.miss_rate_falls(same_end).holds and vx.miss_rate_falls(same_end.assign(miss_rate=[0.3, 0.2])).holds


def test_speedup_rises_allows_a_dip_of_exactly_the_tolerance():
    f = pd.DataFrame(dict(threads=[1, 2, 3], speedup_sd_fsd=[1.0, 2.0, 1.5]))     # a 25 % dip, then above 1.0
    assert vx.speedup_rises(f, tolerance=0.25).holds and not vx.speedup_rises(f, tolerance=0.24).holds


def _t7(gains_lo, gains_hi):
    """Table 7 frames: FIFO at 1.0 everywhere, priority 1 - gain, for threads 1 and 4 per client queue."""
    rows = []
    for cq, glo, ghi in zip(("priority", "fifo"), gains_lo, gains_hi):
        for k, g in ((1, glo), (4, ghi)):
            rows += [dict(client=cq, server="fifo", threads=k, miss_rate=0.5),
                     dict(client=cq, server="priority", threads=k, miss_rate=0.5 - g)]
    return pd.DataFrame(rows)


def test_server_priority_gain_must_shrink_strictly():
    assert vx.server_priority_gain_shrinks(_t7((0.25, 0.25), (0.125, 0.125))).holds
    equal = vx.server_priority_gain_shrinks(_t7((0.25, 0.25), (0.25, 0.125)))
    assert not equal.holds and "priority" in equal.evidence
    assert not vx.server_priority_helps(_t7((0.25, 0.0), (0.25, 0.25))).holds      # a tie at one cell


# ------------------------------------------------------------------------------------------ γ sweep statistics
def test_stats_sum_per_prompt_quantities_before_dividing():
    p = dict(sd=np.array([1.0, 3.0]), fsd=np.array([1.0, 1.0]), ar=np.array([2.0, 2.0]),
             tokens=np.array([6.0, 2.0]), rounds=np.array([2.0, 2.0]), misses=np.array([1.0, 0.0]))
    s = draft_length._stats(p, np.arange(2))
    # sums: sd 4, fsd 2, ar 4, tokens 8, rounds 4, misses 1 (a mean of per-prompt ratios would differ: 1.33 ...)
    assert (s["speedup_ar_sd"], s["speedup_sd_fsd"], s["tau"], s["stated_miss_rate"]) == (1.0, 2.0, 2.0, 0.25)
    boot = draft_length._stats(p, np.array([[0, 0], [1, 1]]))
    assert boot["speedup_ar_sd"].tolist() == [2.0, 2 / 3] and boot["tau"].tolist() == [3.0, 1.0]


def test_the_paired_interval_is_the_larger_gamma_minus_the_smaller():
    reps = pd.DataFrame(dict(replicate=[0, 1, 0, 1], gamma=[2, 2, 8, 8], x=[1.0, 1.0, 1.5, 1.5]))
    assert draft_length.paired_interval(reps, "x", 2, 8) == pytest.approx((0.5, 0.5))
    assert draft_length.paired_interval(reps, "x", 8, 2) == pytest.approx((-0.5, -0.5))


@pytest.mark.parametrize("kw, what", [(dict(mode="ar"), "mode must be 'sd' or 'fsd'"),
                                      (dict(time_scale=0), "time_scale must be a number > 0"),
                                      (dict(max_new_tokens=0), "max_new_tokens must be an integer >= 1")])
def test_a_concurrent_run_refuses_bad_arguments_before_any_work(kw, what):
    from specedge.early_exit import concurrent
    args = dict(max_new_tokens=4, mode="fsd", time_scale=0.1)
    args.update(kw)
    with pytest.raises(ValueError, match=what):       # no models needed: refused before they are touched
        concurrent.run(None, None, [[1, 2]], args.pop("max_new_tokens"), sim.FSDConfig(4, 0.01, 0.1, 0.0), **args)
