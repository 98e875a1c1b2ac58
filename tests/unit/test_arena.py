"""The edge SD arena: its metrics, its scenario checks, a run against the closed form, the plug-in
policy against GOODSPEED, and the results tables' verdicts."""
import dataclasses
import importlib.util
import re

import numpy as np
import pandas as pd
import pytest

from specedge import hardware, paths
from specedge.experiments.edge_sd_arena import runs as arena, capacity as arena_capacity, results as res
from specedge.serving.analysis import metrics
from specedge.serving import scenario
from specedge.serving.policies.allocation import GoodspeedAllocator
from specedge.serving.policies.as2_allocation import AS2Allocator
from specedge.serving.interfaces import REPLY_BYTES, Outcome
from specedge.serving.real.codec import payload_bytes
from specedge.serving.policies.slo_weighted_allocation import SLOWeightedGoodspeed
from specedge.serving.sim.twin import IIDAcceptance
from specedge.solvers import zheng2025

GAMMA, RTT, BW, T_D = 4, 0.02, 1e8, 0.004


# --------------------------------------------------------------------------- metrics
def test_jain_is_one_for_equal_values_and_one_over_n_for_one_client():
    assert metrics.jain([3.0, 3.0, 3.0, 3.0]) == pytest.approx(1.0)
    assert metrics.jain([0.0, 0.0, 5.0]) == pytest.approx(1 / 3)
    assert metrics.jain([1.0, 2.0]) == pytest.approx(9 / 10)
    for bad in ([], [1.0, -1.0], [0.0, 0.0], [1.0, np.nan]):
        with pytest.raises(ValueError, match="values"):
            metrics.jain(bad)


def test_tokens_per_pass_and_uplink_bytes_per_token():
    log = pd.DataFrame(dict(batch=[0, 0, 1, 2], tokens=[3, 5, 1, 4], bytes_up=[100, 100, 40, 60],
                            event=["", "", "", "dropped: x"]))
    assert metrics.tokens_per_pass(log) == pytest.approx(9 / 2)
    assert metrics.uplink_bytes_per_token(log) == pytest.approx(240 / 9)
    with pytest.raises(ValueError, match="no verified rounds"):
        metrics.tokens_per_pass(log.assign(event="dropped"))


def _log(rounds):
    """A log of one client: rounds (tokens, t_round), back to back from t = 0, t_send 0."""
    end = np.cumsum([t for _, t in rounds])
    return pd.DataFrame(dict(client=0, tokens=[k for k, _ in rounds], t_round=[t for _, t in rounds], end=end, t_send=0.0,
                             slo_class=8, event=""))


def test_ttft_is_the_first_round_and_tpot_the_rest_per_token():
    # two 6-token responses: rounds (3 tok, 0.5 s) (3 tok, 0.2 s) | (1 tok, 0.4 s) (5 tok, 0.1 s); a third running
    log = _log([(3, 0.5), (3, 0.2), (1, 0.4), (5, 0.1), (2, 0.3)])
    r = metrics.first_token_times(log, metrics.responses(log, 6, horizon=2.0))
    assert r.ttft.tolist() == pytest.approx([0.5, 0.4, 0.3])
    assert r.tpot.iloc[:2].tolist() == pytest.approx([0.2 / 5, 0.1 / 5])
    assert np.isnan(r.tpot.iloc[2])                    # incomplete: no TPOT
    with pytest.raises(ValueError, match="no round of the log"):
        metrics.first_token_times(log, metrics.responses(log, 6, horizon=2.0).iloc[:1].assign(start=9.0))


# --------------------------------------------------------------------------- the scenario
def test_the_committed_scenario_loads_at_both_scales():
    full, ci = arena.load_scenario(), arena.load_scenario(scale="ci")
    assert dict(full.device_classes) == {"l4": 0.004, "phone": 0.02, "jetson": pytest.approx(0.334 / 4)}
    assert dict(full.server)["c"] == hardware.load_profile("li2026_paper").coefficients("verify")["c"]
    assert full.seeds >= 5 and ci.horizon_s < full.horizon_s and ci.reference[1] in ci.devices


