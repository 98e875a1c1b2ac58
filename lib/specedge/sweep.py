"""Sweeps that scale out: every point a pure function of a plain configuration, cached, fanned out by joblib.

    rows = sweep.run(fn, configs)                                 # loky: this machine's cores
    rows = sweep.run(fn, configs, backend="dask", address="tcp://scheduler:8786")   # a Dask cluster
    rows = sweep.run(fn, configs, backend="ray", address="auto")                     # a Ray cluster

``fn(config)`` returns a dict (one row) or a list of dicts; ``configs`` are frozen dataclasses or dicts
of plain values (numbers, strings, bools, None, tuples/lists and nested dataclasses/dicts of those).
``run`` returns the rows as a DataFrame in config order, whatever the backend, worker count or
completion order. With ``cache_dir`` each point's rows are stored as JSON under a hash of the
function's qualified name, ``version`` and the configuration, so a rerun (or a crashed sweep resumed)
computes only the missing points. ``version`` defaults to ``point_version(fn)``: the content of
everything a point reads, so a stale point can never be read back and an unrelated edit keeps the cache:

- the code it can run: the source of ``fn``'s module and of every ``specedge`` module it imports,
  directly or not, also inside functions (``specedge.imports``) — not the rest of the library;
- the files it reads: those its module lists in ``SWEEP_INPUTS`` (traces, predictor weights, ...);
- the numbers it is given: the configuration itself (a hardware profile's coefficients belong in it,
  e.g. ``experiments.li2026.serving_runs.SCENARIO.setting(profile=...)``, never a profile's name or path).

Pass a fixed string as ``version`` to keep a cache across edits you know to be irrelevant.

Seeds: ``seeds(seed, n)`` spawns ``n`` independent seeds from ``numpy.random.SeedSequence(seed)``;
put them into the configurations so that a point's randomness belongs to the point.

The ``dask`` and ``ray`` backends need the optional extras (``pip install -e '.[dask]'`` /
``'.[ray]'``); without ``address`` the Dask backend starts a ``LocalCluster`` of ``n_jobs`` worker
processes (a test checks it gives the local rows exactly).

``SPECEDGE_WORKERS`` (``WORKERS_ENV``), when set, caps the worker processes a sweep starts on this machine
(loky, a local Dask cluster): the notebook runner sets it when notebooks run side by side, so that
each takes its share of the cores instead of all of them. The rows do not change.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, parallel_config
from tqdm.auto import tqdm

from . import imports

BACKENDS = ("loky", "threading", "sequential", "dask", "ray")
# below this many points ``local`` stays in-process: starting a worker (it imports the library, numpy,
# pandas, scipy; ~2 s on a quiet 2-core machine, ~20 s on a loaded one) costs more than it saves
MIN_PARALLEL_POINTS = 64
WORKERS_ENV = "SPECEDGE_WORKERS"


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    return len(os.sched_getaffinity(0))


def workers() -> int:
    """Worker processes a sweep may start on this machine: ``$SPECEDGE_WORKERS`` if set, else ``cores()``."""
    value = os.environ.get(WORKERS_ENV)
    if value is None:
        return cores()
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{WORKERS_ENV}: a positive integer (worker processes per sweep), got {value!r}")
    return int(value)


def seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 32-bit seeds spawned from ``SeedSequence(seed)``."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n)]


def _plain(value: Any, key: str = "config") -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{key}.{k}") for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    raise TypeError(f"{key}: sweep configurations hold plain values only, got {type(value).__name__} {value!r}")


def point_version(fn: Callable, root: Path | None = None) -> str:
    """sha256 (first 16 hex digits) of what a point of ``fn`` reads besides its configuration: the
    source of ``fn``'s module and of every ``specedge`` module it imports (transitively), and the content
    of the files its module lists in ``SWEEP_INPUTS``. ``root``: the package folder (tests pass a copy)."""
    root = Path(root) if root is not None else imports.LIB
    files, edges = imports.module_files(root), imports.graph(root)
    h = hashlib.sha256()
    if fn.__module__ in files:                                  # a library function: its module's closure
        start = {fn.__module__}
    else:                                                       # a test's or a script's: its file, and the
        own = Path(inspect.getsourcefile(fn) or "")             # library modules that file imports
        start = imports.imports_of(own, set(files)) if own.is_file() else set()
        h.update(own.read_bytes() if own.is_file() else fn.__qualname__.encode())
    for m in sorted(imports.closure(start, edges)):
        h.update(m.encode() + b"\0" + files[m].read_bytes() + b"\0")
    module = sys.modules.get(fn.__module__)
    for f in sorted(str(f) for f in getattr(module, "SWEEP_INPUTS", ())):
        if not Path(f).is_file():
            raise FileNotFoundError(f"{fn.__module__}.SWEEP_INPUTS: {f} is missing")
        h.update(Path(f).name.encode() + b"\0" + Path(f).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def key(fn: Callable, config: Any, version: str = "") -> str:
    """The cache key of one point: sha256 of the function's name, ``version`` and the configuration."""
    payload = json.dumps([f"{fn.__module__}.{fn.__qualname__}", version, _plain(config)], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _rows(result: Any, where: str) -> list[dict]:
    rows = [result] if isinstance(result, dict) else result
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"{where}: must return a dict or a list of dicts, got {type(result).__name__}")
    return rows


