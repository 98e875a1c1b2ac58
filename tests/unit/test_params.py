"""Notebook parameters are checked at the door (specedge.params), and every notebook does it in the
cell right after its parameters: a typo or a wrongly typed value fails before any work."""
import json
import os

import pytest

from specedge import params, paths

SPEC = dict(scale=["ci", "full"], seed=int, epsilon=params.between(0, 1), seeds=params.at_least(1),
            backend=["loky", "dask"], gammas=params.list_of(int), rate=float)
GOOD = dict(scale="ci", seed=0, epsilon=0.05, seeds=3, backend="loky", gammas=[1, 2], rate=50)


def test_valid_parameters_pass_and_modules_functions_ipython_names_are_not_parameters():
    params.check(dict(GOOD, os=os, In=[], Out={}, get_ipython=print, _=None, helper=len), **SPEC)


@pytest.mark.parametrize("bad, words", [
    (dict(alfa=0.5), "unknown parameter(s) ['alfa']"),
    (dict(seed="abc"), "seed: expected int, got 'abc'"),
    (dict(seed=True), "seed: expected int, got True"),
    (dict(epsilon=1.5), "epsilon: expected a number in (0, 1), got 1.5"),
    (dict(seeds=0), "seeds: expected an int >= 1, got 0"),
    (dict(seeds=2.5), "seeds: expected an int >= 1"),
    (dict(backend="spark"), "backend: expected one of ['loky', 'dask'], got 'spark'"),
    (dict(gammas=[1, "2"]), "gammas: expected a non-empty list of int"),
    (dict(gammas=[]), "gammas: expected a non-empty list of int"),
    (dict(rate="many"), "rate: expected float, got 'many'"),
    (dict(scale="huge"), "scale: expected one of ['ci', 'full'], got 'huge'"),
])
def test_bad_parameters_are_refused_naming_them(bad, words):
    with pytest.raises(ValueError) as err:
        params.check(dict(GOOD, **bad), **SPEC)
    assert words in str(err.value)


def test_a_missing_parameter_is_named():
    ns = dict(GOOD)
    del ns["seed"]
    with pytest.raises(ValueError, match="seed: missing"):
        params.check(ns, **SPEC)


def test_every_notebook_checks_its_parameters_in_the_next_cell():
    for nb_path in sorted(paths.NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(nb_path.read_text())["cells"]
        i = next(k for k, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
        following = "".join(cells[i + 1]["source"])
        assert "params.check(globals()" in following, f"{nb_path.name}: cell {i + 1} must call params.check"


def test_papermill_refuses_an_unknown_parameter_before_any_work(tmp_path):
    import papermill as pm

    out = tmp_path / "out.ipynb"
    with pytest.raises(pm.PapermillExecutionError, match="alfa"):
        pm.execute_notebook(str(paths.NOTEBOOKS / "zheng2025_tk_slt.ipynb"), str(out), kernel_name="python3",
                            parameters=dict(scale="ci", alfa=0.5), progress_bar=False)
    executed = json.loads(out.read_text())["cells"]
    ran = [c for c in executed if c["cell_type"] == "code" and c.get("execution_count")]
    assert len(ran) <= 3            # parameters, papermill's injected cell, the check: nothing else ran
