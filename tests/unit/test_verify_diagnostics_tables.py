"""Diagnostics of a measured verification profile (``serving.timemodels.verify_diagnostics``): component shares worked by
hand, repeated shapes matched regardless of request order, and R² that tells eq (19) from eq (19) + one feature."""
import numpy as np
import pandas as pd
import pytest

from specedge.serving.timemodels import verify_diagnostics as VD
from specedge.serving.log import packed_products, parse_batch


def test_component_shares_by_hand():
    # "2:3": N_linear 2, N_interactions (2 + 3) x 2 = 10, N_cached 3; a = 1, b_compute = 0.1, b_read = 0.5, c = 2
    # terms 2, 1, 1.5 and the constant 2: total 6.5
    d = pd.DataFrame(dict(batch=["2:3", "4:0"], regime=["mixed", "compute-bound"]))
    out = VD.component_shares(d, dict(a=1.0, b_compute=0.1, b_read=0.5, c=2.0))
    r = out.iloc[0]
    assert r.tokens == 5 and r.regime == "mixed"
    assert (r.linear, r.interactions, r.cached, r.constant) == pytest.approx((2 / 6.5, 1 / 6.5, 1.5 / 6.5, 2 / 6.5))
    # "4:0": 4, 16, 0 -> 4 + 1.6 + 0 + 2 = 7.6
    assert out.iloc[1][["linear", "interactions", "cached", "constant"]].tolist() == pytest.approx([4 / 7.6, 1.6 / 7.6, 0, 2 / 7.6])
    assert np.allclose(out[["linear", "interactions", "cached", "constant"]].sum(axis=1), 1.0)


def test_session_repeats_match_a_shape_whatever_the_order_of_its_requests():
    d = pd.DataFrame(dict(batch=["1:0 2:5", "2:5 1:0", "3:0", "1:0 2:5"], seconds=[0.3, 0.1, 9.0, 0.2],
                          cv=[0.01, 0.05, 0.5, 0.02]))
    out = VD.session_repeats(d)
    assert len(out) == 1                                           # "3:0" was timed once: not a repeat
    r = out.iloc[0]
    assert (r.fastest, r.slowest, r.within_cv) == (0.1, 0.3, 0.05)
    assert VD.session_repeats(d.iloc[2:3]).empty


def test_packed_diagnostic_tells_eq19_from_eq19_plus_the_packed_products():
    rng = np.random.default_rng(0)
    batches = [" ".join(f"{rng.integers(1, 40)}:{rng.integers(0, 200)}" for _ in range(rng.integers(1, 4)))
               for _ in range(60)]
    from specedge.serving.timemodels.estimator import features

    x = np.array([features(parse_batch(b)) for b in batches], float)
    eq19 = 1e-3 * x[:, 0] + 1e-6 * x[:, 1] + 1e-5 * x[:, 2] + 0.01
    packed = np.array([packed_products(parse_batch(b)) for b in batches], float)
    split = ["train"] * 40 + ["test"] * 20
    exact = pd.DataFrame(dict(batch=batches, seconds=eq19, split=split, requests=[len(b.split()) for b in batches]))
    dense = exact.assign(seconds=eq19 + 1e-6 * packed)
    out = VD.packed_diagnostic({"exact": exact, "dense": dense})
    assert out.loc[("exact", "eq (19)"), "test_R2"] == pytest.approx(1.0, abs=1e-9)
    assert out.loc[("dense", "eq (19) + packed products"), "test_R2"] == pytest.approx(1.0, abs=1e-9)
    assert out.loc[("dense", "eq (19)"), "train_R2"] < 0.999          # the packed products are not in eq (19)
    assert set(out.index.get_level_values(1)) == {"eq (19)", "eq (19) + packed products", "eq (19) + request count",
                                                   "eq (19) + N_linear²"}
