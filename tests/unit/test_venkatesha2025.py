"""venkatesha2025: Table 4 formulas, eq (9), Table 1 cost, and the FSD simulation against them."""
import numpy as np
import pytest

from specedge import hardware
from specedge.early_exit.sim import (ExitOutcome, FSDConfig, RoundTrace, average_early_exit, simulate, stated_average_early_exit,
                                     stated_miss_rate)
from specedge.solvers import venkatesha2025 as v


# ------------------------------------------------------------------ formulas
def test_table1_reproduces_every_printed_cost():
    t = v.table1()
    for col in ("cloud_ar", "cloud_sd", "edge_cloud_sd"):
        np.testing.assert_allclose(t[col], t["paper_" + col], atol=0.5)
    # the printed savings (33, 42, 37, 7 % cloud SD; 50, 50, 52, 50 % edge-cloud SD)
    np.testing.assert_array_equal((100 * t.saving_cloud_sd).round().astype(int), [33, 42, 37, 7])
    np.testing.assert_array_equal((100 * t.saving_edge_cloud_sd).round().astype(int), [50, 50, 52, 50])


def test_fsd_reduces_to_sd_and_eq9():
    args = dict(N=100, tau=2.5, gamma=4, T_d=0.05, T_t=0.5, T_c=0.1)
    sd = v.latency_sd(**args)
    assert v.latency_fsd(**args, rho=1.0) == pytest.approx(sd)
    assert v.latency_sd(**args) == pytest.approx(100 / 2.5 * (0.2 + 0.1 + 0.5))
    # eq 9 is the ratio of Table 4's SD and FSD when T_c = t_sync = 0
    for rho in (0.0, 0.3, 0.9):
        ratio = v.latency_sd(**{**args, "T_c": 0}) / v.latency_fsd(**{**args, "T_c": 0}, rho=rho)
        assert ratio == pytest.approx(v.speedup_eq9(rho, 0.05 / 0.5, 4))


def test_fig6_thresholds_match_paper_statement():
    rho = v.rho_for_speedup(2.0, v.FIG6_C, np.array([4, 7, 10]))
    for r, (g, claim) in zip(rho, v.FIG6_CLAIMS.items()):
        assert r < claim + 0.01, (g, r)        # "ρ must remain below 10 / 25 / 35 %"
        assert v.speedup_eq9(r, v.FIG6_C, g) == pytest.approx(2.0)
    assert np.all(np.diff(rho) > 0)            # larger γ tolerates more misses


def test_eq9_increases_with_gamma_and_c_decreases_with_rho():
    """Appendix B: FSD helps more at larger gamma and c, less at larger cache-miss rate rho (eq 9)."""
    g = v.speedup_eq9(0.3, 0.5, np.arange(1, 11))
    c = v.speedup_eq9(0.3, np.linspace(0.05, 1, 20), 4)
    r = v.speedup_eq9(np.linspace(0, 1, 21), 0.5, 4)
    assert np.all(np.diff(g) > 0) and np.all(np.diff(c) > 0) and np.all(np.diff(r) < 0)
    assert v.speedup_eq9(1.0, 0.5, 4) == pytest.approx(1.0)   # every pre-draft missed: no effect


