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
