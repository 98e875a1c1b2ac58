"""The passes' factors over eq (19) drawn by the batch's new tokens (``measured_times.ByShape``, ``fit``'s
``verify_tokens``, ``times(..., pass_shape=True)``, the twin kind "pass shape"): eq (19)'s affine form misses the step
from one new token (a matrix-vector pass) to several."""
import numpy as np
import pytest

from specedge.experiments.serving_validation import runs as sv
from specedge.serving.interfaces import Pending
from specedge.serving.log import parse_batch, verified
from specedge.serving.timemodels import measured_times
from specedge.serving.timemodels.runtime import log_batches
from test_host_state import fit_on_repeats


def _pools(shape):
    return [set(p.tolist()) for p in shape.pools]


def test_each_shape_draws_from_its_own_bin_and_a_sparse_bin_from_its_neighbours():
    n = measured_times.SHAPE_MIN
    # bins of SHAPE_EDGES (1, 2, 3, 4, 6, 9, ...): plenty of one token (1.0) and of 4-5 tokens (3.0), a few of 2 (2.0)
    tokens = np.array([1] * n + [2] * 3 + [4, 5] * n)
    values = np.array([1.0] * n + [2.0] * 3 + [3.0] * (2 * n))
    shape = measured_times.ByShape(values, tokens, np.random.default_rng(0))
    pools = _pools(shape)
    assert pools[0] == {1.0} and pools[3] == {3.0}                  # full bins keep to themselves
    assert pools[1] == {1.0, 2.0}                                   # 3 of 2 tokens: widened to 1 and 3 tokens
    assert pools[2] == {2.0, 3.0}                                   # none of 3: its neighbours, 2 and 4-5 tokens
    assert {shape(1) for _ in range(50)} == {1.0}
    assert {shape(5) for _ in range(50)} == {3.0} and {shape(4) for _ in range(50)} == {3.0}
    assert {shape(2) for _ in range(200)} == {1.0, 2.0}
    # past the last edge: the last bin (widened to the data); no new token (a pass of nothing new): the first
    assert shape(10_000) in {1.0, 2.0, 3.0} and {shape(0) for _ in range(50)} == {1.0}
    # one bin of everything when there are fewer than SHAPE_MIN values in all
    few = measured_times.ByShape(np.array([0.5, 2.0]), np.array([1, 60]), np.random.default_rng(0))
    assert all(p == {0.5, 2.0} for p in _pools(few))


def test_the_draws_are_deterministic_under_their_seed_and_the_inputs_checked():
    tokens, values = np.arange(1, 101), np.linspace(0.8, 1.2, 100)
    a = measured_times.ByShape(values, tokens, np.random.default_rng(3))
    b = measured_times.ByShape(values, tokens, np.random.default_rng(3))
    assert [a(t) for t in range(1, 60)] == [b(t) for t in range(1, 60)]
    with pytest.raises(ValueError, match="values, of"):
        measured_times.ByShape(values, tokens[:-1], np.random.default_rng(0))
    with pytest.raises(ValueError, match="values, of"):
        measured_times.ByShape(np.zeros(0), np.zeros(0, int), np.random.default_rng(0))


def _batch(*new):
    return [Pending(client=i, session=f"{i}", round=0, arrival=0.0, n_draft=max(t - 1, 0), n_new=t)
            for i, t in enumerate(new)]


def test_the_twins_pass_takes_the_factor_of_its_batchs_shape():
    n = measured_times.SHAPE_MIN
    model = measured_times.Drawn((), np.array([0.5] * n + [2.0] * n), np.zeros(1), np.zeros(1), (),
                                 verify_tokens=np.array([1] * n + [7] * n))
    eq19 = lambda batch: 0.004   # noqa: E731
    t = measured_times.times(model, eq19, 0, pass_shape=True)
    assert {round(t.verify(_batch(1)), 9) for _ in range(30)} == {0.002}
    assert {round(t.verify(_batch(3, 4)), 9) for _ in range(30)} == {0.008}      # 7 new tokens in all
    plain = measured_times.times(model, eq19, 0)
    assert {round(plain.verify(_batch(1)), 9) for _ in range(200)} == {0.002, 0.008}
    with pytest.raises(ValueError, match="host, pass_shape"):
        measured_times.times(model, eq19, 0, host=True, pass_shape=True)
    with pytest.raises(ValueError, match="verify_tokens"):
        measured_times.times(measured_times.Drawn((), np.ones(1), np.zeros(1), np.zeros(1), ()), eq19, 0,
                             pass_shape=True)


@pytest.fixture(scope="module")
def runs():
    return sv.load_repeats()


def test_fitted_on_real_runs_each_factor_knows_its_batchs_new_tokens_and_one_token_runs_faster(runs):
    keys, passes, verify, m = fit_on_repeats(runs, 1)
    want = np.concatenate([[sum(new for new, _ in parse_batch(b)) for b in log_batches(runs[k])["batch"]]
                           for k in keys])
    assert len(m.verify_tokens) == len(m.verify_factors) and (m.verify_tokens == want).all()
    # each run's rows in its order: the first run's first pass is its first verified batch
    first = verified(runs[keys[0]]).sort_values("batch")
    assert m.verify_tokens[0] == first[first["batch"] == first["batch"].iloc[0]]["n_new"].sum()
    # the finding the kind rests on: one new token below eq (19), two to twelve a fifth slower than one (0.88, 1.07)
    one = np.median(m.verify_factors[m.verify_tokens == 1])
    several = np.median(m.verify_factors[(m.verify_tokens >= 2) & (m.verify_tokens <= 12)])
    assert one < 0.95 and several / one > 1.12
    assert measured_times.fit(runs, keys, passes, None).verify_tokens is None
    assert sv.KINDS["pass shape"] - sv.KINDS["busy periods"] == {"shape"}


def test_the_kind_pass_shape_gives_the_twins_longer_passes_to_its_rounds_that_draft(runs):
    """WISP's setting, one client: most rounds draft nothing (one new token to verify); the twin of the kind "pass
    shape" verifies its drafting rounds' batches at their own shape's factor, the validated twin at every pass's."""
    import pandas as pd

    key = ("li2026", "WISP", 1, 2)
    trace, prompt = sv.acceptances("li2026")
    ctx = sv.contexts(runs, "li2026", trace, prompt, keys=[key])[key]

    def ratio(kind):   # the median pass of the rounds that drafted over that of those that did not
        log = verified(pd.concat([ctx.stochastic(kind, s) for s in (0, 1)]))
        return log.loc[log["S"] > 0, "t_verify"].median() / log.loc[log["S"] == 0, "t_verify"].median()
    assert ratio("pass shape") > 1.15 and ratio("busy periods") < 1.1
