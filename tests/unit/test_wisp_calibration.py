"""li2026's serving calibration: no setting the paper states is fitted, and an undefined held-out error is a
miss in every median (``serving.timemodels.calibration.stated``, ``summary``)."""
import math

import numpy as np
import pandas as pd
import pytest

from specedge import coverage
from specedge.experiments.li2026 import serving_runs as ex
from specedge.serving.timemodels import calibration as cal


def _statements():
    return [s for key in ("li2026", "li2026_serving") for s in coverage.load_inventory(key)["statements"]]


def test_no_open_setting_has_a_value_the_paper_states():
    """Every setting of ``serving_open_settings.csv`` (fitted or kept) is one the paper leaves open: no
    statement of li2026's inventory names it with a number in its unit."""
    o = ex.open_settings()
    hits = cal.stated(o, _statements())
    assert set(hits) == set(o.setting)
    assert {k: v for k, v in hits.items() if v} == {}, "a setting listed as open has a stated value"


def test_the_stated_drafting_capacity_would_be_caught_and_is_an_input():
    """The check fails on a setting the paper states: the devices' drafting capacity, 50 tokens/s (Sec 3.2).
    It is fixed at that value and searched by no grid."""
    planted = pd.DataFrame(dict(setting=["draft_rate"], unit=["tokens/s"], role=["fit"],
                                paper_terms=["drafting capacity|drafting speed|draft rate"]))
    assert cal.stated(planted, _statements()) == {"draft_rate": ["fig1-draft-capacity"]}
    assert ex.SCENARIO.base.s_per_token == 0.02                     # 50 tokens/s
    for scale in ("ci", "full"):
        assert not {"draft_rate", "s_per_token"} & set(ex.calibration_grid(scale))
    # the same sentence in other units or without the term names nothing
    other = planted.assign(unit=["GB"])
    assert cal.stated(other, _statements()) == {"draft_rate": []}
    assert cal.stated(planted, [{"id": "x", "text": "drafts 50 tokens/s. The drafting capacity is large"}]) == {"draft_rate": []}


def test_the_fitted_grid_brackets_its_optimum_at_full_scale():
    """Every fitted setting's range searched (as extended by ``calibration.fit_interior``) lies beyond the
    committed fit on both sides (the fit is interior, not at an end of its range), and holds the CSV's grid."""
    from specedge import paths

    t = pd.read_csv(paths.ROOT / "figures" / "li2026_serving" / "calibration.csv")
    fitted = t[(t.role == "fit") & t.range_searched.notna()]
    grid = ex.calibration_grid("full")
    assert set(fitted.setting) == set(grid)
    for r in fitted.itertuples():
        values = sorted(float(x) for x in r.range_searched.split())
        assert values[0] < float(r.value) < values[-1], r.setting
        assert {float(x) for x in grid[r.setting]} <= set(values), r.setting


def test_summary_counts_an_undefined_error_as_a_miss():
    """Four held-out speedups of one table: errors 0.1, 0.3 and two undefined (a baseline serving no device:
    a zero denominator, NaN; an infinite ratio). Their median |error| counts both as infinite: sorted 0.1,
    0.3, inf, inf -> median (0.3 + inf) / 2 = inf; pandas' own median would drop the NaN (0.3)."""
    rec = pd.DataFrame(dict(setting=["T: a", "T: b", "T: c", "T: d", "U: a", "U: b", "U: c"],
                            role="held-out", error_kind="relative",
                            error=[0.1, -0.3, np.nan, np.inf, 0.2, np.nan, -0.4]))
    s = cal.summary(rec)
    assert s.loc["T", "error"] == math.inf and pd.Series([0.1, -0.3, np.nan]).abs().median() == pytest.approx(0.2)
    assert s.loc["U", "error"] == pytest.approx(0.4)         # 0.2, 0.4, inf -> 0.4 (pandas: 0.3)
    assert s.loc["T", "undefined"] == 2 and s.loc["U", "undefined"] == 1 and s.loc["T", "held_out"] == 4
    assert cal.miss_median([]) != cal.miss_median([])        # no errors: NaN
    assert cal.miss_median([np.nan]) == math.inf


