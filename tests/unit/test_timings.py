"""The README's timings come from recorded runs (``tools/timings.py``), never typed."""
from __future__ import annotations

import importlib.util
import json

import pytest

from specedge import host, notebooks, paths

_SPEC = importlib.util.spec_from_file_location("timings", paths.ROOT / "tools" / "timings.py")   # a script of tools/
timings = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(timings)

HOST = {"cpu": "AMD EPYC", "isa": "AVX512-BF16", "cores": 2, "memory_gib": 24, "gpu": False}


def _junit(path, body):
    path.write_text(f'<?xml version="1.0" encoding="utf-8"?>{body}')
    return path


def test_passed_counts_only_passing_tests(tmp_path):
    one = _junit(tmp_path / "a.xml", '<testsuites><testsuite name="pytest" tests="960" failures="0" errors="0" '
                                     'skipped="0"/></testsuites>')
    assert timings.passed(one) == "960 passed"
    bad = _junit(tmp_path / "b.xml", '<testsuite tests="10" failures="2" errors="1" skipped="3"/>')
    assert timings.passed(bad) == "4 passed, 2 failures, 1 errors, 3 skipped"
    two = _junit(tmp_path / "c.xml", '<testsuites><testsuite tests="5"/><testsuite tests="7" skipped="1"/></testsuites>')
    assert timings.passed(two) == "11 passed, 1 skipped"


@pytest.mark.parametrize("body", ["<testsuites/>", "not xml"])
def test_passed_rejects_a_report_without_suites(tmp_path, body):
    with pytest.raises(ValueError, match="r.xml"):
        timings.passed(_junit(tmp_path / "r.xml", body))


def test_stop_measures_from_start_and_records_the_host(tmp_path, monkeypatch):
    monkeypatch.setattr(timings, "machine", lambda: dict(HOST))
    begun = timings.start("test", tmp_path)
    t0 = float(begun.read_text())
    rec = timings.stop("test", "960 passed", tmp_path, now=t0 + 492.04)
    assert rec == {"command": "test", "seconds": 492.0, "ends_with": "960 passed", **HOST}
    assert json.loads((tmp_path / "test.json").read_text()) == rec
    assert not begun.exists()
    with pytest.raises(FileNotFoundError, match="no start recorded for 'test'"):
        timings.stop("test", "960 passed", tmp_path)


def test_an_unknown_command_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="expected one of"):
        timings.start("figure", tmp_path)
    assert not list(tmp_path.iterdir())


def _records(**over):
    recs = {n: {"command": n, "seconds": s, "ends_with": e, **HOST}
            for n, s, e in (("figures", 930.0, "figures: done"), ("test", 492.0, "960 passed"),
                            ("test-fast", 90.0, "877 passed"))}
    for name, fields in over.items():
        recs[name.replace("_", "-")].update(fields)
    return recs


def test_block_names_the_machine_and_every_command():
    text = timings.block(_records())
    assert text.splitlines()[0] == "On a 2-core AMD EPYC (AVX512-BF16), 24 GiB, no GPU, with `.venv` already built:"
    assert "| `make figures` | 15.5 min (notebooks 2 at a time) | `figures: done` |" in text
    assert "| `make test` | 8.2 min | `960 passed` |" in text
    assert "| `make test-fast` | 1.5 min (unit tests only) | `877 passed` |" in text


def test_block_says_whether_the_figures_began_with_the_sweep_cache_filled():
    assert "| `make figures` | 15.5 min (notebooks 2 at a time, `build/sweeps/` already filled) |" in \
        timings.block(_records(), cold_cache=False)
    assert "| `make figures` | 15.5 min (notebooks 2 at a time, `build/sweeps/` empty) |" in \
        timings.block(_records(), cold_cache=True)


def test_block_names_the_venv_build_when_it_was_recorded():
    recs = {**_records(), "venv": {"command": "venv", "seconds": 174.0, "ends_with": ".venv ready", **HOST}}
    assert timings.block(recs).splitlines()[0].endswith("with `.venv` already built (building it took 2.9 min):")