def test_inventory_paper_values_equal_the_solver_and_profile_inputs():
    """The paper's numbers live once as data: the inventory's Table 1 / Table 8 / Fig 6 values are the
    ones the solver's inputs hold, and Table 5's rows quote the venkatesha2025_paper profile."""
    from specedge import coverage
    paper = coverage.paper_values("venkatesha2025")
    ids = ["table1-together-qwen", "table1-openrouter-llama", "table1-groq-llama3", "table1-openrouter-qwen2vl"]
    assert [tuple(paper[i][k] for k in ("cloud_ar", "cloud_sd", "edge_cloud_sd")) for i in ids] == v.TABLE1_PAPER
    t8 = v.TABLE8_PAPER
    assert (paper["table8b-ar-sd"], paper["table8b-sd-fsd"], paper["table8a-ratio"]) == \
        (t8["speedup_ar_sd"], t8["speedup_sd_fsd"], t8["c"])
    assert (paper["table8a-drafting"], paper["table8a-verification"], paper["table8a-communication"]) == \
        tuple(round(1e3 * t8[k]) for k in ("T_d_s", "T_t_s", "T_c_s"))
    assert (paper["table8b-tau"], paper["table8b-miss"], paper["table8b-ee"], paper["table8a-threads"]) == \
        (t8["tau"], t8["rho"], t8["avg_ee"], t8["threads"])
    assert {g: paper[f"fig6-2x-gamma{g}"] for g in (4, 7, 10)} == v.FIG6_CLAIMS
    prof = hardware.load_profile("venkatesha2025_paper")
    inv = {s["id"]: s["text"] for s in coverage.load_inventory("venkatesha2025")["statements"]}
    for s in v.MODEL_SETS:
        for client in ("jetson", "rtx"):
            k = prof.coefficients(f"{client}_{s}")
            assert f"{round(1e3 * k['T_d_s'])}ms" in inv["table5-drafting"]
            assert f"{round(1e3 * k['T_t_s'])}ms" in inv["table5-verification"]
            assert f"{round(k['threads'])}" in inv["table5-threads"].split(": ")[1].split()


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="rho"):
        v.speedup_eq9(1.5, 0.3, 4)
    with pytest.raises(ValueError, match="tau"):
        v.latency_sd(10, 0.5, 4, 0.1, 0.5, 0.1)
    with pytest.raises(ValueError, match="gamma"):
        v.fig6_grid(gammas=(0,))


def test_paper_profile_timings():
    prof = hardware.load_profile("venkatesha2025_paper")
    t = v.Timings.from_profile(prof, "jetson_vicuna68m_vicuna7b")
    assert t.T_d == pytest.approx(0.334 / 4)
    assert t.c == pytest.approx(prof.coefficients("jetson_vicuna68m_vicuna7b")["c"], abs=0.01)
    cfg = FSDConfig.from_profile(prof, "rtx_vicuna68m_vicuna7b")
    assert cfg.threads == 30 and cfg.gamma == 4


def test_bad_profile_and_threads_raise(tmp_path):
    prof = hardware.load_profile("venkatesha2025_paper")
    bad = hardware.validate({**prof.to_dict(), "runtime": {"x": {"model": "m", "T_t_s": 0.5}}})
    with pytest.raises(ValueError, match="lacks"):
        FSDConfig.from_profile(bad, "x")
    with pytest.raises(ValueError, match="threads"):
        FSDConfig(gamma=4, T_d=0.1, T_t=0.5, T_c=0.1, threads=0)
    with pytest.raises(ValueError, match="client_queue"):
        FSDConfig(gamma=4, T_d=0.1, T_t=0.5, T_c=0.1, client_queue="lifo")
    with pytest.raises(KeyError):
        FSDConfig.from_profile(prof, "no_such_runtime")


# ------------------------------------------------------------------ simulation vs formulas
L = 4


def _round(final, exits, drafted=4):
    """A round whose final outcome is ``final`` and early exits (layer, outcome, confidence)."""
    return RoundTrace(drafted=drafted, accepted=final[0], token=final[1], n_layers=L,
                      exits=tuple(ExitOutcome(l, a, t, c) for l, (a, t), c in exits))


HIT = _round((2, 7), [(1, (2, 7), 0.9)])          # exit 1 already agrees with the final
MISS = _round((1, 5), [(1, (2, 7), 0.9)])         # exit 1 predicts something else


