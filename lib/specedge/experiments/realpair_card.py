"""The real pair's acceptance card and the traces built on it (issue 22): an offline measuring step.

``python -m specedge.experiments.realpair_card [teacher|live|all]`` loads Qwen2.5-Coder-0.5B (draft) and 1.5B
(target) as ``make realpair`` left them and writes small committed files under ``data/realpair/``; the
notebooks only read those files, so neither CI nor ``make figures`` needs the weights.

Domains: the zoo's six held-out domains as raw text continuation (exactly the zoo card's records), and
two in the format the pair was trained for (they are *Instruct* models): ``chat-instruct`` and
``code-instruct``, the zoo's chat and code records wrapped in the tokenizer's chat template (user turn =
the prompt, assistant turn = the reference completion).

``teacher``: teacher-forced over the reference completions (as ``zoo.acceptance``):
  ``acceptance_teacher.csv``  α = E[Σ_v min(p_T, q_T)] per domain at T = 0 / 0.5 / 1 (argmax agreement at 0);
  ``topk_acceptance.csv``     zheng2025's α(K) (eq 9: draft top-K renormalised at T = 1 against the target at
                              T = 0 / 1) per domain, K ∈ {1, 3, 32, 320, 3 200, 32 000, full}.
``live``: real speculative rounds (``decoding.speculative_batch``, one batch of prompts per domain):
  ``live_acceptance.csv``     per domain × T × γ: rounds, drafted, accepted, acceptance rate, τ (mean
                              acceptance length) and the per-position acceptance P(i | < i accepted);
  ``data/traces/realpair_traces.csv.gz``  every drafted position with its draft-logit statistics (WISP's
                              features) and outcome, the input of the predictor and the twins' acceptance.
``serve``: the real serving system (one verification server process holding the 1.5B target, drafter
  processes each holding a 0.5B draft, gRPC on 127.0.0.1) on the real pair, greedy, per allocator:
  ``serving_runs.csv``        the per-round log (``serving.real_logs``), each client's output checked token for
                              token against the target's own greedy autoregressive decoding of the same prompt.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from .. import decoding, paths, sampling
from ..solvers import zheng2025
from ..zoo import DOMAINS, eval_records, load_pair
from ..zoo.acceptance import completion_logits, pair_acceptance
from ..zoo.realpair import DRAFT, TARGET

OUT = paths.DATA / "realpair"
TRACES = paths.DATA / "traces" / "realpair_traces.csv.gz"
INSTRUCT = {"chat-instruct": "chat", "code-instruct": "code"}
ALL_DOMAINS = (*DOMAINS, *INSTRUCT)
KS = (1, 3, 32, 320, 3_200, 32_000)


def records(domain: str, n: int, tokenizer) -> list[dict]:
    """``n`` held-out records of ``domain``; instruct domains wrap the zoo record in the chat template."""
    if domain not in INSTRUCT:
        return eval_records(domain, n)
    out = []
    for r in eval_records(INSTRUCT[domain], n):
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": r["prompt"]}], tokenize=False,
                                               add_generation_prompt=True)
        out.append(dict(r, domain=domain, prompt=prompt))
    return out


def _cut(logits: list[torch.Tensor], n: int) -> list[torch.Tensor]:
    return [x[:, :n] for x in logits]      # padded matrix rows beyond the tokenizer are never tokens


def teacher(draft, target, tok, n_records: int = 6, max_len: int = 192, progress=print) -> tuple[pd.DataFrame, pd.DataFrame]:
    n_vocab = len(tok)
    card, topk = [], []
    for d in ALL_DOMAINS:
        t0 = time.perf_counter()
        recs = records(d, n_records, tok)
        q = _cut(completion_logits(draft, tok, recs, max_len), n_vocab)
        p = _cut(completion_logits(target, tok, recs, max_len), n_vocab)
        positions = sum(len(x) for x in p)
        for temp, a in pair_acceptance(q, p).items():
            card.append(dict(domain=d, temperature=temp, alpha=round(a, 4), positions=positions))
        for row in zheng2025.topk_alpha(q, p, (*KS, n_vocab), temperatures=(0.0, 1.0)).to_dict("records"):
            topk.append(dict(domain=d, **row))
        progress(f"teacher {d}: {positions} positions in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(card), pd.DataFrame(topk)


def live(draft, target, tok, n_prompts: int = 4, max_new_tokens: int = 32, gammas=(4,),
         temperatures=(0.0, 1.0), seed: int = 0, progress=print, checkpoint=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Real speculative rounds per domain × T × γ; ``checkpoint(table, traces)`` is called after each domain."""
    table, traces = [], []
    for d in ALL_DOMAINS:
        prompts = [tok(r["prompt"], add_special_tokens=False)["input_ids"] for r in records(d, n_prompts, tok)]
        for temp in temperatures:
            for g in gammas:
                t0 = time.perf_counter()
                gens = decoding.speculative_batch(draft, target, prompts, max_new_tokens, gamma=g,
                                                  temperature=temp, seed=seed, tokenizer=tok)
                acc = [a for gen in gens for a in gen.accepted]
                dra = [n for gen in gens for n in gen.drafted]
                ppa = sampling.per_position_acceptance(acc, dra)
                table.append(dict(domain=d, temperature=temp, gamma=g, prompts=len(prompts), rounds=len(acc),
                                  drafted=int(sum(dra)), accepted=int(sum(acc)),
                                  acceptance_rate=round(sampling.acceptance_rate(acc, dra), 4),
                                  tau=round(sampling.mean_acceptance_length(acc), 4),
                                  iid_alpha=round(sampling.iid_acceptance(acc, dra), 4),
                                  **{f"p{i + 1}": round(float(x), 4) for i, x in enumerate(ppa)}))
                for k, gen in enumerate(gens):
                    traces.append(decoding.traces_frame(gen.rounds, domain=d, temperature=temp, gamma=g, prompt=k))
                progress(f"live {d} T={temp} γ={g}: τ = {table[-1]['tau']:.2f} in {time.perf_counter() - t0:.0f} s")
        if checkpoint is not None:
            checkpoint(pd.DataFrame(table), pd.concat(traces, ignore_index=True))
    return pd.DataFrame(table), pd.concat(traces, ignore_index=True)


