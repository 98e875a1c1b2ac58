"""Command line of the rejection predictor (li2026)

python -m specedge.predictor build      # traces from the zoo -> data/traces, train, save, latency
python -m specedge.predictor train      # retrain from the committed traces
python -m specedge.predictor latency    # re-measure Table 11 from the committed predictors
python -m specedge.predictor realpair   # the real pair's committed traces -> data/predictor/realpair: train
                                        # the four families (same split rule), then repeated prompt splits
python -m specedge.predictor operating  # the paper's operating points over split seeds, zoo and real pair:
                                        # operating_points.csv beside each pair's committed predictors
                                        # (committed: 10 split seeds of each pair)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import time

import pandas as pd
import torch

from .. import paths
from .dataset import FEATURES, build_dataset, data_splits, features
from .intervals import repeated_splits
from .latency import latency_table
from .models import FAMILIES, evaluate, train_all, train_random_forest
from .operating import paper_operating_points, trainer_kwargs
from .persistence import PREDICTORS, REALPAIR, load, save
from .traces import REALPAIR_TRACES, TRACES, _write_gz_csv, generate_traces, load_realpair_traces, load_trace_data, zoo_prompts


def _build_traces(args) -> pd.DataFrame:
    from .. import zoo
    from ..zoo import corpus

    torch.set_num_threads(1)
    targets = args.targets or list(zoo.TARGETS)[:1]
    frames = []
    for target in targets:
        for draft in (args.drafts or list(zoo.DRAFTS)):
            d_model, t_model, tok = zoo.load_pair(draft, target)
            prompts = zoo_prompts(tok, list(corpus.DOMAINS), args.prompts)
            frames.append(generate_traces(d_model, t_model, prompts, window=args.window,
                                          max_new_tokens=args.max_new_tokens, seed=args.seed,
                                          draft=draft, target=target))
    traces = pd.concat(frames, ignore_index=True)
    _write_gz_csv(traces, TRACES / "li2026_traces.csv.gz")
    print(f"[predictor] traces: {len(traces)} drafted positions -> {TRACES / 'li2026_traces.csv.gz'}")
    return traces


def _train(args, traces: pd.DataFrame, out=None, **extra_meta) -> dict:
    """Scan and train the four families on ``traces`` (split by prompt with ``--seed``) into ``out``:
    the predictors, ``scan.csv`` and ``meta.json`` (with ``extra_meta``); ``out`` defaults to ``PREDICTORS``."""
    from ..plotting import write_csv

    out = PREDICTORS if out is None else out
    torch.set_num_threads(1)
    data = build_dataset(traces)
    preds, table = train_all(data, seed=args.seed)
    out.mkdir(parents=True, exist_ok=True)
    for fam, pred in preds.items():
        save(pred, out, fam)
    write_csv(table, out / "scan.csv")
    meta = dict(split_seed=args.seed, window=int(traces["drafted"].max()),  # K_max of the traces
                prompts_per_domain=int(traces.groupby(["draft", "domain", "temperature"])["prompt"].nunique().max()),
                drafts=sorted(traces["draft"].unique()), targets=sorted(traces["target"].unique()),
                features=list(FEATURES),
                samples=len(data), accepted=int(data["label"].sum()), **extra_meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    test = data_splits(data, args.seed)["test"]
    t4, _ = evaluate(preds, test)
    print(t4.to_string(index=False))
    return preds


def _realpair(args) -> None:
    """The four families retrained on the real pair's traces (``REALPAIR``), then the whole pipeline
    again for ``--split-seeds`` prompt splits (``repeated_splits.csv``): the test split holds 5 of 32 prompts."""
    from ..plotting import write_csv

    traces = load_realpair_traces()
    data = build_dataset(traces)
    split = {name: sorted(g["prompt_key"].unique()) for name, g in data_splits(data, args.seed).items()}
    _train(args, traces, REALPAIR, traces_file=str(REALPAIR_TRACES.relative_to(paths.ROOT)),
           traces_sha256=hashlib.sha256(REALPAIR_TRACES.read_bytes()).hexdigest(), split_prompts=split,
           split_seeds=args.split_seeds)
    t0 = time.perf_counter()
    table = repeated_splits(data, range(args.split_seeds))
    write_csv(table, REALPAIR / "repeated_splits.csv")
    print(f"[predictor] {args.split_seeds} repeated prompt splits in {time.perf_counter() - t0:.0f} s -> "
          f"{REALPAIR / 'repeated_splits.csv'}")


def _operating(args) -> None:
    """``paper_operating_points`` for the zoo and the real pair, each family in its committed configuration,
    over ``--split-seeds`` prompt splits: ``operating_points.csv`` in ``PREDICTORS`` and ``REALPAIR``."""
    from ..plotting import write_csv

    torch.set_num_threads(1)
    pairs = dict(zoo=(PREDICTORS, load_trace_data), realpair=(REALPAIR, load_realpair_traces))
    for where, traces in (pairs[p] for p in args.pairs):
        t0 = time.perf_counter()
        configs = {f: trainer_kwargs(load(where, f)) for f in FAMILIES}
        table = paper_operating_points(build_dataset(traces()), configs, range(args.split_seeds))
        write_csv(table, where / "operating_points.csv")
        print(table.groupby("predictor", sort=False)[["Rec1", "FPR", "BalAcc"]].agg(["mean", "min", "max"]).round(3).to_string())
        print(f"[predictor] {args.split_seeds} split seeds in {time.perf_counter() - t0:.0f} s -> {where / 'operating_points.csv'}")


def _latency(args, preds: dict | None = None) -> pd.DataFrame:
    from ..plotting import write_csv

    torch.set_num_threads(1)
    preds = preds or {f: load(PREDICTORS, f) for f in FAMILIES}
    data = build_dataset(load_trace_data())
    sp = data_splits(data, json.loads((PREDICTORS / "meta.json").read_text())["split_seed"])
    x = features(sp["test"])[:1000]
    rf = preds["random_forest"].params
    skl = train_random_forest(features(sp["train"]), sp["train"]["label"].to_numpy(),
                              keep_sklearn=True, **{k: rf[k] for k in ("n_estimators", "max_depth",
                              "min_samples_split", "min_samples_leaf", "max_features", "seed")})
    table = latency_table(preds, x, args.trials,
                          extra={"Random Forest (scikit-learn object)": skl.predict_proba})
    table.insert(1, "device", "this machine's CPU (1 thread), edge-device stand-in")
    write_csv(table, PREDICTORS / "latency.csv")
    print(table.to_string(index=False))
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.predictor",
                                 description="WISP rejection predictor: traces, training, latency.")
    ap.add_argument("command", choices=["build", "train", "latency", "realpair", "operating"])
    ap.add_argument("--seed", type=int, default=0)
    # defaults = the committed data/traces (about 95k drafted positions, 30k samples, ~4 min of traces)
    ap.add_argument("--prompts", type=int, default=16, help="eval prompts per domain (build)")
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--window", type=int, default=8, help="fixed draft window K_max of the traces")
    ap.add_argument("--drafts", nargs="*", default=None)
    ap.add_argument("--targets", nargs="*", default=None, help="default: the zoo's first target")
    ap.add_argument("--pairs", nargs="+", choices=["zoo", "realpair"], default=["zoo", "realpair"], help="operating")
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--split-seeds", type=int, default=10, help="prompt splits of the repeated runs (realpair, operating)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    preds = None
    if args.command == "build":
        preds = _train(args, _build_traces(args))
    elif args.command == "train":
        preds = _train(args, load_trace_data())
    if args.command == "operating":
        _operating(args)
    elif args.command == "realpair":   # Table 11's latency is the zoo predictors' (same families and sizes)
        _realpair(args)
    else:
        _latency(args, preds)
    print(f"[predictor] {args.command} done in {time.perf_counter() - t0:.0f} s")
    return 0

