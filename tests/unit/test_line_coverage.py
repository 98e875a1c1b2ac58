"""The coverage gate of `make test-fast`: which modules it gates, what fails it, and its committed summary."""
import importlib.util
import re
import sys
import tomllib

import pytest

from specedge import paths

_SPEC = importlib.util.spec_from_file_location("line_coverage", paths.ROOT / "benchmarks" / "line_coverage.py")
lc = sys.modules.setdefault("line_coverage", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(lc)


def _row(pct):
    return dict(statements=100, missed=100 - pct, branches=0, partial=0, lines_pct=float(pct), branches_pct=100.0)


def test_imports_are_read_anywhere_in_a_file_relative_ones_resolved():
    src = ("import os\nfrom specedge import claims, not_a_module\nfrom . import sim\nfrom ..serving.sim.twin import Times\n"
           "def f():\n    from specedge.serving.analysis import round_series\n")
    got = lc.imported(src, "specedge.early_exit")
    assert got == {"specedge", "specedge.claims", "specedge.early_exit", "specedge.early_exit.sim", "specedge.serving.analysis",
                   "specedge.serving.sim.twin", "specedge.serving.analysis.round_series"}


def test_the_gated_set_is_what_notebooks_and_make_figures_reach():
    gate = lc.gated()
    # a notebook imports it directly; sampling only through other modules; the runner through the Makefile
    assert {"specedge.claims", "specedge.sampling", "specedge.notebooks", "specedge.compare"} <= gate
    assert {"specedge.serving", "specedge.early_exit"} <= gate          # parent packages run on import
    # the zoo's training and the measuring steps of `make profiles` produce no row that a notebook reads
    assert not {"specedge.zoo.build", "specedge.zoo.train", "specedge.experiments.zheng2025_measure"} & gate
    assert set(lc.EXEMPT) <= gate and all(lc.module_file(m) for m in gate)


def test_a_module_under_the_floor_fails_and_one_at_it_passes():
    gate = {"specedge.a", "specedge.b"}
    assert lc.problems({"specedge.a": _row(90), "specedge.b": _row(95)}, gate, below={}, exempt={}) == []
    low = lc.problems({"specedge.a": _row(89), "specedge.b": _row(95)}, gate, below={}, exempt={})
    assert low == ["specedge.a: 89.0 % of lines covered, under 90 %"]
    # a gated module that no test imported is not in the measurement: it counts as 0 %
    assert lc.problems({"specedge.b": _row(95)}, gate, below={}, exempt={}) == [
        "specedge.a: 0.0 % of lines covered, under 90 %"]
    assert lc.problems({"specedge.a": _row(0), "specedge.b": _row(95)}, gate, below={}, exempt={"specedge.a": "why"}) == []


def test_a_listed_module_may_neither_fall_under_its_percentage_nor_stay_listed_at_the_floor():
    gate = {"specedge.a"}
    assert lc.problems({"specedge.a": _row(60)}, gate, below={"specedge.a": 60}, exempt={}) == []
    assert lc.problems({"specedge.a": _row(59)}, gate, below={"specedge.a": 60}, exempt={}) == [
        "specedge.a: 59.0 % of lines covered, under its listed 60 %"]
    assert lc.problems({"specedge.a": _row(90)}, gate, below={"specedge.a": 60}, exempt={}) == [
        "specedge.a: 90.0 % of lines covered, at 90 % now: remove it from BELOW"]
    assert lc.problems({}, gate, below={"specedge.gone": 10}, exempt={"specedge.x": "?"}) [:2] == [
        "specedge.gone: listed in BELOW but not a gated module", "specedge.x: listed in EXEMPT but not a gated module"]


def test_the_lists_name_gated_modules_with_percentages_under_the_floor():
    gate = lc.gated()
    assert set(lc.BELOW) <= gate and not set(lc.BELOW) & set(lc.EXEMPT)
    assert all(0 <= v < lc.FLOOR for v in lc.BELOW.values())


def test_the_committed_summary_lists_every_module_and_the_gate_as_the_script_has_it():
    doc = lc.DOC.read_text()
    rows = dict(re.findall(r"^\| `(specedge[\w.]*)` \| (exempt|yes|) \|", doc, re.M))
    modules = {lc.module_name(f.relative_to(paths.ROOT / "lib")) for f in (paths.ROOT / "lib" / "specedge").rglob("*.py")}
    assert set(rows) == modules
    gate = lc.gated()
    assert {m for m, tag in rows.items() if tag} == gate
    assert {m for m, tag in rows.items() if tag == "exempt"} == set(lc.EXEMPT)
    listed = re.findall(r"^\| `(specedge[\w.]*)` \| [\d.]+ \((\d+)\) \|", doc, re.M)
    assert dict((m, int(v)) for m, v in listed) == lc.BELOW
    assert "(docs/test-coverage.md)" in (paths.ROOT / "README.md").read_text()


def test_make_test_fast_runs_the_unit_tests_under_coverage_then_the_gate():
    recipe = re.search(r"^test-fast:.*?\n((?:\t.*\n)+)", (paths.ROOT / "Makefile").read_text(), re.M).group(1)
    assert "-m coverage run -m pytest tests/unit" in recipe
    assert recipe.index("coverage run") < recipe.index("benchmarks/line_coverage.py")
    conf = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["tool"]["coverage"]["run"]
    assert conf["branch"] is True and conf["source_pkgs"] == ["specedge"]
    assert paths.ROOT / conf["data_file"] == lc.DATA


def test_missing_coverage_data_is_an_error_naming_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no coverage data.*make test-fast"):
        lc.measure(tmp_path / ".coverage")
