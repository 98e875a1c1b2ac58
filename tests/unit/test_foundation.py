"""The foundation: hardware profiles, deterministic plots, output folders (the comparison contract: test_compare.py)."""
import copy

import matplotlib
matplotlib.use("Agg")   # tests only; library code never selects a backend
import matplotlib.pyplot as plt
import pandas as pd
import pytest
import yaml

from specedge import hardware, paths, plotting


# --- hardware profiles -----------------------------------------------------------------------------
PAPER_PROFILES = ["zhu2025_paper", "zheng2025_paper", "venkatesha2025_paper", "li2026_paper", "tran2025_paper"]


@pytest.mark.parametrize("name", PAPER_PROFILES)
def test_paper_profiles_load(name):
    prof = hardware.load_profile(name)
    assert prof.name == name and prof.source


def test_paper_profile_values():
    zhu = hardware.load_profile("zhu2025_paper")
    assert zhu.coefficients("draft") == {"c1": 4.11e-13, "c2": 0.56e-3}
    assert zhu.coefficients("verify") == {"c1": 2.08e-14, "c2": 1.28e-2}
    assert zhu.link("uplink")["bandwidth_hz"] == 20e6
    assert hardware.load_profile("li2026_paper").coefficients("verify")["c"] == pytest.approx(14.86e-3)


def _raw(name="zhu2025_paper"):
    with open(paths.PROFILES / f"{name}.yaml") as f:
        return yaml.load(f, Loader=hardware._Loader)


@pytest.mark.parametrize("mutate, key", [
    (lambda d: d.pop("runtime"), "runtime"),
    (lambda d: d["links"]["uplink"].pop("bandwidth_hz"), "links.uplink"),
    (lambda d: d["devices"]["sbs"].update(memory_bytes=-1), "devices.sbs.memory_bytes"),
    (lambda d: d["devices"]["sbs"].update(memory_gb=16), "devices.sbs.memory_gb"),
    (lambda d: d["runtime"]["draft"].update(c1="fast"), "runtime.draft.c1"),
    (lambda d: d["runtime"]["draft"].pop("model"), "runtime.draft.model"),
    (lambda d: d["links"]["uplink"].update(latency_s=-0.1), "links.uplink.latency_s"),
])
def test_bad_profile_names_file_and_key(tmp_path, mutate, key):
    data = copy.deepcopy(_raw())
    mutate(data)
    path = tmp_path / "zhu2025_paper.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(hardware.ProfileError) as e:
        hardware.load_profile(path)
    assert str(path) in str(e.value) and f"'{key}'" in str(e.value) and "expected" in str(e.value)


def test_profile_name_must_match_file(tmp_path):
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(_raw()))
    with pytest.raises(hardware.ProfileError, match="'name'"):
        hardware.load_profile(path)


def test_unknown_profile_lists_available():
    with pytest.raises(FileNotFoundError, match="zhu2025_paper"):
        hardware.load_profile("no_such_profile")


def test_missing_runtime_model_is_a_clear_error():
    with pytest.raises(KeyError, match="no runtime model 'gpu'"):
        hardware.load_profile("zhu2025_paper").coefficients("gpu")


def test_profile_round_trip(tmp_path):
    prof = hardware.load_profile("venkatesha2025_paper")
    path = hardware.save_profile(prof, tmp_path / "venkatesha2025_paper.yaml")
    assert hardware.load_profile(path).to_dict() == prof.to_dict()


# --- plots and output folders ----------------------------------------------------------------------
def test_save_is_byte_identical_on_rerun(tmp_path):
    plotting.set_style()
    data = pd.DataFrame({"x": [1, 2, 3], "y": [0.1, 0.25, 1 / 3]})
    blobs = []
    for run in range(2):
        fig, ax = plt.subplots()
        ax.plot(data.x, data.y, label="proposed")
        ax.set_xlabel("x (s)")
        ax.legend()
        d = tmp_path / str(run)
        plotting.save(fig, data, d, "fig", close=True)
        blobs.append([(d / f"fig.{ext}").read_bytes() for ext in ("png", "pdf", "csv")])
    assert blobs[0] == blobs[1]


def test_output_dirs():
    assert paths.output_dir("zz_test", "full") == paths.FIGURES / "zz_test"
    (paths.FIGURES / "zz_test").rmdir()
    ci = paths.output_dir("zz_test", "ci", "cpu_local", default_profile="zz_paper")
    assert ci == paths.BUILD / "ci" / "figures" / "zz_test" / "profile-cpu_local"
    with pytest.raises(ValueError, match="scale"):
        paths.output_dir("zz_test", "huge")
