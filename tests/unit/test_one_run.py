"""Each seed's time models fitted on one held-out run (``serving_validation.runs.one_run``, the twin kind "one run"): a
real run's machine state holds for the whole run, and rounds drawn from several runs' values mix their states."""
import numpy as np
import pandas as pd
import pytest

from specedge.experiments.serving_validation import runs as sv
from specedge.serving.log import verified
from specedge.serving.timemodels import measured_times


@pytest.fixture
def fits(monkeypatch):
    """``one_run`` with its fits recorded: a model is the key it was fitted on."""
    calls = []

    def fit(runs, keys, passes, verify, bin_s=measured_times.CORE_BIN_S):
        calls.append(tuple(keys))
        return keys[0]
    monkeypatch.setattr(measured_times, "fit", fit)
    monkeypatch.setattr(sv, "_client_cpu", lambda drawn, *args: drawn)
    return calls


def _runs(n=2, repeats=(1, 2, 3, 4, 5), policies=("FCFS", "WISP"), paper="li2026"):
    return {(paper, p, m, r): None for r in repeats for p in policies for m in sorted({1, n})}


def test_the_seeds_take_the_repeats_in_turn_and_the_policies_alternately(fits):
    runs = _runs()
    key = ("li2026", "WISP", 2, 1)
    fitted = sv.held_out(runs, key)
    models = sv.one_run(runs, runs, key, fitted, None, None, measured_times.CORE_BIN_S)
    got = [models(s)[0] for s in range(9)]
    assert [(k[3], k[1]) for k in got] == [(2, "FCFS"), (3, "WISP"), (4, "FCFS"), (5, "WISP"),
                                           (2, "WISP"), (3, "FCFS"), (4, "WISP"), (5, "FCFS"), (2, "FCFS")]
    assert len(set(got[:8])) == 8 and all(k[2] == 2 and k[3] != 1 for k in got)   # every held-out run once
    # each seed's run of one client is its run's mate: the same policy and repeat
    assert all(models(s)[1] == ("li2026", k[1], 1, k[3]) for s, k in enumerate(got))
    # each run fitted once, with its mate: 8 runs, 16 fits, however many seeds ask
    assert len(fits) == 16 and len(set(fits)) == 16


def test_a_pair_not_measured_is_passed_over_and_one_run_serves_every_seed(fits):
    runs = _runs()
    del runs[("li2026", "WISP", 2, 3)]
    key = ("li2026", "WISP", 2, 1)
    models = sv.one_run(runs, runs, key, sv.held_out(runs, key), None, None, measured_times.CORE_BIN_S)
    got = [models(s)[0] for s in range(7)]
    assert ("li2026", "WISP", 2, 3) not in got and len(set(got)) == 7
    assert [(k[3], k[1]) for k in got[:3]] == [(2, "FCFS"), (4, "FCFS"), (5, "WISP")]
    # the committed campaign: one held-out run (the other policy's), every seed's
    one = {k: None for k in [("li2026", "WISP", 2), ("li2026", "FCFS", 2), ("li2026", "WISP", 1), ("li2026", "FCFS", 1)]}
    key = ("li2026", "WISP", 2)
    models = sv.one_run(one, one, key, sv.held_out(one, key), None, None, measured_times.CORE_BIN_S)
    assert {models(s) for s in range(5)} == {(("li2026", "FCFS", 2), ("li2026", "FCFS", 1))}


def test_a_run_of_one_client_is_its_own_mate_and_without_a_mate_the_others_are_taken_in_turn(fits):
    runs = _runs(n=1)
    key = ("li2026", "FCFS", 1, 2)
    models = sv.one_run(runs, runs, key, sv.held_out(runs, key), None, None, measured_times.CORE_BIN_S)
    assert all(models(s)[0] == models(s)[1] != key for s in range(8))
    # N = 4 runs whose repeats measured no run of one client: the campaign's others of one client, in order
    runs = {**{("li2026", p, 4, r): None for r in (1, 2) for p in ("FCFS", "WISP")},
            ("li2026", "FCFS", 1, 9): None, ("li2026", "WISP", 1, 9): None}
    key = ("li2026", "WISP", 4, 1)
    models = sv.one_run(runs, runs, key, sv.held_out(runs, key), None, None, measured_times.CORE_BIN_S)
    assert [models(s)[1] for s in range(2)] == [("li2026", "FCFS", 1, 9), ("li2026", "WISP", 1, 9)]
    with pytest.raises(ValueError, match="fitted: no held-out run"):
        sv.one_run(runs, runs, key, [], None, None, measured_times.CORE_BIN_S)