@pytest.mark.parametrize("pattern", ["HHHHH", "MMMMM", "HMHMH", "MMHHM"])
def test_simulation_equals_formulas_on_deterministic_case(pattern):
    rounds = [HIT if c == "H" else MISS for c in pattern]
    # pre-drafting finishes before the final arrives and no message waits for the wire
    cfg = FSDConfig(gamma=4, T_d=0.02, T_t=0.8, T_c=0.1, threads=1, t_sync=0.003)
    fsd, sd = simulate([rounds], cfg, "fsd"), simulate([rounds], cfg, "sd")
    n = sum(r.tokens for r in rounds)
    tau = n / len(rounds)
    misses = sum(c == "M" for c in pattern[:-1])
    assert fsd.checks == len(rounds) - 1 and fsd.misses == misses and fsd.partial_hits == 0
    assert sd.time_s == pytest.approx(v.latency_sd(n, tau, 4, cfg.T_d, cfg.T_t, cfg.T_c))
    # Table 4 with ρ counted over rounds: the first round always drafts, the last has no next round
    rho = (misses + 1) / len(rounds)
    assert fsd.time_s == pytest.approx(v.latency_fsd(n, tau, 4, cfg.T_d, cfg.T_t, cfg.T_c, rho, cfg.t_sync))


def test_sd_mode_never_hits_and_counts_tokens():
    rounds = [HIT, MISS, HIT]
    r = simulate([rounds, rounds], FSDConfig(gamma=4, T_d=0.02, T_t=0.8, T_c=0.1), "sd")
    assert r.miss_rate == 1.0 and r.tokens == 2 * (3 + 2 + 3) and r.rounds == 6


def test_cache_hit_miss_on_crafted_sequences():
    cfg = FSDConfig(gamma=4, T_d=0.02, T_t=0.8, T_c=0.1, threads=1)
    # the agreeing exit comes with low confidence after a confident wrong one: one thread, priority
    # order, a slow wire; only the first pre-draft fits before the final
    tricky = _round((3, 9), [(1, (0, 4), 0.2), (2, (1, 1), 0.3), (3, (3, 9), 0.95)])
    # one thread busy with exit 1 while exits 2 and 3 queue up: priority takes the confident (right)
    # one, still running when the final lands: a miss (the cache holds finished pre-drafts), a partial
    # hit if the client waits for it (running="wait"); FIFO takes exit 2 and misses either way
    slow = cfg.with_(T_d=0.1125, T_c=0.02)
    assert simulate([[tricky, tricky]], slow, "fsd").log.outcome.tolist() == ["miss", "last"]
    r = simulate([[tricky, tricky]], slow.with_(running="wait"), "fsd")
    assert r.log.outcome.tolist() == ["partial", "last"] and r.misses == 0
    assert simulate([[tricky, tricky]], slow.with_(client_queue="fifo", running="wait"), "fsd"
                    ).log.outcome.tolist() == ["miss", "last"]
    # enough threads and a fast wire: every distinct outcome is pre-drafted, a hit
    fast = cfg.with_(threads=3, T_c=0.01)
    assert simulate([[tricky, tricky]], fast, "fsd").log.outcome.tolist() == ["hit", "last"]
    # no exit agrees: a miss whatever the resources
    wrong = _round((3, 9), [(1, (0, 4), 0.9), (2, (1, 1), 0.9), (3, (2, 2), 0.9)])
    assert simulate([[wrong, wrong]], fast.with_(threads=8), "fsd").misses == 1
    # a pre-draft still running when the final lands: a miss, or a partial hit when the client waits
    late = _round((3, 9), [(3, (3, 9), 0.9)])
    assert simulate([[late, late]], cfg.with_(T_d=0.2, T_c=0.01), "fsd").misses == 1
    r = simulate([[late, late]], cfg.with_(T_d=0.2, T_c=0.01, running="wait"), "fsd")
    assert r.log.outcome.tolist() == ["partial", "last"] and r.misses == 0
    assert average_early_exit([[tricky, wrong, late]]) == pytest.approx((3 + 4 + 3) / 3)
    # the paper's definitions (Sec 4.2) read the exits alone: a miss where no exit finds the final's output (the
    # round 'wrong'), whatever the timing; Avg EE over the rounds where one does (exit 3 in both)
    assert stated_miss_rate([[tricky, wrong, late]]) == pytest.approx(1 / 3)
    assert stated_average_early_exit([[tricky, wrong, late]]) == pytest.approx(3.0)
    assert stated_miss_rate([[wrong]]) == 1.0 and np.isnan(stated_average_early_exit([[wrong]]))
    early = _round((3, 9), [(1, (3, 9), 0.5), (2, (3, 9), 0.6), (3, (0, 1), 0.7)])   # the first exit already agrees
    assert stated_average_early_exit([[early, late]]) == pytest.approx((1 + 3) / 2)
    # the simulated rate depends on the client's speed; the stated one does not
    slow_r, fast_r = simulate([[late, late]], cfg.with_(T_d=0.2, T_c=0.01), "fsd"), simulate([[late, late]], fast, "fsd")
    assert (slow_r.miss_rate, fast_r.miss_rate) == (1.0, 0.0) and stated_miss_rate([[late, late]]) == 0.0


