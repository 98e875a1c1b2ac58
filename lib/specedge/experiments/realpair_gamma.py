"""Which draft length γ wins per domain on the real pair: measured beside the analytic bound.

``python -m specedge.experiments.realpair_gamma`` (needs ``make realpair``; its times are committed, so run
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
import time

import pandas as pd
import torch

from .. import decoding, host, paths, sampling
from ..solvers import zheng2025

OUT = paths.DATA / "realpair" / "gamma_sweep.csv"
DOMAINS = ("sql", "qa")   # the highest and the lowest teacher-forced α of the pair (0.92, 0.63 at T = 0)
GAMMAS = (1, 2, 3, 4, 5)


def domain_prompts(tokenizer, domains=DOMAINS, n: int = 1, prompt_tokens: int = 48) -> dict[str, list[torch.Tensor]]:
    """``n`` held-out prompts per domain (``realpair_card.records``), cut to their last ``prompt_tokens`` ids."""
    from .realpair_card import records

    return {d: [torch.tensor(tokenizer(r["prompt"], add_special_tokens=False)["input_ids"][-prompt_tokens:])
                for r in records(d, n, tokenizer)] for d in domains}


def _timed(fn, prompts):
    t0 = time.perf_counter()
    outs = [fn(p) for p in prompts]
    return outs, time.perf_counter() - t0


def sweep(draft, target, prompts: dict[str, list], gammas=GAMMAS, new_tokens: int = 32, tokenizer=None,
          progress=print) -> pd.DataFrame:
    """The sweep of the module docstring over ``prompts`` (domain -> token-id prompts); γ = 0 rows are AR.
    In float32 raises if a speculative output differs from the target's greedy AR output; in bfloat16 a
    (γ + 1)-token pass rounds differently from a one-token step, so ``identical_to_ar`` records it instead."""
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
                bound = float(zheng2025.speedup(g, min(max(alpha, 1e-9), 1 - 1e-9), c))
                rows.append(dict(base, gamma=g, tokens=n, seconds=t_sd, tokens_per_s=n / t_sd,
                                 speedup=t_ar / t_sd, alpha=round(alpha, 4),
                                 tau=round(sampling.mean_acceptance_length(acc), 4), analytic=round(bound, 4),
                                 identical_to_ar=all(same)))
                progress(f"{d} γ={g}: {n / t_sd:.2f} tok/s, {t_ar / t_sd:.2f}x AR (bound {bound:.2f}x, α {alpha:.3f}, c {c:.3f})")
    return pd.DataFrame(rows)


def winners(table: pd.DataFrame) -> pd.DataFrame:
    """Per domain: the γ ≥ 1 with the highest measured speedup and the γ eq (11)'s bound picks."""
    sd = table[table.gamma > 0]
    best = sd.loc[sd.groupby("domain", sort=False).speedup.idxmax()]
    bound = sd.loc[sd.groupby("domain", sort=False).analytic.idxmax()]
    return pd.DataFrame({"domain": best.domain.to_numpy(), "gamma_measured": best.gamma.to_numpy(),
                         "speedup_measured": best.speedup.to_numpy(), "gamma_analytic": bound.gamma.to_numpy(),
                         "speedup_analytic": bound.analytic.to_numpy()})


def load(path=OUT) -> pd.DataFrame:
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: it is committed with the repository; `make realpair` then "
                                "`python -m specedge.experiments.realpair_gamma` measures it again")
    return pd.read_csv(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.experiments.realpair_gamma", description=__doc__.split("\n")[0])
    ap.add_argument("--domains", nargs="+", default=list(DOMAINS))
    ap.add_argument("--gammas", type=int, nargs="+", default=list(GAMMAS))
    ap.add_argument("--prompts", type=int, default=1, help="prompts per domain")
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="both models' weights; auto: bfloat16 where this CPU multiplies it natively, else float32")
    args = ap.parse_args(argv)
    from ..zoo import load_pair
    from ..zoo.realpair import DRAFT, TARGET

    torch.set_num_threads(args.threads)
    draft, target, tok = load_pair(DRAFT, TARGET, dtype=host.torch_dtype(args.dtype))
    table = sweep(draft, target, domain_prompts(tok, args.domains, args.prompts), args.gammas, args.new_tokens,
                  tokenizer=tok)
    table.assign(**host.describe(host.resolve_dtype(args.dtype), args.threads)).to_csv(args.out, index=False, lineterminator="\n", float_format="%.6g")
    print(winners(table).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
