"""Summaries of draws in claims: means with Student-t intervals per group, the one percent reduction, the
reduction of a ratio of means with its standard error, and per-curve monotone flags."""
import math

import numpy as np
import pandas as pd
import pytest

from specedge import claims


def test_mean_intervals_per_group_are_mean_interval():
    df = pd.DataFrame(dict(g=["b", "a", "b", "a", "b", "c"], v=[2.0, 1.0, 2.0, 3.0, 2.0, 5.0]))
    s = claims.mean_intervals(df, ["g"], "v")
    assert list(s.columns) == ["g", "mean", "n", "ci_low", "ci_high"]
    assert list(s.g) == ["b", "a", "c"]                                  # groups in order of appearance
    s = s.set_index("g")
    half = 12.706204736 * math.sqrt(2) / math.sqrt(2)                    # t(0.975, 1) * sd / sqrt(n)
    assert s.loc["a", "mean"] == 2.0 and s.loc["a", "n"] == 2
    assert s.loc["a", "ci_low"] == pytest.approx(2.0 - half) and s.loc["a", "ci_high"] == pytest.approx(2.0 + half)
    assert s.loc["b", "ci_low"] == s.loc["b", "ci_high"] == 2.0          # no spread: a zero-width interval
    assert np.isnan(s.loc["c", "ci_low"]) and np.isnan(s.loc["c", "ci_high"])   # one draw: no interval
    assert s.loc["a", ["mean", "ci_low", "ci_high"]].tolist() == pytest.approx(list(claims.mean_interval([1.0, 3.0])))
    two = claims.mean_intervals(df.assign(h=[0, 0, 1, 0, 1, 1]), ["g", "h"], "v", confidence=0.5)
    assert len(two) == 4 and list(two.columns[:2]) == ["g", "h"]
    assert two.set_index(["g", "h"]).loc[("a", 0), ["ci_low", "ci_high"]].tolist() == pytest.approx([1.0, 3.0])  # t(0.75, 1) = 1
    with pytest.raises(ValueError, match="confidence"):
        claims.mean_intervals(df, ["g"], "v", confidence=1.5)


def test_reduction_pct_and_reductions_per_group():
    assert claims.reduction_pct(70.0, 100.0) == pytest.approx(30.0)
    assert claims.reduction_pct(np.array([50.0, 120.0]), np.array([100.0, 100.0])).tolist() == pytest.approx([50.0, -20.0])
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="baseline"):
            claims.reduction_pct(1.0, bad)
    d = pd.DataFrame(dict(k=[1, 1, 1, 2, 2], scheme=["ours", "base", "ours", "ours", "base"],
                          latency_s=[60.0, 100.0, 80.0, 10.0, 40.0]))
    r = claims.reductions(d, "ours", "base", ["k"], "latency_s", "scheme").set_index("k").reduction_pct
    assert r[1] == pytest.approx(30.0) and r[2] == pytest.approx(75.0)   # from the means over draws


def test_ratio_reduction_and_its_standard_error():
    rng = np.random.default_rng(0)
    y = rng.exponential(10.0, 4000) + 50
    x = 0.8 * y
    red, se = claims.ratio_reduction(x, y)
    # an exact ratio has no spread; in floating point the delta method's variance (three terms that cancel)
    # keeps a rounding floor of about sqrt(eps * var(y) / n) / mean(y): 4.4e-9 on an AVX-512 host, 0 on AVX2
    floor = 100 * np.sqrt(8 * np.finfo(float).eps * y.var(ddof=1) / y.size) / y.mean()
    assert red == pytest.approx(20.0) and 0 <= se <= floor and floor < 1e-7
    red, se = claims.ratio_reduction(x + rng.normal(0, 5, y.size), y)
    assert abs(red - 20.0) < 4 * se and 0 < se < 1
    # the standard error of independent noise: close to the spread of the reduction over many resamples
    reds = [claims.ratio_reduction(*(rng.normal(8.0, 1.0, (2, 50)) + [[0.0], [2.0]]))[0] for _ in range(2000)]
    assert claims.ratio_reduction(rng.normal(8.0, 1.0, 50_000), rng.normal(10.0, 1.0, 50_000))[1] * math.sqrt(1000) \
        == pytest.approx(np.std(reds), rel=0.1)
    red, se = claims.ratio_reduction([8.0], [10.0])
    assert red == pytest.approx(20.0) and np.isnan(se)
    with pytest.raises(ValueError, match="paired"):
        claims.ratio_reduction([1.0, 2.0], [1.0])


def test_monotone_flags_per_curve():
    df = pd.DataFrame(dict(scheme=["a"] * 6 + ["b"] * 6, K=[1, 1, 2, 2, 3, 3] * 2,
                           latency_s=[1, 3, 3, 5, 6, 6, 4, 4, 4, 4, 5, 5]))
    f = claims.monotone_flags(df, "K", ["scheme"], True, "latency_s")
    assert list(f.values()) == [True, False]          # a: means 2 < 4 < 6; b: 4 = 4 is a tie
    assert next(iter(f)).startswith("a: 2 < 4 < 6")
    assert list(claims.monotone_flags(df.assign(latency_s=-df.latency_s), "K", ["scheme"], False, "latency_s").values()) \
        == [True, False]
    shuffled = df.sample(frac=1.0, random_state=0)    # rows in any order: the curve follows x
    assert claims.monotone_flags(shuffled, "K", ["scheme"], True, "latency_s") == f
    two = claims.monotone_flags(df.assign(c="x"), "K", ["scheme", "c"], True, "latency_s")
    assert list(two)[0].startswith("a, x: ") and not claims.all_of(two)
