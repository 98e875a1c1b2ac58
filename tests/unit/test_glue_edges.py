"""Glue that decides committed bytes or committed text, at its telling inputs: the portable kernel caps against a
caller's own environment (specedge.host), which timing records make the README's timings line (tools/timings.py),
the predictor's operating-point ratios (li2026 Sec 5.4) and a headline row's tolerance on either side."""
import importlib.util
import json
import math

import numpy as np
import pandas as pd
import pytest

from specedge import host, paths
from specedge.predictor import operating as P
from specedge.predictor.models import LABELS

_SPEC = importlib.util.spec_from_file_location("timings", paths.ROOT / "tools" / "timings.py")   # a script of tools/
timings = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(timings)

CAPS = {"ATEN_CPU_CAPABILITY": "avx512", "MKL_CBWR": "AUTO", "NPY_DISABLE_CPU_FEATURES": "", "KEEP": "1"}


# ------------------------------------------------------------------------------------------------ host
def test_the_portable_caps_override_a_callers_own_settings():
    env = host.portable(dict(CAPS))
    assert {k: env[k] for k in host.PORTABLE_ENV} == host.PORTABLE_ENV and env["KEEP"] == "1"
    assert env["ATEN_CPU_CAPABILITY"] == "avx2"


def test_portable_without_an_environment_starts_from_this_process(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    monkeypatch.setenv("SPECEDGE_PROBE", "here")
    env = host.portable()
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["SPECEDGE_PROBE"] == "here"


def test_a_kernel_spec_with_its_own_caps_gets_the_portable_ones(tmp_path):
    spec = tmp_path / "kernel.json"
    spec.write_text(json.dumps({"argv": ["python"], "env": dict(CAPS)}))
    host.write_kernel_env(spec)
    assert json.loads(spec.read_text())["env"] == {"KEEP": "1", **host.PORTABLE_ENV}
    assert json.loads(spec.read_text())["argv"] == ["python"]


def test_main_prints_the_caps_and_the_host(capsys, monkeypatch):
    assert host.main(["--env"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == " ".join(f"{k}='{v}'" for k, v in host.PORTABLE_ENV.items())
    monkeypatch.setattr(host, "_cpuinfo_lines", lambda: ["model name\t: Test CPU 9000", "flags\t\t: fpu avx2 avx512f"])
    assert host.main([]) == 0
    assert capsys.readouterr().out.strip() == "Test CPU 9000: AVX-512, native bfloat16 no, auto dtype float32"
    assert host.describe("float32", 2) == dict(cpu="Test CPU 9000", isa="AVX-512", native_bf16=False, dtype="float32",
                                               threads=2)


def test_isa_names_the_widest_unit_and_native_bf16_needs_its_own_flag():
    assert host.isa(frozenset({"avx2", "avx512f", "amx_bf16"})) == "AMX-BF16"
    assert host.isa(frozenset({"avx2", "avx512f", "avx512_bf16"})) == "AVX512-BF16"
    assert host.isa(frozenset({"sse4_2"})) == "other" and host.isa(frozenset()) == "other"
    assert not host.native_bf16(frozenset({"avx512f", "avx512bw"}))
    assert host.resolve_dtype("bfloat16", flags=frozenset()) == "bfloat16"
    assert host.resolve_dtype("auto", flags=frozenset({"amx_bf16"})) == "bfloat16"


def test_no_cpuinfo_falls_back_to_the_platform(monkeypatch):
    monkeypatch.setattr(host, "_cpuinfo_lines", lambda: [])
    assert host.cpu_flags() == frozenset() and host.cpu_name()


# ------------------------------------------------------------------------------------------------ timings
HOST = {"cpu": "AMD EPYC", "isa": "AVX2", "cores": 2, "memory_gib": 8, "gpu": False}


def _write_records(folder, **extra):
    for name, secs, ends in (("figures", 600.0, "figures: done"), ("test", 300.0, "10 passed"),
                             ("test-fast", 60.0, "5 passed"), *extra.values()):
        (folder / f"{name}.json").write_text(json.dumps({"command": name, "seconds": secs, "ends_with": ends, **HOST}))


def _readme(folder):
    readme = folder / "README.md"
    readme.write_text(f"# x\n{timings.BEGIN}\nold\n{timings.END}\ntail\n")
    return readme


def test_a_venv_record_adds_its_build_time_to_the_readme_line_and_other_files_do_not(tmp_path):
    _write_records(tmp_path)
    (tmp_path / "notebooks.json").write_text(json.dumps({"seconds": {"a": 1.0}, "jobs": 1, "wall": 1.0, **HOST}))
    assert timings.update_readme(_readme(tmp_path), tmp_path)
    first = (tmp_path / "README.md").read_text().splitlines()[2]
    assert first == "On a 2-core AMD EPYC (AVX2), 8 GiB, no GPU, with `.venv` already built:"
    _write_records(tmp_path, venv=("venv", 90.0, ".venv ready"))
    assert timings.update_readme(_readme(tmp_path), tmp_path)
    text = (tmp_path / "README.md").read_text()
    assert text.splitlines()[2].endswith("with `.venv` already built (building it took 1.5 min):")
    assert text.endswith(f"{timings.END}\ntail\n") and "old" not in text


def test_a_gpu_host_is_named_so():
    recs = {n: {"command": n, "seconds": 60.0, "ends_with": "x", **HOST, "gpu": True} for n in timings.COMMANDS}
    assert ", a GPU, " in timings.block(recs).splitlines()[0]


def test_start_then_stop_through_main_records_a_junit_count(tmp_path, monkeypatch):
    monkeypatch.setattr(timings, "FOLDER", tmp_path)
    monkeypatch.setattr(timings, "machine", lambda: dict(HOST))
    monkeypatch.setattr(timings.start, "__defaults__", (tmp_path,))
    monkeypatch.setattr(timings.stop, "__defaults__", (tmp_path, None))
    junit = tmp_path / "t.xml"
    junit.write_text('<testsuite tests="7" failures="1" errors="0" skipped="2"/>')
    assert timings.main(["start", "test"]) == 0 and (tmp_path / "test.start").exists()
    assert timings.main(["stop", "test", "--junit", str(junit)]) == 0
    rec = json.loads((tmp_path / "test.json").read_text())
    assert rec["ends_with"] == "4 passed, 1 failures, 2 skipped" and rec["seconds"] >= 0
    assert not (tmp_path / "test.start").exists()
    with pytest.raises(FileNotFoundError, match="no start recorded"):
        timings.stop("test", "x", folder=tmp_path)


# ------------------------------------------------------------------------------------------------ operating points
def test_fpr_ratio_is_the_trees_mean_over_the_mlp_and_nan_at_a_zero_mlp_fpr():
    labels = list(LABELS.values())          # the MLP's label first, then the three tree families
    mlp = LABELS["mlp"]
    trees = [p for p in labels if p != mlp]
    rows = [dict(split_seed=0, predictor=mlp, FPR=0.2)] + [dict(split_seed=0, predictor=p, FPR=f)
                                                           for p, f in zip(trees, (0.2, 0.4, 0.6))]
    rows += [dict(split_seed=1, predictor=mlp, FPR=0.0)] + [dict(split_seed=1, predictor=p, FPR=0.3) for p in trees]
    r = P.fpr_ratio(pd.DataFrame(rows))
    assert r.loc[0] == pytest.approx(0.4 / 0.2) and math.isnan(r.loc[1])
    assert P.fpr_ratio(pd.DataFrame(rows), trees=trees[:1]).loc[0] == pytest.approx(1.0)


def test_balanced_weight_is_accepted_over_rejected():
    assert P.balanced_weight([1, 1, 1, 0]) == 3.0 and P.balanced_weight(np.array([0, 0, 1])) == 0.5
    for one_class in ([0, 0], [1], []):
        with pytest.raises(ValueError, match="needs both classes"):
            P.balanced_weight(one_class)


# ------------------------------------------------------------------------------------------------ headline rows
def test_a_headline_below_the_paper_by_more_than_the_tolerance_names_its_cause_too():
    from specedge.experiments.zhu2025 import figures as zf
    from specedge.experiments.zhu2025.runs import PAPER_PROFILE
    paper = {"fig7a-31.3": 31.25}               # binary fractions: the edge is exactly the tolerance
    below = zf.headline("Fig 7a", "q", "fig7a-31.3", paper, 20.0, "mean latency", "why")
    edge = zf.headline("Fig 7a", "q", "fig7a-31.3", paper, 36.25, "mean latency", "why", tolerance=5.0)
    above = zf.headline("Fig 7a", "q", "fig7a-31.3", paper, 36.375, "mean latency", "why", tolerance=5.0)
    assert below["note"] == "why (mean latency)" and below["reproduced"] == 20.0 and below["null"] == 0.0
    assert edge["note"] == "mean latency" and above["note"] == "why (mean latency)"
    assert zf.cause_of(PAPER_PROFILE) == "paper-ambiguity" and zf.cause_of("cpu_local") == "hardware"
    assert zf.models_of(PAPER_PROFILE) == "paper" and zf.models_of("cpu_local") == ""
    assert zf.why(PAPER_PROFILE, "c") == "c" and zf.why("cpu_local", "c").startswith("profile cpu_local: ")


def test_portable_main_execs_the_command_with_the_caps_over_the_callers(monkeypatch):
    seen = {}

    class Replaced(Exception):             # exec never returns: the process becomes the command
        pass

    def execvpe(f, argv, env):
        seen.update(f=f, argv=argv, env=env)
        raise Replaced

    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    monkeypatch.setattr(host.os, "execvpe", execvpe)
    with pytest.raises(Replaced):
        host.main(["--portable", "--", "python", "-c", "pass"])
    assert seen["f"] == "python" and seen["argv"] == ["python", "-c", "pass"]
    assert seen["env"]["ATEN_CPU_CAPABILITY"] == "avx2"
    with pytest.raises(Replaced):
        host.main(["--portable", "echo", "x"])             # the -- is optional
    assert seen["argv"] == ["echo", "x"]


def test_main_writes_a_kernel_spec(tmp_path):
    spec = tmp_path / "kernel.json"
    spec.write_text(json.dumps({"argv": ["python"]}))
    assert host.main(["--kernel", str(spec)]) == 0
    assert json.loads(spec.read_text())["env"] == host.PORTABLE_ENV


def test_a_gpu_decides_bfloat16_by_its_own_support(monkeypatch):
    import torch
    for supported, want in ((True, "bfloat16"), (False, "float32")):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda s=supported: s)
        assert host.auto_dtype("cuda:0", flags=frozenset()) == want
    assert host.torch_dtype("float32") is torch.float32 and host.torch_dtype("bfloat16") is torch.bfloat16


def test_an_unreadable_cpuinfo_reads_as_no_lines(monkeypatch):
    class Unreadable:
        def __init__(self, *a):
            pass

        def read_text(self):
            raise OSError("no /proc here")

    monkeypatch.setattr(host, "Path", Unreadable)
    assert host._cpuinfo_lines() == [] and host.cpu_flags() == frozenset() and host.isa() == "other"


def test_machine_names_this_host_and_readme_rewrites_both_blocks(monkeypatch):
    m = timings.machine()
    assert set(m) == set(HOST) and m["cores"] >= 1 and m["memory_gib"] >= 0 and m["cpu"] == host.cpu_name()
    called = []
    monkeypatch.setattr(timings, "update_readme", lambda: called.append("readme") or True)
    monkeypatch.setattr(timings, "update_benchmarks", lambda: called.append("benchmarks") or True)
    assert timings.main(["readme"]) == 0 and called == ["readme", "benchmarks"]
