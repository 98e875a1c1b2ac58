"""The real pair's acceptance card and the traces built on it: an offline measuring step.

``python -m specedge.experiments.model_zoo.realpair_card [teacher|live|all]`` loads Qwen2.5-Coder-0.5B (draft) and 1.5B
(target) as ``make realpair`` left them and writes small committed files under ``data/realpair/``; the
notebooks only read those files, so neither CI nor ``make figures`` needs the weights.

Domains: the zoo's six held-out domains as raw text continuation (exactly the zoo card's records), and
two in the format the pair was trained for (they are *Instruct* models): ``chat-instruct`` and
``code-instruct``, the zoo's chat and code records wrapped in the tokenizer's chat template (user turn =
the prompt, assistant turn = the reference completion).

``teacher``: teacher-forced over the reference completions (as ``zoo.acceptance``):
  ``acceptance_teacher.csv``  α = E[Σ_v min(p_T, q_T)] per domain at T = 0 / 0.5 / 1 (argmax agreement at 0);
  ``topk_acceptance.csv``     zheng2025's α(K) (eq 9: draft top-K renormalised at T = 1 against the target at
                              T = 0 / 1) per domain, K ∈ {1, 3, 32, 320, 3 200, 32 000, full}.
``live``: real speculative rounds (``decoding.speculative_batch``, one batch of prompts per domain):
  ``live_acceptance.csv``     per domain × T × γ: rounds, drafted, accepted, acceptance rate, τ (mean
                              acceptance length) and the per-position acceptance P(i | < i accepted);
  ``data/traces/realpair_traces.csv.gz``  every drafted position with its draft-logit statistics (WISP's
                              features) and outcome, the input of the predictor and the twins' acceptance.
Built on these files elsewhere: the real serving runs (``python -m specedge.experiments.serving_validation.realpair``
-> ``serving_runs.csv``), the twins' input (``serving.acceptance_sources``' ``realpair``), WISP's twin on the pair
(``experiments.li2026.realpair``), the γ sweep (``model_zoo.realpair_gamma``), the tables of docs/real-pair.md (``python tools/realpair_readme.py``).
"""
from __future__ import annotations

import argparse

import pandas as pd
import torch

from ... import decoding, host
from ...solvers import zheng2025
from ...zoo import load_pair
from ...zoo.acceptance import live_rounds, teacher_card
from ...zoo.realpair import ALL_DOMAINS, DRAFT, FILES, MEASURED, TARGET, TRACES, load, records

KS = (1, 3, 32, 320, 3_200, 32_000)


def teacher(draft, target, tok, n_records: int = 6, max_len: int = 192, progress=print) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``zoo.acceptance.teacher_card`` on ``n_records`` records of each of the pair's domains, with zheng2025's α(K)."""
    topk = lambda q, p: zheng2025.topk_alpha(q, p, (*KS, len(tok)), temperatures=(0.0, 1.0)).to_dict("records")
    return teacher_card(draft, target, tok, {d: records(d, n_records, tok) for d in ALL_DOMAINS}, max_len, extra=topk,
                        progress=progress)


def live(draft, target, tok, n_prompts: int = 4, max_new_tokens: int = 32, gammas=(4,),
         temperatures=(0.0, 1.0), seed: int = 0, progress=print, checkpoint=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``zoo.acceptance.live_rounds`` on ``n_prompts`` records of each of the pair's domains."""
    prompts = {d: [tok(r["prompt"], add_special_tokens=False)["input_ids"] for r in records(d, n_prompts, tok)]
               for d in ALL_DOMAINS}
    return live_rounds(draft, target, prompts, max_new_tokens, gammas, temperatures, seed=seed, tokenizer=tok,
                       progress=progress, checkpoint=checkpoint)


def _write_live(table: pd.DataFrame, traces: pd.DataFrame) -> None:
    table.to_csv(FILES["live_acceptance"], index=False, lineterminator="\n", float_format="%.6g")
    decoding.save_traces(traces, TRACES)


def pooled_topk() -> pd.DataFrame:
    """α(K) per target temperature over every domain's positions (position-weighted), as ``topk_alpha`` gives it."""
    t = load("topk_acceptance")
    t = t.assign(weighted=t.alpha * t.positions)
    g = t.groupby(["temperature", "K"], as_index=False)[["weighted", "positions"]].sum()
    return g.assign(alpha=g.weighted / g.positions).drop(columns="weighted")[["temperature", "K", "alpha", "positions"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.experiments.model_zoo.realpair_card", description=__doc__.split("\n")[0])
    ap.add_argument("step", nargs="?", choices=("teacher", "live", "all"), default="all")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gammas", type=int, nargs="+", default=[4], help="draft lengths of the live step")
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="both models' weights; auto: bfloat16 where this CPU multiplies it natively, else float32")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    draft, target, tok = load_pair(DRAFT, TARGET, dtype=host.torch_dtype(args.dtype))
    MEASURED.mkdir(parents=True, exist_ok=True)
    if args.step in ("teacher", "all"):
        card, topk = teacher(draft, target, tok)
        card.to_csv(FILES["acceptance_teacher"], index=False, lineterminator="\n", float_format="%.6g")
        topk.to_csv(FILES["topk_acceptance"], index=False, lineterminator="\n", float_format="%.6g")
        print(card.pivot_table(index="domain", columns="temperature", values="alpha").round(3).to_string())
    if args.step in ("live", "all"):
        table, _ = live(draft, target, tok, gammas=tuple(args.gammas), checkpoint=_write_live)
        print(table.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
