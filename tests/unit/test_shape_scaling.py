"""Eq (19)'s coefficients carried between dense transformer shapes (``serving.timemodels.shape_scaling``)."""
import pytest

from specedge.serving.timemodels import shape_scaling as S

TOY = dict(layers=2, hidden=4, heads=2, kv_heads=1, head_dim=2, intermediate=8)


def test_linear_params_counts_projections_and_gated_mlp_by_hand():
    # per layer: q, o (4 x 2 x 2 each) + k, v (4 x 2 x 1 each) = 32 + 16; gate, up, down 3 x 4 x 8 = 96
    assert S.linear_params(TOY) == 2 * (32 + 16 + 96) == 288
    assert S.weight_bytes(TOY) == 576 and S.weight_bytes(TOY, dtype_bytes=4) == 1152


def test_scaling_to_the_same_shape_is_one_and_each_factor_follows_its_term():
    assert S.scaling(TOY, TOY) == {"a": 1.0, "b_compute": 1.0, "b_read": 1.0, "c": 1.0}
    twice_kv = {**TOY, "kv_heads": 2}
    f = S.scaling(TOY, twice_kv)
    assert f["b_read"] == 2.0 and f["b_compute"] == 1.0 and f["c"] == 1.0     # only the KV read per cached token
    assert f["a"] == pytest.approx(S.linear_params(twice_kv) / 288)
    deeper = {**TOY, "layers": 4}
    assert S.scaling(TOY, deeper) == {"a": 2.0, "b_compute": 2.0, "b_read": 2.0, "c": 2.0}


def test_scale_coefficients_multiplies_each_and_refuses_a_missing_one():
    co = dict(a=1e-3, b_compute=2e-6, b_read=3e-7, c=4e-3)
    out = S.scale_coefficients(co, TOY, {**TOY, "layers": 4})
    assert out == pytest.approx({k: 2 * v for k, v in co.items()})
    with pytest.raises(ValueError, match=r"coefficients: missing \['c'\]"):
        S.scale_coefficients({k: v for k, v in co.items() if k != "c"}, TOY, TOY)
