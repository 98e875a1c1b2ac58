"""The real pair's acceptance card and the traces built on it: an offline measuring step.

``python -m specedge.experiments.realpair_card [teacher|live|all]`` loads Qwen2.5-Coder-0.5B (draft) and 1.5B
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
Built on these files elsewhere: the real serving runs (``python -m specedge.experiments.realpair_serving``
-> ``serving_runs.csv``), the twins' input (``realpair_twin``), WISP's twin on the pair (``li2026_realpair``),
the γ sweep (``realpair_gamma``), the tables of docs/real-pair.md (``python -m specedge.experiments.realpair_readme``).
"""
from __future__ import annotations

import argparse
import time

import pandas as pd
import torch

from .. import decoding, host, paths, sampling
from ..solvers import zheng2025
from ..zoo import DOMAINS, eval_records, load_pair
from ..zoo.acceptance import completion_logits, pair_acceptance
from ..zoo.realpair import DRAFT, TARGET

OUT = paths.DATA / "realpair"
TRACES = paths.DATA / "traces" / "realpair_traces.csv.gz"
INSTRUCT = {"chat-instruct": "chat", "code-instruct": "code"}
ALL_DOMAINS = (*DOMAINS, *INSTRUCT)
KS = (1, 3, 32, 320, 3_200, 32_000)


def records(domain: str, n: int, tokenizer) -> list[dict]:
    """``n`` held-out records of ``domain``; instruct domains wrap the zoo record in the chat template."""
    if domain not in INSTRUCT:
        return eval_records(domain, n)
    out = []
    for r in eval_records(INSTRUCT[domain], n):
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": r["prompt"]}], tokenize=False,
                                               add_generation_prompt=True)
        out.append(dict(r, domain=domain, prompt=prompt))
    return out


def _cut(logits: list[torch.Tensor], n: int) -> list[torch.Tensor]:
    return [x[:, :n] for x in logits]      # padded matrix rows beyond the tokenizer are never tokens


