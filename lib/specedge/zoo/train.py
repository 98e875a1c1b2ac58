"""Tokenizer training, target pre-training and draft distillation for the zoo (``make zoo``).

Targets are small ``LlamaForCausalLM`` models trained with next-token cross-entropy on the frozen
corpus. Drafts are distilled from a target (Hinton et al. 2015): the loss is
``w_kd * tau^2 * KL(softmax(z_t / tau) || softmax(z_d / tau)) + (1 - w_kd) * CE(z_d, next token)``,
so the draft learns the target's softened distribution, which is what the acceptance rule
``min(1, p/q)`` rewards. All drafts are distilled together so the teacher runs once per batch.

Resuming: every few minutes the weights, the Adam moments (safetensors, never pickle) and the
step counter go to ``build/zoo/ckpt/<name>/``; batches are a pure function of (seed, step), so a
resumed run sees the same data as an uninterrupted one. A finished model is a directory
``data/zoo/<name>/`` with ``card.json``; it is never retrained.
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, load_model, save_file, save_model
from tqdm.auto import tqdm

from .. import paths
from . import corpus

VOCAB_SIZE = 8192
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}
WORK = paths.BUILD / "zoo"
CHECKPOINT_EVERY_S = 120.0


@dataclass(frozen=True)
class Spec:
    """One zoo model: architecture plus its training recipe."""
    name: str
    role: str                 # "target" or "draft"
    hidden: int
    layers: int
    heads: int
    intermediate: int
    tokens: int               # training tokens
    lr: float
    stands_in_for: str
    teacher: str | None = None
    seq_len: int = 512
    batch: int = 4
    kd_weight: float = 0.8
    kd_tau: float = 1.5
    seed: int = 0
    extra: dict = field(default_factory=dict)

    def config(self):
        from transformers import LlamaConfig
        return LlamaConfig(
            vocab_size=VOCAB_SIZE, hidden_size=self.hidden, intermediate_size=self.intermediate,
            num_hidden_layers=self.layers, num_attention_heads=self.heads,
            num_key_value_heads=self.heads, max_position_embeddings=2048,
            tie_word_embeddings=True,  # the 8k embedding dominates small models: store it once
            bos_token_id=1, eos_token_id=2, pad_token_id=0, rms_norm_eps=1e-5)


# ----------------------------------------------------------------------------- tokenizer
def train_tokenizer(out_dir: Path, records: list[dict]):
    """Byte-level BPE with ~8k entries, saved so ``PreTrainedTokenizerFast`` loads it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = [SPECIAL["pad_token"], SPECIAL["bos_token"], SPECIAL["eos_token"], SPECIAL["unk_token"]]
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=True)
    tok.train_from_iterator((r["prompt"] + r["completion"] for r in records), trainer=trainer,
                            length=len(records))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIAL)
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out_dir)
    return fast


def token_stream(tokenizer, records: list[dict]) -> np.ndarray:
    """All training records as one id stream, each document closed by ``</s>``."""
    ids = tokenizer([r["prompt"] + r["completion"] for r in records], add_special_tokens=False)["input_ids"]
    eos = tokenizer.eos_token_id
    return np.fromiter((t for doc in ids for t in (*doc, eos)), dtype=np.int32)


def batch_at(stream: np.ndarray, spec: Spec, step: int) -> torch.Tensor:
    """Batch number ``step``: random windows of ``seq_len + 1`` ids, a pure function of (seed, step)."""
    rng = np.random.default_rng([spec.seed, step])
    starts = rng.integers(0, len(stream) - spec.seq_len - 1, size=spec.batch)
    return torch.from_numpy(np.stack([stream[s:s + spec.seq_len + 1] for s in starts]).astype(np.int64))