@pytest.fixture(scope="module")
def repeats():
    return sv.load_repeats()


def _turn_spread(log: pd.DataFrame) -> float:
    """p90 - p50 (s) of the turns of the rounds that draft nothing: from the client's last reply leaving the server to
    its next request reaching it."""
    v = verified(log).sort_values(["client", "round"])
    turn = v["arrival"] - v.groupby("client")["end"].shift(1)
    t = turn[(v["round"] > 0) & (v["S"] == 0)]
    return float(t.quantile(0.9) - t.quantile(0.5))


def test_the_kind_one_run_keeps_one_runs_state_within_a_twin_run(repeats):
    """WISP's setting, one client: the real runs' drafting levels differ from run to run (x 1.5 between the slowest and
    the fastest), each steady within its run. Drawn from every held-out run pooled, the twin's turns spread over
    every run's level within one run (p90 - p50 1.5 ms, the real run 1.2 ms); drawn from one run, over one (0.5-0.8)."""
    key = ("li2026", "WISP", 1, 2)
    assert sv.KINDS["one run"] - sv.KINDS["busy periods"] == {"one"}
    trace, prompt = sv.acceptances("li2026")
    ctx = sv.contexts(repeats, "li2026", trace, prompt, keys=[key])[key]
    one = np.mean([_turn_spread(ctx.stochastic("one run", s)) for s in (0, 1)])
    pooled = np.mean([_turn_spread(ctx.stochastic("busy periods", s)) for s in (0, 1)])
    assert one < 0.7 * pooled and pooled > 1.0e-3
    # the seeds are different runs' states: their drafting levels differ, a seed's twin is the same whenever run
    a, b = ctx.stochastic("one run", 0), ctx.stochastic("one run", 1)
    assert verified(a)["t_draft"].median() != pytest.approx(verified(b)["t_draft"].median(), rel=0.02)
    pd.testing.assert_frame_equal(a, ctx.stochastic("one run", 0))


def test_a_variants_value_is_the_median_over_its_seeds_of_each_seeds_own(monkeypatch):
    """The judge of a twin's seeds (``twin_attribution.differences``): a seed is one run. Five seeds of one client whose
    machine states differ: pooled, the clients' p90 would be a quantile over the seeds (22.4 tok/s, +124 %)."""
    from specedge.serving.analysis import twin_attribution, validation

    monkeypatch.setattr(validation, "metric_values", lambda log: {m: np.asarray(v, float) for m, v in log.items()})
    real = {"goodput_tok_s": [10.0], "round_time_s": [1.0, 2.0, 3.0]}
    seeds = [{"goodput_tok_s": [g], "round_time_s": [r, r + 2.0, r + 4.0]}
             for g, r in ((8.0, 1.0), (9.0, 3.0), (10.0, 0.0), (11.0, 2.0), (30.0, 9.0))]
    rows = {(r["metric"], r["quantile"]): r for r in twin_attribution.differences(real, seeds)}
    assert rows["goodput_tok_s", "p90"]["twin"] == 10.0 and rows["goodput_tok_s", "p90"]["diff_pct"] == 0.0
    assert rows["goodput_tok_s", "p50"]["twin"] == 10.0
    assert rows["round_time_s", "p50"]["twin"] == 4.0          # each seed's p50 (3, 5, 2, 4, 11): their median
    assert rows["round_time_s", "p50"]["diff_pct"] == pytest.approx(100.0)
    assert rows["round_time_s", "p90"]["twin"] == pytest.approx(4.0 + 1.6)   # each seed's p90 is its p50 + 1.6
    one = {(r["metric"], r["quantile"]): r["twin"] for r in twin_attribution.differences(real, seeds[4:])}
    assert one["goodput_tok_s", "p90"] == 30.0 and one["round_time_s", "p50"] == 11.0   # one seed: its own
    with pytest.raises(ValueError, match="logs: no seed"):
        twin_attribution.differences(real, [])
