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
import time
from typing import Mapping

import pandas as pd
import torch

from .. import paths, sampling
from . import DRAFTS, TARGETS, eval_prompts, eval_records, load_model, load_tokenizer
from .corpus import DOMAINS

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


def teacher_card(draft, target, tokenizer, records: Mapping[str, list[dict]], max_len: int = 256, extra=None,
                 progress=print) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Teacher-forced acceptance (``pair_acceptance`` at T = 0 / 0.5 / 1) of a loaded pair per domain of ``records``
    (domain -> held-out records): one row per domain and T with the positions counted. Logits are cut to the
    tokenizer's vocabulary (rows of a padded matrix beyond it are never tokens); ``extra(q, p)`` adds rows of its own
    per domain (the second frame, with the domain)."""
    n_vocab = len(tokenizer)
    card, more = [], []
    for d, recs in records.items():
        t0 = time.perf_counter()
        q = [x[:, :n_vocab] for x in completion_logits(draft, tokenizer, recs, max_len)]
        p = [x[:, :n_vocab] for x in completion_logits(target, tokenizer, recs, max_len)]
        positions = sum(len(x) for x in p)
        for temp, a in pair_acceptance(q, p).items():
            card.append(dict(domain=d, temperature=temp, alpha=round(a, 4), positions=positions))
        more += [dict(domain=d, **row) for row in (extra(q, p) if extra else [])]
        progress(f"teacher {d}: {positions} positions in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(card), pd.DataFrame(more)


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


def _row(p: LivePoint, accepted: list[int], drafted: list[int]) -> dict:
    return dict(draft=p.draft, target=p.target, domain=p.domain, temperature=p.temperature, gamma=p.gamma,
                rounds=len(accepted), drafted=int(sum(drafted)), accepted=int(sum(accepted)),
                acceptance_rate=sampling.acceptance_rate(accepted, drafted),
                mean_acceptance_length=sampling.mean_acceptance_length(accepted))


def live_point(p: LivePoint) -> dict:
    """One row of ``live_table``: ``decoding.speculative_batch`` on the domain's prompts (one batch), on ONE
    torch thread (the rows do not depend on the process or worker that computes them: models and prompts
    are loaded once per process, each point seeds its own generator)."""
    from .. import decoding
    torch.set_num_threads(1)
    gens = decoding.speculative_batch(_cached_model(p.draft), _cached_model(p.target),
                                      _cached_prompts(p.domain, p.n_prompts), p.max_new_tokens,
                                      gamma=p.gamma, temperature=p.temperature, seed=p.seed)
    return _row(p, [a for gen in gens for a in gen.accepted], [n for gen in gens for n in gen.drafted])


def greedy_rounds(agree: list[bool], gamma: int, max_new_tokens: int) -> tuple[list[int], list[int]]:
    """Per-round (accepted, drafted) counts of greedy speculative decoding with a constant γ, from ``agree``:
    position j's drafted token equals the target's greedy token when both continue the target's greedy prefix.

    Exact, not a model: greedy SD emits the target's greedy continuation y, and a round starting at position
    j accepts the run of positions j, j+1, ... whose draft argmax given y[:j'] equals y[j'] (up to the first
    mismatch the draft's own drafts ARE y, so its conditioning is y's prefix), then appends one target token.
    The window is capped as ``decoding.SpeculativeDecoder.draft_row`` caps it (drafts + 1 token fit)."""
    accepted, drafted, j = [], [], 0
    while j < max_new_tokens:
        g = min(gamma, max_new_tokens - j - 1)
        k = 0
        while k < g and agree[j + k]:
            k += 1
        accepted.append(k)
        drafted.append(g)
        j += k + 1
    return accepted, drafted


@functools.lru_cache(maxsize=None)
def _greedy_continuations(target: str, domain: str, n_prompts: int, max_new_tokens: int) -> tuple:
    from .. import decoding
    model = _cached_model(target)
    return tuple(decoding.autoregressive(model, p, max_new_tokens).tokens
                 for p in _cached_prompts(domain, n_prompts))


@torch.inference_mode()
def greedy_agreement(draft: str, target: str, domain: str, n_prompts: int, max_new_tokens: int) -> list[list[bool]]:
    """Per prompt, per generated position: does the draft's argmax on the target's greedy prefix equal the
    target's greedy token (one target decode, ``decoding.autoregressive``, and one teacher-forced draft pass)."""
    from .. import decoding
    torch.set_num_threads(1)
    model, vocab = _cached_model(draft), decoding.check_vocabularies(_cached_model(draft), _cached_model(target))
    out = []
    for prompt, y in zip(_cached_prompts(domain, n_prompts), _greedy_continuations(target, domain, n_prompts, max_new_tokens)):
        ids = torch.tensor([*prompt, *y.tolist()])
        logits = model(input_ids=ids[None]).logits[0, len(prompt) - 1: len(prompt) - 1 + len(y)]
        out.append((logits[:, :vocab].argmax(-1) == y).tolist())
    return out