def serve_workload(clients: int = 2, tokens: int = 24, capacity: int = 8, seed: int = 0):
    """The real serving runs' clients: client i drafts one prompt of zoo domain i (greedy)."""
    from ..serving.workload import ClientSpec, Workload
    return Workload(TARGET, tuple(ClientSpec(DRAFT, (DOMAINS[i % len(DOMAINS)],), 1, tokens, seed=seed)
                                  for i in range(clients)), capacity=capacity)


def _allocator(name: str, capacity: int, clients: int):
    from ..serving.allocation import FixedS, GoodspeedAllocator
    return {"goodspeed": lambda: GoodspeedAllocator(capacity), "fixed": lambda: FixedS(capacity, clients)}[name]()


PIN = (0, 1)   # the server on core 0, every drafter on core 1 (as the zoo's validation runs)


def serve(target, clients: int = 2, tokens: int = 24, capacity: int = 8, allocators=("goodspeed", "fixed"),
          seed: int = 0, pin=PIN, progress=print) -> pd.DataFrame:
    """Real multi-process serving runs on the pair (greedy), the server and the drafters pinned to one core
    each; raises if any client's tokens differ from the target's greedy autoregressive output (speculative
    decoding is exact, also across processes)."""
    from ..serving.batching import SyncRounds
    from ..serving.run import prompt_stream, run_real

    wl = serve_workload(clients, tokens, capacity, seed)
    reference = [[decoding.autoregressive(target, p, tokens).tokens.tolist() for p in prompt_stream(spec)]
                 for spec in wl.clients]
    logs = []
    for name in allocators:
        t0 = time.perf_counter()
        log, outputs = run_real(wl, SyncRounds(), _allocator(name, capacity, clients), label=name, seed=seed,
                                target=target, rpc_timeout=600.0, idle_timeout=600.0, client_timeout=600.0, pin=pin)
        for c, want in enumerate(reference):
            if outputs[c] != want:
                raise AssertionError(f"{name}: client {c}: served {outputs[c]} != greedy AR {want}")
        ok = log[log.event == ""]
        progress(f"serve {name}: {clients} drafters, {int(ok.tokens.sum())} tokens in {time.perf_counter() - t0:.0f} s, "
                 f"acceptance {ok.accepted.sum() / max(ok.S.sum(), 1):.3f}; outputs equal greedy AR")
        logs.append(log.assign(n_clients=clients, capacity=capacity))
    return pd.concat(logs, ignore_index=True)


