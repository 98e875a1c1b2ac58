"""li2026's serving mechanisms and held-out statements on hand-made logs and tables
(``experiments.li2026.serving_mechanisms``, ``experiments.li2026.serving_heldout``)."""
import math

import numpy as np
import pandas as pd
import pytest

from specedge.experiments.li2026 import serving_heldout as ho
from specedge.experiments.li2026 import serving_mechanisms as mech
from specedge.serving.timemodels.estimator import Estimator
from specedge.serving.interfaces import Pending
from specedge.serving.policies.wisp_batching import WISPBatcher


def _log(rounds):
    """rounds: (client, class, tokens, t_draft, link, t_verify, t_queue), back to back per client from 0."""
    rows, clock = [], {}
    for b, (c, cls, tok, d, link, v, q) in enumerate(rounds):
        t_round = d + link + v + q
        start = clock.get(c, 0.0)
        clock[c] = start + t_round
        rows.append(dict(client=c, slo_class=cls, tokens=tok, t_draft=d, t_queue=q, t_verify=v, t_round=t_round, t_send=0.0,
                         end=start + t_round, start=start + d + link / 2 + q, batch=b, deadline=start + 1.0, event=""))
    return pd.DataFrame(rows)


def test_response_attribution_by_hand():
    """Four devices, one response of 4 tokens each in two rounds (max_new_tokens 4), each violated for a
    different reason: what the class allows is 4 / speed seconds.
    - client 0, 2 tok/s (2 s): drafting 0.4, link 0.2, verification 0.2, queueing 1.3: 2.1 s > 2 s, and
      without queueing 0.8 s: ``queueing``;
    - client 1, 8 tok/s (0.5 s): drafting 0.6 s alone exceeds it: ``drafting``;
    - client 2, 4 tok/s (1 s): drafting 0.4 + link 0.7 = 1.1 s: ``link``;
    - client 3, 4 tok/s (1 s): 0.4 + 0.2 + verification 0.5 = 1.1 s: ``verification``;
    - client 4, 2 tok/s: 1.0 s in all: met, no cause."""
    log = _log([(0, 2, 2, 0.2, 0.1, 0.1, 0.1), (0, 2, 2, 0.2, 0.1, 0.1, 1.2),
                (1, 8, 2, 0.3, 0.02, 0.05, 0.0), (1, 8, 2, 0.3, 0.02, 0.05, 0.0),
                (2, 4, 2, 0.2, 0.35, 0.01, 0.0), (2, 4, 2, 0.2, 0.35, 0.01, 0.0),
                (3, 4, 2, 0.2, 0.1, 0.25, 0.0), (3, 4, 2, 0.2, 0.1, 0.25, 0.0),
                (4, 2, 2, 0.2, 0.1, 0.1, 0.1), (4, 2, 2, 0.2, 0.1, 0.1, 0.1)])
    r = mech.response_attribution(log, 4, 0.0, 100.0).set_index("client")
    assert r.cause.to_dict() == {0: "queueing", 1: "drafting", 2: "link", 3: "verification", 4: ""}
    assert r.violated.to_dict() == {0: True, 1: True, 2: True, 3: True, 4: False}
    assert r.loc[0, ["drafting", "link", "verification", "queueing"]].tolist() == pytest.approx([0.4, 0.2, 0.2, 1.3])
    np.testing.assert_allclose(r[list(mech.PARTS)].sum(axis=1), r.seconds)      # the parts add up to the response
    t = mech.attribution_table(r.reset_index().assign(system="X")).set_index("speed")
    assert t.loc[4, "cause_link"] == 0.5 and t.loc[4, "cause_verification"] == 0.5 and t.loc[2, "violation_rate"] == 0.5


def test_the_recorder_sees_a_critical_stop():
    """Test 6 of test_wisp_algorithm1: C1, C2 critical, C2 overruns C1's deadline: the batch {C1} stopped in
    the critical phase (1 of 2 critical admitted), no request late."""
    est = Estimator(a=0.001, b_compute=0.0, b_read=0.0, c=0.010)
    q = [Pending(i, f"s{i}", 0, 0.0, n - 1, n, 0, deadline=d, expected_tokens=g)
         for i, (d, n, g) in enumerate([(0.019, 5, 1.0), (0.021, 5, 1.0), (1.0, 1, 10.0)])]
    rec = mech.Recorder(WISPBatcher(est, delta=0.01))
    assert [p.client for p in rec.form(q, 0.0, frozenset())] == [0]
    assert rec.decisions == [dict(now=0.0, queued=3, critical=2, late=0, batch=1, critical_admitted=1, stopped_in_critical=True)]
    assert rec.label == "WISP" and rec.form([], 0.0, frozenset()) == [] and len(rec.decisions) == 1


