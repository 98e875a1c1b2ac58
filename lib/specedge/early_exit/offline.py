"""Early-exit adapters of a large frozen target, trained offline on its cached hidden states (venkatesha2025 Sec 3).

``early_exit.train`` runs the target once per step and every exit's loss over the full LM head; on a 1.5B target
with a 151,936-column head that is ~2 s per exit per 128 tokens on one CPU core, hours for every exit. Here:

1. ``extract``: the frozen target runs **once per record**; the residual stream at every exit position
   (``EarlyExits.capture``, the target's dtype) and the final layer's top-k token ids are stored per record
   (resumable: a record already on disk is skipped). Every epoch reuses them.
2. ``fit``: the adapters (float32 copies) are trained on the cached states with the loss
   **KL(p_L ‖ p_l) on a candidate vocabulary**: per minibatch of positions, C = the union of the final layer's
   top-k ids at those positions and ``negatives`` columns drawn uniformly from the rest of the vocabulary (fresh
   each minibatch); teacher and exit logits are the final norm and the head's C rows, both renormalised over C.
   The teacher's mass sits in its top-k, so this is the full KL up to the mass outside C, at |C| / V of the
   head's cost; the random negatives push down columns no teacher ranks high. One checkpoint per epoch
   (adapters, optimiser, losses, seconds): a rerun resumes after the last finished epoch.
3. ``agreement_frame``: on held-out positions, each exit's argmax over the **full** head (the target's dtype,
   as deployed) against the final layer's argmax, and its confidence (max softmax probability, eq 4), for the
   trained adapters and for the untrained ones (identity adapters: the logit lens of each layer).

``token_records`` turns corpus records into token ids; ``build`` runs the three steps in order and saves the adapters.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import torch
from tqdm.auto import tqdm

from . import EarlyExits, _parts, save

__all__ = ["extract", "load_split", "fit", "candidate_kl", "agreement_frame", "agreement_table", "token_records", "build",
           "CHECKPOINT"]

CHECKPOINT = "checkpoint.pt"


def _record_path(folder: Path, split: str, i: int) -> Path:
    return Path(folder) / f"{split}-{i:05d}.pt"


@torch.inference_mode()
def extract(ee: EarlyExits, records: Sequence[Sequence[int]], folder: Path, split: str, topk: int = 32,
            progress: bool = True) -> list[Path]:
    """Run the frozen target once over each record (token ids) and store, per record, ``hidden`` (T, P, d): the
    residual stream at every exit position p = 1..P (P: the final layer's output), and ``topk`` (T, k): the final
    layer's k most likely next tokens in order, and the record's ``ids``. A record already stored with the same ids
    is skipped (resumable); ``{split}.json`` lists the split's files for ``load_split``."""
    if not records:
        raise ValueError("records must hold at least one token sequence")
    if topk < 1:
        raise ValueError(f"topk must be >= 1, got {topk!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, ids in enumerate(tqdm(records, desc=f"hidden states ({split})", disable=not progress)):
        path = _record_path(folder, split, i)
        out.append(path)
        ids = [int(x) for x in ids]
        if len(ids) < 2:
            raise ValueError(f"record {i} of {split!r} has {len(ids)} token(s); at least 2 expected")
        if path.exists() and torch.load(path, weights_only=True).get("ids", torch.zeros(0)).tolist() == ids:
            continue
        with ee.capture() as hidden:
            logits = ee.target(input_ids=torch.tensor([list(ids)])).logits[0]
        state = dict(hidden=torch.stack([h[0] for h in hidden], 1).contiguous(),
                     topk=logits.float().topk(topk, -1).indices.to(torch.int32), ids=torch.tensor(ids))
        tmp = path.with_name(path.name + ".partial")
        torch.save(state, tmp)
        tmp.replace(path)
    (folder / f"{split}.json").write_text(json.dumps([p.name for p in out]) + "\n")
    return out


def load_split(folder: Path, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The records of ``split``'s last ``extract`` concatenated: hidden (N, P, d) and topk (N, k), a row per position."""
    listing = Path(folder) / f"{split}.json"
    if not listing.exists():
        raise FileNotFoundError(f"no cached hidden states {listing} (run extract first)")
    parts = [torch.load(Path(folder) / f, weights_only=True) for f in json.loads(listing.read_text())]
    return torch.cat([p["hidden"] for p in parts]), torch.cat([p["topk"] for p in parts])


def candidate_kl(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """KL(softmax(teacher) ‖ softmax(student)) per row, both logits over the same candidate columns (N, |C|)."""
    t = torch.log_softmax(teacher, -1)
    return (t.exp() * (t - torch.log_softmax(student, -1))).sum(-1)


def _candidates(topk: torch.Tensor, vocab: int, negatives: int, g: torch.Generator) -> torch.Tensor:
    cand = topk.flatten().long().unique()
    if negatives:
        cand = torch.cat([cand, torch.randint(0, vocab, (negatives,), generator=g)]).unique()
    return cand


def fit(ee: EarlyExits, hidden: torch.Tensor, topk: torch.Tensor, folder: Path, epochs: int, batch: int = 256,
        negatives: int = 2048, lr: float = 1e-3, seed: int = 0, progress: bool = True,
        on_epoch: Callable[[int, float], None] | None = None) -> dict:
    """Train ``ee``'s adapters on cached states (``load_split``) by ``candidate_kl`` summed over the early exits.

    A checkpoint per epoch goes to ``folder/CHECKPOINT``; a rerun continues after its last epoch. Returns the
    record: ``epochs_done``, ``loss`` (mean per exit, per epoch), ``train_seconds`` (summed over runs), sizes."""
    n, positions, d = hidden.shape
    if positions != ee.n_layers or d != ee.target.config.hidden_size:
        raise ValueError(f"hidden states (N, P, d) = {tuple(hidden.shape)} do not fit the target: P = {ee.n_layers} "
                         f"exit positions, d = {ee.target.config.hidden_size}")
    if epochs < 0 or batch < 1 or negatives < 0:
        raise ValueError(f"epochs >= 0, batch >= 1 and negatives >= 0 expected, got {epochs}, {batch}, {negatives}")
    _, norm, head = _parts(ee.target)
    dtype = next(ee.target.parameters()).dtype
    adapters = ee.adapters.float().train()
    opt = torch.optim.AdamW(adapters.parameters(), lr=lr, weight_decay=0.0)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ck_path = folder / CHECKPOINT
    record = dict(epochs_done=0, loss=[], train_seconds=0.0)
    if ck_path.exists():
        ck = torch.load(ck_path, weights_only=False)
        adapters.load_state_dict(ck["adapters"])
        opt.load_state_dict(ck["optimizer"])
        record = ck["record"]
    weight = head.weight
    vocab = weight.shape[0]
    for epoch in range(record["epochs_done"], epochs):
        t0 = time.perf_counter()
        g = torch.Generator().manual_seed(seed + epoch)
        order = torch.randperm(n, generator=g)
        total, steps = 0.0, 0
        bar = tqdm(range(0, n, batch), desc=f"adapters epoch {epoch + 1}/{epochs}", disable=not progress)
        for s in bar:
            idx = order[s: s + batch]
            h = hidden[idx].float()
            cand = _candidates(topk[idx], vocab, negatives, g)
            w = weight[cand].float()
            with torch.no_grad():
                teacher = norm(h[:, -1]).float() @ w.T
            loss = sum(candidate_kl(norm(adapters[l](h[:, l])).float() @ w.T, teacher).mean()
                       for l in range(ee.n_layers - 1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            value = float(loss.detach()) / (ee.n_layers - 1)
            total, steps = total + value, steps + 1
            bar.set_postfix(kl=f"{value:.3f}", candidates=len(cand))
        record["loss"].append(total / max(steps, 1))
        record["epochs_done"] = epoch + 1
        record["train_seconds"] += time.perf_counter() - t0
        tmp = ck_path.with_name(CHECKPOINT + ".partial")
        torch.save(dict(adapters=adapters.state_dict(), optimizer=opt.state_dict(), record=record), tmp)
        tmp.replace(ck_path)
        if on_epoch is not None:
            on_epoch(epoch + 1, record["loss"][-1])
    ee.adapters.to(dtype).eval()
    return dict(record, positions=n, batch=batch, negatives=negatives, lr=lr, seed=seed,
                loss_name="KL(final || exit) over the final's top-k + random negative columns")


@torch.inference_mode()
def agreement_frame(ee: EarlyExits, hidden: torch.Tensor, chunk: int = 64, progress: bool = True) -> pd.DataFrame:
    """Per held-out position x early exit: ``agree`` (the exit's argmax over the full head equals the final
    layer's) and ``confidence`` (its max softmax probability), for the trained adapters (``adapters``) and the
    identity adapters (``lens``: each layer's logit lens). Columns position, exit, kind, agree, confidence."""
    n, positions, _ = hidden.shape
    if positions != ee.n_layers:
        raise ValueError(f"hidden states have {positions} exit positions, the target {ee.n_layers}")
    _, norm, head = _parts(ee.target)
    dtype = next(ee.target.parameters()).dtype
    rows = []
    for s in tqdm(range(0, n, chunk), desc="exit agreement", disable=not progress):
        h = hidden[s: s + chunk].to(dtype)
        final = head(norm(h[:, -1])).float().argmax(-1)
        for l in range(1, ee.n_layers):
            for kind, x in (("adapters", ee.adapters[l - 1](h[:, l - 1])), ("lens", h[:, l - 1])):
                logits = head(norm(x)).float()
                conf = torch.softmax(logits, -1).amax(-1)
                agree = logits.argmax(-1) == final
                rows += [dict(position=s + j, exit=l, kind=kind, agree=bool(a), confidence=float(c))
                         for j, (a, c) in enumerate(zip(agree.tolist(), conf.tolist()))]
    return pd.DataFrame(rows, columns=["position", "exit", "kind", "agree", "confidence"])


def agreement_table(agree: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """``agreement_frame`` (with a ``record`` column: the held-out record of each position) per exit and kind: agreement,
    its 95 % interval resampling whole records (positions of one record are correlated), mean confidence, and the
    exit's depth (exit / P)."""
    from ..predictor.intervals import bootstrap_statistic
    if "record" not in agree:
        raise ValueError("agree needs a 'record' column (the held-out record of each position) for the interval")
    rows = []
    for (kind, e), g in agree.groupby(["kind", "exit"], sort=True):
        v, lo, hi = bootstrap_statistic(g, g.record.to_numpy(), lambda f: f.agree.mean(), n=n_boot, seed=seed)
        rows.append(dict(kind=kind, exit=e, depth=e / (agree.exit.max() + 1), agreement=v, low=lo, high=hi,
                         confidence=g.confidence.mean(), positions=len(g)))
    return pd.DataFrame(rows)


def token_records(tok, records, context: int) -> list[list[int]]:
    """Each corpus record's prompt + completion as token ids (no special tokens), cut at ``context`` tokens."""
    return [tok(r["prompt"] + r["completion"], add_special_tokens=False)["input_ids"][:context] for r in records]


def build(ee: EarlyExits, train_ids, held_ids, held_groups: Sequence[str], cache: Path, meta: dict, topk: int = 32,
          epochs: int = 3, batch: int = 128, negatives: int = 2048, lr: float = 1e-3, seed: int = 0,
          progress: bool = True, group_column: str = "group") -> tuple[dict, pd.DataFrame]:
    """``extract`` (train and held-out records, under ``cache/hidden``), ``fit`` (checkpoints in ``cache/fit``), the
    adapters saved to ``cache/adapters`` with ``meta`` (``early_exit.save``), then ``agreement_frame`` on the held-out
    positions with each position's ``record`` and its group (``held_groups``, one per held-out record; column
    ``group_column``). Every step
    resumes. Returns (the adapters' card: sizes, training record, seconds of each step; the agreement frame)."""
    if len(held_groups) != len(held_ids):
        raise ValueError(f"held_groups must name each of the {len(held_ids)} held-out records, got {len(held_groups)}")
    cache = Path(cache)
    t0 = time.perf_counter()
    extract(ee, train_ids, cache / "hidden", "train", topk=topk, progress=progress)
    extract(ee, held_ids, cache / "hidden", "held", topk=1, progress=progress)
    extract_s = time.perf_counter() - t0
    hidden, top = load_split(cache / "hidden", "train")
    record = fit(ee, hidden, top, cache / "fit", epochs, batch=batch, negatives=negatives, lr=lr, seed=seed,
                 progress=progress)
    del hidden, top
    save(ee, cache / "adapters", dict(record, **meta))
    held, _ = load_split(cache / "hidden", "held")
    t0 = time.perf_counter()
    agree = agreement_frame(ee, held, progress=progress)
    owner = [(i, g) for i, (g, ids) in enumerate(zip(held_groups, held_ids)) for _ in ids]
    agree.insert(1, "record", agree.position.map(lambda p: owner[p][0]))
    agree.insert(2, group_column, agree.position.map(lambda p: owner[p][1]))
    card = dict(layers=ee.n_layers // ee.per_layer, exits=ee.n_layers - 1, exits_per_layer=ee.per_layer, bottleneck=ee.rank,
                trainable_params=ee.trainable_parameters(), target_params=sum(p.numel() for p in ee.target.parameters()),
                param_fraction=ee.param_fraction(), train_records=len(train_ids), train_positions=record["positions"],
                held_records=len(held_ids), held_positions=int(held.shape[0]), epochs=record["epochs_done"],
                loss_per_epoch=record["loss"], loss=record["loss_name"], train_seconds=round(record["train_seconds"], 1),
                extract_seconds_last_run=round(extract_s, 1), agreement_seconds=round(time.perf_counter() - t0, 1),
                torch_threads=torch.get_num_threads(), torch=torch.__version__)
    return card, agree
