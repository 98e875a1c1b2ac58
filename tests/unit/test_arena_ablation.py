"""The arena's ablation at one point (``arena_results.ablation``): each technique of the best combination switched
off (or, where it is off, its best option switched on), the extra draft policy, everything off and the references,
each with its change against the best paired by seed; and the regime map's edges (one candidate, one seed)."""
import numpy as np
import pandas as pd
import pytest

from specedge.experiments.edge_sd_arena import runs as arena
from specedge.experiments.edge_sd_arena import results as res

POINT = (1e8, 4, "fast")
GOOD = {"goodspeed / ids / wisp": 20.0, "fixed / ids / wisp": 18.0, "goodspeed / dense / wisp": 12.0, "goodspeed / ids / sync": 15.0,
        "goodspeed-slo / ids / wisp": 19.0, "fixed / dense / sync": 8.0, arena.CENTRALIZED: 16.0, arena.AR_EDGE: 5.0,
        "as2 / topk / fcfs": 30.0}     # another point's: not in the ablation


def _rows():
    out = []
    for label, g in GOOD.items():
        for s, noise in enumerate((0.1, -0.1, 0.05)):
            point = (2e8, 4, "fast") if label.startswith("as2") else POINT
            out.append(dict(combination=label, bandwidth_bps=point[0], devices=point[1], mix=point[2], seed=s,
                            goodput_tok_s=g + noise, jain=0.9))
    return pd.DataFrame(out)


def test_ablation_switches_each_technique_against_the_best():
    a = res.ablation(_rows(), POINT, metrics_=("goodput_tok_s", "jain")).set_index("variant")
    assert a.loc["best", "combination"] == "goodspeed / ids / wisp"
    assert a.loc["draft off (fixed)", "goodput_tok_s_change"] == pytest.approx(-2.0)
    assert a.loc["payload off (dense)", "goodput_tok_s_change"] == pytest.approx(-8.0)
    assert a.loc["former off (sync)", "goodput_tok_s_change"] == pytest.approx(-5.0)
    assert a.loc["draft = goodspeed-slo", "goodput_tok_s_change"] == pytest.approx(-1.0)
    assert a.loc["all off", "combination"] == "fixed / dense / sync"
    assert a.loc["reference: centralized", "goodput_tok_s"] == pytest.approx(16.0 + 0.05 / 3)
    assert (a.goodput_tok_s_change_low <= a.goodput_tok_s_change).all() and a.loc["best", "jain_change"] == 0.0
    # a best with a technique off: its best other option is switched on instead
    b = res.ablation(_rows(), POINT, best="fixed / ids / wisp", metrics_=("goodput_tok_s",)).set_index("variant")
    assert b.loc["draft on (goodspeed)", "goodput_tok_s_change"] == pytest.approx(2.0)
    assert "draft = goodspeed-slo" in b.index


def test_regime_map_edges():
    one = _rows()[lambda d: d.combination == "as2 / topk / fcfs"]
    assert res.regime_map(one, ("goodput_tok_s",)).empty            # one candidate: no winner to name
    m, lo, hi, verdict = res._paired(pd.Series([1.0], index=[0]), pd.Series([0.5], index=[0]), 1)
    assert (m, verdict) == (0.5, "no interval") and np.isnan(lo) and np.isnan(hi)
    assert res._paired(pd.Series(dtype=float), pd.Series(dtype=float), 1)[3] == "no interval"
