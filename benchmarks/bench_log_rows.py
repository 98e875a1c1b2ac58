"""Benchmark (a script, not a test): the twin's wall time per simulated round with its log rows as ``LogRow``s
(``serving.interfaces``: a tuple in its fields' order, made when the reply is in, turned into the log by
``serving.log.frame``) against the positional 21-item list the twin used to fill in place (made when the request was
verified, ``t_round`` and ``t_send`` filled by index once the reply was in, converted by its own column-by-column
``_frame``), in the same process. The baseline is kept here only: ``ListRounds`` is the twin's rounds as they were,
the shipped ``ModelledRounds`` with the old row. Each case runs both variants alternately, ``--repeats`` times, and
keeps each one's fastest wall time (``time.perf_counter``; CPU time beside it); the two logs must be identical (values,
dtypes, columns). Cases: sync rounds (GOODSPEED's setting, Fixed-S and GOODSPEED allocators, trace-driven acceptance) at 8
and 64 clients, and FCFS batches of at most 4 at 16 clients with SLO classes (deadlines in every row).

    python benchmarks/bench_log_rows.py --out figures/bench/log_rows.csv
"""
from __future__ import annotations

import argparse
import math
import time
import timeit
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import report
from specedge.serving import slo
from specedge.serving.interfaces import LOG_COLUMNS, LogRow, Pending, Times
from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.sim import twin
from specedge.serving.sim.uniform_ints import Ints
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.workload import ClientSpec, Workload


