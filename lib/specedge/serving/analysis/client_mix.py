"""Heterogeneous clients for the twin: each client its own draft model on its own dataset, its acceptance
drawn from that (draft, domain)'s own traces.

``read_traces`` and ``pooled_traces`` join trace frames of several sources (e.g. the zoo's drafts for one
target and a real pair) into one frame that ``twin.TraceAcceptance`` reads under one pooled target label; each
source keeps its draft names, which must not collide. ``one_domain_workload`` gives each client one (draft,
domain) pair, every domain distinct; ``client_alpha`` is each client's i.i.d. acceptance rate measured on its
traced rounds and ``spread`` the range of those rates. ``round_sums`` / ``reported_alpha``: what a device's drafting
rule (a fixed window, or a stop rule within it) drafts and gets accepted over traced rounds (li2026 eq (5)).
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ... import sampling
from ..sim.twin import IIDAcceptance
from ..workload import ClientSpec, Workload

POOLED = "pooled"    # the target label of a pooled frame
COLUMNS = ["draft", "target", "domain", "temperature", "prompt", "round", "i", "q", "p", "accepted"]


def read_traces(path, target: str) -> pd.DataFrame:
    """The traces of ``target`` in a traces file (``COLUMNS``)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: traces file missing")
    df = pd.read_csv(path, usecols=COLUMNS)
    df = df[df["target"] == target]
    if df.empty:
        raise ValueError(f"target: no traces for {target!r} in {path}")
    return df


def pooled_traces(sources: Mapping[str, pd.DataFrame], target: str = POOLED) -> pd.DataFrame:
    """One trace frame of ``sources`` (name -> a frame with ``COLUMNS``, one target each), every row relabelled
    ``target``; a draft name found in two sources is an error (the twin keys acceptance by draft and domain)."""
    if not sources:
        raise ValueError("sources: need at least one trace frame")
    seen: dict[str, str] = {}
    for name, df in sources.items():
        missing = sorted(set(COLUMNS) - set(df.columns))
        if missing:
            raise ValueError(f"sources[{name!r}]: missing columns {missing}")
        if df["target"].nunique() != 1:
            raise ValueError(f"sources[{name!r}]: needs exactly one target, got {sorted(df['target'].unique())}")
        for d in df["draft"].unique():
            if d in seen:
                raise ValueError(f"sources[{name!r}]: draft {d!r} is also in {seen[d]!r}; draft names must be distinct")
            seen[d] = name
    return pd.concat([df[COLUMNS] for df in sources.values()], ignore_index=True).assign(target=target)


def one_domain_workload(target: str, pairs: Sequence[tuple[str, str]], capacity: int, max_tokens: int, *,
                        prompts: int = 1, temperature: float = 0.0, seed: int = 0) -> Workload:
    """Client i drafts with ``pairs[i][0]`` on domain ``pairs[i][1]`` only: a distinct dataset per client."""
    domains = [d for _, d in pairs]
    if not pairs or len(set(domains)) != len(domains):
        raise ValueError(f"pairs: need one (draft, domain) per client with distinct domains, got {list(pairs)}")
    return Workload(target, tuple(ClientSpec(draft, (dom,), prompts, max_tokens, temperature=temperature, seed=seed)
                                  for draft, dom in pairs), capacity=capacity)


def client_alpha(acceptance, wl: Workload) -> np.ndarray:
    """Each client's i.i.d. alpha (``sampling.iid_acceptance``) over its domains' traced rounds
    (``acceptance``: a ``twin.TraceAcceptance``)."""
    out = []
    for spec in wl.clients:
        acc_n, drafted = [], []
        for d in spec.domains:
            acc, _, bounds = acceptance.rounds[(spec.draft, d, float(spec.temperature))]
            for a, b in zip(bounds[:-1], bounds[1:]):
                ok = acc[a:b]
                acc_n.append(int(np.argmin(ok)) if not ok.all() else len(ok))
                drafted.append(len(ok))
        out.append(sampling.iid_acceptance(acc_n, drafted))
    return np.array(out)


def iid_model(acceptance, wl: Workload):
    """The i.i.d. model of ``wl``'s clients: each drafts on its first domain only, every drafted token accepted
    independently at that (draft, domain)'s traced rate (``client_alpha``); there x* is exact. Returns the
    one-domain workload, its ``twin.IIDAcceptance`` and the clients' alphas."""
    wl = dataclasses.replace(wl, clients=tuple(dataclasses.replace(c, domains=c.domains[:1]) for c in wl.clients))
    alpha = client_alpha(acceptance, wl)
    return wl, IIDAcceptance({(c.draft, c.domains[0]): float(a) for c, a in zip(wl.clients, alpha)}), alpha


def clients_table(workloads: Mapping[str, Workload], acceptance) -> pd.DataFrame:
    """Each named workload's clients with their traced alpha (``client_alpha``): config, client, draft, domain, alpha."""
    return pd.DataFrame([dict(config=name, client=i, draft=c.draft, domain="/".join(c.domains), alpha=float(a))
                         for name, wl in workloads.items() for i, (c, a) in enumerate(zip(wl.clients, client_alpha(acceptance, wl)))])


def spread(alpha) -> float:
    """max alpha - min alpha over the clients."""
    a = np.asarray(alpha, float)
    if a.size == 0:
        raise ValueError("alpha: need at least one client")
    return float(a.max() - a.min())


@lru_cache(maxsize=None)
def round_sums(acceptance, draft: str, controlled: bool, window: int, temperature: float = 0.0, draws: int = 4000,
               domains: tuple[str, ...] = ("chat",), rule: str = "mlp") -> tuple[int, int, int]:
    """(drafted, accepted, rounds) summed over ``draws`` traced rounds of a device's drafting rule, drawn from
    ``acceptance`` (a ``twin.TraceAcceptance``) with a fixed seed, cycling over ``domains``: a fixed window of
    ``window`` drafts, or (``controlled``) stopped by the stop rule ``rule`` within it."""
    if draws < 1 or not domains:
        raise ValueError(f"draws, domains: need draws >= 1 and at least one domain, got {draws!r}, {domains!r}")
    rng = np.random.default_rng(0)
    drafted = accepted = 0
    for i in range(draws):
        dom = domains[i % len(domains)]
        if controlled:
            s, n, _ = acceptance.draw_controlled(rng, draft, dom, temperature, window, rule)
        else:
            s, (n, _) = window, acceptance.draw(rng, draft, dom, temperature, window)
        drafted, accepted = drafted + s, accepted + n
    return drafted, accepted, draws


def reported_alpha(acceptance, draft: str, controlled: bool, window: int, temperature: float = 0.0, draws: int = 4000,
                   domains=("chat",), rule: str = "mlp") -> float:
    """li2026 eq (5)'s alpha a device reports: accepted / drafted over its traced rounds (``round_sums``)."""
    drafted, accepted, _ = round_sums(acceptance, draft, controlled, window, temperature, draws, tuple(domains), rule)
    return accepted / max(drafted, 1)
