"""A second model of the twin's synchronous rounds, vectorised over clients: statistically equivalent to
``twin.simulate`` with ``batching.SyncRounds``, not number for number.

GOODSPEED's rounds are lockstep: every active client drafts, sends, and the batch starts when the last
request arrives, so a round needs no event queue. With round k's reply times r_i (0 at the start):

    arrival_i = r_i + T_draft_i(S_i) + T_up_i,    start = max_i arrival_i,
    end = start + T_verify(batch),               r_i' = end + T_down_i,

and each client's acceptance is one draw from the traced rounds of its (draft, domain) (the rules of
``twin.TraceAcceptance.draw``). Every quantity of a round is a numpy vector over the clients; the traced
round of every client and round is picked from one block of uniform numbers drawn up front, so the
random stream differs from the event twin's (which draws per request in batch order): the same
distribution, other samples. ``tests/unit/test_twin_vectorised.py`` checks the equivalence with two-sample
tests on round times and tokens, and that an injected change of the model fails them.

Scope: ``draft_rule`` "server" or "fixed" (no stop rule), verify time ``runtime.AffineTokens``, draft
time linear in S per client, constant link times per client, prompt streams that wrap around
(``rounds`` batches, as ``simulate(..., rounds=...)``). A ``FixedS`` allocation stays vectorised; any
other allocator gets its ``Outcome`` objects each round, as in the event twin.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..policies.allocation import FixedS
from ..interfaces import DraftAllocator, Outcome
from ..log import from_columns
from ..timemodels.runtime import AffineTokens
from ..workload import Workload


class _Tables:
    """Every traced round of the keys the clients use, concatenated: per round its length, its leading
    run of accepted positions and where its ratios start in one cumulative sum of min(1, p/q)."""

    def __init__(self, acceptance, keys: list[tuple]):
        lens, runs, starts, ratios, self.offset, self.count = [], [], [], [], [], []
        base = 0
        for key in keys:
            _, (acc, ratio, bounds) = acceptance._get(*key)
            self.offset.append(len(runs))
            self.count.append(len(bounds) - 1)
            for a, b in zip(bounds[:-1], bounds[1:]):
                ok = acc[a:b]
                runs.append(int(np.argmin(ok)) if not ok.all() else int(b - a))
            lens.append(np.diff(bounds))
            starts.append(bounds[:-1] + base)
            ratios.append(ratio)
            base += len(ratio)
        self.lens, self.starts = np.concatenate(lens), np.concatenate(starts)
        self.runs = np.asarray(runs)
        self.csum = np.r_[0.0, np.cumsum(np.concatenate(ratios))]
        self.offset, self.count = np.asarray(self.offset), np.asarray(self.count)


def simulate_sync(workload: Workload, allocator: DraftAllocator, draft_per_token, verify: AffineTokens,
                  acceptance, *, rounds: int, up=0.0, down=0.0, seed: int = 0, label: str = "") -> pd.DataFrame:
    """``rounds`` synchronous rounds; returns the per-round log (``interfaces.LOG_COLUMNS``, one row per
    client and round, ``system="twin"``). ``draft_per_token``, ``up``, ``down``: seconds, one number
    or one per client."""
    specs = workload.clients
    n = len(specs)
    if not n:
        raise ValueError("workload.clients: at least one client is needed")
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds: must be a positive int, got {rounds!r}")
    if not isinstance(verify, AffineTokens):
        raise ValueError(f"verify: the vectorised twin needs a runtime.AffineTokens, got {type(verify).__name__}")
    for spec in specs:
        if spec.draft_rule not in ("server", "fixed"):
            raise ValueError(f"draft_rule: the vectorised twin covers 'server' and 'fixed', got {spec.draft_rule!r}")
    d_tok, t_up, t_down = (np.broadcast_to(np.asarray(v, float), (n,)).copy() for v in (draft_per_token, up, down))
    keys = sorted({(s.draft, d, float(s.temperature)) for s in specs for d in s.domains})
    tab = _Tables(acceptance, keys)
    n_dom = max(len(s.domains) for s in specs)
    key_of = np.zeros((n, n_dom), int)   # client x domain index -> key
    for i, s in enumerate(specs):
        for k in range(n_dom):
            key_of[i, k] = keys.index((s.draft, s.domains[k % len(s.domains)], float(s.temperature)))
    per_domain = np.array([s.prompts for s in specs])
    n_dom_c = np.array([len(s.domains) for s in specs])
    n_prompts = n_dom_c * per_domain
    limit = np.array([s.max_new_tokens for s in specs])
    gamma = np.array([s.gamma for s in specs])
    fixed = np.array([s.draft_rule == "fixed" for s in specs])
    clients = np.arange(n)

    alloc = dict(allocator.initial(list(range(n))))
    s_alloc = np.array([alloc[i] for i in range(n)])
    static = isinstance(allocator, FixedS)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    u = rng.random((rounds, n))
    made, prompt, reply = np.zeros(n, int), np.zeros(n, int), np.zeros(n)
    out = {c: np.empty((rounds, n)) for c in ("S", "accepted", "tokens", "t_draft", "t_receive", "t_queue",
                                              "t_verify", "t_round", "arrival", "start", "end", "round")}
    rounds_done = np.zeros(n, int)
    for k in range(rounds):
        left = limit - made
        s = np.clip(np.minimum(np.where(fixed, gamma, s_alloc), left - 1), 0, None)
        td = d_tok * s
        arrival = reply + td + t_up
        start = arrival.max()
        tv = verify.c0 + verify.c_tok * float((s + 1).sum())
        end = start + tv
        key = key_of[clients, (prompt // per_domain) % n_dom_c]
        j = tab.offset[key] + (u[k] * tab.count[key]).astype(int)
        whole = tab.lens[j] >= s
        acc = np.minimum(tab.runs[j], s)
        aps = tab.csum[tab.starts[j] + np.minimum(s, tab.lens[j])] - tab.csum[tab.starts[j]]
        for i in np.flatnonzero(~whole):       # a window longer than its traced round: continued as draw() does
            acc[i], aps[i] = acceptance.window(rng, *keys[key[i]], int(j[i] - tab.offset[key[i]]), int(s[i]))
        tokens = np.minimum(acc + 1, left)
        if not static:
            alloc.update(allocator.update([Outcome(i, int(s[i]), int(acc[i]), float(aps[i])) for i in range(n)]))
            s_alloc = np.array([alloc[i] for i in range(n)])
        new_reply = end + t_down
        for c, v in (("S", s), ("accepted", acc), ("tokens", tokens), ("t_draft", td), ("t_queue", start - arrival),
                     ("t_round", new_reply - reply), ("arrival", arrival), ("round", rounds_done)):
            out[c][k] = v
        out["t_receive"][k], out["t_verify"][k], out["start"][k], out["end"][k] = (
            arrival.max() - arrival.min(), tv, start, end)
        reply = new_reply
        rounds_done = rounds_done + 1
        made = made + tokens
        done = made >= limit
        made[done] = 0
        prompt = np.where(done, (prompt + 1) % n_prompts, prompt)
    flat = {c: v.ravel() for c, v in out.items()}
    ints = ("S", "accepted", "tokens", "round")
    flat.update({c: flat[c].astype(int) for c in ints})
    return from_columns(system="twin", policy=label, batch=np.repeat(np.arange(rounds), n), client=np.tile(clients, rounds),
                        t_send=np.tile(t_down, rounds), bytes_up=40 + 8 * flat["S"], bytes_down=50, slo_class=None,
                        deadline=None, event="", **flat)
