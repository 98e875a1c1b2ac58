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


def where(cfg: Cfg) -> dict:
    return dict(n=cfg.n, pid=os.getpid())


def test_local_stays_in_process_for_few_points_and_fans_out_many(monkeypatch):
    monkeypatch.delenv(sweep.WORKERS_ENV, raising=False)
    few = sweep.local(where, _configs(n=3), progress=False)
    assert set(few.pid) == {os.getpid()}          # below MIN_PARALLEL_POINTS: no worker to start
    many = _configs(n=sweep.MIN_PARALLEL_POINTS)
    monkeypatch.setenv(sweep.WORKERS_ENV, "2")   # two workers on any host, a one-core one (taskset -c 0) included
    fanned = sweep.local(where, many, n_jobs=2, progress=False)
    assert fanned.n.tolist() == list(range(len(many))) and os.getpid() not in set(fanned.pid)
    pd.testing.assert_frame_equal(sweep.local(point, many, n_jobs=2, progress=False),
                                  sweep.local(point, many, n_jobs=1, progress=False))


def test_specedge_workers_caps_the_local_processes_and_keeps_the_rows(monkeypatch):
    """The notebook runner sets SPECEDGE_WORKERS=1 for notebooks run side by side: their sweeps then stay
    in-process, also one that asks for two workers, and give the same rows."""
    many = _configs(n=sweep.MIN_PARALLEL_POINTS)
    monkeypatch.delenv(sweep.WORKERS_ENV, raising=False)
    fanned = sweep.local(point, many, progress=False)
    monkeypatch.setenv(sweep.WORKERS_ENV, "1")
    assert sweep.workers() == 1
    assert set(sweep.local(where, many, progress=False).pid) == {os.getpid()}
    assert set(sweep.run(where, many, backend="loky", n_jobs=2, progress=False).pid) == {os.getpid()}
    pd.testing.assert_frame_equal(sweep.local(point, many, progress=False), fanned)
    monkeypatch.setenv(sweep.WORKERS_ENV, "0")
    with pytest.raises(ValueError, match="SPECEDGE_WORKERS: a positive integer .* got '0'"):
        sweep.local(point, many, progress=False)


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
    monkeypatch.setattr(sweep, "point_version", lambda fn: "edited")
    sweep.run(counted, cfgs, backend="sequential", n_jobs=1, cache_dir=tmp_path / "c", progress=False)
    assert marker.read_text().split() == ["1", "1"]                       # an edited library recomputes


def test_the_key_follows_the_code_a_point_runs_and_not_the_rest_of_the_library(tmp_path):
    """The key hashes the point's
    module and what it imports — an unrelated module's edit keeps the cache, an imported one's does not."""
    import shutil

    from specedge import imports
    from specedge.experiments.li2026 import serving_runs as li2026

    lib = tmp_path / "specedge"
    shutil.copytree(imports.LIB, lib, ignore=shutil.ignore_patterns("__pycache__"))
    v0 = sweep.point_version(li2026.run_point, root=lib)
    assert v0 == sweep.point_version(li2026.run_point)                   # the copy reads as the library
    runs = imports.closure({"specedge.experiments.li2026.serving_runs"}, imports.graph(lib))
    assert "specedge.serving.sim.twin" in runs and "specedge.solvers.zhu2025" not in runs
    for unrelated in ("solvers/zhu2025.py", "experiments/zhu2025/runs.py", "compare.py"):
        (lib / unrelated).write_text((lib / unrelated).read_text() + "\n# edited\n")
        assert sweep.point_version(li2026.run_point, root=lib) == v0, unrelated
    for used in ("serving/sim/twin.py", "experiments/li2026/serving_runs.py", "serving/__init__.py"):   # a package __init__ runs too
        before = (lib / used).read_text()
        (lib / used).write_text(before + "\n# edited\n")
        assert sweep.point_version(li2026.run_point, root=lib) != v0, used
        (lib / used).write_text(before)


def test_an_edited_input_file_or_profile_gives_new_rows(tmp_path, monkeypatch):
    """The key holds a profile's content, not its path: an edit in place must not return the old rows."""
    import sys

    import yaml

    from specedge import hardware
    from specedge.experiments.li2026 import serving_runs as li2026

    data = tmp_path / "input.txt"
    data.write_text("1")
    monkeypatch.setattr(sys.modules[__name__], "SWEEP_INPUTS", (data,), raising=False)
    marker = tmp_path / "calls.txt"
    monkeypatch.setenv("SWEEP_MARKER", str(marker))
    run = lambda: sweep.run(counted, [Cfg(1, 0)], backend="sequential", n_jobs=1,  # noqa: E731
                            cache_dir=tmp_path / "c", progress=False)
    run(), run()
    assert marker.read_text().split() == ["1"]
    data.write_text("2")                                                  # an input edited in place
    run()
    assert marker.read_text().split() == ["1", "1"]

    path = tmp_path / "mine.yaml"
    doc = yaml.safe_load(hardware.profile_path("li2026_paper").read_text())
    path.write_text(yaml.safe_dump({**doc, "name": "mine"}))
    point = lambda: li2026.SCENARIO.point("WISP", 4, setting=li2026.SCENARIO.setting(profile=path))  # noqa: E731
    k0 = sweep.key(li2026.run_point, point(), "v")
    assert sweep.key(li2026.run_point, point(), "v") == k0
    doc["runtime"]["verify"]["a"] *= 1.01                                 # the profile edited in place
    path.write_text(yaml.safe_dump({**doc, "name": "mine"}))
    assert sweep.key(li2026.run_point, point(), "v") != k0


def test_every_field_of_a_configuration_is_in_its_key():
    base = Cfg(1, 2, "x")
    for other in (Cfg(9, 2, "x"), Cfg(1, 9, "x"), Cfg(1, 2, "y")):        # the first, middle and last field
        assert sweep.key(point, other) != sweep.key(point, base), other
    assert sweep.key(point, {"a": 1, "b": 2}) != sweep.key(point, {"a": 1, "b": 3})


def test_a_local_ray_start_listens_on_loopback(monkeypatch):
    """Without an address the ray backend starts Ray here: on 127.0.0.1, never on every interface."""
    import sys
    import types

    calls = []
    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: False
    ray.init = lambda **kw: calls.append(kw)
    util, rjob = types.ModuleType("ray.util"), types.ModuleType("ray.util.joblib")
    rjob.register_ray = lambda: None
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.util", util)
    monkeypatch.setitem(sys.modules, "ray.util.joblib", rjob)
    sweep._backend("ray", 2, None)
    sweep._backend("ray", 2, "ray://head:10001")
    assert calls[0]["_node_ip_address"] == "127.0.0.1" and calls[0]["address"] is None
    assert "_node_ip_address" not in calls[1] and calls[1]["address"] == "ray://head:10001"
