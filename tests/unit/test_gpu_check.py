"""The accelerator check runs end to end on a CPU at small shapes, and its round cost model is eq (11)'s
where verification costs one step."""
import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

from specedge import sampling

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))     # its sibling `report`, as when run as a script
_SPEC = importlib.util.spec_from_file_location("gpu_check", Path(__file__).parents[2] / "benchmarks" / "gpu_check.py")
gc = sys.modules.setdefault("gpu_check", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(gc)


def test_round_model_with_a_flat_verification_curve_is_eq_11():
    """t_target(k) = 1 for every k and a draft step of c: the speedup is E(α, γ) / (1 + γ c)."""
    curves = {"target": {k: 1.0 for k in range(1, 9)}, "draft": {k: 0.25 * k for k in range(1, 9)}}
    sd = gc.round_model(curves, pd.Series({"a": 0.8, "b": 0.5}))
    for r in sd.itertuples():
        assert r.speedup == pytest.approx(float(sampling.expected_tokens_per_round(r.alpha, r.gamma)) / (1 + 0.25 * r.gamma))
    assert sorted(sd.gamma.unique()) == list(range(1, 8))


def test_round_model_charges_a_rising_curve():
    steep = {"target": {k: float(k) for k in range(1, 9)}, "draft": {1: 0.0}}
    sd = gc.round_model(steep, pd.Series({"a": 0.99}))
    assert (sd.speedup <= 1.0 + 1e-12).all()            # k tokens cost k steps: SD cannot beat AR


def test_runs_on_a_cpu_at_small_shapes(tmp_path):
    out = tmp_path / "gc.csv"
    assert gc.main(["--device", "cpu", "--tiny", "--reps", "1", "--dtype", "float32", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    passes = df[df.kind == "pass"]
    assert set(passes.model) == {"target", "draft"} and sorted(passes.k.unique()) == list(range(1, 9))
    assert (passes.seconds > 0).all() and (df.dtype == "float32").all()
    assert len(df[df.kind == "round model"]) == 7 * 8           # 8 domains x γ = 1..7


def test_refuses_cuda_without_a_device(monkeypatch):
    monkeypatch.setattr(gc.torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="no CUDA device"):
        gc.main(["--device", "cuda"])
