"""``python -m specedge.zoo build``: corpus -> tokenizer -> targets -> distilled drafts -> cards.

Each stage skips what is already finished (a frozen corpus, a saved tokenizer, a model directory
with ``card.json``), and training resumes from ``build/zoo/ckpt/`` after an interruption; delete
``data/zoo/<name>/`` to retrain one model. The recipe below is sized for the whole build to take
well under an hour on 2 CPU cores (see data/README.md for measured times).
"""
from __future__ import annotations

import argparse
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
    Spec("draft-s", "draft", hidden=64, layers=2, heads=2, intermediate=176, tokens=512_000,
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
    acc = paths.ZOO / "acceptance.csv"
    if not acc.exists() or any(acc.stat().st_mtime < (paths.ZOO / s.name / "card.json").stat().st_mtime
                               for s in SPECS):
        from . import acceptance
        acceptance.main()
    write_readme()
    print(f"zoo build done in {(time.time() - t0) / 60:.1f} min (wall clock of this invocation)")


def write_readme() -> None:
    """``data/zoo/README.md``: one table of the cards and the acceptance summary."""
    import pandas as pd
    from . import model_card
    cards = [model_card(s.name) for s in SPECS]
    lines = ["# The specedge model zoo", "",
             "Written by `make zoo` (`python -m specedge.zoo build`) from the cards and "
             "`acceptance.csv`; see `../README.md` for the corpus.", "",
             "| model | stands in for | parameters | training tokens | held-out loss (nats/token) | "
             "train time (min) | device |", "|---|---|---|---|---|---|---|"]
    for c in cards:
        lines.append(f"| {c['name']} | {c['stands_in_for']} | {c['parameters'] / 1e6:.2f} M | "
                     f"{c['training_tokens'] / 1e6:.2f} M | {c['heldout_loss_mean']:.3f} | "
                     f"{c['train_wall_s'] / 60:.1f} | {c['device']} |")
    total = sum(c["train_wall_s"] for c in cards) / 60
    lines += ["", f"Total training time {total:.1f} min. Drafts are distilled from "
              f"`{cards[1]['teacher']}`; every draft is also paired with the other target.", ""]
    acc = paths.ZOO / "acceptance.csv"
    if acc.exists():
        df = pd.read_csv(acc)
        piv = df.pivot_table(index=["target", "draft"], columns="temperature", values="alpha")
        lines += ["## Teacher-forced acceptance (mean over domains)", "",
                  "alpha = E[sum_v min(p, q)] over held-out reference positions (argmax agreement "
                  "at T = 0); see `specedge.zoo.acceptance`.", "",
                  "| target | draft | " + " | ".join(f"T={t:g}" for t in piv.columns) + " |",
                  "|---|---|" + "---|" * len(piv.columns)]
        for (t, d), row in piv.iterrows():
            lines.append(f"| {t} | {d} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
        lines += ["", f"Range over pairs x domains x temperatures: {df.alpha.min():.3f} .. "
                  f"{df.alpha.max():.3f}.", ""]
    (paths.ZOO / "README.md").write_text("\n".join(lines))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m specedge.zoo", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build (or resume building) the whole zoo")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--force-corpus", action="store_true", help="regenerate data/corpus/ from this Python")
    a = sub.add_parser("accept", help="measure teacher-forced acceptance of every pair")
    a.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.cmd == "build":
        build(threads=args.threads, force_corpus=args.force_corpus)
    else:
        from . import acceptance
        acceptance.main()
        write_readme()


if __name__ == "__main__":
    main()
