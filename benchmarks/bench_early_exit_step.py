"""Benchmark (a script, not a test): the cost of training venkatesha2025's early-exit adapters on a target,
estimated from timed training steps on a few exits (``early_exit.train(exits=...)``), not from a training run.

    .venv/bin/python benchmarks/bench_early_exit_step.py --target qwen2.5-coder-1.5b

Per step, the frozen target runs once over the batch (no gradient) and every trained exit adds its adapter,
the final norm, the LM head over every position and the KL to the final exit, forward and backward (the head
is frozen, but the gradient flows through it to the adapter). So a step costs t_target + k · t_exit for k
exits; two timings (``--exits`` small and large, after one untimed warm-up step each) give both terms, and
the estimate for the zoo recipe (``early_exit.build``: two exits per layer, 2L − 1 adapters, batch 4 × 128
tokens, ``--steps`` steps) is steps · (t_target + (2L − 1) · t_exit) · 4 / batch. Writes one CSV row per timing and the estimate.
"""
from __future__ import annotations

import argparse
import time

import pandas as pd
import torch

import report
from specedge import early_exit, host, paths, zoo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="qwen2.5-coder-1.5b")
    ap.add_argument("--exits", type=int, nargs=2, default=[1, 3], help="two numbers of trained exits to time")
    ap.add_argument("--batch", type=int, default=1, help="sequences per timed step")
    ap.add_argument("--recipe-batch", type=int, default=4,
                    help="the zoo recipe's batch (early_exit.build): the estimate scales the timed step by "
                         "recipe-batch / batch (a step's work is linear in its tokens)")
    ap.add_argument("--context", type=int, default=128, help="the zoo recipe's context")
    ap.add_argument("--steps", type=int, default=200, help="the zoo recipe's steps, for the estimate")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="the target's weights; auto: bfloat16 where this CPU multiplies it natively, else float32")
    ap.add_argument("--out", default=str(paths.FIGURES / "bench" / "early_exit_step_realpair.csv"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    target = zoo.load_model(args.target, host.torch_dtype(args.dtype)).eval()
    ee = early_exit.EarlyExits(target, per_layer=2)
    n_layers = len(target.model.layers)
    g = torch.Generator().manual_seed(0)
    vocab = int(target.config.vocab_size)
    batches = iter(lambda: torch.randint(0, vocab, (args.batch, args.context), generator=g), None)
    rows = []
    for k in args.exits:
        exits = list(range(1, k + 1))        # the earliest exits (every exit costs the same head)
        early_exit.train(ee, batches, steps=1, exits=exits, progress=False)     # warm-up
        t0 = time.perf_counter()
        early_exit.train(ee, batches, steps=1, exits=exits, progress=False)
        rows.append(dict(exits=k, step_s=time.perf_counter() - t0))
        print(f"{k} exit(s): one step {rows[-1]['step_s']:.1f} s", flush=True)
    (k1, t1), (k2, t2) = [(r["exits"], r["step_s"]) for r in rows]
    t_exit = (t2 - t1) / (k2 - k1)
    t_target = max(t1 - k1 * t_exit, 0.0)
    adapters = 2 * n_layers - 1
    per_step = (t_target + adapters * t_exit) * args.recipe_batch / args.batch
    hours = args.steps * per_step / 3600
    print(f"per step: target pass {t_target:.1f} s + {t_exit:.1f} s per exit; {adapters} adapters (two exits per layer "
          f"of {n_layers}), batch {args.recipe_batch}: {per_step:.0f} s per step, {args.steps} steps ≈ {hours:.1f} h on {args.threads} thread(s)")
    base = dict(target=args.target, batch=args.batch, recipe_batch=args.recipe_batch, context=args.context,
                **report.host_columns(host.resolve_dtype(args.dtype), args.threads), trainable_params=ee.trainable_parameters())
    frame = pd.DataFrame([dict(base, quantity=f"step_s[{r['exits']} exits]", value=r["step_s"]) for r in rows]
                         + [dict(base, quantity=q, value=v) for q, v in (
                             ("target_pass_s", t_target), ("per_exit_s", t_exit), ("adapters", adapters),
                             ("estimated_step_s_all_adapters", per_step), ("estimate_steps", args.steps),
                             ("estimated_hours", hours))])
    report.save(frame, args.out)


if __name__ == "__main__":
    main()
