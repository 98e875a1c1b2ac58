"""The host's capabilities decide the dtype where the real pair runs; bad names are refused."""
import json

import pytest

from specedge import host

AVX2 = frozenset({"sse4_2", "avx", "avx2", "fma"})
AVX512 = AVX2 | {"avx512f", "avx512bw", "avx512vl"}
AVX512_BF16 = AVX512 | {"avx512_bf16"}
AMX = AVX512_BF16 | {"amx_tile", "amx_bf16", "amx_int8"}


@pytest.mark.parametrize("flags, isa, bf16, dtype", [
    (AVX2, "AVX2", False, "float32"),             # bf16 emulated: several times slower than float32
    (AVX512, "AVX-512", False, "float32"),
    (AVX512_BF16, "AVX512-BF16", True, "bfloat16"),
    (AMX, "AMX-BF16", True, "bfloat16"),
    (frozenset(), "other", False, "float32"),     # a system that does not say: the safe choice
])
def test_auto_dtype_follows_the_cpu(flags, isa, bf16, dtype):
    assert host.isa(flags) == isa
    assert host.native_bf16(flags) is bf16
    assert host.auto_dtype("cpu", flags) == dtype
    assert host.resolve_dtype("auto", "cpu", flags) == dtype
    assert host.resolve_dtype("float32", "cpu", AMX) == "float32"      # an explicit --dtype wins
    assert host.resolve_dtype("bfloat16", "cpu", AVX2) == "bfloat16"


def test_auto_dtype_reads_this_hosts_flags(monkeypatch):
    monkeypatch.setattr(host, "_cpuinfo_lines", lambda: ["model name\t: Some CPU", "flags\t\t: fpu avx2 fma"])
    assert host.cpu_name() == "Some CPU" and host.isa() == "AVX2" and host.auto_dtype() == "float32"
    monkeypatch.setattr(host, "_cpuinfo_lines", lambda: ["flags\t\t: avx2 avx512f avx512_bf16"])
    assert host.auto_dtype() == "bfloat16"
    assert host.describe("bfloat16", 1) == dict(cpu=host.cpu_name(), isa="AVX512-BF16", native_bf16=True,
                                                 dtype="bfloat16", threads=1)


@pytest.mark.parametrize("bad", ["fp16", "", "Float32", None])
def test_unknown_dtype_is_refused(bad):
    with pytest.raises(ValueError, match="dtype must be one of"):
        host.resolve_dtype(bad)


def test_kernel_spec_gets_the_portable_environment(tmp_path):
    spec = tmp_path / "kernel.json"
    spec.write_text(json.dumps({"argv": ["python"], "env": {"KEEP": "1"}}))
    host.write_kernel_env(spec)
    env = json.loads(spec.read_text())["env"]
    assert env == {"KEEP": "1", **host.PORTABLE_ENV}


def test_portable_runs_a_command_with_the_environment(tmp_path):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "specedge.host", "--portable", "--", sys.executable, "-c",
                          "import os; print(os.environ['MKL_CBWR'], os.environ['NPY_DISABLE_CPU_FEATURES'])"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["AVX2", *host.PORTABLE_ENV["NPY_DISABLE_CPU_FEATURES"].split()]
    bad = subprocess.run([sys.executable, "-m", "specedge.host", "--portable"], capture_output=True, text=True)
    assert bad.returncode == 2 and "needs a command" in bad.stderr
