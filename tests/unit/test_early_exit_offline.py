"""Offline adapter training on cached hidden states, trace files and timing sources, on a tiny random Llama."""
import numpy as np
import pandas as pd
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specedge import early_exit, hardware
from specedge.early_exit import offline, passes, sim

V = 64


def _llama(layers=4, seed=0, d=32, sharp=30.0):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=V, hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    m = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        m.lm_head.weight.mul_(sharp)   # a peaked teacher, as a trained LM's
    return m


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    target = _llama()
    ee = early_exit.EarlyExits(target, rank=8)
    g = torch.Generator().manual_seed(0)
    records = [torch.randint(0, V, (30,), generator=g).tolist() for _ in range(8)]
    folder = tmp_path_factory.mktemp("hidden")
    offline.extract(ee, records, folder, "train", topk=6, progress=False)
    offline.extract(ee, records[:3], folder, "held", topk=1, progress=False)
    return target, records, folder


def test_extract_stores_every_exit_position_and_the_final_top_k(cached):
    target, records, folder = cached
    hidden, topk = offline.load_split(folder, "train")
    assert hidden.shape == (8 * 30, 4, 32) and topk.shape == (8 * 30, 6)
    ee = early_exit.EarlyExits(target, rank=8)
    with torch.no_grad():
        logits = target(input_ids=torch.tensor([records[0]])).logits[0]
        # the last position is the final layer's output: norm + head give the target's own logits
        torch.testing.assert_close(ee.exit_logits(4, hidden[:30, -1]), logits)
    assert torch.equal(topk[:30, 0].long(), logits.argmax(-1))
    assert torch.equal(topk[:30].long(), logits.topk(6, -1).indices)


def test_extract_skips_stored_records_and_refuses_bad_input(cached, tmp_path):
    target, records, folder = cached
    ee = early_exit.EarlyExits(target, rank=8)
    before = {p: p.stat().st_mtime_ns for p in folder.glob("train-*.pt")}
    offline.extract(ee, records, folder, "train", topk=6, progress=False)
    assert {p: p.stat().st_mtime_ns for p in folder.glob("train-*.pt")} == before
    # other records under the same names are recomputed, and only the last extract's records are loaded
    other = tmp_path / "other"
    offline.extract(ee, records[:2], other, "s", topk=2, progress=False)
    stale = (other / "s-00001.pt").stat().st_mtime_ns
    offline.extract(ee, [records[0], records[5]], other, "s", topk=2, progress=False)
    assert (other / "s-00001.pt").stat().st_mtime_ns != stale
    offline.extract(ee, records[:1], other, "s", topk=2, progress=False)
    assert offline.load_split(other, "s")[0].shape[0] == 30
    with pytest.raises(ValueError, match="at least 2"):
        offline.extract(ee, [[1]], tmp_path, "x", progress=False)
    with pytest.raises(ValueError, match="topk"):
        offline.extract(ee, records, tmp_path, "x", topk=0, progress=False)
    with pytest.raises(FileNotFoundError, match="nope"):
        offline.load_split(tmp_path, "nope")


def test_candidate_kl_is_the_kl_on_the_columns_given():
    g = torch.Generator().manual_seed(3)
    s, t = torch.randn(5, 9, generator=g), torch.randn(5, 9, generator=g)
    full = torch.nn.functional.kl_div(torch.log_softmax(s, -1), torch.log_softmax(t, -1), log_target=True,
                                      reduction="none").sum(-1)
    torch.testing.assert_close(offline.candidate_kl(s, t), full)
    assert torch.allclose(offline.candidate_kl(t, t), torch.zeros(5), atol=1e-6)
    assert (offline.candidate_kl(s, t) > 0).all()


