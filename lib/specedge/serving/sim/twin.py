"""The twin of the serving layer: the same clients, batch former and allocator, simulated time.

``simulate(workload, former, allocator, times, acceptance)`` runs the policy objects it is given
(unchanged: they get the simulated ``now``) against simulated drafting, network and verification
times and returns the per-round log, an ``interfaces.LogRow`` per verified round (``system="twin"``), the same
table the real run writes, so one set of metric definitions serves both (LLMServingSim's validation habit).

- Clients are synchronous drafters (GOODSPEED's draft servers): draft S tokens (``times.draft``),
  send (``times.up``), wait for the reply (``times.down``), repeat; a client walks through its prompt
  stream (``ClientSpec.domains`` x ``prompts``, ``max_new_tokens`` each), so its acceptance follows
  the domain it is in. With ``rounds`` set, streams wrap around until that many batches were verified.
- Acceptance: ``TraceAcceptance`` draws each round's per-position outcomes from the zoo's measured
  traces (``data/traces/li2026_traces.csv.gz``: target-m with each draft, per domain and temperature),
  ``IIDAcceptance`` from a fixed alpha (tests).
- Times: ``Times`` (per-client drafting time of k draft-model passes, verification time of a batch,
  link; ``interfaces.Times``) built from named time models (``serving.timemodels.time_models``) or fitted to a
  real run (``serving.analysis.validation.fit_times``). A round of S tokens takes S passes; one
  that a stop rule ended before its window S + 1 (the pass whose logits it judged: ``serving.real.drafter``).
- Events: the client and server processes of ``serving.sim.processes`` on ``engine.EventLoop`` (SimPy's order on a
  plain heap), shared with the replay (``serving.sim.replay``): here each client's rounds are ``ModelledRounds``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ... import paths
from .. import slo
from ..interfaces import BatchFormer, DraftAllocator, Pending, Times
from ..log import frame
from .engine import gc_paused
from .processes import Server, Simulation, turnarounds
from .uniform_ints import Ints
from ..workload import Workload

TRACES = paths.DATA / "traces" / "li2026_traces.csv.gz"


# --------------------------------------------------------------------------- acceptance
class IIDAcceptance:
    """Every drafted token accepted independently with probability alpha (min(1, p/q) = the 0/1
    outcome): one ``alpha`` for every client, or a mapping (draft, domain) -> alpha."""

    def __init__(self, alpha):
        table = dict(alpha) if isinstance(alpha, dict) else {None: alpha}
        for k, a in table.items():
            if not 0 <= a <= 1:
                raise ValueError(f"alpha{'' if k is None else f'[{k}]'}: must lie in [0, 1], got {a}")
        self.table = {k: float(a) for k, a in table.items()}
        self.alpha = self.table.get(None)

    def _alpha(self, draft: str, domain: str) -> float:
        if self.alpha is not None:
            return self.alpha
        if (draft, domain) not in self.table:
            raise KeyError(f"IIDAcceptance: no alpha for (draft={draft!r}, domain={domain!r}); have {sorted(self.table)}")
        return self.table[draft, domain]

    def draw(self, rng: np.random.Generator, draft: str, domain: str, temperature: float, s: int):
        ok = rng.random(s) < self._alpha(draft, domain)
        n = int(np.argmin(ok)) if not ok.all() else s
        return n, float(ok.sum())


class TraceAcceptance:
    """Per-round acceptance drawn from measured traces of (draft, domain, temperature).

    A round of S drafts takes the first S positions of a randomly drawn traced round (traced windows
    hold up to 8 drafts; longer rounds continue with positions of further drawn rounds). The accepted
    count is the leading run of accepted positions; eq (3)'s sum of min(1, p/q) comes from the traced
    p and q of the same positions.

    ``stop_rules`` (name -> a ``predictor.models.Predictor``) adds WISP's drafting controller
    (``draw_controlled``): the traced rounds were drafted with a fixed window, and a drafter with a
    stop rule sees exactly the same draft features up to where it stops, so applying the predictor to
    the traced positions gives the round it would have drafted (stop before the first position
    predicted rejected, eq (25), at most ``gamma`` drafts).
    """

    integer_draws = True   # draws only ``rng.integers(n)``: the twin may pass a ``uniform_ints.Ints``

    def __init__(self, path=TRACES, target: str = "target-m", stop_rules: dict | None = None):
        """``path``: a traces file, or a frame with its columns (e.g. the real pair's,
        ``acceptance_sources.traces("realpair")``)."""
        from ...predictor.dataset import FEATURES

        cols = ["draft", "target", "domain", "temperature", "prompt", "round", "i", "q", "p", "accepted"]
        cols += [c for c in FEATURES if c != "i"] if stop_rules else []
        if isinstance(path, pd.DataFrame):
            missing = sorted(set(cols) - set(path.columns))
            if missing:
                raise ValueError(f"traces frame: missing columns {missing}")
            df, path = path[cols].copy(), "the traces frame"
        elif not Path(path).exists():
            raise FileNotFoundError(f"{path}: the zoo's WISP traces are missing; `make zoo` builds them "
                                    "(python -m specedge.predictor build)")
        else:
            df = pd.read_csv(path, usecols=cols)
        df = df[df["target"] == target]
        if df.empty:
            raise ValueError(f"target: no traces for {target!r} in {path}")
        df["ratio"] = np.minimum(1.0, df["p"] / df["q"].where(df["q"] > 0, np.nan)).fillna(0.0)
        self.rounds: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.stops: dict[str, dict[tuple, np.ndarray]] = {name: {} for name in (stop_rules or {})}
        self._fast: dict[tuple, tuple] = {}
        self._controlled: dict[tuple, list] = {}
        self.round_prompt: dict[tuple, np.ndarray] = {}   # per (draft, domain, T): each traced round's prompt
        self.rules = dict(stop_rules or {})
        self.stats: dict[tuple, np.ndarray] = {}          # per (draft, domain, T): each traced position's draft features
        for key, g in df.sort_values(["prompt", "round", "i"]).groupby(["draft", "domain", "temperature"]):
            key = (key[0], key[1], float(key[2]))
            rid = g["prompt"].to_numpy() * 100_000 + g["round"].to_numpy()
            _, start = np.unique(rid, return_index=True)
            bounds = np.append(start, len(g))
            self.rounds[key] = (g["accepted"].to_numpy(bool), g["ratio"].to_numpy(float), bounds)
            self.round_prompt[key] = g["prompt"].to_numpy()[start]
            if stop_rules:
                self.stats[key] = g[[c for c in FEATURES if c != "i"]].to_numpy(np.float32)
            for name, pred in (stop_rules or {}).items():
                ok = pred.predict(g[list(FEATURES)].to_numpy(np.float32)).astype(bool)
                # per traced round: the index of its first position predicted rejected (its length if none)
                first = [int(np.argmin(ok[a:b])) if not ok[a:b].all() else b - a for a, b in zip(bounds[:-1], bounds[1:])]
                self.stops[name][key] = np.asarray(first)

    def keys(self):
        return sorted(self.rounds)

    def _get(self, draft, domain, temperature):
        key = (draft, domain, float(temperature))
        if key not in self.rounds:
            raise KeyError(f"no traces for draft={draft!r}, domain={domain!r}, T={temperature:g}; "
                           f"available: {self.keys()[:6]} ...")
        return key, self.rounds[key]

    def _fast_get(self, draft, domain, temperature):
        """Per (draft, domain, T): the number of traced rounds and per round (its length, its leading run
        of accepted positions, the sum of min(1, p/q) of each prefix (numpy's float64 sum,
        number for number), its accepted flags and its ratios as Python lists): a draw is then one
        index and no numpy call."""
        key = (draft, domain, temperature)
        fast = self._fast.get(key)
        if fast is None:
            _, (acc, ratio, bounds) = self._get(draft, domain, temperature)
            rounds = []
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                oks, ratios = acc[a:b].tolist(), ratio[a:b].tolist()
                run = oks.index(False) if False in oks else len(oks)
                rounds.append((len(oks), run, [float(np.array(ratios[:s], float).sum()) for s in range(len(ratios) + 1)], oks, ratios))
            fast = self._fast[key] = (len(rounds), rounds)
        return fast

    def draw(self, rng: np.random.Generator, draft: str, domain: str, temperature: float, s: int):
        """(accepted, sum of min(1, p/q)) of a window of ``s`` drafts from a traced round drawn uniformly
        (``rng.integers``; ``window`` when the drawn round is shorter than ``s``)."""
        return self.drawer(rng, draft, domain, temperature)(s)

    def drawer(self, rng, draft: str, domain: str, temperature: float) -> Callable[[int], tuple[int, float]]:
        """``draw`` of one (draft, domain, T) bound to ``rng`` (an ``Ints`` or a Generator): the twin's
        per-round call without the per-call lookups."""
        nr, rounds = self._fast_get(draft, domain, temperature)
        ints = rng.integers

        def draw(s: int) -> tuple[int, float]:
            if s <= 0:
                return 0, 0.0
            j = ints(nr)
            length, run, totals, _, _ = rounds[j]
            if length >= s:   # the common case: one traced round holds the whole window
                return (run if run < s else s), totals[s]
            return self.window(rng, draft, domain, temperature, j, s)
        return draw

    def window(self, rng, draft: str, domain: str, temperature: float, j: int, s: int):
        """(accepted, sum of min(1, p/q)) of a window of ``s`` drafts starting with traced round ``j``
        and continued, while it is shorter than ``s``, with positions of further drawn rounds."""
        nr, rounds = self._fast_get(draft, domain, temperature)
        oks, ratios = list(rounds[j][3]), list(rounds[j][4])
        while len(oks) < s:
            j = int(rng.integers(nr))
            oks += rounds[j][3]
            ratios += rounds[j][4]
        del oks[s:], ratios[s:]
        return (oks.index(False) if False in oks else s), float(np.array(ratios, float).sum())

    def draw_controlled(self, rng: np.random.Generator, draft: str, domain: str, temperature: float,
                        gamma: int, rule: str):
        """(S, accepted, sum of min(1, p/q)) of one round drafted under stop rule ``rule``."""
        table = self.controlled_table(draft, domain, temperature, gamma, rule)
        return table[int(rng.integers(len(table)))]

    def controlled_table(self, draft: str, domain: str, temperature: float, gamma: int, rule: str) -> list:
        """The outcomes ``draw_controlled`` picks one of uniformly (``rng.integers(len(table))``)."""
        table = self._controlled.get((draft, domain, temperature, gamma, rule))
        return self._controlled_table(draft, domain, temperature, gamma, rule) if table is None else table

    def _controlled_table(self, draft, domain, temperature, gamma, rule):
        """Every outcome a controlled round can have, one per traced round with a whole window: a
        draw is then one index (the same random stream and numbers as drawing from the traces)."""
        if rule not in self.stops:
            raise KeyError(f"stop rule {rule!r}: not given to TraceAcceptance (have {sorted(self.stops)})")
        key, (acc, ratio, bounds) = self._get(draft, domain, temperature)
        full = np.flatnonzero(np.diff(bounds) >= gamma)  # the last rounds of a prompt are shorter
        if not len(full):
            raise ValueError(f"gamma: no traced round of {key} holds {gamma} drafts")
        table = []
        for j in full.tolist():
            a = int(bounds[j])
            s = min(int(self.stops[rule][key][j]), gamma)
            ok = acc[a: a + s]
            n = int(np.argmin(ok)) if (s and not ok.all()) else s
            table.append((s, n, float(ratio[a: a + s].sum())))
        self._controlled[(draft, domain, temperature, gamma, rule)] = table
        return table

    def mean_acceptance(self, draft: str, domain: str | None = None, temperature: float = 0.0) -> float:
        """Fraction of traced draft positions accepted (eq 5's alpha for a fixed window)."""
        vals = [self.rounds[k][0] for k in self.rounds
                if k[0] == draft and (domain is None or k[1] == domain) and k[2] == float(temperature)]
        if not vals:
            raise KeyError(f"no traces for draft={draft!r}, domain={domain!r}, T={temperature:g}")
        return float(np.concatenate(vals).mean())


class PromptAcceptance(TraceAcceptance):
    """Acceptance by prompt and position, from the same traces: a client's rounds walk through its prompt's traced
    sequence instead of drawing a round of any prompt of the domain, i.i.d., per round.

    The traced rounds of one prompt, in order, say for every position of its response whether the draft's token
    matched the target's (a round accepts a leading run of positions, the next round starts after its
    correction): at T = 0 a round of S drafts at position m accepts the leading run of those bits from m, so
    a client keeps the prompt's own acceptance level (the prompts of one domain differ up to 20-fold) and the
    dependence between its consecutive rounds. A position the traces do not decide (a bonus token, beyond the
    traced response) is drawn with the prompt's own rate. Eq (3)'s min(1, p/q): the traced ratio of a decided
    position, else the prompt's mean ratio of accepted (rejected) positions. A prompt index beyond the traced prompts
    uses prompt ``index % traced``.

    With a stop rule (``controlled_at``), S is the rule's decision on the features the drafter computes at the round's
    own positions: at T = 0 the draft's logits at a position of the target's path depend only on the context, not on
    where the round started, so the traced features of position m + i - 1 with window index i are what the drafter
    judges at its i-th draft of a round starting at m. Past the round's first rejection (at position r) the drafter
    continues on its own tokens, as the traced round that was rejected at r did: its positions after r give the
    features. Where the traces have none (an undecided position; beyond a traced window), the features of a position
    of the same prompt are drawn: one with the drawn outcome on the target's path, any one past a rejection. The
    traces must be of the prompts as the drafter sees them (the same context): ``experiments.serving_validation.runs.traces``
    for the real runs' prompts."""

    positional = True
    integer_draws = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._seq: dict[tuple, tuple] = {}
        self._tables: dict[tuple, tuple] = {}

    def sequence(self, draft: str, domain: str, temperature: float, prompt: int):
        """(bits: 1 matched / 0 not / -1 undecided per position, ratios per position, the prompt's acceptance
        rate, mean ratio of accepted and of rejected positions, traced round starts, their rounds' indices)."""
        key, (acc, ratio, bounds) = self._get(draft, domain, temperature)
        prompts = np.unique(self.round_prompt[key])
        p = int(prompts[prompt % len(prompts)])
        seq = self._seq.get((key, p))
        if seq is not None:
            return seq
        idx = np.flatnonzero(self.round_prompt[key] == p)
        bits, ratios, starts = [], [], []
        for j in idx.tolist():
            a, b = int(bounds[j]), int(bounds[j + 1])
            ok = acc[a:b]
            n = int(np.argmin(ok)) if not ok.all() else b - a
            starts.append(len(bits))
            bits += [1] * n + ([0] if n < b - a else [-1])
            ratios += ratio[a: a + n + 1].tolist() if n < b - a else ratio[a:b].tolist() + [np.nan]
        bits_a, ratios_a = np.asarray(bits), np.asarray(ratios, float)
        rate = float((bits_a == 1).sum() / max((bits_a >= 0).sum(), 1))
        r_ok = float(np.nanmean(ratios_a[bits_a == 1])) if (bits_a == 1).any() else 0.0
        r_no = float(np.nanmean(ratios_a[bits_a == 0])) if (bits_a == 0).any() else 0.0
        seq = self._seq[(key, p)] = (bits, ratios, rate, r_ok, r_no, np.asarray(starts), idx)
        return seq

    def draw_at(self, rng, draft: str, domain: str, temperature: float, prompt: int, position: int, s: int):
        """(accepted, sum of min(1, p/q)) of ``s`` drafts at ``position`` of ``prompt`` (the domain's k-th traced prompt)."""
        bits, ratios, rate, r_ok, r_no = self.sequence(draft, domain, temperature, prompt)[:5]
        n, total, running = 0, 0.0, True
        for m in range(position, position + s):
            b = bits[m] if m < len(bits) else -1
            r = ratios[m] if b >= 0 else None
            if b < 0:
                b = int(rng.random() < rate)
            if running and b:              # on the target's path: the traced ratio (or the prompt's mean of accepted)
                n += 1
                total += r_ok if r is None else r
            elif running:                  # the first rejection
                running = False
                total += r_no if r is None else r
            else:                          # past it, off the target's path: the prompt's mean ratio of rejected positions
                total += r_no
        return n, float(total)

    def rule_table(self, draft: str, domain: str, temperature: float, prompt: int, gamma: int, rule: str):
        """The stop rule's verdicts on ``prompt``'s traced features (``controlled_at``): (per position of the target's
        path, its verdict "accepted" at window index 1..``gamma``, shape (positions, gamma), undecided positions'
        rows unused; per rejected position r, the verdicts of the traced positions after it, in order; the verdict
        rows of the prompt's accepted positions, of its rejected ones, and of every position past a rejection)."""
        if rule not in self.rules:
            raise KeyError(f"stop rule {rule!r}: not given to PromptAcceptance (have {sorted(self.rules)})")
        key = (draft, domain, float(temperature))
        bits, _, _, _, _, starts, idx = self.sequence(draft, domain, temperature, prompt)
        cache = self._tables.get((key, int(idx[0]), gamma, rule))   # a prompt: its first traced round
        if cache is not None:
            return cache
        _, (acc, _, bounds) = self._get(draft, domain, temperature)
        rows = np.concatenate([np.arange(bounds[j], bounds[j + 1]) for j in idx.tolist()])
        x = self.stats[key][rows]
        verdict = np.stack([self.rules[rule].predict(np.column_stack([x, np.full(len(x), i, np.float32)]).astype(np.float32))
                            for i in range(1, gamma + 1)], axis=1).astype(bool)
        at = dict(zip(rows.tolist(), range(len(rows))))
        on = np.ones((len(bits), gamma), bool)
        off: dict[int, np.ndarray] = {}
        pools: tuple[list, list, list] = ([], [], [])      # accepted, rejected, past a rejection
        for j, st in zip(idx.tolist(), starts.tolist()):
            a, b = int(bounds[j]), int(bounds[j + 1])
            ok = acc[a:b]
            n = int(np.argmin(ok)) if not ok.all() else b - a
            for k in range(min(n + 1, b - a)):             # the target's path: accepted, then the first rejection
                on[st + k] = verdict[at[a + k]]
                pools[int(k == n)].append(verdict[at[a + k]])
            if n < b - a - 1:
                off[st + n] = verdict[[at[r] for r in range(a + n + 1, b)]]
                pools[2].extend(off[st + n])
        every = list(verdict)
        table = (on, off, *[np.asarray(p if p else every) for p in pools])
        self._tables[(key, int(idx[0]), gamma, rule)] = table
        return table

    def controlled_at(self, rng, draft: str, domain: str, temperature: float, prompt: int, position: int,
                      gamma: int, rule: str):
        """(S, accepted, sum of min(1, p/q)) of a round under stop rule ``rule`` at ``position`` of ``prompt``: the
        drafter drafts position ``position`` + i - 1 (window index i = 1, 2, ..., ``gamma``) unless the rule, on
        that position's features (``rule_table``), predicts it rejected (then it stops before it, eq (25))."""
        bits, ratios, rate, r_ok, r_no = self.sequence(draft, domain, temperature, prompt)[:5]
        on, off, pool_ok, pool_no, pool_off = self.rule_table(draft, domain, temperature, prompt, gamma, rule)
        s = n = 0
        total, rejected, past = 0.0, None, None
        for i in range(gamma):
            m = position + i
            if rejected is None:
                b = bits[m] if m < len(bits) else -1
                if b >= 0:
                    row = on[m]
                else:                                      # undecided: the outcome drawn, features of such a position
                    b = int(rng.random() < rate)
                    pool = pool_ok if b else pool_no
                    row = pool[rng.integers(len(pool))]
                if not row[i]:
                    break
                r = ratios[m] if (m < len(bits) and bits[m] >= 0) else None
                if b:
                    n += 1
                    total += r_ok if r is None else r
                else:
                    rejected, past = m, off.get(m)
                    total += r_no if r is None else r
            else:                                          # past the first rejection: the drafter's own continuation
                k = m - rejected - 1
                row = past[k] if (past is not None and k < len(past)) else pool_off[rng.integers(len(pool_off))]
                if not row[i]:
                    break
                total += r_no
            s += 1
        return s, n, float(total)


def outcome(acceptance, rng, spec, domain: str, prompt: int, position: int, s: int, left: int):
    """(S, accepted, eq (3)'s sum) of one round of client ``spec`` drawn from ``acceptance`` at ``position`` of its
    ``prompt``-th prompt of ``domain`` (``PromptAcceptance``; a ``TraceAcceptance`` draws from the domain): its stop
    rule's round, or ``s`` drafts; at most ``left`` - 1 drafts (the response's end)."""
    positional = getattr(acceptance, "positional", False)
    T = spec.temperature
    if spec.draft_rule.stops:
        rule = spec.draft_rule.model
        s, n, aps = (acceptance.controlled_at(rng, spec.draft, domain, T, prompt, position, spec.gamma, rule) if positional
                     else acceptance.draw_controlled(rng, spec.draft, domain, T, spec.gamma, rule))
        s = max(min(s, left - 1), 0)
        return s, min(n, s), aps
    s = max(min(s, left - 1), 0)
    n, aps = (acceptance.draw_at(rng, spec.draft, domain, T, prompt, position, s) if positional
              else acceptance.draw(rng, spec.draft, domain, T, s))
    return s, n, aps


# --------------------------------------------------------------------------- the simulation
class ModelledRounds:
    """One client's rounds in the twin (``processes``' rounds protocol): its prompt stream (``ClientSpec``),
    S from its drafting rule (a fixed window, WISP's stop rule drawing its outcome with S, or the allocator's
    allocation), drafting and link seconds from ``times``, the outcome drawn from ``acceptance`` (by the server,
    when the request is verified, unless a stop rule drew it), a log row per verified round."""
    gaps = False
    after_reply = None

    def __init__(self, i: int, spec, workload: Workload, times: Times, acceptance, rng, alloc: dict, rows: list,
                 label: str, wrap: bool, slo_of):
        self.i, self.spec, self.workload, self.times, self.acceptance, self.rng = i, spec, workload, times, acceptance, rng
        self.alloc, self.rows, self.label, self.wrap, self.slo = alloc, rows, label, wrap, slo_of.get(i, (None, None))
        self.limit, self.down, self.bytes_down = spec.max_new_tokens, times.down, times.bytes_down
        self.current = None   # the request in flight: (its draw or drawn outcome, tokens made before it)

    def feed(self):
        """The rounds, as ``processes.Client`` consumes them: yields a round's drafting + uplink seconds, is sent the
        time the request arrives and yields it, is sent (the verdict, the round's seconds) once the reply arrived and
        yields the next round's seconds, or None when its stream ended."""
        spec, i, acceptance, rng, alloc = self.spec, self.i, self.acceptance, self.rng, self.alloc
        n_prompts = len(spec.domains) * spec.prompts
        controlled, rule = spec.draft_rule.stops, spec.draft_rule.model
        draft, temperature, gamma, limit = spec.draft, spec.temperature, spec.gamma, spec.max_new_tokens
        domains, per_domain, slo_class = spec.domains, spec.prompts, spec.slo_class
        n_domains = len(domains)
        lengths = [max(t, 1) for t in (spec.prompt_tokens if isinstance(spec.prompt_tokens, tuple) else (spec.prompt_tokens,))]
        times = self.times
        draft_time, up, down, bytes_up = times.draft[i], times.up, times.down, times.bytes_up
        send = down if times.send is None else times.send
        shared = times.shared_core
        post = times.post if shared and times.post is not None else (lambda c: 0.0)
        cache, kv = self.workload.cache, self.workload.kv_bytes_per_token
        a_c, speed = self.slo
        inf = math.inf
        fixed = spec.draft_rule != "server"
        s_alloc = alloc[i]
        rows, wrap, label, bytes_down = self.rows, self.wrap, self.label, self.bytes_down
        # per domain: the stop rule's outcome table (a controlled draw is one index into it) or the server's draw
        # of this client's outcome; the same numbers as the general calls, fewer lookups
        ints = rng.integers if isinstance(rng, Ints) else None
        positional = getattr(acceptance, "positional", False)
        fast = not positional and ints is not None and hasattr(acceptance, "controlled_table" if controlled else "drawer")
        tables, draws = {}, {}
        session_of, session = -1, ""
        made = prompt = ctx = rnd = 0   # tokens of its prompt, its prompt, tokens of the session in the verifier's cache, its round
        while True:
            left = limit - made
            domain = domains[(prompt // per_domain) % n_domains]
            drawn = draw = None
            judged = False
            if controlled:  # the drafter's stop rule decides S; its outcome is drawn with it
                if fast:
                    table = tables.get(domain)
                    if table is None:
                        table = tables[domain] = acceptance.controlled_table(draft, domain, temperature, gamma, rule)
                    s, n, aps = table[ints(len(table))]
                elif positional:
                    s, n, aps = acceptance.controlled_at(rng, draft, domain, temperature, prompt % per_domain, made, gamma, rule)
                else:
                    s, n, aps = acceptance.draw_controlled(rng, draft, domain, temperature, gamma, rule)
                # the rule ended the round before its window: it judged one more position's logits
                judged = s < gamma and s < left - 1
                s = s if s < left else left - 1
                s = s if s > 0 else 0
                drawn = (n if n < s else s, aps)
            else:
                s = gamma if fixed else s_alloc
                s = s if s < left else left - 1
                s = s if s > 0 else 0
                draw = draws.get(domain)
                if positional:
                    draw = (lambda k, d=domain, j=prompt % per_domain, m=made:
                            acceptance.draw_at(rng, draft, d, temperature, j, m, k))
                elif draw is None:
                    draw = draws[domain] = (acceptance.drawer(rng, draft, domain, temperature) if fast else
                                            lambda k, d=domain: acceptance.draw(rng, draft, d, temperature, k))
            td = draft_time(s + 1 if judged else s)
            tu = up(i, s)
            # drafting, then the uplink: the request arrives (drafting as work on the drafters' shared core, with the
            # work once the reply is in)
            now = yield ((float(td), float(tu), float(post(i))) if shared else float(td + tu))
            unseen = lengths[prompt % len(lengths)] if made == 0 else 1    # the prompt, or last round's correction
            if cache:
                n_new, n_cached = unseen + s, ctx
            else:
                n_new, n_cached = ctx + unseen + s, 0
            if prompt != session_of:
                session_of, session = prompt, f"{i}-{prompt}"
            deadline = g = None
            if slo_class is not None:
                tn = tu + down(i)
                if 0 <= td < inf and 0 <= tn < inf:   # eqs (5)-(6) inline, as slo.budget computes them
                    g = a_c * float(s)
                    budget = g / speed - td - tn
                else:                                   # slo.budget names the bad value
                    budget = slo.budget(a_c, s, speed, td, tn)
                deadline = now + budget
            self.current = (draw, drawn, made)
            payload = bytes_up(s)
            (n, tokens, b, start, end, tv, receive), t_round = yield Pending(
                client=i, session=session, round=rnd, arrival=now, n_draft=s, n_new=n_new, n_cached=n_cached,
                slo_class=slo_class, deadline=deadline, expected_tokens=g, memory=(n_new + n_cached) * kv,
                payload_bytes=payload)
            # the round's log row, made once its reply is in (a ``LogRow``: a tuple in its fields' order, a literal
            # here for the speed of the twin's hot path; its values of ``_EXACT``'s fields are of one type)
            rows.append(("twin", label, b, rnd, i, s, n, tokens, td, receive, start - now, tv, send(i), t_round,
                         payload, bytes_down, now, start, end, slo_class, deadline, ""))
            ctx += unseen + n
            made += tokens
            rnd += 1
            if made >= limit:
                made, ctx, prompt = 0, 0, prompt + 1
                if prompt >= n_prompts:
                    if not wrap:
                        yield None
                        return
                    prompt = 0
            if not fixed:
                s_alloc = alloc.get(i, s_alloc)

    def verdict(self, p: Pending, b: int, start: float, end: float, tv, first: float, last: float):
        """(the client's value, accepted, eq (3)'s sum, seconds until the reply reaches it) of its verified
        request: the outcome drawn now unless the stop rule drew it; the value holds the server's side of the
        round's log row (its batch, start, end, verification and receiving seconds)."""
        draw, drawn, made = self.current
        n, aps = drawn if drawn is not None else draw(p.n_draft)
        left = self.limit - made
        tokens = n + 1 if n + 1 < left else left
        return (n, tokens, b, start, end, tv, last - first), n, aps, float(self.down(p.client))


def simulate(workload: Workload, former: BatchFormer, allocator: DraftAllocator, times: Times,
             acceptance, *, rounds: int | None = None, until: float | None = None, seed: int = 0,
             label: str = "", on_batch: Callable[[int, dict], None] | None = None, dispatch=0.0,
             turnaround=None) -> pd.DataFrame:
    """Run the twin; returns the per-round log (LOG_COLUMNS). ``rounds``: stop after that many
    verified batches; ``until``: stop at that simulated time (s), keeping the rounds completed by
    then; with either, prompt streams wrap around; with neither, every client finishes its stream.
    ``on_batch(batch, allocation)`` is called after each batch (e.g. to record the allocator's state).
    ``dispatch`` / ``turnaround``: the server's wake-up after waiting for a request and its time between passes
    (``processes.Server``: seconds, or measured values drawn one per wake-up / pass); default none."""
    specs = workload.clients
    if not specs:
        raise ValueError("workload.clients: at least one client is needed")
    if len(times.draft) != len(specs):
        raise ValueError(f"times.draft: {len(times.draft)} draft time models for {len(specs)} clients")
    if rounds is not None and rounds < 1:
        raise ValueError(f"rounds: must be >= 1 or None, got {rounds}")
    if until is not None and not until > 0:
        raise ValueError(f"until: must be > 0 seconds or None, got {until}")
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    if getattr(acceptance, "integer_draws", False):
        rng = Ints(rng)   # the same numbers as rng.integers, without numpy's per-call cost
    slo_of = {}   # client -> (alpha, class speed), checked once (slo's checks off the per-round path)
    for i, spec in enumerate(specs):
        if spec.slo_class is not None:
            a_c = spec.alpha if spec.alpha is not None else 1.0
            slo.budget(a_c, 0, spec.slo_class, 0.0, 0.0)
            slo_of[i] = (float(a_c), float(spec.slo_class))
    if times.wake is not None and (not times.shared_core or times.core_queued):
        raise ValueError("times.wake: the wait in hand is for the drafters' shared core (times.shared_core), its "
                         "post-reply work a job of its own (not times.core_queued)")
    if times.wake_stamps and times.wake is None:
        raise ValueError("times.wake_stamps: reads times.wake's draws on the drafters' clocks; times.wake is None")
    starts = None if times.starts is None else [float(t) for t in times.starts]
    if starts is not None and (len(starts) != len(specs) or not all(np.isfinite(t) and t >= 0 for t in starts)):
        raise ValueError(f"times.starts: one start >= 0 s per client ({len(specs)}), got {times.starts!r}")
    sim = Simulation(allocator, len(specs), times.core_slice, times.core_queued, times.core_speed, times.wake_first,
                     starts, times.intake, times.wake, times.wake_stamps, times.core_period, times.steal)
    if times.host is not None:   # the host's state moves on the simulated clock
        times.host.bind(lambda: sim.loop.now)
    rows: list[tuple] = []
    wrap = rounds is not None or until is not None
    clients = [ModelledRounds(i, spec, workload, times, acceptance, rng, sim.alloc, rows, label, wrap, slo_of)
               for i, spec in enumerate(specs)]
    server = Server(sim, former, allocator, times.verify, rounds=rounds, on_batch=on_batch, dispatch=dispatch,
                    barrier=None if starts is None else max(starts),   # open once the last client has started
                    turnaround=None if turnaround is None else turnarounds(turnaround),
                    rng=np.random.default_rng(np.random.SeedSequence([seed, 7])))
    with gc_paused():
        sim.run(server, clients, until=until)
        return frame(rows, _EXACT, _CONSTANT)


# ``LogRow`` fields ``simulate`` fills with values it makes itself, of one Python type by construction (counters and
# indices; differences of the loop's float clock): ``log.frame`` converts them without looking at each value
_EXACT = {"batch": int, "round": int, "client": int, "t_receive": float, "t_queue": float, "t_round": float,
          "arrival": float, "start": float, "end": float}

# fields holding one value in every row by construction (the system, the run's label; no event)
_CONSTANT = ("system", "policy", "event")