def test_block_refuses_missing_commands_and_mixed_machines():
    recs = _records()
    del recs["test"]
    with pytest.raises(ValueError, match="no recorded run of make test$"):
        timings.block(recs)
    with pytest.raises(ValueError, match="different machines"):
        timings.block(_records(test_fast={"cores": 16}))


def _readme(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"# x\n\n{timings.BEGIN}\nold\n{timings.END}\n\nafter\n")
    return path


def test_update_readme_rewrites_only_the_block(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    for name, rec in _records().items():
        (folder / f"{name}.json").write_text(json.dumps(rec))
    readme = _readme(tmp_path)
    assert timings.update_readme(readme, folder)
    text = readme.read_text()
    assert text.startswith(f"# x\n\n{timings.BEGIN}\nOn a 2-core")
    assert text.endswith(f"| `877 passed` |\n{timings.END}\n\nafter\n")
    assert "old" not in text


def test_update_readme_keeps_the_block_and_says_why_when_a_run_is_missing(tmp_path, capsys):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "test.json").write_text(json.dumps(_records()["test"]))
    readme = _readme(tmp_path)
    before = readme.read_text()
    assert not timings.update_readme(readme, folder)
    assert readme.read_text() == before
    assert "no recorded run of make figures, make test-fast" in capsys.readouterr().out


def test_update_readme_refuses_a_readme_without_one_block(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    for name, rec in _records().items():
        (folder / f"{name}.json").write_text(json.dumps(rec))
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    with pytest.raises(ValueError, match="expected one"):
        timings.update_readme(readme, folder)


def test_notebook_block_lists_the_longest_first(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "machine", lambda: dict(HOST))
    rec = notebooks.record_notebooks({"zheng2025_tk_slt": 223.4, "li2026_wisp_serving": 407.0, "tran2025_goodspeed": 0.6},
                                   jobs=2, wall=930.0, cold=True, folder=tmp_path)
    assert json.loads((tmp_path / "notebooks.json").read_text()) == rec
    text = timings.notebook_block(rec)
    assert max(map(len, text.splitlines())) <= 115
    text = " ".join(text.splitlines())
    assert text.startswith("Per notebook inside one `make figures` (2 notebooks at a time, 1 sweep worker each, "
                           "empty `build/sweeps/`, 2-core AMD EPYC (AVX512-BF16), capped at AVX2): ")
    assert "li2026_wisp_serving 407 s, zheng2025_tk_slt 223 s, tran2025_goodspeed 1 s — 631 notebook-seconds, " \
           "15.5 min of wall time." in text
    warm = " ".join(timings.notebook_block({**rec, "jobs": 1, "cold_sweep_cache": False}).splitlines())
    assert "(1 notebooks at a time, 2 sweep workers each, `build/sweeps/` already filled," in warm


def test_update_benchmarks_rewrites_its_block_or_says_why_not(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(host, "machine", lambda: dict(HOST))
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"## Notebooks\n\n{timings.NB_BEGIN}\nold\n{timings.NB_END}\n")
    assert not timings.update_benchmarks(doc, tmp_path)
    assert "old" in doc.read_text() and "no complete full-scale run" in capsys.readouterr().out
    notebooks.record_notebooks({"a": 10.0}, jobs=2, wall=12.0, cold=True, folder=tmp_path)
    assert timings.update_benchmarks(doc, tmp_path)
    assert " ".join(doc.read_text().splitlines()).endswith("a 10 s — 10 notebook-seconds, 0.2 min of wall time. "
                                                          + timings.NB_END)


@pytest.mark.parametrize("argv, recorded", [([], True), (["zheng2025"], False), (["--scale", "ci"], False),
                                            (["--seed", "3"], False)])
def test_the_runner_records_only_a_complete_default_run(tmp_path, monkeypatch, argv, recorded):
    monkeypatch.setattr(notebooks, "execute", lambda todo, *a, **k: {nb.stem: 1.0 for nb in todo})
    monkeypatch.setattr(notebooks, "record_notebooks", lambda *a, **k: (tmp_path / "notebooks.json").write_text("{}"))
    assert notebooks.main(argv) == 0
    assert (tmp_path / "notebooks.json").exists() is recorded
