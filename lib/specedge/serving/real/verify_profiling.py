"""Profiling batched verification: WISP's Appendix C design and its Fig 4 interference experiment.

``design(seed, length_scale)`` lays out Appendix C's 173 configurations (123 train / 50 test): each
is a batch of requests ``(L_new, L_cached)``:

1. 25 compute-bound deterministic batches: 1200..2000 new tokens in total, split as one request,
   two, four or unevenly ("varied"), nothing cached;
2. 48 memory-bound deterministic batches: L_new in {1, 5, 10, 20, 50, 100} x L_total in
   {500, 1000, 1500, 2000} x batch size {1, 4}, L_cached = L_total - L_new;
3. 15 compute-bound random batches (>= 1200 new tokens, nothing cached);
4. 15 memory-bound random batches (small L_new, large L_total);
5. 20 mixed batches (cached follow-ups and uncached first verifications together);

and 50 test batches drawn by the random generators (3-5) with another seed. ``length_scale``
shrinks every length (at least one token) so a CPU can run the design with a larger model: the
paper profiles Qwen3-32B on an A100; a CPU pass over 2,000 tokens of a 0.1 B model takes seconds.

``measure(model, design)`` times each batch through the serving layer's own ``Verifier`` (the pass
the server runs: per-session caches packed into one varlen row): per configuration one warm-up and
``runs`` timed runs, every run on fresh sessions whose token ids are drawn anew (Appendix C's unique
prompts: no cache reuse can inflate the speed; a duplicate raises). The cached part of each request is
fed first (untimed), then the timed verification feeds ``L_new`` tokens, the last up to five of them as
drafts. Configurations are measured in a seeded random order, so that a slow period of a shared
machine falls on train and test batches alike; the 1-minute load average is recorded per
configuration. Returns one row per configuration: ``seconds`` is the fastest run (the least disturbed
on a shared CPU; what the estimator is fitted to), with the mean, std, max and median of the runs and
their coefficient of variation, and the batch as "L_new:L_cached" pairs; the features of eq (19) come
from ``estimator``.

``packed_products(pairs)`` is what this engine's attention actually computes: with dense kernels the
packed row's every new token meets every key of the row (masked or not), sum(L_new) x sum(L_total)
products, where eq (18) counts only each request's own (vLLM's varlen kernels skip the rest).

``interference(model, ...)`` is Fig 4: a long uncached request A alone, a short cached request B
(prefix + 5 drafts) alone, and A + B in one batch, over A's length.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from ... import timing
from .verifier import Request, Verifier

CATEGORIES = ("compute-det", "memory-det", "compute-rand", "memory-rand", "mixed")
REGIME = {"compute-det": "compute-bound", "compute-rand": "compute-bound", "memory-det": "memory-bound",
          "memory-rand": "memory-bound", "mixed": "mixed"}
MAX_DRAFTS = 5


@dataclass(frozen=True)
class Config:
    name: str
    category: str
    split: str                              # "train" / "test"
    batch: tuple[tuple[int, int], ...]      # (L_new, L_cached) per request

    @property
    def regime(self) -> str:
        return REGIME[self.category]

    def encoded(self) -> str:
        return " ".join(f"{n}:{c}" for n, c in self.batch)


def _s(x: float, scale: float) -> int:
    return max(1, int(round(x * scale)))


def _split(total: int, parts: list[float]) -> list[int]:
    w = np.asarray(parts, float) / sum(parts)
    sizes = np.maximum(1, np.floor(w * total).astype(int))
    sizes[0] += total - sizes.sum()
    return [int(x) for x in sizes]


def _random(category: str, rng: np.random.Generator, scale: float) -> tuple[tuple[int, int], ...]:
    if category == "compute-rand":
        total = int(rng.integers(1200, 2001))
        k = int(rng.integers(1, 5))
        return tuple((_s(n, scale), 0) for n in _split(total, list(rng.uniform(0.5, 1.5, k))))
    if category == "memory-rand":
        k = int(rng.integers(1, 9))
        out = []
        for _ in range(k):
            new, tot = int(rng.integers(1, 21)), int(rng.integers(500, 2001))
            out.append((_s(new, scale), _s(tot - new, scale)))
        return tuple(out)
    if category == "mixed":
        cold = int(rng.integers(1, 3))
        warm = int(rng.integers(1, 5))
        out = [(_s(int(rng.integers(200, 1001)), scale), 0) for _ in range(cold)]
        for _ in range(warm):
            new, tot = int(rng.integers(1, 21)), int(rng.integers(500, 2001))
            out.append((_s(new, scale), _s(tot - new, scale)))
        return tuple(out)
    raise ValueError(f"category: expected one of {CATEGORIES[2:]}, got {category!r}")


def design(seed: int = 0, length_scale: float = 1.0) -> list[Config]:
    """Appendix C's 123 training and 50 test configurations (lengths times ``length_scale``)."""
    if not 0 < length_scale <= 1:
        raise ValueError(f"length_scale: must lie in (0, 1], got {length_scale}")
    s = length_scale
    out: list[Config] = []
    patterns = {"single": [1], "split-2": [1, 1], "split-4": [1, 1, 1, 1], "varied": [3, 1],
                "varied-4": [4, 2, 1, 1]}
    for total in (1200, 1400, 1600, 1800, 2000):
        for pname, parts in patterns.items():
            batch = tuple((_s(n, s), 0) for n in _split(total, parts))
            out.append(Config(f"compute-det/{total}/{pname}", "compute-det", "train", batch))
    for new in (1, 5, 10, 20, 50, 100):
        for tot in (500, 1000, 1500, 2000):
            for b in (1, 4):
                batch = tuple((_s(new, s), _s(tot - new, s)) for _ in range(b))
                out.append(Config(f"memory-det/{new}/{tot}/x{b}", "memory-det", "train", batch))
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    for cat, n in (("compute-rand", 15), ("memory-rand", 15), ("mixed", 20)):
        out += [Config(f"{cat}/{i}", cat, "train", _random(cat, rng, s)) for i in range(n)]
    test = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    for cat, n in (("compute-rand", 15), ("memory-rand", 15), ("mixed", 20)):
        out += [Config(f"test/{cat}/{i}", cat, "test", _random(cat, test, s)) for i in range(n)]
    return out


