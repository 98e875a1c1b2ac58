"""`make figures PROFILE=x` (python -m specedge.notebooks --profile x): runs the notebooks x serves, says which
it skipped and why, and refuses an unknown or invalid profile before anything runs or is written."""
import shutil
import subprocess
import sys

import pytest
import yaml

from specedge import hardware, notebooks, paths

SERVED_BY_ZHU = {"zhu2025_edge_sd"}
NO_PROFILE_PARAMETER = {"li2026_wisp", "model_zoo_card", "edge_sd_arena"}


def test_the_zhu2025_paper_profile_against_every_notebook(capsys):
    every = notebooks.notebooks(None)
    profile, todo = notebooks._profile_plan("zhu2025_paper", every)
    assert profile == "zhu2025_paper" and {nb.stem for nb in todo} == SERVED_BY_ZHU
    printed = capsys.readouterr().out
    skipped = {line.split()[2].rstrip(":") for line in printed.splitlines() if line.startswith("[specedge] skipped")}
    assert skipped == {nb.stem for nb in every} - SERVED_BY_ZHU
    for nb in NO_PROFILE_PARAMETER:
        assert f"skipped {nb}: no `profile` parameter" in printed
    zhu = str(hardware.profile_path("zhu2025_paper"))
    assert f"skipped venkatesha2025_early_exit: {zhu} lacks runtime.jetson_vicuna68m_vicuna7b: missing" in printed
    assert f"skipped zheng2025_tk_slt: {zhu} lacks runtime.relative_cost: missing" in printed


def test_a_profile_serving_none_of_the_chosen_notebooks_fails(capsys):
    with pytest.raises(SystemExit, match="profile 'zhu2025_paper' .* serves none of"):
        notebooks._profile_plan("zhu2025_paper", notebooks.notebooks(["venkatesha2025", "zheng2025"]))


def test_a_relative_path_resolves_against_the_callers_directory(tmp_path, monkeypatch):
    data = yaml.load(hardware.profile_path("zhu2025_paper").read_text(), Loader=hardware._Loader)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "my_gpu.yaml").write_text(yaml.safe_dump({**data, "name": "my_gpu"}))
    monkeypatch.chdir(tmp_path)
    profile, todo = notebooks._profile_plan("mine/my_gpu.yaml", notebooks.notebooks(["zhu2025"]))
    assert profile == str(tmp_path / "mine" / "my_gpu.yaml") and [nb.stem for nb in todo] == ["zhu2025_edge_sd"]


@pytest.mark.parametrize("edit, message", [
    (None, "--profile: no hardware profile '"),
    (lambda d: d["runtime"]["verify"].pop("c2"), "nope.yaml: key 'runtime.verify.c2' missing: expected a "
                                                 "non-negative number (needed by the 'linear_batch' model"),
    (lambda d: d["constants"].update(num_users="many"), "nope.yaml: key 'constants.num_users': expected a "
                                                        "positive integer, got 'many'"),
])
def test_an_unknown_or_invalid_profile_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys, edit, message):
    if edit:
        data = yaml.load(hardware.profile_path("zhu2025_paper").read_text(), Loader=hardware._Loader)
        edit(data)
        (tmp_path / "nope.yaml").write_text(yaml.safe_dump({**data, "name": "nope"}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(notebooks, "run", lambda *a, **k: pytest.fail("a notebook ran"))
    monkeypatch.setattr(paths, "BUILD", tmp_path / "build")
    with pytest.raises(SystemExit) as e:
        notebooks.main(["--scale", "ci", "--profile", "nope.yaml"])
    assert e.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "build").exists()


@pytest.mark.slow          # ~40 s: one notebook at CI scale
def test_a_researchers_profile_by_relative_path_end_to_end_at_ci_scale(tmp_path):
    """`make figures PROFILE=mine/my_gpu.yaml` from the researcher's own directory, at CI scale: the one
    notebook it serves runs, the others are skipped with reasons, outputs go to profile-<its name>/."""
    data = yaml.load(hardware.profile_path("zhu2025_paper").read_text(), Loader=hardware._Loader)
    data["runtime"]["verify"]["c2"] = 2.0e-2          # the researcher's own verifier
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "my_gpu.yaml").write_text(yaml.safe_dump({**data, "name": "my_gpu"}))
    out = paths.BUILD / "ci" / "figures" / "zhu2025" / "profile-my_gpu"
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([sys.executable, "-m", "specedge.notebooks", "--scale", "ci", "--profile", "mine/my_gpu.yaml"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "skipped venkatesha2025_early_exit:" in r.stdout and "zhu2025_edge_sd.ipynb (scale=ci" in r.stdout
    table = (out / "table_ii.csv").read_text()
    assert "0.02" in table and "my_gpu" in table
