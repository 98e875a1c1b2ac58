"""specedge.sweep in this process: seeds, the worker cap, cache keys of plain configurations, the cache, the
worker count each backend gets and the cleanup of a cluster client. Backends that start processes or clusters
are replaced by in-process fakes here; tests/processes/test_sweep.py runs the real ones."""
import dataclasses
import importlib
import json
import sys
import types

import numpy as np
import pandas as pd
import pytest

from specedge import sweep


@dataclasses.dataclass(frozen=True)
class Cfg:
    n: int
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class Outer:
    inner: Cfg
    name: str = "x"


def square(cfg) -> dict:
    return dict(n=cfg.n, sq=cfg.n * cfg.n)


def two_rows(cfg) -> list:
    return [dict(n=cfg.n, k=k) for k in range(2)]


# --------------------------------------------------------------------------- seeds and workers
def test_seeds_are_32_bit_distinct_and_a_prefix_of_a_longer_draw():
    s = sweep.seeds(0, 5)
    assert len(s) == 5 == len(set(s)) and all(isinstance(x, int) and 0 <= x < 2 ** 32 for x in s)
    assert sweep.seeds(0, 3) == s[:3]                  # spawning n children: the first k do not depend on n
    assert sweep.seeds(1, 3) != s[:3] and sweep.seeds(0, 0) == []


def test_workers_is_the_environment_cap_or_this_processs_cores(monkeypatch):
    monkeypatch.delenv(sweep.WORKERS_ENV, raising=False)
    monkeypatch.setattr(sweep.os, "sched_getaffinity", lambda pid: {0, 3, 5})
    assert sweep.cores() == 3 and sweep.workers() == 3       # the affinity's cores, not the machine's count
    for value, want in (("1", 1), ("7", 7)):
        monkeypatch.setenv(sweep.WORKERS_ENV, value)
        assert sweep.workers() == want
    for bad in ("0", "-1", "two", "", " 2", "1.5"):
        monkeypatch.setenv(sweep.WORKERS_ENV, bad)
        with pytest.raises(ValueError, match=f"SPECEDGE_WORKERS: a positive integer .* got {bad!r}"):
            sweep.workers()


# --------------------------------------------------------------------------- keys of plain configurations
def test_a_key_depends_on_the_values_not_on_their_container_or_order():
    k = sweep.key(square, Cfg(3, 1))
    assert k == sweep.key(square, {"seed": 1, "n": 3}) == sweep.key(square, {"n": np.int64(3), "seed": np.int32(1)})
    assert len(k) == 24 and int(k, 16) >= 0
    assert sweep.key(square, (1, 2)) == sweep.key(square, [1, 2])
    assert sweep.key(square, {"x": np.float64(0.5)}) == sweep.key(square, {"x": 0.5})
    assert sweep.key(square, {"x": np.bool_(True)}) == sweep.key(square, {"x": True})
    # the telling cases: True is not 1, 1 is not 1.0 in JSON, a field's value, the version and the function count
    assert sweep.key(square, {"x": True}) != sweep.key(square, {"x": 1})
    assert sweep.key(square, {"x": 1}) != sweep.key(square, {"x": 1.0})
    assert sweep.key(square, Cfg(3, 2)) != k and sweep.key(square, Cfg(3, 1), "v2") != k
    assert sweep.key(two_rows, Cfg(3, 1)) != k
    # a nested dataclass's fields count, the last one too
    assert sweep.key(square, Outer(Cfg(1, 0))) != sweep.key(square, Outer(Cfg(1, 1)))
    assert sweep.key(square, Outer(Cfg(1, 0), "a")) != sweep.key(square, Outer(Cfg(1, 0), "b"))


