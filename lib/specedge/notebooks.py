"""Run the paper notebooks through papermill (``make figures``).

Every notebook declares its parameters in one tagged cell; this runner passes ``scale``, ``seed`` and
``profile`` to the notebooks that declare them, writes executed copies to the git-ignored
``build/notebooks/<scale>/``, and leaves the figures and tables to the notebooks themselves
(``figures/<key>/`` at full scale, ``build/ci/`` at CI scale).

    python -m specedge.notebooks                     # every notebook, full scale, default profiles
    python -m specedge.notebooks --scale ci zheng2025
    python -m specedge.notebooks li2026_serving      # an output folder's key: the notebook that writes it
    python -m specedge.notebooks --profile cpu_local zhu2025
    python -m specedge.notebooks --jobs 1            # one notebook after another

Several notebooks run side by side (``--jobs``, default: one per core), each in its own process and
kernel, longest first (``expected_s`` of ``data/papers.yaml``), a notebook that reads another's committed
outputs after it (``reads``: the arena reads the twin's validation tables). Side by side, each kernel's local sweeps get ``cores // jobs``
workers (``sweep.WORKERS_ENV``): the notebooks share the cores instead of each one expecting all of
them. Outputs do not depend on it: every sweep gives the same rows on any number of workers, and the
notebooks write to their own folders. Thread counts are left to the notebooks (those with tiny models
set one torch thread themselves): torch's reductions depend on them (with OMP_NUM_THREADS=1 zheng2025's
α(K) moved in the 10th digit), so forcing one thread would make a parallel run differ from a serial one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path

import papermill as pm

from . import host, papers, paths, sweep


def notebooks(names: list[str] | None = None) -> list[Path]:
    """Notebooks under ``notebooks/`` named by ``names`` (all if None): a name (with or without
    ``.ipynb``) that is a notebook's exact name picks that one only (``li2026_wisp`` is not also
    ``li2026_wisp_serving``), a paper's key of ``data/papers.yaml`` its notebooks, an output folder's key
    the notebook that writes it (``li2026_serving``: ``li2026_wisp_serving``), any other name every
    notebook it is a prefix of."""
    found = sorted(paths.NOTEBOOKS.glob("*.ipynb"))
    if not names:
        return found
    chosen, unknown = [], []
    for n in (str(n).removesuffix(".ipynb") for n in names):
        picked = set(papers.MANIFEST.select(n))
        hits = ([nb for nb in found if nb.stem == n] or [nb for nb in found if nb.stem in picked]
                or [nb for nb in found if nb.stem.startswith(n)])
        chosen += [nb for nb in hits if nb not in chosen]
        unknown += [] if hits else [n]
    if unknown:
        raise ValueError(f"no notebook matches {unknown}; have {[nb.stem for nb in found]}")
    return sorted(chosen)


def _quiet_kernel_manager():
    """jupyter_client interrupts a kernel before asking it to shut down; after a notebook ran to its
    end there is nothing to interrupt, and a SIGINT that lands while the kernel still finishes its
    last message prints ``[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel`` under a run that
    went well. This manager shuts down without that interrupt (an execution timeout still kills)."""
    from jupyter_client import AsyncKernelManager

    class QuietShutdown(AsyncKernelManager):
        async def _async_interrupt_kernel(self) -> None:
            if not self.shutting_down:
                await super()._async_interrupt_kernel()

    return QuietShutdown


def plan(todo: list[Path]) -> list[Path]:
    """The order notebooks start in: the longest expected first (the manifest's ``expected_s``: full-scale
    seconds on the 2-core reference machine, docs/benchmarks.md; unknown ones first, by name), so that a long
    notebook never starts last while the other cores idle; a notebook that reads another's outputs (``reads``:
    the arena reads the Validation tables of tran2025 and li2026_serving) after it."""
    expected = papers.MANIFEST.expected_s
    order = sorted(todo, key=lambda nb: (-expected.get(nb.stem, float("inf")), nb.stem))
    placed: list[Path] = []
    while order:
        nb = next(nb for nb in order if not set(_needs(nb, order)))
        order.remove(nb)
        placed.append(nb)
    return placed


def _needs(nb: Path, among: list[Path]) -> list[Path]:
    """The notebooks of ``among`` whose outputs ``nb`` reads (the manifest's ``reads``)."""
    return [m for m in among if m.stem in papers.MANIFEST.reads.get(nb.stem, ())]


def kernel_env(jobs: int, cores: int | None = None) -> dict[str, str]:
    """Environment for kernels that run ``jobs`` at a time on ``cores`` (default: this process's): the
    vector kernels capped at AVX2 (``host.PORTABLE_ENV``: the same values on AMD AVX2 and AVX-512 hosts), and for
    more than one at a time ``cores // jobs`` (at least 1) sweep workers each."""
    if jobs == 1:
        return dict(host.PORTABLE_ENV)
    cores = sweep.cores() if cores is None else cores
    return {**host.PORTABLE_ENV, sweep.WORKERS_ENV: str(max(1, cores // jobs))}


def run(nb: Path, scale: str = "full", seed: int | None = None, profile: str | None = None) -> Path:
    """Execute one notebook with papermill, passing only the parameters it declares."""
    paths.check_scale(scale)
    declared = pm.inspect_notebook(str(nb))
    params = {"scale": scale, "seed": seed, "profile": profile}
    params = {k: v for k, v in params.items() if v is not None and k in declared}
    out = paths.BUILD / "notebooks" / scale / nb.name
    out.parent.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(str(nb), str(out), parameters=params, kernel_name="python3",
                        cwd=str(nb.parent), progress_bar=False, kernel_manager_class=_quiet_kernel_manager())
    return out


def _profile_plan(profile: str, todo: list[Path]) -> tuple[str, list[Path]]:
    """Before anything runs: the profile (a relative path made absolute, as the kernel's working
    directory is notebooks/) and the notebooks that can use it; prints what is skipped and why, and
    raises when none can."""
    from . import hardware, needs

    if str(profile).endswith((".yaml", ".yml")):
        profile = str(hardware.profile_path(profile).resolve())
    prof = hardware.load_profile(profile)          # an unknown profile fails here, before any output
    runnable, skipped = [], []
    for nb in todo:
        if "profile" not in pm.inspect_notebook(str(nb)):
            skipped.append(f"{nb.stem}: no `profile` parameter")
        elif gaps := needs.missing(nb.stem, prof):
            skipped.append(f"{nb.stem}: {prof.path or prof.name} lacks " + "; ".join(gaps))
        else:
            runnable.append(nb)
    for line in skipped:
        print(f"[specedge] skipped {line}", flush=True)
    if not runnable:
        raise SystemExit(f"profile {prof.name!r} ({prof.path}) serves none of {[nb.stem for nb in todo]}: "
                         "see the reasons above")
    return profile, runnable


def _attempt(nb: Path, scale: str, seed: int | None, profile: str | None, env: dict[str, str]):
    """Run one notebook (in a worker process when ``env`` is set: the kernel inherits it); returns
    (output or None, seconds, error text or None) instead of raising, so one failure ends no other."""
    os.environ.update(env)
    t0 = time.perf_counter()
    try:
        out, error = run(nb, scale, seed, profile), None
    except Exception as e:                          # papermill's error carries the failing cell's traceback
        out, error = None, f"{type(e).__name__}: {e}"
    return out, time.perf_counter() - t0, error


def execute(todo: list[Path], scale: str, seed: int | None = None, profile: str | None = None,
            jobs: int = 1) -> dict[str, float]:
    """Run ``todo`` in ``plan`` order, ``jobs`` at a time (one at a time in this process for 1; else a
    process per notebook, kernels with ``kernel_env(jobs)``); prints a line per start and per end (with
    its time), or the failing notebook's name and error. Returns the seconds per notebook; raises
    ``SystemExit(1)`` naming the failed ones after the others have run."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: an integer >= 1, got {jobs!r}")
    order, jobs = plan(todo), min(jobs, len(todo))
    env, seconds, failed = kernel_env(jobs), {}, []
    label = f"scale={scale}" + (f", profile={profile}" if profile else "")

    def started(nb: Path) -> None:
        print(f"[specedge] {nb.name} ({label}) ...", flush=True)

    def ended(nb: Path, out, s: float, error) -> None:
        seconds[nb.stem] = s
        if error is None:
            print(f"[specedge]   {nb.stem} done in {s:.0f} s -> {out.relative_to(paths.ROOT)}", flush=True)
        else:
            failed.append(nb.stem)
            print(f"[specedge]   {nb.stem} FAILED after {s:.0f} s: {error}", flush=True)

    t0 = time.perf_counter()
    if jobs == 1:
        for nb in order:
            started(nb)
            ended(nb, *_attempt(nb, scale, seed, profile, env))
    else:
        print(f"[specedge] {len(order)} notebooks, {jobs} at a time (kernels: "
              + ", ".join(f"{k}={v}" for k, v in env.items()) + ")", flush=True)
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            waiting, running = list(order), {}
            while waiting or running:
                unfinished = waiting + list(running.values())
                while (ready := [nb for nb in waiting if not _needs(nb, unfinished)]) and len(running) < jobs:
                    nb = ready[0]
                    waiting.remove(nb)
                    started(nb)
                    running[pool.submit(_attempt, nb, scale, seed, profile, env)] = nb
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in done:
                    ended(running.pop(f), *f.result())
    print(f"[specedge] {len(order)} notebooks in {time.perf_counter() - t0:.0f} s ("
          + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()) + ")", flush=True)
    if failed:
        raise SystemExit(f"[specedge] failed: {', '.join(failed)} (executed copies in "
                         f"{(paths.BUILD / 'notebooks' / scale).relative_to(paths.ROOT)}/)")
    return seconds


def record_notebooks(seconds: dict[str, float], jobs: int, wall: float, cold: bool, folder: Path = paths.TIMINGS) -> dict:
    """The seconds of each notebook of one complete full-scale run, with the host (``host.machine``), into
    ``folder/notebooks.json`` (docs/benchmarks.md's per-notebook block: ``tools/timings.py readme``)."""
    folder.mkdir(parents=True, exist_ok=True)
    record = {"seconds": {k: round(v, 1) for k, v in seconds.items()}, "jobs": jobs, "wall": round(wall, 1),
              "cold_sweep_cache": cold, **host.machine()}
    (folder / "notebooks.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.notebooks", description="Run specedge notebooks through papermill.")
    ap.add_argument("names", nargs="*", help="notebook names, paper or output folder keys, or name prefixes "
                    "(default: all)")
    ap.add_argument("--scale", default="full", choices=paths.SCALES)
    ap.add_argument("--seed", type=int, default=None, help="override each notebook's seed")
    ap.add_argument("--profile", default=None,
                    help="hardware profile for notebooks with a `profile` parameter (default: theirs)")
    ap.add_argument("--jobs", type=int, default=sweep.cores(),
                    help="notebooks run at once, each in its own process (default: one per core)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs: an integer >= 1, got {args.jobs}")
    try:
        todo = notebooks(args.names)
    except ValueError as e:                                 # an unknown name: usage and one line, no traceback
        ap.error(str(e))
    if args.profile:
        from .hardware import ProfileError
        try:
            args.profile, todo = _profile_plan(args.profile, todo)
        except (FileNotFoundError, ProfileError) as e:     # unknown or invalid: said before any output
            ap.error(f"--profile: {e}")
    complete = args.scale == "full" and not (args.names or args.profile or args.seed is not None)
    cold = not any((paths.BUILD / "sweeps").glob("**/*.*"))
    t0 = time.perf_counter()
    seconds = execute(todo, args.scale, args.seed, args.profile, args.jobs)
    if complete:                        # every notebook with its defaults: docs/benchmarks.md's numbers (make readme)
        record_notebooks(seconds, min(args.jobs, len(todo)), time.perf_counter() - t0, cold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