def teacher(draft, target, tok, n_records: int = 6, max_len: int = 192, progress=print) -> tuple[pd.DataFrame, pd.DataFrame]:
    n_vocab = len(tok)
    card, topk = [], []
    for d in ALL_DOMAINS:
        t0 = time.perf_counter()
        recs = records(d, n_records, tok)
        q = _cut(completion_logits(draft, tok, recs, max_len), n_vocab)
        p = _cut(completion_logits(target, tok, recs, max_len), n_vocab)
        positions = sum(len(x) for x in p)
        for temp, a in pair_acceptance(q, p).items():
            card.append(dict(domain=d, temperature=temp, alpha=round(a, 4), positions=positions))
        for row in zheng2025.topk_alpha(q, p, (*KS, n_vocab), temperatures=(0.0, 1.0)).to_dict("records"):
            topk.append(dict(domain=d, **row))
        progress(f"teacher {d}: {positions} positions in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(card), pd.DataFrame(topk)


def live(draft, target, tok, n_prompts: int = 4, max_new_tokens: int = 32, gammas=(4,),
         temperatures=(0.0, 1.0), seed: int = 0, progress=print, checkpoint=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Real speculative rounds per domain × T × γ; ``checkpoint(table, traces)`` is called after each domain."""
    table, traces = [], []
    for d in ALL_DOMAINS:
        prompts = [tok(r["prompt"], add_special_tokens=False)["input_ids"] for r in records(d, n_prompts, tok)]
        for temp in temperatures:
            for g in gammas:
                t0 = time.perf_counter()
                gens = decoding.speculative_batch(draft, target, prompts, max_new_tokens, gamma=g,
                                                  temperature=temp, seed=seed, tokenizer=tok)
                acc = [a for gen in gens for a in gen.accepted]
                dra = [n for gen in gens for n in gen.drafted]
                ppa = sampling.per_position_acceptance(acc, dra)
                table.append(dict(domain=d, temperature=temp, gamma=g, prompts=len(prompts), rounds=len(acc),
                                  drafted=int(sum(dra)), accepted=int(sum(acc)),
                                  acceptance_rate=round(sampling.acceptance_rate(acc, dra), 4),
                                  tau=round(sampling.mean_acceptance_length(acc), 4),
                                  iid_alpha=round(sampling.iid_acceptance(acc, dra), 4),
                                  **{f"p{i + 1}": round(float(x), 4) for i, x in enumerate(ppa)}))
                for k, gen in enumerate(gens):
                    traces.append(decoding.traces_frame(gen.rounds, domain=d, temperature=temp, gamma=g, prompt=k))
                progress(f"live {d} T={temp} γ={g}: τ = {table[-1]['tau']:.2f} in {time.perf_counter() - t0:.0f} s")
        if checkpoint is not None:
            checkpoint(pd.DataFrame(table), pd.concat(traces, ignore_index=True))
    return pd.DataFrame(table), pd.concat(traces, ignore_index=True)


def _write_live(table: pd.DataFrame, traces: pd.DataFrame) -> None:
    table.to_csv(FILES["live_acceptance"], index=False, lineterminator="\n", float_format="%.6g")
    decoding.save_traces(traces, TRACES)


FILES = {"acceptance_teacher": OUT / "acceptance_teacher.csv", "topk_acceptance": OUT / "topk_acceptance.csv",
         "live_acceptance": OUT / "live_acceptance.csv", "traces": TRACES, "serving_runs": OUT / "serving_runs.csv"}


def load(name: str) -> pd.DataFrame:
    """A committed measurement of the real pair (one of ``FILES``); a missing file names its command."""
    if name not in FILES:
        raise ValueError(f"unknown real-pair measurement {name!r}; known: {sorted(FILES)}")
    path = FILES[name]
    if not path.exists():
        step = {"acceptance_teacher": "realpair_card teacher", "topk_acceptance": "realpair_card teacher",
                "serving_runs": "realpair_serving"}.get(name, "realpair_card live")
        raise FileNotFoundError(f"{path} is missing: it is committed with the repository; `make realpair` then "
                                f"`python -m specedge.experiments.{step}` measures it again")
    return decoding.load_traces(path) if name == "traces" else pd.read_csv(path)


def pooled_topk() -> pd.DataFrame:
    """α(K) per target temperature over every domain's positions (position-weighted), as ``topk_alpha`` gives it."""
    t = load("topk_acceptance")
    t = t.assign(weighted=t.alpha * t.positions)
    g = t.groupby(["temperature", "K"], as_index=False)[["weighted", "positions"]].sum()
    return g.assign(alpha=g.weighted / g.positions).drop(columns="weighted")[["temperature", "K", "alpha", "positions"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.experiments.realpair_card", description=__doc__.split("\n")[0])
    ap.add_argument("step", nargs="?", choices=("teacher", "live", "all"), default="all")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gammas", type=int, nargs="+", default=[4], help="draft lengths of the live step")
    ap.add_argument("--dtype", choices=host.DTYPES, default="auto",
                    help="both models' weights; auto: bfloat16 where this CPU multiplies it natively, else float32")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    draft, target, tok = load_pair(DRAFT, TARGET, dtype=host.torch_dtype(args.dtype))
    OUT.mkdir(parents=True, exist_ok=True)
    if args.step in ("teacher", "all"):
        card, topk = teacher(draft, target, tok)
        card.to_csv(OUT / "acceptance_teacher.csv", index=False, lineterminator="\n", float_format="%.6g")
        topk.to_csv(OUT / "topk_acceptance.csv", index=False, lineterminator="\n", float_format="%.6g")
        print(card.pivot_table(index="domain", columns="temperature", values="alpha").round(3).to_string())
    if args.step in ("live", "all"):
        table, _ = live(draft, target, tok, gammas=tuple(args.gammas), checkpoint=_write_live)
        print(table.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