def test_non_finite_floats_have_a_stable_key_and_other_values_are_refused_with_their_place():
    assert sweep._plain({"a": float("nan"), "b": float("-inf")}) == {"a": "nan", "b": "-inf"}
    assert sweep.key(square, {"a": float("nan")}) == sweep.key(square, {"a": np.float32("nan")})
    assert sweep._plain(None) is None and sweep._plain({2: "x", 10: "y"}) == {"10": "y", "2": "x"}
    with pytest.raises(TypeError, match=r"config\.b\[1\]: sweep configurations hold plain values only, got set"):
        sweep.key(square, {"b": [1, {2}]})
    with pytest.raises(TypeError, match=r"config\.inner\.seed: .* got object"):
        sweep.key(square, Outer(Cfg(1, object())))
    with pytest.raises(TypeError, match="got type"):          # a dataclass class, not an instance
        sweep.key(square, Cfg)


# --------------------------------------------------------------------------- run, in process
def test_run_keeps_config_order_flattens_row_lists_and_validates_before_any_work():
    rows = sweep.run(two_rows, [Cfg(2), Cfg(0), Cfg(1)], backend="sequential", progress=False)
    assert rows.n.tolist() == [2, 2, 0, 0, 1, 1] and rows.k.tolist() == [0, 1] * 3
    assert sweep.run(square, [], backend="sequential", progress=False).empty
    threaded = sweep.run(square, [Cfg(i) for i in range(9)], backend="threading", n_jobs=3, progress=False)
    pd.testing.assert_frame_equal(threaded, pd.DataFrame([square(Cfg(i)) for i in range(9)]))
    calls = []

    def spy(cfg):
        calls.append(cfg)
        return {}

    for kwargs, err, match in ((dict(backend="spark"), ValueError, "backend: expected one of"),
                               (dict(n_jobs=0), ValueError, "n_jobs: a non-zero int"),
                               (dict(n_jobs=1.5), ValueError, "n_jobs: a non-zero int")):
        with pytest.raises(err, match=match):
            sweep.run(spy, [Cfg(1)], progress=False, **kwargs)
    with pytest.raises(TypeError, match=r"config\.seed: .* got object"):   # every configuration is checked first
        sweep.run(spy, [Cfg(1), Cfg(2, object())], backend="sequential", progress=False)
    assert calls == []
    for bad in (3, [dict(a=1), 2], (dict(a=1),)):
        with pytest.raises(TypeError, match="must return a dict or a list of dicts"):
            sweep.run(lambda c, b=bad: b, [Cfg(1)], backend="sequential", progress=False)


def test_the_cache_stores_each_points_rows_under_its_key_and_reads_them_back(tmp_path):
    calls = []

    def counted(cfg):
        calls.append(cfg.n)
        return two_rows(cfg)

    cfgs = [Cfg(1), Cfg(2)]
    first = sweep.run(counted, cfgs, backend="sequential", cache_dir=tmp_path / "c", version="v", progress=False)
    files = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert files == sorted(f"{sweep.key(counted, c, 'v')}.json" for c in cfgs)       # no temporary file left
    assert json.loads((tmp_path / "c" / f"{sweep.key(counted, Cfg(2), 'v')}.json").read_text()) == two_rows(Cfg(2))
    again = sweep.run(counted, [Cfg(3), *cfgs], backend="sequential", cache_dir=tmp_path / "c", version="v",
                      progress=False)
    assert calls == [1, 2, 3]                                   # only the new point ran
    pd.testing.assert_frame_equal(again.iloc[2:].reset_index(drop=True), first)
    sweep.run(counted, cfgs[:1], backend="sequential", cache_dir=tmp_path / "c", version="w", progress=False)
    assert calls == [1, 2, 3, 1]                                # another version: another key


def _module(tmp_path, monkeypatch, name, source):
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    mod = importlib.import_module(name)
    monkeypatch.setitem(sys.modules, name, mod)
    return mod


