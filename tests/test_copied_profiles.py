"""A researcher's copy of a paper profile (`make figures PROFILE=mine/x.yaml`) runs every notebook the
original serves: the profile is loaded once, by the runner's path, and handed on as an object — never
reloaded by its name, which names no file in data/profiles/ (issue 21: the notebooks' output folder
reloaded it by name and failed with FileNotFoundError).

Cheap on purpose: the plan for every copy, then each served notebook's cells up to the one that makes
its output folder (parameters, checks, the profile's first uses); one notebook end to end on a copy is
``test_notebooks_runner_profile``'s job."""
from __future__ import annotations

import json

import papermill as pm
import pytest
import yaml

from specedge import hardware, needs, notebooks, paths

PAPER_PROFILES = [p for p in hardware.list_profiles() if p.endswith("_paper")]
OUTPUT_KEY = {"zheng2025_tk_slt": "zheng2025", "zhu2025_edge_sd": "zhu2025", "venkatesha2025_early_exit":
              "venkatesha2025", "tran2025_goodspeed": "tran2025", "li2026_wisp_serving": "li2026_serving"}


def copy_profile(paper: str, folder) -> str:
    """The paper profile under a new name in ``folder`` (a copy must change its ``name:``)."""
    data = yaml.load(hardware.profile_path(paper).read_text(), Loader=hardware._Loader)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"mine_{paper}.yaml"
    path.write_text(yaml.safe_dump({**data, "name": f"mine_{paper}"}, sort_keys=False))
    return str(path)


def served(profile) -> set[str]:
    return {nb for nb, gaps in needs.usable(profile).items() if not gaps}


def first_cells(nb_path, folder) -> str:
    """The notebook cut after its first code cell that asks for the output folder."""
    nb = json.loads(nb_path.read_text())
    cut = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and "output_dir(" in "".join(c["source"]))
    nb["cells"] = nb["cells"][:cut + 1]
    out = folder / nb_path.name
    out.write_text(json.dumps(nb))
    return str(out)


def test_every_paper_profile_serves_a_notebook():
    assert len(PAPER_PROFILES) >= 5 and all(served(p) for p in PAPER_PROFILES)
    assert set().union(*map(served, PAPER_PROFILES)) == set(OUTPUT_KEY)


@pytest.mark.parametrize("paper", PAPER_PROFILES)
def test_a_copy_of_a_paper_profile_runs_the_notebooks_it_serves(paper, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECEDGE_SCALE", "ci")
    copy = copy_profile(paper, tmp_path / "mine")
    profile, todo = notebooks._profile_plan(copy, notebooks.notebooks(None))
    assert profile == copy and {nb.stem for nb in todo} == served(paper)
    for nb in todo:
        pm.execute_notebook(first_cells(nb, tmp_path), str(tmp_path / f"out_{nb.name}"), kernel_name="python3",
                            parameters={"scale": "ci", "profile": profile}, cwd=str(paths.NOTEBOOKS),
                            progress_bar=False)
        assert (paths.BUILD / "ci" / "figures" / OUTPUT_KEY[nb.stem] / f"profile-mine_{paper}").is_dir(), nb.stem
