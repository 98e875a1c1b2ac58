"""FSD run for real: a client and a server in threads, with real queues, real models and injected delays.

The same protocol as ``early_exit.sim`` (read its docstring), executed instead of simulated, so the two can be
compared on the same zoo pair and profile:

- server thread: verifies each drafted block with the early-exit target (``early_exit.EarlyExits``); a
  forward hook computes exit l's outcome as soon as layer l has run and puts it into the server's
  ``queue.PriorityQueue`` (by confidence, or production order for FIFO); the final goes in with top
  priority. Each layer is padded with ``time.sleep`` so that it ends no earlier than l/L · T_t;
- sender thread: takes one message at a time, sleeps T_c/2 (the wire) and hands it to the client;
  messages of a round whose final has already left are dropped;
- client: ``threads`` pre-drafting threads take exits from the client's queue (priority / FIFO /
  random), draft γ greedy tokens after the exit's prefix with the real draft model (padded to γ·T_d)
  and store them in the pre-draft cache; the main thread sends drafts (after T_c/2), waits for the
  final, looks it up in the cache (hit = finished pre-draft, miss = draft now)
  and starts the next round. A new round abandons the pre-drafts still running. As in ``early_exit.sim``, a
  pre-draft still running when the final arrives is a miss unless ``config.running == "wait"``.

All profile times are multiplied by ``time_scale`` (wall seconds per profile second) so a run at a
Jetson's pace takes a fraction of the wall time; reported times are divided by it again. Real compute
adds to the padding where it exceeds the scaled budget. Nothing here is deterministic in time:
measurements of this run are written to ``data/venkatesha2025/`` by ``python -m
specedge.experiments.venkatesha2025.measure`` (``make profiles``), never taken inside a notebook. The tokens
are deterministic: the final exit decides, so they equal greedy SD.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from .. import sampling
from ..decoding import CausalLM
from .sim import ExitOutcome, FSDConfig, SimResult, pick_index

__all__ = ["run", "ConcurrentResult", "against_simulation", "against_simulation_by_domain"]


@dataclass
class ConcurrentResult(SimResult):
    """``SimResult`` of a real run (time in profile seconds: wall / time_scale) plus the tokens."""
    tokens_out: list[list[int]] = field(default_factory=list, repr=False)
    wall_s: float = 0.0


class _Entry:
    def __init__(self):
        self.ready = threading.Event()
        self.drafts: torch.Tensor | None = None


class _Client:
    """Shared state of the client: the current round, its exit queue and pre-draft cache."""

    def __init__(self, cfg: FSDConfig, rng):
        self.cfg, self.rng = cfg, rng
        self.cond = threading.Condition()
        self.round = 0
        self.items: list[ExitOutcome] = []
        self.cache: dict[tuple[int, int], _Entry] = {}
        self.prefix: torch.Tensor | None = None
        self.draft_ids: torch.Tensor | None = None
        self.changed = threading.Event()
        self.stop = False

    def add(self, rnd: int, e: ExitOutcome) -> None:
        with self.cond:
            if rnd == self.round:
                self.items.append(e)
                self.cond.notify()

    def pick(self) -> ExitOutcome:
        return self.items.pop(pick_index(self.items, self.cfg.client_queue, self.rng))

    def advance(self) -> None:
        with self.cond:
            self.round += 1
            self.items.clear()
            self.cache = {}
            old, self.changed = self.changed, threading.Event()
        old.set()


def _pace(t0: float, budget: float, abort: threading.Event | None = None) -> bool:
    """Sleep until ``t0 + budget`` (wall); False if ``abort`` fired first."""
    left = t0 + budget - time.perf_counter()
    if left <= 0:
        return not (abort is not None and abort.is_set())
    if abort is None:
        time.sleep(left)
        return True
    return not abort.wait(left)


def _draft(model, prefix: torch.Tensor, gamma: int, t0: float, budget: float,
           abort: threading.Event | None = None) -> torch.Tensor | None:
    """γ greedy draft tokens after ``prefix`` (no cache), padded to ``budget`` wall seconds."""
    runner, out, pending = CausalLM(model), [], prefix
    with torch.inference_mode():
        for _ in range(gamma):
            if abort is not None and abort.is_set():
                return None
            tok = runner.feed(pending)[-1].argmax(-1, keepdim=True)
            out.append(tok)
            pending = tok
    if not _pace(t0, budget, abort):
        return None
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.long)


def run(draft, ee, prompts, max_new_tokens: int, config: FSDConfig, mode: str = "fsd",
        time_scale: float = 0.1, eos_token_id: int | None = None, torch_threads: int = 1) -> ConcurrentResult:
    """Run SD or FSD between a client and a server thread on real models (see module docstring)."""
    if mode not in ("sd", "fsd"):
        raise ValueError(f"mode must be 'sd' or 'fsd', got {mode!r}")
    if not (isinstance(time_scale, (int, float)) and time_scale > 0):
        raise ValueError(f"time_scale must be a number > 0 (wall seconds per profile second), got {time_scale!r}")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    prompts = [torch.as_tensor(p, dtype=torch.long).reshape(-1) for p in prompts]
    cfg, s, fsd = config, float(time_scale), mode == "fsd"
    gamma, L = cfg.gamma, ee.n_layers
    client = _Client(cfg, np.random.default_rng(cfg.seed))
    to_server: queue.Queue = queue.Queue()
    outbox: queue.PriorityQueue = queue.PriorityQueue()
    finals: queue.Queue = queue.Queue()
    counter = [0]

    def put(prio, rnd, msg):
        counter[0] += 1
        outbox.put((prio, counter[0], rnd, msg))

    def server():
        from . import LayerStream
        state = {}

        def emit(e: ExitOutcome):
            if cfg.dedupe and e.key in state["seen"]:
                return
            state["seen"].add(e.key)
            _pace(state["t0"], e.layer / L * cfg.T_t * s)
            put((1, -e.confidence if cfg.server_queue == "priority" else e.layer), state["rnd"], e)

        stream = LayerStream(ee, emit if fsd else (lambda e: None))
        runner = None
        with torch.inference_mode(), ee.capture(on_layer=stream):
            while True:
                req = to_server.get()
                if req is None:
                    put((-1, 0), -1, None)
                    return
                rnd, new_seq, pending, draft_ids = req
                if new_seq:
                    runner = CausalLM(ee.target)
                state.update(t0=time.perf_counter(), rnd=rnd, seen=set())
                m, g = pending.shape[0], draft_ids.shape[0]
                stream.start, stream.draft_ids = m - 1, draft_ids
                before = runner.length
                logits = runner.feed(torch.cat([pending, draft_ids]), keep=g + 1)
                v = sampling.verify_greedy(draft_ids, logits.argmax(-1))
                n = int(v.accepted)
                runner.crop(before + m + n)
                _pace(state["t0"], cfg.T_t * s)
                put((0, 0), rnd, ("final", n, int(v.token)))

    def sender():
        done_rounds = set()
        while True:
            _, _, rnd, msg = outbox.get()
            if msg is None:
                return
            if rnd in done_rounds:
                continue  # stale early exit of a finished round
            time.sleep(cfg.T_c / 2 * s)
            if isinstance(msg, tuple):
                done_rounds.add(rnd)
                finals.put((rnd, msg))
            else:
                client.add(rnd, msg)

    def worker():
        while True:
            with client.cond:
                while not client.items and not client.stop:
                    client.cond.wait()
                if client.stop:
                    return
                e = client.pick()
                if cfg.dedupe and e.key in client.cache:
                    continue
                entry = client.cache.setdefault(e.key, _Entry())
                prefix = torch.cat([client.prefix, client.draft_ids[:e.accepted], torch.tensor([e.token])])
                abort = client.changed
            t0 = time.perf_counter()
            drafts = _draft(draft, prefix, gamma, t0, gamma * cfg.T_d * s, abort)
            if drafts is not None and not entry.ready.is_set():
                entry.drafts = drafts
                entry.ready.set()

    threads = [threading.Thread(target=server, daemon=True), threading.Thread(target=sender, daemon=True)]
    threads += [threading.Thread(target=worker, daemon=True) for _ in range(cfg.threads if fsd else 0)]
    old_threads = torch.get_num_threads()
    torch.set_num_threads(torch_threads)
    for t in threads:
        t.start()
    log, outputs = [], []
    wall0 = time.perf_counter()
    rnd = 0
    try:
        for seq, prompt in enumerate(prompts):
            generated, tokens = 0, []
            g = min(gamma, max_new_tokens - 1)
            t0 = time.perf_counter()
            drafts = _draft(draft, prompt, g, t0, g * cfg.T_d * s)
            pending, new_seq, k = prompt, True, 0
            while True:
                start = time.perf_counter()
                with client.cond:
                    client.prefix = torch.cat([prompt, torch.tensor(tokens, dtype=torch.long)])
                    client.draft_ids = drafts
                time.sleep(cfg.T_c / 2 * s)
                to_server.put((rnd, new_seq, pending, drafts))
                new_seq = False
                got, (_, n, token) = finals.get()
                arrived = time.perf_counter()
                new = drafts[:n].tolist() + [token]
                if eos_token_id is not None and eos_token_id in new:
                    new = new[: new.index(eos_token_id) + 1]
                tokens += new
                generated += len(new)
                last = generated >= max_new_tokens or (eos_token_id is not None and new[-1] == eos_token_id)
                outcome = "last"
                if not last:
                    g = min(gamma, max_new_tokens - generated - 1)
                    with client.cond:
                        entry = client.cache.get((n, token)) if fsd else None
                    if entry is not None and not (entry.ready.is_set() or cfg.running == "wait"):
                        entry = None  # still running: the paper's cache holds finished pre-drafts only
                    if entry is None:
                        outcome = "miss"
                        client.advance()
                        prefix = torch.cat([prompt, torch.tensor(tokens, dtype=torch.long)])
                        t0 = time.perf_counter()
                        drafts = _draft(draft, prefix, g, t0, g * cfg.T_d * s)
                    else:
                        outcome = "hit" if entry.ready.is_set() else "partial"
                        entry.ready.wait()
                        drafts = entry.drafts[:g]
                        client.advance()
                        time.sleep(cfg.t_sync * s)
                else:
                    client.advance()
                log.append(dict(sequence=seq, round=k, start_s=(start - wall0) / s, final_s=(arrived - wall0) / s,
                                end_s=(time.perf_counter() - wall0) / s, outcome=outcome, tokens=len(new)))
                pending = torch.tensor([token])
                rnd, k = rnd + 1, k + 1
                if last:
                    break
            outputs.append(tokens)
    finally:
        to_server.put(None)
        with client.cond:
            client.stop = True
            client.cond.notify_all()
        for t in threads:
            t.join(timeout=5)
        torch.set_num_threads(old_threads)
    wall = time.perf_counter() - wall0
    frame = pd.DataFrame(log)
    return ConcurrentResult(time_s=wall / s, tokens=int(frame.tokens.sum()), rounds=len(frame),
                            checks=int((frame.outcome != "last").sum()),
                            misses=int((frame.outcome == "miss").sum()),
                            partial_hits=int((frame.outcome == "partial").sum()), log=frame,
                            tokens_out=outputs, wall_s=wall)


def against_simulation(draft, ee, prompts, max_new_tokens: int, config: FSDConfig, traces, time_scale: float,
                       seeds=range(5)) -> pd.DataFrame:
    """SD and FSD run for real once each, next to ``early_exit.sim`` on ``traces`` (the same prompts' rounds) at each
    of ``seeds``: one row per seed with both cache-miss rates, checks and SD->FSD speedups."""
    from .sim import simulate
    t0 = time.perf_counter()
    real_sd = run(draft, ee, prompts, max_new_tokens, config, "sd", time_scale=time_scale)
    real_fsd = run(draft, ee, prompts, max_new_tokens, config, "fsd", time_scale=time_scale)
    wall = time.perf_counter() - t0
    rows = []
    for seed in seeds:
        c = config.with_(seed=seed)
        sim_sd, sim_fsd = simulate(traces, c, "sd"), simulate(traces, c, "fsd")
        rows.append(dict(seed=seed, prompts=len(prompts), max_new=max_new_tokens, threads=c.threads, time_scale=time_scale,
                         checks_sim=sim_fsd.checks, checks_concurrent=real_fsd.checks, miss_rate_sim=sim_fsd.miss_rate,
                         miss_rate_concurrent=real_fsd.miss_rate, speedup_sd_fsd_sim=sim_sd.time_s / sim_fsd.time_s,
                         speedup_sd_fsd_concurrent=real_sd.time_s / real_fsd.time_s, wall_s=wall))
    return pd.DataFrame(rows)


def against_simulation_by_domain(sets, prof, clients=("jetson", "rtx"), domains=None, n_prompts: int = 2,
                                 max_new: int = 32, time_scale: float = 0.2, seed: int = 0) -> pd.DataFrame:
    """SD and FSD run for real (``run``) next to ``early_exit.sim`` on the same prompts' traced rounds, once per model set
    of ``sets`` (``zoo_adapters.load_sets``), client of ``prof`` (its ``<client>_<set>`` timings) and zoo domain
    (``n_prompts`` held-out prompts each): one row each with both cache-miss rates, partial hits, times and speedups."""
    from tqdm.auto import tqdm

    from .. import zoo
    from ..zoo import corpus
    from . import collect_traces
    from .sim import simulate
    domains = list(corpus.DOMAINS if domains is None else domains)
    rows = []
    jobs = [(s, c, d) for s in sets for c in clients for d in domains]
    for set_name, client, domain in tqdm(jobs, desc="concurrent vs simulated"):
        _, _, draft, ee, tok = sets[set_name]
        prompts = [tok(p)["input_ids"] if isinstance(p, str) else p for p in zoo.eval_prompts(domain, n_prompts)]
        traces = collect_traces(draft, ee, prompts, max_new, progress=False)
        cfg = FSDConfig.from_profile(prof, f"{client}_{set_name}", seed=seed)
        sim_sd, sim_fsd = simulate(traces, cfg, "sd"), simulate(traces, cfg, "fsd")
        real_sd = run(draft, ee, prompts, max_new, cfg, "sd", time_scale=time_scale)
        real_fsd = run(draft, ee, prompts, max_new, cfg, "fsd", time_scale=time_scale)
        rows.append(dict(set=set_name, client=client, domain=domain, prompts=len(prompts), tokens=sim_fsd.tokens,
                         checks=sim_fsd.checks, threads=cfg.threads, time_scale=time_scale,
                         miss_rate_sim=sim_fsd.miss_rate, miss_rate_concurrent=real_fsd.miss_rate,
                         partial_sim=sim_fsd.partial_hits, partial_concurrent=real_fsd.partial_hits,
                         speedup_sd_fsd_sim=sim_sd.time_s / sim_fsd.time_s,
                         speedup_sd_fsd_concurrent=real_sd.time_s / real_fsd.time_s,
                         sd_time_sim_s=sim_sd.time_s, sd_time_concurrent_s=real_sd.time_s,
                         fsd_time_sim_s=sim_fsd.time_s, fsd_time_concurrent_s=real_fsd.time_s))
    return pd.DataFrame(rows)
