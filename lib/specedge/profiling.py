"""Time real transformer forward passes on this machine and fit ``T = c1 * F * b + c2``.

The runtime model of zhu2025 (eq 17) says one forward pass of a batch of b sequences, each needing
F FLOPs, takes ``c1 F b + c2`` seconds on a given device; later papers reuse the same measurement.
This module builds decoder-only LLaMA-architecture models with random weights (runtime does not
depend on weight values), times the decoder stack on prefill shapes (q prompt tokens, empty cache)
and decode shapes (q new tokens against a KV cache of c tokens) over a grid of batch sizes,
counts each pass's FLOPs with :func:`decoder_flops`, fits c1 and c2 by least squares with R², and
writes a hardware profile (``data/profiles/<name>.yaml``) with the raw measurements next to it
(``data/profiles/<name>_measurements.csv``). :func:`fit_quality` and :func:`plot_fit` show how well a
profile's fit describes its measurements. :func:`speculative_speedups` times whole greedy decodings instead:
speculative decoding against the target alone per draft length, with the rounds' acceptance.

Measuring is an explicit step; notebooks only read the committed files::

    python -m specedge.profiling --name cpu_local                      # `make profiles`, ~5 min here
    python -m specedge.profiling --name gpu_h100 --device cuda --max-gflops 0 \
        --role draft=llama-68m --role verify=llama-7b --batches 1,4,8,16,32,48 --prefill 32,64,128

(``--max-gflops`` skips shapes too slow for a CPU; 0 lifts the limit, which paper-size models need.)

The LM head is not timed: the FLOPs model counts decoder-block matrix multiplies only (zhu2025
eqs 11-14, after FlexGen), so the timed module is the decoder stack that those FLOPs describe.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import hardware, paths, timing
from .host import cpu_name
from .plotting import MARKERS, write_csv
from .kv_cache_arg import cache_kw

RUNTIME_MODEL = "T = c1*F*b + c2"


# ----------------------------------------------------------------------------------------------
# Architectures and their FLOPs.

@dataclass(frozen=True)
class Architecture:
    """A LLaMA-style decoder: ``layers`` blocks of width ``hidden`` with an FFN of width ``ffn``.

    Attention is full multi-head (as many key/value heads as query heads), which is what the
    FLOPs model assumes (W_Q, W_K, W_V, W_O all ``hidden x hidden``).
    """
    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    vocab: int = 32000

    def __post_init__(self):
        for key in ("layers", "hidden", "ffn", "heads", "vocab"):
            v = getattr(self, key)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"Architecture.{key} must be an integer >= 1, got {v!r}")
        if self.hidden % self.heads:
            raise ValueError(f"Architecture.hidden ({self.hidden}) must be a multiple of heads ({self.heads})")


# LLaMA-family shapes (HF configs; full multi-head attention). The ``-2l`` entry keeps the
# per-layer shape of TinyLlama-1.1B with 2 of its 22 layers: it has the matrix sizes of the real
# model but fits this CPU's time budget.
ARCHITECTURES = {a.name: a for a in (
    Architecture("llama-68m", 2, 768, 3072, 12),
    Architecture("llama-1.1b", 22, 2048, 5632, 32),
    Architecture("llama-1.1b-2l", 2, 2048, 5632, 32),
    Architecture("llama-7b", 32, 4096, 11008, 32),
    Architecture("llama-13b", 40, 5120, 13824, 40),
)}


def architecture(spec: str) -> Architecture:
    """An architecture by name (see ``ARCHITECTURES``) or as ``name:layers:hidden:ffn:heads``."""
    if spec in ARCHITECTURES:
        return ARCHITECTURES[spec]
    parts = spec.split(":")
    if len(parts) == 5:
        try:
            return Architecture(parts[0], *(int(p) for p in parts[1:]))
        except ValueError as e:
            raise ValueError(f"architecture {spec!r}: {e}") from None
    raise ValueError(f"unknown architecture {spec!r}: use one of {sorted(ARCHITECTURES)} "
                     "or name:layers:hidden:ffn:heads")


def decoder_flops(layers: int, hidden: int, ffn: int, new_tokens, context):
    """Matrix-multiply FLOPs of one decoder forward pass of one sequence.

    ``new_tokens`` = q tokens attend to ``context`` = c cached tokens and to themselves; per block:
    Q, K, V, O projections ``8 q h^2``, scores and weighted values ``4 q (c + q) h``, FFN
    ``4 q h h_ffn`` (two matrices, as zhu2025 eqs 11-14 count them). A product of an ``a x b`` and a
    ``b x c`` matrix costs ``2abc``. Vectorised over ``new_tokens`` and ``context``.
    """
    q = np.asarray(new_tokens, dtype=float)
    c = np.asarray(context, dtype=float)
    if np.any(q < 0) or np.any(c < 0):
        raise ValueError("new_tokens and context must be >= 0")
    return 4.0 * layers * hidden * q * (2 * hidden + c + q + ffn)


def arch_flops(arch: Architecture, new_tokens, context):
    return decoder_flops(arch.layers, arch.hidden, arch.ffn, new_tokens, context)


# ----------------------------------------------------------------------------------------------
# Timing.

def build_model(arch: Architecture, device: str = "cpu", dtype=None, seed: int = 0):
    """The decoder stack (``LlamaModel``, no LM head) of ``arch`` with random weights, in eval mode."""
    import torch
    from transformers import LlamaConfig, LlamaModel

    dtype = dtype or (torch.float16 if device.startswith("cuda") else torch.float32)
    cfg = LlamaConfig(vocab_size=arch.vocab, hidden_size=arch.hidden, intermediate_size=arch.ffn,
                      num_hidden_layers=arch.layers, num_attention_heads=arch.heads,
                      num_key_value_heads=arch.heads, max_position_embeddings=8192)
    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaModel(cfg)
    return model.to(dtype=dtype).eval()


def random_cache(model, batch: int, context: int, device: str = "cpu", generator=None):
    """A KV cache of ``context`` random tokens per sequence: cheap to build, and runtime does not
    depend on the cached values (a prefill of a 16 x 2048 batch would take minutes on a CPU)."""
    import torch
    from transformers import DynamicCache
    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    dtype = next(model.parameters()).dtype
    cache = DynamicCache(config=cfg)
    shape = (batch, cfg.num_key_value_heads, context, head_dim)
    for layer in range(cfg.num_hidden_layers):
        k = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
        v = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
        cache.update(k, v, layer)
    return cache


def time_pass(model, batch: int, new_tokens: int, context: int, device: str = "cpu",
              repeats: int = 3, warmup: int = 1, seed: int = 0) -> list[float]:
    """Wall-clock seconds of ``repeats`` forward passes of ``batch`` x ``new_tokens`` tokens (``timing.samples``).

    With ``context > 0`` the pass attends to a KV cache of that many tokens, cut back to ``context``
    after every pass so each timed pass sees the same cache length.
    """
    import torch
    if batch < 1 or new_tokens < 1 or context < 0 or repeats < 1 or warmup < 0:
        raise ValueError("need batch >= 1, new_tokens >= 1, context >= 0, repeats >= 1, warmup >= 0")
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (batch, new_tokens), generator=g).to(device)
    cache = random_cache(model, batch, context, device, g) if context else None

    def once():
        with timing.stopwatch(device) as t:
            model(input_ids=ids, **cache_kw(model, cache), use_cache=context > 0)
        if cache is not None:
            cache.crop(-new_tokens)     # drop the tokens this pass appended
        return t.seconds

    with torch.inference_mode():
        return timing.samples(once, repeats, warmup).tolist()


def grid(batches, prefill_lengths, decode_contexts, decode_tokens=1):
    """The (phase, batch, new_tokens, context) shapes to time: prefills and decodes at each batch size."""
    shapes = [("prefill", b, s, 0) for s in prefill_lengths for b in batches]
    shapes += [("decode", b, decode_tokens, c) for c in decode_contexts for b in batches]
    return shapes


def measure(arch: Architecture, shapes, role: str = "", device: str = "cpu", repeats: int = 3,
            warmup: int = 1, seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """Time ``arch`` on every shape; one row per shape with its FLOPs and runtimes.

    ``runtime_s`` is the fastest of the repeats (``timing``: the least disturbed estimate on a shared
    machine); the median and max are kept too.
    """
    from tqdm.auto import tqdm
    model = build_model(arch, device, seed=seed)
    rows = []
    for phase, b, q, c in tqdm(shapes, desc=f"{role or 'model'} {arch.name}", disable=not progress):
        t = timing.summary(time_pass(model, b, q, c, device, repeats, warmup, seed))
        rows.append(dict(role=role, architecture=arch.name, phase=phase, batch=b, new_tokens=q, context=c,
                         flops_per_seq=float(arch_flops(arch, q, c)), runtime_s=t["seconds"],
                         runtime_median_s=t["median"], runtime_max_s=t["max"], repeats=t["runs"]))
    del model
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# Fitting.

def fit_runtime(flops, batch, runtime) -> dict:
    """Least-squares fit of eq (17), ``T = c1 F b + c2``; returns c1, c2, R² and the point count.

    Non-negative least squares: a negative time per FLOP or a negative overhead means nothing, and
    noisy timings of a tiny model could otherwise produce one. F*b is scaled to O(1) before solving.
    """
    from scipy.optimize import nnls
    x = np.asarray(flops, float) * np.asarray(batch, float)
    y = np.asarray(runtime, float)
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError("fit_runtime needs at least two points with different F*b")
    scale = float(np.abs(x).max())
    A = np.column_stack([x / scale, np.ones_like(x)])
    (a, c2), _ = nnls(A, y)
    c1 = a / scale
    A = np.column_stack([x, np.ones_like(x)])
    return dict(c1=float(c1), c2=float(c2), r2=r_squared(y, A @ np.array([c1, c2])), points=int(x.size))


def r_squared(y, pred) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` (1.0 for a constant ``y`` fitted exactly)."""
    y = np.asarray(y, float)
    ss_res = float(((y - np.asarray(pred, float)) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else float("nan")
    return 1.0 - ss_res / ss_tot


def fit_roles(df: pd.DataFrame) -> dict:
    """One fit of eq (17) per role over all its measured shapes (prefill and decode together)."""
    return {role: fit_runtime(g["flops_per_seq"], g["batch"], g["runtime_s"]) for role, g in df.groupby("role", sort=False)}


def fit_quality(measurements: pd.DataFrame, profile: hardware.Profile) -> pd.DataFrame:
    """R² of the profile's fit of eq (17) over all shapes and per phase, for each measured role."""
    rows = []
    for role, g in measurements.groupby("role", sort=False):
        c = profile.coefficients(role)
        row = dict(role=role, architecture=g.architecture.iloc[0], c1=c["c1"], c2=c["c2"], points=len(g))
        for phase, h in [("all", g)] + list(g.groupby("phase")):
            row[f"r2_{phase}"] = r_squared(h.runtime_s, c["c1"] * h.flops_per_seq * h.batch + c["c2"])
        rows.append(row)
    return pd.DataFrame(rows)


def plot_fit(measurements: pd.DataFrame, profile: hardware.Profile, roles=("draft", "verify")):
    """Runtime against batch size (a) and against FLOPs per sequence (b), measured and fitted (zhu2025 Fig 5's
    layout), one row of panels per role; returns the figure and the plotted data.

    Prefill shapes, as in that figure; the lines are the profile's fit of eq (17) over all measured shapes
    of the role.
    """
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(roles), 2, figsize=(11, 3.6 * len(roles)), squeeze=False)
    frames = []
    for row, role in zip(axes, roles):
        c = profile.coefficients(role)
        d = measurements[(measurements.role == role) & (measurements.phase == "prefill")].copy()
        d["fitted_s"] = c["c1"] * d.flops_per_seq * d.batch + c["c2"]
        arch = d.architecture.iloc[0]
        # (a): the three prefill lengths measured at the most batch sizes
        lengths = d.groupby("new_tokens").batch.nunique().sort_values(kind="stable").index[-3:]
        for k, (q, g) in enumerate(d[d.new_tokens.isin(lengths)].groupby("new_tokens")):
            tag = f"{g.flops_per_seq.iloc[0] / 1e9:.1f} GFLOPs"
            line, = row[0].plot(g.batch, g.fitted_s, label=f"{tag} (Fitted)")
            row[0].plot(g.batch, g.runtime_s, MARKERS[k], color=line.get_color(), label=f"{tag} (Measured)")
        row[0].set(xlabel="Batch size", ylabel="Model runtime (s)", title=f"(a) {role}: {arch}")
        # (b): the three largest batch sizes measured at three or more lengths
        batches = [b for b, g in d.groupby("batch") if len(g) >= 3][-3:]
        for k, b in enumerate(batches):
            g = d[d.batch == b].sort_values("flops_per_seq")
            line, = row[1].plot(g.flops_per_seq / 1e9, g.fitted_s, label=f"Batch size={b} (Fitted)")
            row[1].plot(g.flops_per_seq / 1e9, g.runtime_s, MARKERS[k], color=line.get_color(),
                        label=f"Batch size={b} (Measured)")
        row[1].set(xlabel="GFLOPs per sequence (F)", ylabel="Model runtime (s)", title=f"(b) {role}: {arch}")
        for ax in row:
            ax.legend(fontsize="x-small")
        frames.append(d)
    fig.tight_layout()
    return fig, pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------------------------
# Writing the profile.

def device_description(device: str) -> str:
    if device.startswith("cuda"):
        import torch
        return f"cuda: {torch.cuda.get_device_name(torch.device(device))}"
    return f"cpu: {cpu_name()}"


def memory_bytes(device: str) -> float | None:
    """Memory of the timed device (GPU memory, or the machine's RAM for the CPU)."""
    if device.startswith("cuda"):
        import torch
        return float(torch.cuda.get_device_properties(torch.device(device)).total_memory)
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def build_profile(name: str, fits: dict, archs: dict, device: str, csv_name: str, threads: int | None,
                  dtype: str, repeats: int, command: str) -> dict:
    """A profile dict (schema of :mod:`specedge.hardware`) with one runtime model per role."""
    import torch
    import transformers
    desc = device_description(device)
    dev = {"description": desc + (f", {threads} thread(s)" if threads else "")}
    mem = memory_bytes(device)
    if mem:
        dev["memory_bytes"] = mem
    runtime = {}
    for role, f in fits.items():
        a = archs[role]
        runtime[role] = {
            "model": RUNTIME_MODEL,
            "unit": "c1 in s/FLOP, c2 in s",
            "description": f"{a.name} (J={a.layers}, h1={a.hidden}, h2={a.ffn}, {a.heads} heads), decoder stack, {dtype}",
            "c1": f["c1"], "c2": f["c2"],
            "fit": {"r2": round(f["r2"], 6), "points": f["points"], "architecture": a.name},
        }
    return {
        "name": name,
        "source": f"measured on this machine by `{command}` (fastest of {repeats} timed passes per shape, "
                  "random weights); raw data in " + csv_name,
        "description": "Measured runtime coefficients of eq (17) per model role; links and paper constants "
                       "are not measured (a notebook takes them from its paper's profile).",
        "measured": {"device": desc, "date": _dt.date.today().isoformat(), "dtype": dtype,
                     "threads": threads or 0, "torch": str(torch.__version__),
                     "transformers": str(transformers.__version__), "csv": csv_name},
        "devices": {"local": dev},
        "links": {},
        "runtime": runtime,
    }


def measurements_path(name: str):
    return paths.PROFILES / f"{name}_measurements.csv"


def load_measurements(name: str) -> pd.DataFrame:
    """The raw measurements committed with a measured profile."""
    path = measurements_path(name)
    if not path.exists():
        raise FileNotFoundError(f"no measurements for profile {name!r} ({path}); run "
                                f"`python -m specedge.profiling --name {name}`")
    return pd.read_csv(path)


def _ints(text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def _shown(path):
    try:
        return path.relative_to(paths.ROOT)
    except ValueError:
        return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Time transformer forward passes and fit T = c1*F*b + c2.")
    ap.add_argument("--name", required=True, help="profile name: writes data/profiles/<name>.yaml and _measurements.csv")
    ap.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1, ... (default cpu)")
    ap.add_argument("--role", action="append", default=None, metavar="ROLE=ARCH",
                    help="model per runtime role, e.g. draft=llama-68m (repeatable; default: "
                         "draft=llama-68m verify=llama-1.1b-2l)")
    ap.add_argument("--batches", type=_ints, default=[1, 2, 4, 8, 16])
    ap.add_argument("--prefill", type=_ints, default=[32, 64, 128, 256], help="prefill lengths")
    ap.add_argument("--contexts", type=_ints, default=[128, 512, 2048], help="KV-cache lengths of the decode shapes")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="CPU threads (default 1: steadier timings)")
    ap.add_argument("--max-gflops", type=float, default=100.0,
                    help="skip shapes whose pass needs more than this many GFLOPs (F x b); 0: no limit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    import torch
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: torch sees no CUDA device here")
    if not args.device.startswith("cuda"):
        if args.threads < 1:
            ap.error("--threads must be >= 1")
        torch.set_num_threads(args.threads)
    roles = args.role or ["draft=llama-68m", "verify=llama-1.1b-2l"]
    archs = {}
    for r in roles:
        if "=" not in r:
            ap.error(f"--role expects ROLE=ARCH, got {r!r}")
        role, spec = r.split("=", 1)
        try:
            archs[role] = architecture(spec)
        except ValueError as e:
            ap.error(str(e))

    frames = []
    for role, arch in archs.items():
        shapes = [s for s in grid(args.batches, args.prefill, args.contexts)
                  if not args.max_gflops or s[1] * arch_flops(arch, s[2], s[3]) <= args.max_gflops * 1e9]
        frames.append(measure(arch, shapes, role, args.device, args.repeats, 1, args.seed, not args.no_progress))
    df = pd.concat(frames, ignore_index=True)
    fits = fit_roles(df)
    flat = [role for role, f in fits.items() if not f["c1"] > 0]
    if flat:
        ap.exit(2, f"{ap.prog}: error: the {', '.join(flat)} timings do not grow with FLOPs x batch "
                   "(fitted c1 = 0): the shapes are too small to rise above timing noise; widen --batches "
                   "or --prefill, or raise --repeats. Nothing was written.\n")
    csv = write_csv(df, measurements_path(args.name))
    dtype = "float16" if args.device.startswith("cuda") else "float32"
    command = "python -m specedge.profiling " + " ".join(argv if argv is not None else sys.argv[1:])
    prof = build_profile(args.name, fits, archs, args.device, csv.name,
                         None if args.device.startswith("cuda") else args.threads, dtype, args.repeats, command)
    out = hardware.save_profile(prof)
    for role, f in fits.items():
        print(f"{role:>8} {archs[role].name}: c1 = {f['c1']:.4g} s/FLOP, c2 = {f['c2']:.4g} s, "
              f"R^2 = {f['r2']:.4f} ({f['points']} shapes)")
    print(f"wrote {_shown(out)} and {_shown(csv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def loopback_rtt(payload: int = 1024, repeats: int = 50) -> float:
    """Round trip (s) of a ``payload``-byte message over a localhost TCP socket (``timing.fastest``)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def echo():
        conn, _ = srv.accept()
        with conn:
            while True:
                data = conn.recv(payload)
                if not data:
                    return
                conn.sendall(data)

    threading.Thread(target=echo, daemon=True).start()
    cli = socket.create_connection(srv.getsockname())
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    msg = b"x" * payload

    def once():
        with timing.stopwatch() as t:
            cli.sendall(msg)
            got = 0
            while got < payload:
                got += len(cli.recv(payload))
        return t.seconds

    try:
        return timing.fastest(once, repeats)
    finally:
        cli.close()
        srv.close()


def pass_times(model, context: int = 64, new_tokens=(1, 5), repeats: int = 30) -> dict:
    """Seconds of one forward pass (batch 1) with ``context`` cached tokens, for each ``new_tokens``.

    The fastest of the repeats is kept (``specedge.timing``); measuring steps (zheng2025's) write it to a profile
    that notebooks read instead of timing while they run.
    """
    return {q: timing.summary(time_pass(model, 1, q, context, repeats=repeats, warmup=3))["seconds"]
            for q in new_tokens}


def _timed(fn, prompts):
    t0 = time.perf_counter()
    outs = [fn(p) for p in prompts]
    return outs, time.perf_counter() - t0


def speculative_speedups(draft, target, prompts, gammas, new_tokens: int = 32, *, tokenizer=None, bound=None,
                         progress=print) -> pd.DataFrame:
    """Speculative decoding's measured speedup over the target alone per draft length, on this machine.

    Per domain of ``prompts`` (domain -> token-id prompts) the same prompts are decoded greedily by the target alone
    (AR, the γ = 0 row), by the draft alone (for the cost ratio c = draft / target seconds per token) and by
    ``decoding.speculative`` at each γ of ``gammas``: tokens, wall seconds, tokens per second, the speedup over AR, the
    rounds' i.i.d. acceptance α (``sampling.iid_acceptance``), τ, ``bound(γ, α, c)`` (column ``analytic``) and
    whether the outputs equal AR's. In float32 raises if a speculative output differs from the target's greedy AR
    output; in bfloat16 a (γ + 1)-token pass rounds differently from a one-token step, so ``identical_to_ar`` records
    it instead."""
    from . import decoding, sampling
    import torch

    rows, exact = [], next(target.parameters()).dtype == torch.float32
    with torch.inference_mode():
        for d, ps in prompts.items():
            ar, t_ar = _timed(lambda p: decoding.autoregressive(target, p, new_tokens, tokenizer=tokenizer), ps)
            _, t_dr = _timed(lambda p: decoding.autoregressive(draft, p, new_tokens, tokenizer=tokenizer), ps)
            n = sum(len(g.tokens) for g in ar)
            c = t_dr / t_ar
            base = dict(domain=d, prompts=len(ps), new_tokens=new_tokens, c=c)
            rows.append(dict(base, gamma=0, tokens=n, seconds=t_ar, tokens_per_s=n / t_ar,
                             speedup=1.0))
            for g in gammas:
                sd, t_sd = _timed(lambda p: decoding.speculative(draft, target, p, new_tokens, gamma=g,
                                                                 tokenizer=tokenizer), ps)
                same = [torch.equal(a.tokens, s.tokens) for a, s in zip(ar, sd)]
                if exact and not all(same):       # float32: greedy SD is greedy AR, token for token
                    raise AssertionError(f"{d} prompt {same.index(False)} γ={g}: speculative output differs from greedy AR")
                acc = [x for s in sd for x in s.accepted]
                dra = [x for s in sd for x in s.drafted]
                alpha = sampling.iid_acceptance(acc, dra)
                b = float("nan") if bound is None else bound(g, alpha, c)
                rows.append(dict(base, gamma=g, tokens=n, seconds=t_sd, tokens_per_s=n / t_sd,
                                 speedup=t_ar / t_sd, alpha=round(alpha, 4),
                                 tau=round(sampling.mean_acceptance_length(acc), 4), analytic=round(b, 4),
                                 identical_to_ar=all(same)))
                progress(f"{d} γ={g}: {n / t_sd:.2f} tok/s, {t_ar / t_sd:.2f}x AR (bound {b:.2f}x, α {alpha:.3f}, c {c:.3f})")
    return pd.DataFrame(rows)