def _broken(tmp_path, edit) -> str:
    text = (scenario.SCENARIOS / "arena_default.yaml").read_text()
    path = tmp_path / "arena_default.yaml"
    path.write_text(edit(text))
    with pytest.raises(hardware.ProfileError) as e:
        arena.load_scenario(path)
    assert str(path) in str(e.value)
    return str(e.value)


def test_scenario_errors_name_the_file_and_the_key(tmp_path):
    assert "key 'server.memory_gb' missing" in _broken(tmp_path, lambda t: t.replace("  memory_gb: 14.0", ""))
    assert "key 'mixes.mixed'" in _broken(tmp_path, lambda t: t.replace("[l4, phone, jetson]", "[l4, tablet]"))
    assert "key 'device_classes.l4.runtime'" in _broken(tmp_path, lambda t: t.replace("runtime: draft_small", "runtime: verify"))
    assert "key 'workload.temperature'" in _broken(tmp_path, lambda t: t.replace("temperature: 0.0", "temperature: 0.5"))
    assert "key 'sweep.reference'" in _broken(tmp_path, lambda t: t.replace("devices: 8, mix: mixed}", "devices: 9, mix: mixed}"))
    assert "key 'workload.gamma'" in _broken(tmp_path, lambda t: t.replace("gamma: 4 ", "gamma: 6 "))
    assert "key 'server.runtime'" in _broken(tmp_path, lambda t: t.replace("profile: li2026_paper", "profile: tran2025_paper"))
    assert "key 'capacity.attainment'" in _broken(tmp_path, lambda t: t.replace("attainment: 0.8", "attainment: 1.5"))
    assert "key 'capacities'" in _broken(tmp_path, lambda t: t.replace("capacity:  ", "capacities:  "))   # a misspelt section
    assert "key 'ar_on_the_edge.target_to_draft_bytes'" in _broken(
        tmp_path, lambda t: t.replace("target_to_draft_bytes: 54.7", "target_to_draft_bytes: -1"))


def test_combinations_are_checked_and_ids_need_greedy():
    with pytest.raises(ValueError, match="payload"):
        arena.Combination(payload="sparse")
    assert arena.from_label("goodspeed / ids / wisp") == arena.Combination("goodspeed", "ids", "wisp")
    assert arena.Combination("wisp-stop", "ids", "fcfs").switched_off("former").label == "wisp-stop / ids / sync"
    scn = dataclasses.replace(arena.load_scenario(), temperature=1.0)
    with pytest.raises(ValueError, match="greedy"):
        arena.times(arena.Point(arena.Combination(payload="ids"), BW, 1, "fast", 0, scn), lambda b: 0.0)


def test_payload_sizes_are_the_codecs_messages():
    v, k = 151936, 32
    ids, topk, dense = (payload_bytes(p, 4, v, k) for p in ("ids", "topk", "dense"))
    assert ids < 100 < topk < dense
    assert payload_bytes("dense", 2, v, k) - payload_bytes("dense", 1, v, k) == pytest.approx(4 * v, abs=8)
    assert payload_bytes("topk", 2, v, k) - payload_bytes("topk", 1, v, k) == pytest.approx(8 * k, abs=8)


# --------------------------------------------------------------------------- one run against the closed form
def _quiet(**changes):
    """One L4 device class, eq (19) with only its per-token and per-pass terms, no noise, one-token prompts,
    responses longer than the run: every round costs the same."""
    scn = arena.load_scenario()
    values = dict(server=(("a", 3e-5), ("b_compute", 0.0), ("b_read", 0.0), ("c", 0.015)), noise=0.0, prompt_tokens=1,
                  max_new_tokens=10**6, horizon_s=30.0, warmup_s=1.0, rtt_s=RTT, device_classes=(("l4", T_D),),
                  mixes=(("fast", ("l4",)),), gamma=GAMMA)
    return dataclasses.replace(scn, **{**values, **changes})


def _links(payload="ids"):
    return RTT / 2 + 8 * payload_bytes(payload, GAMMA, 151936, 32) / BW, RTT / 2 + 8 * REPLY_BYTES / BW


