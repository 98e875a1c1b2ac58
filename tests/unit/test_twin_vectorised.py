"""The vectorised sync-rounds twin (``serving.sim.twin_vectorised``) is statistically equivalent to the event
twin: two-sample tests on a client's round times and on committed tokens per round (a different random
stream: the same distribution), for Fixed-S and GOODSPEED; and the same tests reject a vectorised twin
with a changed model (drafting 10 % slower; one token fewer accepted), so they can fail. (They also
caught a subtler one while it was written: a window longer than its traced round redrawn from scratch
instead of continued, +0.6 % on GOODSPEED's round times, which is why the runs are 10,000 rounds.)"""
import numpy as np
import pytest
from scipy import stats

from specedge.serving.sim import twin_vectorised
from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.interfaces import Times
from specedge.serving.sim.twin import TraceAcceptance, simulate
from specedge.serving.workload import ClientSpec, Workload

N, ROUNDS, DRAFT, VERIFY, UP, DOWN = 8, 10_000, 0.004, AffineTokens(0.009, 6e-5), 3e-4, 2e-4
WL = Workload("target-m", tuple(ClientSpec(("draft-xs", "draft-s")[i % 2], ("code", "math"), 2, 150)
                                for i in range(N)), capacity=20)


@pytest.fixture(scope="module")
def acc():
    return TraceAcceptance()


def _alloc(policy):
    return FixedS(20, N) if policy == "Fixed-S" else GoodspeedAllocator(20, beta=0.5)


@pytest.fixture(scope="module")
def event_logs(acc):
    times = Times([lambda s: DRAFT * s] * N, VERIFY, up=lambda c, s: UP, down=lambda c: DOWN)
    return {p: simulate(WL, SyncRounds(), _alloc(p), times, acc, rounds=ROUNDS, seed=11) for p in ("Fixed-S", "GOODSPEED")}


def _vectorised(acc, policy, draft=DRAFT, seed=12):
    return twin_vectorised.simulate_sync(WL, _alloc(policy), draft, VERIFY, acc, rounds=ROUNDS, up=UP, down=DOWN, seed=seed)


def _same(a, b) -> bool:
    """Round times of client 0 (whole nanoseconds: the two models sum in other orders) and committed tokens
    of every round: a two-sample KS test and a chi-square test of the token counts, each at p > 0.01."""
    ta, tb = (x[x.client == 0].t_round.round(9) for x in (a, b))
    ks = stats.ks_2samp(ta, tb).pvalue
    counts = np.array([np.bincount(x.tokens, minlength=10)[:10] for x in (a, b)])
    chi = stats.chi2_contingency(counts[:, counts.sum(0) > 0]).pvalue
    return ks > 0.01 and chi > 0.01


@pytest.mark.parametrize("policy", ["Fixed-S", "GOODSPEED"])
def test_vectorised_twin_matches_the_event_twin_in_distribution(acc, event_logs, policy):
    log = _vectorised(acc, policy)
    assert len(log) == ROUNDS * N and set(log.columns) == set(event_logs[policy].columns)
    assert _same(log, event_logs[policy])
    assert abs(log.tokens.mean() / event_logs[policy].tokens.mean() - 1) < 0.01


def test_the_equivalence_test_rejects_a_changed_model(acc, event_logs, monkeypatch):
    assert not _same(_vectorised(acc, "Fixed-S", draft=1.1 * DRAFT), event_logs["Fixed-S"])
    init = twin_vectorised._Tables.__init__

    def one_fewer(self, *a):                     # every traced round accepts one draft fewer
        init(self, *a)
        self.runs = np.maximum(self.runs - 1, 0)
    monkeypatch.setattr(twin_vectorised._Tables, "__init__", one_fewer)
    assert not _same(_vectorised(acc, "Fixed-S"), event_logs["Fixed-S"])


def test_vectorised_twin_checks_its_scope(acc):
    fixed = Workload("target-m", (ClientSpec(draft_rule="predictor:mlp"),))
    with pytest.raises(ValueError, match="draft_rule"):
        twin_vectorised.simulate_sync(fixed, FixedS(8, 1), DRAFT, VERIFY, acc, rounds=3)
    with pytest.raises(ValueError, match="rounds"):
        twin_vectorised.simulate_sync(WL, FixedS(20, N), DRAFT, VERIFY, acc, rounds=0)