def test_more_threads_never_miss_more():
    rng = np.random.default_rng(0)
    rounds = []
    for _ in range(40):
        final = (int(rng.integers(0, 5)), int(rng.integers(0, 50)))
        exits = [(l, final if rng.random() < 0.3 else (int(rng.integers(0, 5)), int(rng.integers(0, 50))),
                  float(rng.random())) for l in range(1, L)]
        rounds.append(_round(final, exits))
    base = FSDConfig(gamma=4, T_d=0.05, T_t=0.8, T_c=0.02)
    misses = [simulate([rounds], base.with_(threads=k), "fsd").misses for k in (1, 2, 3, 8)]
    assert misses == sorted(misses, reverse=True)
    # the random client queue is seeded: same seed, same result
    rnd = base.with_(client_queue="random", threads=1)
    assert simulate([rounds], rnd, "fsd").time_s == simulate([rounds], rnd, "fsd").time_s


def test_dedupe_frees_threads_from_duplicate_exits():
    # exits 1-4 agree with each other (wrongly), exit 5 agrees with the final but is less confident
    dup = RoundTrace(drafted=4, accepted=3, token=9, n_layers=10,
                     exits=tuple(ExitOutcome(l, 0, 4, 0.9) for l in range(1, 5)) + (ExitOutcome(5, 3, 9, 0.5),))
    cfg = FSDConfig(gamma=4, T_d=0.075, T_t=1.0, T_c=0.01, threads=1)
    assert simulate([[dup, dup]], cfg, "fsd").log.outcome.tolist() == ["miss", "last"]
    r = simulate([[dup, dup]], cfg.with_(dedupe=True), "fsd")
    assert r.log.outcome.tolist() == ["hit", "last"] and r.log.hit_exit.iloc[0] == 5


# ------------------------------------------------------------------ client speed and thread limit
def test_hand_computed_client_speed_decides_hit():
    """L = 4, T_t = 0.8 s, wire T_c/2 = 0.01 s, γ = 4, one exit (layer 1) agreeing with the final.

    Exit 1 is ready at 0.2 s into verification and reaches the client 0.01 s later; the final reaches
    it at 0.81 s. A client drafting γ tokens in 0.4 s finishes the pre-draft at 0.61 s: a hit, and the
    next round leaves at once. One drafting in 0.64 s finishes at 0.85 s: a miss, it drafts anew.
    """
    r = [HIT, HIT]
    fast = simulate([r], FSDConfig(gamma=4, T_d=0.1, T_t=0.8, T_c=0.02), "fsd")
    # 0.4 first draft + (0.01 + 0.8 + 0.01) round 0, hit, + (0.01 + 0.8 + 0.01) round 1
    assert fast.log.outcome.tolist() == ["hit", "last"] and fast.time_s == pytest.approx(0.4 + 0.82 + 0.82)
    assert fast.log.hit_exit.iloc[0] == 1 and fast.avg_hit_exit == 1
    slow = simulate([r], FSDConfig(gamma=4, T_d=0.16, T_t=0.8, T_c=0.02), "fsd")
    # 0.64 + 0.82 round 0, miss: drafts 0.64, + 0.82 round 1
    assert slow.log.outcome.tolist() == ["miss", "last"] and slow.time_s == pytest.approx(0.64 + 0.82 + 0.64 + 0.82)
    # waiting for the running pre-draft (beyond the paper): round 1 leaves at 0.64 + 0.01 + 0.21 + 0.64 = 1.50
    wait = simulate([r], FSDConfig(gamma=4, T_d=0.16, T_t=0.8, T_c=0.02, running="wait"), "fsd")
    assert wait.log.outcome.tolist() == ["partial", "last"] and wait.time_s == pytest.approx(1.50 + 0.82)


