"""The real pair's shapes on an accelerator, in a few minutes: verification cost against k, and SD against AR.

    .venv/bin/python benchmarks/gpu_check.py                    # CUDA, the real pair's shapes, bfloat16 (~2 min)
    .venv/bin/python benchmarks/gpu_check.py --device cpu --tiny  # the same script on small shapes (its test)
    make gpu-check

Random weights in the real shapes (Qwen2.5 1.5B: hidden 1536, MLP 8960, 28 layers; 0.5B: 896, 4864, 24
layers; vocabulary 151,936, output layer untied) are enough for timing: a pass costs the same whatever the
weights. For each model: the median time of a cached forward over k new tokens after a 64-token prefix, k = 1
.. 8 (the device synchronised around each pass). Then, with the real pair's teacher-forced acceptance α per
domain at T = 0 (``data/realpair/acceptance_teacher.csv``, committed), the round cost model's speedup of
greedy SD over AR per γ, E(α, γ) · t(1) / (t_target(γ + 1) + γ · t_draft(1)) (zheng2025 eq (12) for E),
and the γ it picks. Writes ``figures/bench/gpu_check_<device>.csv`` (one row per model × k, then one per
domain × γ) with the device's name, dtype and torch version. Needs no network and no weights.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import pandas as pd
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

import report
from specedge import decoding, host, paths, sampling

SHAPES = {  # name: (hidden, intermediate, layers, heads, kv heads)
    "qwen2.5-coder-1.5b": (1536, 8960, 28, 12, 2),
    "qwen2.5-coder-0.5b": (896, 4864, 24, 14, 2),
}
VOCAB = 151_936
TINY = {"target": (64, 128, 2, 4, 2), "draft": (32, 64, 1, 4, 2)}


def model(shape, vocab: int, dtype, device):
    hidden, inter, layers, heads, kv = shape
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=512,
                      tie_word_embeddings=False)
    torch.manual_seed(0)
    return Qwen2ForCausalLM(cfg).to(device=device, dtype=dtype).eval()


def pass_times(m, vocab: int, device, ks=range(1, 9), prefix: int = 64, reps: int = 10) -> dict[int, float]:
    """Median seconds of a cached forward over k new tokens after ``prefix`` tokens, per k."""
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    ids = torch.randint(0, vocab, (prefix + max(ks),), generator=torch.Generator().manual_seed(1)).to(device)
    runner, out = decoding.CausalLM(m), {}
    with torch.inference_mode():
        runner.feed(ids[:prefix])
        runner.feed(ids[prefix:prefix + 1])          # warm the kernels once
        runner.crop(prefix)
        for k in ks:
            times = []
            for _ in range(reps):
                sync()
                t0 = time.perf_counter()
                runner.feed(ids[prefix:prefix + k], keep=k)
                sync()
                times.append(time.perf_counter() - t0)
                runner.crop(prefix)
            out[k] = statistics.median(times)
    return out


def round_model(curves: dict[str, dict[int, float]], alphas: pd.Series, gammas=range(1, 8)) -> pd.DataFrame:
    """Speedup of greedy SD over AR per domain and γ from the pass curves (the module docstring's model)."""
    t, d = curves["target"], curves["draft"]
    rows = [dict(domain=dom, gamma=g, alpha=a, speedup=float(sampling.expected_tokens_per_round(a, g)) * t[1]
                 / (t[g + 1] + g * d[1]))
            for dom, a in alphas.items() for g in gammas if g + 1 in t]
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto")
    ap.add_argument("--tiny", action="store_true", help="small shapes (for a CPU run of the script itself)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", default=None, help="default: figures/bench/gpu_check_<device>.csv")
    args = ap.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here (use --device cpu --tiny to run the script on a CPU)")
    dtype = host.resolve_dtype(args.dtype, args.device)
    vocab = 512 if args.tiny else VOCAB
    shapes = TINY if args.tiny else {"target": SHAPES["qwen2.5-coder-1.5b"], "draft": SHAPES["qwen2.5-coder-0.5b"]}
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else host.cpu_name()
    curves, rows = {}, []
    for role, shape in shapes.items():
        curves[role] = pass_times(model(shape, vocab, getattr(torch, dtype), args.device), vocab, args.device,
                                  reps=args.reps)
        rows += [dict(kind="pass", model=role, k=k, seconds=s, over_one_step=s / curves[role][1])
                 for k, s in curves[role].items()]
        print(f"{role}: " + ", ".join(f"k={k} {s * 1e3:.2f} ms" for k, s in curves[role].items()), flush=True)
    teacher = pd.read_csv(paths.DATA / "realpair" / "acceptance_teacher.csv")
    alphas = teacher[teacher.temperature == 0].set_index("domain").alpha
    sd = round_model(curves, alphas)
    best = sd.loc[sd.groupby("domain").speedup.idxmax()]
    for r in best.itertuples():
        print(f"{r.domain}: α {r.alpha:.3f}, best γ {r.gamma}: {r.speedup:.2f}x over AR (round cost model)")
    frame = pd.concat([pd.DataFrame(rows), sd.assign(kind="round model")], ignore_index=True).assign(
        device=name, tiny=args.tiny, **report.host_columns(dtype, torch.get_num_threads()))
    report.save(frame, Path(args.out or paths.FIGURES / "bench" / f"gpu_check_{args.device.split(':')[0]}.csv"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
