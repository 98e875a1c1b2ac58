"""serving.timemodels.calibration: a grid fit recovers planted settings, its record's schema and roles, its errors."""
import math

import numpy as np
import pandas as pd
import pytest

from specedge.serving.timemodels import calibration as cal


def twin(values: dict) -> dict:
    """A synthetic twin: three stated quantities that move with two open settings in different ways."""
    L, r = values["length"], values["rate"]
    return {"centralized": 4e5 / L, "wisp": 30 * r * 500 / (L + 250), "sled": 2e7 / L ** 2 + r}


GRID = {"length": [128, 256, 384, 512, 768], "rate": [10.0, 15.0, 20.0, 30.0, 50.0]}


def batch(calls):
    def evaluate(cands):
        calls.append(list(cands))
        return [twin(c) for c in cands]
    return evaluate


@pytest.mark.parametrize("length, rate", [(384, 15.0), (768, 50.0), (128, 10.0)])
def test_the_fit_recovers_planted_settings(length, rate):
    calls = []
    res = cal.fit(batch(calls), GRID, twin({"length": length, "rate": rate}))
    assert res.values == {"length": length, "rate": rate}
    assert res.loss == 0.0
    assert len(calls) == 1 and len(calls[0]) == 25                       # every candidate, one batch
    assert len(res.searched) == 25 and res.searched.loss.min() == 0.0


def test_a_planted_setting_off_the_grid_gives_its_nearest_candidate_and_a_positive_loss():
    res = cal.fit(batch([]), GRID, twin({"length": 400, "rate": 16.0}))
    assert res.values == {"length": 384, "rate": 15.0}
    assert 0 < res.loss < 0.01


def test_ties_go_to_the_first_candidate_and_reruns_agree():
    flat = lambda cands: [{"q": 1.0} for _ in cands]
    res = cal.fit(flat, GRID, {"q": 1.0})
    assert res.values == {"length": 128, "rate": 10.0}
    assert cal.fit(batch([]), GRID, twin({"length": 256, "rate": 20.0})).searched.equals(
        cal.fit(batch([]), GRID, twin({"length": 256, "rate": 20.0})).searched)


def test_loss_is_the_mean_squared_log_ratio():
    assert cal.loss({"a": 2.0, "b": 1.0}, {"a": 1.0, "b": 1.0}) == pytest.approx(math.log(2) ** 2 / 2)
    assert cal.loss({"a": 0.5}, {"a": 1.0}) == pytest.approx(cal.loss({"a": 2.0}, {"a": 1.0}))   # symmetric
    assert cal.loss({"a": 0.0}, {"a": 1.0}) == math.inf
    assert cal.loss({"a": np.nan}, {"a": 1.0}) == math.inf
    with pytest.raises(KeyError, match="'b'"):
        cal.loss({"a": 1.0}, {"a": 1.0, "b": 2.0})


def test_error_is_relative_unless_the_paper_states_zero():
    assert cal.error(200.0, 150.0) == pytest.approx(-0.25)
    assert cal.error(-4.0, -2.0) == pytest.approx(0.5)
    assert cal.error(0.0, 3.5) == pytest.approx(3.5) and cal.error_kind(0.0) == "absolute"
    assert cal.error_kind(98.3) == "relative"


def test_bad_input_is_refused_before_work():
    never = lambda cands: pytest.fail("evaluate must not run")
    with pytest.raises(ValueError, match="targets"):
        cal.fit(never, GRID, {})
    with pytest.raises(ValueError, match="targets.*> 0"):
        cal.fit(never, GRID, {"q": 0.0})
    with pytest.raises(ValueError, match="grid"):
        cal.fit(never, {"length": []}, {"q": 1.0})
    with pytest.raises(ValueError, match="returned 1 results for 25"):
        cal.fit(lambda cands: [{"q": 1.0}], GRID, {"q": 1.0})


def test_the_record_has_its_schema_and_roles():
    targets = twin({"length": 384, "rate": 15.0})
    res = cal.fit(batch([]), GRID, targets)
    held = {"Table 1: WISP 8 tok/s": (98.27, 90.0), "Table 1: WISP 2 tok/s": (0.0, 1.5)}
    t = cal.table(res, GRID, targets, held)
    assert tuple(t.columns) == cal.COLUMNS
    assert set(t.role) <= set(cal.ROLES)
    assert list(t.setting[t.role == "fit"]) == ["length", "rate"] + list(targets)
    assert t.set_index("setting").loc["length", "range_searched"] == "128 256 384 512 768"
    assert t.set_index("setting").loc["rate", "range_searched"] == "10 15 20 30 50"
    h = t[t.role == "held-out"].set_index("setting")
    assert h.loc["Table 1: WISP 8 tok/s", "error"] == pytest.approx((90.0 - 98.27) / 98.27)
    assert h.loc["Table 1: WISP 2 tok/s", "error"] == pytest.approx(1.5)
    assert list(h.error_kind) == ["relative", "absolute"]
    assert pd.isna(t.set_index("setting").loc["length", "paper"])


