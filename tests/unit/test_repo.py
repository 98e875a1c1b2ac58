"""Repository invariants: dependencies in step, notebook hygiene, kernel, README results table."""
import json
import subprocess
import sys
import tomllib

import pytest
import yaml

from specedge import compare, paths

NOTEBOOKS = sorted(paths.NOTEBOOKS.glob("*.ipynb"))


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    env = yaml.safe_load((paths.ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert sorted(pip) == sorted(wanted)
    assert pip[0] == "torch==2.13.0", "torch must come first (pinned CPU build)"


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ is empty"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_hygiene(nb):
    d = json.loads(nb.read_text())
    assert d["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in d["cells"] if c["cell_type"] == "code"]
    assert not [c for c in code if c.get("outputs") or c.get("execution_count")], "outputs committed"
    params = [c for c in d["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1, f"{len(params)} cells tagged 'parameters'"
    src = "".join(params[0]["source"])
    assert 'os.environ.get("SPECEDGE_SCALE", "full")' in src and "seed =" in src


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_narrative_and_calls(nb):
    """Notebooks keep narrative, parameters, calls and plots; computation lives in lib/ (at most
    ~150 code lines, blank lines and comments not counted)."""
    cells = json.loads(nb.read_text())["cells"]
    lines = [ln for c in cells if c["cell_type"] == "code" for ln in "".join(c["source"]).splitlines()
             if ln.strip() and not ln.strip().startswith("#")]
    assert len(lines) <= 150, f"{nb.name}: {len(lines)} code lines; move computation into lib/specedge/experiments/"


def test_kernel_python3_is_this_interpreter():
    """papermill and nbmake run notebooks on the kernel named python3: it must be this venv's Python."""
    from jupyter_client.kernelspec import KernelSpecManager
    argv = KernelSpecManager().get_kernel_spec("python3").argv
    prefix = subprocess.run([argv[0], "-c", "import sys; print(sys.prefix)"], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert prefix == sys.prefix


def test_readme_results_table_is_current():
    assert compare.readme_is_fresh(), "README results table is stale: run `make figures` (or `make readme`)"


def test_real_pair_tables_are_generated_from_the_committed_files():
    from specedge.experiments.model_zoo import realpair_readme
    assert realpair_readme.DOC == paths.ROOT / "docs" / "real-pair.md"
    assert not realpair_readme.update_readme(check=True), \
        "docs/real-pair.md tables are stale: run `make readme` (python -m specedge.experiments.model_zoo.realpair_readme)"


def test_readme_speed_sentence_is_generated_from_the_bench_rows():
    from specedge.experiments.model_zoo import realpair_readme
    assert not realpair_readme.update_speed(check=True), \
        "README's speed sentence is stale: run `make readme` (python -m specedge.experiments.model_zoo.realpair_readme)"


def test_ci_runs_the_readme_test_command():
    readme = (paths.ROOT / "README.md").read_text()
    assert "make test" in readme and "make test" in (paths.ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_papermill_sees_every_parameter(nb):
    """Each assignment of the `parameters` cell is visible to papermill (a line it cannot parse would
    make `-p name value` silently do nothing)."""
    import ast

    import papermill as pm

    cell = next(c for c in json.loads(nb.read_text())["cells"] if "parameters" in c["metadata"].get("tags", []))
    names = {t.id for node in ast.parse("".join(cell["source"])).body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    assert names and names <= set(pm.inspect_notebook(str(nb))), f"papermill misses {names - set(pm.inspect_notebook(str(nb)))}"


def test_runner_names_pick_exact_notebooks_before_prefixes():
    from specedge import notebooks as runner

    assert [p.stem for p in runner.notebooks(["li2026_wisp"])] == ["li2026_wisp"]
    assert [p.stem for p in runner.notebooks(["li2026_wisp.ipynb"])] == ["li2026_wisp"]
    assert [p.stem for p in runner.notebooks(["li2026"])] == ["li2026_wisp", "li2026_wisp_serving"]
    with pytest.raises(ValueError, match="no notebook matches"):
        runner.notebooks(["nope"])


def test_no_two_test_files_share_a_name():
    """The test folders are not packages (rootdir-relative imports), so pytest imports each test file by its base
    name: two files of one name in tests/unit and tests/processes stop `make test` at collection."""
    from collections import Counter
    names = Counter(p.name for p in (paths.ROOT / "tests").rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []
