"""Benchmark (a script, not a test): the real pair on llama.cpp, autoregressive against its speculative decoding.

    .venv/bin/python benchmarks/bench_llamacpp.py                      # the shipped Q4_K_M GGUFs (after make realpair)
    .venv/bin/python benchmarks/bench_llamacpp.py --weights f32        # the same weights dequantized to F32 (written once)

The anchor rows beside ``bench_decoding.py``'s: the same pair (Qwen2.5-Coder 0.5B drafting for 1.5B), the same two
prompts (the zoo's first held-out prompt of its first two domains, in the pair's tokenizer, the last
``--prompt-tokens`` tokens), the same number of new tokens, greedy, one thread, CPU time of this process as the
primary clock (wall time beside it). Both loops are ``specedge.decoding``'s (``autoregressive``, ``speculative``)
on the llama.cpp backend (``specedge.llamacpp``): a run here differs from ``bench_decoding.py``'s only in the
runtime and the weight format. ``--weights q4_k_m`` runs the GGUF files ``make realpair`` joins; ``--weights f32``
their F32 copies (``gguf_files.dequantize_gguf``: the same numbers specedge's float32 models hold), written next to
them once (~8 GB). Methods run interleaved, each method's speed from its fastest of ``--repeats`` repetitions. Per γ
the rows say the tokens per CPU-second of both loops, SD ÷ AR, the acceptance, whether SD's tokens equal AR's,
and the median CPU time of a one-token and of a (γ + 1)-token cached target pass. Host columns as every benchmark's
(``report.host_columns``: CPU, Python, load) plus the ISA class; the file is one per host class and weight format:
``figures/bench/llamacpp_realpair_<isa>_<weights>.csv``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_decoding  # noqa: E402
import report  # noqa: E402

from specedge import decoding, host, llamacpp, paths, sampling  # noqa: E402
from specedge.gguf_files import dequantize_gguf  # noqa: E402
from specedge.zoo import realpair  # noqa: E402

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
WEIGHTS = ("q4_k_m", "f32")
LABEL = {"q4_k_m": "Q4_K_M", "f32": "F32"}


def gguf_files(weights: str, root: Path) -> dict[str, Path]:
    """The pair's GGUF files in ``weights``; the F32 copies are written from the Q4_K_M files when absent."""
    out = {}
    for name in (realpair.DRAFT, realpair.TARGET):
        q = root / f"{name}.gguf"
        if not q.exists():
            raise SystemExit(f"error: {q} not found: run `make realpair` first (it joins the pinned GGUF files)")
        if weights == "f32":
            f = root / f"{name}-f32.gguf"
            if not f.exists():
                print(f"writing {f.name} (every tensor of {q.name} dequantized to F32)")
                dequantize_gguf(q, f)
            q = f
        out[name] = q
    return out


def prompts(gguf: Path, n: int, prompt_tokens: int) -> list[torch.Tensor]:
    """``bench_decoding.py``'s prompts for the real pair, in the tokenizer the GGUF file carries."""
    from transformers import AutoTokenizer

    from specedge import zoo
    from specedge.zoo import corpus

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    out = []
    for i in range(n):
        text = zoo.eval_prompts(corpus.DOMAINS[i % len(corpus.DOMAINS)], i // len(corpus.DOMAINS) + 1)[-1]
        out.append(torch.tensor(tok(text, add_special_tokens=False)["input_ids"][-prompt_tokens:]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", choices=WEIGHTS, default="q4_k_m")
    ap.add_argument("--gamma", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--forward-reps", type=int, default=3)
    ap.add_argument("--models", default=str(paths.MODELS), help="where make realpair put the GGUF files")
    ap.add_argument("--out", default="figures/bench/llamacpp_realpair_{isa}_{weights}.csv",
                    help="the CSV; {isa} and {weights} are replaced by this host's ISA class and the weight format")
    args = ap.parse_args()
    for g in args.gamma:
        sampling.check_gamma(g)
    if not llamacpp.available():
        raise SystemExit(f"error: {llamacpp.MISSING}")
    files = gguf_files(args.weights, Path(args.models))
    ps = prompts(Path(args.models) / f"{realpair.TARGET}.gguf", args.prompts, args.prompt_tokens)
    n, n_ctx = args.new_tokens, args.prompt_tokens + args.new_tokens + max(args.gamma) + 8
    draft = llamacpp.LlamaCppLM(files[realpair.DRAFT], n_ctx=n_ctx, threads=args.threads)
    target = llamacpp.LlamaCppLM(files[realpair.TARGET], n_ctx=n_ctx, threads=args.threads)
    label = LABEL[args.weights]
    print(f"llama.cpp, {label}: {len(ps)} prompts x {n} new tokens, {args.threads} thread(s); "
          f"{host.cpu_name()}, {host.isa()}")
    hostrow = {"draft": realpair.DRAFT, "target": realpair.TARGET, "runtime": "llama.cpp", "llama_cpp_python": _version(),
               **report.host_columns(label, args.threads), "prompts": len(ps), "new_tokens": n}
    context = torch.cat([ps[0], ps[0]])[: args.prompt_tokens + n // 2]
    target.reset()
    curve = bench_decoding.verify_curve(target, context, range(1, max(args.gamma) + 2), args.forward_reps)
    print("k-token target pass (CPU time, median): " + ", ".join(f"{k}: {t * 1e3:.0f} ms" for k, t in curve.items()))
    rows = [dict(hostrow, gamma=k - 1, quantity="t_verify_curve_s", value=t) for k, t in curve.items()]

    def ar(p):
        target.reset()
        return decoding.autoregressive(target, p, n).tokens, None

    def sd(gamma):
        def run(p):
            draft.reset()
            target.reset()
            out = decoding.speculative(draft, llamacpp.LlamaCppVerifier(target), p, n, gamma=gamma)
            return out.tokens, out
        return run

    methods = {"llama.cpp autoregressive": ar, **{f"llama.cpp speculative γ={g}": sd(g) for g in args.gamma}}
    best = {(m, c): float("inf") for m in methods for c in CLOCKS}
    outputs, gens = {}, {}
    for rep in range(args.repeats):
        order = list(methods)[rep % len(methods):] + list(methods)[: rep % len(methods)]
        for m in order:
            start = {c: f() for c, f in CLOCKS.items()}
            res = [methods[m](p) for p in ps]
            for c, f in CLOCKS.items():
                best[m, c] = min(best[m, c], f() - start[c])
            outputs.setdefault(m, [r[0] for r in res])
            gens.setdefault(m, [r[1] for r in res])
    tps = {(m, c): sum(len(o) for o in outputs[m]) / best[m, c] for m, c in best}
    a = "llama.cpp autoregressive"
    print(f"{'method':<30}{'tok/CPU-s':>10}{'vs AR':>8}{'wall tok/s':>12}{'acceptance':>12}{'tokens = AR':>13}")
    print(f"{a:<30}{tps[a, 'cpu']:>10.2f}{1:>7.2f}x{tps[a, 'wall']:>12.2f}")
    for g in args.gamma:
        m = f"llama.cpp speculative γ={g}"
        rounds = [r for gen in gens[m] for r in gen.rounds]
        acc, dr = [r.accepted for r in rounds], [r.drafted for r in rounds]
        same = all(torch.equal(x, y) for x, y in zip(outputs[m], outputs[a]))
        first = [int((x != y).nonzero()[0]) if not torch.equal(x, y) else -1 for x, y in zip(outputs[m], outputs[a])]
        rate = sampling.acceptance_rate(acc, dr)
        print(f"{m:<30}{tps[m, 'cpu']:>10.2f}{tps[m, 'cpu'] / tps[a, 'cpu']:>7.2f}x{tps[m, 'wall']:>12.2f}{rate:>12.3f}"
              f"{'yes' if same else 'no: ' + str(first):>13}")
        base = dict(hostrow, gamma=g)
        rows += [dict(base, quantity=q, value=v) for q, v in [
            ("tokens_per_cpu_s[llama.cpp speculative]", tps[m, "cpu"]),
            ("tokens_per_wall_s[llama.cpp speculative]", tps[m, "wall"]),
            ("tokens_per_cpu_s[llama.cpp autoregressive]", tps[a, "cpu"]),
            ("tokens_per_wall_s[llama.cpp autoregressive]", tps[a, "wall"]),
            ("speedup_measured_cpu", tps[m, "cpu"] / tps[a, "cpu"]), ("speedup_measured_wall", tps[m, "wall"] / tps[a, "wall"]),
            ("draft_acceptance_rate", rate), ("mean_acceptance_length", sampling.mean_acceptance_length(acc)),
            ("t_target_forward_s", curve[1]), ("t_verify_forward_s", curve[g + 1]), ("outputs_identical", float(same))]]
        rows += [dict(base, quantity=f"first_divergence[prompt {i}]", value=v) for i, v in enumerate(first)]
    report.save(rows, args.out.format(isa=host.isa().lower().replace("-", ""), weights=args.weights))


def _version() -> str:
    from importlib.metadata import version
    return version("llama_cpp_python")


if __name__ == "__main__":
    main()
