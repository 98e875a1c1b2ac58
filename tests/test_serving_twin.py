"""The SimPy twin: it runs the very policy objects it is given, is deterministic, conserves tokens,
and reproduces closed forms (round time, i.i.d. tokens per round)."""
import numpy as np
import pytest

from specedge import sampling
from specedge.serving.allocation import FixedS, GoodspeedAllocator
from specedge.serving.batching import SyncRounds
from specedge.serving.twin import IIDAcceptance, Times, TraceAcceptance, linear_verify, simulate
from specedge.serving.workload import ClientSpec, Workload


class Recording(SyncRounds):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def form(self, queue, now, active):
        self.calls += 1
        return super().form(queue, now, active)


def _wl(n=3, tokens=40, prompts=1):
    return Workload("target-m", tuple(ClientSpec("draft-xs", ("code", "math"), prompts, tokens) for _ in range(n)),
                    capacity=3 * n)


def test_twin_uses_the_given_objects_and_is_deterministic():
    former, alloc = Recording(), GoodspeedAllocator(9)
    times = Times([lambda s: 0.01 * s] * 3, linear_verify(0.02, 0.001))
    a = simulate(_wl(), former, alloc, times, IIDAcceptance(0.6), seed=4)
    assert former.calls > 0 and alloc.X and set(alloc.alpha_hat) == {0, 1, 2}
    b = simulate(_wl(), Recording(), GoodspeedAllocator(9), times, IIDAcceptance(0.6), seed=4)
    assert a.equals(b)
    # conservation: every client generated exactly its tokens per prompt
    assert (a.groupby("client").tokens.sum() == 40 * 2).all()


def test_round_time_and_iid_tokens_per_round_match_closed_forms():
    times = Times([lambda s: 0.0] * 2, linear_verify(0.05, 0.0))
    log = simulate(_wl(2, tokens=10_000, prompts=1), SyncRounds(), FixedS(8, 2), times, IIDAcceptance(0.7),
                   rounds=3000, seed=1)
    assert np.allclose(log.t_round, 0.05) and np.allclose(log.t_verify, 0.05)
    mean = log.tokens.mean()
    expect = sampling.expected_tokens_per_round(0.7, 4)
    se = log.tokens.std() / np.sqrt(len(log))
    assert abs(mean - expect) < 4 * se


def test_trace_acceptance_is_measured_data():
    acc = TraceAcceptance()
    rng = np.random.default_rng(0)
    draws = [acc.draw(rng, "draft-l", "code", 0.0, 4) for _ in range(2000)]
    n = np.array([d[0] for d in draws])
    assert 0 < n.mean() < 4 and all(0 <= d[1] <= 4 for d in draws)
    with pytest.raises(KeyError, match="no traces"):
        acc.draw(rng, "draft-zz", "code", 0.0, 2)
    with pytest.raises(FileNotFoundError, match="make zoo"):
        TraceAcceptance("/nonexistent/traces.csv.gz")