def _round_time(payload="ids"):
    return GAMMA * T_D + sum(_links(payload)) + 3e-5 * (1 + GAMMA) + 0.015


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("payload", ["ids", "dense"])
def test_one_device_without_contention_meets_the_closed_form(alpha, payload):
    pt = arena.Point(arena.Combination("fixed", payload, "sync"), BW, 1, "fast", 0, _quiet())
    log = arena.run_log(pt, IIDAcceptance(alpha))
    r = _round_time(payload)
    assert log["t_round"].to_numpy() == pytest.approx(np.full(len(log), r), rel=1e-9)
    tokens = GAMMA + 1 if alpha == 1.0 else 1
    row = arena.measure(pt, log)
    # serving.analysis.metrics.client_goodput's span runs from the first round's drafting start as the server sees it (its
    # arrival minus its drafting: the first uplink left out) to the last reply's sending (its downlink left out)
    k = len(log)
    assert row["goodput_tok_s"] == pytest.approx(k * tokens / (k * r - sum(_links(payload))), rel=1e-9)
    assert row["goodput_tok_s"] == pytest.approx(tokens / r, rel=1e-2) and row["jain"] == 1.0
    assert row["tokens_per_pass"] == tokens
    assert row["uplink_bytes_per_token"] == pytest.approx(payload_bytes(payload, GAMMA, 151936, 32) / tokens)
    assert np.isnan(row["tpot_s"]) and np.isnan(row["ttft_s"])    # one endless response, started before warm-up


def _round(s: int, payload: str) -> float:
    """One round of s drafts on the quiet scenario: drafting, the request, eq (19) of 1 + s new tokens, the reply."""
    return s * T_D + RTT / 2 + 8 * payload_bytes(payload, s, 151936, 32) / BW + _links()[1] + 3e-5 * (1 + s) + 0.015


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("payload", ["ids", "dense"])
def test_ttft_and_tpot_of_one_device_meet_the_closed_form(alpha, payload):
    """64-token responses: a round drafts min(γ, left - 1) and commits all of them + 1 (α = 1) or 1 (α = 0);
    TTFT = the first round, TPOT = the other rounds' time over the 63 tokens after the first round's."""
    pt = arena.Point(arena.Combination("fixed", payload, "sync"), BW, 1, "fast", 0, _quiet(max_new_tokens=64, horizon_s=120.0))
    row = arena.measure(pt, arena.run_log(pt, IIDAcceptance(alpha)))
    left, times, first = 64, [], None
    while left > 0:
        s = min(GAMMA, left - 1)
        tokens = min(s + 1 if alpha == 1.0 else 1, left)
        times.append(_round(s, payload))
        first = tokens if first is None else first
        left -= tokens
    assert row["ttft_s"] == pytest.approx(times[0], rel=1e-9) and row["ttft_max_s"] == row["ttft_s"]
    assert row["tpot_s"] == pytest.approx(sum(times[1:]) / (64 - 1), rel=1e-9)
    assert first == (GAMMA + 1 if alpha else 1)


def test_one_device_iid_acceptance_meets_the_expected_tokens_per_round():
    a = 0.6
    pt = arena.Point(arena.Combination("fixed", "ids", "fcfs"), BW, 1, "fast", 0, _quiet(horizon_s=300.0))
    row = arena.measure(pt, arena.run_log(pt, IIDAcceptance(a)))
    assert row["goodput_tok_s"] == pytest.approx((1 - a ** (GAMMA + 1)) / (1 - a) / _round_time(), rel=0.02)


def test_with_one_device_every_former_gives_the_same_rounds():
    logs = [arena.run_log(arena.Point(arena.Combination("fixed", "ids", f), BW, 1, "fast", 3, _quiet(horizon_s=10.0)))
            for f in arena.FORMERS]
    cols = ["round", "S", "accepted", "tokens", "t_round", "end"]
    for lg in logs[1:]:
        pd.testing.assert_frame_equal(lg[cols], logs[0][cols])


