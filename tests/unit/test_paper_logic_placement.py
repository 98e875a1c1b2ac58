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
             "specedge.solvers.zheng2025": {"specedge.experiments.zheng2025.figures"},
             "specedge.early_exit.sim": {"specedge.experiments"},
             "specedge.compare": {"specedge.claims"},                                 # the machinery itself
             "specedge.coverage": {"specedge.compare"},
             "specedge.experiments.tran2025.figures": {"specedge.claims", "specedge.compare"},
             "specedge.experimental": {"specedge.paths"},                             # a name that only starts alike
             "specedge.claims_extra": {"specedge.sampling"}}
    assert misplaced(graph) == ["specedge.early_exit.sim -> specedge.experiments",
                                "specedge.predictor.waste -> specedge.compare",
                                "specedge.serving.slo -> specedge.claims",
                                "specedge.solvers.zheng2025 -> specedge.experiments.zheng2025.figures"]
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


# --------------------------------------------------------------------------- solvers: pure functions, no I/O
SOLVERS = imports.LIB / "solvers"
NO_IO_MODULES = ("torch", "transformers", "yaml", "json", "pickle", "specedge.paths", "specedge.hardware", "specedge.zoo",
                 "specedge.decoding", "specedge.llamacpp", "specedge.plotting", "specedge.serving", "specedge.predictor",
                 "specedge.early_exit", "specedge.experiments")
NO_IO_CALLS = ("open", "read_csv", "read_text", "read_bytes", "write_text", "to_csv", "load_profile", "from_pretrained")


def io_in(source: str, name: str) -> list[str]:
    """What in the solver module ``name`` (its ``source``) reads or writes files or runs models: an import of one of
    ``NO_IO_MODULES`` (relative ones resolved against ``specedge.solvers``) or a call named in ``NO_IO_CALLS``."""
    import ast
    found = []
    for node in ast.walk(ast.parse(source)):
        mods = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "specedge" if node.level == 2 else "specedge.solvers" if node.level == 1 else ""
            mods = [".".join(p for p in (base, node.module) if p)] if node.module else [f"{base}.{a.name}" for a in node.names]
        found += [f"{name} imports {m}" for m in mods if any(m == f or m.startswith(f + ".") for f in NO_IO_MODULES)]
        if isinstance(node, ast.Call):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if called in NO_IO_CALLS:
                found.append(f"{name} calls {called}() at line {node.lineno}")
    return found


def test_solvers_are_pure_functions_without_io():
    found = [x for p in sorted(SOLVERS.glob("*.py")) for x in io_in(p.read_text(), f"solvers.{p.stem}")]
    assert not found, "a solver reads files or runs models (move it into the paper's experiments):\n" + "\n".join(found)


def test_the_io_check_sees_imports_relative_and_lazy_and_calls():
    src = ("import numpy as np\nfrom .. import sampling\nfrom ..hardware import load_profile\n"
           "def f(p):\n    import torch\n    from .. import zoo\n    return open(p).read(), np.zeros(1)\n"
           "def g(prof):\n    return prof.coefficients('x'), pd.read_csv('a.csv')\n")
    assert sorted(io_in(src, "solvers.x")) == ["solvers.x calls open() at line 7", "solvers.x calls read_csv() at line 9",
                                               "solvers.x imports specedge.hardware", "solvers.x imports specedge.zoo",
                                               "solvers.x imports torch"]
    assert io_in("from . import zhu2025 as z\nfrom ..sampling import probs\nfrom ..profiling import decoder_flops\n",
                 "solvers.y") == []