class _Ids:
    """Fresh token ids for every request of every run; a repeated sequence raises (Appendix C)."""

    def __init__(self, vocab: int, seed: int):
        self.vocab, self.rng, self.seen = vocab, np.random.default_rng(seed), set()

    def __call__(self, n: int) -> list[int]:
        ids = self.rng.integers(3, self.vocab, size=n).tolist()
        key = tuple(ids[:16]) if n >= 4 else None
        if key is not None:
            if key in self.seen:
                raise RuntimeError("verify_profiling: a prompt prefix repeated; cache reuse would inflate speed")
            self.seen.add(key)
        return ids


def _run_batch(verifier: Verifier, batch, ids: _Ids, tag: str) -> float:
    """Prefill each request's cached part (untimed), then time one batched verification."""
    names = [f"{tag}/{i}" for i in range(len(batch))]
    for n, (_, c) in zip(names, batch):   # one prefill per request: packing them would cost sum(c)^2
        if c:
            verifier.verify([Request(n, ids(c), [])])
    reqs = []
    for n, (new, _) in zip(names, batch):
        k = min(MAX_DRAFTS, new - 1)
        toks = ids(new)
        reqs.append(Request(n, toks[: new - k], toks[new - k:]))
    with timing.stopwatch(str(verifier.model.device)) as t:
        verifier.verify(reqs)
    for n in names:
        verifier.close(n)
    return t.seconds


def _samples(verifier: Verifier, batch, ids: _Ids, tag: str, runs: int, warmup: int) -> np.ndarray:
    """``timing.samples`` of ``_run_batch``: every run (warm-ups included) on fresh sessions and ids."""
    count = itertools.count()
    return timing.samples(lambda: _run_batch(verifier, batch, ids, f"{tag}/{next(count)}"), runs, warmup)