# --------------------------------------------------------------------------- AR on the edge
def test_ar_on_the_edge_decodes_one_target_token_per_step_of_the_derived_time():
    assert arena.load_scenario().target_to_draft_bytes == pytest.approx(54.7)   # Qwen3-32B / Qwen3-0.6B: the server's target
    scn = dataclasses.replace(arena.load_scenario(), target_to_draft_bytes=2.27)    # fast enough that every device answers
    pt = arena.Point(arena.Combination(system=arena.AR_EDGE), BW, 3, "mixed", 0, scn)
    row = arena.run_point(pt)
    t = [scn.ar_s(i, "mixed") for i in range(3)]
    assert t[0] == pytest.approx(0.004 * scn.target_to_draft_bytes)
    per_device = [1 / x for x in t]                     # goodput = 1 / time per token, on each device
    assert row["goodput_tok_s"] == pytest.approx(np.mean(per_device), rel=1e-9)
    assert row["goodput_min_tok_s"] == pytest.approx(min(per_device), rel=1e-9)
    assert row["jain"] == pytest.approx(metrics.jain(per_device), rel=1e-9)
    assert row["ttft_s"] == pytest.approx(np.mean(t), rel=1e-9) and row["ttft_max_s"] == pytest.approx(max(t), rel=1e-9)
    # TPOT over complete responses: the Jetson's (64 x 0.19 s) started after warm-up ends past the horizon
    assert row["tpot_s"] == pytest.approx(np.mean(t[:2]), rel=1e-9) and 64 * t[2] > (scn.horizon_s - scn.warmup_s) / 2
    assert row["uplink_bytes_per_token"] == 0.0 and np.isnan(row["tokens_per_pass"])
    # the SLO classes 4, 8, 16 tok/s of devices 0..2: the Jetson's 1 / t[2] tok/s misses 16, the others meet theirs
    assert 1 / t[2] < 16 and 1 / t[1] >= 8
    resp = metrics.response_violations(arena.run_log(pt), scn.max_new_tokens, scn.warmup_s, scn.horizon_s)
    assert resp.groupby("client").violated.all().tolist() == [False, False, True]
    assert row["slo_attainment"] == pytest.approx(1 - resp.violated.mean())
    assert arena.run_point(dataclasses.replace(pt, bandwidth_bps=1e7, seed=5)) == {**row, "bandwidth_bps": 1e7, "seed": 5}


# --------------------------------------------------------------------------- capacity
def test_capacity_is_the_largest_n_a_brute_force_scan_finds():
    """A scenario whose SLO attainment falls with N (centralized serving of one class): the bisection's
    capacity equals the largest N of a full scan meeting the level, and the N past it misses."""
    scn = dataclasses.replace(arena.load_scenario(scale="ci"), horizon_s=6.0, warmup_s=1.0, seeds=1, slo_classes=(32,),
                              capacity_attainment=0.8, capacity_max_devices=24)
    combo = arena.Combination(system=arena.CENTRALIZED)
    seed = arena.sweep.seeds(0, 1)[0]
    att = {}
    for n in range(1, 25):
        r = arena.run_point(arena.Point(combo, BW, n, "mixed", seed, scn))
        att[n] = 1 - r["violations"] / r["responses"] if r["responses"] else 0.0
    scan = max((n for n in att if all(att[m] >= 0.8 - 1e-12 for m in range(1, n + 1))), default=0)
    assert 1 < scan < 24 and att[scan + 1] < 0.8
    got = arena_capacity.capacity_of(arena_capacity.Search(combo, BW, "mixed", 0, scn, None))
    assert got["capacity"] <= scan <= got["capacity"] + got["resolution"] and not got["censored"]
    assert got["attainment_at_capacity"] == pytest.approx(att[got["capacity"]])
    exact = arena_capacity.capacity_of(arena_capacity.Search(combo, BW, "mixed", 0, scn, 16))
    assert exact["capacity"] <= scan <= exact["capacity"] + exact["resolution"]


def test_capacity_first_bracket_is_the_sweeps_smallest_missing_n():
    scn = arena.load_scenario(scale="ci")
    rows = pd.DataFrame(dict(combination="c", bandwidth_bps=BW, mix="fast", devices=[2, 2, 4, 4, 8],
                             violations=[0, 1, 1, 3, 9], responses=[10, 10, 10, 10, 10]))
    assert arena_capacity.first_bracket(rows, "c", BW, "fast", scn) == 4            # 4/20 > 1 - 0.8 at N = 4
    assert arena_capacity.first_bracket(rows[rows.devices == 2], "c", BW, "fast", scn) is None


