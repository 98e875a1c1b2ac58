"""The library's layout is its architecture: layers that only import downward, and no circle.

``LAYERS`` is the one statement of the layer order (README "Layout" describes it). Every import in
``lib/specedge`` counts, also the ones inside functions (a lazy import is still an arrow). A top-level
module or package of ``specedge`` is a *unit*; a unit may import units of its own layer or below, and
the units of one layer must not import each other in a circle; no two files may import each other
through a chain either. Inside ``serving``, ``WINGS`` states the order of its wings over one ground.
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
    found = imports.imports_of(lib / "serving" / "policies" / "allocation.py", known, "specedge.serving.policies.allocation")
    assert "specedge.solvers.tran2025" in found and "specedge.serving.interfaces" in found
    found = imports.imports_of(lib / "experiments" / "li2026" / "real.py", known, "specedge.experiments.li2026.real")
    assert {"specedge.serving.real.run", "specedge.zoo", "specedge.experiments.serving_validation.runs"} <= found   # lazy ones too
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert RANK["serving"] > RANK["solvers"] > RANK["hardware"] > RANK["paths"]


# serving/'s wings over its ground (README "Layout"): the ground at serving/'s top is below every wing; a wing
# imports the ground, itself and the wings it lists here, never one above it; the top (the CLI, the scenario
# language: its schema, its loader and the acceptance sources it names; the estimator's figures) may import any wing.
SERVING_GROUND = {"interfaces", "workload", "slo", "timegrid", "log"}
SERVING_TOP = {"__main__", "scenario", "scenario_schema", "acceptance_sources", "estimator_figures"}
WINGS: dict[str, set[str]] = {        # wing -> the wings it may import
    "timemodels": set(),                                  # runtime models, the estimator, their fits
    "policies": {"timemodels"},                           # batch formers, draft allocators, the registry lookup
    "sim": {"timemodels", "policies"},                    # the event engine, the twin, the replay
    "real": set(),                                        # the gRPC server, drafters, verifier, codec
    "analysis": {"timemodels", "policies", "sim", "real"},  # metrics and validation over both systems' logs
}


def part(module: str) -> str | None:
    """The serving part of ``module``: a wing, "ground" or "top"; None outside serving."""
    parts = module.split(".")
    if parts[:2] != ["specedge", "serving"]:
        return None
    if len(parts) == 2:
        return "top"
    if parts[2] in WINGS:
        return parts[2]
    return "ground" if parts[2] in SERVING_GROUND else "top" if parts[2] in SERVING_TOP else "unplaced"


def serving_arrows_up(graph: dict[str, set[str]]) -> list[str]:
    """Every import in serving/ that its wings' order forbids."""
    bad = []
    for a, targets in graph.items():
        pa = part(a)
        if pa is None:
            continue
        for b in sorted(targets):
            pb = part(b)
            if pb is None or pb == pa or pa == "top" or pb == "ground":
                continue
            if pa == "ground" or pb == "top" or pb not in WINGS.get(pa, set()):
                bad.append(f"{a} -> {b} ({pa} imports {pb})")
    return bad


def test_every_serving_module_has_a_place(graph):
    unplaced = sorted(m for m in graph if part(m) == "unplaced")
    assert not unplaced, f"serving modules in no wing, not in the ground or the top (place them): {unplaced}"


def test_serving_wings_import_downward(graph):
    bad = serving_arrows_up(graph)
    assert not bad, "serving imports against the wings' order:\n" + "\n".join(bad)


def test_serving_wings_have_no_circle():
    assert _cycle(WINGS) is None, " -> ".join(_cycle(WINGS))
    assert set().union(*WINGS.values()) <= set(WINGS)


def test_the_serving_checks_can_fail():
    """An upward arrow is flagged, whichever way it runs up."""
    assert serving_arrows_up({"specedge.serving.interfaces": {"specedge.serving.sim.engine"}})      # ground -> wing
    assert serving_arrows_up({"specedge.serving.real.run": {"specedge.serving.sim.twin"}})          # across wings
    assert serving_arrows_up({"specedge.serving.timemodels.runtime": {"specedge.serving.policies"}})  # down -> up
    assert serving_arrows_up({"specedge.serving.sim.twin": {"specedge.serving.scenario"}})          # wing -> top
    assert not serving_arrows_up({"specedge.serving.analysis.validation": {"specedge.serving.real.run",
                                                                          "specedge.serving.log"}})
    assert not serving_arrows_up({"specedge.serving.scenario": {"specedge.serving.sim.centralized"}})
    assert part("specedge.serving.new_module") == "unplaced" and part("specedge.zoo") is None


# experiments/: one folder per paper key (data/papers.yaml) and the twin's validation against real runs, which two
# papers' drivers share; a paper's driver imports its own folder and SHARED, never another paper's folder, and SHARED
# imports no paper's folder (what two papers share moves down: a scenario file, the serving layer, or SHARED).
SHARED = "serving_validation"


def folder(module: str) -> str | None:
    """The experiments folder of ``module``; None outside one (the package itself, or outside experiments)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["specedge", "experiments"] and len(parts) > 2 else None


def cross_paper_arrows(graph: dict[str, set[str]]) -> list[str]:
    """Every import from one experiments folder into another, but those from a paper's folder into ``SHARED``."""
    bad = []
    for a, targets in graph.items():
        fa = folder(a)
        for b in sorted(targets):
            fb = folder(b)
            if fa is None or fb is None or fa == fb or (fb == SHARED and fa != SHARED):
                continue
            bad.append(f"{a} -> {b} ({fa} imports {fb})")
    return bad


def test_every_experiments_folder_is_a_paper_key_or_shared():
    from specedge import papers

    folders = {p.name for p in (imports.LIB / "experiments").iterdir() if (p / "__init__.py").exists()}
    assert folders - {SHARED} == set(papers.load().papers), \
        f"experiments/ folders that are no paper key of data/papers.yaml: {sorted(folders - {SHARED} - set(papers.load().papers))}"


def test_no_paper_driver_imports_another_papers(graph):
    bad = cross_paper_arrows(graph)
    assert not bad, "imports between papers' folders (move the shared piece down):\n" + "\n".join(bad)


def test_the_paper_checks_can_fail(graph, tmp_path):
    """A driver importing another paper's, or the shared folder importing a paper's, is flagged (eagerly or lazily, by
    relative or absolute import); a paper importing the shared folder is not."""
    name, src = "specedge.experiments.edge_sd_arena.planted", tmp_path / "planted.py"
    src.write_text("from ..li2026 import real\n\ndef f():\n    from specedge.experiments.tran2025.runs import workload\n")
    planted = {name: imports.imports_of(src, set(imports.module_files()) | {name}, name)}
    assert cross_paper_arrows(planted) == [
        f"{name} -> specedge.experiments.li2026.real (edge_sd_arena imports li2026)",
        f"{name} -> specedge.experiments.tran2025.runs (edge_sd_arena imports tran2025)"]
    assert cross_paper_arrows({"specedge.experiments.serving_validation.runs": {"specedge.experiments.tran2025.runs"}})
    assert not cross_paper_arrows({"specedge.experiments.tran2025.figures": {"specedge.experiments.serving_validation.realpair",
                                                                             "specedge.experiments.tran2025.runs",
                                                                             "specedge.serving.workload"}})
    assert cross_paper_arrows({"specedge.experiments.zhu2025.runs": {"specedge.experiments.li2026"}})   # a package's own names
    assert folder("specedge.experiments") is None and folder("specedge.serving.workload") is None
    assert any(folder(b) == SHARED for b in graph["specedge.experiments.li2026.real"])   # the allowed arrow is seen