def test_fit_trains_adapters_above_the_logit_lens_and_resumes_exactly(cached, tmp_path):
    target, _, folder = cached
    hidden, topk = offline.load_split(folder, "train")
    torch.manual_seed(5)
    ee = early_exit.EarlyExits(target, rank=8)
    lens = offline.agreement_frame(ee, hidden, progress=False)
    rec = offline.fit(ee, hidden, topk, tmp_path / "a", epochs=20, batch=32, negatives=8, lr=1e-2, progress=False)
    assert rec["epochs_done"] == 20 and rec["loss"][-1] < 0.5 * rec["loss"][0]
    assert all(p.dtype == torch.float32 for p in ee.adapters.parameters())   # the target's dtype again
    after = offline.agreement_frame(ee, hidden, progress=False)   # on the positions it was fitted to
    a = after[after.kind == "adapters"].agree.mean()
    assert np.isclose(after[after.kind == "lens"].agree.mean(), lens[lens.kind == "lens"].agree.mean())
    assert a > lens[lens.kind == "adapters"].agree.mean() + 0.1   # untrained adapters are the lens
    # interrupted after 10 epochs, then resumed to 20: the same adapters as the uninterrupted run
    torch.manual_seed(5)
    ee2 = early_exit.EarlyExits(target, rank=8)
    offline.fit(ee2, hidden, topk, tmp_path / "b", epochs=10, batch=32, negatives=8, lr=1e-2, progress=False)
    ee3 = early_exit.EarlyExits(target, rank=8)   # its initial draw is replaced by the checkpoint
    rec3 = offline.fit(ee3, hidden, topk, tmp_path / "b", epochs=20, batch=32, negatives=8, lr=1e-2, progress=False)
    assert rec3["loss"] == pytest.approx(rec["loss"])
    for p, q in zip(ee.adapters.parameters(), ee3.adapters.parameters()):
        torch.testing.assert_close(p, q)


def test_fit_and_agreement_refuse_states_of_another_target(cached, tmp_path):
    _, _, folder = cached
    hidden, topk = offline.load_split(folder, "train")
    other = early_exit.EarlyExits(_llama(layers=3), rank=4)
    with pytest.raises(ValueError, match="exit positions"):
        offline.fit(other, hidden, topk, tmp_path, epochs=1, progress=False)
    with pytest.raises(ValueError, match="exit positions"):
        offline.agreement_frame(other, hidden, progress=False)


def _rounds():
    e = sim.ExitOutcome
    return [[sim.RoundTrace(4, 2, 7, 4, (e(1, 0, 3, 0.2), e(2, 2, 7, 0.9), e(3, 2, 7, 0.8))),
             sim.RoundTrace(4, 4, 1, 4, (e(1, 1, 5, 0.3), e(2, 0, 2, 0.4), e(3, 3, 9, 0.5)))],
            [sim.RoundTrace(3, 0, 11, 4, (e(1, 0, 11, 0.6), e(2, 0, 11, 0.7), e(3, 0, 11, 0.95)))],
            [sim.RoundTrace(4, 1, 2, 4, ())]]


def test_traces_frame_round_trip_and_stated_metrics():
    seqs = _rounds()
    frame = sim.traces_frame(seqs)
    assert list(frame.columns) == list(sim.TRACE_COLUMNS) and len(frame) == 3 + 3 + 3 + 1
    back = sim.traces_from_frame(frame.sample(frac=1, random_state=0))   # row order does not matter
    assert back == seqs
    with pytest.raises(ValueError, match="exit_token"):
        sim.traces_from_frame(frame.drop(columns="exit_token"))
    # the realpair reader's model quantities use the same definitions as early_exit.sim
    rounds = frame.assign(benchmark="b")
    q = sim.stated_intervals(rounds, n_boot=50).set_index("quantity").value
    assert q["tau"] == pytest.approx(np.mean([3, 5, 1, 2]))
    assert q["stated_miss_rate"] == pytest.approx(sim.stated_miss_rate(seqs)) == 0.5
    assert q["stated_avg_ee"] == pytest.approx(sim.stated_average_early_exit(seqs)) == 1.5


def test_evaluate_takes_fsd_timings_and_a_measured_ar():
    seqs = _rounds()
    cfg = sim.FSDConfig(gamma=4, T_d=0.01, T_t=0.1, T_c=0.02, threads=2)
    base = sim.evaluate(seqs, cfg)
    same = sim.evaluate(seqs, cfg, cfg, None)
    assert base == same
    slow = sim.evaluate(seqs, cfg, cfg.with_(T_t=0.3))   # a server paying for its exits
    assert slow["speedup_sd_fsd"] < base["speedup_sd_fsd"] and slow["speedup_ar_sd"] == base["speedup_ar_sd"]
    ar = sim.evaluate(seqs, cfg, ar_token_s=0.06)
    assert ar["speedup_ar_sd"] == pytest.approx(base["speedup_ar_sd"] * 0.06 / 0.12)