# --------------------------------------------------------------------------- the plug-in
def test_slo_weighted_goodspeed_with_equal_weights_is_goodspeed():
    rng = np.random.default_rng(0)
    g, w = GoodspeedAllocator(12, beta=0.5), SLOWeightedGoodspeed(12, weights={c: 8.0 for c in range(3)}, beta=0.5)
    assert g.initial([0, 1, 2]) == w.initial([0, 1, 2])
    for _ in range(200):
        alloc = g._solve()
        outs = [Outcome(c, s, int(n), float(n)) for c, s in alloc.items() for n in [min(s, rng.geometric(0.3 + 0.2 * c) - 1)]]
        assert g.update(outs) == w.update(outs)


def test_slo_weighted_goodspeed_in_the_twin_with_one_class_is_goodspeed():
    scn = dataclasses.replace(arena.load_scenario(scale="ci"), slo_classes=(8,), horizon_s=6.0, warmup_s=1.0)
    run = lambda d: arena.run_log(arena.Point(arena.Combination(d, "ids", "fcfs"), BW, 4, "mixed", 1, scn))
    a, b = run("goodspeed"), run("goodspeed-slo")
    assert len(a) > 100
    pd.testing.assert_frame_equal(a.drop(columns="policy"), b.drop(columns="policy"))