def test_point_version_of_a_script_follows_its_file_and_its_inputs(tmp_path, monkeypatch):
    data = tmp_path / "input.txt"
    data.write_text("1")
    src = f"SWEEP_INPUTS = [{str(data)!r}]\n\ndef point(cfg):\n    return dict(n=cfg)\n"
    mod = _module(tmp_path, monkeypatch, "sweep_script_a", src)
    v0 = sweep.point_version(mod.point)
    assert len(v0) == 16 and sweep.point_version(mod.point) == v0
    data.write_text("2")                                        # an input edited in place: a new version
    v1 = sweep.point_version(mod.point)
    assert v1 != v0
    (tmp_path / "sweep_script_a.py").write_text(src + "# edited\n")   # the script's own source counts
    assert sweep.point_version(mod.point) not in (v0, v1)
    data.unlink()
    with pytest.raises(FileNotFoundError, match=r"sweep_script_a\.SWEEP_INPUTS: .*input\.txt is missing"):
        sweep.point_version(mod.point)
    # a function without a source file (defined by exec): its qualified name
    ns = {"__name__": "no_file"}
    exec("def f(cfg):\n    return {}\n", ns)
    assert sweep.point_version(ns["f"]) == sweep.point_version(ns["f"])
    exec("def g(cfg):\n    return {}\n", ns)
    assert sweep.point_version(ns["g"]) != sweep.point_version(ns["f"])


def test_the_default_version_is_the_point_version_only_with_a_cache(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(sweep, "point_version", lambda fn: asked.append(fn) or "pv")
    sweep.run(square, [Cfg(1)], backend="sequential", progress=False)
    assert asked == []                                          # no cache: no version needed
    sweep.run(square, [Cfg(1)], backend="sequential", cache_dir=tmp_path, progress=False)
    assert asked == [square] and (tmp_path / f"{sweep.key(square, Cfg(1), 'pv')}.json").exists()


# --------------------------------------------------------------------------- workers per backend, without processes
class _Fakes:
    """joblib's ``parallel_config`` and ``Parallel`` replaced: records the backend and worker count each run gets
    and evaluates the points in this process."""

    def __init__(self, monkeypatch):
        self.configs = []
        fakes = self

        class Config:
            def __init__(self, backend, n_jobs):
                fakes.configs.append((backend, n_jobs))

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        class Parallel:
            def __init__(self, return_as):
                assert return_as == "generator"

            def __call__(self, jobs):
                return (f(*a, **k) for f, a, k in jobs)

        monkeypatch.setattr(sweep, "parallel_config", Config)
        monkeypatch.setattr(sweep, "Parallel", Parallel)


@pytest.mark.parametrize("backend, n_jobs, env, want", [
    ("loky", -1, None, 4),        # joblib's -1: every core
    ("loky", -2, None, 3),        # -2: all but one
    ("loky", -8, None, 1),        # never fewer than one
    ("loky", 2, None, 2),
    ("loky", 8, None, 4),         # no more processes than cores ...
    ("loky", 8, "2", 2),          # ... or than SPECEDGE_WORKERS
    ("loky", 8, "6", 6),          # the variable, not the cores, is the cap when set
    ("loky", -1, "1", 1),
    ("threading", 8, "2", 8),     # threads start no processes: no cap
    ("dask", 3, "2", -1),         # a local cluster of min(3, 2) workers; joblib asked for all of them
])
def test_each_backend_gets_its_worker_count(monkeypatch, backend, n_jobs, env, want):
    fakes = _Fakes(monkeypatch)
    monkeypatch.setattr(sweep, "cores", lambda: 4)
    if env is None:
        monkeypatch.delenv(sweep.WORKERS_ENV, raising=False)
    else:
        monkeypatch.setenv(sweep.WORKERS_ENV, env)
    started = []
    monkeypatch.setattr(sweep, "_backend", lambda b, n, address: started.append((b, n, address)))
    rows = sweep.run(square, [Cfg(2), Cfg(1)], backend=backend, n_jobs=n_jobs, progress=False)
    assert rows.sq.tolist() == [4, 1] and fakes.configs == [(backend, want)]
    if backend == "dask":
        assert started == [("dask", 2, None)]


def test_nothing_to_compute_starts_no_backend(tmp_path, monkeypatch):
    sweep.run(square, [Cfg(1)], backend="sequential", cache_dir=tmp_path, version="v", progress=False)
    monkeypatch.setattr(sweep, "_backend", lambda *a: pytest.fail("a backend started for cached points"))
    assert sweep.run(square, [Cfg(1)], backend="loky", cache_dir=tmp_path, version="v", progress=False).sq.tolist() == [1]


def test_a_cluster_client_and_its_cluster_are_closed_also_when_a_point_fails(monkeypatch):
    _Fakes(monkeypatch)
    closed = []

    class Cluster:
        def close(self):
            closed.append("cluster")

    class Client:
        cluster = Cluster()

        def close(self):
            closed.append("client")

    monkeypatch.setattr(sweep, "_backend", lambda *a: Client())
    assert sweep.run(square, [Cfg(1)], backend="dask", address="tcp://x:1", progress=False).sq.tolist() == [1]
    assert closed == ["client", "cluster"]

    def boom(cfg):
        raise RuntimeError("point failed")

    with pytest.raises(RuntimeError, match="point failed"):
        sweep.run(boom, [Cfg(1)], backend="dask", address="tcp://x:1", progress=False)
    assert closed == ["client", "cluster"] * 2
    Client.cluster = None                          # a remote scheduler's client has no cluster of ours to close
    sweep.run(square, [Cfg(1)], backend="dask", address="tcp://x:1", progress=False)
    assert closed[-1] == "client" and len(closed) == 5


def test_missing_extras_name_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"backend 'dask' needs the dask extra: pip install -e '\.\[dask\]'"):
        sweep._backend("dask", 2, None)
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"backend 'ray' needs the ray extra: pip install -e '\.\[ray\]'"):
        sweep._backend("ray", 2, None)
    assert sweep._backend("loky", 2, None) is None and sweep._backend("sequential", 1, None) is None


