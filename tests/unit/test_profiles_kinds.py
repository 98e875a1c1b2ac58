"""Profiles refused at the door: every runtime model is of a kind (hardware.KINDS) whose coefficients and
signs are checked when the file is loaded, known constants have their types, and an error names the file
and the key path; output folders take the profile's name, and an unknown profile makes no folder."""
import pytest
import yaml

from specedge import hardware, needs, paths

# each notebook's default profiles (the `profile`, `measured_profile`, `local_profile` parameters)
DEFAULTS = {"zhu2025_edge_sd": ["zhu2025_paper", "cpu_local"], "zheng2025_tk_slt": ["zheng2025_paper", "zoo_cpu"],
            "venkatesha2025_early_exit": ["venkatesha2025_paper", "cpu_local_fsd"],
            "tran2025_goodspeed": ["tran2025_paper"], "li2026_wisp_serving": ["li2026_paper"]}


def _write(tmp_path, base: str, edit, name="mine") -> str:
    data = yaml.load(hardware.profile_path(base).read_text(), Loader=hardware._Loader)
    edit(data)
    data["name"] = name
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_every_committed_profile_loads_and_every_runtime_model_has_a_kind():
    for name in hardware.list_profiles():
        prof = hardware.load_profile(name)
        assert {r: prof.kind(r) for r in prof.runtime if prof.kind(r) is None} == {}, name


def test_each_notebook_default_profile_serves_it():
    for nb, (profile, *_) in DEFAULTS.items():
        assert needs.missing(nb, profile) == [], nb
    for name in sum(DEFAULTS.values(), []):
        hardware.load_profile(name)


def test_a_missing_coefficient_names_file_key_and_model(tmp_path):
    path = _write(tmp_path, "zhu2025_paper", lambda d: d["runtime"]["verify"].pop("c2"))
    with pytest.raises(hardware.ProfileError) as e:
        hardware.load_profile(path)
    assert str(e.value) == (f"{path}: key 'runtime.verify.c2' missing: expected a non-negative number "
                            "(needed by the 'linear_batch' model, T = c1*F*b + c2)")


def test_a_mistyped_constant_names_file_and_key(tmp_path):
    path = _write(tmp_path, "zhu2025_paper", lambda d: d["constants"].update(num_users="many"))
    with pytest.raises(hardware.ProfileError, match=r"mine.yaml: key 'constants.num_users': expected a positive "
                                                    r"integer, got 'many'"):
        hardware.load_profile(path)
    path = _write(tmp_path, "zhu2025_paper", lambda d: d["constants"].update(max_output_len=2048.5))
    with pytest.raises(hardware.ProfileError, match="constants.max_output_len"):
        hardware.load_profile(path)


@pytest.mark.parametrize("base, edit, key", [
    ("zhu2025_paper", lambda d: d["runtime"]["draft"].update(c1=0.0), "runtime.draft.c1"),
    ("tran2025_paper", lambda d: d["runtime"]["verify"].update(c0=-1e-3), "runtime.verify.c0"),
    ("venkatesha2025_paper", lambda d: d["runtime"]["rtx_vicuna68m_vicuna7b"].update(gamma=2.5),
     "runtime.rtx_vicuna68m_vicuna7b.gamma"),
    ("venkatesha2025_paper", lambda d: d["runtime"]["rtx_vicuna68m_vicuna7b"].update(threads=0),
     "runtime.rtx_vicuna68m_vicuna7b.threads"),
    ("li2026_paper", lambda d: d["runtime"]["verify"].pop("b_read"), "runtime.verify.b_read"),
    ("zheng2025_paper", lambda d: d["runtime"]["relative_cost"].update(slm_over_llm=-0.07),
     "runtime.relative_cost.slm_over_llm"),
    ("zhu2025_paper", lambda d: d["runtime"]["draft"].update(kind="linear"), "runtime.draft.kind"),
])
def test_bad_coefficients_of_each_kind_are_named(tmp_path, base, edit, key):
    with pytest.raises(hardware.ProfileError, match=f"mine.yaml: key '{key}'"):
        hardware.load_profile(_write(tmp_path, base, edit))


def test_a_kind_comes_from_the_formula_and_an_untyped_table_still_loads(tmp_path):
    def untyped(d):
        d["runtime"]["verify"].pop("kind")
        d["runtime"]["extra"] = {"model": "my own notes", "x": -1.0}
    prof = hardware.load_profile(_write(tmp_path, "zhu2025_paper", untyped))
    assert prof.kind("verify") == "linear_batch" and prof.kind("extra") is None
    with pytest.raises(hardware.ProfileError, match="runtime.verify.c1' missing"):
        hardware.load_profile(_write(tmp_path, "zhu2025_paper",
                                     lambda d: (untyped(d), d["runtime"]["verify"].pop("c1"))))


def test_output_folder_is_named_by_the_profile_and_an_unknown_one_makes_none(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "BUILD", tmp_path / "build")
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "zhu2025_paper", lambda d: None, name="my_gpu")
    prof = needs.check("zhu2025_edge_sd", "my_gpu.yaml")                   # relative to cwd, loaded once
    out = paths.output_dir("zz_key", "ci", prof, default_profile="zhu2025_paper")   # the object, not reloaded
    assert out == tmp_path / "build" / "ci" / "figures" / "zz_key" / "profile-my_gpu"
    assert paths.output_dir("zz_key", "ci", "my_gpu.yaml", default_profile="zhu2025_paper") == out   # a path: its stem
    assert paths.output_dir("zz_key", "ci", "zhu2025_paper", default_profile="zhu2025_paper").name == "zz_key"
    with pytest.raises(FileNotFoundError, match="no hardware profile 'nope'"):   # refused before any folder
        needs.check("zhu2025_edge_sd", "nope")
    assert not (tmp_path / "build" / "ci" / "figures" / "zz_other").exists()


def test_a_profile_is_parsed_once_per_version_of_its_file(tmp_path):
    """``load_profile`` keeps the parsed YAML between loads (sweeps load a profile per point) but never a stale
    or shared one: an edited file is read again, and what one caller changes in its copy no other sees."""
    path = _write(tmp_path, "li2026_paper", lambda d: None)
    first = hardware.load_profile(path)
    first.runtime["verify"]["c"] = 99.0                         # a caller's own copy
    assert hardware.load_profile(path).runtime["verify"]["c"] != 99.0
    edited = _write(tmp_path, "li2026_paper", lambda d: d["runtime"]["verify"].update(c=0.5))
    assert edited == path and hardware.load_profile(path).coefficients("verify")["c"] == 0.5
