"""The foundation: hardware profiles, comparison contract, deterministic plots, output folders."""
import copy

import matplotlib
matplotlib.use("Agg")   # tests only; library code never selects a backend
import matplotlib.pyplot as plt
import pandas as pd
import pytest
import yaml

from specedge import claims, compare, hardware, paths, plotting


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


# --- comparison contract ---------------------------------------------------------------------------
def test_comparison_status_rules(tmp_path):
    c = compare.Comparison("x")
    assert c.add("T", "a", 1.0, 1.04, tolerance=0.05) == "match"
    with pytest.raises(ValueError, match="note"):
        c.add("T", "b", 1.0, 2.0, tolerance=0.05)
    assert c.add("T", "b", 1.0, 2.0, tolerance=0.05, note="the zoo model differs in size") == "deviates"
    with pytest.raises(ValueError, match="claim\\(\\) or state"):
        c.add("T", "c", "x", "y", tolerance=0)
    with pytest.raises(ValueError, match="tolerance"):
        c.add("T", "c", 1.0, 1.0)
    df = pd.read_csv(c.write(tmp_path))
    assert list(df.columns) == compare.COLUMNS and list(df.status) == ["match", "deviates"]


@pytest.mark.parametrize("status", ["match", "trend", "close"])
def test_add_and_state_refuse_a_typed_match_or_trend(status):
    c = compare.Comparison("x")
    with pytest.raises(TypeError, match="decided by code"):
        c.add("T", "q", 1.0, 1.0, tolerance=0, status=status)
    with pytest.raises(ValueError, match="only"):
        c.state("T", "q", "yes", "yes", status, note="a long enough note naming a cause")
    assert not c.rows


def test_state_needs_a_cause_and_claim_records_its_evidence():
    c = compare.Comparison("x")
    with pytest.raises(ValueError, match="cause"):
        c.state("T", "q", 1, 2, "deviates", note="differs")
    assert c.state("T", "q", 1, 2, "not-reproducible", note="needs the paper's RTX 4500 GPU") == "not-reproducible"
    assert c.claim("T", "falls", "decreasing", claims.strictly_decreasing([3, 2, 1])) == "trend"
    assert c.claim("T", "falls", "decreasing", claims.strictly_decreasing([3, 2, 1]), strength="match") == "match"
    assert c.claim("T", "falls", "decreasing", claims.strictly_decreasing([1, 1, 1])) == "deviates"
    row = c.rows[-1]
    assert row["predicate"] == "strictly_decreasing" and row["evidence"].startswith("constant")
    assert "strictly_decreasing fails" in row["note"]
    with pytest.raises(TypeError, match="Claim"):
        c.claim("T", "q", "yes", True)


def test_comparison_rows_have_no_float_noise(tmp_path):
    c = compare.Comparison("x")
    c.add("T", "a", 0.62, 0.6204999999999999, tolerance=0.01)
    text = c.write(tmp_path).read_text()
    assert "0.6205," in text and "0.6204999999999999" not in text


def test_comparison_table_adds_one_row_per_cell_in_the_papers_order():
    """Comparison.table: paper and ours share rows and columns; rows come in the paper's order, cells in the
    order of ``cells``; each cell's rule decides (tolerance, null, a stated status) and names its statements."""
    paper = pd.DataFrame({"acc": [0.75, 0.80], "n": [100, 200]}, index=["A", "B"])
    ours = pd.DataFrame({"acc": [0.90, 0.74], "n": [7, 9]}, index=["B", "A"])
    c = compare.Comparison("x")
    c.table("T4", paper, ours, {"acc": compare.Cell(tolerance=lambda p: 0.02, null=0.5, note=lambda r: f"row {r}: the zoo threshold rule"),
                                "n": compare.Cell("deviates", unit="tokens", quantity="{row} count",
                                                  note="counts scale with the test split")},
            lambda r, col: f"t4-{r.lower()} {col}")
    f = c.frame()
    assert list(f.quantity) == ["A acc", "A count", "B acc", "B count"]
    assert list(f.status) == ["match", "deviates", "deviates", "deviates"]       # 0.74 vs 0.75 within 0.02; 0.90 vs 0.80 not
    assert list(f.statements) == ["t4-a acc", "t4-a n", "t4-b acc", "t4-b n"] and f.note[0] == "row A: the zoo threshold rule"
    assert f.reproduced.tolist()[:2] == [0.74, 9] and f.null[0] == 0.5
    with pytest.raises(ValueError, match="every row of paper"):
        c.table("T4", paper, ours.drop("A"), {"acc": compare.Cell(tolerance=0.02, null=0.5)}, "t4")
    with pytest.raises(ValueError, match="also accepts the null"):      # the null test holds inside a table too
        c.table("T4", paper.assign(acc=0.51), ours.assign(acc=0.5), {"acc": compare.Cell(tolerance=0.02, null=0.5)}, "t4")