def lr_at(spec: Spec, step: int, total: int) -> float:
    warm = max(1, total // 20)
    if step < warm:
        return spec.lr * (step + 1) / warm
    frac = (step - warm) / max(1, total - warm)
    return spec.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


# ----------------------------------------------------------------------------- checkpoints
def _save_ckpt(d: Path, model, opt, state: dict) -> None:
    d.mkdir(parents=True, exist_ok=True)
    save_model(model, str(d / "model.tmp"))   # handles the tied embedding / lm_head pair
    moments = {}
    for i, p in enumerate(opt.param_groups[0]["params"]):
        st = opt.state.get(p)
        if st:
            moments[f"{i}.exp_avg"] = st["exp_avg"]
            moments[f"{i}.exp_avg_sq"] = st["exp_avg_sq"]
            moments[f"{i}.step"] = torch.as_tensor(st["step"], dtype=torch.float64).reshape(1)
    save_file(moments, d / "optim.tmp")
    (d / "state.tmp").write_text(json.dumps(state))
    for stem in ("model", "optim"):  # rename last: a kill mid-write leaves the old checkpoint intact
        os.replace(d / f"{stem}.tmp", d / f"{stem}.safetensors")
    os.replace(d / "state.tmp", d / "state.json")


def _load_ckpt(d: Path, model, opt) -> dict | None:
    if not (d / "state.json").exists():
        return None
    load_model(model, str(d / "model.safetensors"))
    moments = load_file(d / "optim.safetensors")
    for i, p in enumerate(opt.param_groups[0]["params"]):
        if f"{i}.exp_avg" in moments:
            opt.state[p] = {"step": moments[f"{i}.step"].reshape(()).float(),
                            "exp_avg": moments[f"{i}.exp_avg"],
                            "exp_avg_sq": moments[f"{i}.exp_avg_sq"]}
    return json.loads((d / "state.json").read_text())


def _optimizer(model, spec: Spec):
    return torch.optim.AdamW(model.parameters(), lr=spec.lr, betas=(0.9, 0.95), weight_decay=0.01)


def _new_model(spec: Spec):
    from transformers import LlamaForCausalLM
    torch.manual_seed(spec.seed)
    return LlamaForCausalLM(spec.config())


def device_name() -> str:
    from ..host import cpu_name
    return f"cpu ({cpu_name()}), torch {torch.__version__}, {torch.get_num_threads()} threads"


# ----------------------------------------------------------------------------- training loops
def train(specs: list[Spec], stream: np.ndarray, teacher=None) -> list[tuple]:
    """Train ``specs`` together (drafts share one teacher forward per batch); resumable.

    Returns ``[(model, state)]`` with ``state['wall_s']`` the training time summed over resumes:
    each model's own forward, backward and update (the teacher's shared forward is not counted).
    """
    if teacher is None and any(s.role == "draft" for s in specs):
        raise ValueError("drafts need a teacher model to distil from")
    steps = {s.name: s.tokens // (s.seq_len * s.batch) for s in specs}
    total = max(steps.values())
    runs = []
    for s in specs:
        m = _new_model(s)
        opt = _optimizer(m, s)
        st = _load_ckpt(WORK / "ckpt" / s.name, m, opt) or {"step": 0, "wall_s": 0.0, "losses": []}
        runs.append([s, m, opt, st])
    start = min(r[3]["step"] for r in runs)
    names = "+".join(s.name for s in specs)
    last_ckpt = time.time()
    bar = tqdm(range(start, total), initial=start, total=total, desc=f"train {names}", unit="step")
    for step in bar:
        x = batch_at(stream, specs[0], step)
        inp, tgt = x[:, :-1], x[:, 1:]
        t_logp = {}   # the teacher's softened log-probabilities, computed once per batch and tau
        if teacher is not None:
            with torch.no_grad():
                t_logits = teacher(input_ids=inp).logits
                for tau in {s.kd_tau for s in specs}:
                    t_logp[tau] = F.log_softmax(t_logits / tau, -1).reshape(-1, t_logits.shape[-1])
        post = {}
        for s, m, opt, st in runs:
            if st["step"] > step or step >= steps[s.name]:
                continue
            t0 = time.time()
            for g in opt.param_groups:
                g["lr"] = lr_at(s, step, steps[s.name])
            logits = m(input_ids=inp).logits
            ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
            loss = ce
            if s.role == "draft":
                tau = s.kd_tau
                kd = F.kl_div(F.log_softmax(logits / tau, -1).reshape(-1, logits.shape[-1]),
                              t_logp[tau], log_target=True, reduction="batchmean") * tau * tau
                loss = s.kd_weight * kd + (1 - s.kd_weight) * ce
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            st["step"] = step + 1
            st["wall_s"] += time.time() - t0
            if step % 20 == 0:
                st["losses"].append([step, round(ce.item(), 4), round(loss.item(), 4)])
            post[s.name] = f"{ce.item():.2f}"
        bar.set_postfix(ce=post)
        if time.time() - last_ckpt > CHECKPOINT_EVERY_S:
            for s, m, opt, st in runs:
                _save_ckpt(WORK / "ckpt" / s.name, m, opt, st)
            last_ckpt = time.time()
    bar.close()
    for s, m, opt, st in runs:
        _save_ckpt(WORK / "ckpt" / s.name, m, opt, st)
    return [(r[1], r[3]) for r in runs]


@torch.no_grad()
def heldout_loss(model, tokenizer, max_records: int = 40, max_len: int = 256) -> dict[str, float]:
    """Mean next-token cross-entropy (nats/token) on each domain's held-out eval records."""
    model.eval()
    out = {}
    for d in corpus.DOMAINS:
        tot, n = 0.0, 0
        for r in corpus.load("eval", d)[:max_records]:
            ids = tokenizer(r["prompt"] + r["completion"], add_special_tokens=False)["input_ids"][:max_len]
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0, :-1]
            tot += float(F.cross_entropy(logits, x[0, 1:], reduction="sum"))
            n += len(ids) - 1
        out[d] = round(tot / max(n, 1), 4)
    return out


def write_model(out_dir: Path, model, spec: Spec, state: dict, tokenizer, extra: dict | None = None) -> dict:
    """Save fp16 safetensors weights, ``card.json`` and a short README next to them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.to(torch.float16).save_pretrained(out_dir, safe_serialization=True)
    model.to(torch.float32)
    loss = heldout_loss(model, tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    card = {
        "name": spec.name, "role": spec.role, "stands_in_for": spec.stands_in_for,
        "architecture": "LlamaForCausalLM", "parameters": n_params,
        "hidden_size": spec.hidden, "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads, "intermediate_size": spec.intermediate,
        "vocab_size": VOCAB_SIZE, "tie_word_embeddings": True, "dtype": "float16",
        "teacher": spec.teacher, "training_tokens": state["step"] * spec.seq_len * spec.batch,
        "training_steps": state["step"], "seq_len": spec.seq_len, "batch": spec.batch, "lr": spec.lr,
        "loss": ("KL to teacher (tau={}) x {} + CE x {}".format(spec.kd_tau, spec.kd_weight,
                 round(1 - spec.kd_weight, 3)) if spec.role == "draft" else "next-token CE"),
        "heldout_loss_nats": loss,
        "heldout_loss_mean": round(float(np.mean(list(loss.values()))), 4),
        "train_wall_s": round(state["wall_s"], 1), "device": device_name(),
        "final_train_ce": state["losses"][-1][1] if state["losses"] else None,
        **(extra or {}),
    }
    (out_dir / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    rows = "\n".join(f"| {d} | {v:.3f} |" for d, v in loss.items())
    (out_dir / "README.md").write_text(
        f"# {spec.name}\n\nA {n_params / 1e6:.2f}M-parameter Llama {spec.role} of the specedge model zoo, "
        f"standing in for {spec.stands_in_for}. "
        + (f"Distilled from `{spec.teacher}`. " if spec.teacher else "Trained from scratch. ")
        + f"{card['training_tokens']:,} training tokens, {card['train_wall_s'] / 60:.1f} min on {card['device']}.\n\n"
        f"Trained on the redistributable corpus in `data/corpus/` (see `data/README.md`); "
        f"rebuild with `make zoo`. Weights are fp16 safetensors.\n\n"
        f"| held-out domain | loss (nats/token) |\n|---|---|\n{rows}\n")
    return card
