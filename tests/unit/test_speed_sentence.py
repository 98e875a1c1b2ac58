"""The README's speed sentence says, per host class, which runtime, weights and loop is fastest, from the rows."""
import pandas as pd

from specedge.experiments.model_zoo import realpair_readme


def _bench(path, cpu, isa, dtype, ar, sd, runtime=None):
    """A benchmark file in the long format: one AR and one SD speed per γ (AR's runs beside each γ)."""
    name = "llama.cpp" if runtime else "ours"
    rows = []
    for g, (a, s) in enumerate(zip(ar, sd), start=1):
        base = dict(cpu=cpu, isa=isa, dtype=dtype, gamma=g, **({"runtime": runtime} if runtime else {}))
        rows += [dict(base, quantity=f"tokens_per_cpu_s[{name} autoregressive]", value=a),
                 dict(base, quantity=f"tokens_per_cpu_s[{name} speculative]", value=s),
                 dict(base, quantity="t_verify_curve_s", value=0.1)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_speed_table_picks_the_best_gamma_against_the_ar_run_beside_it(tmp_path):
    # γ = 2 has the fastest SD but a faster AR beside it: γ = 1's ratio (1.5 / 1.0) is the best
    f = _bench(tmp_path / "a.csv", "CPU X", "AVX2", "float32", ar=[1.0, 2.0, 1.2], sd=[1.5, 2.2, 0.6])
    t = realpair_readme.speed_table([f])
    assert t.gamma.tolist() == [1] and t.ratio.tolist() == [1.5] and t.sd.tolist() == [1.5]
    assert t.ar.tolist() == [1.2] and t.runtime.tolist() == ["transformers"]  # AR: the median of its runs


def test_speed_block_names_the_fastest_per_host_class(tmp_path):
    files = [_bench(tmp_path / "a.csv", "CPU X", "AVX2", "float32", ar=[2.0, 2.0], sd=[1.0, 1.6]),
             _bench(tmp_path / "b.csv", "CPU X", "AVX2", "Q4_K_M", ar=[7.0, 7.0], sd=[5.0, 6.0], runtime="llama.cpp"),
             _bench(tmp_path / "c.csv", "CPU Y", "AVX-512", "F32", ar=[2.0, 2.0], sd=[2.4, 2.2], runtime="llama.cpp")]
    block = realpair_readme.speed_block(realpair_readme.speed_table(files))
    x, y = [ln for ln in block.splitlines() if ln.startswith("  - ")]
    assert x.startswith("  - CPU X, AVX2: transformers float32 AR 2.00 / SD 1.60 (γ = 2; AR faster, SD 0.80×); "
                        "llama.cpp Q4_K_M AR 7.00 / SD 6.00 (γ = 2; AR faster, SD 0.86×)")
    assert x.endswith("Fastest: llama.cpp Q4_K_M AR, 7.00 tokens per CPU-second.")
    assert y.endswith("(γ = 1; SD faster, 1.20×). Fastest: llama.cpp F32 SD, 2.40 tokens per CPU-second.")
