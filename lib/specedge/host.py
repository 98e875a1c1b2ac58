"""The host: what this CPU multiplies natively, and the settings that make results independent of it.

Two facts about an x86-64 host change what this repository computes or how fast:

- **Vector width.** numpy's float64 ``log``/``exp``/``power`` and torch/MKL/oneDNN matmuls take
  AVX-512 kernels where the CPU has them and AVX2 or scalar ones elsewhere; the results differ in the
  last bits (a zheng2025 acceptance 0.2946907823 on AVX2 is 0.2946907852 on AVX-512). Figures and
  tests therefore run with the vector kernels capped at AVX2 (``PORTABLE_ENV``: numpy's
  ``NPY_DISABLE_CPU_FEATURES``, torch's ``ATEN_CPU_CAPABILITY``, MKL's conditional numerical
  reproducibility ``MKL_CBWR``, oneDNN's ``ONEDNN_MAX_CPU_ISA``, OpenBLAS's core type), so AMD hosts with
  AVX2 and with AVX-512 compute the same values. Intel's float32 kernels still differ from AMD's in the last
  bits (vendor-specific MKL/oneDNN paths); the outputs computed from float32 model outputs declare that noise
  (``output_noise``). Benchmarks run uncapped: they measure the host as it is.
- **bfloat16.** Where the CPU multiplies bfloat16 natively (AMX tiles, or AVX512-BF16's dot products),
  a bfloat16 pass costs about half a float32 one and a (γ + 1)-token verification about one step;
  elsewhere bfloat16 is emulated and several times slower than float32. ``auto_dtype`` picks per host;
  ``--dtype`` overrides it wherever the real pair runs.

    python -m specedge.host              # this host: CPU, ISA, native bfloat16, the auto dtype
    python -m specedge.host --env        # PORTABLE_ENV as KEY=VALUE lines (the Makefile's `env` prefix)
    python -m specedge.host --kernel K   # write PORTABLE_ENV into the Jupyter kernel spec K (kernel.json)
    python -m specedge.host --portable -- CMD ARGS   # run CMD with PORTABLE_ENV (make test, make figures)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from pathlib import Path

DTYPES = ("auto", "float32", "bfloat16")
# Vector kernels capped at AVX2 for figures and tests (see the module docstring). numpy 2.4 names its
# AVX-512 groups X86_V4 / AVX512_ICL / AVX512_SPR; names a host lacks are ignored by numpy.
PORTABLE_ENV = {
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
}
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")   # /proc/cpuinfo flags of a native bfloat16 dot product


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo where there is one, else what :mod:`platform` knows."""
    for line in _cpuinfo_lines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _cpuinfo_lines() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo); empty where the system does not say."""
    for line in _cpuinfo_lines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def isa(flags: frozenset[str] | None = None) -> str:
    """The widest matrix/vector unit: ``AMX-BF16``, ``AVX512-BF16``, ``AVX-512``, ``AVX2`` or ``other``."""
    flags = cpu_flags() if flags is None else flags
    for name, flag in (("AMX-BF16", "amx_bf16"), ("AVX512-BF16", "avx512_bf16"), ("AVX-512", "avx512f"),
                       ("AVX2", "avx2")):
        if flag in flags:
            return name
    return "other"


def native_bf16(flags: frozenset[str] | None = None) -> bool:
    """True where the CPU multiplies bfloat16 natively (AMX tiles or AVX512-BF16)."""
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in NATIVE_BF16_FLAGS)


def auto_dtype(device: str = "cpu", flags: frozenset[str] | None = None) -> str:
    """``bfloat16`` on a GPU that supports it and on a CPU that multiplies it natively, else ``float32``."""
    if device.startswith("cuda"):
        import torch
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if native_bf16(flags) else "float32"


def resolve_dtype(dtype: str, device: str = "cpu", flags: frozenset[str] | None = None) -> str:
    """``auto`` resolved for this host (:func:`auto_dtype`); ``float32`` / ``bfloat16`` as given."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return auto_dtype(device, flags) if dtype == "auto" else dtype


def torch_dtype(dtype: str, device: str = "cpu"):
    """The torch dtype of :func:`resolve_dtype`."""
    import torch
    return getattr(torch, resolve_dtype(dtype, device))


def describe(dtype: str | None = None, threads: int | None = None) -> dict:
    """What a benchmark row records about its host: CPU model, ISA, native bfloat16, dtype, threads."""
    out = dict(cpu=cpu_name(), isa=isa(), native_bf16=native_bf16())
    if dtype is not None:
        out["dtype"] = dtype
    if threads is not None:
        out["threads"] = threads
    return out


def machine() -> dict:
    """The facts a recorded run names its host by: CPU model, ISA, cores, memory (GiB), a GPU or not."""
    gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu_name(), "isa": isa(), "cores": os.cpu_count() or 1, "memory_gib": round(gib),
            "gpu": shutil.which("nvidia-smi") is not None}


def portable(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with ``PORTABLE_ENV`` set on top."""
    return {**(dict(os.environ) if env is None else env), **PORTABLE_ENV}


def write_kernel_env(kernel_json: Path) -> None:
    """Put ``PORTABLE_ENV`` into a Jupyter kernel spec, so every notebook kernel starts capped at AVX2."""
    spec = json.loads(Path(kernel_json).read_text())
    spec["env"] = {**spec.get("env", {}), **PORTABLE_ENV}
    Path(kernel_json).write_text(json.dumps(spec, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.host", description=__doc__.splitlines()[0])
    ap.add_argument("--env", action="store_true", help="print PORTABLE_ENV as KEY=VALUE lines")
    ap.add_argument("--kernel", type=Path, help="write PORTABLE_ENV into this kernel.json")
    ap.add_argument("--portable", action="store_true", help="-- CMD ARGS: run CMD with PORTABLE_ENV set")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--portable"]:                 # everything after it (and an optional --) is the command
        cmd = argv[2:] if argv[1:2] == ["--"] else argv[1:]
        if not cmd:
            ap.error("--portable needs a command: --portable -- CMD ARGS")
        os.execvpe(cmd[0], cmd, portable())
    args = ap.parse_args(argv)
    if args.env:
        print(" ".join(f"{k}='{v}'" for k, v in PORTABLE_ENV.items()))
    elif args.kernel:
        write_kernel_env(args.kernel)
    else:
        d = describe()
        print(f"{d['cpu']}: {d['isa']}, native bfloat16 {'yes' if d['native_bf16'] else 'no'}, "
              f"auto dtype {auto_dtype()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
