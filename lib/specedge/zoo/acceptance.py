"""Teacher-forced acceptance of every draft/target pair of the zoo on held-out text.

For a draft q and a target p at temperature T, Leviathan et al. (2023, Theorem 3.5 / Corollary
3.6) give the probability that one drafted token is accepted as
``alpha = E_x[ sum_v min(p_T(v | x), q_T(v | x)) ] = 1 - E[TV(p_T, q_T)]``; at T = 0 (greedy) it is
the agreement of the two argmaxes. Here the expectation runs over the positions of the held-out
reference continuations (teacher forcing: the prefix is the reference text, not model samples),
which is the cheap, deterministic way to size the zoo; the decoding loops in ``specedge.decoding``
measure acceptance on real speculative rounds.
"""
from __future__ import annotations

import pandas as pd
import torch

from .. import paths, sampling
from . import DOMAINS, DRAFTS, TARGETS, eval_prompts, eval_records, load_model, load_tokenizer

TEMPERATURES = (0.0, 0.5, 1.0)


@torch.no_grad()
def completion_logits(model, tokenizer, records: list[dict], max_len: int = 256) -> list[torch.Tensor]:
    """Logits predicting each completion token of each record (prompt + completion fed at once)."""
    out = []
    for r in records:
        p = tokenizer(r["prompt"], add_special_tokens=False)["input_ids"]
        c = tokenizer(r["completion"], add_special_tokens=False)["input_ids"]
        ids = (p + c)[-max_len:]
        n_c = min(len(c), len(ids) - 1)
        logits = model(input_ids=torch.tensor([ids])).logits[0]
        out.append(logits[len(ids) - 1 - n_c: len(ids) - 1].float())
    return out


def pair_acceptance(q_logits: list[torch.Tensor], p_logits: list[torch.Tensor],
                    temperatures=TEMPERATURES) -> dict[float, float]:
    """Mean over positions of ``sum_v min(p, q)`` per temperature (argmax agreement at T=0)."""
    q, p = torch.cat(q_logits), torch.cat(p_logits)
    return {t: float(sampling.acceptance_probability(sampling.probs(p, t), sampling.probs(q, t)).mean())
            for t in temperatures}


def table(n_records: int = 40, temperatures=TEMPERATURES, drafts=DRAFTS, targets=TARGETS) -> pd.DataFrame:
    """Tidy table: draft, target, domain, temperature, alpha, positions."""
    tok = load_tokenizer()
    recs = {d: eval_records(d, n_records) for d in DOMAINS}
    logits = {name: {d: completion_logits(load_model(name), tok, recs[d]) for d in DOMAINS}
              for name in (*targets, *drafts)}
    rows = []
    for t in targets:
        for dr in drafts:
            for d in DOMAINS:
                n = sum(len(x) for x in logits[t][d])
                for temp, a in pair_acceptance(logits[dr][d], logits[t][d], temperatures).items():
                    rows.append({"draft": dr, "target": t, "domain": d, "temperature": temp,
                                 "alpha": round(a, 4), "positions": n})
    return pd.DataFrame(rows)


def main() -> pd.DataFrame:
    torch.set_num_threads(2)
    df = table()
    path = paths.ZOO / "acceptance.csv"
    df.to_csv(path, index=False, lineterminator="\n")
    pivot = df.pivot_table(index=["target", "draft"], columns="temperature", values="alpha", aggfunc="mean")
    print(pivot.round(3).to_string())
    print(f"range over pairs x domains x T: {df.alpha.min():.3f} .. {df.alpha.max():.3f}; wrote {path}")
    return df


def encoded_prompts(domain: str, n: int, tokenizer=None) -> list[list[int]]:
    """The first ``n`` held-out prompts of ``domain`` as token ids (no special tokens, as trained)."""
    tok = tokenizer or load_tokenizer()
    return [tok(p, add_special_tokens=False)["input_ids"] for p in eval_prompts(domain, n)]


def live_table(drafts=DRAFTS, targets=TARGETS, domains=DOMAINS, temperatures=(0.0, 1.0),
               gammas=range(1, 9), n_prompts: int = 8, max_new_tokens: int = 48, seed: int = 0,
               progress: bool = True) -> pd.DataFrame:
    """Acceptance measured on real speculative rounds (``decoding.speculative_batch``).

    One row per draft x target x domain x temperature x γ, with the counts and the two metrics of
    ``specedge.sampling``: draft acceptance rate (accepted / drafted) and mean acceptance length
    (1 + accepted / rounds, counting the bonus token). All prompts of a domain run as one batch.
    """
    from tqdm.auto import tqdm

    from .. import decoding
    tok = load_tokenizer()
    prompts = {d: encoded_prompts(d, n_prompts, tok) for d in domains}
    models = {name: load_model(name) for name in (*targets, *drafts)}
    grid = [(t, dr, d, temp, g) for t in targets for dr in drafts for d in domains
            for temp in temperatures for g in gammas]
    rows = []
    for t, dr, d, temp, g in tqdm(grid, desc="speculative decoding", disable=not progress):
        gens = decoding.speculative_batch(models[dr], models[t], prompts[d], max_new_tokens, gamma=int(g),
                                          temperature=float(temp), seed=seed)
        accepted = [a for gen in gens for a in gen.accepted]
        drafted = [n for gen in gens for n in gen.drafted]
        rows.append(dict(draft=dr, target=t, domain=d, temperature=float(temp), gamma=int(g),
                         rounds=len(accepted), drafted=int(sum(drafted)), accepted=int(sum(accepted)),
                         acceptance_rate=sampling.acceptance_rate(accepted, drafted),
                         mean_acceptance_length=sampling.mean_acceptance_length(accepted)))
    return pd.DataFrame(rows)