def _point(fn, config, path: str | None) -> list[dict]:
    rows = _rows(fn(config), getattr(fn, "__qualname__", str(fn)))
    if path is not None:
        tmp = Path(f"{path}.{os.getpid()}.tmp")   # two workers may compute the same point (shared caches)
        tmp.write_text(json.dumps(rows))
        tmp.replace(path)
    return rows


def _backend(backend: str, n_jobs: int, address: str | None):
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
    if backend == "dask":
        try:
            from distributed import Client, LocalCluster
        except ImportError as err:
            raise ImportError("backend 'dask' needs the dask extra: pip install -e '.[dask]'") from err
        if address:
            return Client(address)
        return Client(LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True,
                                   dashboard_address=None, host="127.0.0.1"))
    if backend == "ray":
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError as err:
            raise ImportError("backend 'ray' needs the ray extra: pip install -e '.[ray]'") from err
        register_ray()
        if not ray.is_initialized():      # a local start listens on loopback only (no address: a new local Ray)
            ray.init(address=address, include_dashboard=False,
                     **({} if address else {"_node_ip_address": "127.0.0.1"}))
    return None


def run(fn: Callable[[Any], dict | list[dict]], configs: Sequence[Any], *, backend: str = "loky",
        n_jobs: int = -1, cache_dir: str | Path | None = None, version: str | None = None,
        address: str | None = None, progress: bool = True) -> pd.DataFrame:
    """Evaluate ``fn`` on every configuration (module docstring); rows in config order."""
    configs = list(configs)
    if version is None:
        version = point_version(fn) if cache_dir is not None else ""
    keys = [key(fn, c, version) for c in configs]        # validates every configuration first
    if not isinstance(n_jobs, int) or n_jobs == 0:
        raise ValueError(f"n_jobs: a non-zero int (joblib: -1 = all cores), got {n_jobs!r}")
    cache = Path(cache_dir) if cache_dir is not None else None
    results: list[list[dict] | None] = [None] * len(configs)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for i, k in enumerate(keys):
            f = cache / f"{k}.json"
            if f.exists():
                results[i] = json.loads(f.read_text())
    todo = [i for i, r in enumerate(results) if r is None]
    if backend == "loky" or (backend == "dask" and not address):     # processes on this machine
        n_jobs = min(n_jobs if n_jobs > 0 else max(1, cores() + 1 + n_jobs), workers())   # joblib: -1 = all
    if todo:
        client = _backend(backend, n_jobs, address)
        try:
            with parallel_config(backend=backend, n_jobs=n_jobs if backend != "dask" else -1):
                jobs = (delayed(_point)(fn, configs[i], str(cache / f"{keys[i]}.json") if cache else None) for i in todo)
                out = Parallel(return_as="generator")(jobs)
                for i, rows in zip(todo, tqdm(out, total=len(todo), desc=getattr(fn, "__name__", "sweep"),
                                              disable=not progress)):
                    results[i] = rows
        finally:
            if client is not None:
                cluster = getattr(client, "cluster", None)
                client.close()
                if cluster is not None:
                    cluster.close()
    return pd.DataFrame([row for rows in results for row in rows])


def local(fn: Callable[[Any], dict | list[dict]], configs: Sequence[Any], *, n_jobs: int | None = None,
          progress: bool = True) -> pd.DataFrame:
    """``run`` on this machine without a cache: in-process below ``MIN_PARALLEL_POINTS`` points, else on
    ``n_jobs`` loky workers (default: ``workers()``). The rows are the same either way (``run``)."""
    configs = list(configs)
    if n_jobs is None:
        n_jobs = 1 if len(configs) < MIN_PARALLEL_POINTS else workers()
    return run(fn, configs, backend="sequential" if n_jobs == 1 else "loky", n_jobs=n_jobs, progress=progress)
