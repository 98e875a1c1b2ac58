"""The real pair's generated blocks, from the committed files: its tables in ``docs/real-pair.md`` and the README's
speed sentence (per host class, runtime and weights: which of AR and SD is fastest). ``make readme`` runs
``python tools/realpair_readme.py``, which rewrites the text between the markers."""
from __future__ import annotations

import re

import pandas as pd

from specedge import paths
from specedge.zoo.realpair import FILES, load
from specedge.experiments.model_zoo.realpair_card import pooled_topk
from specedge.serving.log import verified

README_START, README_END = "<!-- realpair:start -->", "<!-- realpair:end -->"
DOC = paths.ROOT / "docs" / "real-pair.md"
BENCH = paths.FIGURES / "bench" / "decoding_realpair_*.csv"   # one file per host class and dtype
LLAMACPP = paths.FIGURES / "bench" / "llamacpp_realpair_*.csv"  # llama.cpp's rows: one file per host class and weights
SPEED_START, SPEED_END = "<!-- speed:start -->", "<!-- speed:end -->"
README = paths.ROOT / "README.md"
GAMMA = FILES["gamma_sweep"]


def bench_files() -> list:
    """The decoding benchmark's files, one per host class and dtype (``decoding_realpair_<isa>_<dtype>.csv``)."""
    return sorted(f for f in BENCH.parent.glob(BENCH.name) if re.fullmatch(r"decoding_realpair_[a-z0-9]+_(float32|bfloat16)\.csv", f.name))


def llamacpp_files() -> list:
    """llama.cpp's anchor rows (``benchmarks/bench_llamacpp.py``), one file per host class and weight format."""
    return sorted(LLAMACPP.parent.glob(LLAMACPP.name))


def speed_table(files) -> pd.DataFrame:
    """One row per benchmark file (host class x runtime x weights): AR's tokens per CPU-second (the median of its
    runs beside each γ), SD's at the γ with the best SD ÷ AR (against the AR run beside it), that γ and ratio."""
    rows = []
    for f in files:
        b = pd.read_csv(f)
        llama = "runtime" in b and b["runtime"].iloc[0] == "llama.cpp"
        name = "llama.cpp" if llama else "ours"
        w = b.pivot_table(index="gamma", columns="quantity", values="value")
        sd, ar = w[f"tokens_per_cpu_s[{name} speculative]"], w[f"tokens_per_cpu_s[{name} autoregressive]"]
        ratio = (sd / ar).dropna()
        g = ratio.idxmax()
        rows.append(dict(cpu=b.cpu.iloc[0], isa=b.isa.iloc[0], runtime="llama.cpp" if llama else "transformers",
                         weights=str(b.dtype.iloc[0]), ar=float(ar.dropna().median()), sd=float(sd[g]), gamma=int(g),
                         ratio=float(ratio[g])))
    return pd.DataFrame(rows, columns=["cpu", "isa", "runtime", "weights", "ar", "sd", "gamma", "ratio"])


def speed_block(table: pd.DataFrame) -> str:
    """The README's speed sentence: per host class, each runtime and weight format's AR and best-γ SD, which of
    the two is faster, and the fastest of all on that host class."""
    lines = ["- **The real pair's speed** (tokens per CPU-second, one thread, greedy, the benchmark's two prompts; `make bench`, "
             "[docs/real-pair.md](docs/real-pair.md); generated from the committed rows in `figures/bench/`; `make gpu-check` "
             "times its shapes on a GPU), SD at its best γ, per host class:"]
    for (cpu, isa), g in table.groupby(["cpu", "isa"], sort=True):
        parts = []
        for r in g.sort_values(["runtime", "weights"], ascending=[False, True]).itertuples():
            win = f"SD faster, {r.ratio:.2f}×" if r.ratio > 1 else f"AR faster, SD {r.ratio:.2f}×"
            parts.append(f"{r.runtime} {r.weights} AR {r.ar:.2f} / SD {r.sd:.2f} (γ = {r.gamma}; {win})")
        best = g.assign(top=g[["ar", "sd"]].max(axis=1)).sort_values("top").iloc[-1]
        how = "SD" if best.sd > best.ar else "AR"
        lines.append(f"  - {cpu}, {isa}: " + "; ".join(parts) + f". Fastest: {best.runtime} {best.weights} {how}, "
                     f"{max(best.ar, best.sd):.2f} tokens per CPU-second.")
    return "\n".join(lines)


def update_speed(readme=README, check: bool = False) -> bool:
    """Rewrite (or with ``check`` only compare) the README's speed sentence; True when it is/was stale."""
    from specedge.compare import rewrite_block
    return rewrite_block(readme, speed_block(speed_table(bench_files() + llamacpp_files())), SPEED_START, SPEED_END, check)


