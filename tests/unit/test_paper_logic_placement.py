"""A paper's logic lives with the paper's experiments: no system module imports the comparison machinery.

The rule deciding a comparison row's status (a verdict) and a paper's own figures belong to ``specedge.experiments``;
the systems (``serving``, ``predictor``, ``early_exit``), the solvers, the models, the hardware and the rest of the
core never import ``claims`` or ``compare``, nor ``experiments``, so a second user of a system package inherits no
paper's verdicts. The exceptions are the comparison machinery itself (``claims``, ``compare``, ``coverage``,
``papers``). Every import counts, also one inside a function (``specedge.imports``).
"""
from __future__ import annotations

from specedge import imports

PAPER_LOGIC = ("specedge.claims", "specedge.compare")                        # what only paper logic imports
MACHINERY = {"specedge.claims", "specedge.compare", "specedge.coverage", "specedge.papers"}
EXPERIMENTS = "specedge.experiments"


def _experiments(module: str) -> bool:
    return module == EXPERIMENTS or module.startswith(EXPERIMENTS + ".")


def misplaced(graph: dict[str, set[str]]) -> list[str]:
    """The arrows from a module outside ``experiments`` and the comparison machinery to ``claims``, ``compare`` or
    ``experiments``, as ``"importer -> imported"``."""
    return [f"{a} -> {b}" for a, targets in sorted(graph.items()) for b in sorted(targets)
            if not (_experiments(a) or a in MACHINERY) and (b in PAPER_LOGIC or _experiments(b))]


def test_no_system_module_imports_claims_compare_or_experiments():
    found = misplaced(imports.graph())
    assert not found, ("paper logic outside specedge.experiments (move the verdict or figure up into the paper's "
                       "experiments):\n" + "\n".join(found))


def test_the_check_sees_each_kind_of_misplaced_arrow_and_allows_the_rest():
    graph = {"specedge.serving.slo": {"specedge.claims", "specedge.paths"},
             "specedge.predictor.waste": {"specedge.compare"},
             "specedge.solvers.zheng2025": {"specedge.experiments.zheng2025_figures"},
             "specedge.early_exit.sim": {"specedge.experiments"},
             "specedge.compare": {"specedge.claims"},                                 # the machinery itself
             "specedge.coverage": {"specedge.compare"},
             "specedge.experiments.tran2025_figures": {"specedge.claims", "specedge.compare"},
             "specedge.experimental": {"specedge.paths"},                             # a name that only starts alike
             "specedge.claims_extra": {"specedge.sampling"}}
    assert misplaced(graph) == ["specedge.early_exit.sim -> specedge.experiments",
                                "specedge.predictor.waste -> specedge.compare",
                                "specedge.serving.slo -> specedge.claims",
                                "specedge.solvers.zheng2025 -> specedge.experiments.zheng2025_figures"]
    assert misplaced({}) == []
    assert misplaced({"specedge.experimental": {"specedge.experiments"}}) == ["specedge.experimental -> specedge.experiments"]


def test_a_lazy_import_inside_a_function_counts(tmp_path):
    """The graph reader sees an import inside a function body, where a verdict's helper would hide it."""
    pkg = tmp_path / "specedge"
    (pkg / "serving").mkdir(parents=True)
    for f in ("__init__.py", "claims.py", "serving/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "serving" / "rows.py").write_text("def judge():\n    from .. import claims\n    return claims\n")
    assert misplaced(imports.graph(pkg)) == ["specedge.serving.rows -> specedge.claims"]
