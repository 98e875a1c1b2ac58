"""Early-exit adapters on a frozen target, their training, and early-exit verification (venkatesha2025).

Submodules: ``sim`` (the pre-drafting client and early-exit server of FSD as a SimPy discrete-event
model), ``concurrent`` (the same protocol run for real with threads, queues and injected delays, and beside
its simulation), ``passes`` (pass and batch timings, this machine as a profile), ``offline`` (adapters trained
from cached hidden states), ``draft_length`` (Fig 4b's speedups against γ on measured traces, with
prompt-bootstrap intervals), ``zoo_adapters`` (the committed zoo adapters' check, loading, card and agreement);
this machine's timings are measured by ``specedge.experiments.venkatesha2025.measure``, and the paper's figures and
the rules deciding its claims live with its experiments (``specedge.experiments``).

Why one module of ~460 lines: the adapters, their training and early-exit verification share the
exit indexing (positions, ``per_layer``) and the capture hooks; they change together.

Adapters (Sec 3 "Early Exit Training", Fig 3)
    ``EarlyExits(target)`` puts a bottleneck adapter h + W_up·SiLU(W_down·h) after each of the first
    L − 1 decoder layers; exit l's logits are ``lm_head(norm(adapter_l(h_l)))`` with the target's own
    final norm and LM head (shared and frozen). Exit L is the target itself (no adapter), so an exit at
    the last layer equals the full model exactly. ``per_layer=2`` (beyond the paper) adds an exit after
    each layer's attention block too (the residual stream entering ``post_attention_layernorm``): the
    zoo targets have 3-4 layers, and with 2-3 exits one pre-drafting thread serves every exit, so
    Fig 4a's thread dependence cannot show; 2L − 1 exits (5 and 7) give it room. Exits are then indexed
    by *position* p = 1..P (P = per_layer · L, ``n_layers``): position 2l − 1 is layer l's attention
    output, 2l its output; position P is the target itself. W_up starts at zero: before training every exit is the
    "logit lens" of its layer. The bottleneck width is chosen so the adapters hold ``param_fraction`` of
    the target's parameters (the paper: 31 exits = 101M = 1.48 % of a 7B model, i.e. ~3.3M per exit,
    far below d×d).

Training (``train``): the target runs once per batch without gradients; every exit's loss flows only
    into its own adapter (the hidden states are detached). Loss: KL(p_L ‖ p_l), the final layer's
    next-token distribution as the teacher. Why KL rather than the paper's next-token loss: an exit is
    useful here only when its verification outcome equals the final layer's (a pre-draft cache hit), and
    the final layer's argmax is what it must predict, including where the target itself is wrong about
    the corpus; the teacher's full distribution also carries more signal per token than one label, which
    matters with a few CPU-minutes of training. ``ce_weight`` adds the next-token loss if wanted.

Metrics: ``agreement`` (per exit, fraction of positions whose argmax equals the final layer's) and
    confidence = max softmax probability (eq 4).

Early-exit verification (Sec 3 Step 2, eq 5)
    For a drafted block, exit l's outcome is what the greedy acceptance rule gives when exit l's
    distributions stand in for the target's: (accepted count, next token, confidence of that token).
    ``speculative`` runs greedy SD with the draft and the target and records every round's outcomes
    in layer order as ``early_exit.sim.RoundTrace`` (the input of the FSD simulation). It is
    ``decoding.SpeculativeDecoder`` with its server hook wrapped (``ExitTracingDecoder``), so the final
    exit decides and its tokens are exactly those of ``decoding.speculative`` (a test checks it). ``LayerStream``
    calls back after each layer during the target's forward pass, as a server streams exits.

CLI: ``python -m specedge.early_exit build`` trains the adapters of every zoo target into
``data/zoo/adapters/<target>/`` (resumable: finished targets are skipped, a partial run continues from
its last saved step).
"""
from __future__ import annotations

import argparse
import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Sequence

import torch
from torch import nn
from tqdm.auto import tqdm

from .. import paths, sampling
from ..decoding import SpeculativeDecoder
from .sim import ExitOutcome, RoundTrace

