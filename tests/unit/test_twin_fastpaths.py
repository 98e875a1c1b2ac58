"""The twin's fast paths against the general ones they replace (the same numbers, the same frames)."""
import math

import numpy as np
import pandas as pd
import pytest

from specedge.serving import log as serving_log
from specedge.serving.sim import twin
from specedge.serving.policies import wisp_batching
from specedge.serving.timemodels.estimator import Estimator
from specedge.serving.interfaces import LOG_COLUMNS, Pending, Times
from specedge.serving.sim.uniform_ints import Ints


def _rows_frame(rows):
    return pd.DataFrame([tuple(r) for r in rows], columns=LOG_COLUMNS)


def _frame(rows):
    """``log.frame`` as the twin calls it."""
    return serving_log.frame(rows, twin._EXACT, twin._CONSTANT)


@pytest.mark.parametrize("values", [[1, None, 3], [None, None], [1.5, None, 2.0], [1, 2.5, 3], [np.float64(1.0), 2.0],
                                    ["a", "b"], [True, False], [1, 2**40], [1, np.int64(2)], [2, 4, 8],
                                    [0.5, 0.5, 2, 2], [1, 1, 2.0, None]])
def test_log_frame_is_built_as_from_rows(values):
    """log.frame (column by column) gives pd.DataFrame(rows)'s frame: dtypes, values and CSV bytes, with the twin's
    exact and constant fields and with none."""
    rows = [("twin", "p", k, 0, k, 1, 1, 2, 0.1 * k, 0.0, 0.0, 0.1, 0.0, 0.2, 10, 5, 0.5, 1.0, 1.5, v, v, "")
            for k, v in enumerate(values)]
    many = [r for r in rows for _ in range(serving_log._BLOCK // 2 + 1)]   # the values over blocks (their kinds differ)
    for convert in (_frame, serving_log.frame):
        old, new = _rows_frame(rows), convert(rows)
        pd.testing.assert_frame_equal(old, new)
        assert old.to_csv(index=False) == new.to_csv(index=False)
        pd.testing.assert_frame_equal(_rows_frame(many), convert(many))
        empty = convert([])
        assert list(empty.columns) == LOG_COLUMNS and empty.empty


def _numpy_draw(acc, rng, draft, domain, temperature, s):
    """A trace draw as first written, on numpy arrays (the reference of the twin's list-based draws)."""
    if s <= 0:
        return 0, 0.0
    ok_all, ratio, bounds = acc.rounds[(draft, domain, float(temperature))]
    j = int(rng.integers(len(bounds) - 1))
    oks, rs = [ok_all[bounds[j]: bounds[j + 1]]], [ratio[bounds[j]: bounds[j + 1]]]
    while sum(map(len, oks)) < s:
        j = int(rng.integers(len(bounds) - 1))
        oks.append(ok_all[bounds[j]: bounds[j + 1]])
        rs.append(ratio[bounds[j]: bounds[j + 1]])
    ok = np.concatenate(oks)[:s]
    return (int(np.argmin(ok)) if not ok.all() else s), float(np.concatenate(rs)[:s].sum())


def test_drawer_and_controlled_table_draw_what_the_general_calls_draw():
    acc = twin.TraceAcceptance(stop_rules={"yes": _Always(True)})
    for s in (0, 1, 3, 8, 12, 30):   # 12, 30: windows longer than a traced round continue with further rounds
        a, b, c = Ints(np.random.default_rng(4)), Ints(np.random.default_rng(4)), np.random.default_rng(4)
        draw = acc.drawer(b, "draft-s", "code", 0.0)
        expect = [_numpy_draw(acc, c, "draft-s", "code", 0.0, s) for _ in range(300)]
        assert [acc.draw(a, "draft-s", "code", 0.0, s) for _ in range(300)] == expect
        assert [draw(s) for _ in range(300)] == expect
    a, b = Ints(np.random.default_rng(5)), Ints(np.random.default_rng(5))
    table = acc.controlled_table("draft-s", "code", 0.0, 5, "yes")
    assert ([acc.draw_controlled(a, "draft-s", "code", 0.0, 5, "yes") for _ in range(200)]
            == [table[b.integers(len(table))] for _ in range(200)])


class _Always:
    def __init__(self, ok):
        self.ok = ok

    def predict(self, x):
        return np.full(len(x), self.ok)


def test_long_queue_without_deadlines_takes_the_general_path():
    """_ranked_long's one-pass extraction needs every deadline and expected count; a None among them
    (requests without an SLO) falls back to the general rows (deadline inf, expected = n_draft)."""
    est = Estimator(1e-4, 1e-8, 1e-6, 0.01)
    former = wisp_batching.WISPBatcher(est, delta=0.001)
    q = [Pending(i, f"{i}", 0, 0.001 * i, 4, 5, 100 * (i % 3), 2, 0.05 + 0.01 * (i % 7), 3.0) for i in range(40)]
    q += [Pending(40 + i, "x", 0, 0.002 * i, 1, 2, 0, None, None, None) for i in range(5)]
    idx, late, crit, *_ = former._ranked_long(q, 0.045)
    assert sorted(idx.tolist()) == list(range(45))
    assert crit[:40].any() and not crit[40:].any()          # no deadline: never critical
    assert set(idx[-5:].tolist()) == set(range(40, 45))     # one draft each: the lowest value density
    short = wisp_batching.SHORT
    try:   # the short path (plain floats) ranks the same queue the same way
        wisp_batching.SHORT = 10**9
        ranked, n_crit = former.order(q, 0.045)
    finally:
        wisp_batching.SHORT = short
    assert [q[i].client for i in idx] == [p.client for p, _ in ranked] and n_crit == int(crit.sum())
    assert former.form(q, 0.045, frozenset()) == former._form_long(q, 0.045)
    assert math.isinf(former._ranked_long(q[40:], 0.0)[5][0])


def test_on_grid_is_round_to_nine_digits():
    """timegrid.on_grid (an integer division where the product is far from a half) gives round(t, 9)
    bit for bit: random times of every magnitude, exact and near half-nanoseconds, beyond +-1e6 s, inf, nan."""
    from specedge.serving.timegrid import on_grid

    rng = np.random.default_rng(4)
    t = rng.uniform(-1, 1, 40000) * 10.0 ** rng.integers(-10, 9, 40000)
    halves = (rng.integers(-10**12, 10**12, 20000) + 0.5) / 1e9
    near = np.concatenate([halves, np.nextafter(halves, np.inf), np.nextafter(halves, -np.inf),
                           halves + 0.06e-9, halves - 0.08e-9])
    values = np.concatenate([t, near, [0.0, -0.0, 1e6, -1e6, 1e15, math.inf, -math.inf, math.nan]]).tolist()
    got, want = [on_grid(v) for v in values], [round(v, 9) for v in values]
    assert [g == w or (math.isnan(g) and math.isnan(w)) for g, w in zip(got, want)] == [True] * len(values)
    assert [math.copysign(1, g) for g in got] == [math.copysign(1, w) for w in want]


def test_noisy_verify_times_are_the_scalar_draws():
    """time_models.noisy draws its log-normal factors 4096 at a time: the numbers one rng.normal call each gives."""
    import numpy as np

    from specedge.serving.timemodels.time_models import noisy
    from specedge.serving.timegrid import on_grid

    fn = noisy(lambda batch: 0.05 * len(batch), 0.06, seed=9)
    rng = np.random.default_rng(np.random.SeedSequence([9, 23]))
    batches = [[0] * (1 + k % 5) for k in range(5000)]          # past one block of 4096
    assert [fn(b) for b in batches] == [on_grid(0.05 * len(b) * math.exp(rng.normal(0.0, 0.06))) for b in batches]


def _greedy_pop_push(alpha, weights, capacity, s_max=None):
    """eq (5)'s greedy as first written (pop, then push the client's next marginal gain)."""
    import heapq

    cap = s_max if s_max is not None else capacity
    s = [0] * len(alpha)
    heap = [(-w * a, i) for i, (a, w) in enumerate(zip(alpha, weights)) if cap > 0]
    heapq.heapify(heap)
    for _ in range(capacity):
        if not heap:
            break
        gain, i = heapq.heappop(heap)
        if -gain <= 0:
            break
        s[i] += 1
        if s[i] < cap:
            heapq.heappush(heap, (-weights[i] * alpha[i] ** (s[i] + 1), i))
    return s


def test_greedy_in_place_replacement_allocates_as_pop_then_push():
    from specedge.solvers.tran2025 import greedy

    rng = np.random.default_rng(3)
    for k in range(400):
        n = int(rng.integers(1, 70))
        alpha = rng.choice([0.0, 0.3, 0.5, 0.8, 1 - 1e-9], n).tolist() if k % 3 == 0 else rng.random(n).tolist()
        weights = rng.choice([0.5, 1.0, 2.0], n).tolist() if k % 2 else (1 / rng.uniform(0.5, 9, n)).tolist()
        c, s_max = int(rng.integers(0, 3 * n + 3)), (None if k % 4 else int(rng.integers(0, 6)))
        assert greedy(alpha, weights, c, s_max) == _greedy_pop_push(alpha, weights, c, s_max)


def test_typed_log_columns_hold_one_python_type(monkeypatch):
    """log.frame converts twin._EXACT's fields without looking: simulate fills them with ints / floats only
    (sync rounds with times given as ints, and WISP's former with SLO deadlines)."""
    from specedge.experiments.li2026 import serving_runs as li
    from specedge.serving.policies.allocation import GoodspeedAllocator
    from specedge.serving.policies.batching import SyncRounds
    from specedge.serving.timemodels.runtime import AffineTokens
    from specedge.serving.workload import ClientSpec, Workload

    seen = []
    frame = twin.frame
    monkeypatch.setattr(twin, "frame", lambda rows, *a: seen.append(rows) or frame(rows, *a))
    wl = Workload("target-m", tuple(ClientSpec("draft-s", ("code",), 2, 40) for _ in range(3)), capacity=6)
    times = Times([lambda s: 0] * 3, AffineTokens(0, 0), up=lambda c, s: 0, down=lambda c: c)
    twin.simulate(wl, SyncRounds(), GoodspeedAllocator(6), times, twin.TraceAcceptance(), rounds=50, until=30)
    li.run_log(li.SCENARIO.point("WISP", 6, None, seed=1, setting=li.SCENARIO.setting(horizon_s=3.0, warmup_s=1.0)))
    for rows in seen:
        for k, name in enumerate(LOG_COLUMNS):
            if name in twin._EXACT:
                assert {type(r[k]) for r in rows} == {twin._EXACT[name]}, name
            if name in twin._CONSTANT:
                assert len({r[k] for r in rows}) == 1, name


def test_regreedy_allocates_as_the_greedy_from_any_start():
    """allocation.regreedy (moves from the last round's S) gives eq (5)'s greedy allocation, from starts
    near and far (above C, beyond s_max), with ties, zero and near-underflow alphas."""
    from specedge.serving.policies.allocation import regreedy
    from specedge.solvers.tran2025 import greedy

    rng = np.random.default_rng(8)
    for k in range(3000):
        n = int(rng.integers(1, 70))
        alpha = (rng.choice([0.0, 0.3, 0.5, 0.8, 1 - 1e-9, 1e-200], n) if k % 3 == 0 else rng.random(n)).tolist()
        weights = rng.choice([0.5, 1.0, 2.0], n).tolist() if k % 2 else (1 / rng.uniform(0.5, 9, n)).tolist()
        c, s_max = int(rng.integers(0, 3 * n + 3)), (None if k % 4 else int(rng.integers(0, 6)))
        want = greedy(alpha, weights, c, s_max)
        near = [max(0, s + int(d)) for s, d in zip(want, rng.integers(-1, 2, n))]
        far = rng.integers(0, 8, n).tolist()
        for start in (want, near, far, [0] * n):
            assert regreedy(start, alpha, weights, c, s_max) == want, (k, start)


def test_goodspeed_allocator_warm_start_gives_the_greedy_every_round():
    """GoodspeedAllocator's rounds (regreedy from its last S) equal a fresh greedy of the same estimates."""
    from specedge.serving.policies.allocation import GoodspeedAllocator
    from specedge.serving.interfaces import Outcome
    from specedge.solvers.tran2025 import greedy

    rng = np.random.default_rng(2)
    alloc = GoodspeedAllocator(40, beta=0.5)
    s = alloc.initial(list(range(16)))
    for _ in range(300):
        outs = []
        for c, k in s.items():
            n = int(rng.integers(0, k + 1))
            outs.append(Outcome(c, k, n, float(n) + rng.random() if k else 0.0))
        s = alloc.update(outs)
        a = [min(alloc.alpha_hat[c], 1 - 1e-9) for c in range(16)]
        assert list(s.values()) == greedy(a, [1 / alloc.X[c] for c in range(16)], 40)


def test_ns_le_is_the_grid_comparison():
    """timegrid.ns_le decides by the floats only where they imply the grid's answer: it equals
    ns_scalar(x) <= ns_scalar(y) on near-ties (within a nanosecond, either side), pairs about its 10 ns
    shortcut, far pairs, values about and beyond its +-1e6 s, inf and nan."""
    from specedge.serving.timegrid import ns_le, ns_scalar

    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(0, 1e4, 20000), rng.uniform(-1.1e6, 1.1e6, 20000), rng.uniform(-2e7, 2e7, 5000),
                        rng.uniform(0, 1, 5000)])
    gap = [0.0, 2e-10, 5e-10, 7e-10, 1e-9, 1.5e-9, 9e-9, 1e-8, 1.1e-8, 2e-8, 1e-6, 1.0]   # about ns_le's 10 ns
    y = x + rng.choice([-1, 1], x.size) * rng.choice(gap, x.size)
    far = rng.uniform(1e6, 1e12, 5000)      # one float apart: beyond ~1e8 s more than 10 ns, yet one ns value
    pairs = list(zip(x.tolist(), y.tolist())) + list(zip(far.tolist(), np.nextafter(far, 0).tolist())) + [(math.inf, 1.0), (1.0, math.inf), (math.inf, math.inf),
                                                 (-math.inf, 0.0), (math.nan, 1.0), (1.0, math.nan),
                                                 (2e300, 1e300), (1e6 + 1.0, 1e6), (-1e6, -1e6 - 1.0)]
    assert [ns_le(a, b) for a, b in pairs] == [ns_scalar(a) <= ns_scalar(b) for a, b in pairs]
    assert any(a > b and ns_le(a, b) for a, b in pairs)    # ties within a nanosecond occur and count as <=
