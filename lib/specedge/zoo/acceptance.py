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

import dataclasses
import functools

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


@functools.lru_cache(maxsize=None)
def _cached_model(name: str):
    return load_model(name)


@functools.lru_cache(maxsize=None)
def _cached_prompts(domain: str, n: int) -> list[list[int]]:
    return encoded_prompts(domain, n)


@dataclasses.dataclass(frozen=True)
class LivePoint:
    """One cell of ``live_table``'s grid (a plain configuration for ``sweep.run``)."""
    draft: str
    target: str
    domain: str
    temperature: float
    gamma: int
    n_prompts: int
    max_new_tokens: int
    seed: int


def live_point(p: LivePoint) -> dict:
    """One row of ``live_table``: ``decoding.speculative_batch`` on the domain's prompts (one batch), on ONE
    torch thread (the rows do not depend on the process or worker that computes them: models and prompts
    are loaded once per process, each point seeds its own generator)."""
    from .. import decoding
    torch.set_num_threads(1)
    gens = decoding.speculative_batch(_cached_model(p.draft), _cached_model(p.target),
                                      _cached_prompts(p.domain, p.n_prompts), p.max_new_tokens,
                                      gamma=p.gamma, temperature=p.temperature, seed=p.seed)
    accepted = [a for gen in gens for a in gen.accepted]
    drafted = [n for gen in gens for n in gen.drafted]
    return dict(draft=p.draft, target=p.target, domain=p.domain, temperature=p.temperature, gamma=p.gamma,
                rounds=len(accepted), drafted=int(sum(drafted)), accepted=int(sum(accepted)),
                acceptance_rate=sampling.acceptance_rate(accepted, drafted),
                mean_acceptance_length=sampling.mean_acceptance_length(accepted))


def live_table(drafts=DRAFTS, targets=TARGETS, domains=DOMAINS, temperatures=(0.0, 1.0),
               gammas=range(1, 9), n_prompts: int = 8, max_new_tokens: int = 48, seed: int = 0,
               progress: bool = True, n_jobs: int | None = None) -> pd.DataFrame:
    """Acceptance measured on real speculative rounds (``decoding.speculative_batch``).

    One row per draft x target x domain x temperature x γ, with the counts and the two metrics of
    ``specedge.sampling``: draft acceptance rate (accepted / drafted) and mean acceptance length
    (1 + accepted / rounds, counting the bonus token). All prompts of a domain run as one batch.
    The points run on ``n_jobs`` worker processes of one torch thread each (``sweep.local``; the rows
    are the same for any ``n_jobs``: framework overhead dominates these tiny models, so one thread per
    point is as fast, and two workers halve the wall time on two cores).
    """
    from .. import sweep
    grid = [LivePoint(dr, t, d, float(temp), int(g), int(n_prompts), int(max_new_tokens), int(seed))
            for t in targets for dr in drafts for d in domains for temp in temperatures for g in gammas]
    return sweep.local(live_point, grid, n_jobs=n_jobs, progress=progress)
