"""Committed outputs are what the current code writes: every comparison.csv under figures/ (also a
profile's own folder, which `make figures PROFILE=<name>` rewrites) has today's columns, and a profile's
folder holds the files its notebook writes on the default profile (an older
profile-cpu_local folder — stale columns, a missing table — would make the runner example dirty git)."""
import pytest

from specedge import compare, paths

# figure folders written before the current code, waiting for a full-scale rerun of their notebooks; drop
# each from here with the commit of its rerun (the loader fills new columns in as empty)
PENDING_RERUN: set[str] = set()


def _pending(path):
    stale = any(str(path.relative_to(paths.FIGURES)).startswith(p) for p in PENDING_RERUN)
    return pytest.param(path, marks=pytest.mark.xfail(reason="committed before the current code: rerun pending",
                                                      strict=False)) if stale else path


COMPARISONS = [_pending(p) for p in sorted(paths.FIGURES.rglob("comparison.csv"))]
PROFILE_FOLDERS = [_pending(p) for p in sorted(paths.FIGURES.glob("*/profile-*"))]


def test_there_are_committed_comparisons_and_profile_folders():
    assert len(COMPARISONS) >= 6 and PROFILE_FOLDERS


@pytest.mark.parametrize("csv", COMPARISONS, ids=lambda p: str(p.relative_to(paths.FIGURES)))
def test_every_committed_comparison_has_the_current_columns(csv):
    assert csv.read_text().splitlines()[0].split(",") == compare.COLUMNS


CHECKS = sorted(paths.FIGURES.rglob("checks.csv"))


@pytest.mark.parametrize("csv", CHECKS, ids=lambda p: str(p.relative_to(paths.FIGURES)))
def test_every_committed_checks_table_has_the_current_columns(csv):
    assert csv.read_text().splitlines()[0].split(",") == compare.CHECK_COLUMNS


@pytest.mark.parametrize("folder", PROFILE_FOLDERS, ids=lambda p: str(p.relative_to(paths.FIGURES)))
def test_a_profile_folder_holds_the_files_its_notebook_writes(folder):
    default = {p.name for p in folder.parent.iterdir() if p.is_file()}
    own = {p.name for p in folder.iterdir() if p.is_file()}
    assert own == default, f"only on the default profile: {sorted(default - own)}; only here: {sorted(own - default)}"
