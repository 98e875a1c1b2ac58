"""Timed passes of a draft and an early-exit target (venkatesha2025 Table 5's T_d and T_t; Table 9's batches).

Each function returns the fastest of ``repeats`` timed runs (``specedge.timing``) after a cached random context:

- ``step_time``: ``new_tokens`` fed per row of a batch (a one-token step, a (γ + 1)-token verification);
- ``verify_time``: one verification pass of γ drafts with every early exit's outcome computed as its layer ends;
- ``draft_time``: γ tokens drafted greedily, one step each;
- ``local_profile``: this machine as a Table 5 row per model set (T_d, T_t, c, the loopback round trip T_c, threads),
  saved as a hardware profile.
"""
from __future__ import annotations

import os
from datetime import date

import pandas as pd
import torch
from tqdm.auto import tqdm

from .. import hardware, profiling, timing
from ..decoding import CausalLM
from ..kv_cache_arg import cache_kw
from . import EarlyExits, LayerStream

__all__ = ["step_time", "verify_time", "draft_time", "pair_passes", "batch_latency", "local_profile"]


def step_time(model, batch: int = 1, new_tokens: int = 1, context: int = 64, repeats: int = 15) -> float:
    """Seconds of feeding ``new_tokens`` per row after a cached ``context`` (batch rows; ``timing.fastest``)."""
    g = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    ctx = torch.randint(0, vocab, (batch, context), generator=g)
    new = torch.randint(0, vocab, (batch, new_tokens), generator=g)

    def once():
        from transformers import DynamicCache
        cache = DynamicCache(config=model.config)
        model(input_ids=ctx, **cache_kw(model, cache), use_cache=True, logits_to_keep=1)
        with timing.stopwatch() as t:
            model(input_ids=new, **cache_kw(model, cache), use_cache=True, logits_to_keep=new_tokens)
        return t.seconds

    with torch.inference_mode():
        return timing.fastest(once, repeats)


def verify_time(ee: EarlyExits, gamma: int = 4, context: int = 64, repeats: int = 21) -> float:
    """Seconds of one verification pass of γ drafts with every early exit's outcome computed (``timing.fastest``)."""
    vocab = ee.target.config.vocab_size
    g = torch.Generator().manual_seed(1)
    ctx = torch.randint(0, vocab, (context,), generator=g)
    drafts = torch.randint(0, vocab, (gamma,), generator=g)
    stream = LayerStream(ee, lambda e: None)

    def once():
        runner = CausalLM(ee.target)
        runner.feed(ctx)
        stream.start, stream.draft_ids = 0, drafts
        with timing.stopwatch() as t:
            runner.feed(torch.cat([ctx[-1:], drafts]), keep=gamma + 1)
        return t.seconds

    with torch.inference_mode(), ee.capture(on_layer=stream):
        return timing.fastest(once, repeats)


def draft_time(draft, gamma: int = 4, context: int = 64, repeats: int = 21) -> float:
    """Seconds to draft γ tokens greedily after a cached context (``timing.fastest``)."""
    vocab = draft.config.vocab_size
    ctx = torch.randint(0, vocab, (context,), generator=torch.Generator().manual_seed(2))

    def once():
        runner = CausalLM(draft)
        runner.feed(ctx)
        with timing.stopwatch() as t:
            tok = ctx[-1:]
            for _ in range(gamma):
                tok = runner.feed(tok)[-1].argmax(-1, keepdim=True)
        return t.seconds

    with torch.inference_mode():
        return timing.fastest(once, repeats)



def pair_passes(draft, ee: EarlyExits, gamma: int = 4, repeats: int = 9) -> dict[str, float]:
    """A draft/early-exit-target pair's passes in seconds: one-token steps of each (``draft_step_s``, ``target_step_s``),
    γ drafted tokens (``draft_gamma_s``), the target's (γ + 1)-token verification without and with every exit's
    outcome (``verify_s``, ``verify_exits_s``), and one exit's share of the difference (``exit_step_s``)."""
    out = dict(draft_step_s=step_time(draft, repeats=repeats), target_step_s=step_time(ee.target, repeats=repeats),
               draft_gamma_s=draft_time(draft, gamma, repeats=repeats),
               verify_s=step_time(ee.target, 1, gamma + 1, repeats=repeats), verify_exits_s=verify_time(ee, gamma, repeats=repeats))
    out["exit_step_s"] = (out["verify_exits_s"] - out["verify_s"]) / (ee.n_layers - 1)
    return out


def batch_latency(draft, target, batches, gamma: int = 4) -> pd.DataFrame:
    """Per batch size, ms of ``target`` verifying ``gamma`` + 1 tokens (``server_ms``) and of ``draft`` drafting one
    (``client_ms``), each after a cached 64-token context (``step_time``)."""
    rows = []
    for b in tqdm(batches, desc="batch latency"):
        rows.append(dict(batch=b, server_ms=1e3 * step_time(target, b, gamma + 1),
                         client_ms=1e3 * step_time(draft, b, 1)))
    return pd.DataFrame(rows)


def local_profile(sets, name: str, gamma: int = 4, source: str = "") -> hardware.Profile:
    """This machine as both client and server, one runtime row per model set of ``sets`` (name -> (draft name, target
    name, draft, ``EarlyExits``, tokenizer), as ``zoo_adapters.load_sets`` gives them): T_d_s drafting ``gamma``
    tokens, T_t_s one verification pass with every exit, c = T_d / γ / T_t, T_c_s the localhost round trip of 1 kB,
    threads the CPU cores. Saved as ``data/profiles/<name>.yaml`` (``source``: the command that measured it)."""
    rtt = profiling.loopback_rtt()
    runtime = {}
    for set_name, (dname, tname, draft, ee, _) in sets.items():
        td, tt = draft_time(draft, gamma), verify_time(ee, gamma)
        runtime[f"cpu_{set_name}"] = dict(model=f"zoo {dname}/{tname} on this CPU (Table 5 layout)", kind="draft_verify_comm",
                                          gamma=gamma,
                                          T_d_s=round(td, 6), T_t_s=round(tt, 6), c=round(td / gamma / tt, 4),
                                          T_c_s=round(rtt, 6), threads=os.cpu_count() or 1)
    data = dict(name=name, source=source,
                description="This machine as both client and server: drafting gamma = 4 tokens (T_d_s), one "
                            "verification pass with all early exits (T_t_s), localhost TCP round trip of 1 kB (T_c_s).",
                measured=dict(device=f"CPU, {os.cpu_count()} cores, torch {torch.__version__}, "
                                     f"{torch.get_num_threads()} threads", date=str(date.today())),
                devices={"cpu": {"description": "this machine"}}, links={}, runtime=runtime)
    hardware.save_profile(data)
    return hardware.load_profile(name)
