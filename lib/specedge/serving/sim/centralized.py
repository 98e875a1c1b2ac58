"""Centralized serving, WISP's second baseline: every token generated on the server, continuously batched.

No drafting, no verification: each device sends a prompt and the server decodes it together with every
other device's response, one token per response per step (continuous batching: a new prompt's prefill
joins the next step; a finished response leaves). With a ``memory_budget`` (bytes of KV), a prompt joins
only while the running responses' KV fits it, each reserving its whole response, (prompt +
max_new_tokens) x ``workload.kv_bytes_per_token`` (the same budget as WISP's eq (14), held without
preemption); the others wait, first come first served, and their wait counts in their first token's
time. Each generated token is one "iteration" of the token
speed of eq (4): N^v = 1 over the time since the device's previous token, so the per-round log and every
metric (``slo``) are the same as for the speculative systems.

- ``simulate(workload, step_time, ...)``: the twin. ``step_time`` is a ``VerifyTimeModel`` (e.g. the
  eq (19) estimator) applied to the step's batch — decodes as (1 new token, context cached), prefills as
  (prompt tokens, nothing cached) — so one runtime model prices all three systems.
- ``run_real(model, prompts, ...)``: the real thing on this machine, through transformers' own
  continuous batching (``generate_batch`` with per-token timestamps; paged KV cache, FIFO scheduler),
  logged the same way; ``step_time_of(real_log)`` gives the twin a step time from it.
- ``on_device(...)``: the same loop with one device and no round trip, every token decoded on the device
  itself at a fixed step time (the reference "AR on the edge": nothing on the link).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from ..interfaces import Pending, VerifyTimeModel
from ..log import from_columns
from ..workload import ClientSpec, Workload

if TYPE_CHECKING:
    from ..timemodels.estimator import Estimator


def _tokens(system: str, label: str, round, client, t_verify, t_round, start, end, slo_class) -> pd.DataFrame:
    """The log of generated tokens, given as columns (one value per token): the ``round``-th token of device
    ``client``, decoded in a step from ``start`` to ``end`` (s) that took ``t_verify`` (s; NaN: unknown), ``t_round``
    s after the device's previous token, the device's ``slo_class``. The twin's step is its batch (the real run's:
    -1, unknown); nothing drafted, nothing on the link (0), no deadline (NaN)."""
    return from_columns(system=system, policy=label, batch=round if system == "twin" else -1, round=round, client=client,
                        S=0.0, accepted=0.0, tokens=1, t_draft=0.0, t_receive=0.0, t_queue=0.0, t_verify=t_verify,
                        t_send=0.0, t_round=t_round, bytes_up=0.0, bytes_down=0.0, arrival=start, start=start, end=end,
                        slo_class=slo_class, deadline=np.nan, event="")


def simulate(workload: Workload, step_time: VerifyTimeModel, *, until: float, rtt: float = 0.0,
             label: str = "Centralized", memory_budget: float = math.inf) -> pd.DataFrame:
    """Continuous-batching decode loop for ``until`` simulated seconds; one log row per generated token.

    Device ``c`` (``workload.clients[c]``) generates ``max_new_tokens`` per response from a prompt of
    ``prompt_tokens`` tokens, then sends its next prompt (after ``rtt`` seconds), forever.
    ``t_round`` of a token is the time since that device's previous token (for a response's first
    token: since its prompt was sent, i.e. TTFT).
    """
    specs = workload.clients
    if not specs:
        raise ValueError("workload.clients: at least one client is needed")
    if not until > 0:
        raise ValueError(f"until: must be > 0 seconds, got {until}")
    if not memory_budget > 0:
        raise ValueError(f"memory_budget: must be > 0 bytes, got {memory_budget!r}")
    per_prompt = [c for c, s in enumerate(specs) if isinstance(s.prompt_tokens, tuple)]
    if per_prompt:
        raise ValueError(f"workload.clients[{per_prompt[0]}].prompt_tokens: one length for every prompt here (the "
                         f"centralized baseline), got one per prompt {specs[per_prompt[0]].prompt_tokens!r}")
    n = len(specs)
    ctx = np.zeros(n, int)                 # tokens of the running response in the KV cache
    made = np.zeros(n, int)
    ready = np.zeros(n)                    # when the device's next prompt reaches the server
    last = np.zeros(n)                     # time of the device's previous token (or prompt sent)
    running = np.zeros(n, bool)
    prompt = np.array([max(1, s.prompt_tokens) for s in specs])
    limit = np.array([s.max_new_tokens for s in specs])
    slo = [s.slo_class for s in specs]
    need = (prompt + limit) * float(workload.kv_bytes_per_token)   # KV reserved by a running response
    if memory_budget < math.inf and (need > memory_budget).any():
        c = int(np.argmax(need > memory_budget))
        raise ValueError(f"client {c}: one response needs {need[c]:g} bytes of KV, over memory_budget {memory_budget:g}")
    now, step = 0.0, 0
    devices, t_round, steps = [], [], []   # per step: its devices, their tokens' t_round, (start, seconds, end)
    while now < until:
        joining = ~running & (ready <= now)
        if memory_budget < math.inf and joining.any():
            wait = np.flatnonzero(joining)
            wait = wait[np.lexsort((wait, ready[wait]))]                 # first come, first served
            free = memory_budget - float(need[running].sum())
            fits = np.cumsum(need[wait]) <= free
            k = len(fits) if fits.all() else int(np.argmin(fits))          # no skipping ahead
            joining[wait[k:]] = False
        if not running.any() and not joining.any():
            now = float(ready.min())
            continue
        batch = [Pending(int(c), f"{c}", step, now, 0, 1, int(ctx[c])) for c in np.flatnonzero(running)]
        batch += [Pending(int(c), f"{c}", step, now, 0, int(prompt[c]), 0) for c in np.flatnonzero(joining)]
        dt = float(step_time(batch))
        if not dt > 0:   # a zero-time step would loop for ever without advancing the clock
            raise ValueError(f"step_time: {dt!r} s for a step of {len(batch)} sequences at t = {now:.3f} s; the "
                             "runtime model must give a positive time (a fit used outside its range?)")
        end = now + dt
        if end > until:
            break
        running |= joining
        ctx[joining] = prompt[joining]
        decoding = np.flatnonzero(running)
        devices.append(decoding)
        t_round.append(end - last[decoding])
        steps.append((now, dt, end))
        last[running] = end
        ctx[running] += 1
        made[running] += 1
        done = running & (made >= limit)
        running &= ~done
        made[done], ctx[done] = 0, 0
        ready[done] = end + rtt
        last[done] = end + rtt
        now, step = end, step + 1
    counts = [len(d) for d in devices]
    client = np.concatenate(devices) if devices else np.zeros(0, np.int64)
    start, t_verify, end = (np.repeat(np.array(col, float), counts) for col in (zip(*steps) if steps else [()] * 3))
    return _tokens("twin", label, np.repeat(np.arange(len(steps)), counts), client, t_verify,
                   np.concatenate(t_round) if t_round else np.zeros(0), start, end, np.array(slo, object)[client].tolist())


@lru_cache(maxsize=64)
def on_device(model: str, s_per_token: float, prompt_tokens: int, max_new_tokens: int, slo_class, horizon_s: float,
              label: str = "") -> pd.DataFrame:
    """One device decoding its own responses with ``model``, one token per step of ``s_per_token`` seconds (its
    prompt's prefill one such step), back to back until ``horizon_s``, nothing on the link: ``simulate`` with one
    device and no round trip (deterministic, so devices alike share it: a caller copies before changing it)."""
    one = Workload(model, (ClientSpec(model, max_new_tokens=max_new_tokens, slo_class=slo_class, prompt_tokens=prompt_tokens),),
                   capacity=1)
    return simulate(one, lambda batch: s_per_token, until=horizon_s, rtt=0.0, label=label)


def step_time_of(real_log: pd.DataFrame) -> "Estimator":
    """The twin's step time from a real run: the median interval between a response's consecutive
    tokens (every response decodes in every step), as a constant eq (19) model. It prices prefill
    steps like decode steps, so it validates the batching loop and its token accounting, not a runtime
    model of the engine."""
    from ..timemodels.estimator import Estimator

    steps = real_log.groupby("client")["t_round"].apply(lambda s: s.iloc[1:]).to_numpy(float)
    if not len(steps):
        raise ValueError("real_log: needs responses of at least two tokens")
    return Estimator(0.0, 0.0, 0.0, float(np.median(steps)))


PAGE_TOKENS = 256      # transformers' default page size of its paged KV cache


def cache_config(prompts: Sequence[Sequence[int]], max_new_tokens: int, max_batch_tokens: int | None = None) -> dict:
    """``ContinuousBatchingConfig`` arguments for ``run_real``: a paged KV cache of as many blocks as the requests
    can fill (each its prompt and ``max_new_tokens``, in pages of ``PAGE_TOKENS``). Left unset, transformers sizes
    the cache from the free memory (90 % of it: 13.6 GB of this 24 GiB machine for the CI-scale run)."""
    blocks = sum(math.ceil((len(p) + max_new_tokens) / PAGE_TOKENS) for p in prompts)
    return dict(num_blocks=blocks, page_size=PAGE_TOKENS, **({"max_batch_tokens": max_batch_tokens} if max_batch_tokens else {}))


def run_real(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, *,
             slo_classes: Sequence[int | None] | None = None, label: str = "Centralized",
             max_batch_tokens: int | None = None) -> pd.DataFrame:
    """All ``prompts`` generated at once through transformers' continuous batching (greedy); one log row
    per generated token, ``t_round`` = time since the request's previous token (first: since submission)."""
    from transformers import ContinuousBatchingConfig, GenerationConfig

    if not prompts:
        raise ValueError("prompts: at least one prompt is needed")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens: must be >= 1, got {max_new_tokens}")
    slo_classes = list(slo_classes) if slo_classes is not None else [None] * len(prompts)
    gc = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=-1,
                          pad_token_id=int(getattr(model.config, "pad_token_id", 0) or 0))
    cbc = ContinuousBatchingConfig(**cache_config(prompts, max_new_tokens, max_batch_tokens))
    out = model.generate_batch([list(map(int, p)) for p in prompts], generation_config=gc,
                               continuous_batching_config=cbc, record_timestamps=True)
    rows = []
    t0 = min(o.created_time for o in out.values())
    for c in range(len(prompts)):
        o = out[f"req_{c}"]
        if o.error:
            raise RuntimeError(f"request {c}: {o.error}")
        prev = o.created_time
        for k, t in enumerate(o.timestamps):
            rows.append((k, c, t - prev, prev - t0, t - t0, slo_classes[c]))
            prev = t
    k, c, t_round, start, end, slo = (list(col) for col in zip(*rows)) if rows else ([],) * 6
    return _tokens("real", label, np.array(k, np.int64), np.array(c, np.int64), np.full(len(rows), np.nan),
                   np.array(t_round, float), np.array(start, float), np.array(end, float), slo)