def measure(model, configs: list[Config], *, runs: int = 3, warmup: int = 1, seed: int = 0,
            progress: bool = True) -> pd.DataFrame:
    """Time every configuration (seconds); one row each, see the module docstring."""
    if runs < 1 or warmup < 0:
        raise ValueError(f"runs must be >= 1 and warmup >= 0, got runs={runs}, warmup={warmup}")
    verifier = Verifier(model, cache=True, seed=seed)
    ids = _Ids(int(model.config.vocab_size), seed)
    rows = {}
    order = np.random.default_rng(np.random.SeedSequence([seed, 3])).permutation(len(configs))
    for j in tqdm(order, desc="profiling verification batches", disable=not progress):
        cfg = configs[j]
        t = timing.summary(_samples(verifier, cfg.batch, ids, cfg.name, runs, warmup))
        rows[j] = dict(config=cfg.name, category=cfg.category, regime=cfg.regime, split=cfg.split,
                       batch=cfg.encoded(), requests=len(cfg.batch), seconds=t["seconds"],
                       seconds_mean=t["mean"], seconds_std=t["std"], seconds_max=t["max"],
                       seconds_median=t["median"], cv=t["cv"], runs=t["runs"], load_1min=os.getloadavg()[0])
    return pd.DataFrame([rows[j] for j in range(len(configs))])


def interference(model, a_lengths, *, b_cached: int = 500, b_new: int = 5, runs: int = 3, warmup: int = 1,
                 seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """Fig 4: seconds of Solo A (uncached, L_A new tokens), Solo B (b_cached prefix + b_new drafts)
    and Batched A+B, per L_A: ``seconds`` is the fastest of ``runs`` (``timing``), beside their median and max."""
    verifier = Verifier(model, cache=True, seed=seed)
    ids = _Ids(int(model.config.vocab_size), seed + 7)
    cases = {"Solo A": lambda la: ((la, 0),), "Solo B": lambda la: ((b_new, b_cached),),
             "Batched A+B": lambda la: ((la, 0), (b_new, b_cached))}
    rows = []
    for la in tqdm(list(a_lengths), desc="interference", disable=not progress):
        for case, make in cases.items():
            t = timing.summary(_samples(verifier, make(int(la)), ids, f"if/{la}/{case}", runs, warmup))
            rows.append(dict(a_length=int(la), case=case, seconds=t["seconds"], seconds_median=t["median"],
                             seconds_max=t["max"]))
    return pd.DataFrame(rows)


def threads(n: int | None) -> None:
    """Pin torch's intra-op threads (profiling runs are compared across models on one machine)."""
    if n:
        torch.set_num_threads(int(n))


# --------------------------------------------------------------------------- command line
TARGETS = {
    # name: (zoo model, widen (hidden, intermediate, layers) or None, dtype, length scale)
    "zoo": ("target-m", None, torch.float32, 1.0),
    "widened": ("target-m", (1024, 2816, 8), torch.bfloat16, 0.25),
}


def load_target(kind: str):
    """The profiled target: the zoo's target-m as trained, or widened (``zoo.net2net.widen``, same logits) to
    a 0.1 B-parameter bfloat16 Llama whose passes are memory-bound as on an accelerator."""
    from ... import zoo
    from ...zoo import net2net

    if kind not in TARGETS:
        raise ValueError(f"target: expected one of {sorted(TARGETS)}, got {kind!r}")
    name, shape, dtype, _ = TARGETS[kind]
    model = zoo.load_model(name).eval()
    if shape is not None:
        model = net2net.widen(model.to(dtype), *shape).eval()
    return model


def main(argv=None) -> int:
    import argparse

    from ... import paths

    ap = argparse.ArgumentParser(description="Profile batched verification on this machine (WISP App. C, Fig 4); "
                                 "writes data/li2026/verify_profile_<target>.csv and interference_<target>.csv")
    ap.add_argument("--targets", nargs="+", default=sorted(TARGETS), choices=sorted(TARGETS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(paths.DATA / "li2026"))
    args = ap.parse_args(argv)
    threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for kind in args.targets:
        model = load_target(kind)
        scale = TARGETS[kind][3]
        torch.manual_seed(args.seed)
        df = measure(model, design(args.seed, scale), runs=args.runs, seed=args.seed)
        df.insert(0, "target", kind)
        df.to_csv(out / f"verify_profile_{kind}.csv", index=False, float_format="%.6g")
        la = [_s(x, scale) for x in (100, 250, 500, 750, 1000, 1250, 1500, 1750, 2000)]
        fig4 = interference(model, la, b_cached=_s(500, scale), b_new=5, runs=args.runs, seed=args.seed)
        fig4.insert(0, "target", kind)
        fig4.to_csv(out / f"interference_{kind}.csv", index=False, float_format="%.6g")
        print(f"{kind}: {len(df)} configurations -> {out}/verify_profile_{kind}.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
