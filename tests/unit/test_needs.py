"""Profiles say what they provide, notebooks what they need (specedge.needs): a profile lacking a key is
refused before any work with its file and key named, `make figures PROFILE=x` runs only the notebooks
x can serve, and output folders are named by the profile's name."""

import pytest
import yaml

from specedge import hardware, needs, notebooks, paths

PAPER_PROFILE = {"zheng2025_tk_slt": "zheng2025_paper", "zhu2025_edge_sd": "zhu2025_paper",
                 "venkatesha2025_early_exit": "venkatesha2025_paper", "tran2025_goodspeed": "tran2025_paper",
                 "li2026_wisp_serving": "li2026_paper"}


def _edited(tmp_path, name: str, edit) -> str:
    data = yaml.safe_load(hardware.profile_path(name).read_text())
    edit(data)
    data["name"] = "edited"
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_every_committed_profile_loads_and_each_paper_profile_serves_its_notebook():
    for name in hardware.list_profiles():
        hardware.load_profile(name)
    for nb, prof in PAPER_PROFILE.items():
        assert needs.missing(nb, prof) == [], nb
    assert set(needs.NEEDS) == set(PAPER_PROFILE)


def test_a_missing_coefficient_is_named_with_its_file(tmp_path):
    path = _edited(tmp_path, "zhu2025_paper", lambda d: d["runtime"]["verify"].pop("c2"))
    with pytest.raises(ValueError, match=r"edited.yaml: key 'runtime.verify.c2' missing"):   # refused on loading
        needs.check("zhu2025_edge_sd", path)
    path = _edited(tmp_path, "zhu2025_paper", lambda d: d["runtime"].pop("verify"))
    with pytest.raises(ValueError, match=r"edited.yaml: profile 'edited' cannot serve zhu2025_edge_sd: runtime.verify: missing"):
        needs.check("zhu2025_edge_sd", path)


def test_a_mistyped_constant_and_a_wrong_sign_are_named(tmp_path):
    path = _edited(tmp_path, "zhu2025_paper", lambda d: d["constants"].update(num_users="many"))
    with pytest.raises(ValueError, match="key 'constants.num_users': expected a positive integer, got 'many'"):
        needs.missing("zhu2025_edge_sd", path)          # refused on loading (hardware.CONSTANTS)
    path = _edited(tmp_path, "li2026_paper", lambda d: d["runtime"]["verify"].update(a=-1e-5))
    with pytest.raises(ValueError, match="key 'runtime.verify.a': expected a non-negative number"):
        needs.missing("li2026_wisp_serving", path)      # refused on loading (hardware.KINDS)
    path = _edited(tmp_path, "li2026_paper", lambda d: (d["runtime"]["verify"].pop("kind"),   # a table of no kind
                                                        d["runtime"]["verify"].update(model="mine", a=-1e-5)))
    assert needs.missing("li2026_wisp_serving", path) == ["runtime.verify.a: expected a non-negative number, got -1e-05"]


def test_the_runner_runs_only_what_a_profile_serves(capsys):
    profile, todo = notebooks._profile_plan("zhu2025_paper", notebooks.notebooks(None))
    assert [nb.stem for nb in todo] == ["zhu2025_edge_sd"] and profile == "zhu2025_paper"
    printed = capsys.readouterr().out
    assert "skipped venkatesha2025_early_exit: " in printed and "lacks runtime.jetson_vicuna68m_vicuna7b: missing" in printed
    assert "skipped model_zoo_card: no `profile` parameter" in printed
    with pytest.raises(SystemExit, match="serves none of"):
        notebooks._profile_plan("zoo_cpu", notebooks.notebooks(["zheng2025", "venkatesha"]))


def test_an_unknown_profile_fails_before_any_output(tmp_path):
    before = sorted(p.name for p in (paths.BUILD / "ci" / "figures").glob("*/*")) if (paths.BUILD / "ci").exists() else []
    with pytest.raises(FileNotFoundError, match="no hardware profile 'nope'"):
        notebooks._profile_plan("nope", notebooks.notebooks(None))
    after = sorted(p.name for p in (paths.BUILD / "ci" / "figures").glob("*/*")) if (paths.BUILD / "ci").exists() else []
    assert after == before


def test_a_profile_given_as_a_path_names_its_folder_by_its_name():
    out = paths.output_dir("zhu2025", "ci", "data/profiles/cpu_local.yaml", default_profile="zhu2025_paper")
    assert out.name == "profile-cpu_local"


def test_make_figures_with_a_paper_profile_plans_what_it_serves(capsys):
    """The README's `make figures PROFILE=<name>` path up to execution (the runner `make` calls); running a
    notebook on a profile end to end is test_notebooks_runner_profile's one such run."""
    profile, todo = notebooks._profile_plan("zheng2025_paper", notebooks.notebooks(None))
    assert profile == "zheng2025_paper" and [nb.stem for nb in todo] == ["zheng2025_tk_slt"]
    assert "skipped zhu2025_edge_sd:" in capsys.readouterr().out
