"""Algorithm 1 of li2026 (Sec 4.3) and its SLO budget equations (Sec 3.1 eq 6, Sec 4.2 eqs 12, 14-17) on
hand-worked queues: each test's docstring derives the expected batch line by line from the printed pseudo-code,
under every reading of a late request (``wisp_batching.READINGS``; ``docs/wisp-readings.md``).

Unless a test says otherwise: the estimator is T(B) = 10 ms + 1 ms per new token (eq 19 with b_compute =
b_read = 0), so a request of 5 new tokens has v_i = 15 ms alone; t_k = 0; no memory limit.
"""
import math

import numpy as np
import pytest

from specedge.serving import policies, slo
from specedge.serving.timemodels.estimator import Estimator
from specedge.serving.interfaces import Pending
from specedge.serving.policies.wisp_batching import READINGS, WISPBatcher

EST = Estimator(a=0.001, b_compute=0.0, b_read=0.0, c=0.010)


def P(client, deadline=None, n_new=5, g=1.0, memory=0.0, arrival=0.0, n_cached=0):
    return Pending(client, f"s{client}", 0, arrival, n_new - 1, n_new, n_cached, deadline=deadline,
                   expected_tokens=g, memory=memory)


def batch(queue, reading="admit", now=0.0, est=EST, **kw):
    return [p.client for p in WISPBatcher(est, reading=reading, **kw).form(queue, now, frozenset())]


def test_a_request_already_past_its_deadline_under_each_reading():
    """Queue: A (d = -1 s), B (d = 0.5 s), C (no SLO); delta = 0.
    Lines 7-12: LST_A = -1 - 0.015 <= 0, so A is critical; B's LST = 0.485 > 0 and C has none: non-critical.
    A is late: even alone t_k + v_A = 0.015 > d_A, so FEASIBLEADD (line 5) can never hold for it.
    - stop (as printed): line 18 fails for A, line 21 sets stop, line 25 skips the utility phase: B = {}.
    - admit: A joins on memory alone (its deadline binds nothing); then B (T = 20 ms <= 0.5) and C (25 ms): A, B, C.
    - continue: as admit (the critical phase did not stop).
    - drop: A is left out; the utility phase admits B and C; A waits for a batch with nothing on time."""
    q = [P(0, -1.0), P(1, 0.5), P(2, None)]
    assert batch(q, "stop") == []
    assert batch(q, "admit") == [0, 1, 2]
    assert batch(q, "continue") == [0, 1, 2]
    assert batch(q, "drop") == [1, 2]
    assert batch(q[:1], "drop") == [0]          # nothing on time queued: the late request is verified


def test_ties_in_value_density_break_by_arrival_then_client():
    """Three non-critical requests of equal U_i = 2 / 0.015 (eq 16) and the same deadline 22 ms (LST = 7 ms
    > 0). The paper sorts by decreasing U_i (line 14) and leaves ties unordered; we break them by arrival,
    then client id: Z (0.1 s, client 1), Y (0.1 s, client 3), X (0.2 s, client 5). Lines 26-31: Z (15 ms
    <= 22), Y (20 ms <= 22), X (25 ms > 22 ms): stop. Batch Z, Y whatever the queue's order."""
    q = [P(5, 0.022, g=2.0, arrival=0.2), P(3, 0.022, g=2.0, arrival=0.1), P(1, 0.022, g=2.0, arrival=0.1)]
    for perm in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        assert batch([q[i] for i in perm]) == [1, 3]


