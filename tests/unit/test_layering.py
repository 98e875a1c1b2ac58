"""The library's layout is its architecture: layers that only import downward, and no circle.

``LAYERS`` is the one statement of the layer order (README "Layout" describes it). Every import in
``lib/specedge`` counts, also the ones inside functions (a lazy import is still an arrow). A top-level
module or package of ``specedge`` is a *unit*; a unit may import units of its own layer or below, and
the units of one layer must not import each other in a circle; no two files may import each other
through a chain either.
"""
from __future__ import annotations

import pytest

from specedge import imports

# lowest first; a unit imports only from its own layer or a lower one
LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"imports", "paths", "params", "timing", "sampling", "output_noise", "plotting", "claims", "compare", "coverage", "papers", "sweep",
              "decoding", "kv_cache_arg", "registry"}),
    ("hardware", {"hardware", "host", "profiling", "needs"}),
    ("models", {"zoo", "llamacpp", "gguf_files"}),
    ("algorithms", {"solvers"}),
    ("systems", {"early_exit", "predictor", "serving"}),
    ("experiments", {"experiments", "notebooks", "timings"}),
]
RANK = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}


def unit(module: str) -> str:
    return module.split(".")[1] if "." in module else module


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return imports.graph()


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``edges`` (as a path that returns to its start), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_every_unit_has_a_layer(graph):
    assert {unit(m) for m in graph if m != "specedge"} <= set(RANK), \
        f"units without a layer (add them to LAYERS): {sorted({unit(m) for m in graph} - set(RANK) - {'specedge'})}"


def test_no_arrow_runs_up(graph):
    up = [f"{a} -> {b} ({LAYERS[RANK[unit(a)]][0]} imports {LAYERS[RANK[unit(b)]][0]})"
          for a, targets in graph.items() for b in sorted(targets)
          if a != "specedge" and RANK[unit(a)] < RANK[unit(b)]]
    assert not up, "imports that run up a layer:\n" + "\n".join(up)


def test_no_circle_between_files(graph):
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_no_circle_between_units(graph):
    units: dict[str, set[str]] = {}
    for a, targets in graph.items():
        units.setdefault(unit(a), set()).update(unit(b) for b in targets if unit(b) != unit(a))
    assert _cycle(units) is None, " -> ".join(_cycle(units))


def test_the_checks_can_fail():
    """The graph reader sees relative, absolute and lazy imports, and the checks flag what they should."""
    known, lib = set(imports.module_files()), imports.LIB
    found = imports.imports_of(lib / "serving" / "allocation.py", known, "specedge.serving.allocation")
    assert "specedge.solvers.tran2025" in found and "specedge.serving.interfaces" in found
    found = imports.imports_of(lib / "experiments" / "li2026_real.py", known, "specedge.experiments.li2026_real")
    assert {"specedge.serving.run", "specedge.zoo", "specedge.experiments.li2026"} <= found   # lazy ones too
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert RANK["serving"] > RANK["solvers"] > RANK["hardware"] > RANK["paths"]