def test_slo_weighted_goodspeed_gives_the_tighter_class_more_drafts():
    w = SLOWeightedGoodspeed(8, weights={0: 2.0, 1: 32.0}, beta=0.5)
    alloc = w.initial([0, 1])
    for _ in range(50):
        alloc = w.update([Outcome(c, s, s // 2, s / 2) for c, s in alloc.items()])
    assert alloc[1] > alloc[0]
    with pytest.raises(ValueError, match="no weight for clients \\[2\\]"):
        SLOWeightedGoodspeed(8, weights={0: 1.0, 1: 1.0}).initial([0, 1, 2])


# --------------------------------------------------------------------------- results over seeds
def _rows(gap: float):
    """Two combinations at one point over five seeds: B above A by ``gap`` tok/s (plus seed noise)."""
    out = []
    for s, noise in enumerate([0.1, -0.2, 0.05, 0.15, -0.1]):
        for label, g in (("fixed / dense / sync", 10.0), ("fixed / ids / sync", 10.0 + gap)):
            c = arena.from_label(label)
            out.append(dict(combination=label, draft=c.draft, payload=c.payload, former=c.former, bandwidth_bps=BW,
                            devices=2, mix="fast", seed=s, goodput_tok_s=g + noise, jain=1.0 - 0.01 * (label == "fixed / ids / sync"),
                            slo_attainment=1.0))
    return pd.DataFrame(out)


def test_regime_map_names_a_winner_only_beyond_the_seeds_interval(monkeypatch):
    monkeypatch.setattr(res, "twin_error_pct", lambda m, files=None, twin=res.TWIN: 10.0)
    win = res.regime_map(_rows(2.0), ("goodput_tok_s",)).iloc[0]
    assert win.winner == "fixed / ids / sync" and win.verdict == "wins" and win.margin == pytest.approx(2.0)
    assert win.margin_pct == pytest.approx(20.0, rel=0.01)
    assert win.beyond_twin_error and win.twin_error_pct == 10.0
    tie = res.regime_map(_rows(0.0), ("goodput_tok_s",)).iloc[0]
    assert tie.verdict == "tie" and win.n_best == 1
    assert res.regime_map(_rows(2.0), ("slo_attainment",)).iloc[0].n_best == 2     # both at 1.0
    small = res.regime_map(_rows(0.3), ("goodput_tok_s",)).iloc[0]     # 3 %: beyond the seeds' interval, not the twin's error
    assert small.verdict == "wins" and not small.beyond_twin_error
    rows = _rows(2.0)
    ar = rows[rows.combination == "fixed / ids / sync"].assign(combination=arena.AR_EDGE, goodput_tok_s=24.0)
    beside = res.regime_map(pd.concat([rows, ar]), ("goodput_tok_s",)).iloc[0]      # AR on the edge: beside, no candidate
    assert beside.winner == "fixed / ids / sync" and beside.ar_on_the_edge_mean == 24.0
    assert beside.ar_on_the_edge_vs_winner_pct == pytest.approx(100 * (24.0 - beside.winner_mean) / beside.winner_mean)


def test_twin_error_is_the_stochastic_twins_against_real_runs_worst_of_both_settings(tmp_path):
    """The arena's margins are judged against the stochastic twin's validated error (the twin kind it runs, per
    setting, the worse of the two), never the replay's."""
    from specedge.serving.analysis import twin_error

    files = {}
    for setting, errs in (("tran2025", [-4.0, 30.0, 2.0, 80.0]), ("li2026", [-9.0, 1.0, 3.0, 1.0])):
        files[setting] = tmp_path / f"{setting}_stochastic_vs_real.csv"
        pd.DataFrame(dict(metric=["goodput_tok_s"] * 3 + ["queue_s"], quantile=["p50", "p90", "p50", "p50"],
                          component=res.TWIN, diff_pct=errs)).to_csv(files[setting], index=False)
    assert res.twin_error_pct("goodput_tok_s", files) == 9.0            # li2026's 9 %, not the p90 or queueing
    assert np.isnan(res.twin_error_pct("jain", files))
    other = {s: f for s, f in files.items()}
    pd.read_csv(files["li2026"]).assign(component="another twin").to_csv(tmp_path / "x_stochastic_vs_real.csv", index=False)
    other["li2026"] = tmp_path / "x_stochastic_vs_real.csv"
    assert res.twin_error_pct("goodput_tok_s", other) == 4.0            # only rows of the arena's twin kind count
    committed = res.twin_error_pct("goodput_tok_s")
    assert committed == max(twin_error.stochastic_pct("goodput_tok_s", s, res.TWIN) for s in twin_error.SETTINGS)
    assert committed != res.replay_error_pct("goodput_tok_s")
    # SLO attainment, equal in every committed run (the classes never bind), is judged by its error where they bind:
    # WISP's setting's table of those runs beside its own (the arena's twin kind, p50), GOODSPEED's has none
    pd.DataFrame(dict(metric="slo_attainment", quantile=["p50", "p50", "p90", "p50"], repeat=[1, 2, 1, 1],
                      component=[res.TWIN, res.TWIN, res.TWIN, twin_error.VALIDATED],
                      diff_pct=[-30.0, 5.0, 90.0, 60.0])).to_csv(tmp_path / "li2026_slo_binding_vs_real.csv", index=False)
    assert res.twin_error_pct("slo_attainment", files) == 30.0
    with pytest.raises(FileNotFoundError, match="slo_binding_vs_real"):
        res.twin_error_pct("slo_attainment", other)
    with pytest.raises(ValueError, match="stochastic_vs_real"):
        res.twin_error_pct("slo_attainment", {"li2026": tmp_path / "s.csv"})
    assert res.twin_error_pct("slo_attainment") == twin_error.margin_error("slo_attainment", "li2026")[0] > 0


def test_regime_map_judges_margins_against_the_stochastic_error(monkeypatch):
    """A margin between the replay's and the stochastic twin's error is a tie by the twin's error."""
    monkeypatch.setattr(res, "twin_error_pct", lambda m, files=None, twin=res.TWIN: 25.0)
    win = res.regime_map(_rows(2.0), ("goodput_tok_s",)).iloc[0]     # a 20 % margin
    assert win.verdict == "wins" and win.twin_error_pct == 25.0 and not win.beyond_twin_error


def test_technique_map_and_pareto_front():
    t = res.technique_map(_rows(2.0)).set_index("technique")
    assert list(t.index) == ["payload"] and t.loc["payload", "on_option"] == "ids"
    assert t.loc["payload", "change_pct"] == pytest.approx(20.0, rel=0.01) and t.loc["payload", "verdict"] == "wins"
    front = res.pareto(_rows(2.0), (BW, 2, "fast")).set_index("combination")
    assert front.front.all()           # ids: more goodput, dense: fairer: neither dominates
    rows = _rows(2.0).assign(jain=1.0)
    front = res.pareto(rows, (BW, 2, "fast")).set_index("combination")
    assert front.front.to_dict() == {"fixed / ids / sync": True, "fixed / dense / sync": False}
    cen = rows[rows.combination == "fixed / ids / sync"].assign(combination=arena.CENTRALIZED, goodput_tok_s=50.0)
    front = res.pareto(pd.concat([rows, cen]), (BW, 2, "fast")).set_index("combination")
    assert not front.loc[arena.CENTRALIZED, "front"] and front.loc["fixed / ids / sync", "front"]   # the reference is no candidate
    assert front.front_with_references.to_dict() == {arena.CENTRALIZED: True, "fixed / ids / sync": False, "fixed / dense / sync": False}


def test_readme_section_is_generated_from_the_committed_csvs():
    spec = importlib.util.spec_from_file_location("arena_readme", paths.ROOT / "tools" / "arena_readme.py")
    doc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc)
    assert not doc.update_readme(check=True), \
        "docs/arena.md results are stale: run `make readme` (python tools/arena_readme.py)"
    block = doc.DOC.read_text().split(doc.README_START)[1].split(doc.README_END)[0]
    assert len(re.findall(r"[.;] ", block)) >= 3


def test_the_sweep_holds_every_combination_at_every_point_and_the_plug_in_at_the_reference():
    scn = arena.load_scenario(scale="ci")
    pts = arena.arena_points(scn, 0)
    grid = len(scn.bandwidths) * len(scn.devices) * len(scn.mixes) * (4 * 3 * 3 + 2) * scn.seeds
    plug = [p for p in pts if p.combo.draft == arena.PLUG_IN]
    assert len(pts) == grid + len(plug) and len(plug) == 9 * scn.seeds
    assert {(p.bandwidth_bps, p.devices, p.mix) for p in plug} == {scn.reference}
    assert len({p.seed for p in pts}) == scn.seeds


def test_a_point_is_a_pure_function_of_its_values():
    scn = dataclasses.replace(arena.load_scenario(scale="ci"), horizon_s=5.0, warmup_s=1.0)
    pt = arena.Point(arena.Combination("goodspeed", "topk", "wisp"), 1e7, 3, "mixed", 7, scn)
    a, b = arena.run_point(pt), arena.run_point(pt)
    assert a == b and a["responses"] >= 0
    other = arena.run_point(dataclasses.replace(pt, seed=8))
    assert other["goodput_tok_s"] != a["goodput_tok_s"]


# --------------------------------------------------------------------------- AS² as an allocator
def test_as2_allocator_gives_the_decoding_policys_gamma_for_the_same_rounds():
    rng = np.random.default_rng(2)
    alloc = AS2Allocator({0: 0.2, 1: 0.05, 2: 1.3}, alpha0=0.6)
    policy = {c: zheng2025.as2_policy(0.6, L) for c, L in ((0, 0.2), (1, 0.05))}
    history = {0: [], 1: [], 2: []}
    s = alloc.initial([0, 1, 2])
    for _ in range(150):
        assert s[0] == policy[0](None, history[0]) and s[1] == policy[1](None, history[1])
        assert s[2] == 0                   # L >= 1: the standalone LLM is faster, no draft
        outs = [Outcome(c, g, int(min(g, rng.geometric(0.35 + 0.2 * c) - 1)), 0.0) for c, g in s.items()]
        for o in outs:
            history[o.client].append(o)
        s = alloc.update(outs)
    assert s[1] >= s[0] >= 1                # the cheaper device drafts at least as long


def test_as2_costs_grow_with_the_payload_and_fall_with_bandwidth():
    scn = arena.load_scenario()
    cost = lambda p, bw: arena.as2_costs(arena.Point(arena.Combination("as2", p), bw, 3, "mixed", 0, scn))
    ids, dense = cost("ids", 1e8), cost("dense", 1e8)
    assert ids[0] < ids[1] < ids[2] and all(dense[i] > ids[i] for i in ids)
    assert cost("dense", 1e9)[0] < dense[0] and cost("ids", 1e7) == ids      # ids: no distribution on the wire


@pytest.mark.parametrize("L", [0.02, 0.1, 0.3, 0.6, 0.95])
def test_as2_gamma_does_not_fall_as_alpha_grows_so_the_lookup_is_exact(L):
    """MonotoneAS2 skips as2 between two computed alphas of equal γ*: exact only because γ*(alpha) does not
    fall (a dense grid), which the lookup then matches call for call on a random walk of estimates."""
    from specedge.serving.policies.as2_allocation import MonotoneAS2

    a = np.linspace(1e-6, 1 - 1e-6, 4001)
    g = np.array([zheng2025.as2(float(x), L) for x in a])
    assert (np.diff(g) >= 0).all()
    f, rng = MonotoneAS2(L), np.random.default_rng(1)
    walk = np.clip(0.5 + np.cumsum(rng.normal(0, 0.02, 3000)), 1e-6, 1 - 1e-6)
    assert [f(float(x)) for x in walk] == [zheng2025.as2(float(x), L) for x in walk]
    assert len(f.alphas) < len(walk) / 3          # most estimates were answered without as2


def test_pareto_labels_do_not_overlap(tmp_path):
    """The committed front (figures/edge_sd_arena/pareto.csv): every label drawn on the plot, the numbers of a
    crowded cluster in one label, and no two labels' boxes overlap (they did with one label per point)."""
    import matplotlib
    matplotlib.use("Agg")
    from specedge.experiments.edge_sd_arena import figures as figs

    front = pd.read_csv(res.FIGURES / "pareto.csv")
    fig = figs.pareto(front, tmp_path)
    fig.canvas.draw()
    ax = fig.axes[0]
    boxes = [t.get_window_extent() for t in ax.texts]
    assert boxes and sum(len(t.get_text().replace("–", ",").split(",")) for t in ax.texts) <= front.front.sum()
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert f"{front.front.sum():>2}  " in fig.axes[1].texts[0].get_text()       # the key names every point of the front


def test_the_runner_starts_the_arena_after_the_notebooks_whose_outputs_it_reads():
    """The arena reads the twin's validated error from tran2025's and li2026_serving's committed Validation tables
    (``arena_results.VALIDATION``): run together, ``notebooks.plan`` puts it after them, whatever its expected time."""
    from specedge import notebooks, papers

    nbs = notebooks.notebooks(None)
    order = [nb.stem for nb in notebooks.plan(nbs)]
    assert order.index("edge_sd_arena") > max(order.index("tran2025_goodspeed"), order.index("li2026_wisp_serving"))
    assert sorted(order) == sorted(nb.stem for nb in nbs)                       # nothing lost or doubled
    alone = notebooks.plan(notebooks.notebooks(["edge_sd_arena", "zheng2025"]))   # without them: by expected time
    assert [nb.stem for nb in alone] == sorted(["edge_sd_arena", "zheng2025_tk_slt"],
                                                key=lambda stem: -papers.MANIFEST.expected_s[stem])
    read = {f.parent.name for f in res.VALIDATION}
    assert read == set(papers.MANIFEST.notebooks["edge_sd_arena"].reads) == {"tran2025", "li2026_serving"}


def test_committed_margins_are_judged_against_the_stochastic_twins_error():
    """Every committed regime-map row carries the stochastic twin's validated error of its metric (not the replay's),
    and its beyond_twin_error says whether the margin exceeds exactly that error."""
    from specedge import paths

    regime = pd.read_csv(paths.FIGURES / "edge_sd_arena" / "regime_map.csv")
    for metric, g in regime.groupby("metric"):
        want = res.twin_error_pct(metric)
        assert np.allclose(g.twin_error_pct.astype(float), want, equal_nan=True), metric
        if want == want:
            assert want != res.replay_error_pct(metric)
            assert (g.beyond_twin_error == (g.margin_pct.abs() > want)).all(), metric
        else:
            assert not g.beyond_twin_error.any(), metric