def _same_as_ar(row, first) -> str:
    """A table's "tokens = AR" cell: yes, or where each prompt whose tokens left AR's first did (``first``: that γ's
    ``first_divergence[prompt i]`` rows, -1 where none)."""
    if row["outputs_identical"] == 1:
        return "yes"
    div = first[first.value >= 0]
    return "no: first differs at token " + ", ".join(str(int(v)) for v in div.value) if len(div) else "no"


def llamacpp_lines(files) -> list[str]:
    """One table per llama.cpp file: per γ the (γ + 1)-token pass in one-token steps, SD ÷ AR, the acceptance and
    whether SD's tokens equal AR's."""
    lines = []
    for f in files:
        b = pd.read_csv(f)
        w = b[~b.quantity.str.contains(r"\[prompt|t_verify_curve", regex=True)].pivot_table(
            index="gamma", columns="quantity", values="value")
        head, first = b.iloc[0], b[b.quantity.str.startswith("first_divergence")]
        ar = w["tokens_per_cpu_s[llama.cpp autoregressive]"].iloc[0]
        lines += ["", f"**llama.cpp, {head['cpu']}, {head['isa']}, {head['dtype']}** (`{f.relative_to(paths.ROOT)}`; "
                  f"llama-cpp-python {head['llama_cpp_python']}, {int(head.threads)} thread, greedy, {int(head.prompts)} "
                  f"prompts × {int(head.new_tokens)} new tokens; AR {ar:.2f} tokens per CPU-second):", "",
                  "| γ | verify ÷ step | SD tokens per CPU-s | SD ÷ AR | acceptance | tokens = AR |",
                  "|---:|---:|---:|---:|---:|---|"]
        for g, r in w.iterrows():
            same = _same_as_ar(r, first[first.gamma == g])
            lines.append(f"| {int(g)} | {r['t_verify_forward_s'] / r['t_target_forward_s']:.2f} | "
                         f"{r['tokens_per_cpu_s[llama.cpp speculative]']:.2f} | {r['speedup_measured_cpu']:.2f}× | "
                         f"{r['draft_acceptance_rate']:.3f} | {same} |")
    return lines


def bench_lines(files) -> list[str]:
    """One table per benchmarked host class and dtype (``make bench``): per γ the (γ + 1)-token verification in
    one-token steps, our loop against our AR and against transformers' assisted generation, the share of the
    round cost model it reaches, and whether its tokens equal AR's (in bfloat16, where they first differ)."""
    lines = []
    for f in files:
        b = pd.read_csv(f)
        w = b[~b.quantity.str.contains(r"\[prompt|t_verify_curve|gamma_chosen|at_chosen", regex=True)].pivot_table(
            index="gamma", columns="quantity", values="value")
        chosen = b.loc[b.quantity == "gamma_chosen", "value"]
        first = b[b.quantity.str.startswith("first_divergence")]
        head = b.iloc[0]
        lines += ["", f"**{head['cpu']}, {head['isa']}, {head['dtype']}** (`{f.relative_to(paths.ROOT)}`; {int(head.threads)} torch "
                  f"thread, greedy, {int(head.prompts)} prompts × {int(head.new_tokens)} new tokens, tokens per CPU-second"
                  + (f"; γ picked from the measured pass curve: {int(chosen.iloc[0])}" if len(chosen) else "") + "):", "",
                  "| γ | verify ÷ step | ours ÷ our AR | ours ÷ assisted | % of round cost model | tokens = AR |",
                  "|---:|---:|---:|---:|---:|---|"]
        for g, r in w.iterrows():
            ours, ar = r["tokens_per_cpu_s[ours speculative]"], r["tokens_per_cpu_s[ours autoregressive]"]
            same = _same_as_ar(r, first[first.gamma == g])
            lines.append(f"| {int(g)} | {r['t_verify_forward_s'] / r['t_target_forward_s']:.2f} | {ours / ar:.2f}× | "
                         f"{r['ours_vs_assisted_cpu']:.2f}× | {r['speedup_measured_cpu'] / r['speedup_cost_model_measured_passes']:.0%} | "
                         f"{same} |")
    return lines


