"""The rules that name a tie's or a loss's cause and decide a paired margin's verdict, on seeds whose interval is
worked by hand: tran2025's "GOODSPEED ends above B" cause and the arena's winner-by-seed verdict."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from specedge.experiments.edge_sd_arena import results as arena_results
from specedge.experiments.tran2025.figures import _tie_or_loss

# paired differences 1, 2, 3: mean 2, sd 1, 95 % t-interval 2 -+ t(0.975, 2) / sqrt(3) = [-0.48, 4.48]: a tie
HALF = stats.t.ppf(0.975, 2) / np.sqrt(3)


def test_a_claim_that_holds_has_no_cause():
    assert _tie_or_loss(True, [5.0, 6.0, 7.0], [0.0, 0.0, 0.0]) == ""


def test_a_tie_is_the_models_cause_and_a_loss_names_none():
    assert 2 - HALF < 0 < 2 + HALF
    assert _tie_or_loss(False, [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]) == "models"          # interval contains 0
    assert _tie_or_loss(False, [0.0, 0.0, 0.0], [1.0, 2.0, 3.0]) == "models"          # the same, mirrored
    assert _tie_or_loss(False, [0.0, 0.0, 0.0], [10.0, 11.0, 12.0]) == "unexplained"  # a - b in [-13.5, -8.5]
    # above B (a clear win) yet the claim failed, e.g. against the other baseline: no loss, so not "unexplained"
    assert _tie_or_loss(False, [10.0, 11.0, 12.0], [0.0, 0.0, 0.0]) == "models"


def _s(values, seeds=(0, 1, 2)):
    return pd.Series(values, index=list(seeds), dtype=float)


def test_paired_margin_signs_and_verdicts_by_hand():
    m, lo, hi, verdict = arena_results._paired(_s([11.0, 12.0, 13.0]), _s([0.0, 0.0, 0.0]), +1)
    assert (m, verdict) == (12.0, "wins") and (lo, hi) == pytest.approx((12 - HALF, 12 + HALF))
    m, lo, hi, verdict = arena_results._paired(_s([11.0, 12.0, 13.0]), _s([0.0, 0.0, 0.0]), -1)
    assert (m, verdict) == (-12.0, "loses") and (lo, hi) == pytest.approx((-12 - HALF, -12 + HALF))
    assert arena_results._paired(_s([1.0, 2.0, 3.0]), _s([0.0, 0.0, 0.0]), +1)[3] == "tie"


def test_paired_margin_uses_common_seeds_only():
    # seed 3 only in a: ignored; seeds 0-2 paired as above
    m, _, _, verdict = arena_results._paired(_s([11.0, 12.0, 13.0, -100.0], (0, 1, 2, 3)), _s([0.0, 0.0, 0.0]), +1)
    assert (m, verdict) == (12.0, "wins")
    one = arena_results._paired(_s([5.0], (0,)), _s([1.0], (0,)), +1)
    assert one[0] == 4.0 and np.isnan(one[1]) and one[3] == "no interval"
    assert arena_results._paired(_s([5.0, np.nan], (0, 1)), _s([1.0, 2.0], (0, 1)), +1)[3] == "no interval"