def test_one_huge_context_is_ranked_last_and_ends_the_batch():
    """eq 19 with b_read = 1 us per cached token: a follow-up H with 100,000 cached tokens has
    v_H = 10 + 5 + 100 = 115 ms, two small requests S1, S2 (g = 1) v = 15 ms. U_H = 4 / 0.115 = 35 <
    U_S = 1 / 0.015 = 67 (eq 16), so line 14 ranks S1, S2, H (none critical: LST_S = 85 ms, LST_H = 885 ms).
    Lines 26-31 with deadlines 100 ms (S) and 1 s (H): S1 (15 ms), S2 (20 ms), then H: T = 10 + 15 + 100 =
    125 ms > D_min = 100 ms: stop. The huge request waits (no interference with the short ones)."""
    est = Estimator(a=0.001, b_compute=0.0, b_read=1e-6, c=0.010)
    q = [P(0, 1.0, g=4.0, n_cached=100_000), P(1, 0.1), P(2, 0.1)]
    assert batch(q, est=est) == [1, 2]
    # and once it is critical, it goes first: at t = 0.02 with delta = 10 ms, LST_H = 0.14 - 0.115 - 0.01 =
    # 0.015 <= 0.02; alone 0.02 + 0.115 = 0.135 <= 0.14. S1 then: T = 120 ms, 0.14 <= 0.14 (equality holds);
    # S2: 125 ms, 0.145 > 0.14: stop
    q = [P(0, 0.14, g=4.0, n_cached=100_000), P(1, 0.2), P(2, 0.2)]
    assert batch(q, est=est, now=0.02, delta=0.01) == [0, 1]


def test_zero_slack():
    """A request with d = t_k + v_i exactly: LST = d - v - 0 = t_k, so it is critical (line 11: t >= LST)
    and FEASIBLEADD holds with equality (t_k + T = d, eq 15 is <=): admitted in every reading. One
    nanosecond less and it is late: ``stop`` dispatches nothing, ``admit`` admits it on memory alone."""
    assert all(batch([P(0, 0.015)], r) == [0] for r in READINGS)
    b = WISPBatcher(EST)
    assert b.order([P(0, 0.015)], 0.0)[1] == 1             # critical
    late = [P(0, 0.015 - 1e-9)]
    assert batch(late, "stop") == [] and batch(late, "admit") == [0] and batch(late, "drop") == [0]
    assert b.order(late, 0.0)[0][0][1] is True               # flagged late


def test_mixed_classes_from_the_budget_equations():
    """Three devices, alpha = 0.5, N_d = 8 drafts (eq 5: 4 expected tokens), T_draft = 0.16 s, T_network
    = 0.02 s, all arriving at 0. Eq 6: tau = 4 / s_c - 0.18: 0.32 s at 8 tok/s, 0.82 s at 4, 1.82 s at 2;
    eq 12: d = 0 + tau. At t_k = 0.3 with delta = 10 ms: the 8 tok/s request T (4 new tokens, v = 14 ms)
    has LST = 0.32 - 0.014 - 0.01 = 0.296 <= 0.3: critical; the others (5 new tokens, v = 15 ms) are not.
    By eq 16 the 2 tok/s request L (g = 4) outranks the 4 tok/s one M (g = 2). Lines 17-24: T (0.314 <=
    0.32). Lines 26-31: L (T = 19 ms, 0.319 <= 0.32), M (24 ms, 0.324 > 0.32 = D_min, T's deadline): stop."""
    d = {s: slo.deadline(0.0, 0.5, 8, s, 0.16, 0.02) for s in (2, 4, 8)}
    assert d == pytest.approx({2: 1.82, 4: 0.82, 8: 0.32})
    assert slo.latest_start(d[8], 0.014, 0.01) == pytest.approx(0.296)
    q = [P(1, d[4], g=2.0), P(0, d[8], n_new=4, g=4.0), P(2, d[2], g=4.0)]
    assert batch(q, now=0.3, delta=0.01) == [0, 2]
    # a device whose own drafting already exceeds its class: eq 6's budget is negative, so the request
    # arrives late (alpha 0.25, 4 drafts: 1 token / 8 tok/s = 0.125 s < 0.08 + 0.02 + v)
    tight = slo.deadline(0.0, 0.25, 4, 8, 0.08, 0.02)
    assert tight == pytest.approx(0.025)
    assert batch([P(0, tight, n_new=20)], "stop") == [] and batch([P(0, tight, n_new=20)]) == [0]


def test_a_batch_the_estimator_says_will_overrun_ends_the_critical_phase_and_skips_the_utility_phase():
    """delta = 10 ms. C1 (d = 19 ms) and C2 (d = 21 ms) are critical (LST = -6 and -4 ms); N (1 new token,
    v = 11 ms, d = 1 s, g = 10) is not. Lines 17-24: C1 (15 ms <= 19); C2: T = 20 ms > D_min = 19 ms:
    the estimator says the batch overruns C1's deadline, line 21 sets stop, and line 25 skips the utility
    phase: {C1} (admit, stop, drop). ``continue`` goes on into lines 26-31: N gives T = 10 + 5 + 1 = 16 ms
    <= 19 ms: {C1, N}."""
    q = [P(0, 0.019), P(1, 0.021), P(2, 1.0, n_new=1, g=10.0)]
    for r in ("admit", "stop", "drop"):
        assert batch(q, r, delta=0.01) == [0], r
    assert batch(q, "continue", delta=0.01) == [0, 2]


