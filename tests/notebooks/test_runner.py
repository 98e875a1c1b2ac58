"""The notebook runner (`make figures`): one notebook by name, a one-line error for an unknown one, and
a clean end to a run that went well."""
import json
import subprocess

import pytest

from specedge import host, notebooks, papers, paths

TINY = {"cells": [{"cell_type": "code", "execution_count": None, "id": "p", "metadata": {"tags": ["parameters"]},
                   "outputs": [], "source": ["scale = 'full'"]},
                  {"cell_type": "code", "execution_count": None, "id": "c", "metadata": {}, "outputs": [],
                   "source": ["print(scale)"]}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}


def test_an_unknown_notebook_name_is_one_line_of_usage(capsys):
    with pytest.raises(SystemExit) as e:
        notebooks.main(["--scale", "ci", "nope"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("python -m specedge.notebooks: error: no notebook matches ['nope']")


def test_make_figures_selects_one_notebook():
    r = subprocess.run(["make", "-n", "figures", "NB=zheng2025", "SCALE=ci"], cwd=paths.ROOT, capture_output=True,
                       text=True, timeout=60)
    assert "-m specedge.notebooks --scale ci  zheng2025" in r.stdout, r.stdout


def test_a_finished_notebook_is_shut_down_without_an_interrupt(tmp_path, monkeypatch):
    """jupyter_client interrupts before a shutdown; a SIGINT that lands while the kernel finishes its last
    message prints 'KeyboardInterrupt caught in kernel' under a good run. The runner sends none."""
    from jupyter_client import AsyncKernelManager

    sent = []
    original = AsyncKernelManager._async_interrupt_kernel

    async def spy(self):
        sent.append(self.shutting_down)
        await original(self)

    monkeypatch.setattr(AsyncKernelManager, "_async_interrupt_kernel", spy)
    monkeypatch.setattr(paths, "BUILD", tmp_path / "build")
    nb = tmp_path / "tiny.ipynb"
    nb.write_text(json.dumps(TINY))
    out = notebooks.run(nb, "ci")
    assert json.loads(out.read_text())["cells"][-1]["outputs"][0]["text"] == ["ci\n"]   # the parameter arrived
    assert sent == [], "the kernel was interrupted at its shutdown"


def test_the_plan_starts_the_longest_notebook_first_and_knows_every_notebook(tmp_path):
    every = notebooks.notebooks(None)
    expected, reads = papers.MANIFEST.expected_s, papers.MANIFEST.reads
    assert {nb.stem for nb in every} <= set(expected), "a notebook has no expected time"
    order = notebooks.plan(every)
    assert sorted(order) == every
    stems = [nb.stem for nb in order]
    for reader, sources in reads.items():          # a reader starts after what it reads
        assert all(stems.index(src) < stems.index(reader) for src in sources), (reader, stems)
    free = [expected[s] for s in stems if s not in reads]
    assert free == sorted(free, reverse=True) and free[0] > free[-1]   # the others: longest first
    new = tmp_path / "new_notebook.ipynb"           # unknown: could be long, so it goes first
    assert notebooks.plan([*every[:2], new])[0] == new


def test_kernels_run_side_by_side_get_their_share_of_the_sweep_workers_and_their_own_threads():
    """Thread counts stay the notebooks' own: torch's reductions depend on them (OMP_NUM_THREADS=1 moved
    zheng2025's alpha(K) in the 10th digit), and a parallel run must write what a serial one does."""
    assert notebooks.kernel_env(1) == host.PORTABLE_ENV               # the kernels capped at AVX2
    assert notebooks.kernel_env(2, cores=2) == {**host.PORTABLE_ENV, "SPECEDGE_WORKERS": "1"}
    assert notebooks.kernel_env(2, cores=8)["SPECEDGE_WORKERS"] == "4"
    assert notebooks.kernel_env(3, cores=2)["SPECEDGE_WORKERS"] == "1"


def test_jobs_below_one_is_one_line_of_usage(capsys):
    with pytest.raises(SystemExit) as e:
        notebooks.main(["--scale", "ci", "--jobs", "0", "zheng2025"])
    assert e.value.code == 2 and "--jobs: an integer >= 1, got 0" in capsys.readouterr().err


def _cells(*sources):
    return {**TINY, "cells": [TINY["cells"][0]] + [{**TINY["cells"][1], "id": f"c{i}", "source": [s]}
                                                  for i, s in enumerate(sources)]}


def test_two_notebooks_run_at_once_and_a_third_ones_failure_is_named(tmp_path, capsys):
    """Notebooks a and b each wait until the other has started (they fail after 300 s alone): both
    finish only when they run side by side. c fails; the run ends with its name and a nonzero exit,
    after a and b wrote their outputs (executed copies in build/notebooks/ci/)."""
    tag = tmp_path.name
    names = {k: f"runner_test_{k}_{tag}" for k in "abc"}
    flag = {k: tmp_path / f"{k}.started" for k in "ab"}
    meet = ("import os, pathlib, time\n"
            "pathlib.Path({me!r}).touch()\n"
            "t0 = time.monotonic()\n"
            "while not pathlib.Path({other!r}).exists():\n"
            "    assert time.monotonic() - t0 < 300, 'the other notebook did not run alongside'\n"
            "    time.sleep(0.05)\n"
            "print(scale, os.environ['SPECEDGE_WORKERS'])")
    sources = {"a": meet.format(me=str(flag["a"]), other=str(flag["b"])),
               "b": meet.format(me=str(flag["b"]), other=str(flag["a"])),
               "c": "raise RuntimeError('c broke on purpose')"}
    todo = []
    for k, src in sources.items():
        todo.append(tmp_path / f"{names[k]}.ipynb")
        todo[-1].write_text(json.dumps(_cells(src)))
    outs = {k: paths.BUILD / "notebooks" / "ci" / f"{names[k]}.ipynb" for k in "abc"}
    try:
        with pytest.raises(SystemExit, match=f"failed: {names['c']} "):
            notebooks.execute(todo, "ci", jobs=2)
        for k in "ab":
            text = json.loads(outs[k].read_text())["cells"][-1]["outputs"][0]["text"]
            assert text == ["ci 1\n"], text
    finally:
        for out in outs.values():
            out.unlink(missing_ok=True)
    printed = capsys.readouterr().out
    assert f"{names['c']} FAILED after" in printed and "c broke on purpose" in printed
    assert f"{names['a']} done in" in printed and f"{names['b']} done in" in printed
