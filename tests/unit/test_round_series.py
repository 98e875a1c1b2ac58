"""Per-round series of a serving log (serving.analysis.round_series): goodput peaks inside bands, a sync round's time."""
import numpy as np
import pandas as pd
import pytest

from specedge.serving.analysis import round_series
from specedge.serving.timemodels.time_models import DraftTime, Link, times


def test_peaks_in_bands_counts_local_maxima_inside_either_band():
    # client 0: peaks at batches 1 (5) and 3 (6); client 1: one peak at batch 1 (9), a plateau after is not one
    f = pd.DataFrame(dict(client=[0] * 5 + [1] * 4, batch=[0, 1, 2, 3, 4, 0, 1, 2, 3],
                          tokens=[1, 5, 2, 6, 3, 1, 9, 9, 9],
                          real_ma=[3.0] * 9, real_std=[2.0] * 9, est_ma=[6.2] * 9, est_std=[0.5] * 9))
    # 5 lies in the real band [1, 5]; 6 only in the estimate's [5.7, 6.7]; 9 in neither
    assert round_series.peaks_in_bands(f) == pytest.approx(2 / 3)
    assert round_series.peaks_in_bands(f.sample(frac=1, random_state=0)) == pytest.approx(2 / 3)   # order-free
    assert round_series.peaks_in_bands(f.assign(est_std=0.0)) == pytest.approx(1 / 3)
    assert np.isnan(round_series.peaks_in_bands(f.assign(tokens=[1, 2, 3, 4, 5, 1, 2, 3, 4])))       # no peak at all


def test_sync_round_seconds_adds_the_slowest_drafter_the_longest_request_the_pass_and_the_reply():
    seen = []
    tm = times([DraftTime(0.5), DraftTime(0.25)], Link(0.2, 8.0, lambda s: 10 * s, reply_bytes=4),
               lambda batch: seen.append(batch) or 0.01 * sum(p.n_new for p in batch))
    # drafting max(3 x 0.5, 5 x 0.25) = 1.5; up 0.1 + 8 x 50 / 8 = 50.1 (S = 5); pass 0.01 x (4 + 6); down 0.1 + 4
    assert round_series.sync_round_seconds(tm, np.array([3, 5])) == pytest.approx(1.5 + 50.1 + 0.1 + 4.1)
    assert [(p.client, p.n_draft, p.n_new) for p in seen[0]] == [(0, 3, 4), (1, 5, 6)]


def test_estimate_distance_is_the_norm_per_round_with_labels_first():
    est = pd.DataFrame(dict(batch=[0, 0, 1, 1], client=[1, 0, 0, 1], X=[4.0, 1.0, 3.0, 2.0]))
    d = round_series.estimate_distance(est, np.array([0.0, 0.0]), config="c", experiment="e")
    assert list(d.columns) == ["config", "experiment", "iteration", "distance"]
    assert d.iteration.tolist() == [1, 2] and d.distance.to_numpy() == pytest.approx([17 ** 0.5, 13 ** 0.5])


def test_utility_frame_and_with_total_keep_labels_first_and_add_up():
    log = pd.DataFrame(dict(batch=[0, 0, 1, 1], client=[0, 1, 0, 1], tokens=[2, 4, 4, 2], event=[""] * 4))
    f = round_series.utility_frame(log, config="c", seed=3)
    assert list(f.columns) == ["config", "seed", "iteration", "utility"] and f.iteration.tolist() == [1, 2]
    assert f.utility.to_numpy() == pytest.approx(round_series.utility_curve(log).to_numpy())
    t = round_series.with_total(pd.DataFrame([dict(receiving=1.0, verification=2.5, sending=0.25)]))
    assert t.total.tolist() == [3.75]
