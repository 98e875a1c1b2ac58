"""Sweeps: the same rows locally and on a Dask cluster, cached by configuration, seeds per point."""
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from specedge import sweep


@dataclass(frozen=True)
class Cfg:
    n: int
    seed: int
    label: str = "x"


def point(cfg: Cfg) -> dict:
    rng = np.random.default_rng(cfg.seed)
    return dict(n=cfg.n, label=cfg.label, value=float(rng.normal() * cfg.n), pid=0)


def counted(cfg: Cfg) -> list:
    marker = os.environ["SWEEP_MARKER"]
    with open(marker, "a") as fh:
        fh.write(f"{cfg.n}\n")
    return [dict(n=cfg.n, k=k) for k in range(2)]


def _configs(seed=0, n=6):
    return [Cfg(i, s) for i, s in enumerate(sweep.seeds(seed, n))]


def test_seeds_are_spawned_and_independent_of_the_worker_count():
    assert sweep.seeds(0, 4) == sweep.seeds(0, 4) and len(set(sweep.seeds(0, 50))) == 50
    a = sweep.run(point, _configs(), backend="loky", n_jobs=2, progress=False)
    b = sweep.run(point, _configs(), backend="sequential", n_jobs=1, progress=False)
    pd.testing.assert_frame_equal(a, b)
    assert a["n"].tolist() == list(range(6))


def test_dask_local_cluster_gives_the_local_rows():
    local = sweep.run(point, _configs(1), backend="loky", n_jobs=2, progress=False)
    dask = sweep.run(point, _configs(1), backend="dask", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(local, dask)


def test_cache_hits_skip_work_and_a_changed_config_misses(tmp_path, monkeypatch):
    marker = tmp_path / "calls.txt"
    monkeypatch.setenv("SWEEP_MARKER", str(marker))
    cfgs = [Cfg(i, 0) for i in range(4)]
    first = sweep.run(counted, cfgs, backend="sequential", n_jobs=1, cache_dir=tmp_path / "c", progress=False)
    assert len(first) == 8 and marker.read_text().split() == ["0", "1", "2", "3"]
    again = sweep.run(counted, cfgs + [Cfg(9, 0)], backend="sequential", n_jobs=1, cache_dir=tmp_path / "c",
                      progress=False)
    assert marker.read_text().split() == ["0", "1", "2", "3", "9"]      # only the new point ran
    pd.testing.assert_frame_equal(again.iloc[:8], first)
    sweep.run(counted, cfgs[:1], backend="sequential", n_jobs=1, cache_dir=tmp_path / "c", version="2",
              progress=False)
    assert marker.read_text().split()[-1] == "0"                          # a new version recomputes


def test_bad_input_is_refused_before_any_work():
    with pytest.raises(ValueError, match="backend"):
        sweep.run(point, _configs(), backend="spark")
    with pytest.raises(TypeError, match=r"config\.seed"):
        sweep.run(point, [Cfg(1, object())])
    with pytest.raises(TypeError, match="dict"):
        sweep.run(lambda c: 3, [Cfg(1, 0)], backend="sequential", progress=False)


def test_default_cache_version_follows_the_library_source(tmp_path, monkeypatch):
    marker = tmp_path / "calls.txt"
    monkeypatch.setenv("SWEEP_MARKER", str(marker))
    cfgs = [Cfg(1, 0)]
    sweep.run(counted, cfgs, backend="sequential", n_jobs=1, cache_dir=tmp_path / "c", progress=False)
    sweep.run(counted, cfgs, backend="sequential", n_jobs=1, cache_dir=tmp_path / "c", progress=False)
    assert marker.read_text().split() == ["1"]                            # same library: a cache hit
    monkeypatch.setattr(sweep, "library_version", lambda: "edited")
    sweep.run(counted, cfgs, backend="sequential", n_jobs=1, cache_dir=tmp_path / "c", progress=False)
    assert marker.read_text().split() == ["1", "1"]                       # an edited library recomputes