def test_realpair_sources_use_their_own_timings_and_table6_averages():
    prof, local = hardware.load_profile("venkatesha2025_paper"), hardware.load_profile("cpu_local_fsd")
    passes_ = pd.DataFrame(dict(quantity=["draft_step_s", "target_step_s", "draft_gamma_s", "verify_s", "verify_exits_s"],
                                value=[0.1, 0.3, 0.4, 0.33, 0.9]))
    src = sim.timing_sources(passes_, prof, local, columns=[("rtx", "vicuna68m_vicuna7b")])
    assert list(src) == ["this CPU", "paper rtx vicuna68m_vicuna7b", "verification = one step"]
    cpu = src["this CPU"]
    assert (cpu["sd"].T_d, cpu["sd"].T_t, cpu["fsd"].T_t, cpu["sd"].threads) == (0.1, 0.33, 0.9, 1)
    assert src["verification = one step"]["sd"].T_t == 0.3
    assert src["paper rtx vicuna68m_vicuna7b"]["sd"] == sim.FSDConfig.from_profile(prof, "rtx_vicuna68m_vicuna7b", gamma=4)
    with pytest.raises(ValueError, match="verify_exits_s"):
        sim.timing_sources(passes_.iloc[:4], prof, local)
    t6 = sim.evaluate_sources({"a": _rounds(), "b": _rounds()[:2]}, src)
    avg = t6[t6.benchmark == "Average"].set_index("source")
    per = t6[t6.benchmark != "Average"]
    assert len(avg) == 3
    for name in src:
        assert avg.loc[name, "speedup_sd_fsd"] == pytest.approx(per[per.source == name].speedup_sd_fsd.mean())


def test_pass_timers_return_positive_seconds():
    target = _llama(layers=2)
    ee = early_exit.EarlyExits(target, rank=2)
    assert passes.step_time(target, repeats=2) > 0
    assert passes.step_time(target, 1, 5, repeats=2) > 0
    assert passes.verify_time(ee, 4, repeats=2) > 0
    assert passes.draft_time(target, 4, repeats=2) > 0


def test_exit_tracing_decoder_times_every_round():
    target = _llama(layers=3, sharp=1.0)
    ee = early_exit.EarlyExits(target, rank=2)
    dec = early_exit.ExitTracingDecoder(target, ee, [1, 2, 3], 9, gamma=3)
    dec.run()
    assert len(dec.times) == len(dec.traces) > 0
    assert all(tt > 0 and te > 0 for tt, te in dec.times)


def test_concurrent_against_simulation_rows_per_seed():
    from specedge.early_exit import concurrent
    target = _llama(layers=3, sharp=1.0)
    ee = early_exit.EarlyExits(target, rank=2)
    prompts = [torch.randint(0, V, (6,), generator=torch.Generator().manual_seed(1))]
    cfg = sim.FSDConfig(gamma=3, T_d=0.01, T_t=0.2, T_c=0.02, threads=2, client_queue="random")
    draft = _llama(layers=2, seed=1, sharp=1.0)   # its own instance: the target's hooks must not see the drafting
    traces = early_exit.collect_traces(draft, ee, prompts, 8, gamma=3, progress=False)
    frame = concurrent.against_simulation(draft, ee, prompts, 8, cfg, traces, time_scale=0.05, seeds=(0, 1))
    assert list(frame.seed) == [0, 1] and (frame.checks_sim == frame.checks_concurrent).all()
    assert frame.miss_rate_sim.between(0, 1).all() and frame.miss_rate_concurrent.nunique() == 1


def test_collect_trace_frames_equals_the_decoder_traces():
    target = _llama(layers=3, sharp=1.0)
    draft = _llama(layers=2, seed=1, sharp=1.0)
    ee = early_exit.EarlyExits(target, rank=2)
    prompts = {"a": [[1, 2, 3], [4, 5]], "b": [[6, 7, 8, 9]]}
    rounds, times = early_exit.collect_trace_frames(draft, ee, prompts, 7, gamma=3)
    for group, items in prompts.items():
        want = [early_exit.speculative(draft, ee, p, 7, gamma=3)[1] for p in items]
        assert sim.traces_from_frame(rounds[rounds.benchmark == group]) == want
        assert (times.benchmark == group).sum() == sum(len(w) for w in want)
    assert (times[["t_draft", "t_target", "t_exits"]] > 0).all().all()
