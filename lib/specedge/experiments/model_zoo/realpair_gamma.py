"""Which draft length γ wins per domain on the real pair: measured beside the analytic bound.

``python -m specedge.experiments.model_zoo.realpair_gamma`` (needs ``make realpair``; its times are committed, so run
it on an otherwise idle machine) decodes, per domain, the same prompts with
the target alone (AR), the draft alone (for c) and our speculative loop at γ = 1..5, greedy, one torch
thread, and writes ``data/realpair/gamma_sweep.csv``: per domain × γ the tokens per wall second, the
measured speedup over AR, the i.i.d. acceptance α of the rounds (``sampling.iid_acceptance``), the cost
ratio c = (draft s/token) / (target s/token) of the two AR runs, and zheng2025 eq (11)'s bound
(1 − α^{γ+1}) / ((1 − α)(1 + γc)). Every speculative output is checked token for token against AR.

The acceptance columns regenerate identically (greedy decoding is deterministic); the time columns are
wall-clock measurements and move from run to run (a few per cent on a quiet machine).
"""
from __future__ import annotations

import argparse

import pandas as pd
import torch

from ... import host, profiling
from ...solvers import zheng2025
from ...zoo.realpair import FILES, records

OUT = FILES["gamma_sweep"]
DOMAINS = ("sql", "qa")   # the highest and the lowest teacher-forced α of the pair (0.92, 0.63 at T = 0)
GAMMAS = (1, 2, 3, 4, 5)


def domain_prompts(tokenizer, domains=DOMAINS, n: int = 1, prompt_tokens: int = 48) -> dict[str, list[torch.Tensor]]:
    """``n`` held-out prompts per domain (``zoo.realpair.records``), cut to their last ``prompt_tokens`` ids."""
    return {d: [torch.tensor(tokenizer(r["prompt"], add_special_tokens=False)["input_ids"][-prompt_tokens:])
                for r in records(d, n, tokenizer)] for d in domains}


def eq11_bound(gamma: int, alpha: float, c: float) -> float:
    """zheng2025 eq (11)'s speedup at the rounds' α (kept inside (0, 1)) and cost ratio c."""
    return float(zheng2025.speedup(gamma, min(max(alpha, 1e-9), 1 - 1e-9), c))


def sweep(draft, target, prompts: dict[str, list], gammas=GAMMAS, new_tokens: int = 32, tokenizer=None,
          progress=print) -> pd.DataFrame:
    """The sweep of the module docstring (``profiling.speculative_speedups`` with eq (11)'s bound) over ``prompts``."""
    return profiling.speculative_speedups(draft, target, prompts, gammas, new_tokens, tokenizer=tokenizer, bound=eq11_bound,
                                          progress=progress)


def winners(table: pd.DataFrame) -> pd.DataFrame:
    """Per domain: the γ ≥ 1 with the highest measured speedup and the γ eq (11)'s bound picks."""
    sd = table[table.gamma > 0]
    best = sd.loc[sd.groupby("domain", sort=False).speedup.idxmax()]
    bound = sd.loc[sd.groupby("domain", sort=False).analytic.idxmax()]
    return pd.DataFrame({"domain": best.domain.to_numpy(), "gamma_measured": best.gamma.to_numpy(),
                         "speedup_measured": best.speedup.to_numpy(), "gamma_analytic": bound.gamma.to_numpy(),
                         "speedup_analytic": bound.analytic.to_numpy()})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.experiments.model_zoo.realpair_gamma", description=__doc__.split("\n")[0])
    ap.add_argument("--domains", nargs="+", default=list(DOMAINS))
    ap.add_argument("--gammas", type=int, nargs="+", default=list(GAMMAS))
    ap.add_argument("--prompts", type=int, default=1, help="prompts per domain")
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="both models' weights; auto: bfloat16 where this CPU multiplies it natively, else float32")
    args = ap.parse_args(argv)
    from ...zoo import load_pair
    from ...zoo.realpair import DRAFT, TARGET

    torch.set_num_threads(args.threads)
    draft, target, tok = load_pair(DRAFT, TARGET, dtype=host.torch_dtype(args.dtype))
    table = sweep(draft, target, domain_prompts(tok, args.domains, args.prompts), args.gammas, args.new_tokens,
                  tokenizer=tok)
    table.assign(**host.describe(host.resolve_dtype(args.dtype), args.threads)).to_csv(args.out, index=False, lineterminator="\n", float_format="%.6g")
    print(winners(table).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