def _cap(values):
    idx = pd.MultiIndex.from_tuples([(t, s) for t in ("Qwen3-32B",) for s in ("SLED", "Centralized", "WISP")],
                                    names=["target", "system"])
    return pd.DataFrame(values, index=idx, columns=[2, 4, 6, 8], dtype=float)


PAPER = {"abstract-capacity-sled": 4.1, "abstract-capacity-centralized": 2.1}


def test_capacity_claims_by_hand_and_an_infinite_ratio_is_a_miss():
    """WISP 100/80/60/40 against centralized 50/44/35/30 (ratios 2.0, 1.82, 1.71, 1.33: falling, so "grows as the
    class tightens" fails) and SLED 40/20/10/0 (a zero: the abstract's largest ratio is infinite, the growth
    undefined). WISP leads by more than 10 % in every class but 4 tok/s? 80 > 44 * 1.1: it leads everywhere."""
    cap = _cap([[40, 20, 10, 0], [50, 44, 35, 30], [100, 80, 60, 40]])
    got = ho.capacity_claims(PAPER, cap, cap.astype(bool) & False, ["Qwen3-32B"])
    assert all(got[f"Sec 5.2.1: WISP has the highest capacity, Qwen3-32B, {sp} tok/s (1: holds)"] == (1.0, 1.0) for sp in (2, 4, 6, 8))
    assert got["Sec 5.2.1: WISP speedup vs Centralized grows as the class tightens, Qwen3-32B (1: holds)"] == (1.0, 0.0)
    assert math.isnan(got["Sec 5.2.1: WISP speedup vs SLED grows as the class tightens, Qwen3-32B (1: holds)"][1])
    assert got["Abstract: largest capacity speedup vs SLED, both targets, every class"] == (4.1, math.inf)
    assert got["Abstract: largest capacity speedup vs Centralized, both targets, every class"] == (2.1, 2.0)
    # a reading's capacities judged as WISP's
    both = pd.concat([cap, _cap([[1, 1, 1, 1]] * 3).xs("WISP", level="system", drop_level=False).rename(
        index={"WISP": "WISP-stop"}, level="system")])
    assert (ho.as_wisp(both, "WISP-stop").loc[("Qwen3-32B", "WISP")] == 1).all()
    assert set(ho.as_wisp(both, "WISP-stop").index.get_level_values("system")) == {"SLED", "Centralized", "WISP"}


def test_load_claims_by_hand():
    """Two seeds, loads 20 and 40; 8 tok/s: both violate at 40, WISP 0.5/0.6 vs FCFS 0.2/0.3 (WISP above:
    fails), nothing at 20 (skipped): share 0. Knee at eps 0.05: both at 40: not larger (0). 2 tok/s: no
    violation anywhere: no load to compare (NaN) and no knee on either side (NaN)."""
    rows = []
    for sys_, rate in (("WISP", (0.5, 0.6)), ("FCFS", (0.2, 0.3))):
        for n in (20, 40):
            for k in (0, 1):
                r = dict(system=sys_, devices=n, seed=k)
                for c in (2, 4, 6, 8):
                    v = int(rate[k] * 10) if (n == 40 and c == 8) else 0
                    r |= {f"responses_{c}": 10, f"violations_{c}": v}
                rows.append(r)
    raw = pd.DataFrame(rows)
    from specedge.serving.analysis import metrics
    fig7 = metrics.per_class(raw, ["system", "devices"], (2, 4, 6, 8))
    got = ho.load_claims(raw, fig7, 0.05)
    assert got["Sec 5.3: share of loads where WISP violates at most as FCFS, 8 tok/s"] == (1.0, 0.0)
    assert got["Sec 5.3: WISP's knee at a larger N than FCFS's, 8 tok/s (1: holds)"] == (1.0, 0.0)
    assert math.isnan(got["Sec 5.3: share of loads where WISP violates at most as FCFS, 2 tok/s"][1])
    assert math.isnan(got["Sec 5.3: WISP's knee at a larger N than FCFS's, 2 tok/s (1: holds)"][1])
    assert got["Sec 5.3: WISP's largest gain over FCFS in a tight class (6 or 8 tok/s) (1: holds)"] == (1.0, 0.0)