def test_a_local_ray_listens_on_loopback_and_a_running_one_is_reused(monkeypatch):
    calls = []
    ray = types.ModuleType("ray")
    ray.initialized = False
    ray.is_initialized = lambda: ray.initialized
    ray.init = lambda **kw: calls.append(kw)
    joblib_mod = types.ModuleType("ray.util.joblib")
    joblib_mod.register_ray = lambda: calls.append("registered")
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.util", types.ModuleType("ray.util"))
    monkeypatch.setitem(sys.modules, "ray.util.joblib", joblib_mod)
    assert sweep._backend("ray", 2, None) is None
    assert calls == ["registered", dict(address=None, include_dashboard=False, _node_ip_address="127.0.0.1")]
    sweep._backend("ray", 2, "ray://head:10001")
    assert calls[-1] == dict(address="ray://head:10001", include_dashboard=False)   # a cluster's own address
    ray.initialized = True
    sweep._backend("ray", 2, None)
    assert calls[-1] == "registered"                                                  # no second init


# --------------------------------------------------------------------------- local
@pytest.mark.parametrize("points, n_jobs, want", [
    (sweep.MIN_PARALLEL_POINTS - 1, None, ("sequential", 1)),
    (sweep.MIN_PARALLEL_POINTS, None, ("loky", 3)),          # at the threshold: fanned out
    (sweep.MIN_PARALLEL_POINTS, 1, ("sequential", 1)),
    (2, 2, ("loky", 2)),
])
def test_local_stays_in_process_below_the_threshold(monkeypatch, points, n_jobs, want):
    monkeypatch.setenv(sweep.WORKERS_ENV, "3")
    got = []
    monkeypatch.setattr(sweep, "run", lambda fn, cfgs, backend, n_jobs, progress: got.append((backend, n_jobs, len(cfgs))))
    sweep.local(square, (Cfg(i) for i in range(points)), n_jobs=n_jobs, progress=False)   # a generator is fine
    assert got == [(*want, points)]