def serve_replay(seed: int = 0) -> pd.DataFrame:
    """The committed real-pair serving runs against their replay (``serving.replay``: the runs' own rounds,
    each pass its measured time), p50/p90/p99 per metric (``serving_validation.compare``), judged at the
    validation's 5 % / 10 % (``within``)."""
    from ..serving.batching import SyncRounds
    from ..serving.replay import MeasuredPasses, dispatch_latency, replay, turnaround_latency
    from ..serving.runtime import fit_log_batches, log_batches
    from . import serving_validation as sv

    runs = load("serving_runs")
    runs["event"] = runs["event"].fillna("")
    pairs = {}
    for pol, log in runs.groupby("policy", sort=False):
        log = log.reset_index(drop=True)
        n, cap = int(log.n_clients.iloc[0]), int(log.capacity.iloc[0])
        tokens = int(log[log.event == ""].groupby("client").tokens.sum().max())
        model = MeasuredPasses(log, fit_log_batches(log_batches(log), seed))
        twin = replay(log, serve_workload(n, tokens, cap, seed), SyncRounds(), _allocator(pol, cap, n), model,
                      label=pol, dispatch=float(np.median(dispatch_latency(log))), turnaround=turnaround_latency(log),
                      seed=seed)
        pairs[("realpair", pol, n)] = (log, twin)
    return sv.judge(sv.compare(pairs), sv.floor_s({k: v[0] for k, v in pairs.items()}))


def _write_live(table: pd.DataFrame, traces: pd.DataFrame) -> None:
    table.to_csv(FILES["live_acceptance"], index=False, lineterminator="\n", float_format="%.6g")
    decoding.save_traces(traces, TRACES)


FILES = {"acceptance_teacher": OUT / "acceptance_teacher.csv", "topk_acceptance": OUT / "topk_acceptance.csv",
         "live_acceptance": OUT / "live_acceptance.csv", "traces": TRACES, "serving_runs": OUT / "serving_runs.csv"}


def load(name: str) -> pd.DataFrame:
    """A committed measurement of the real pair (one of ``FILES``); a missing file names its command."""
    if name not in FILES:
        raise ValueError(f"unknown real-pair measurement {name!r}; known: {sorted(FILES)}")
    path = FILES[name]
    if not path.exists():
        step = {"acceptance_teacher": "teacher", "topk_acceptance": "teacher", "serving_runs": "serve"}.get(name, "live")
        raise FileNotFoundError(f"{path} is missing: it is committed with the repository; `make realpair` then "
                                f"`python -m specedge.experiments.realpair_card {step}` measures it again")
    return decoding.load_traces(path) if name == "traces" else pd.read_csv(path)


def pooled_topk() -> pd.DataFrame:
    """α(K) per target temperature over every domain's positions (position-weighted), as ``topk_alpha`` gives it."""
    t = load("topk_acceptance")
    t = t.assign(weighted=t.alpha * t.positions)
    g = t.groupby(["temperature", "K"], as_index=False)[["weighted", "positions"]].sum()
    return g.assign(alpha=g.weighted / g.positions).drop(columns="weighted")[["temperature", "K", "alpha", "positions"]]