__all__ = ["Adapter", "EarlyExits", "bottleneck_rank", "train", "agreement", "exit_outcomes",
           "LayerStream", "ExitTracingDecoder", "speculative", "collect_traces", "collect_trace_frames", "save", "load",
           "build", "ADAPTERS"]

ADAPTERS = paths.ZOO / "adapters"


# --------------------------------------------------------------------------- adapters
class Adapter(nn.Module):
    """Residual bottleneck h + W_up·SiLU(W_down·h); W_up = 0 at initialisation (identity)."""

    def __init__(self, d: int, rank: int):
        super().__init__()
        self.down = nn.Linear(d, rank)
        self.up = nn.Linear(rank, d)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.up(nn.functional.silu(self.down(h)))


def _parts(target):
    """(decoder layers, final norm, LM head) of a transformers decoder-only causal LM."""
    base = getattr(target, "model", None)
    if base is None or not hasattr(base, "layers") or not hasattr(base, "norm"):
        raise ValueError("target must be a decoder-only causal LM with .model.layers and .model.norm "
                         f"(e.g. LlamaForCausalLM), got {type(target).__name__}")
    return base.layers, base.norm, target.get_output_embeddings()


PER_LAYER = (1, 2)


def bottleneck_rank(target, param_fraction: float = 0.015, per_layer: int = 1) -> int:
    """Bottleneck width r so that the per_layer · L − 1 adapters hold ≈ ``param_fraction`` of the
    target's parameters."""
    if not 0 < param_fraction < 1:
        raise ValueError(f"param_fraction must lie in (0, 1), got {param_fraction!r}")
    layers, _, _ = _parts(target)
    d = target.config.hidden_size
    total = sum(p.numel() for p in target.parameters())
    per_rank = (per_layer * len(layers) - 1) * (2 * d + 1)  # down (d·r + r) and up (r·d + d) per rank unit
    return max(1, round(param_fraction * total / max(per_rank, 1)))


