"""The serving host's state (``timemodels.host_state``): its process in simulated time, the draws that read it, the
cross-kind products it is fitted on (against pairs listed one by one), the fit on events of a known state, and the
state fitted on the real runs and read by the twin (``measured_times``, the kind "host state")."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from specedge.experiments.serving_validation import runs as sv
from specedge.serving.timemodels import host_state as hs
from specedge.serving.timemodels import measured_times

TAU = hs.TIMES_S.index(0.03)
LEVEL = hs.TIMES_S.index(np.inf)


def weights(**parts) -> np.ndarray:
    """Weights on ``TIMES_S`` by index name: w(fast=0.5, level=0.5)."""
    w = np.zeros(len(hs.TIMES_S))
    for name, v in parts.items():
        w[{"fast": TAU, "level": LEVEL}[name]] = v
    return w


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_process_holds_one_value_at_a_time_and_forgets_at_its_correlation_time():
    n, dt = 4000, 0.02
    pairs = np.empty((n, 2))
    for i in range(n):
        clock = Clock()
        p = hs.Process(weights(fast=0.6), np.random.default_rng(i))
        p.bind(clock)
        first = p()
        assert p() == first                                      # the same time: the same value
        clock.now = dt
        pairs[i] = first, p()
    assert pairs[:, 0].var() == pytest.approx(0.6, rel=0.08)       # its variance: the weights' sum
    assert np.corrcoef(pairs.T)[0, 1] == pytest.approx(np.exp(-dt / 0.03), abs=0.04)
    # the run's level does not move, however long apart
    clock, p = Clock(), hs.Process(weights(level=1.0), np.random.default_rng(0))
    p.bind(clock)
    first = p()
    clock.now = 1e6
    assert p() == pytest.approx(first)
    # bound again (a new run): a new value
    p.bind(Clock())
    assert p() != pytest.approx(first)


def test_a_draw_reading_the_state_keeps_its_values_distribution():
    values = np.exp(np.random.default_rng(1).normal(size=50))
    clock, p = Clock(), hs.Process(weights(fast=1.0), np.random.default_rng(2))
    p.bind(clock)
    d = hs.Coupled(values, 0.9, p, np.random.default_rng(3))
    out = []
    for i in range(5000):
        clock.now = i * 1.0                                      # far apart: independent states
        out.append(d())
    out = np.array(out)
    assert set(out) <= set(values)
    counts = np.searchsorted(np.sort(values), out)
    hist = np.bincount(counts, minlength=50)
    assert hist.min() > 50 and hist.max() < 160                 # each of the 50 values about 100 times


def test_two_kinds_read_at_one_time_correlate_as_their_loadings_and_the_state():
    a_vals, b_vals = np.arange(1.0, 201.0), np.arange(-100.0, 100.0)
    za, zb, zfar = [], [], []
    for i in range(3000):
        clock = Clock()
        p = hs.Process(weights(fast=0.7), np.random.default_rng(10 + i))
        p.bind(clock)
        a = hs.Coupled(a_vals, 0.9, p, np.random.default_rng([i, 1]))
        b = hs.Coupled(b_vals, 0.6, p, np.random.default_rng([i, 2]))
        za.append(a())
        zb.append(b())
        clock.now = 10.0
        zfar.append(b())
    score = lambda v: norm.ppf((pd.Series(v).rank().to_numpy()) / (len(v) + 1))   # noqa: E731
    assert np.corrcoef(score(za), score(zb))[0, 1] == pytest.approx(0.9 * 0.6 * 0.7, abs=0.05)
    assert abs(np.corrcoef(score(za), score(zfar))[0, 1]) < 0.05
    # without a state to read (loading 0) nothing moves together
    p = hs.Process(weights(fast=0.7), np.random.default_rng(0))
    x, y = hs.Coupled(a_vals, 0.0, p, np.random.default_rng(1)), hs.Coupled(b_vals, 0.0, p, np.random.default_rng(2))
    assert abs(np.corrcoef([x() for _ in range(2000)], [y() for _ in range(2000)])[0, 1]) < 0.06


def test_the_cross_products_are_those_of_the_pairs_listed_one_by_one():
    rng = np.random.default_rng(5)
    n = 120
    t = np.round(rng.uniform(0, 0.3, n), 3)                          # ties in time included
    kind = rng.choice(["a", "b", "c"], n)
    z = rng.normal(size=n)
    run = rng.integers(0, 2, n)
    edges = (0.0, 0.0105, 0.0505, 0.2005)                          # no time apart falls on an edge
    got = hs.cross_products(t, kind, z, run, edges).set_index(["a", "b", "lo"])
    want = {}
    for i in range(n):
        for j in range(n):
            if run[i] != run[j] or not kind[i] < kind[j]:
                continue
            dt = abs(t[j] - t[i])
            k = np.searchsorted(edges, dt, side="right") - 1
            if k >= len(edges) - 1:
                continue
            w = want.setdefault((kind[i], kind[j], edges[k]), [0.0, 0, 0.0])
            w[0] += z[i] * z[j]
            w[1] += 1
            w[2] += dt
    assert set(want) <= set(got.index)
    for key, (s, c, st) in want.items():
        row = got.loc[key]
        assert row.n == c and row.s == pytest.approx(s) and row.st == pytest.approx(st)
    assert (got.drop(index=list(want)).n == 0).all()                 # nothing where no pair is


def synthetic(loadings: dict, w: np.ndarray, runs: int = 12, seconds: float = 2.0, every: float = 0.004, seed: int = 0):
    """Events of kinds reading one known state: (t, kind, value, run)."""
    rows = []
    rng = np.random.default_rng(seed)
    for r in range(runs):
        clock, p = Clock(), hs.Process(w, np.random.default_rng([seed, r]))
        p.bind(clock)
        draws = {k: hs.Coupled(rng.lognormal(size=300), lam, p, np.random.default_rng([seed, r, i]))
                 for i, (k, lam) in enumerate(loadings.items())}
        t = np.cumsum(rng.exponential(every, int(seconds / every)))
        for x in t:
            clock.now = x
            k = rng.choice(list(loadings))
            rows.append((x, k, draws[k](), r))
    return pd.DataFrame(rows, columns=["t", "kind", "value", "run"])


def test_the_fit_finds_the_loadings_and_the_memory_of_a_known_state():
    true = {"period": 0.9, "verify": 0.7, "up": 0.5, "gap": 0.3}
    w = weights(fast=0.6, level=0.4)
    ev = synthetic(true, w)
    got = hs.fit(ev.t, ev.kind, ev.value, ev.run)
    for k, lam in true.items():
        assert got.loadings[k] == pytest.approx(lam, abs=0.08)
    assert got.weights.sum() == pytest.approx(1.0)
    for dt in (0.0, 0.02, 0.1, 1.0):
        assert hs.correlation(dt, got.weights)[0] == pytest.approx(hs.correlation(dt, w)[0], abs=0.1)
    # its part within a run leaves the level out and keeps the rest as fitted
    inside = got.within()
    assert inside.weights[LEVEL] == 0 and inside.weights.sum() < 1
    assert inside.loadings == got.loadings


def test_the_fit_of_too_little_is_no_state():
    one = pd.DataFrame(dict(t=[0.0, 0.001, 0.002], kind=["a"] * 3, value=[1.0, 2.0, 3.0], run=[0] * 3))
    assert hs.fit(one.t, one.kind, one.value, one.run) is hs.NONE
    apart = pd.DataFrame(dict(t=[0.0, 10.0], kind=["a", "b"], value=[1.0, 2.0], run=[0, 0]))   # further than any edge
    assert hs.fit(apart.t, apart.kind, apart.value, apart.run) is hs.NONE
    assert hs.fit([], [], [], []) is hs.NONE
    assert not hs.NONE.loadings and hs.NONE.weights.sum() == 0


@pytest.fixture(scope="module")
def runs():
    return sv.load_repeats()


def fit_on_repeats(runs, n: int):
    """(keys, passes, eq (19), the time models) of WISP's setting at ``n`` clients, fitted on its repeats 1-3."""
    keys = [("li2026", "WISP", n, r) for r in (1, 2, 3)]
    wl = sv.setup("li2026").workload(n, "full", 0)
    passes = lambda r, c: sv.draft_passes(r, wl.clients[c])   # noqa: E731
    verify = sv.verify_model(runs, keys[0], 0)
    return keys, passes, verify, measured_times.fit(runs, keys, passes, verify)