def test_the_committed_record_counts_its_undefined_errors():
    """The committed ``calibration.csv``: every held-out row with a non-finite error is a miss in its table's
    median (recomputed here from the file)."""
    from specedge import paths

    t = pd.read_csv(paths.ROOT / "figures" / "li2026_serving" / "calibration.csv")
    s = cal.summary(t)
    rel = t[(t.role == "held-out") & (t.error_kind == "relative")]
    for table, g in rel.groupby(rel.setting.str.split(":").str[0]):
        e = g.error.abs().fillna(np.inf).sort_values().to_numpy()
        assert s.loc[table, "error"] == np.median(e)


def test_fit_interior_extends_a_range_until_its_optimum_is_inside():
    """A loss with its minimum at memory 0.3 and length 700: the grids start at 1 .. 8 (memory) and 128 .. 512
    (length), so both optima sit at an end. Each round extends the range one step past that end (memory:
    ratio 2 -> 0.5, 0.25; length: step 512 / 384 -> 683, 911) until the best value is inside."""
    def evaluate(cands):
        return [{"q": math.exp((math.log(c["memory"] / 0.3)) ** 2 + ((c["length"] - 700) / 300) ** 2)} for c in cands]

    res = cal.fit_interior(evaluate, {"memory": [1.0, 2.0, 4.0, 8.0], "length": [128, 256, 384, 512]}, {"q": 1.0})
    assert res.grid["memory"] == [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    assert res.values == {"memory": 0.25, "length": 683} and res.interior == {"memory": True, "length": True}
    assert res.grid["length"] == [128, 256, 384, 512, 683, 911]
    # a loss that falls for ever toward 0 is never bracketed: reported, not hidden
    flat = cal.fit_interior(lambda cs: [{"q": 1 + c["memory"]} for c in cs], {"memory": [1.0, 2.0]}, {"q": 1.0}, rounds=2)
    assert flat.interior == {"memory": False} and flat.grid["memory"] == [0.25, 0.5, 1.0, 2.0]


def test_a_candidate_whose_memory_cannot_hold_one_response_is_infeasible_not_run():
    """Qwen3-32B's KV is 256 KiB per token: a 512 + 128-token response needs 167.8 MB, so 0.16 GB cannot hold
    it (centralized serving would refuse the run); 0.2 GB can. The calibration gives such a candidate an infinite
    loss without running it, and its range extension stops there."""
    st = ex.SCENARIO.setting(profile="li2026_paper")
    assert not ex.fits(ex.SCENARIO.setting(st, prompt_tokens=512, memory_gb=0.16)) and ex.fits(ex.SCENARIO.setting(st, prompt_tokens=512, memory_gb=0.2))
    ran = []

    def run(points):
        ran.extend(points)
        return pd.DataFrame(dict(goodput=[{"SLED": 170.0, "Centralized": 330.0, "WISP": 600.0}[p.system] * p.setting.memory_gb
                                          for p in points]))

    targets = {ex.T3.format(s): v for s, v in zip(ex.TABLE3, (170.0, 330.0, 600.0))}
    res = ex.calibrate(st, {"prompt_tokens": [128, 512], "memory_gb": [0.16, 1.0, 2.0]}, targets, 12, [0], run, rounds=0)
    assert res.values == {"prompt_tokens": 128, "memory_gb": 1.0}
    assert not any(p.setting.memory_gb == 0.16 and p.setting.prompt_tokens == 512 for p in ran)
    bad = res.searched[(res.searched.memory_gb == 0.16) & (res.searched.prompt_tokens == 512)]
    assert bad.loss.iloc[0] == math.inf and bad.loss_seed0.iloc[0] == math.inf
