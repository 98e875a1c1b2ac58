"""What a device's drafting rule drafts and gets accepted over traced rounds (``client_mix.round_sums``)."""
import pytest

from specedge.serving.analysis import client_mix
from specedge.serving.sim.twin import IIDAcceptance


def test_round_sums_of_a_fixed_window_at_the_extremes_of_acceptance():
    all_ok, none_ok = IIDAcceptance(1.0), IIDAcceptance(0.0)
    assert client_mix.round_sums(all_ok, "d", False, 4, draws=50) == (200, 200, 50)
    assert client_mix.round_sums(none_ok, "d", False, 4, draws=50) == (200, 0, 50)
    assert client_mix.reported_alpha(all_ok, "d", False, 4, draws=50) == 1.0
    assert client_mix.reported_alpha(none_ok, "d", False, 4, draws=50) == 0.0


def test_reported_alpha_of_iid_acceptance_is_the_leading_run_share():
    """i.i.d. acceptance alpha with a window of K drafts: accepted / drafted = E[leading run] / K
    = (alpha - alpha^(K+1)) / ((1 - alpha) K), deterministic for one seed."""
    a, k = 0.6, 4
    got = client_mix.reported_alpha(IIDAcceptance(a), "d", False, k, draws=4000)
    assert got == pytest.approx((a - a ** (k + 1)) / ((1 - a) * k), abs=0.02)
    assert got == client_mix.reported_alpha(IIDAcceptance(a), "d", False, k, draws=4000, domains=["chat"])


def test_round_sums_refuses_no_draws_or_no_domain():
    with pytest.raises(ValueError, match="draws, domains"):
        client_mix.round_sums(IIDAcceptance(0.5), "d", False, 4, draws=0)
    with pytest.raises(ValueError, match="draws, domains"):
        client_mix.round_sums(IIDAcceptance(0.5), "d", False, 4, domains=())