class EarlyExits(nn.Module):
    """P − 1 adapters (P = per_layer · L exit positions) on a frozen ``target``; exit P is the target itself."""

    def __init__(self, target, rank: int | None = None, param_fraction: float = 0.015, per_layer: int = 1):
        super().__init__()
        layers, _, _ = _parts(target)
        if per_layer not in PER_LAYER:
            raise ValueError(f"per_layer (exits per decoder layer) must be one of {PER_LAYER}, got {per_layer!r}")
        if per_layer == 2 and not all(hasattr(layer, "post_attention_layernorm") for layer in layers):
            raise ValueError("per_layer=2 needs decoder layers with .post_attention_layernorm (Llama-style)")
        if per_layer * len(layers) < 2:
            raise ValueError(f"target needs at least 2 exit positions for an early exit, has {len(layers)} layer(s)")
        self.per_layer = per_layer
        self.rank = bottleneck_rank(target, param_fraction, per_layer) if rank is None else int(rank)
        if self.rank < 1:
            raise ValueError(f"rank must be >= 1, got {rank!r}")
        d = target.config.hidden_size
        self.adapters = nn.ModuleList(Adapter(d, self.rank) for _ in range(per_layer * len(layers) - 1))
        self.adapters.to(next(target.parameters()).dtype)
        object.__setattr__(self, "target", target)  # not a submodule: never saved or trained here
        for p in target.parameters():
            p.requires_grad_(False)

    @property
    def n_layers(self) -> int:
        """Exit positions P (the last is the target's own output): L with one exit per layer."""
        return len(self.adapters) + 1

    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.adapters.parameters())

    def param_fraction(self) -> float:
        return self.trainable_parameters() / sum(p.numel() for p in self.target.parameters())

    @contextmanager
    def capture(self, on_layer: Callable[[int, torch.Tensor], None] | None = None):
        """Record the residual stream (pre-norm) at every exit position during the target's forward passes.

        Yields the list the hidden states (1-based position p at index p − 1) are written to;
        ``on_layer(p, h)`` is called as soon as position p is computed (a streaming server).
        """
        layers, _, _ = _parts(self.target)
        hidden: list[torch.Tensor | None] = [None] * self.n_layers

        def record(i, h):
            hidden[i] = h
            if on_layer is not None:
                on_layer(i + 1, h)

        def after_layer(i):
            def fn(module, args, output):
                record(i, output[0] if isinstance(output, tuple) else output)
            return fn

        def after_attention(i):
            def fn(module, args):  # the input of post_attention_layernorm: residual + attention
                record(i, args[0])
            return fn

        k = self.per_layer
        handles = [layer.register_forward_hook(after_layer(k * j + k - 1)) for j, layer in enumerate(layers)]
        if k == 2:
            handles += [layer.post_attention_layernorm.register_forward_pre_hook(after_attention(2 * j))
                        for j, layer in enumerate(layers)]
        try:
            yield hidden
        finally:
            for h in handles:
                h.remove()

    def exit_logits(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        """Logits of exit ``layer`` (1..L) from that layer's output ``h`` (..., d)."""
        _, norm, head = _parts(self.target)
        if not 1 <= layer <= self.n_layers:
            raise ValueError(f"layer must lie in [1, {self.n_layers}], got {layer!r}")
        if layer < self.n_layers:
            h = self.adapters[layer - 1](h)
        return head(norm(h))

    def all_exit_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits of every exit for a batch (B, T): shape (L, B, T, V); exit L equals the target's."""
        with self.capture() as hidden, torch.no_grad():
            self.target.model(input_ids=input_ids)
            return torch.stack([self.exit_logits(l, hidden[l - 1]) for l in range(1, self.n_layers + 1)])


# --------------------------------------------------------------------------- training
def train(ee: EarlyExits, batches: Iterable[torch.Tensor], steps: int, lr: float = 1e-3,
          kl_weight: float = 1.0, ce_weight: float = 0.0, start_step: int = 0,
          on_step: Callable[[int, float], None] | None = None, progress: bool = True,
          exits: Sequence[int] | None = None) -> list[float]:
    """Train only the adapters: KL(p_L ‖ p_l) (+ ``ce_weight`` · next-token loss) summed over exits.

    ``batches`` yields LongTensor (B, T) token blocks; ``on_step(step, loss)`` runs after each step
    (checkpointing); ``exits`` (default: every early exit 1..L-1) the exit positions trained (e.g. a few,
    to time a step on a large target). Returns the loss per step (mean over the trained exits).
    """
    if steps < 0 or start_step < 0:
        raise ValueError(f"steps and start_step must be >= 0, got {steps}, {start_step}")
    exits = list(range(1, ee.n_layers)) if exits is None else [int(x) for x in exits]
    if not exits or not all(1 <= x < ee.n_layers for x in exits):
        raise ValueError(f"exits must be early exits in [1, {ee.n_layers - 1}], got {exits}")
    if kl_weight < 0 or ce_weight < 0 or kl_weight + ce_weight == 0:
        raise ValueError(f"kl_weight and ce_weight must be >= 0 and not both 0, got {kl_weight}, {ce_weight}")
    opt = torch.optim.AdamW(ee.adapters.parameters(), lr=lr, weight_decay=0.0)
    _, norm, head = _parts(ee.target)
    losses = []
    it = iter(batches)
    ee.adapters.train()
    bar = tqdm(range(start_step, steps), desc="early-exit adapters", disable=not progress)
    for step in bar:
        ids = next(it)
        with ee.capture() as hidden, torch.no_grad():
            ee.target.model(input_ids=ids)
            teacher_logits = head(norm(hidden[-1]))[:, :-1].float()
            teacher = torch.log_softmax(teacher_logits, -1)
        hidden = [h.detach() for h in hidden]
        total = 0.0
        for l in exits:
            logp = torch.log_softmax(ee.exit_logits(l, hidden[l - 1])[:, :-1].float(), -1)
            loss = 0.0
            if kl_weight:
                loss = loss + kl_weight * nn.functional.kl_div(logp.flatten(0, 1), teacher.flatten(0, 1),
                                                               log_target=True, reduction="batchmean")
            if ce_weight:
                loss = loss + ce_weight * nn.functional.nll_loss(logp.flatten(0, 1), ids[:, 1:].flatten())
            total = total + loss
        opt.zero_grad(set_to_none=True)
        total.backward()
        opt.step()
        value = float(total.detach()) / len(exits)
        losses.append(value)
        bar.set_postfix(loss=f"{value:.3f}")
        if on_step is not None:
            on_step(step + 1, value)
    ee.adapters.eval()
    return losses


@torch.no_grad()
def agreement(ee: EarlyExits, batches: Iterable[torch.Tensor]) -> tuple[list[float], list[float]]:
    """Per exit 1..L: fraction of positions whose argmax equals the final layer's, and mean confidence (summed in
    float64: a float32 running sum over thousands of positions moves by ~3e-7 relative with the logits' last bits)."""
    agree = torch.zeros(ee.n_layers, dtype=torch.float64)
    conf = torch.zeros(ee.n_layers, dtype=torch.float64)
    n = 0
    for ids in batches:
        logits = ee.all_exit_logits(ids).float()
        final = logits[-1].argmax(-1)
        agree += (logits.argmax(-1) == final).float().flatten(1).sum(1)
        conf += torch.softmax(logits, -1).amax(-1).flatten(1).sum(1)
        n += final.numel()
    return (agree / n).tolist(), (conf / n).tolist()


# --------------------------------------------------------------------------- early-exit verification
def exit_outcomes(ee: EarlyExits, layer: int, h_block: torch.Tensor, draft_ids: torch.Tensor) -> ExitOutcome:
    """Exit ``layer``'s greedy verification outcome (eq 5) from its hidden states at the γ + 1 positions.

    ``h_block`` (γ + 1, d): the layer's outputs at the positions whose next-token distributions verify
    the γ drafts and give the bonus. Confidence = max softmax probability of the emitted token (eq 4).
    """
    logits = ee.exit_logits(layer, h_block).float()
    v = sampling.verify_greedy(draft_ids, logits.argmax(-1))
    n = int(v.accepted)
    conf = float(torch.softmax(logits[n], -1).max())
    return ExitOutcome(layer=layer, accepted=n, token=int(v.token), confidence=conf)


class LayerStream:
    """Forward-hook callback that computes exit l's outcome as soon as layer l finishes (a server).

    ``emit(outcome)`` receives the outcomes in layer order, exits 1..L − 1 (the final comes from the
    model's own logits after the pass). ``start`` and ``draft_ids`` are set before each forward pass.
    """

    def __init__(self, ee: EarlyExits, emit: Callable[[ExitOutcome], None]):
        self.ee, self.emit = ee, emit
        self.start, self.draft_ids = 0, None

    def __call__(self, layer: int, h: torch.Tensor) -> None:
        if layer < self.ee.n_layers and self.draft_ids is not None:
            g = self.draft_ids.shape[0]
            block = h[0, self.start: self.start + g + 1]
            self.emit(exit_outcomes(self.ee, layer, block, self.draft_ids))


class ExitTracingDecoder(SpeculativeDecoder):
    """Greedy speculative decoding of one sequence whose verification also records every exit's outcome.

    The loop and its cache arithmetic are ``decoding.SpeculativeDecoder``'s; only the server hook
    ``verify_rows`` is wrapped: the target pass runs under ``EarlyExits.capture`` and the hidden states
    at the γ + 1 verifying positions give each exit's outcome (``exit_outcomes``). ``traces`` holds one
    ``RoundTrace`` per round; the final layer alone decides what is emitted. ``times`` holds per round the
    seconds of the target pass and of the early exits' outcomes after it.
    """

    def __init__(self, draft, ee: EarlyExits, prompt, max_new_tokens: int, gamma: int = 4,
                 eos_token_id: int | None = None):
        super().__init__(draft, ee.target, [prompt], max_new_tokens, gamma=gamma,
                         eos_token_id=eos_token_id)
        self.ee, self.traces, self.times = ee, [], []

    def verify_rows(self, drafts, dists):
        draft_ids = drafts[0]
        g, m = draft_ids.shape[0], self.rows[0].target_pending.shape[0]
        t0 = time.perf_counter()
        with self.ee.capture() as hidden:
            verdict, p_x = super().verify_rows(drafts, dists)
        t1 = time.perf_counter()
        exits = tuple(exit_outcomes(self.ee, p, hidden[p - 1][0, m - 1: m + g], draft_ids)
                      for p in range(1, self.ee.n_layers))
        self.times.append((t1 - t0, time.perf_counter() - t1))
        self.traces.append(RoundTrace(drafted=g, accepted=int(verdict.accepted[0]), token=int(verdict.token[0]),
                                      n_layers=self.ee.n_layers, exits=exits))
        return verdict, p_x


def speculative(draft, ee: EarlyExits, prompt, max_new_tokens: int, gamma: int = 4,
                eos_token_id: int | None = None) -> tuple[torch.Tensor, list[RoundTrace]]:
    """Greedy SD with early-exit verification: the new tokens and one ``RoundTrace`` per round.

    Each round's trace holds every exit's outcome in position order (exits 1..P − 1) and the final
    outcome, which alone decides what is emitted, as in ``decoding.speculative`` at T = 0.
    """
    dec = ExitTracingDecoder(draft, ee, prompt, max_new_tokens, gamma, eos_token_id)
    return dec.run()[0].tokens, dec.traces


def collect_traces(draft, ee: EarlyExits, prompts, max_new_tokens: int, gamma: int = 4,
                   eos_token_id: int | None = None, progress: bool = True, desc: str = "EE traces"
                   ) -> list[list[RoundTrace]]:
    """``speculative`` over several prompts: one list of ``RoundTrace`` per prompt (FSD sim input)."""
    return [speculative(draft, ee, p, max_new_tokens, gamma, eos_token_id)[1]
            for p in tqdm(list(prompts), desc=desc, disable=not progress, leave=False)]


def collect_trace_frames(draft, ee: EarlyExits, prompts: dict, max_new_tokens: int, gamma: int = 4,
                         eos_token_id: int | None = None, log: Callable[[str], None] | None = None):
    """``ExitTracingDecoder`` over ``prompts`` (group -> prompts): every round's exit outcomes as one
    ``sim.traces_frame`` with a ``benchmark`` (group) column, and per round the measured seconds of drafting, the
    target's pass and the exits' outcomes."""
    import pandas as pd
    from .sim import TRACE_COLUMNS, traces_frame
    frames, times = [], []
    for group, items in prompts.items():
        seqs = []
        for i, p in enumerate(items):
            dec = ExitTracingDecoder(draft, ee, p, max_new_tokens, gamma=gamma, eos_token_id=eos_token_id)
            gen = dec.run()[0]
            seqs.append(dec.traces)
            times += [dict(benchmark=group, sequence=i, round=k, drafted=len(r.draft_ids), t_draft=r.t_draft,
                           t_target=tt, t_exits=te) for k, (r, (tt, te)) in enumerate(zip(gen.rounds, dec.times))]
            if log is not None:
                log(f"{group} prompt {i}: {len(dec.traces)} rounds, {gen.tokens.numel()} tokens")
        frames.append(traces_frame(seqs).assign(benchmark=group))
    rounds = pd.concat(frames, ignore_index=True)
    return rounds[["benchmark", *TRACE_COLUMNS]], pd.DataFrame(times)


# --------------------------------------------------------------------------- persistence
def save(ee: EarlyExits, folder: Path, meta: dict) -> Path:
    """Adapters as safetensors plus ``meta.json`` (rank, exits, training record)."""
    from safetensors.torch import save_file
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in ee.adapters.state_dict().items()}
    save_file(state, str(folder / "adapters.safetensors"))
    meta = dict(meta, rank=ee.rank, per_layer=ee.per_layer, n_layers=ee.n_layers, n_exits=ee.n_layers - 1,
                trainable_params=ee.trainable_parameters(), param_fraction=ee.param_fraction())
    (folder / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return folder


def load(target, folder: Path) -> tuple[EarlyExits, dict]:
    """Adapters saved by ``save`` attached to ``target``; also returns the meta record."""
    from safetensors.torch import load_file
    folder = Path(folder)
    if not (folder / "meta.json").exists():
        raise FileNotFoundError(f"no early-exit adapters in {folder} (run `python -m specedge.early_exit build`)")
    meta = json.loads((folder / "meta.json").read_text())
    ee = EarlyExits(target, rank=meta["rank"], per_layer=int(meta.get("per_layer", 1)))
    ee.adapters.load_state_dict(load_file(str(folder / "adapters.safetensors")))
    ee.adapters.eval()
    return ee, meta


# --------------------------------------------------------------------------- build (make zoo)
def _blocks(tokenizer, texts: Sequence[str], context: int, batch: int, seed: int):
    """Endless random batches (batch, context) cut from the concatenated, tokenised ``texts``."""
    ids = []
    eos = tokenizer.eos_token_id
    for t in texts:
        ids.extend(tokenizer(t)["input_ids"])
        if eos is not None:
            ids.append(eos)
    data = torch.tensor(ids, dtype=torch.long)
    if data.numel() <= context + 1:
        raise ValueError(f"training text too short for context {context}: {data.numel()} tokens")
    g = torch.Generator().manual_seed(seed)
    while True:
        start = torch.randint(0, data.numel() - context, (batch,), generator=g)
        yield torch.stack([data[s: s + context] for s in start.tolist()])


def _training_texts(corpus, chars_per_domain: int = 150_000) -> list[str]:
    """The first ``chars_per_domain`` characters of each domain's (shuffled) train split: a few CPU-minutes
    of adapter training see far fewer tokens than the corpus holds, so tokenising all of it is waste."""
    texts = []
    for domain in corpus.DOMAINS:
        n = 0
        for r in corpus.load("train", domain):
            if n >= chars_per_domain:
                break
            texts.append(r["prompt"] + r["completion"])
            n += len(texts[-1])
    return texts


def build(targets: Sequence[str] | None = None, steps: int = 200, context: int = 128, batch: int = 4,
          lr: float = 2e-3, seed: int = 0, folder: Path = ADAPTERS, force: bool = False,
          per_layer: int = 2) -> list[Path]:
    """Train and save adapters for each zoo target (skips finished ones with the same ``per_layer``;
    resumes a partial one)."""
    from .. import zoo
    from ..zoo import corpus

    torch.manual_seed(seed)
    targets = list(zoo.TARGETS if targets is None else targets)
    texts = _training_texts(corpus)
    tokenizer = zoo.load_tokenizer()
    done = []
    for name in targets:
        out = Path(folder) / name
        meta_path = out / "meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        restart = force or (bool(meta) and int(meta.get("per_layer", 1)) != per_layer)  # other layout: start over
        if meta.get("complete") and not restart:
            print(f"[early_exit] {name}: adapters present ({out}), skipping")
            done.append(out)
            continue
        target = zoo.load_model(name).eval()
        if meta and not restart:
            ee, meta = load(target, out)
        else:
            ee, meta = EarlyExits(target, per_layer=per_layer), {}
        start = int(meta.get("steps_done", 0))
        spent = float(meta.get("train_seconds", 0.0))
        record = dict(target=name, context=context, batch=batch, lr=lr, steps=steps, seed=seed,
                      loss="KL(final || exit)", device=f"CPU ({torch.get_num_threads()} threads)")
        t0 = time.perf_counter()
        batches = _blocks(tokenizer, texts, context, batch, seed + start)

        def checkpoint(step, loss, every=50):
            if step % every == 0 or step == steps:
                save(ee, out, dict(record, steps_done=step, last_loss=loss, complete=step == steps,
                                   train_seconds=round(spent + time.perf_counter() - t0, 1)))

        train(ee, batches, steps, lr=lr, start_step=start, on_step=checkpoint)
        if start >= steps:
            save(ee, out, dict(meta, complete=True))
        done.append(out)
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.early_exit",
                                 description="Early-exit adapters for the zoo targets (venkatesha2025).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="train adapters for every zoo target (resumable)")
    b.add_argument("--targets", nargs="*", default=None)
    b.add_argument("--steps", type=int, default=200)
    b.add_argument("--context", type=int, default=128)
    b.add_argument("--batch", type=int, default=4)
    b.add_argument("--per-layer", type=int, choices=PER_LAYER, default=2,
                   help="exits per decoder layer: 1 (the paper's layout) or 2 (also after each attention block)")
    b.add_argument("--force", action="store_true", help="retrain even if adapters exist")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        for p in build(args.targets, steps=args.steps, context=args.context, batch=args.batch, force=args.force,
                       per_layer=args.per_layer):
            print(f"[early_exit] {p.relative_to(paths.ROOT) if p.is_relative_to(paths.ROOT) else p}")
    return 0
