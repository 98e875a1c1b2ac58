"""Benchmark (a script, not a test): our speculative loop vs transformers' assisted generation vs AR.

    .venv/bin/python benchmarks/bench_decoding.py                       # draft-xs + target-l, γ = 1, 2, 4 (~1 min)
    .venv/bin/python benchmarks/bench_decoding.py --draft NAME --target NAME --gamma 3 5
    .venv/bin/python benchmarks/bench_decoding.py --synthetic           # no zoo needed
    .venv/bin/python benchmarks/bench_decoding.py --widen 2048 5632 8 --dtype bfloat16   # paper-size cost (~5 min)

All methods decode greedily, the same prompts, the same number of new tokens, in this process, on
this CPU, with ``--threads`` torch threads (default 1: the models are small and the machine is
shared). Methods run interleaved for ``--repeats`` repetitions; each method's tokens/s comes from its
fastest repetition (the least disturbed by other processes), and ratios are more robust than absolute
numbers. Two clocks: this process's CPU time (primary: on a shared machine wall time also counts the
time other processes hold the cores) and wall time. transformers' assisted generation gets the same pair and the same constant γ
(``num_assistant_tokens=γ``, ``num_assistant_tokens_schedule="constant"``, confidence-threshold early
stop disabled), set on the assistant's generation config, which is where transformers reads them.

Printed: tokens/s per method, our speedup over our AR loop next to the analytic
(1 - α^{γ+1}) / ((1 - α)(1 + γ c)) (zheng2025 eq (11)) from the measured per-token acceptance α
(``sampling.iid_acceptance``: the α of the i.i.d. model, not the draft acceptance rate) and cost
ratio c = (draft forward time) / (target forward time), both single-token cached forwards timed
here, alternating the models as the loop does; and a round cost model with the measured passes,
E(α, γ)·t_AR / (t_verify(γ + 1) + γ·t_draft), where t_AR is our AR loop's time per token: on a CPU
a (γ + 1)-token verification costs more than one step, and alternating two models costs each of them
cache misses that an AR loop over one model does not pay; the outputs of all methods are checked to be identical. Results: ``build/bench_decoding.csv``
(long format: one row per quantity).

``--dtype`` (default ``auto``: ``specedge.host.auto_dtype``, bfloat16 where the CPU multiplies it natively,
float32 elsewhere) sets both models' weights. Before the runs, the cost of a k-token cached target pass is
timed for k = 1 .. max γ + 1 (``verify_curve``); the γ the round cost model picks from that curve and each
γ's α is reported as ``gamma_chosen``. Greedy speculative decoding emits exactly the autoregressive tokens
in float32; in bfloat16 a (γ + 1)-token pass rounds differently from a one-token step, so a near-tie can
flip: every run records, per prompt, the first position where our loop's tokens leave AR's, the target's
top-2 logit margin there (in AR's own one-token step) and the rank of our token in that step. Every row
records the CPU model, its ISA, whether it multiplies bfloat16 natively, the dtype and the threads.

``--widen H I L`` embeds the target in a Llama of hidden size H, MLP size I and L layers that computes
the same logits (:func:`specedge.zoo.net2net.widen`): the zoo pair's acceptance at the cost of a ~0.4 B-parameter
target. With ``--dtype bfloat16`` (the target's weights; the draft stays float32) a (γ + 1)-token
verification then costs about one decoding step on this CPU, as on an accelerator: the regime the
analytic speedup describes. With the tiny float32 zoo target, framework overhead dominates instead.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import pandas as pd
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.utils import logging as hf_logging

import report
from specedge import decoding, host, paths, sampling
from specedge.solvers import zheng2025


# CPU time of this process is the primary clock: the machine is shared, and CPU time is what our code
# spends, unlike wall time, which also counts the time other processes hold the cores.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def synthetic_pair(vocab: int = 4096, hidden: int = 256, layers: int = 6, eps: float = 0.02, seed: int = 0):
    """A random target whose layers after the first barely move the residual stream (scaled by ``eps``),
    and a draft made of its embedding, first layer and head: acceptance ≈ 0.8 at ``eps = 0.02``, cost
    ratio ≈ 1/``layers``. For running the benchmark without the zoo."""
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=3 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=1024, tie_word_embeddings=False)
    target = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(10)  # peaked distributions, like a trained model's
        for layer in target.model.layers[1:]:
            layer.self_attn.o_proj.weight.mul_(eps)
            layer.mlp.down_proj.weight.mul_(eps)
    draft_config = copy.deepcopy(config)
    draft_config.num_hidden_layers = 1
    draft = LlamaForCausalLM(draft_config).eval()
    draft.load_state_dict({k: v for k, v in target.state_dict().items()
                           if not k.startswith("model.layers.") or k.startswith("model.layers.0.")})
    prompts = [torch.randint(0, vocab, (24,), generator=torch.Generator().manual_seed(i)) for i in range(4)]
    return "synthetic-1L", "synthetic-6L", draft, target, prompts


def zoo_pair(draft_name: str | None, target_name: str | None, n_prompts: int, prompt_tokens: int):
    from specedge import zoo
    from specedge.zoo import corpus

    draft_name = draft_name or zoo.DRAFTS[0]
    target_name = target_name or zoo.TARGETS[-1]  # smallest draft, largest target: the lowest cost ratio
    draft, target, tokenizer = zoo.load_pair(draft_name, target_name)
    prompts = []
    for i in range(n_prompts):
        domain = corpus.DOMAINS[i % len(corpus.DOMAINS)]
        text = zoo.eval_prompts(domain, i // len(corpus.DOMAINS) + 1)[-1]
        prompts.append(torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"][-prompt_tokens:]))
    return draft_name, target_name, draft.eval(), target.eval(), prompts


def forward_times(draft, target, context: torch.Tensor, gamma: int, reps: int) -> tuple[float, float, float]:
    """Median CPU times of a draft single-token step, a target single-token step and a target
    (γ + 1)-token verification pass, all cached after ``context``. The three are timed in turn in
    every repetition, as the decoding loops alternate the models (and share the CPU caches)."""
    runners = {"draft": decoding.CausalLM(draft), "target": decoding.CausalLM(target)}
    calls = [("draft", 1), ("target", 1), ("target", gamma + 1)]
    times = {c: [] for c in calls}
    with torch.inference_mode():
        for r in runners.values():
            r.feed(context)
        for _ in range(reps):
            for name, k in calls:
                t0 = time.process_time()
                runners[name].feed(context[-k:], keep=k)
                times[name, k].append(time.process_time() - t0)
                runners[name].crop(len(context))
    return tuple(statistics.median(times[c]) for c in calls)


def verify_curve(target, context: torch.Tensor, ks, reps: int) -> dict[int, float]:
    """Median CPU time of a k-token cached target pass after ``context``, for each k in ``ks`` (``target``: a
    model, or an empty runner with ``feed``/``crop``, e.g. ``specedge.llamacpp.LlamaCppLM``)."""
    runner, out = (target if hasattr(target, "feed") else decoding.CausalLM(target)), {}
    with torch.inference_mode():
        runner.feed(context)
        for k in ks:
            times = []
            for _ in range(reps):
                t0 = time.process_time()
                runner.feed(context[-k:], keep=k)
                times.append(time.process_time() - t0)
                runner.crop(len(context))
            out[k] = statistics.median(times)
    return out


def divergence(target, prompt: torch.Tensor, ours: torch.Tensor, ar: torch.Tensor) -> dict:
    """Where our loop's tokens first leave AR's (-1: nowhere), the target's top-2 logit margin at that
    position in AR's own one-token step, and the rank of our token there (0: AR's choice)."""
    diff = (ours != ar).nonzero()
    if not len(diff):
        return dict(first_divergence=-1, top2_margin=float("nan"), our_token_rank=0)
    j = int(diff[0])
    with torch.inference_mode():
        logits = decoding.CausalLM(target).feed(torch.cat([prompt, ar[:j]]))[-1].float()
    top2 = logits.topk(2).values
    rank = int((logits > logits[int(ours[j])]).sum())
    return dict(first_divergence=j, top2_margin=float(top2[0] - top2[1]), our_token_rank=rank)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draft")
    ap.add_argument("--target")
    ap.add_argument("--synthetic", action="store_true", help="random synthetic pair instead of the zoo")
    ap.add_argument("--gamma", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--prompt-tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, choices=(0, 1),
                    help="1: every method decodes the first prompt once before the timed repetitions (0 for large "
                         "models, whose passes dwarf any first-call cost: the models' single passes of "
                         "forward_times warm them)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--forward-reps", type=int, default=100, help="repetitions of the timed single passes")
    ap.add_argument("--widen", type=int, nargs=3, metavar=("HIDDEN", "INTERMEDIATE", "LAYERS"),
                    help="embed the target in a larger Llama with the same logits (specedge.zoo.net2net.widen)")
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="both models' weights; auto: bfloat16 where this CPU multiplies it natively, else float32")
    ap.add_argument("--draft-int8", action="store_true",
                    help="the draft's Linear layers (output layer included) as dynamic int8 (torch.ao "
                         "quantize_dynamic): a cheaper draft with a slightly different distribution; greedy "
                         "speculative decoding stays exact because the target is untouched")
    ap.add_argument("--out", default=str(paths.BUILD / "bench_decoding.csv"),
                    help="the CSV; {isa} and {dtype} are replaced by this host's ISA and the dtype (one file per host class)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()  # assisted generation warns about its own internal generate() call

    use_zoo = not args.synthetic and paths.ZOO.is_dir() and any(paths.ZOO.iterdir())
    if use_zoo:
        dname, tname, draft, target, prompts = zoo_pair(args.draft, args.target, args.prompts, args.prompt_tokens)
    else:
        print("zoo checkpoints not found (or --synthetic): using the synthetic random pair")
        dname, tname, draft, target, prompts = synthetic_pair()
    if args.widen:
        from specedge.zoo import net2net
        target = net2net.widen(target, *args.widen)
        tname += "-widened-{}x{}x{}".format(*args.widen)
    dtype = host.resolve_dtype(args.dtype)
    target, draft = target.to(getattr(torch, dtype)), draft.to(getattr(torch, dtype))
    if args.draft_int8:
        from torch.ao.quantization import quantize_dynamic
        draft = quantize_dynamic(draft, {torch.nn.Linear}, dtype=torch.qint8)
        dname += "-int8"
    n = args.new_tokens
    for model in (draft, target):  # decode exactly n tokens in every method: no EOS stop
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0

    context = torch.cat([prompts[0], prompts[0]])[: args.prompt_tokens + n // 2]
    print(f"pair: draft {dname} ({sum(p.numel() for p in draft.parameters()) / 1e6:.2f} M params), "
          f"target {tname} ({sum(p.numel() for p in target.parameters()) / 1e6:.2f} M params); "
          f"{len(prompts)} prompts x {n} new tokens, {args.threads} thread(s), {dtype} "
          f"({args.dtype}; {host.cpu_name()}, {host.isa()})")

    hostrow = dict(draft=dname, target=tname, **report.host_columns(dtype, args.threads), prompts=len(prompts),
                   new_tokens=n)
    curve = verify_curve(target, context, range(1, max(args.gamma) + 2), args.forward_reps)
    print("k-token target pass (CPU time, median): " + ", ".join(f"{k}: {t * 1e3:.1f} ms" for k, t in curve.items()))
    rows = [dict(hostrow, gamma=k - 1, quantity="t_verify_curve_s", value=t) for k, t in curve.items()]
    predicted = {}
    for gamma in args.gamma:
        t_draft, t_target, t_verify = forward_times(draft, target, context, gamma, args.forward_reps)
        c = t_draft / t_target
        def ours_ar(p):
            return decoding.autoregressive(target, p, n).tokens

        sd_runs = []  # our loop's generations; the first len(prompts) are the first repetition's

        def ours_sd(p):
            out = decoding.speculative(draft, target, p, n, gamma=gamma)
            sd_runs.append(out)
            return out.tokens

        def hf_assisted(p):
            cfg = draft.generation_config
            cfg.num_assistant_tokens, cfg.num_assistant_tokens_schedule = gamma, "constant"
            cfg.assistant_confidence_threshold = 0.0
            out = target.generate(p[None], attention_mask=torch.ones_like(p[None]), assistant_model=draft,
                                  do_sample=False, max_new_tokens=n, num_assistant_tokens=gamma,
                                  num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
            return out[0, len(p):]

        def hf_greedy(p):
            out = target.generate(p[None], attention_mask=torch.ones_like(p[None]), do_sample=False,
                                  max_new_tokens=n)
            return out[0, len(p):]

        methods = {"ours speculative": ours_sd, "transformers assisted": hf_assisted,
                   "ours autoregressive": ours_ar, "transformers greedy": hf_greedy}
        best = {(m, clock): float("inf") for m in methods for clock in CLOCKS}
        outputs = {}
        with torch.inference_mode():
            if args.warmup:
                for m, fn in methods.items():
                    fn(prompts[0])
            for rep in range(args.repeats):  # the first repetition's outputs are the ones compared
                order = list(methods)[rep % len(methods):] + list(methods)[: rep % len(methods)]
                for m in order:
                    start = {clock: f() for clock, f in CLOCKS.items()}
                    out = [methods[m](p) for p in prompts]
                    for clock, f in CLOCKS.items():
                        best[m, clock] = min(best[m, clock], f() - start[clock])
                    outputs.setdefault(m, out)
        tokens = {m: sum(len(o) for o in outputs[m]) for m in methods}
        same = all(torch.equal(a, b) for m in methods for a, b in zip(outputs[m], outputs["ours autoregressive"]))
        div = [divergence(target, p, o, a) for p, o, a in
               zip(prompts, outputs["ours speculative"], outputs["ours autoregressive"])]
        rounds = [r for out in sd_runs[args.warmup: args.warmup + len(prompts)] for r in out.rounds]
        accepted, drafted = [r.accepted for r in rounds], [r.drafted for r in rounds]
        rate = sampling.acceptance_rate(accepted, drafted)
        alpha = sampling.iid_acceptance(accepted, drafted)  # the α of eq (12), not the rate
        tps = {(m, clock): tokens[m] / best[m, clock] for m, clock in best}
        measured = {clock: tps["ours speculative", clock] / tps["ours autoregressive", clock] for clock in CLOCKS}
        analytic = float(zheng2025.speedup(gamma, min(max(alpha, 1e-9), 1 - 1e-9), c))  # open (0, 1)
        # Cost model with the measured passes: a round costs one (γ + 1)-token verification plus γ draft
        # steps (timed alternating, as in the loop), against one step of our AR loop per token.
        t_ar = best["ours autoregressive", "cpu"] / tokens["ours autoregressive"]
        e_tokens = float(sampling.expected_tokens_per_round(alpha, gamma))
        analytic_v = e_tokens * t_ar / (t_verify + gamma * t_draft)
        predicted[gamma] = e_tokens * t_ar / (curve[gamma + 1] + gamma * t_draft)  # the curve's pass: γ's choice
        print(f"\ngamma = {gamma}: forward passes (CPU time, median): draft {t_draft * 1e3:.2f} ms, target "
              f"{t_target * 1e3:.2f} ms (c = {c:.3f}), target on {gamma + 1} tokens {t_verify * 1e3:.2f} ms")
        print(f"draft acceptance rate {rate:.3f}, i.i.d. acceptance α = {alpha:.3f}, "
              f"mean acceptance length {sampling.mean_acceptance_length(accepted):.2f} (eq (12) with α: "
              f"{float(sampling.expected_tokens_per_round(alpha, gamma)):.2f}); outputs identical across "
              f"methods: {same}")
        print(f"{'method':<24}{'tok/CPU-s':>10}{'vs assisted':>13}{'vs our AR':>11}{'wall tok/s':>12}"
              f"{'vs assisted':>13}")
        for m in methods:
            print(f"{m:<24}{tps[m, 'cpu']:>10.1f}{tps[m, 'cpu'] / tps['transformers assisted', 'cpu']:>12.2f}x"
                  f"{tps[m, 'cpu'] / tps['ours autoregressive', 'cpu']:>10.2f}x{tps[m, 'wall']:>12.1f}"
                  f"{tps[m, 'wall'] / tps['transformers assisted', 'wall']:>12.2f}x")
        print(f"speedup of our loop over our AR (CPU time): measured {measured['cpu']:.2f}x, analytic eq (11) "
              f"{analytic:.2f}x (α = {alpha:.3f}, c = {c:.3f}): {measured['cpu'] / analytic:.0%} of analytic")
        print(f"with the measured passes instead (verification = {t_verify / t_target:.2f} target steps, "
              f"an AR-loop step = {t_ar / t_target:.2f} alternating target steps) the round cost model "
              f"predicts {analytic_v:.2f}x: {measured['cpu'] / analytic_v:.0%} reached")
        for i, d in enumerate(div):
            if d["first_divergence"] >= 0:
                print(f"prompt {i}: our tokens leave AR's at position {d['first_divergence']} (target's top-2 "
                      f"margin there {d['top2_margin']:.4g}, our token AR's choice #{d['our_token_rank'] + 1})")
        base = dict(hostrow, gamma=gamma)
        rows += [dict(base, quantity=f"tokens_per_{clock}_s[{m}]", value=tps[m, clock]) for m, clock in tps]
        rows += [dict(base, quantity=q, value=v) for q, v in [
            ("ours_vs_assisted_cpu", tps["ours speculative", "cpu"] / tps["transformers assisted", "cpu"]),
            ("ours_vs_assisted_wall", tps["ours speculative", "wall"] / tps["transformers assisted", "wall"]),
            ("draft_acceptance_rate", rate), ("iid_acceptance_alpha", alpha),
            ("mean_acceptance_length", sampling.mean_acceptance_length(accepted)), ("cost_ratio_c", c), ("t_draft_forward_s", t_draft),
            ("t_target_forward_s", t_target), ("t_verify_forward_s", t_verify),
            ("speedup_measured_cpu", measured["cpu"]), ("speedup_measured_wall", measured["wall"]),
            ("speedup_analytic", analytic), ("measured_over_analytic", measured["cpu"] / analytic),
            ("t_ar_step_s", t_ar), ("speedup_cost_model_measured_passes", analytic_v), ("outputs_identical", float(same))]]
        rows += [dict(base, quantity=f"{q}[prompt {i}]", value=v) for i, d in enumerate(div) for q, v in d.items()]
    chosen = max(predicted, key=predicted.get)
    print(f"\nγ chosen by the round cost model from the measured pass curve: {chosen} "
          f"(predicted {predicted[chosen]:.2f}x over AR)")
    rows += [dict(hostrow, gamma=chosen, quantity="gamma_chosen", value=chosen),
             dict(hostrow, gamma=chosen, quantity="speedup_predicted_at_chosen", value=predicted[chosen])]
    frame = pd.DataFrame(rows)
    out = Path(args.out.format(isa=host.isa().lower().replace("-", ""), dtype=dtype))
    report.save(frame, out)


if __name__ == "__main__":
    main()
