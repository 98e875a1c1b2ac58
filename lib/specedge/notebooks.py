"""Run the paper notebooks through papermill (``make figures``).

Every notebook declares its parameters in one tagged cell; this runner passes ``scale``, ``seed`` and
``profile`` to the notebooks that declare them, writes executed copies to the git-ignored
``build/notebooks/<scale>/``, and leaves the figures and tables to the notebooks themselves
(``figures/<key>/`` at full scale, ``build/ci/`` at CI scale).

    python -m specedge.notebooks                     # every notebook, full scale, default profiles
    python -m specedge.notebooks --scale ci zheng2025
    python -m specedge.notebooks --profile cpu_local zhu2025
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import papermill as pm

from . import paths


def notebooks(names: list[str] | None = None) -> list[Path]:
    """Notebooks under ``notebooks/`` named by ``names`` (all if None): a name (with or without
    ``.ipynb``) that is a notebook's exact name picks that one only (``li2026_wisp`` is not also
    ``li2026_wisp_serving``), any other name every notebook it is a prefix of."""
    found = sorted(paths.NOTEBOOKS.glob("*.ipynb"))
    if not names:
        return found
    chosen, unknown = [], []
    for n in (str(n).removesuffix(".ipynb") for n in names):
        hits = [nb for nb in found if nb.stem == n] or [nb for nb in found if nb.stem.startswith(n)]
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.notebooks", description="Run specedge notebooks through papermill.")
    ap.add_argument("names", nargs="*", help="notebook names or name prefixes (default: all)")
    ap.add_argument("--scale", default="full", choices=paths.SCALES)
    ap.add_argument("--seed", type=int, default=None, help="override each notebook's seed")
    ap.add_argument("--profile", default=None,
                    help="hardware profile for notebooks with a `profile` parameter (default: theirs)")
    args = ap.parse_args(argv)
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
    for nb in todo:
        t0 = time.perf_counter()
        print(f"[specedge] {nb.name} (scale={args.scale}"
              + (f", profile={args.profile}" if args.profile else "") + ") ...", flush=True)
        out = run(nb, args.scale, args.seed, args.profile)
        print(f"[specedge]   done in {time.perf_counter() - t0:.0f} s -> {out.relative_to(paths.ROOT)}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
