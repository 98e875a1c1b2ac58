"""The zoo's acceptance table: greedy rows derived from one target decode equal real speculative rounds."""
import pandas as pd
import pytest

from specedge.zoo import acceptance


@pytest.mark.parametrize("agree, gamma, n, accepted, drafted", [
    ([True] * 10, 4, 10, [4, 4], [4, 4]),                 # full windows: 5 tokens a round
    ([True] * 7, 4, 7, [4, 1], [4, 1]),                   # the last window is capped so drafts + 1 token fit
    ([False] * 5, 3, 5, [0] * 5, [3, 3, 2, 1, 0]),        # every draft rejected: one token per round
    ([True, False, True, True, True, True], 2, 6, [1, 2, 0], [2, 2, 0]),
    # a round that rejects at k moves to k + 1 (its correction token), whatever agreement follows
    ([False, True, True, False, True], 8, 5, [0, 2, 0], [4, 3, 0]),
])
def test_greedy_rounds_closed_forms(agree, gamma, n, accepted, drafted):
    assert acceptance.greedy_rounds(agree, gamma, n) == (accepted, drafted)


def test_derived_greedy_rows_equal_live_speculative_rounds():
    """At T = 0 the rows from one teacher-forced draft pass equal ``decoding.speculative_batch``'s, count for
    count, at short, middle and long γ (a wrong window cap, an off-by-one in the round's advance or a draft conditioned on
    its own mistakes would all change them)."""
    kw = dict(drafts=("draft-xs", "draft-l"), targets=("target-m",), domains=("code",), temperatures=(0.0,),
              gammas=(1, 3, 8), n_prompts=3, max_new_tokens=24, seed=0, progress=False, n_jobs=1)
    derived = acceptance.live_table(**kw)
    live = acceptance.live_table(greedy="live", **kw)
    pd.testing.assert_frame_equal(derived, live)
    assert derived.accepted.sum() > 0 and (derived.accepted < derived.drafted).any()   # neither side trivial


def test_greedy_mode_is_checked():
    with pytest.raises(ValueError, match="greedy"):
        acceptance.live_table(greedy="fast")
