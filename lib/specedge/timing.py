"""Timing work on this machine: the one definition behind every committed measurement.

A measurement runs the work ``warmup`` times untimed, then ``repeats`` times timed, and keeps every
sample. The value a table or profile reports is the **fastest** sample: on a shared machine other
processes only ever add time, so the minimum is the least disturbed estimate of what the work itself
costs. The median and spread are kept beside it (``summary``) so a reader can see how quiet the
machine was.

The work is a callable ``once() -> seconds`` that times its own part with ``stopwatch``, so untimed
set-up (a fresh cache, a prefill) can sit inside the same call::

    def once():
        cache = fresh_cache()                       # not timed
        with timing.stopwatch(device) as t:
            model(ids, **cache_kw(model, cache))
        return t.seconds

    seconds = timing.fastest(once, repeats=15)

Used by ``profiling`` (eq 17's pass times), ``experiments.venkatesha2025_measure`` (venkatesha2025 Tables 5 and 9),
``serving.real.verify_profiling`` (WISP's Appendix C), ``experiments.zheng2025_measure`` and the predictor
latency of WISP's Table 11 (which reports the whole distribution of samples).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable

import numpy as np


def sync(device: str = "cpu") -> None:
    """Wait for queued accelerator work, so a timer read after it covers the work (no-op on CPUs)."""
    if str(device).startswith("cuda"):
        import torch
        torch.cuda.synchronize()


class _Elapsed:
    seconds: float = float("nan")


@contextmanager
def stopwatch(device: str = "cpu"):
    """``with stopwatch(device) as t: ...`` sets ``t.seconds`` to the block's wall-clock time."""
    t = _Elapsed()
    sync(device)
    t0 = time.perf_counter()
    try:
        yield t
    finally:
        sync(device)
        t.seconds = time.perf_counter() - t0


def samples(once: Callable[[], float], repeats: int, warmup: int = 1) -> np.ndarray:
    """Seconds of ``repeats`` timed calls of ``once`` after ``warmup`` untimed ones."""
    if not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if not isinstance(warmup, (int, np.integer)) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    for _ in range(warmup):
        once()
    return np.array([once() for _ in range(repeats)], dtype=float)


def fastest(once: Callable[[], float], repeats: int, warmup: int = 1) -> float:
    """The reported value of a measurement: the fastest of ``samples(once, repeats, warmup)``."""
    return float(samples(once, repeats, warmup).min())


def summary(t) -> dict:
    """The reported value (``seconds``, the fastest sample) and the spread of the samples ``t``."""
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError(f"summary needs a non-empty 1-D array of finite seconds, got {t!r}")
    std = float(t.std(ddof=1)) if t.size > 1 else 0.0
    return dict(seconds=float(t.min()), median=float(np.median(t)), mean=float(t.mean()), std=std,
                max=float(t.max()), cv=std / float(t.mean()) if t.mean() > 0 else 0.0, runs=int(t.size))