def test_fitted_on_real_runs_the_state_reads_every_kind_and_the_twin_moves_it_on_its_clock(runs):
    keys, passes, verify, m = fit_on_repeats(runs, 2)
    assert set(m.host.loadings) == {"period", "gap", "up", "down", "verify"}
    assert all(0.0 <= v <= 1.0 for v in m.host.loadings.values()) and max(m.host.loadings.values()) > 0.3
    assert m.host.weights.sum() == pytest.approx(1.0)
    bare = measured_times.fit(runs, keys, passes, None)           # no verify model: no passes' factors to read
    assert "verify" not in bare.host.loadings
    t = measured_times.times(m, verify, 0, shared_core=True, alone=m, core_periods=True, host=True)
    assert isinstance(t.host, hs.Process) and t.host.variance == pytest.approx(m.host.within().weights.sum())
    assert measured_times.times(m, verify, 0, shared_core=True, alone=m, core_periods=True).host is None
    assert sv.KINDS["host state"] - sv.KINDS["busy periods"] == {"host"}


def test_the_twin_gives_the_host_its_clock_before_the_run():
    from specedge.serving.interfaces import Times
    from specedge.serving.policies.allocation import FixedS
    from specedge.serving.policies.batching import FCFS
    from specedge.serving.sim.twin import PromptAcceptance, simulate
    from specedge.serving.workload import ClientSpec, Workload
    from test_twin_error_attribution import FRAME

    seen = []

    class Host:
        def bind(self, clock):
            seen.append(clock)

    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed"),), capacity=6)
    read = []

    def verify(batch):                                           # the state is read on the simulation's clock
        read.append(seen[0]())
        return 0.005
    simulate(wl, FCFS(), FixedS(6, 1), Times(draft=[lambda k: 0.004 * k], verify=verify, host=Host()),
             PromptAcceptance(FRAME), seed=0)
    assert len(seen) == 1 and len(read) > 2 and read == sorted(read) and read[-1] > read[0] > 0