def twin_traces() -> pd.DataFrame:
    """The real pair's committed traces in the twins' format (``serving.twin.TraceAcceptance``): every drafted
    position of the live γ = 4 rounds, named by the pair (``draft``/``target`` = the short names)."""
    t = load("traces")
    return t.assign(draft=DRAFT, target=TARGET)


def twin_workload(clients: int, capacity: int, max_tokens: int, seed: int = 0, temperature: float = 0.0):
    """GOODSPEED's workload on the real pair: client i drafts on domains i and i + 4 (mod 8) of the pair's
    eight, in that order (the zoo workload's switch of domain half-way, with the pair's spread of α)."""
    from ..serving.workload import ClientSpec, Workload
    n = len(ALL_DOMAINS)
    return Workload(TARGET, tuple(ClientSpec(DRAFT, (ALL_DOMAINS[i % n], ALL_DOMAINS[(i + n // 2) % n]), 1, max_tokens,
                                             temperature=temperature, seed=seed) for i in range(clients)),
                    capacity=capacity)


README_START, README_END = "<!-- realpair:start -->", "<!-- realpair:end -->"
BENCH = paths.FIGURES / "bench" / "decoding_realpair.csv"


def readme_block() -> str:
    """The README's real-pair tables, generated from the committed CSVs (``make readme`` writes them)."""
    card = load("acceptance_teacher").pivot_table(index="domain", columns="temperature", values="alpha")
    zoo_card = pd.read_csv(paths.DATA / "zoo" / "acceptance.csv")
    zoo_best = zoo_card[(zoo_card.draft == "draft-l") & (zoo_card.target == "target-m")].pivot_table(
        index="domain", columns="temperature", values="alpha")
    lines = ["Teacher-forced acceptance α = E[Σ min(p, q)] on the zoo's held-out records (6 per domain, ≤ 192 tokens;",
             "`data/realpair/acceptance_teacher.csv`), beside the zoo's best pair (`data/zoo/acceptance.csv`):", "",
             "| domain | real pair T=0 | T=0.5 | T=1 | zoo draft-l → target-m T=0 | T=1 |", "|---|---:|---:|---:|---:|---:|"]
    for d, r in card.iterrows():
        z = zoo_best.loc[d] if d in zoo_best.index else None
        zs = [f"{z[t]:.3f}" if z is not None else "–" for t in (0.0, 1.0)]
        lines.append(f"| {d} | {r[0.0]:.3f} | {r[0.5]:.3f} | {r[1.0]:.3f} | {zs[0]} | {zs[1]} |")
    topk = pooled_topk().pivot_table(index="temperature", columns="K", values="alpha")
    lines += ["", "zheng2025's α(K) on the real vocabulary (draft top-K renormalised at T = 1 against the target at T; "
              "position-weighted mean over the eight domains; `data/realpair/topk_acceptance.csv`):", "",
              "| K | " + " | ".join(str(k) for k in topk.columns) + " |", "|---|" + "---:|" * len(topk.columns)]
    for t, r in topk.iterrows():
        lines.append(f"| target T = {t:g} | " + " | ".join(f"{v:.3f}" for v in r) + " |")
    if BENCH.exists():
        b = pd.read_csv(BENCH)
        w = b.pivot_table(index=["draft", "gamma"], columns="quantity", values="value")
        lines += ["", f"Decoding benchmark (`{BENCH.relative_to(paths.ROOT)}`, `make bench`; {b.device.iloc[0]}, "
                  f"{int(b.threads.iloc[0])} threads, greedy, {int(b.prompts.iloc[0])} prompts × {int(b.new_tokens.iloc[0])} "
                  "new tokens; outputs of all four methods " + ("identical in every row" if (w["outputs_identical"] == 1).all()
                                                                 else "NOT identical in some rows: see the CSV") + "):", "",
                  "| draft | γ | draft acceptance | τ | c = T_draft / T_target | (γ+1)-token verify ÷ 1-token step | "
                  "ours SD ÷ our AR (wall) | transformers assisted ÷ AR (wall) | analytic eq (11) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for (draft, g), r in w.iterrows():
            ar = r["tokens_per_wall_s[ours autoregressive]"]
            lines.append(f"| {draft} | {g} | {r['draft_acceptance_rate']:.2f} | {r['mean_acceptance_length']:.2f} | "
                         f"{r['cost_ratio_c']:.2f} | {r['t_verify_forward_s'] / r['t_target_forward_s']:.2f} | "
                         f"{r['tokens_per_wall_s[ours speculative]'] / ar:.2f}× | "
                         f"{r['tokens_per_wall_s[transformers assisted]'] / ar:.2f}× | {r['speedup_analytic']:.2f}× |")
    if FILES["serving_runs"].exists():
        runs = load("serving_runs")
        ok = runs[runs.event.isna() | (runs.event == "")]
        lines += ["", "The real serving system on the pair (`realpair_card serve`, `data/realpair/serving_runs.csv`: one server "
                  "process holding the 1.5B target, one drafter process per client holding the 0.5B draft, gRPC on 127.0.0.1, "
                  "greedy, one torch thread per process; every client's tokens equal the target's own greedy decoding):", "",
                  "| allocator | clients | rounds | tokens | acceptance | round time p50 / p90 (s) | verify p50 (s) | draft p50 (s) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for pol, g in ok.groupby("policy", sort=False):
            lines.append(f"| {pol} | {g.client.nunique()} | {len(g)} | {int(g.tokens.sum())} | {g.accepted.sum() / g.S.sum():.3f} | "
                         f"{g.t_round.median():.2f} / {g.t_round.quantile(0.9):.2f} | {g.t_verify.median():.2f} | {g.t_draft.median():.2f} |")
    return "\n".join(lines)


def update_readme(readme=paths.ROOT / "README.md", check: bool = False) -> bool:
    """Rewrite (or with ``check`` only compare) the README's real-pair block; True when it is/was stale."""
    from ..compare import render_readme
    text = readme.read_text()
    new = render_readme(text, readme_block(), README_START, README_END)
    if new != text and not check:
        readme.write_text(new)
    return new != text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specedge.experiments.realpair_card", description=__doc__.split("\n")[0])
    ap.add_argument("step", nargs="?", choices=("teacher", "live", "serve", "all", "readme"), default="all",
                    help="readme: only rewrite README.md's real-pair tables from the committed files")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gammas", type=int, nargs="+", default=[4], help="draft lengths of the live step")
    args = ap.parse_args(argv)
    if args.step == "readme":
        print("README real-pair tables " + ("updated" if update_readme() else "already current"))
        return 0
    torch.set_num_threads(args.threads)
    draft, target, tok = load_pair(DRAFT, TARGET)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.step in ("teacher", "all"):
        card, topk = teacher(draft, target, tok)
        card.to_csv(OUT / "acceptance_teacher.csv", index=False, lineterminator="\n", float_format="%.6g")
        topk.to_csv(OUT / "topk_acceptance.csv", index=False, lineterminator="\n", float_format="%.6g")
        print(card.pivot_table(index="domain", columns="temperature", values="alpha").round(3).to_string())
    if args.step in ("live", "all"):
        table, _ = live(draft, target, tok, gammas=tuple(args.gammas), checkpoint=_write_live)
        print(table.to_string())
    if args.step in ("serve", "all"):
        del draft                      # the drafter processes load their own
        from ..serving import real_logs
        real_logs.save(serve(target, clients=2, tokens=32), FILES["serving_runs"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