def test_runner_ups_are_the_next_best_candidates_with_their_types():
    s = pd.DataFrame(dict(prompt_tokens=[128, 256, 384, 512], memory_gb=[1.0, 2.0, 1.0, 2.0], loss=[0.3, 0.1, 0.2, 0.2]))
    got = ho.runner_up_candidates(s, ["prompt_tokens", "memory_gb"], k=2)
    assert got == [dict(prompt_tokens=384, memory_gb=1.0, loss=0.2, rank=2), dict(prompt_tokens=512, memory_gb=2.0, loss=0.2, rank=3)]
    assert type(got[0]["prompt_tokens"]) is int and type(got[0]["memory_gb"]) is float


def test_verdicts_put_the_paper_first_and_one_column_per_reading():
    cap = _cap([[40, 20, 10, 5], [50, 44, 35, 30], [100, 80, 60, 40]])
    stop = cap.xs("WISP", level="system", drop_level=False).rename(index={"WISP": "WISP-stop"}, level="system") * 0
    cap2 = pd.concat([cap, stop])
    from specedge.serving.analysis import metrics
    raw = pd.DataFrame([dict(system=s, devices=n, seed=k, **{f"responses_{c}": 10 for c in (2, 4, 6, 8)},
                             **{f"violations_{c}": (n // 20) * (2 if s == "FCFS" else 1) for c in (2, 4, 6, 8)})
                        for s in ("WISP", "WISP-stop", "FCFS") for n in (20, 40) for k in (0, 1)])
    fig7 = metrics.per_class(raw, ["system", "devices"], (2, 4, 6, 8))
    v = ho.verdicts(PAPER, cap2, cap2.astype(bool) & False, ["Qwen3-32B"], raw, fig7, 0.05, ["WISP", "WISP-stop"])
    assert list(v.columns) == ["paper", "WISP", "WISP-stop"]
    assert v.loc["Sec 5.2.1: WISP has the highest capacity, Qwen3-32B, 8 tok/s (1: holds)"].tolist() == [1.0, 1.0, 0.0]
    assert v.loc["Sec 5.3: share of loads where WISP violates at most as FCFS, 8 tok/s"].tolist() == [1.0, 1.0, 1.0]


def test_a_stalled_reading_fails_the_load_claim_and_a_load_nobody_decides_is_skipped():
    """8 tok/s, loads 20 and 40, two seeds: FCFS violates 0.3 / 0.4 at both; the stalled reading decides no
    response at 40 (NaN): 20 compares (0.1 / 0.2 against 0.3 / 0.4: holds), 40 counts as not: share 0.5. At 2 tok/s neither decides anything
    at either load: no load to compare (undefined)."""
    rows = []
    for sys_ in ("WISP", "FCFS"):
        for n in (20, 40):
            for k in (0, 1):
                r = dict(system=sys_, devices=n, seed=k)
                for c in (2, 4, 6, 8):
                    resp = 0 if c == 2 or (sys_ == "WISP" and n == 40 and c == 8) else 10
                    r |= {f"responses_{c}": resp, f"violations_{c}": (3 + k if sys_ == "FCFS" else 1 + k) if (c == 8 and resp) else 0}
                rows.append(r)
    raw = pd.DataFrame(rows)
    from specedge.serving.analysis import metrics
    got = ho.load_claims(raw, metrics.per_class(raw, ["system", "devices"], (2, 4, 6, 8)), 0.05)
    assert got["Sec 5.3: share of loads where WISP violates at most as FCFS, 8 tok/s"] == (1.0, 0.5)
    assert math.isnan(got["Sec 5.3: share of loads where WISP violates at most as FCFS, 2 tok/s"][1])


def test_the_recorder_follows_each_request_through_the_decisions():
    """Test 6's queue again, then C2 alone: C1 admitted (critical, on time, its batch's eq (19) 0.015 s); C3 not
    critical and first by value density, passed over by a decision that stopped in the critical phase (line 25
    skipped it); C2 critical, passed over once, then admitted alone, already late (0.011 s alone after 0.019)."""
    est = Estimator(a=0.001, b_compute=0.0, b_read=0.0, c=0.010)
    q = [Pending(i, f"s{i}", 0, 0.0, n - 1, n, 0, deadline=d, expected_tokens=g)
         for i, (d, n, g) in enumerate([(0.019, 5, 1.0), (0.021, 5, 1.0), (1.0, 1, 10.0)])]
    rec = mech.Recorder(WISPBatcher(est, delta=0.01))
    rec.form(q, 0.0, frozenset())
    assert [p.client for p in rec.form(q[1:2], 0.019, frozenset())] == [1]
    r = {k[0]: v for k, v in rec.requests.items()}
    assert r[0]["admitted_at"] == 0.0 and r[0]["critical_at_admission"] and not r[0]["late_at_admission"]
    assert r[0]["t_hat_batch"] == pytest.approx(0.015) and r[0]["budget_s"] == pytest.approx(0.019)
    assert r[2]["passed_over"] == 1 and r[2]["skipped_after_critical_stop"] == 1 and r[2]["density_ranked"] == 1
    assert r[2]["density_rank_sum"] == 0.0 and math.isnan(r[2]["admitted_at"])
    assert r[1]["decisions"] == 2 and r[1]["passed_over"] == 1 and r[1]["skipped_after_critical_stop"] == 0
    assert r[1]["late_at_admission"] and r[1]["admitted_at"] == 0.019 and r[1]["t_hat_batch"] == pytest.approx(0.015)
    log = pd.DataFrame(dict(client=[0, 1], round=[0, 0], t_verify=[0.018, 0.012], t_queue=[0.0, 0.019], event=["", ""]))
    t = mech.request_table(rec.requests, log).set_index("client")
    assert list(t.index) == [0, 1]                                   # C3 was never verified: not in the table
    assert t.est_error.tolist() == pytest.approx([0.2, -0.2]) and math.isnan(t.loc[0, "density_rank"])
    assert mech.request_table({}, log).empty


def _setting():
    import types
    return types.SimpleNamespace(max_new_tokens=4, warmup_s=0.0, horizon_s=100.0)


def test_delayed_pairs_each_devices_kth_response_and_sums_its_requests():
    """Client 0 (2 tok/s, 2 s allowed) queues 1.3 s under WISP (violated) and 0.1 s under FCFS (met): delayed; client 1
    (8 tok/s) violates in both (drafting): not delayed; client 4 meets in both."""
    wisp = _log([(0, 2, 2, 0.2, 0.1, 0.1, 0.1), (0, 2, 2, 0.2, 0.1, 0.1, 1.2),
                 (1, 8, 2, 0.3, 0.02, 0.05, 0.0), (1, 8, 2, 0.3, 0.02, 0.05, 0.0),
                 (4, 2, 2, 0.2, 0.1, 0.1, 0.1), (4, 2, 2, 0.2, 0.1, 0.1, 0.1)])
    fcfs = _log([(0, 2, 2, 0.2, 0.1, 0.1, 0.1), (0, 2, 2, 0.2, 0.1, 0.1, 0.0),
                 (1, 8, 2, 0.3, 0.02, 0.05, 0.0), (1, 8, 2, 0.3, 0.02, 0.05, 0.0),
                 (4, 2, 2, 0.2, 0.1, 0.1, 0.1), (4, 2, 2, 0.2, 0.1, 0.1, 0.1)])
    req = pd.DataFrame([dict(client=c, round=r, slo_class=cls, arrival=a, budget_s=b, decisions=dec, passed_over=po,
                             skipped_after_critical_stop=sk, density_rank=dr, admitted_at=a, critical_at_admission=cr,
                             late_at_admission=lt, t_hat_batch=0.1, t_verify=0.1, t_queue=q, est_error=e)
                        for c, r, cls, a, b, dec, po, sk, dr, cr, lt, q, e in [
                            (0, 0, 2, 0.25, 0.5, 2, 1, 1, 0.8, False, False, 0.1, 0.1),
                            (0, 1, 2, 0.75, 0.5, 5, 4, 3, 0.6, True, True, 1.2, -0.3),
                            (1, 0, 8, 0.31, 0.1, 1, 0, 0, np.nan, True, False, 0.0, 0.0),
                            (4, 0, 2, 0.25, 0.5, 1, 0, 0, 0.1, False, False, 0.1, 0.0)]])
    p = mech.delayed(wisp, fcfs, req, _setting()).set_index("client")
    assert p.delayed.to_dict() == {0: True, 1: False, 4: False}
    assert p.violated_fcfs.to_dict() == {0: False, 1: True, 4: False}
    assert p.loc[0, "requests"] == 2 and p.loc[0, "wait_s"] == pytest.approx(1.3) and p.loc[0, "passed_over"] == 5
    assert p.loc[0, "skipped_after_critical_stop"] == 4 and p.loc[0, "density_rank"] == pytest.approx(0.7)
    assert p.loc[0, "late_share"] == 0.5 and p.loc[0, "abs_est_error"] == pytest.approx(0.2)
    assert p.loc[4, "requests"] == 1 and p.loc[1, "critical_share"] == 1.0
    t = mech.delayed_table(p.reset_index()).set_index("speed")
    assert t.loc[2, "delayed"] == 1 and t.loc[2, "delayed_share_of_violations"] == 1.0 and t.loc[2, "fcfs_violated"] == 0
    assert t.loc[2, "wait_s_delayed"] == pytest.approx(1.3) and t.loc[2, "wait_s_others"] == pytest.approx(0.1)
    assert t.loc[8, "delayed"] == 0 and math.isnan(t.loc[8, "delayed_share_of_violations"] * 0 + t.loc[8, "wait_s_delayed"])
    text = mech.delayed_summary(t.reset_index())
    assert text.splitlines()[0].startswith("2 tok/s: WISP violates 1 of 2 responses, FCFS 0; 1 (100% of WISP's violations)")
    assert "waited 1.30 s per response (others 0.10 s)" in text and "late at admission 50% (others 0%)" in text
    assert text.splitlines()[1].startswith("8 tok/s: no response that WISP violates is met by FCFS (1 of 1 violated, FCFS 1)")


def test_sections_on_a_small_twin_run(tmp_path):
    """§ Mechanisms' calls on a short run of 24 mixed-class devices (WISP, FCFS, the literal-stop reading): the
    tables are written, a delayed response is one WISP violates and FCFS meets, every verified request of WISP's
    run is followed, and its density rank lies in [0, 1]."""
    from specedge.experiments.li2026 import serving_runs as lx
    st = lx.SCENARIO.setting(horizon_s=8.0, warmup_s=1.0, max_new_tokens=16, prompt_tokens=64)
    att, eq, dec, note = mech.section(st, 24, 0, ["WISP-stop"], 50, 1.5, tmp_path)
    # the literal stop stalls on its first late request: it may decide no response in so short a run
    assert {"WISP", "FCFS"} <= set(att.system) and set(dec.system) == {"WISP", "WISP-stop"}
    assert note.startswith("measured at N = 24 (one seed): violation rate WISP vs FCFS per class: ")
    d = dec.set_index("system")
    assert 0 < d.loc["WISP", "stopped_in_critical"] <= 1 and d.loc["WISP", "decisions"] > 0
    assert d.loc["WISP-stop", "decisions"] == 0          # stalled before the warm-up ended: no decision after it
    for name in ("attribution", "eq21", "decisions"):
        assert (tmp_path / f"mechanism_{name}.csv").exists()
    pairs, table, n = mech.delayed_section(st, 24, 0, tmp_path, "attribution")
    assert n.startswith("attribution; FCFS serves in time ")
    assert len(pairs) and (pairs.delayed == (pairs.violated & ~pairs.violated_fcfs)).all()
    assert pairs.requests.min() >= 1 and pairs.density_rank.dropna().between(0, 1).all()
    assert table.delayed.sum() == pairs.delayed.sum() and (table.violated >= table.delayed).all()
    assert (tmp_path / "mechanism_requests.csv").exists() and (tmp_path / "mechanism_delayed.csv").exists()
    assert len(mech.delayed_summary(table).splitlines()) == len(table)
    run = lambda pts: pd.DataFrame([lx.run_point(p) for p in pts])
    t = mech.noise_section(st, 24, [0], run, tmp_path, factors=(0.0, 1.0))
    assert set(t.noise) == {0.0, st.noise} and (tmp_path / "mechanism_noise.csv").exists()


def test_delayed_note_pools_the_classes():
    t = pd.DataFrame(dict(speed=[2, 8], violated=[3, 5], delayed=[1, 3], wait_s_delayed=[1.0, 2.0], passed_over_delayed=[4.0, 8.0],
                          skipped_after_critical_stop_delayed=[2.0, 6.0], late_share_delayed=[0.0, 1.0]))
    n = mech.delayed_note(t)
    assert n.startswith("FCFS serves in time 4 of the 8 responses WISP violates at the same load (classes 2, 8 tok/s)")
    assert "waited 1.75 s per response, passed over in 7.0 decisions, 5.0 of them critical stops" in n and "75% late" in n
    assert mech.delayed_note(t.assign(delayed=0)).startswith("FCFS serves in time none")
