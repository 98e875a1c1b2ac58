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


def test_teacher_card_rows_per_domain_and_temperature_with_extra_rows():
    from specedge import zoo

    draft, target, tok = zoo.load_pair("draft-xs", "target-m")
    recs = {d: zoo.eval_records(d, 2) for d in ("code", "qa")}
    seen = []
    card, more = acceptance.teacher_card(draft, target, tok, recs, max_len=64, progress=lambda *_: None,
                                         extra=lambda q, p: seen.append((len(q), q[0].shape[-1])) or [dict(n=len(p))])
    assert list(zip(card.domain, card.temperature)) == [(d, t) for d in recs for t in acceptance.TEMPERATURES]
    assert card.alpha.between(0, 1).all() and (card.positions > 0).all()
    assert seen == [(2, len(tok))] * 2 and list(more.domain) == ["code", "qa"] and (more.n == 2).all()
    # the card is pair_acceptance on the same logits
    q = [x[:, :len(tok)] for x in acceptance.completion_logits(draft, tok, recs["qa"], 64)]
    p = [x[:, :len(tok)] for x in acceptance.completion_logits(target, tok, recs["qa"], 64)]
    want = acceptance.pair_acceptance(q, p)
    assert card[card.domain == "qa"].alpha.tolist() == [round(want[t], 4) for t in acceptance.TEMPERATURES]
