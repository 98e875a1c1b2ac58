"""A researcher's copy of a paper profile (`make figures PROFILE=mine/x.yaml`) runs every notebook the
original serves: the profile is loaded once, by the runner's path, and handed on as an object — never
reloaded by its name, which names no file in data/profiles/ (reloading it by name for the output folder
would fail with FileNotFoundError).

Cheap on purpose: the plan for every copy, then each served notebook's cells up to the one that makes
its output folder (parameters, checks, the profile's first uses), run in this process; one notebook end
to end on a copy is ``test_notebooks_runner_profile``'s job."""
from __future__ import annotations

import json

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


def first_cells(nb_path, **parameters) -> str:
    """The notebook's code up to its first cell that asks for the output folder, with ``parameters``
    set after its tagged parameters cell, as papermill injects them."""
    cells = [c for c in json.loads(nb_path.read_text())["cells"] if c["cell_type"] == "code"]
    cut = next(i for i, c in enumerate(cells) if "output_dir(" in "".join(c["source"]))
    code = []
    for c in cells[:cut + 1]:
        code.append("".join(c["source"]))
        if "parameters" in c["metadata"].get("tags", []):
            code.append("\n".join(f"{k} = {v!r}" for k, v in parameters.items()))
    return "\n\n".join(code)


def test_every_paper_profile_serves_a_notebook():
    assert len(PAPER_PROFILES) >= 5 and all(served(p) for p in PAPER_PROFILES)
    assert set().union(*map(served, PAPER_PROFILES)) == set(OUTPUT_KEY)


@pytest.mark.parametrize("paper", PAPER_PROFILES)
def test_a_copy_of_a_paper_profile_runs_the_notebooks_it_serves(paper, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECEDGE_SCALE", "ci")
    copy = copy_profile(paper, tmp_path / "mine")
    profile, todo = notebooks._profile_plan(copy, notebooks.notebooks(None))
    assert profile == copy and {nb.stem for nb in todo} == served(paper)
    for nb in todo:        # in this process: a kernel per notebook would cost more than the cells
        exec(compile(first_cells(nb, scale="ci", profile=profile), str(nb), "exec"), {"display": print})
        assert (paths.BUILD / "ci" / "figures" / OUTPUT_KEY[nb.stem] / f"profile-mine_{paper}").is_dir(), nb.stem


def test_sweep_points_carry_the_profiles_content_not_its_name(tmp_path):
    """The loaded profile's numbers travel into the workers: with its file gone, the points still run
    on it (a worker that reloaded it by name or path would fail or read other numbers)."""
    from pathlib import Path

    from specedge.experiments.li2026 import serving_runs as li2026
    from specedge.experiments.tran2025 import runs as tran2025

    data = yaml.load(hardware.profile_path("li2026_paper").read_text(), Loader=hardware._Loader)
    data["runtime"]["verify"]["a"] *= 3
    path = tmp_path / "mine_li2026.yaml"
    path.write_text(yaml.safe_dump({**data, "name": "mine_li2026"}))
    prof = hardware.load_profile(path)
    setting = li2026.SCENARIO.setting(profile=prof)
    path.unlink()
    est = li2026.estimator(li2026.SCENARIO.point("WISP", 4, setting=setting))
    assert est.a == pytest.approx(prof.coefficients("verify")["a"]) and setting.profile == "mine_li2026"
    assert est.a == pytest.approx(3 * li2026.estimator(li2026.SCENARIO.point("WISP", 4)).a)

    tprof = hardware.load_profile(copy_profile("tran2025_paper", tmp_path / "t"))
    Path(tprof.path).unlink()
    cfg = tran2025.table1()[0]
    mine, paper = tran2025.paper_times(cfg, tprof), tran2025.paper_times(cfg)
    assert mine.up(0, 4) == paper.up(0, 4) and mine.draft[0](4) == paper.draft[0](4)
