"""The arena's real-run spot check (experiments.edge_sd_arena.spotcheck): the comparison's arithmetic, the judgement
against the twin's validated error, the committed runs' schema, and the greedy drafter's rows on the wire."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from specedge import zoo
from specedge.experiments.edge_sd_arena import runs as arena, spotcheck as spot
from specedge.experiments.edge_sd_arena.results import replay_error_pct, stochastic_error_pct
from specedge.serving.real.codec import payload_bytes, request_from_wire, request_to_wire
from specedge.serving.real.drafter import Drafter
from specedge.serving.real.verifier import Verifier


@pytest.fixture(scope="module")
def runs():
    return spot.load_runs()


def test_the_committed_runs_are_every_combination_at_every_size(runs):
    assert sorted(runs) == sorted((spot.PAPER, c.label, n) for c in spot.COMBOS for n in spot.SIZES)
    for key, log in runs.items():
        assert (log["event"] == "").all(), key
        assert set(log["client"]) == set(range(key[2])), key
        assert (log["bandwidth_bps"] == spot.BANDWIDTH).all() and (log["rtt_s"] == arena.load_scenario().rtt_s).all()


def test_the_real_wire_carries_the_bytes_the_twin_charges(runs):
    """Each run's requests of 4 drafts (the greedy drafters' one-hot rows for the dense payload, ids alone
    otherwise) are within 1 % (or 16 bytes: the drafter's send stamp t_sent, a double, and varints) of the codec's
    size the arena's twin charges (``codec.payload_bytes``), so the emulated link waits what the twin's link
    model predicts."""
    for (_, label, _), log in runs.items():
        payload = arena.from_label(label).payload
        real = log.loc[log["S"] == 4, "bytes_up"].median()
        twin = payload_bytes(payload, 4, 8192, arena.load_scenario().top_k)
        assert abs(real - twin) <= max(0.01 * twin, 16), (label, real, twin)


def _fake_twins(scale):
    """A twin whose prediction is the real log itself, its round times scaled by ``scale`` in the replay."""
    def twins(real, key, others, acceptance, scn, seed=0):
        return {"replay": real.assign(t_round=real["t_round"] * scale), "stochastic": real}
    return twins


def test_compare_of_the_real_log_with_itself_is_zero_and_within(runs, monkeypatch):
    monkeypatch.setattr(spot, "twins", _fake_twins(1.0))
    monkeypatch.setattr(spot, "scenario", lambda seed=0: None)
    key = (spot.PAPER, spot.COMBOS[0].label, 2)
    t = spot.compare({key: runs[key]}, acceptance=object())
    assert set(t.metric) == set(spot.METRICS) and set(t.twin_mode) == {"replay", "stochastic"}
    assert (t.diff_pct == 0).all() and t.within.all()
    assert np.isclose(t.loc[t.metric == "round_time_s", "real"].iloc[0], runs[key]["t_round"].median())


def test_the_within_decision_flips_when_the_difference_exceeds_the_validated_error(runs, monkeypatch):
    monkeypatch.setattr(spot, "twins", _fake_twins(1.08))
    monkeypatch.setattr(spot, "scenario", lambda seed=0: None)
    key = (spot.PAPER, spot.COMBOS[1].label, 2)
    for err, within in ((10.0, True), (7.0, False)):
        errors = {(m, mode): err for m in spot.METRICS for mode in ("replay", "stochastic")}
        t = spot.compare({key: runs[key]}, acceptance=object(), errors=errors)
        row = t[(t.metric == "round_time_s") & (t.twin_mode == "replay")].iloc[0]
        assert np.isclose(row.diff_pct, 8.0) and row.twin_error_pct == err and bool(row.within) is within
    with pytest.raises(ValueError, match="no spot-check run with N in"):
        spot.compare({key: runs[key]}, acceptance=object(), sizes=(3,))


def test_the_committed_runs_through_the_twin_at_n_2():
    """The pipeline on the committed N = 2 runs (no real process): the replay with each run's measured passes
    reproduces goodput and round time within 1 % (the queueing and batching model given the verifier's speed),
    and exactly the rows outside the validated error carry a mechanism."""
    table, mech = spot.spotcheck(sizes=(2,))
    assert set(table.n_clients) == {2} and len(mech) == len(spot.COMBOS)
    assert set(table.twin_mode) == {"replay", spot.MEASURED, "stochastic"}
    m = table[(table.twin_mode == spot.MEASURED) & table.metric.isin(["goodput_tok_s", "round_time_s"])]
    assert len(m) == 2 * len(spot.COMBOS) and (m.abs_diff_pct < 1).all(), m
    assert ((table.why != "") == ~table.within.astype(bool)).all()
    assert (mech.replay_mismatched == 0).all()


def test_validated_errors_come_from_the_committed_validation_tables():
    assert spot.validated_error("goodput_tok_s", "replay") == replay_error_pct("goodput_tok_s") > 0
    assert spot.validated_error("round_time_s", "replay") == replay_error_pct("round_time") > 0
    stoch = spot.validated_error("round_time_s", "stochastic")
    assert stoch == stochastic_error_pct("round_time") and stoch != spot.validated_error("round_time_s", "replay")
    with pytest.raises(ValueError, match="twin: expected"):
        spot.validated_error("goodput_tok_s", "oracle")


def test_outside_names_each_row_beyond_the_error_with_its_measured_mechanism():
    key = ["combination", "n_clients"]
    rows = [dict(combination="fixed / ids / fcfs", n_clients=8, metric="goodput_tok_s", twin_mode=mode, real=20.0,
                 twin=20.0 * (1 + d / 100), diff_pct=d, twin_error_pct=6.2, within=abs(d) <= 6.2)
            for mode, d in (("replay", 8.8), (spot.MEASURED, 3.3), ("stochastic", 5.0))]
    mech = pd.DataFrame([dict(zip(key, ("fixed / ids / fcfs", 8)), pass_vs_eq19_other_runs=1.34, verifier_core_share=0.84,
                              load_1min=3.7, per_pass_real=1.87, per_pass_replay=1.12, accepted_real=0.6, accepted_twin=0.7,
                              round_p90_ms_real=100.0, round_p90_ms_twin=70.0)])
    o = spot.outside(pd.DataFrame(rows), mech)
    assert len(o) == 1 and o.twin_mode.iloc[0] == "replay"
    assert "1.34x eq (19)" in o.why.iloc[0] and "1.87 requests per pass against 1.12" in o.why.iloc[0]
    assert "measured passes the replay differs by +3.3 %" in o.why.iloc[0]
    assert spot.outside(pd.DataFrame(rows).assign(within=True), mech).empty
    # SLO attainment beyond its error: the threshold named, and where the error was measured
    slo = [dict(rows[2], metric="slo_attainment", real=0.66, twin=0.95, diff_pct=44.0, twin_error_pct=30.0, within=False)]
    o = spot.outside(pd.DataFrame(slo), mech)
    assert len(o) == 1 and "while here the 8 tok/s class binds (real p50 0.660)" in o.why.iloc[0]
    assert "its 30.00 % is measured on WISP's setting with classes that bind" in o.why.iloc[0]
    assert "0.70 accepted tokens per round against the run's 0.60" in o.why.iloc[0]
    # the replay's error is the replay validation's, on runs whose classes never bound
    o = spot.outside(pd.DataFrame([dict(slo[0], twin_mode="replay", twin_error_pct=0.5)]), mech)
    assert "the validation's classes never bound (its lowest p50 1.000), so its 0.50 % is measured at attainment 1" in o.why.iloc[0]


def test_the_runs_schema_is_checked_naming_the_file_and_column(runs, tmp_path):
    log = next(iter(runs.values()))
    with pytest.raises(ValueError, match=r"runs.csv: missing column\(s\) \['rtt_s'\]"):
        spot.check_runs(log.drop(columns="rtt_s"), tmp_path / "runs.csv")
    with pytest.raises(ValueError, match=r"runs.csv: column 'bandwidth_bps'"):
        spot.check_runs(log.assign(bandwidth_bps=-1.0), tmp_path / "runs.csv")
    with pytest.raises(ValueError, match=r"runs.csv: column 'policy': 'GOODSPEED' is not an arena combination"):
        spot.check_runs(log.assign(policy="GOODSPEED"), tmp_path / "runs.csv")
    bad = tmp_path / "bad.csv"
    log.drop(columns="up").to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"bad.csv: missing column\(s\) \['up'\]"):
        spot.load_runs(bad)
    with pytest.raises(FileNotFoundError, match="edge_sd_arena.spotcheck measure"):
        spot.load_runs(tmp_path / "absent.csv")


def test_a_greedy_drafter_with_rows_sends_one_hot_rows_and_verifies_the_same():
    """``greedy_rows``: the dense payload's bytes on the wire at T = 0, the verdicts unchanged."""
    draft, target = zoo.load_model("draft-xs"), zoo.load_model("target-m")
    prompt = zoo.load_tokenizer().encode(zoo.eval_prompts("code", 1)[0])[-24:]
    vocab = int(draft.config.vocab_size)
    outs, sizes = {}, {}
    for rows in (False, True):
        v, d = Verifier(target), Drafter(draft, prompt, 12, "s", greedy_rows=rows)
        while not d.done:
            req, _ = d.propose(4)
            msg = request_to_wire(req, client=0, round=d.rounds, token="t", top_k=None, vocab=vocab)
            sizes.setdefault(rows, msg.ByteSize())
            if rows:   # the one-hot rows of the greedy drafts (the server, verifying greedily, does not decode them)
                q = torch.from_numpy(np.frombuffer(msg.draft.probs, np.float32).copy()).view(len(req.draft_ids), vocab)
                assert torch.equal(q.sum(-1), torch.ones(len(req.draft_ids))) and q.argmax(-1).tolist() == req.draft_ids
            else:
                assert not msg.draft.probs
            d.commit(v.verify([request_from_wire(msg, vocab, 8)])[0])
        outs[rows] = d.output
    assert outs[True] == outs[False]
    assert sizes[True] > 4 * 4 * vocab > sizes[False]


def test_the_spot_check_refuses_combinations_it_cannot_run():
    scn = arena.load_scenario()
    for combo in (arena.Combination("as2", "ids", "fcfs"), arena.Combination(system=arena.CENTRALIZED)):
        with pytest.raises(ValueError, match="combo: the spot check runs edge combinations"):
            spot.point(combo, 2, scn)
    assert isinstance(spot.point(spot.COMBOS[2], 8, scn), arena.Point)


def test_each_twin_gets_the_runs_dispatch_and_turnaround_in_their_places(runs, monkeypatch):
    """The three predictions of one committed run take the server's wake-up on an arrival (``dispatch``) and its
    time between back-to-back passes (``turnaround``) as fitted on the other runs, each in its own argument."""
    from specedge.serving.analysis import validation

    seen = {}

    def spy(name, fn):
        def wrapped(*args, **kwargs):
            seen[name] = (args, kwargs)
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(spot, "replay", spy("replay", spot.replay))
    monkeypatch.setattr(validation, "replay_measured", spy("measured", validation.replay_measured))
    key = next(k for k in runs if k[2] == min(j[2] for j in runs))
    others = spot.sv.load_real_runs() | {j: v for j, v in runs.items() if j != key}
    spot.twins(runs[key], key, others, spot.acceptance_sources.acceptance(spot.ZOO), spot.scenario(0), 0)
    every = {**others, key: runs[key]}
    d, t = validation.dispatch(every, key), validation.turnaround(every, key)
    assert d != pytest.approx(float(np.median(t)))    # the two differ, so a swap shows
    assert seen["replay"][1]["dispatch"] == d
    np.testing.assert_array_equal(seen["replay"][1]["turnaround"], t)
    args = seen["measured"][0]
    assert args[5] == d
    np.testing.assert_array_equal(args[6], t)
