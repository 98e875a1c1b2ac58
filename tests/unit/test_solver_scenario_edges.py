"""venkatesha2025's closed forms at their boundaries (the cache-miss rate a target speedup allows, Table 8's replay,
Table 5's per-round timings) against hand-worked numbers, and the scenario's device classes cycling over a mix."""
import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from specedge.experiments.edge_sd_arena import runs as arena
from specedge.solvers import venkatesha2025 as v


def test_rho_for_speedup_inverts_eq9_and_keeps_the_boundary():
    # gamma c = 1: eq (9) is 2 / (rho + 1); a 1.5x speedup needs rho <= 1/3
    assert v.rho_for_speedup(1.5, 0.25, 4) == pytest.approx(1 / 3)
    assert v.rho_for_speedup(1.0, 0.25, 4) == 1.0                  # no speedup asked: every rho
    assert v.rho_for_speedup(2.0, 0.25, 4) == 0.0                  # the most eq (9) gives: only rho = 0, not NaN
    assert math.isnan(v.rho_for_speedup(2.5, 0.25, 4))             # unreachable
    got = v.rho_for_speedup(np.array([1.2, 1.6]), 0.1, 7)
    assert v.speedup_eq9(got, 0.1, 7) == pytest.approx([1.2, 1.6])
    with pytest.raises(ValueError, match="target speedup must be >= 1"):
        v.rho_for_speedup(0.99, 0.25, 4)


def test_fig6_grid_spans_rho_and_c_per_gamma():
    g = v.fig6_grid(gammas=(4,), n_rho=3, n_c=2, c_max=0.5)
    assert len(g) == 6 and sorted(set(g.rho)) == [0.0, 0.5, 1.0] and sorted(set(g.c)) == [0.0, 0.5]
    row = g[(g.rho == 0.5) & (g.c == 0.5)].speedup.item()
    assert row == pytest.approx((4 * 0.5 + 1) / (0.5 * 4 * 0.5 + 1))
    with pytest.raises(ValueError, match="n_rho and n_c"):
        v.fig6_grid(n_rho=1)


def test_table8_replay_by_hand():
    p = v.TABLE8_PAPER
    T_d = p["T_d_s"] / p["gamma"]
    sd = (p["gamma"] * T_d + p["T_c_s"] + p["T_t_s"]) / p["tau"]
    ar = p["T_t_s"] + p["T_c_s"]
    for t_sync in (0.0, 0.05):
        fsd = (p["rho"] * p["gamma"] * T_d + p["T_c_s"] + p["T_t_s"] + (1 - p["rho"]) * t_sync) / p["tau"]
        out = v.table8_replay(t_sync)
        assert out["ar_to_sd"] == pytest.approx(ar / sd) and out["sd_to_fsd"] == pytest.approx(sd / fsd)
        assert out["c"] == pytest.approx(T_d / p["T_t_s"])


def _profile(**runtimes):
    return SimpleNamespace(name="p", runtime=runtimes, coefficients=lambda r: runtimes[r])


def test_timings_table_gives_drafting_per_round_at_gamma_4_whatever_gamma_was_measured():
    prof = _profile(jetson=dict(T_d_s=0.3, gamma=6, T_t_s=0.5, T_c_s=0.02), gpu=dict(T_d_s=0.04, gamma=4, T_t_s=0.2,
                                                                                     T_c_s=0.0, threads=3))
    t = v.timings_table(prof).set_index("runtime")
    assert t.loc["jetson", "T_d_gamma4_ms"] == pytest.approx(1e3 * 4 * 0.3 / 6)
    assert t.loc["jetson", "c"] == round(0.05 / 0.5, 3) and t.loc["jetson", "threads"] == 1
    assert t.loc["gpu", "T_d_gamma4_ms"] == pytest.approx(40.0) and t.loc["gpu", "threads"] == 3
    assert t.loc["gpu", "T_c_ms"] == 0.0 and t.loc["jetson", "T_t_ms"] == pytest.approx(500.0)


@pytest.mark.parametrize("co, what", [(dict(T_d_s=0.3, T_t_s=0.5, T_c_s=0.0), "lacks \\['gamma'\\]"),
                                      (dict(T_d_s=0.0, gamma=4, T_t_s=0.5, T_c_s=0.0), "T_d_s > 0"),
                                      (dict(T_d_s=0.3, gamma=4, T_t_s=0.5, T_c_s=-0.1), "T_c_s >= 0"),
                                      (dict(T_d_s=0.3, gamma=4, T_t_s=0.5, T_c_s=0.0, threads=0), "threads must be >= 1")])
def test_a_runtime_entry_with_a_bad_timing_is_refused_naming_it(co, what):
    with pytest.raises(ValueError, match=what):
        v.Timings.from_profile(_profile(r=co), "r")


def test_a_device_takes_the_class_of_its_index_modulo_the_mix():
    scn = arena.load_scenario()
    scn = dataclasses.replace(scn, device_classes=(("a", 0.5), ("b", 0.25), ("c", 2.0)),
                              mixes=(("two", ("a", "b")), ("one", ("c",))), target_to_draft_bytes=4.0)
    assert [scn.draft_s(i, "two") for i in range(5)] == [0.5, 0.25, 0.5, 0.25, 0.5]
    assert [scn.draft_s(i, "one") for i in range(3)] == [2.0] * 3
    assert scn.ar_s(1, "two") == 1.0
    with pytest.raises(ValueError, match="no option 'nope'"):
        scn.policy("draft", "nope")
