"""Benchmark of the serving layer (prints numbers; `make bench` commits them to figures/bench/).

1. Batched verification of N sessions in ONE pass vs N separate passes, N in {1, 2, 4, 8}, on the zoo
   target (float32) and on the same target widened to 0.43 B parameters in bfloat16 (``zoo.net2net.widen``:
   memory-bound passes as on an accelerator): throughput ratio batched / separate.
2. Server overhead per round in a real run (2 drafters, Fixed-S): the request's time at the server that
   is neither queueing for the batch nor the verification pass (parsing, scheduling, allocator, reply),
   plus the wire (client-measured uplink and reply), as a fraction of the verification pass.

The twin's speed (client-rounds per CPU-second) is ``bench_twin.py``'s.

    python benchmarks/bench_serving.py --out-dir figures/bench
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

import report
from specedge import host, timing, zoo
from specedge.zoo import corpus, net2net
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.real.drafter import Drafter
from specedge.serving.real.run import run_real
from specedge.serving.real.verifier import Verifier
from specedge.serving.workload import ClientSpec, Workload


def _tag(dtype: str = "float32") -> dict:
    return report.host_columns(dtype, torch.get_num_threads())


def _sessions(verifier, draft, prompts, gamma):
    """Warm sessions (prompt cached) and one round of drafts each."""
    ds = [Drafter(draft, p, 10_000, f"b{i}") for i, p in enumerate(prompts)]
    for _ in range(2):
        for d, r in zip(ds, verifier.verify([d.propose(gamma)[0] for d in ds])):
            d.commit(r)
    return ds


def batching(target, draft, label: str, repeats: int, dtype: str, gamma: int = 4) -> list[dict]:
    tok = zoo.load_tokenizer()
    texts = [t for d in corpus.DOMAINS for t in zoo.eval_prompts(d, 2)]
    prompts = [tok.encode(t)[-48:] for t in texts][:8]
    rows = []
    for n in (1, 2, 4, 8):
        best = {}
        for mode in ("batched", "separate"):
            def once():
                v = Verifier(target)                                  # fresh sessions, set up untimed
                reqs = [d.propose(gamma)[0] for d in _sessions(v, draft, prompts[:n], gamma)]
                with timing.stopwatch() as t:
                    for group in ([reqs] if mode == "batched" else [[r] for r in reqs]):
                        v.verify(group)
                return t.seconds
            best[mode] = timing.fastest(once, repeats, warmup=0)
        rows.append(dict(target=label, N=n, gamma=gamma, batched_s=best["batched"], separate_s=best["separate"],
                         throughput_ratio=best["separate"] / best["batched"], **_tag(dtype)))
        print(f"{label:28s} N={n}: one pass {1e3 * best['batched']:.1f} ms, N passes {1e3 * best['separate']:.1f} ms "
              f"-> {best['separate'] / best['batched']:.2f}x")
    return rows


def overhead() -> list[dict]:
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 2, 48), ClientSpec("draft-xs", ("math",), 2, 48)), capacity=8)
    log, _ = run_real(wl, SyncRounds(), FixedS(8, 2), label="Fixed-S")
    r = log[(log.event == "") & (log["round"] > 0)]
    server = (r.end - r.start - r.t_verify).clip(lower=0)          # allocator, reply building after the pass
    wire = r.up + r.t_send                                          # uplink + reply on loopback gRPC
    row = dict(rounds=len(r), verify_ms=1e3 * r.t_verify.median(), server_ms=1e3 * server.median(),
               wire_ms=1e3 * wire.median(), server_fraction=float(server.median() / r.t_verify.median()),
               server_and_wire_fraction=float((server + wire).median() / r.t_verify.median()), **_tag())
    print(f"server overhead per round: {row['server_ms']:.2f} ms ({100 * row['server_fraction']:.1f} % of the "
          f"{row['verify_ms']:.1f} ms pass); with the gRPC wire {100 * row['server_and_wire_fraction']:.1f} %")
    return [row]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=Path("build/bench"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--wide-dtype", choices=host.DTYPES, default="auto",
                    help="dtype of the widened target; auto: bfloat16 where this CPU multiplies it natively (AVX2-only "
                         "hosts run bf16 matmuls above 8 rows several times slower than fp32), else float32")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    draft = zoo.load_model("draft-xs")
    target = zoo.load_model("target-l")
    rows = batching(target, draft, "zoo target-l (fp32)", args.repeats, "float32")
    wide_dtype = host.resolve_dtype(args.wide_dtype)
    wide = net2net.widen(zoo.load_model("target-l"), 2048, 5632, 8).to(getattr(torch, wide_dtype))
    short = {"bfloat16": "bf16", "float32": "fp32"}[wide_dtype]
    rows += batching(wide, draft, f"target-l widened 0.43B ({short})", max(2, args.repeats // 2), wide_dtype)
    report.save(rows, args.out_dir / "serving_batching.csv")
    report.save(overhead(), args.out_dir / "serving_overhead.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