def readme_block() -> str:
    """The real pair's tables, generated from the committed CSVs (``make readme`` writes them into ``DOC``)."""
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
    lines += bench_lines(bench_files())
    lines += llamacpp_lines(llamacpp_files())
    if GAMMA.exists():
        from specedge.experiments.model_zoo.realpair_gamma import winners
        t = pd.read_csv(GAMMA)
        sd = t[t.gamma > 0]
        gammas = sorted(sd.gamma.unique())
        lines += ["", f"Which γ wins per domain (`{GAMMA.relative_to(paths.ROOT)}`, `python -m specedge.experiments.model_zoo.realpair_gamma`; "
                  f"our loop, greedy, {int(t.threads.iloc[0])} torch thread(s), {int(t.prompts.iloc[0])} prompt(s) × "
                  f"{int(t.new_tokens.iloc[0])} new tokens per domain, outputs equal AR): speedup over AR measured (eq (11)'s bound "
                  "from the rounds' α and c = draft ÷ target AR time per token):", "",
                  "| domain | c | " + " | ".join(f"γ = {g}" for g in gammas) + " | best γ measured | best γ by eq (11) |",
                  "|---|---:|" + "---:|" * len(gammas) + "---:|---:|"]
        best = winners(t).set_index("domain")
        for d, g in sd.groupby("domain", sort=False):
            cells = [f"{r.speedup:.2f}× ({r.analytic:.2f}×)" for r in g.itertuples()]
            lines.append(f"| {d} | {g.c.iloc[0]:.2f} | " + " | ".join(cells) + f" | {best.loc[d, 'gamma_measured']} "
                         f"({best.loc[d, 'speedup_measured']:.2f}×) | {best.loc[d, 'gamma_analytic']} |")
    if FILES["serving_runs"].exists():
        runs = load("serving_runs")
        ok = verified(runs.assign(event=runs["event"].astype(object).where(runs["event"].notna(), "")))
        lines += ["", "The real serving system on the pair (`python -m specedge.experiments.serving_validation.realpair`, `data/realpair/serving_runs.csv`: one server "
                  "process holding the 1.5B target, one drafter process per client holding the 0.5B draft, gRPC on 127.0.0.1, "
                  "greedy, one torch thread per process; every client's tokens equal the target's own greedy decoding):", "",
                  "| allocator | clients | rounds | tokens | acceptance | round time p50 / p90 (s) | verify p50 (s) | draft p50 (s) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for pol, g in ok.groupby("policy", sort=False):
            lines.append(f"| {pol} | {g.client.nunique()} | {len(g)} | {int(g.tokens.sum())} | {g.accepted.sum() / g.S.sum():.3f} | "
                         f"{g.t_round.median():.2f} / {g.t_round.quantile(0.9):.2f} | {g.t_verify.median():.2f} | {g.t_draft.median():.2f} |")
    if FILES["serving_runs_llamacpp"].exists():
        lines += ["", *serving_llamacpp_lines()]
    return "\n".join(lines)


def serving_llamacpp_lines() -> list[str]:
    """The real serving system with the draft on llama.cpp beside float32 transformers drafters
    (``data/realpair/serving_runs_llamacpp.csv``, ``experiments.serving_validation.realpair.drafting``)."""
    from specedge.experiments.serving_validation.realpair import drafting

    d = drafting("serving_runs_llamacpp")
    raw = load("serving_runs_llamacpp")
    sizes = " ".join(str(n) for n in sorted(d.n_clients.unique()))
    lines = ["The same system with the draft on the edge's own runtime (`python -m specedge.experiments.serving_validation.realpair "
             f"--backend transformers llamacpp --clients {sizes} --dtype {raw.target_dtype.iloc[0]}`, "
             f"`data/realpair/serving_runs_llamacpp.csv`, measured on {raw.device.iloc[0]}: the target in "
             f"{raw.target_dtype.iloc[0]} on core 0; the drafters on core 1, each the "
             "0.5B draft as float32 transformers or as its Q4_K_M GGUF file on llama.cpp, one thread per process; C = 4 N; "
             "every client's tokens equal the target's own greedy decoding):", "",
             "| drafter | allocator | clients | rounds | tokens | acceptance | tokens/s per client | round time p50 / p90 (s) "
             "| verify p50 (s) | drafting per round p50, CPU / wall (s) | load at start |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in d.sort_values(["n_clients", "policy", "setting"], kind="stable").itertuples():
        drafter = "Q4_K_M, llama.cpp" if "llamacpp" in r.setting else "float32, transformers"
        lines.append(f"| {drafter} | {r.policy} | {r.n_clients} | {r.rounds} | {r.tokens} | {r.acceptance:.3f} | "
                     f"{r.tokens_per_s:.2f} | {r.round_p50_s:.2f} / {r.round_p90_s:.2f} | {r.verify_p50_s:.2f} | "
                     f"{r.draft_cpu_p50_s:.3f} / {r.draft_wall_p50_s:.3f} | {r.load_1min:.1f} |")
    return lines


def update_readme(readme=DOC, check: bool = False) -> bool:
    """Rewrite (or with ``check`` only compare) the real-pair block of ``readme`` (``DOC``); True when it is/was stale."""
    from specedge.compare import rewrite_block
    return rewrite_block(readme, readme_block(), README_START, README_END, check)


if __name__ == "__main__":
    print("docs/real-pair.md tables " + ("updated" if update_readme() else "already current"))
    print("README speed sentence " + ("updated" if update_speed() else "already current"))