def test_hand_computed_thread_limit_decides_hit():
    """Exit 1 (confident, wrong) reaches the client at 0.21 s, exit 2 (right) at 0.41 s; a pre-draft
    takes 0.36 s. One thread is busy with exit 1 until 0.57 s, so exit 2's pre-draft ends at 0.93 s,
    after the final (0.81 s): a miss. A second thread starts exit 2 at 0.41 s and ends at 0.77 s: a hit."""
    rnd = _round((2, 7), [(1, (0, 3), 0.9), (2, (2, 7), 0.6)])
    cfg = FSDConfig(gamma=4, T_d=0.09, T_t=0.8, T_c=0.02, threads=1)
    assert simulate([[rnd, rnd]], cfg, "fsd").log.outcome.tolist() == ["miss", "last"]
    two = simulate([[rnd, rnd]], cfg.with_(threads=2), "fsd")
    assert two.log.outcome.tolist() == ["hit", "last"] and two.log.hit_exit.iloc[0] == 2


def _random_rounds(seed, n=60, depth=16, agree=0.35):
    rng = np.random.default_rng(seed)
    rounds = []
    for _ in range(n):
        final = (int(rng.integers(0, 5)), int(rng.integers(0, 50)))
        exits = []
        for l in range(1, depth):
            p = agree * (0.5 + l / depth)   # deeper exits agree more often, as trained exits do
            out = final if rng.random() < p else (int(rng.integers(0, 5)), int(rng.integers(0, 50)))
            exits.append(ExitOutcome(l, *out, float(rng.random())))
        rounds.append(RoundTrace(drafted=4, accepted=final[0], token=final[1], n_layers=depth, exits=tuple(exits)))
    return rounds


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slower_client_never_misses_less(seed):
    rounds = _random_rounds(seed)
    for threads in (1, 3, 8):
        base = FSDConfig(gamma=4, T_d=0.01, T_t=0.5, T_c=0.04, threads=threads)
        rates = [simulate([rounds], base.with_(T_d=td), "fsd").miss_rate for td in (0.01, 0.03, 0.06, 0.09, 0.12)]
        assert rates == sorted(rates), (threads, rates)
        assert rates[-1] > rates[0]          # and the client's speed does matter
    # the paper's two clients on the same trace: the Jetson (334 ms drafting) misses more than the RTX
    prof = hardware.load_profile("venkatesha2025_paper")
    jetson = simulate([rounds], FSDConfig.from_profile(prof, "jetson_vicuna68m_vicuna7b"), "fsd").miss_rate
    rtx = simulate([rounds], FSDConfig.from_profile(prof, "rtx_vicuna68m_vicuna7b"), "fsd").miss_rate
    assert jetson > rtx


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_more_threads_never_raise_miss_rate_and_plateau(seed):
    rounds = _random_rounds(seed)
    base = FSDConfig(gamma=4, T_d=0.025, T_t=0.44, T_c=0.04)
    rates = [simulate([rounds], base.with_(threads=k), "fsd").miss_rate for k in range(1, 21)]
    assert all(b <= a for a, b in zip(rates, rates[1:])), rates
    assert rates[-1] < rates[0]
    # beyond what the wire delivers in one verification, a thread has nothing to pre-draft
    assert rates[-1] == rates[-5]