# --------------------------------------------------------------------------- the baseline: the old positional row
class ListRounds(twin.ModelledRounds):
    """``twin.ModelledRounds`` with the log row it had before ``LogRow``: a list made by ``verdict`` in ``_ROW``'s
    order, its ``t_round`` and ``t_send`` filled by index once the reply is in."""

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
        prompt_tokens = max(spec.prompt_tokens, 1)
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
        rows, wrap = self.rows, self.wrap
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
            unseen = prompt_tokens if made == 0 else 1    # the prompt, or last round's correction
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
            self.current = (td, draw, drawn, made)
            (n, tokens, row), t_round = yield Pending(
                client=i, session=session, round=rnd, arrival=now, n_draft=s, n_new=n_new, n_cached=n_cached,
                slo_class=slo_class, deadline=deadline, expected_tokens=g, memory=(n_new + n_cached) * kv,
                payload_bytes=bytes_up(s))
            row[T_ROUND] = t_round
            row[T_SEND] = send(i)
            rows.append(row)
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
        request: the outcome drawn now unless the stop rule drew it, its log row (``_ROW``)."""
        c, s, arrival = p.client, p.n_draft, p.arrival
        td, draw, drawn, made = self.current
        n, aps = drawn if drawn is not None else draw(s)
        left = self.limit - made
        tokens = n + 1 if n + 1 < left else left
        row = [self.label, b, p.round, c, s, n, tokens, td, last - first, start - arrival, tv, 0.0, 0.0,
               p.payload_bytes, self.bytes_down, arrival, start, end, p.slo_class, p.deadline, ""]
        return (n, tokens, row), n, aps, float(self.down(c))




_ROW = ("policy", "batch", "round", "client", "S", "accepted", "tokens", "t_draft", "t_receive", "t_queue",
        "t_verify", "t_send", "t_round", "bytes_up", "bytes_down", "arrival", "start", "end", "slo_class",
        "deadline", "event")
T_SEND, T_ROUND = _ROW.index("t_send"), _ROW.index("t_round")   # filled by the client once the reply arrived


# columns ``simulate`` fills with values it makes itself, of one Python type by construction (counters and
# indices; differences of the loop's float clock): ``_frame`` converts them without looking at each value
_TYPED = {"batch": np.int64, "round": np.int64, "client": np.int64, "t_receive": float, "t_queue": float,
          "t_round": float, "arrival": float, "start": float, "end": float}


# columns holding one value in every row by construction (the run's label; no event): ``_frame`` repeats it
_CONSTANT = {"policy", "event"}


_BLOCK = 512   # rows ``_frame`` reads together: one block's values stay in the CPU's cache across its columns


def _frame(rows: list[list]) -> pd.DataFrame:
    """The log (LOG_COLUMNS) of the twin's rows (``_ROW``'s order), as ``pd.DataFrame(rows)`` builds it,
    column by column: a column of Python floats (ints) only becomes float64 (int64) at once, any other
    is left to pandas' inference, as from rows (``_TYPED`` columns are such by construction; a ``_CONSTANT``
    column is its first value repeated, which pandas infers as from the rows). Rows are
    read ``_BLOCK`` at a time (each block's columns converted while its values are at hand), the
    blocks' arrays joined at the end."""
    if not rows:
        out = pd.DataFrame(rows, columns=list(_ROW))
        out.insert(0, "system", "twin")
        return out[LOG_COLUMNS]
    typed = [_TYPED.get(name) for name in _ROW]
    skip = [name in _CONSTANT for name in _ROW]
    kinds = [set() for _ in _ROW]            # per column: the Python types of its values
    blocks = [[] for _ in _ROW]              # per column and block: (its values, their array or None)
    for a in range(0, len(rows), _BLOCK):
        for j, col in enumerate(zip(*rows[a: a + _BLOCK])):
            if skip[j]:
                continue
            if typed[j] is not None:
                blocks[j].append((col, np.array(col, typed[j])))
                continue
            kind = set(map(type, col))
            kinds[j] |= kind
            blocks[j].append((col, np.array(col, float) if kind == {float} else
                              np.array(col, np.int64) if kind == {int} else None))
    data = {"system": ["twin"] * len(rows)}
    for j, name in enumerate(_ROW):
        if skip[j]:
            data[name] = [rows[0][j]] * len(rows)
        elif typed[j] is not None or kinds[j] in ({float}, {int}):
            data[name] = np.concatenate([arr for _, arr in blocks[j]])
        else:
            data[name] = [v for col, _ in blocks[j] for v in col]
    return pd.DataFrame({c: data[c] for c in LOG_COLUMNS})


@contextmanager
def _baseline():
    """``twin.simulate`` with the old rows: its rounds ``ListRounds``, its log ``_frame`` of them."""
    rounds, frame = twin.ModelledRounds, twin.frame
    twin.ModelledRounds, twin.frame = ListRounds, lambda rows, *_: _frame(rows)
    try:
        yield
    finally:
        twin.ModelledRounds, twin.frame = rounds, frame


# --------------------------------------------------------------------------- making one row, the representations
@dataclass(slots=True)
class _SlotsRow:
    """A mutable row with named fields (a representation measured, not shipped)."""
    system: str
    policy: str
    batch: int
    round: int
    client: int
    S: int
    accepted: int
    tokens: int
    t_draft: float
    t_receive: float
    t_queue: float
    t_verify: float
    t_send: float
    t_round: float
    bytes_up: int
    bytes_down: int
    arrival: float
    start: float
    end: float
    slo_class: int | None
    deadline: float | None
    event: str


BASELINE, SHIPPED = "positional list, filled in place", "LogRow-ordered tuple at the reply"
_VALUES = dict(LogRow=LogRow, SlotsRow=_SlotsRow, new=tuple.__new__, label="p", b=1, r=2, c=3, s=4, n=2, tok=3, td=0.1,
               first=0.5, last=1.0, start=1.2, arr=0.9, tv=0.01, pb=72, bd=50, end=1.3, slo=None, dl=None, tr=0.5, ts=1e-3)
_MAKE = {   # statement -> one row made as the twin makes it (the two fields known once the reply is in: ``tr``, ``ts``)
    "positional list, filled in place": "row = [label, b, r, c, s, n, tok, td, last - first, start - arr, tv, 0.0, 0.0, "
                                        "pb, bd, arr, start, end, slo, dl, '']; row[12] = tr; row[11] = ts",
    "LogRow-ordered tuple at the reply": "row = ('twin', label, b, r, c, s, n, tok, td, last - first, start - arr, tv, "
                                         "ts, tr, pb, bd, arr, start, end, slo, dl, '')",
    "LogRow(...) positional at the reply": "row = LogRow('twin', label, b, r, c, s, n, tok, td, last - first, start - arr, "
                                           "tv, ts, tr, pb, bd, arr, start, end, slo, dl, '')",
    "LogRow(...) by keyword at the reply": "row = LogRow(system='twin', policy=label, batch=b, round=r, client=c, S=s, "
                                           "accepted=n, tokens=tok, t_draft=td, t_receive=last - first, "
                                           "t_queue=start - arr, t_verify=tv, t_send=ts, t_round=tr, bytes_up=pb, "
                                           "bytes_down=bd, arrival=arr, start=start, end=end, slo_class=slo, "
                                           "deadline=dl, event='')",
    "slots dataclass, filled in place": "row = SlotsRow('twin', label, b, r, c, s, n, tok, td, last - first, "
                                        "start - arr, tv, 0.0, 0.0, pb, bd, arr, start, end, slo, dl, ''); "
                                        "row.t_round = tr; row.t_send = ts",
}


def _making(repeats: int, number: int = 200_000) -> dict[str, float]:
    """Microseconds to make one row, per representation (the fastest of ``repeats``, alternately)."""
    best = dict.fromkeys(_MAKE, math.inf)
    for _ in range(repeats):
        for name, stmt in _MAKE.items():
            best[name] = min(best[name], timeit.timeit(stmt, globals=_VALUES, number=number) / number * 1e6)
    return best


# --------------------------------------------------------------------------- the cases
def _sync(n: int, policy: str, acc):
    wl = Workload("target-m", tuple(ClientSpec(("draft-xs", "draft-s")[i % 2], ("code", "math"), 2, 150)
                                    for i in range(n)), capacity=2 * n + n // 2)
    times = Times([lambda s: 0.004 * s] * n, AffineTokens(0.009, 6e-5), up=lambda c, s: 1e-4 * (c + 1) + 1e-5 * s,
                  down=lambda c: 2e-4)
    alloc = lambda: FixedS(wl.capacity, n) if policy == "Fixed-S" else GoodspeedAllocator(wl.capacity, beta=0.5)
    return lambda: twin.simulate(wl, SyncRounds(), alloc(), times, acc, rounds=32_000 // n, seed=0)


def _fcfs(n: int, acc):
    wl = Workload("target-m", tuple(ClientSpec(("draft-xs", "draft-s")[i % 2], ("code", "math"), 2, 150,
                                               slo_class=(5, 10)[i % 2], alpha=0.7) for i in range(n)),
                  capacity=2 * n)
    times = Times([lambda s, i=i: 0.004 * (1 + i % 3) * s for i in range(n)], AffineTokens(0.009, 6e-5),
                  up=lambda c, s: 1e-3 + 1e-5 * s, down=lambda c: 1e-3)
    return lambda: twin.simulate(wl, FCFS(max_batch=4), GoodspeedAllocator(wl.capacity, beta=0.5), times, acc,
                                 rounds=8_000, seed=0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("build/bench/log_rows.csv"))
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    acc = twin.TraceAcceptance()
    cases = [(f"sync rounds, {p}", n, _sync(n, p, acc)) for n in (8, 64) for p in ("Fixed-S", "GOODSPEED")]
    cases += [("FCFS (max batch 4), SLO classes", 16, _fcfs(16, acc))]
    rows = []
    for name, n, run in cases:
        best = {v: (math.inf, math.inf) for v in (BASELINE, SHIPPED)}
        logs = {}
        for _ in range(args.repeats):
            for variant in best:                       # alternately, so that a busy spell slows both
                with _baseline() if variant == BASELINE else nullcontext():
                    w0, c0 = time.perf_counter(), time.process_time()
                    log = run()
                    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
                best[variant] = (min(best[variant][0], wall), min(best[variant][1], cpu))
                logs[variant] = log
        same = logs[SHIPPED].equals(logs[BASELINE]) and list(logs[SHIPPED].columns) == list(logs[BASELINE].columns)
        rounds = len(log)
        base = best[BASELINE][0]
        for variant, (wall, cpu) in best.items():
            rows.append(dict(case=name, clients=n, rounds=rounds, variant=variant,
                             wall_us_per_round=round(1e6 * wall / rounds, 3), cpu_us_per_round=round(1e6 * cpu / rounds, 3),
                             wall_vs_positional_list=round(wall / base, 4), same_log=same,
                             **report.host_columns("float64", 1)))
            print(f"{name:34s} N={n:3d} {variant:34s} {1e6 * wall / rounds:7.3f} us/round wall "
                  f"({1e6 * cpu / rounds:7.3f} CPU)  x{wall / base:.3f}  log {'identical' if same else 'DIFFERS'}",
                  flush=True)
        if not same:
            raise SystemExit(f"{name}: the two rows give different logs")
    making = _making(args.repeats)
    per_round = min(r["wall_us_per_round"] for r in rows if r["variant"] == SHIPPED)
    base = making[BASELINE]
    for variant, us in making.items():
        rows.append(dict(case="making one row", variant=variant, wall_us_per_round=round(us, 4),
                         wall_vs_positional_list=round(us / base, 4), extra_pct_of_twin_round=round(100 * (us - base) / per_round, 2),
                         **report.host_columns("float64", 1)))
        print(f"making one row: {variant:38s} {1e3 * us:6.0f} ns  ({100 * (us - base) / per_round:+5.1f} % of the "
              f"fastest twin round, {per_round:.2f} us)", flush=True)
    report.save(rows, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