def test_results_table_and_readme_block(tmp_path):
    for key, statuses in {"zheng2025": ["match", "match"], "zhu2025": ["match", "deviates"]}.items():
        c = compare.Comparison(key)
        for i, s in enumerate(statuses):
            c.add("Fig", f"q{i}", 1, 1 if s == "match" else 2, tolerance=0, note="a cause for the test")
        (tmp_path / key).mkdir()
        c.write(tmp_path / key)
    table = compare.results_table(tmp_path)
    assert "| **all** | | **4** | **3** | **0** | **1** | **0** |" in table
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{compare.START}\nold\n{compare.END}\nrest\n")
    assert not compare.readme_is_fresh(readme, tmp_path)
    assert compare.update_readme(readme, tmp_path)
    assert compare.readme_is_fresh(readme, tmp_path)
    assert readme.read_text().startswith("intro\n") and readme.read_text().endswith("rest\n")


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


def test_null_test_refuses_a_match_that_no_effect_would_also_pass(tmp_path):
    """Paper 1.05x at +-0.05 also accepts 1.0 (no effect): refused unless the row says why."""
    c = compare.Comparison("x")
    with pytest.raises(ValueError, match="accepts the null"):
        c.add("T", "speedup", 1.05, 1.0, tolerance=0.05, null=1.0)
    assert c.add("T", "speedup", 1.05, 1.04, tolerance=0.025, null=1.0) == "match"
    assert c.add("T", "speedup", 1.05, 1.0, tolerance=0.025, null=1.0, note="no pre-draft ever hit") == "deviates"
    assert c.add("T", "level", 0.97, 0.96, tolerance=0.05, null=1.0, null_why="the paper reports no effect") == "match"
    assert c.add("T", "count", 5, 5, tolerance=0, null_why="a level, not an effect") == "match"
    c.add("T", "bare", 2.0, 2.0, tolerance=0.1)                            # no null at all
    c.claim("T", "A above B", "yes", claims.above(2.0, 1.0), strength="match")
    c.claim("T", "A above B by a margin", "yes", claims.above(2.0, 1.0, margin=0.5), strength="match")
    (tmp_path / "x").mkdir()
    c.write(tmp_path / "x")
    flags = compare.null_flags(compare.load_all(tmp_path))
    assert list(flags.quantity) == ["bare", "A above B"]
    assert list(flags.why) == ["no null and no null_why", "above without a margin"]


def test_committed_comparisons_pass_the_null_test():
    """Every committed match can fail: its tolerance rejects "no effect", or the row says why; the
    files listed in NULL_PENDING are another issue's and are only reported."""
    flags = compare.null_check()
    open_ = flags[flags.pending == ""]
    assert open_.empty, open_[["key", "artifact", "quantity", "why"]].to_string()
    assert set(compare.NULL_PENDING) <= set(compare.load_all().key)


def test_null_tolerance_is_half_the_effect():
    assert compare.null_tolerance(1.04, 1.0, 0.05) == pytest.approx(0.02)
    assert compare.null_tolerance(1.94, 1.0, 0.1) == pytest.approx(0.1)          # capped
    assert compare.null_tolerance(0.97, 1.0, 0.1) == pytest.approx(0.015)
    c = compare.Comparison("x")
    tol = compare.null_tolerance(1.05, 1.0, 0.05)
    assert c.add("T", "s", 1.05, 1.0, tolerance=tol, null=1.0, note="every pre-draft missed") == "deviates"
    with pytest.raises(ValueError, match="null_tolerance"):
        compare.null_tolerance(1.0, float("nan"), 0.1)


def test_extend_builds_rows_from_a_paper_table_and_a_reproduced_table():
    """One helper turns driver rows into comparison rows; a row without ``paper`` takes the value
    of its first statement id, a row with ``claim`` is a claim, one with ``status`` is stated."""
    paper = {"t3-wisp": 631.86, "t3-order": "yes"}
    c = compare.Comparison("x")
    got = c.extend(pd.DataFrame([dict(artifact="Table 3", quantity="WISP", reproduced=640.0, tolerance=20.0,
                                      statements="t3-wisp", null_why="a level")]), paper)
    got += c.extend([dict(artifact="Table 3", quantity="order", paper="yes", claim=claims.ordered([1, 2], ["a", "b"]),
                          statements="t3-order"),
                     dict(artifact="Table 3", quantity="load", paper="?", reproduced="–", status="not-reproducible",
                          note="the load is unstated in the paper", statements="t3-order")])
    assert got == ["match", "trend", "not-reproducible"]
    f = c.frame()
    assert f.paper.tolist() == [631.86, "yes", "?"] and f.statements.tolist() == ["t3-wisp", "t3-order", "t3-order"]
    with pytest.raises(ValueError, match="no 'paper' value"):
        c.extend([dict(artifact="T", quantity="q", reproduced=1.0, tolerance=0.1, statements="unknown-id")], paper)
    with pytest.raises(ValueError, match="outside"):   # the rules of add() still hold
        c.extend([dict(artifact="T", quantity="q", reproduced=700.0, tolerance=1.0, statements="t3-wisp")], paper)
