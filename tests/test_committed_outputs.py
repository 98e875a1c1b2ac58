"""Committed outputs are what the current code writes: every comparison.csv under figures/ (also a
profile's own folder, which the README's runner example rewrites) has today's columns, and a profile's
folder holds the files its notebook writes on the default profile (issue 21: figures/zhu2025/
profile-cpu_local was older — stale columns, a missing table — so the README example dirtied git)."""
import pytest

from specedge import compare, paths

# written before the current code (issue 19's null/null_why/statements columns landed after their last full
# run; zhu2025's profile folder predates issue 19's new zhu2025 tables), waiting for a full-scale rerun of their
# notebooks; drop each from here with the commit of its rerun (the loader fills the new columns in as empty)
# li2026_serving: issue 21's nanosecond grid (serving.timegrid) changes WISP's twin runs (Table 1's WISP rows,
# Table 3's WISP goodput, Fig 7/8, WISP's Table 2 capacities); its full-scale rerun did not get the heavy lock
# in the session that made the change
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