def test_the_record_carries_the_settings_before_the_fit():
    targets = twin({"length": 384, "rate": 15.0})
    res = cal.fit(batch([]), GRID, targets)
    t = cal.table(res, GRID, targets, {"Table 1: x": (10.0, 12.0)}, current={"Table 1: x": 5.0, "wisp": 100.0})
    r = t.set_index("setting")
    assert r.loc["Table 1: x", "error_current"] == pytest.approx(-0.5)
    assert r.loc["wisp", "error_current"] == pytest.approx(100.0 / targets["wisp"] - 1)
    assert pd.isna(r.loc["length", "error_current"]) and pd.isna(r.loc["sled", "reproduced_current"])


def test_li2026_calibrate_recovers_planted_settings_through_its_runs():
    """The driver's wiring: each candidate's Table 3 points run in one batch, the goodputs averaged over seeds
    per system, centralized serving's points shared across drafting speeds. A synthetic twin stands in for
    the runs: goodput a function of the point's system and settings."""
    from specedge.experiments.li2026 import serving_runs as ex

    def goodput(p):
        st = p.setting
        base = {"SLED": 4e4 / st.prompt_tokens, "Centralized": 1e5 / st.prompt_tokens * (st.memory_gb / 14) ** 0.3,
                "WISP": 3 / st.s_per_token * 1e3 / (st.prompt_tokens + 200)}[p.system]
        return base * (1 + 0.01 * (p.seed % 3 - 1))

    batches = []

    def run(points):
        batches.append(points)
        return pd.DataFrame(dict(goodput=[goodput(p) for p in points]))

    st = ex.SCENARIO.setting(profile="li2026_paper")
    planted = ex.SCENARIO.setting(st, prompt_tokens=256, s_per_token=0.05, memory_gb=3.5)
    seeds = (7, 8, 9)
    targets = {ex.T3.format(s): float(np.mean([goodput(ex.SCENARIO.point(s, 120, None, seed=k, setting=planted)) for k in seeds]))
               for s in ex.TABLE3}
    grid = {"prompt_tokens": [128, 256, 384], "s_per_token": [0.1, 0.05, 0.02], "memory_gb": [3.5, 14.0]}
    res = ex.calibrate(st, grid, targets, 120, seeds, run, rounds=0)      # no range extended: one batch
    assert res.values == {"prompt_tokens": 256, "s_per_token": 0.05, "memory_gb": 3.5}
    assert res.interior == {"prompt_tokens": True, "s_per_token": True, "memory_gb": False}
    assert {f"loss_seed{k}" for k in seeds} <= set(res.searched.columns)
    assert res.loss == pytest.approx(0.0, abs=1e-20)
    assert len(batches) == 1
    central = [p for p in batches[0] if p.system == "Centralized"]
    assert len(central) == 3 * 2 * len(seeds)                       # one per prompt x memory x seed, not per speed
    assert {p.setting.s_per_token for p in central} == {st.s_per_token}


def test_the_open_settings_list_names_every_setting_with_its_sentence():
    from specedge.experiments.li2026 import serving_runs as ex

    o = ex.open_settings()
    assert set(o.role) == {"fit", "kept"} and (o.sentence.str.len() > 20).all() and (o.why != "").all()
    for scale in ("ci", "full"):
        g = ex.calibration_grid(scale)
        assert list(g) == list(o.setting[o.role == "fit"])
        for name, values in g.items():
            assert values and all(type(v) is type(getattr(ex.SCENARIO.base, name)) for v in values)
    with pytest.raises(ValueError, match="scale"):
        ex.calibration_grid("huge")


def test_the_committed_record_has_its_schema_roles_and_errors():
    from specedge import paths

    t = pd.read_csv(paths.ROOT / "figures" / "li2026_serving" / "calibration.csv")
    assert tuple(t.columns[:len(cal.COLUMNS)]) == cal.COLUMNS
    assert set(t.role) == set(cal.ROLES)
    fit, held = t[t.role == "fit"], t[t.role == "held-out"]
    assert len(fit) >= 1 and len(held) >= 8
    assert fit.setting.str.startswith("Table 3").sum() == 3 and held.setting.str.startswith("Table 3").sum() == 0
    nums = t[t.paper.notna()]
    want = [cal.error(p, r) for p, r in zip(nums.paper, nums.reproduced)]
    np.testing.assert_allclose(nums.error.to_numpy(), want, rtol=1e-6, atol=1e-8, equal_nan=True)   # 10 digits written
    assert (nums.error_kind == np.where(nums.paper == 0, "absolute", "relative")).all()


def test_open_grid_casts_the_fitted_settings_candidates_at_a_scale():
    settings = pd.DataFrame(dict(setting=["n", "x", "kept"], role=["fit", "fit", "kept"],
                                 full_grid=["1 2 4", "0.5 1.5", ""], ci_grid=["2", "1", ""]))
    assert cal.open_grid(settings, "full", dict(n=int, x=float)) == {"n": [1, 2, 4], "x": [0.5, 1.5]}
    g = cal.open_grid(settings, "ci", dict(n=int, x=float))
    assert g == {"n": [2], "x": [1.0]} and isinstance(g["n"][0], int)
    with pytest.raises(ValueError, match="no column 'huge_grid'"):
        cal.open_grid(settings, "huge", dict(n=int, x=float))
