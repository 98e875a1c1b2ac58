"""The zoo's committed early-exit adapters (``ADAPTERS``, built by ``python -m specedge.early_exit build``): the check
that a set of pairs has them, the pairs loaded with them, and their card with each exit's agreement with the final layer on held-out text,
trained adapters against the logit lens (venkatesha2025 Table 2).
"""
from __future__ import annotations

import json
from typing import Mapping

import pandas as pd
import torch

from .. import paths, zoo
from ..zoo import corpus
from . import ADAPTERS, EarlyExits, agreement, load


def require(model_sets: Mapping[str, tuple[str, str]]) -> None:
    """Every (draft, target) pair of ``model_sets`` needs its committed checkpoints and the target's early-exit adapters
    (`make zoo` builds them); a missing one is an error naming it."""
    for d, t in model_sets.values():
        for need in (paths.ZOO / d / "card.json", paths.ZOO / t / "card.json", ADAPTERS / t / "meta.json"):
            if not need.exists():
                raise FileNotFoundError(f"{need} is missing: `make zoo` builds it (python -m specedge.zoo build; "
                                        "python -m specedge.early_exit build)")


def load_sets(model_sets: Mapping[str, tuple[str, str]]) -> dict[str, tuple]:
    """Each built (draft, target) pair of ``model_sets`` loaded with the target's adapters: name -> (draft name, target
    name, draft, ``EarlyExits``, tokenizer); a pair whose checkpoints or adapters are not built yet is skipped (said)."""
    sets = {}
    for name, (dname, tname) in model_sets.items():
        if not ((paths.ZOO / dname / "card.json").exists() and (ADAPTERS / tname / "meta.json").exists()):
            print(f"[measure] {name}: {dname}/{tname} or its adapters not built yet (make zoo), skipped")
            continue
        draft, target, tok = zoo.load_pair(dname, tname)
        ee, _ = load(target, ADAPTERS / tname)
        sets[name] = (dname, tname, draft, ee, tok)
    return sets


def card_and_agreement(records_per_domain: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The card of each zoo target's committed adapters (one row per target; venkatesha2025 Table 2's columns) and per-exit agreement with the final
    layer on held-out text (``records_per_domain`` records per domain, 128 tokens), adapters vs logit lens."""
    targets = [t for t in zoo.TARGETS if (ADAPTERS / t / "meta.json").exists()]
    metas = {t: json.loads((ADAPTERS / t / "meta.json").read_text()) for t in targets}
    t2 = pd.DataFrame([dict(model=t, exits=m["n_exits"], exits_per_layer=m.get("per_layer", 1), bottleneck=m["rank"],
                            params=m["trainable_params"], pct_params=round(100 * m["param_fraction"], 3),
                            context=m["context"], steps=m["steps_done"], train_minutes=round(m["train_seconds"] / 60, 1),
                            device=m["device"]) for t, m in metas.items()])
    tok = zoo.load_tokenizer()
    held = [torch.tensor(tok(r["prompt"] + r["completion"])["input_ids"][:128])[None]
            for d in corpus.DOMAINS for r in zoo.eval_records(d, records_per_domain)]
    agree = []
    for t in targets:
        ee_t, _ = load(zoo.load_model(t), ADAPTERS / t)
        lens = EarlyExits(ee_t.target, rank=ee_t.rank, per_layer=ee_t.per_layer)  # untrained = logit lens
        for kind, model in (("adapters", ee_t), ("logit lens (no training)", lens)):
            a, c = agreement(model, held)
            agree += [dict(model=t, exits=kind, position=k + 1, agreement=a[k], confidence=c[k]) for k in range(len(a))]
    return t2, pd.DataFrame(agree)