def test_an_empty_queue():
    """Line 7 iterates over nothing; both phases admit nothing; B_k = {} (and no critical request)."""
    for r in READINGS:
        b = WISPBatcher(EST, reading=r)
        assert b.form([], 0.0, frozenset()) == [] and b.order([], 0.0) == ([], 0)


def test_the_top_ranked_request_alone_over_the_memory_budget():
    """M = 100 bytes, delta = 10 ms. A (critical: d = 16 ms, LST = -9 ms; 200 bytes) and B (non-critical, 10 bytes). Line 18:
    FEASIBLEADD fails on eq 14 (200 > 100), line 21 sets stop, line 25 skips the utility phase: B_k = {}
    and "remaining requests stay pending" (line 35) — the paper's batch, so no error is raised; A can never
    be verified at this budget. ``continue`` goes on to B ({B}); ``drop`` leaves A out as one that can
    never fit ({B}). A non-critical top request over budget: {} as well (line 30)."""
    q = [P(0, 0.016, memory=200.0), P(1, 1.0, memory=10.0)]
    for r, want in {"admit": [], "stop": [], "continue": [1], "drop": [1]}.items():
        assert batch(q, r, memory_budget=100.0, delta=0.01) == want, r
    assert batch([P(0, 1.0, memory=200.0, g=9.0), P(1, 1.0, memory=10.0)], memory_budget=100.0) == []
    assert batch([P(0, 1.0, memory=200.0)], memory_budget=100.0) == []     # the one-request path alike


def test_the_literal_stop_stalls_for_ever_and_admit_does_not():
    """A late request first in EDF order stays first at every later epoch (its deadline only recedes
    into the past), so under ``stop`` no batch is ever dispatched, whatever else queues; ``admit`` serves
    it with the others."""
    q = [P(0, 0.005), P(1, 10.0), P(2, 10.0)]
    for now in (0.0, 0.5, 5.0):
        assert batch(q, "stop", now=now) == []
        assert batch(q, "admit", now=now)[0] == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_the_phase_by_phase_former_equals_the_fast_paths_under_admit(seed):
    """``_form_phases`` (the two phases as printed, every reading) and the running-sum fast paths decide the
    same batch under ``admit`` on random queues of late, critical, relaxed and SLO-free requests."""
    rng = np.random.default_rng(seed)
    est = Estimator(2e-4, 3e-8, 1e-6, 0.012)
    for trial in range(200):
        n, now = int(rng.integers(1, 160)), float(rng.uniform(0, 5))
        q = []
        for i in range(n):
            s = int(rng.integers(0, 9))
            d = None if rng.random() < 0.15 else now + float(rng.normal(0.05, 0.08))
            q.append(Pending(i, f"{i}", i, now - float(rng.uniform(0, 1)), s, s + 1, int(rng.integers(0, 400)), 4, d,
                             float(rng.uniform(0, s + 1)), float(rng.integers(1, 200)) * 1e6))
        b = WISPBatcher(est, delta=0.01, memory_budget=float(rng.choice([math.inf, 3e9])),
                        max_batch=None if rng.random() < 0.7 else int(rng.integers(1, 20)))
        assert [p.client for p in b.form(q, now, frozenset())] == [p.client for p in b._form_phases(q, now)], trial


def test_every_reading_is_a_registered_former():
    """The readings are found by name through the policy registry (no string if-chains)."""
    for r in READINGS:
        name = "wisp" if r == "admit" else f"wisp-{r}"
        f = policies.former(name, estimator=EST, delta=0.01, memory_budget=5.0)
        assert f.reading == r and f.memory_budget == 5.0 and f.delta == 0.01
    with pytest.raises(ValueError, match="reading"):
        WISPBatcher(EST, reading="literal")
