"""The SimPy twin: it runs the very policy objects it is given, is deterministic, conserves tokens,
and reproduces closed forms (round time, i.i.d. tokens per round)."""
import numpy as np
import pytest

from specedge import sampling
from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.interfaces import Times
from specedge.serving.sim.twin import IIDAcceptance, TraceAcceptance, simulate
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
    times = Times([lambda s: 0.01 * s] * 3, AffineTokens(0.02, 0.001))
    a = simulate(_wl(), former, alloc, times, IIDAcceptance(0.6), seed=4)
    assert former.calls > 0 and alloc.X and set(alloc.alpha_hat) == {0, 1, 2}
    b = simulate(_wl(), Recording(), GoodspeedAllocator(9), times, IIDAcceptance(0.6), seed=4)
    assert a.equals(b)
    # conservation: every client generated exactly its tokens per prompt
    assert (a.groupby("client").tokens.sum() == 40 * 2).all()


def test_round_time_and_iid_tokens_per_round_match_closed_forms():
    times = Times([lambda s: 0.0] * 2, AffineTokens(0.05, 0.0))
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


def test_round_time_closed_form_with_link_and_per_token_verify_cost():
    """Sync rounds, every client drafting S = 3 with its own drafting speed, a link with latency and a
    per-byte cost each way, a verification pass c0 + c_tok * sum(S_i + 1) (``runtime.AffineTokens``):
    every client starts each round together (equal replies), so each round lasts
    max_i(d_i S + up(S)) + c0 + c_tok * N (S + 1) + down, and the server's t_send is its own send time."""
    n, s, d = 3, 3, (0.002, 0.005, 0.003)
    up = lambda c, k: 0.0004 + 2e-5 * k
    verify = AffineTokens(0.009, 6e-5)
    times = Times([lambda k, di=di: di * k for di in d], verify, up=up, down=lambda c: 0.0007, send=lambda c: 1e-6)
    log = simulate(_wl(n, tokens=10_000, prompts=1), SyncRounds(), FixedS(n * s, n), times, IIDAcceptance(0.5),
                   rounds=50, seed=0)
    expect_verify = 0.009 + 6e-5 * n * (s + 1)
    expect = max(di * s for di in d) + up(0, s) + expect_verify + 0.0007
    assert np.allclose(log.t_verify, expect_verify) and np.allclose(log.t_round, expect)
    assert np.allclose(log.t_send, 1e-6) and np.allclose(log.t_draft, np.tile(np.array(d) * s, 50))
    assert np.allclose(log.groupby("batch").start.first().diff().dropna(), expect)


def test_verify_model_is_built_by_the_profiles_kind():
    from specedge import hardware
    from specedge.experiments.tran2025 import runs as ex
    from specedge.serving.timemodels.estimator import Estimator
    from specedge.serving.timemodels.runtime import verify_model

    m = verify_model("tran2025_paper")
    assert m == AffineTokens(8.8e-3, 6.0e-5)
    assert verify_model(hardware.load_profile("tran2025_paper")) == m          # a loaded profile works alike
    assert ex.paper_times(ex.table1()[0]).verify == m                          # the notebooks' twin uses it
    assert isinstance(verify_model("li2026_paper"), Estimator)
    with pytest.raises(ValueError, match="linear_batch"):
        verify_model("zhu2025_paper", "verify" if "verify" in hardware.load_profile("zhu2025_paper").runtime
                     else sorted(hardware.load_profile("zhu2025_paper").runtime)[0])
    with pytest.raises(ValueError, match="c_tok"):
        AffineTokens(0.01, -1e-5)


def test_trace_acceptance_from_a_frame_equals_from_the_file_and_the_real_pair_loads():
    import pandas as pd

    from specedge.serving import acceptance_sources
    from specedge.zoo import realpair
    from specedge.serving.sim.twin import TRACES
    frame = pd.read_csv(TRACES)
    a, b = TraceAcceptance(), TraceAcceptance(frame)
    assert a.rounds.keys() == b.rounds.keys()
    for k in a.rounds:
        for x, y in zip(a.rounds[k], b.rounds[k]):
            np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match=r"missing columns \['q'\]"):
        TraceAcceptance(frame.drop(columns="q"))
    real = TraceAcceptance(acceptance_sources.traces("realpair"), target=realpair.TARGET)
    assert {d for _, d, _ in real.rounds} == set(realpair.ALL_DOMAINS)   # the pair's eight domains, both T
    assert len(real.rounds) == 2 * len(realpair.ALL_DOMAINS)


def test_sync_rounds_waits_for_every_active_client_even_with_a_long_queue():
    """Two requests of client 0 queued, none of client 1: as many requests as clients, still no batch."""
    from specedge.serving.policies.batching import SyncRounds
    from specedge.serving.interfaces import Pending

    q = [Pending(0, "a", 0, 0.0, 2, 3), Pending(0, "a", 1, 0.1, 2, 3)]
    assert SyncRounds().form(q, 0.2, frozenset({0, 1})) == []
    b = Pending(1, "b", 0, 0.2, 2, 3)
    assert SyncRounds().form(q + [b], 0.3, frozenset({0, 1})) == [q[0], b]


class _StopAt:
    """A stop rule's outcome fixed: every round drafts ``s`` tokens (the rule flags position s + 1 unless
    s reaches the window), all accepted."""
    def __init__(self, s):
        self.s = s

    def draw_controlled(self, rng, draft, domain, temperature, gamma, rule):
        s = min(self.s, gamma)
        return s, s, float(s)


@pytest.mark.parametrize("s_rule", [0, 3, 8])
def test_a_round_the_stop_rule_ended_costs_the_pass_it_judged(s_rule):
    """WISP's controller judges position S + 1's logits before it stops (serving.real.drafter: one draft-model
    pass more than the S tokens it sends; a real S = 0 round takes a pass, data/serving_validation);
    a round that reached its window (gamma = 8) or the response's end takes its S passes only."""
    spec = ClientSpec("draft-xs", ("code",), 1, 40, gamma=8, draft_rule="predictor:mlp")
    times = Times([lambda k: 0.01 * k], AffineTokens(0.02, 0.0))
    log = simulate(Workload("target-m", (spec,), capacity=8), SyncRounds(), FixedS(8, 1), times, _StopAt(s_rule), seed=0)
    left = 40 - (log.tokens.cumsum() - log.tokens).to_numpy()          # tokens still to make at each round
    judged = (log.S.to_numpy() < 8) & (log.S.to_numpy() < left - 1)
    assert judged.any() == (s_rule < 8)
    assert np.allclose(log.t_draft, 0.01 * (log.S + judged))
    assert (log.S == s_rule).sum() >= 3
