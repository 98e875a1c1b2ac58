"""venkatesha2025 on the real pair (``experiments.venkatesha2025.realpair``): the notebook's section rebuilt from the
committed files, and each measuring stage run on tiny stand-ins (the real weights are absent here)."""
import json

import pandas as pd
import pytest
import torch

from _stand_ins import CharTokenizer, pair as stand_in_pair
from specedge import compare, coverage, early_exit, hardware, paths, zoo
from specedge.zoo import corpus
from specedge.early_exit import sim
from specedge.experiments.venkatesha2025 import realpair as rp
from specedge.experiments.venkatesha2025 import tables as vt
from specedge.experiments.venkatesha2025.runs import BENCHMARKS
from specedge.zoo.realpair import TARGET

FIG = paths.FIGURES / "venkatesha2025"


@pytest.fixture(scope="module")
def section():
    paper, prof = coverage.paper_values("venkatesha2025"), hardware.load_profile("venkatesha2025_paper")
    local = hardware.load_profile("cpu_local_fsd")
    avg = pd.read_csv(FIG / "table6_average.csv")
    base = sim.FSDConfig.from_profile(prof, "rtx_vicuna68m_vicuna7b", seed=0)
    cmp = compare.Comparison("venkatesha2025")
    out = rp.section(cmp, paper, prof, local, avg, base, vt.paper_table7(paper), n_boot=10, threads=range(1, 31, 15), seed=0)
    return cmp, out


def test_section_rebuilds_the_committed_simulations_from_the_committed_files(section):
    cmp, out = section
    committed = pd.read_csv(FIG / "realpair_table7_queue_policies.csv")
    pd.testing.assert_frame_equal(out["table7_queue_policies"].reset_index(drop=True), committed, check_dtype=False, rtol=1e-9)
    # the paper's Table 7 in percent becomes a fraction, row by row in the paper's order
    assert out["table7_queue_policies"].paper.iloc[0] == pytest.approx(0.7985)
    t6 = pd.read_csv(FIG / "realpair_table6.csv")
    num = t6.select_dtypes("number").columns
    pd.testing.assert_frame_equal(out["table6"][num].reset_index(drop=True), t6[num], check_dtype=False, rtol=1e-9)
    assert out["fig4a_threads"].threads.tolist() == [1, 16]
    assert set(out) >= {"exit_agreement", "model_quantities", "concurrent_vs_sim", "table6", "table7_queue_policies",
                        "fig4a_threads", "fig4b_gamma", "summary"}


def _text(x):
    return x if isinstance(x, str) else ""


def test_section_rows_match_the_committed_comparison_where_no_bootstrap_enters(section):
    cmp, out = section
    ours = cmp.frame().set_index("quantity")
    committed = pd.read_csv(FIG / "comparison.csv").set_index("quantity")
    t2 = [q for q in ours.index if q.startswith(vt.REAL) and ours.loc[q, "artifact"] == "Table 2"]
    assert len(t2) == 5
    for q in t2:
        assert str(ours.loc[q, "reproduced"]) == str(committed.loc[q, "reproduced"]) and _text(ours.loc[q, "status"]) == _text(committed.loc[q, "status"])
    t7 = ours[ours.index.str.startswith(f"{vt.REAL}: client ") & ours.index.str.endswith(": cache-miss rate")]
    assert len(t7) == 18 and t7.models.eq("real pair").all()


def test_the_threaded_runs_check_is_the_seeds_range_plus_one_round(section):
    cmp, _ = section
    cc = pd.read_csv(rp.OUT / "concurrent_vs_sim.csv")
    lo, hi, checks = cc.miss_rate_sim.min(), cc.miss_rate_sim.max(), int(cc.checks_sim.iloc[0])
    chk = cmp.checks_frame().iloc[-1]
    assert chk.tolerance == round((hi - lo) / 2 + 1 / checks, 4)
    assert chk.ours == round(float(cc.miss_rate_concurrent.iloc[0]), 4) and chk.reference == round(float(cc.miss_rate_sim.mean()), 4)
    assert chk.passed == (abs(chk.ours - chk.reference) <= chk.tolerance)


