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

from ..interfaces import LOG_COLUMNS, Pending, VerifyTimeModel
from ..workload import ClientSpec, Workload

if TYPE_CHECKING:
    from ..timemodels.estimator import Estimator


def _rows_frame(rows: list[tuple], system: str, label: str) -> pd.DataFrame:
    cols = ["round", "client", "tokens", "t_verify", "t_round", "start", "end", "slo_class"]
    df = pd.DataFrame(rows, columns=cols)
    df.insert(0, "system", system)
    df.insert(1, "policy", label)
    for c in LOG_COLUMNS:
        if c not in df:
            df[c] = 0.0 if c.startswith(("t_", "bytes")) or c in ("S", "accepted", "batch", "arrival") else ""
    df["batch"] = df["round"] if system == "twin" else -1
    df["arrival"], df["deadline"] = df["start"], np.nan
    return df[LOG_COLUMNS]


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
    now, step, rows = 0.0, 0, []
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
        for c in np.flatnonzero(running):
            rows.append((step, int(c), 1, dt, end - last[c], now, end, slo[c]))
        last[running] = end
        ctx[running] += 1
        made[running] += 1
        done = running & (made >= limit)
        running &= ~done
        made[done], ctx[done] = 0, 0
        ready[done] = end + rtt
        last[done] = end + rtt
        now, step = end, step + 1
    return _rows_frame(rows, "twin", label)


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
            rows.append((k, c, 1, np.nan, t - prev, prev - t0, t - t0, slo_classes[c]))
            prev = t
    return _rows_frame(rows, "real", label)
