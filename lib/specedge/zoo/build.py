"""``python -m specedge.zoo build``: corpus -> tokenizer -> targets -> distilled drafts -> cards.

Each stage skips what is already finished (a frozen corpus, a saved tokenizer, a model directory
with ``card.json``), and training resumes from ``build/zoo/ckpt/`` after an interruption; delete
``data/zoo/<name>/`` to retrain one model. The recipe below is sized for the whole build to take
well under an hour on 2 CPU cores (see data/README.md for measured times).
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from .. import paths
from . import corpus, train
from .train import Spec

# Stand-ins for the papers' models. Targets: 7B (the common pair target) and 13B. Drafts: the
# 68M..1B / Qwen3-0.6B..8B ladder, each distilled from target-m (the "7B").
SPECS = (
    Spec("target-m", "target", hidden=160, layers=3, heads=5, intermediate=432, tokens=640_000,
         lr=3e-3, stands_in_for="a 7B target (Llama-2-7B / Vicuna-7B)", seq_len=256, batch=8),
    Spec("draft-xs", "draft", hidden=48, layers=1, heads=2, intermediate=128, tokens=512_000,
         lr=4e-3, stands_in_for="a 68M draft (LLaMA-68M) / Qwen3-0.6B", teacher="target-m",
         seq_len=256, batch=8),
    Spec("draft-s", "draft", hidden=64, layers=1, heads=2, intermediate=176, tokens=512_000,
         lr=4e-3, stands_in_for="a 160M draft (LLaMA-160M) / Qwen3-1.7B", teacher="target-m",
         seq_len=256, batch=8),
    Spec("draft-m", "draft", hidden=96, layers=2, heads=3, intermediate=256, tokens=512_000,
         lr=4e-3, stands_in_for="a ~0.5B draft / Qwen3-4B", teacher="target-m", seq_len=256, batch=8),
    Spec("draft-l", "draft", hidden=128, layers=2, heads=4, intermediate=344, tokens=512_000,
         lr=4e-3, stands_in_for="a ~1B draft / Qwen3-8B", teacher="target-m", seq_len=256, batch=8),
    Spec("target-l", "target", hidden=192, layers=4, heads=6, intermediate=512, tokens=800_000,
         lr=3e-3, stands_in_for="a 13B target (Llama-2-13B / Vicuna-13B)", seq_len=256, batch=8),
)
BY_NAME = {s.name: s for s in SPECS}


def _done(name: str) -> bool:
    return (paths.ZOO / name / "card.json").exists()


def build(threads: int = 2, force_corpus: bool = False) -> None:
    torch.set_num_threads(threads)
    t0 = time.time()
    corpus.freeze(force=force_corpus)
    records = corpus.load("train")
    tok_dir = paths.ZOO / "tokenizer"
    if not (tok_dir / "tokenizer.json").exists():
        train.train_tokenizer(tok_dir, records)
    from . import load_model, load_tokenizer
    tok = load_tokenizer()
    stream = train.token_stream(tok, records)
    print(f"corpus: {len(records)} train records, {len(stream):,} tokens")

    def finish(spec, model, state):
        card = train.write_model(paths.ZOO / spec.name, model, spec, state, tok,
                                 extra={"corpus_tokens": int(len(stream))})
        print(f"{spec.name}: {card['parameters']:,} params, held-out loss {card['heldout_loss_mean']}, "
              f"{card['train_wall_s'] / 60:.1f} min")

    # targets first (the drafts' teacher must exist), then the drafts together, then the rest
    teachers = {s.teacher for s in SPECS if s.teacher}
    order = [s for s in SPECS if s.name in teachers]
    for spec in order:
        if not _done(spec.name):
            [(m, st)] = train.train([spec], stream)
            finish(spec, m, st)
    drafts = [s for s in SPECS if s.role == "draft" and not _done(s.name)]
    for teacher_name in sorted({s.teacher for s in drafts}):
        group = [s for s in drafts if s.teacher == teacher_name]
        teacher = load_model(teacher_name).eval()
        for spec, (m, st) in zip(group, train.train(group, stream, teacher=teacher)):
            finish(spec, m, st)
    for spec in SPECS:
        if spec.role == "target" and not _done(spec.name):
            [(m, st)] = train.train([spec], stream)
            finish(spec, m, st)
    print(f"zoo build done in {(time.time() - t0) / 60:.1f} min (wall clock of this invocation)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m specedge.zoo", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build (or resume building) the whole zoo")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--force-corpus", action="store_true", help="regenerate data/corpus/ from this Python")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        build(threads=args.threads, force_corpus=args.force_corpus)


if __name__ == "__main__":
    main()