def test_summary_names_the_committed_adapters(section):
    _, out = section
    meta = json.loads((rp.OUT / "adapters.json").read_text())
    s = out["summary"]
    assert s.startswith(f"{meta['exits']} exits, bottleneck {meta['bottleneck']}, {meta['trainable_params']:,} trainable")
    assert f"{100 * meta['param_fraction']:.3f} %" in s and f"{meta['epochs']} epochs" in s


def test_load_outputs_names_every_missing_file_and_its_command(tmp_path):
    (tmp_path / "adapters.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="make realpair-exits") as e:
        rp.load_outputs(tmp_path)
    assert "adapters.json" not in str(e.value) and all(f in str(e.value) for f in rp.FILES[1:])
    got = rp.load_outputs()
    assert set(got) == set(rp.FILES) and isinstance(got["adapters.json"], dict)


def test_prompts_give_mt_bench_and_alpaca_disjoint_halves_of_the_chat_prompts():
    tok = CharTokenizer(keep=1000)
    got = rp._prompts(tok, dict(prompts_per_benchmark=2))
    assert list(got) == list(BENCHMARKS) and all(len(p) == 2 for p in got.values())
    chat = [tok(p)["input_ids"] for p in zoo.eval_prompts("chat", 4)]
    assert got["MT-bench"] == chat[:2] and got["Alpaca"] == chat[2:4]
    assert got["GSM8K"] == [tok(p)["input_ids"] for p in zoo.eval_prompts("math", 2)]


@pytest.fixture(scope="module")
def stand_ins():
    draft, target = stand_in_pair()
    return draft, early_exit.EarlyExits(target, rank=4, per_layer=1)


def test_traces_stage_writes_every_benchmarks_rounds_and_their_times(stand_ins, tmp_path, monkeypatch):
    monkeypatch.setattr(rp, "OUT", tmp_path)
    (tmp_path / "adapters.json").write_text(json.dumps(dict(exits=3)))
    draft, ee = stand_ins
    s = dict(rp.SETTINGS, prompts_per_benchmark=1, max_new=5)
    rounds = rp.traces(draft, ee, CharTokenizer(), s, progress=False)
    assert list(dict.fromkeys(rounds.benchmark)) == list(BENCHMARKS)
    meta = json.loads((tmp_path / "adapters.json").read_text())
    assert meta == dict(exits=3, traces=dict(gamma=4, prompts_per_benchmark=1, max_new=5))
    one = rounds.drop_duplicates(["benchmark", "sequence", "round"])
    # every prompt emits max_new tokens: each round its accepted drafts and one token of the target's
    assert (one.groupby(["benchmark", "sequence"]).accepted.sum() + one.groupby(["benchmark", "sequence"]).size() == 5).all()
    assert (rounds.groupby(["benchmark", "sequence", "round"]).size() == ee.n_layers - 1).all()
    times = pd.read_csv(tmp_path / "round_times.csv")
    assert len(times) == len(one) and pd.read_csv(tmp_path / "ee_rounds.csv.gz").shape == rounds.shape


def test_adapters_stage_sizes_the_papers_share_and_records_the_card(stand_ins, tmp_path, monkeypatch):
    _, ee0 = stand_ins
    seen = {}

    def build(ee, train_ids, held_ids, held_groups, cache, meta, **kw):
        seen.update(ee=ee, train=train_ids, held=held_ids, groups=held_groups, meta=meta, kw=kw)
        return dict(exits=ee.n_layers - 1), pd.DataFrame(dict(position=[0], exit=[1], agrees=[True]))

    monkeypatch.setattr(rp, "OUT", tmp_path)
    monkeypatch.setattr(rp.offline, "build", build)
    monkeypatch.setattr(rp.corpus, "load", lambda split, d: [dict(domain=d, prompt=f"{d} ", completion="x" * 40)] * 3)
    s = dict(rp.SETTINGS, train_per_domain=2, held_per_domain=1, context=8, held_context=4)
    ee = rp.adapters(ee0.target, CharTokenizer(keep=1000), "float32", s, progress=False)
    assert ee.per_layer == 1 and ee.rank == early_exit.bottleneck_rank(ee0.target, 0.0148, per_layer=1)
    assert len(seen["train"]) == 2 * len(corpus.DOMAINS) and all(len(t) == 8 for t in seen["train"])
    assert seen["groups"] == list(corpus.DOMAINS) and all(len(h) <= 4 for h in seen["held"])
    assert seen["kw"] == dict(progress=False, group_column="domain", topk=32, epochs=3, batch=128, negatives=2048,
                              lr=1e-3, seed=0)
    meta = json.loads((tmp_path / "adapters.json").read_text())
    assert meta["exits"] == 3 and meta["target"] == TARGET and meta["dtype"] == "float32" and meta["settings"] == s
    assert "cpu" in meta and pd.read_csv(tmp_path / "exit_agreement.csv.gz").shape == (1, 3)


def test_concurrent_stage_runs_humaneval_on_the_papers_68m_7b_timings(stand_ins, tmp_path, monkeypatch):
    draft, ee = stand_ins
    calls = []

    def against(draft_, ee_, prompts, max_new, cfg, tr, time_scale):
        calls.append((len(prompts), max_new, cfg, len(tr), time_scale))
        return pd.DataFrame(dict(seed=[0, 1], miss_rate_sim=[0.5, 0.6]))

    monkeypatch.setattr(rp, "OUT", tmp_path)
    monkeypatch.setattr(rp.concurrent, "against_simulation", against)
    frame = rp.concurrent_check(draft, ee, CharTokenizer(), dict(gamma=3), clients=("rtx", "jetson"), n_prompts=2,
                                max_new=4, time_scale=0.5, threads=3)
    prof = hardware.load_profile("venkatesha2025_paper")
    assert [c[2] for c in calls] == [sim.FSDConfig.from_profile(prof, f"{c}_vicuna68m_vicuna7b", threads=3) for c in ("rtx", "jetson")]
    assert all(c[:2] == (2, 4) and c[3] == 2 and c[4] == 0.5 for c in calls)
    assert list(frame.columns) == ["client", "seed", "miss_rate_sim"] and frame.client.tolist() == ["rtx", "rtx", "jetson", "jetson"]
    assert pd.read_csv(tmp_path / "concurrent_vs_sim.csv").equals(frame)


def test_main_runs_the_stages_asked_for_in_order(stand_ins, tmp_path, monkeypatch):
    draft, ee = stand_ins
    done = []
    monkeypatch.setattr(rp, "OUT", tmp_path)
    monkeypatch.setattr(rp.zoo, "load_pair", lambda d, t, dtype: (draft, ee.target, CharTokenizer()))
    monkeypatch.setattr(rp.host, "resolve_dtype", lambda d: "float32")
    monkeypatch.setattr(rp, "adapters", lambda *a, **k: (done.append("adapters"), ee)[1])
    monkeypatch.setattr(rp.early_exit, "load", lambda target, folder: (done.append(("load", folder)), (ee, {}))[1])
    monkeypatch.setattr(rp, "traces", lambda *a, **k: done.append("traces"))
    monkeypatch.setattr(rp, "pair_passes", lambda d, e, g: (done.append(("times", g)), dict(verify_s=0.5, draft_gamma_s=0.25))[1])
    monkeypatch.setattr(rp, "concurrent_check", lambda *a, **k: (done.append("concurrent"), pd.DataFrame())[1])
    monkeypatch.setattr(rp.draft_length, "collect", lambda *a, **k: done.append(("gammas", a[4])))
    threads = torch.get_num_threads()
    try:
        assert rp.main(["times", "gammas", "--gamma", "3", "--gammas", "2", "6"]) == 0
        assert done == [("load", rp.CACHE / "adapters"), ("times", 3), ("gammas", [2, 6])]
        assert pd.read_csv(tmp_path / "pass_times.csv").to_dict("list") == dict(quantity=["verify_s", "draft_gamma_s"],
                                                                                value=[0.5, 0.25], gamma=[3, 3])
        done.clear()
        assert rp.main([]) == 0
        assert done == ["adapters", "traces", ("times", 4), "concurrent", ("gammas", list(rp.GAMMAS))]
        with pytest.raises(SystemExit):
            rp.main(["times", "bogus"])
    finally:
        torch.set_num_threads(threads)
