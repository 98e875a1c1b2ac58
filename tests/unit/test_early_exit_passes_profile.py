"""``early_exit.passes``: a pair's passes, Table 9's batch latencies and this machine as a Table 5 profile, with the
timed passes replaced by fixed seconds so that every derived number can be worked by hand."""
import pandas as pd
import pytest

from _stand_ins import pair as stand_in_pair
from specedge import early_exit, hardware
from specedge.early_exit import passes


@pytest.fixture(scope="module")
def stand_ins():
    draft, target = stand_in_pair()
    return draft, early_exit.EarlyExits(target, rank=2)


def _fixed(monkeypatch):
    """step_time: 1 ms per new token per row, +10 ms for the target; draft_time: 5 ms per token; verify_time: 30 ms."""
    def step(model, batch=1, new_tokens=1, repeats=15):
        return 1e-3 * batch * new_tokens + (0.01 if model.config.num_hidden_layers == 4 else 0.0)
    monkeypatch.setattr(passes, "step_time", step)
    monkeypatch.setattr(passes, "draft_time", lambda draft, gamma=4, repeats=21: 5e-3 * gamma)
    monkeypatch.setattr(passes, "verify_time", lambda ee, gamma=4, repeats=21: 0.03)


def test_pair_passes_share_the_exits_cost_over_the_early_exits(stand_ins, monkeypatch):
    draft, ee = stand_ins
    _fixed(monkeypatch)
    out = passes.pair_passes(draft, ee, gamma=4, repeats=1)
    # verification of 5 tokens: 5 ms + 10 ms = 15 ms; with 3 early exits' outcomes 30 ms: (30 - 15) / 3 = 5 ms per exit
    assert out == pytest.approx(dict(draft_step_s=0.001, target_step_s=0.011, draft_gamma_s=0.02, verify_s=0.015,
                                     verify_exits_s=0.03, exit_step_s=0.005))


def test_pair_passes_timed_for_real_keep_the_identity(stand_ins):
    draft, ee = stand_ins
    out = passes.pair_passes(draft, ee, gamma=2, repeats=1)
    assert out["exit_step_s"] == pytest.approx((out["verify_exits_s"] - out["verify_s"]) / 3)
    assert all(out[k] > 0 for k in ("draft_step_s", "target_step_s", "draft_gamma_s", "verify_s", "verify_exits_s"))


def test_batch_latency_in_ms_per_batch(stand_ins, monkeypatch):
    draft, ee = stand_ins
    _fixed(monkeypatch)
    t9 = passes.batch_latency(draft, ee.target, [1, 8], gamma=4)
    # server: b rows of 5 tokens + 10 ms; client: b rows of one token
    assert t9.batch.tolist() == [1, 8] and t9.server_ms.tolist() == pytest.approx([15.0, 50.0])
    assert t9.client_ms.tolist() == pytest.approx([1.0, 8.0])


def test_local_profile_is_a_table5_row_per_set_saved_and_loaded(stand_ins, monkeypatch, tmp_path):
    draft, ee = stand_ins
    _fixed(monkeypatch)
    monkeypatch.setattr(passes.profiling, "loopback_rtt", lambda: 2.5e-4)
    saved, save, load = [], hardware.save_profile, hardware.load_profile
    monkeypatch.setattr(passes.hardware, "save_profile", lambda data: saved.append(save(data, tmp_path / "cpu_test.yaml")))
    monkeypatch.setattr(passes.hardware, "load_profile", lambda name: load(tmp_path / "cpu_test.yaml"))
    prof = passes.local_profile({"s1": ("d", "t", draft, ee, None)}, "cpu_test", gamma=4, source="a test")
    row = prof.coefficients("cpu_s1")
    # T_d 20 ms for 4 tokens, T_t 30 ms: c = 20 / 4 / 30 = 0.1667 per token
    assert row["T_d_s"] == 0.02 and row["T_t_s"] == 0.03 and row["c"] == 0.1667 and row["T_c_s"] == 0.00025
    assert row["gamma"] == 4 and row["threads"] >= 1 and prof.kind("cpu_s1") == "draft_verify_comm"
    assert prof.name == "cpu_test" and saved == [tmp_path / "cpu_test.yaml"]
    assert "zoo d/t on this CPU" in pd.DataFrame([prof.to_dict()["runtime"]["cpu_s1"]]).model.iloc[0]
