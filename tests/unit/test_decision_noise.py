"""Decisions of the serving twin do not depend on a float's last digits (on an AVX-512 host
flipped decisions would change committed li2026 rows). Each test nudges the inputs of a decision by
a few ulps (np.nextafter) and expects the same outcome: WISP's batch former at the eq (15)/(17)
boundaries, eq (4)'s violation test at exactly the class speed, a whole li2026 sweep point with every
estimated and true verification time nudged, and the predictor's stop decisions."""
import hashlib

import numpy as np
import pandas as pd
import pytest

from specedge import paths
from specedge.experiments.li2026 import serving_runs as li
from specedge.serving import acceptance_sources, slo
from specedge.serving.timemodels.estimator import Estimator
from specedge.serving.interfaces import Pending
from specedge.serving.policies.wisp_batching import WISPBatcher

def nudge(x, ulps: int):
    """``x`` moved by ``ulps`` units in the last place (towards +inf if positive)."""
    x = np.asarray(x, float)
    for _ in range(abs(ulps)):
        x = np.nextafter(x, np.inf if ulps > 0 else -np.inf)
    return x if x.shape else float(x)


@pytest.mark.parametrize("ulps", [-3, -1, 1, 3])
def test_batch_former_at_its_boundaries(ulps):
    """Binary-exact times put two requests exactly on Algorithm 1's boundaries: x's deadline is
    now + T_hat({x, y}) (eq 15 holds with equality, so y joins x), and z's latest start is now (eq 17:
    z is critical by equality, so it goes before w, whose utility is higher). A few ulps of noise on
    ``now`` must change neither the batch nor the admission order."""
    est = Estimator(2.0 ** -10, 0.0, 0.0, 2.0 ** -4)          # T = N_linear / 1024 + 1/16 s, exact in binary
    former, now = WISPBatcher(est, delta=2.0 ** -6), 1.0
    x = Pending(0, "x", 0, 0.5, 4, 4, 0, deadline=now + est.time(8, 0, 0), expected_tokens=1.0)
    y = Pending(1, "y", 0, 0.6, 4, 4, 0, expected_tokens=1.0)
    z = Pending(2, "z", 0, 0.5, 4, 4, 0, deadline=now + est.time(4, 0, 0) + 2.0 ** -6, expected_tokens=0.5)
    w = Pending(3, "w", 0, 0.6, 4, 4, 0, expected_tokens=4.0)
    assert [p.client for p in former.form([x, y], now, frozenset())] == [0, 1]
    assert [p.client for p, _ in former.order([z, w], now)[0]] == [2, 3]
    noisy = nudge(now, ulps)
    assert noisy != now
    assert [p.client for p in former.form([x, y], noisy, frozenset())] == [0, 1]
    assert [p.client for p, _ in former.order([z, w], noisy)[0]] == [2, 3]


@pytest.mark.parametrize("ulps", [-2, 2])
def test_round_at_exactly_its_class_speed_meets_it(ulps):
    """Eq (4): 8 tokens in 1 s meet 8 tok/s; a few ulps on the round time do not make it a violation."""
    log = pd.DataFrame(dict(tokens=[8, 6, 3], t_round=[1.0, 0.75, 0.1], slo_class=[8, 8, 2]))
    assert slo.violations(log).tolist() == [False, False, False]
    assert slo.violations(log.assign(t_round=nudge(log.t_round.to_numpy(), ulps))).tolist() == [False, False, False]
    assert slo.violations(log.assign(t_round=[1.001, 0.75, 0.1])).tolist() == [True, False, False]


class _Nudged(Estimator):
    """Eq (19) with every result moved by ``ULPS`` (the last-digit noise of another host's kernels)."""
    ULPS = 0

    def time(self, n_linear, n_interactions, n_cached):
        return nudge(super().time(n_linear, n_interactions, n_cached), self.ULPS)


def _log_hash(point):
    return hashlib.sha256(li.run_log(point).to_csv(index=False).encode()).hexdigest()


@pytest.mark.parametrize("system", ["WISP", "FCFS"])
def test_a_sweep_point_is_unchanged_by_last_digit_noise_in_verify_times(system, monkeypatch):
    """A whole twin run (mixed classes, 24 devices, 30 s): the scheduler's estimates and the true
    verification times each a few ulps off give the same log, byte for byte."""
    point = li.SCENARIO.point(system, 24, None, seed=3, setting=li.SCENARIO.setting(horizon_s=30.0, warmup_s=5.0))
    base = _log_hash(point)
    make = li.estimator
    for ulps in (-4, 4):
        _Nudged.ULPS = ulps
        monkeypatch.setattr(li, "estimator", lambda p: _Nudged(**make(p).coefficients()))
        assert _log_hash(point) == base, f"{ulps} ulps on eq (19)'s times changed the run"


def test_predictor_stops_sit_far_from_the_threshold():
    """The MLP's stop decisions on the traces the twin replays: no probability lies within 1e-6 of the
    threshold, 10x the largest difference between its float32 and float64 evaluations (the size of what
    another host's kernels can change), so no host flips a stop. A retrained predictor that puts a traced
    position at its threshold fails here and needs its decisions rounded."""
    import copy

    import torch

    from specedge.predictor import persistence
    from specedge.predictor.dataset import FEATURES

    mlp = persistence.load(paths.DATA / "predictor", "mlp")
    df = pd.read_csv(acceptance_sources.source("zoo").traces, usecols=[*FEATURES, "target"])
    x = df.loc[df.target == "target-m", list(FEATURES)].to_numpy(np.float32)
    p32 = mlp.predict_proba(x)
    with torch.inference_mode():
        p64 = torch.sigmoid(copy.deepcopy(mlp.model).double()(torch.from_numpy(x.astype(np.float64)))).numpy()
    noise = float(np.abs(p32 - p64).max())
    assert noise < 1e-6
    assert float(np.abs(p32 - mlp.threshold).min()) > 10 * noise
    assert ((p32 >= mlp.threshold) == (p64 >= mlp.threshold)).all()


def test_eq19_fitted_to_real_logs_is_unchanged_by_last_digit_noise():
    """The validation replays' verification model is eq (19) fitted by least squares to the pinned real runs'
    passes (``runtime.fit_log_batches``); another host's LAPACK moves its coefficients in the last digits.
    Measured times nudged by a few ulps give the same coefficients (6 significant digits), hence the same
    replayed log byte for byte."""
    from specedge.experiments.serving_validation import runs as sv
    from specedge.serving.analysis import validation
    from specedge.serving.timemodels import runtime

    runs = sv.load_real_runs()
    key = ("tran2025", "GOODSPEED", 2)
    base = validation.verify_model(runs, key)
    assert all(v == float(f"{v:.6g}") for v in base.coefficients().values())
    log, _ = sv.replay_run(runs, key)
    for ulps in (-3, -1, 1, 3):
        noisy = {k: g.assign(t_verify=nudge(g["t_verify"].to_numpy(), ulps)) if k != key else g
                 for k, g in runs.items()}
        assert validation.verify_model(noisy, key) == base, f"{ulps} ulps on the measured passes moved eq (19)"
        pd.testing.assert_frame_equal(sv.replay_run(noisy, key)[0], log)
    own = runtime.log_batches(runs[key])
    assert runtime.fit_log_batches(own.assign(seconds=nudge(own["seconds"].to_numpy(), 2))) == \
        runtime.fit_log_batches(own)
