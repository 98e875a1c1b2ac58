"""Every module the repository's text names exists: each ``python -m specedge.<module>`` command in data/, docs/,
README.md, the Makefile and the library's own messages runs a module that can be run (a module with a
``__main__`` guard, or a package with ``__main__.py``), and each dotted library name a data file gives as its
provenance or input (``experiments.tran2025.runs.workload``, ``serving.real.verify_profiling``) resolves to a module
or to a name a module defines. A module that moves takes its commands and provenance strings with it."""
from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from specedge import paths

COMMAND = re.compile(r"-m (specedge(?:\.[A-Za-z_]\w*)*)\b(?![.{\w])")
# a dotted library name in a data file: a top-level package of specedge, then at least one more part
DOTTED = re.compile(r"(?<![\w/.-])(?:specedge\.)?((?:experiments|serving|zoo|predictor|solvers|early_exit|hardware)"
                    r"(?:\.[A-Za-z_]\w*)+)")
DATA_TEXT = ("*.md", "*.yaml", "*.yml", "*.txt")


def _files() -> list[Path]:
    root = paths.ROOT
    out = [root / "README.md", root / "Makefile", *sorted((root / "docs").rglob("*.md")),
           *sorted(p for pat in DATA_TEXT for p in (root / "data").rglob(pat)),
           *sorted((root / "lib" / "specedge").rglob("*.py")), *sorted((root / "tools").rglob("*.py"))]
    return [p for p in out if p.is_file()]


def runnable(module: str) -> str | None:
    """None if ``python -m module`` runs something, else why not."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.origin is None:
        return "no such module"
    if spec.submodule_search_locations is not None:       # a package runs its __main__
        return None if importlib.util.find_spec(f"{module}.__main__") is not None else "a package without __main__.py"
    tree = ast.parse(Path(spec.origin).read_text())
    guard = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    return None if guard else "a module without an `if __name__ == \"__main__\"` block"


def resolves(name: str) -> bool:
    """Whether ``specedge.<name>`` is a module, or a name one of its modules defines (the longest module prefix)."""
    parts = f"specedge.{name}".split(".")
    for i in range(len(parts), 1, -1):
        mod = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(mod) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            return i == len(parts) or hasattr(importlib.import_module(mod), parts[i])
    return False


def commands(files) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in COMMAND.findall(line):
                out.setdefault(m, []).append(f"{f.relative_to(paths.ROOT) if f.is_relative_to(paths.ROOT) else f}:{n}")
    return out


def test_every_python_m_command_runs_a_module_that_exists():
    found = commands(_files())
    assert len(found) >= 15 and "specedge.serving.real.verify_profiling" in found   # the scan reads what it should
    bad = [f"{m} ({why}), named at {', '.join(where[:3])}" for m, where in sorted(found.items()) if (why := runnable(m))]
    assert not bad, "commands naming a module that cannot run:\n" + "\n".join(bad)


def test_every_dotted_name_in_a_data_file_resolves():
    root = paths.ROOT / "data"
    bad = []
    for f in sorted(p for pat in DATA_TEXT for p in root.rglob(pat)):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            bad += [f"{f.relative_to(paths.ROOT)}:{n}: {m}" for m in DOTTED.findall(line) if not resolves(m.rstrip("."))]
    assert not bad, "data files naming a module or name that does not exist:\n" + "\n".join(bad)


def test_the_checks_can_fail(tmp_path):
    f = tmp_path / "notes.md"
    f.write_text("run `python -m specedge.experiments.tran2025 measure`, then `python -m specedge.serving.verify_profiling`;\n"
                 "`.venv/bin/python -m specedge.zoo build` and `python -m specedge.experiments.{step}` (a template)\n"
                 "python -m specedge.sampling\n")
    found = commands([f])
    assert sorted(found) == ["specedge.experiments.tran2025", "specedge.sampling", "specedge.serving.verify_profiling",
                             "specedge.zoo"]
    assert runnable("specedge.experiments.tran2025") == "a package without __main__.py"     # the folder, not its driver
    assert runnable("specedge.serving.verify_profiling") == "no such module"
    assert runnable("specedge.sampling").startswith("a module without")
    assert runnable("specedge.zoo") is None and runnable("specedge.experiments.tran2025.runs") is None
    assert resolves("experiments.tran2025.runs.workload") and resolves("serving.real.verify_profiling")
    assert not resolves("experiments.tran2025.workload") and not resolves("serving.verify_profiling")
    assert not resolves("experiments.model_zoo.realpair_twin")
    assert DOTTED.findall("input: \"serving.estimator.fit (bootstrap=1000)\", `specedge.zoo.net2net.widen`, data/zoo.md") == [
        "serving.estimator.fit", "zoo.net2net.widen"]


@pytest.mark.parametrize("module", ["specedge.experiments.serving_validation.runs", "specedge.experiments.li2026.real",
                                    "specedge.experiments.edge_sd_arena.spotcheck", "specedge.experiments.tran2025.runs"])
def test_the_measuring_steps_run(module):
    assert runnable(module) is None
