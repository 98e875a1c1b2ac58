"""The mutation list names lines that exist: a stale entry is an error, never a silent skip."""
import importlib.util
import sys

import pytest

from specedge import paths

_SPEC = importlib.util.spec_from_file_location("mutation_check", paths.ROOT / "benchmarks" / "mutation_check.py")
mc = sys.modules.setdefault("mutation_check", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(mc)


def test_every_mutation_names_a_line_that_occurs_once():
    assert mc.stale(mc.MUTATIONS) == []


def test_every_mutation_names_test_files_that_exist():
    assert [t for m in mc.MUTATIONS for t in m.tests if not (paths.ROOT / t).is_file()] == []


def test_a_stale_entry_stops_the_check(tmp_path):
    gone = mc.Mutation("a line that is gone", "sampling.py", "this line is not in sampling.py", "x", ())
    assert mc.stale([gone]) == ["a line that is gone (sampling.py: 0x)"]
    missing = mc.Mutation("a file that is gone", "no_such_module.py", "x", "y", ())
    assert mc.stale([missing]) == ["a file that is gone (no_such_module.py: no file)"]
    mc.MUTATIONS.append(gone)
    try:
        with pytest.raises(SystemExit, match="stale mutation entries.*a line that is gone"):
            mc.main(["--only", "gone", "--no-baseline"])
    finally:
        mc.MUTATIONS.remove(gone)


def test_the_list_grows_with_the_code_and_names_distinct_bugs():
    assert len(mc.MUTATIONS) >= 48
    assert len({m.name for m in mc.MUTATIONS}) == len(mc.MUTATIONS)
    assert len({(m.file, m.old, m.new) for m in mc.MUTATIONS}) == len(mc.MUTATIONS)
    assert all(m.old != m.new and m.tests for m in mc.MUTATIONS)


def test_test_selects_the_mutations_a_test_file_catches(monkeypatch, tmp_path):
    ran = []
    monkeypatch.setattr(mc, "run_one", lambda m, python, timeout: (ran.append(m.name), ("caught", 0.0))[1])
    monkeypatch.setattr(mc.subprocess, "run", lambda *a, **k: mc.subprocess.CompletedProcess(a, 0, stdout="", stderr=""))
    out = tmp_path / "mutation_check.csv"
    assert mc.main(["--test", "tests/unit/test_glue_edges.py", "--no-baseline", "--out", str(out)]) == 0
    assert ran and ran == [m.name for m in mc.MUTATIONS if "tests/unit/test_glue_edges.py" in m.tests]
    with pytest.raises(SystemExit, match="caught by"):
        mc.main(["--test", "tests/unit/no_such_test.py", "--no-baseline"])
