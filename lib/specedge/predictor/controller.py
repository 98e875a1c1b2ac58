"""The drafting controller (li2026): Controller (Sec 4.1)

``StopAtFirstPredictedRejection(predictor, max_window)`` plugs into ``decoding.speculative`` as
``gamma=`` (the window cap), ``stop_rule=`` (the predictor says "rejected") and
``stop_before=True``: the position the predictor first predicts rejected is not drafted, the
paper's eq (25) (``expected_waste``). ``exclusive=False`` still sends that token (the inclusive
rule, ``expected_waste(..., inclusive=True)``).

``controller_ablation`` is Table 5: the same prompts with a fixed window (OFF) and with the controller (ON).
``replay_stop_rule`` poses Table 5 on committed fixed-window traces without running a model (the real pair's).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from .. import sampling, zoo
from .dataset import STATS, features
from .models import Predictor


# --------------------------------------------------------------------------- controller
class StopAtFirstPredictedRejection:
    """WISP's drafting controller (Sec 4.1): draft until the predictor says "rejected", at most
    ``max_window`` tokens.

    Use as ``ctl.speculative(...)`` / ``ctl.speculative_batch(...)``, or pass ``gamma=ctl.gamma,
    stop_rule=ctl.stop_rule, stop_before=ctl.exclusive`` to ``decoding``. The features of position i
    are ``sampling.logit_stats`` of the draft's raw logits there plus ``i``. ``exclusive`` (default,
    eq (25)): drafting stops *before* the first position predicted rejected; ``False``: after it.
    ``predictor`` may be a ``Predictor`` or any callable ``features (1, 5) -> P(accepted)`` with a
    ``threshold`` attribute (tests use constant ones).
    """

    def __init__(self, predictor, max_window: int, exclusive: bool = True):
        self.predictor = predictor
        self.max_window = sampling.check_gamma(max_window)
        self.exclusive = bool(exclusive)
        self.calls = 0

    def gamma(self, row: int, rounds: list) -> int:
        return self.max_window

    def features(self, i: int, logits: torch.Tensor) -> np.ndarray:
        stats = sampling.logit_stats(logits)
        return np.array([[float(stats[k]) for k in STATS] + [float(i)]], dtype=np.float32)

    def stop_rule(self, i: int, logits: torch.Tensor) -> bool:
        """True when the predictor predicts rejection of position i (stop before it, or after it)."""
        self.calls += 1
        x = self.features(i, logits)
        if isinstance(self.predictor, Predictor):
            return bool(self.predictor.predict(x)[0] == 0)
        return bool(float(self.predictor(x)) < getattr(self.predictor, "threshold", 0.5))

    def speculative(self, draft, target, prompt, max_new_tokens: int, **kwargs):
        from .. import decoding

        return decoding.speculative(draft, target, prompt, max_new_tokens, gamma=self.gamma,
                                    stop_rule=self.stop_rule, stop_before=self.exclusive, **kwargs)

    def speculative_batch(self, draft, target, prompts, max_new_tokens: int, **kwargs):
        from .. import decoding

        return decoding.speculative_batch(draft, target, prompts, max_new_tokens, gamma=self.gamma,
                                          stop_rule=self.stop_rule, stop_before=self.exclusive, **kwargs)


def draft_passes(drafted, cap, exclusive: bool = True) -> np.ndarray:
    """Draft-model passes of controlled rounds: ``drafted``, plus one where the exclusive rule (eq (25)) stopped
    the round before ``cap`` (the window it could draft): the drafter computed that position's logits, the
    predictor judged them and the token was never drafted. ``cap``: the window capped by the response's end
    (``decoding.SpeculativeDecoder.draft_row``), or the fixed-window round's drafted count in a replay.
    The serving twin charges the same pass (``serving.sim.twin.simulate``)."""
    drafted = np.asarray(drafted, int)
    return drafted + (bool(exclusive) & (drafted < np.asarray(cap, int)))


# --------------------------------------------------------------------------- controller ablation
def controller_ablation(draft_model, target_model, prompts: list, predictor, *, window: int = 8,
                        max_new_tokens: int = 48, temperature: float = 0.0, seed: int = 0,
                        exclusive: bool = True) -> pd.DataFrame:
    """Table 5: the same prompts decoded with a fixed window (OFF) and with the controller (ON).

    Returns one row per round with ``mode`` = "OFF"/"ON", ``prompt`` and ``passes`` (the draft-model passes it
    took, ``draft_passes``); the draft acceptance rate of a mode is ``sampling.acceptance_rate(accepted, drafted)``
    over its rows. ``predictor`` may also
    be a dict name -> predictor: one controlled run per entry, ``mode`` = its name (Theorem 1 live:
    wasted drafting per round of each predictor). ``exclusive``: the controller's stop rule (eq 25).
    """
    from .. import decoding

    controlled = predictor if isinstance(predictor, dict) else {"ON": predictor}
    if "OFF" in controlled:
        raise ValueError("predictor: 'OFF' is reserved for the fixed-window run")
    frames = []
    for mode in ("OFF", *controlled):
        if mode == "OFF":
            gens = decoding.speculative_batch(draft_model, target_model, prompts, max_new_tokens,
                                              gamma=window, temperature=temperature, seed=seed)
        else:
            ctl = StopAtFirstPredictedRejection(controlled[mode], window, exclusive=exclusive)
            gens = ctl.speculative_batch(draft_model, target_model, prompts, max_new_tokens,
                                         temperature=temperature, seed=seed)
        for j, g in enumerate(gens):
            f = decoding.traces_frame(g.rounds, per="round", mode=mode, prompt=j)
            cap = np.minimum(window, max_new_tokens - f["position"].to_numpy() - 1)
            f["passes"] = f["drafted"] if mode == "OFF" else draft_passes(f["drafted"], cap, exclusive)
            frames.append(f.drop(columns=["t_draft", "t_verify"]))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- Table 5 replayed on traces
def replay_stop_rule(traces: pd.DataFrame, predictor, exclusive: bool = True) -> pd.DataFrame:
    """Table 5 replayed on fixed-window traces, no model run: per round, the fixed window (OFF) as traced
    (``drafted_OFF`` positions, ``accepted_OFF`` = L, the round's accepted length) and what the controller
    would have done on the same drafted positions (ON): draft s = the positions before the first one
    predicted rejected (eq 25; ``exclusive=False``: through it), of which min(L, s) are accepted.

    Exact for each round, since the controller only cuts the draft short and positions 1..s are the same
    draws; a live run's later rounds would start from other contexts (fewer tokens committed where the
    controller stops early), which a replay cannot follow. ``predictor``: a ``Predictor`` or a callable
    features -> P(accepted) with a ``threshold`` attribute, as for ``StopAtFirstPredictedRejection``.
    """
    keys = [c for c in ("draft", "target", "domain", "temperature", "prompt", "round") if c in traces]
    need = {"i", "round_accepted", *STATS}
    if not need <= set(traces.columns) or "round" not in keys:
        raise ValueError(f"traces need columns {sorted(need | {'round'})}, got {list(traces.columns)}")
    t = traces.sort_values([*keys, "i"], kind="stable")
    x = features(t)
    score = predictor.predict_proba(x) if isinstance(predictor, Predictor) else np.asarray(predictor(x), float)
    t = t.assign(_flag=np.asarray(score).reshape(-1) < getattr(predictor, "threshold", 0.5))
    rows = []
    for key, g in t.groupby(keys, sort=False):
        k, accepted = len(g), int(g["round_accepted"].iloc[0])
        flagged = np.flatnonzero(g["_flag"].to_numpy())
        stop = k if not len(flagged) else min(k, int(flagged[0]) + (0 if exclusive else 1))
        rows.append({**dict(zip(keys, key)), "drafted_OFF": k, "accepted_OFF": accepted,
                     "drafted_ON": stop, "accepted_ON": min(accepted, stop)})
    return pd.DataFrame(rows)


def replayed_rounds(replay: pd.DataFrame, traces: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``replay_stop_rule``'s rounds one row per (round, mode): OFF, the traced window, and ON, the stop rule's cut
    (its drafting passes ``draft_passes``: through the pass whose logits it judged where it cut), with ``drafted``,
    ``accepted``, ``passes`` and the round's first ``position`` in ``traces``; and the columns keying a round."""
    keys = [c for c in ("draft", "target", "domain", "temperature", "prompt", "round") if c in replay]
    if "position" not in traces or not set(keys) <= set(traces.columns):
        raise ValueError(f"traces need columns {sorted({'position', *keys})}, got {list(traces.columns)}")
    position = traces.groupby(keys, as_index=False).position.first()
    passes = {"OFF": replay["drafted_OFF"], "ON": draft_passes(replay["drafted_ON"], replay["drafted_OFF"])}
    rounds = pd.concat([replay[keys + [f"drafted_{m}", f"accepted_{m}"]]
                        .rename(columns={f"drafted_{m}": "drafted", f"accepted_{m}": "accepted"}).assign(mode=m, passes=passes[m])
                        for m in ("OFF", "ON")], ignore_index=True).merge(position, on=keys)
    return rounds, keys


def ablation_over_drafts(drafts: Sequence[str], target: str, ids: Mapping, domains: Sequence[str], controlled: Mapping,
                         window: int, tokens: int, temperature: float, seed: int):
    """For every draft, the test prompts decoded with a fixed window (OFF) and with each predictor's
    stop-at-first-predicted-rejection controller (``controller_ablation``); returns the rounds, the
    drafts' parameter counts and the prompts (of the last draft; every draft decodes the same texts)."""
    from .traces import zoo_prompts
    frames, sizes, prompts = [], {}, []
    for d in drafts:
        d_model, t_model, tok = zoo.load_pair(d, target)
        sizes[d] = sum(p.numel() for p in d_model.parameters())
        prompts = []
        for dom in domains:
            pool = zoo_prompts(tok, [dom], max(ids[dom]) + 1)[dom]
            prompts += [pool[j] for j in ids[dom]]
        ab = controller_ablation(d_model, t_model, prompts, controlled, window=window,
                                   max_new_tokens=tokens, temperature=temperature, seed=seed)
        frames.append(ab.assign(draft=d))
    return pd.concat(frames, ignore_index=True), sizes, prompts
