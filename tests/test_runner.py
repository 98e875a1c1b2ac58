"""The notebook runner (`make figures`): one notebook by name, a one-line error for an unknown one, and
a clean end to a run that went well."""
import json
import subprocess

import pytest

from specedge import notebooks, paths

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