def greedy_points(p: LivePoint, gammas) -> list[dict]:
    """``live_point``'s rows at T = 0 for every γ in ``gammas`` from one ``greedy_agreement`` (see
    ``greedy_rounds``; equal to the live rows count for count, ``tests/unit/test_zoo_acceptance.py``)."""
    agree = greedy_agreement(p.draft, p.target, p.domain, p.n_prompts, p.max_new_tokens)
    rows = []
    for g in gammas:
        counts = [greedy_rounds(a, int(g), p.max_new_tokens) for a in agree]
        rows.append(_row(dataclasses.replace(p, gamma=int(g)), [a for acc, _ in counts for a in acc],
                         [d for _, dr in counts for d in dr]))
    return rows


@dataclasses.dataclass(frozen=True)
class GreedyPoint:
    """``greedy_points``' configuration: one pair and domain, every γ."""
    point: LivePoint
    gammas: tuple


def live_table(drafts=DRAFTS, targets=TARGETS, domains=DOMAINS, temperatures=(0.0, 1.0),
               gammas=range(1, 9), n_prompts: int = 8, max_new_tokens: int = 48, seed: int = 0,
               progress: bool = True, n_jobs: int | None = None, greedy: str = "derived") -> pd.DataFrame:
    """Acceptance of real speculative rounds, one row per draft x target x domain x temperature x γ.

    Each row has the counts and the two metrics of ``specedge.sampling``: draft acceptance rate (accepted /
    drafted) and mean acceptance length (1 + accepted / rounds, counting the bonus token). All prompts of a
    domain run as one batch. At T > 0 every row runs ``decoding.speculative_batch`` (``live_point``); at T = 0,
    ``greedy="derived"`` computes every γ's row from the target's greedy decode and one teacher-forced draft
    pass (``greedy_points``: the same counts, 8x less work for 8 γ), ``greedy="live"`` runs them all.
    The points run on ``n_jobs`` worker processes of one torch thread each (``sweep.local``; the rows
    are the same for any ``n_jobs``: framework overhead dominates these tiny models, so one thread per
    point is as fast, and two workers halve the wall time on two cores).
    """
    from .. import sweep
    if greedy not in ("derived", "live"):
        raise ValueError(f"greedy: 'derived' or 'live' expected, got {greedy!r}")
    gammas = tuple(int(g) for g in gammas)
    grid = [LivePoint(dr, t, d, float(temp), g, int(n_prompts), int(max_new_tokens), int(seed))
            for t in targets for dr in drafts for d in domains for temp in temperatures for g in gammas]
    derive = [p for p in grid if greedy == "derived" and p.temperature == 0.0 and p.gamma == gammas[0]]
    jobs = [GreedyPoint(p, gammas) for p in derive] + [p for p in grid if greedy == "live" or p.temperature != 0.0]
    rows = sweep.local(_job, jobs, n_jobs=n_jobs, progress=progress)
    order = {(p.draft, p.target, p.domain, p.temperature, p.gamma): i for i, p in enumerate(grid)}
    key = rows[["draft", "target", "domain", "temperature", "gamma"]].apply(tuple, axis=1).map(order)
    return rows.iloc[key.argsort(kind="stable")].reset_index(drop=True)


def _job(p) -> dict | list[dict]:
    return greedy_points(p.point, p.gammas) if isinstance(p, GreedyPoint) else live_point(p)


def live_rounds(draft, target, prompts, max_new_tokens: int = 32, gammas=(4,), temperatures=(0.0, 1.0), *, seed: int = 0,
                tokenizer=None, progress=print, checkpoint=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Real speculative rounds (``decoding.speculative_batch``, one batch of ``prompts[domain]``, token-id lists) of a
    loaded pair per domain × T × γ: a table of rounds, drafted, accepted, acceptance rate, τ (mean acceptance length),
    the i.i.d. α and the per-position acceptance P(i | < i accepted) (p1, p2, ...), and every round's trace
    (``decoding.traces_frame``). ``checkpoint(table, traces)`` is called after each domain."""
    from .. import decoding
    table, traces = [], []
    for d, ids in prompts.items():
        for temp in temperatures:
            for g in gammas:
                t0 = time.perf_counter()
                gens = decoding.speculative_batch(draft, target, ids, max_new_tokens, gamma=g,
                                                  temperature=temp, seed=seed, tokenizer=tokenizer)
                acc = [a for gen in gens for a in gen.accepted]
                dra = [n for gen in gens for n in gen.drafted]
                ppa = sampling.per_position_acceptance(acc, dra)
                table.append(dict(domain=d, temperature=temp, gamma=g, prompts=len(ids), rounds=len(acc),
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
