"""``uniform_ints.Ints`` returns exactly what numpy's ``Generator.integers(n)`` returns, call for call."""
import numpy as np
import pytest

from specedge.serving.sim.uniform_ints import Ints


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_ints_match_numpy_call_for_call(seed):
    ns = np.random.default_rng(100 + seed).integers(1, 2**32, 5000).tolist()
    ns += [1, 2, 3, 2**31 + 1, 2**32 - 1, 2**32] * 40 + list(range(1, 2000))
    np.random.default_rng(seed).shuffle(ns)
    ref = np.random.default_rng(seed)
    ints = Ints(np.random.default_rng(seed), block=7)     # small blocks: refills mid-stream
    assert [ints.integers(n) for n in ns] == [int(ref.integers(n)) for n in ns]


def test_ints_pick_up_a_half_used_word():
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    a.integers(10), b.integers(10)                         # leaves the high half of a word buffered
    ints = Ints(b)
    assert [ints.integers(77) for _ in range(50)] == [int(a.integers(77)) for _ in range(50)]
    with pytest.raises(ValueError, match="n"):
        ints.integers(0)
