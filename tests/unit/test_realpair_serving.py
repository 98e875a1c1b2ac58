"""The real pair's serving driver (``experiments.serving_validation.realpair``): its options and errors, the exactness check
of ``serve`` (the real runs stubbed: no weights in CI), and the committed runs' replay and drafting tables."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from specedge import paths
from specedge.experiments.serving_validation import realpair as rs
from specedge.serving.real import drafter as drafter_mod, run as run_mod
from specedge.zoo.realpair import DRAFT, FILES, TARGET


# ------------------------------------------------------------------------------------------ options and errors
@pytest.fixture
def models(tmp_path, monkeypatch):
    """A models/ folder holding the pair as `make realpair` leaves it (manifests only) and the draft's GGUF file;
    loading a model is an error here: every refusal must come before any work."""
    root = tmp_path / "models"
    for name in (DRAFT, TARGET):
        (root / name).mkdir(parents=True)
        (root / name / "manifest.json").write_text("{}")
    (root / f"{DRAFT}.gguf").write_bytes(b"GGUF")
    monkeypatch.setattr(paths, "MODELS", root)

    def no_loading(*a, **k):
        raise AssertionError("a model was loaded before the options were checked")
    monkeypatch.setattr("specedge.zoo.load_model", no_loading)
    return root


@pytest.mark.parametrize("argv, says", [
    (["--clients", "2", "0"], "--clients must be >= 1 each, got [2, 0]"),
    (["--tokens", "0"], "--tokens must be >= 1, got 0"),
    (["--threads", "0"], "--threads must be >= 1"),
    (["--backend", "vllm"], "invalid choice: 'vllm'"),
    (["--allocators", "random"], "invalid choice: 'random'"),
])
def test_bad_options_are_refused_naming_the_flag(models, argv, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        rs.main(argv)
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def test_a_missing_gguf_file_is_refused_naming_its_path(models, capsys):
    for gguf, says in [(models / "none.gguf", f"{models / 'none.gguf'} does not exist"),
                       (models / "draft.bin", "a .gguf file expected")]:
        with pytest.raises(SystemExit) as exit_:
            rs.main(["--backend", "llamacpp", "--gguf", str(gguf)])
        assert exit_.value.code == 2 and says in capsys.readouterr().err
    # the default file is make realpair's joined GGUF in models/
    (models / f"{DRAFT}.gguf").unlink()
    with pytest.raises(SystemExit):
        rs.main(["--backend", "llamacpp"])
    assert f"{models / DRAFT}.gguf does not exist" in capsys.readouterr().err


def test_a_missing_binding_is_refused_saying_how_to_build_it(models, monkeypatch, capsys):
    monkeypatch.setattr("specedge.llamacpp.available", lambda: False)
    with pytest.raises(SystemExit) as exit_:
        rs.main(["--backend", "transformers", "llamacpp", "--gguf", str(models / f"{DRAFT}.gguf")])
    assert exit_.value.code == 2 and "make llamacpp" in capsys.readouterr().err


@pytest.mark.parametrize("missing", [DRAFT, TARGET])
def test_missing_weights_are_refused_naming_make_realpair(models, missing, capsys):
    """The draft's folder is needed by both backends: it holds the tokenizer that encodes the prompts."""
    (models / missing / "manifest.json").unlink()
    with pytest.raises(SystemExit) as exit_:
        rs.main(["--backend", "llamacpp"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and str(models / missing) in err and "make realpair" in err


def test_main_runs_every_size_and_backend_on_one_target_and_writes_one_log(models, monkeypatch, tmp_path):
    monkeypatch.setattr("specedge.llamacpp.available", lambda: True)
    monkeypatch.setattr("specedge.zoo.load_model", lambda name, dtype: SimpleNamespace(name=name, dtype=dtype))
    calls = []

    def fake_serve(target, clients, tokens, capacity, allocators, backend, gguf, reference):
        calls.append((target.name, clients, tokens, capacity, tuple(allocators), backend, gguf, id(reference)))
        return pd.DataFrame(dict(policy=list(allocators), n_clients=clients, backend=backend, event=""))
    monkeypatch.setattr(rs, "serve", fake_serve)
    out = tmp_path / "runs.csv"
    assert rs.main(["--clients", "2", "4", "--backend", "transformers", "llamacpp", "--tokens", "8", "--allocators",
                    "goodspeed", "--dtype", "float32", "--out", str(out)]) == 0
    gguf = models / f"{DRAFT}.gguf"
    assert [c[:7] for c in calls] == [(TARGET, 2, 8, 8, ("goodspeed",), "transformers", gguf),
                                      (TARGET, 2, 8, 8, ("goodspeed",), "llamacpp", gguf),
                                      (TARGET, 4, 8, 16, ("goodspeed",), "transformers", gguf),
                                      (TARGET, 4, 8, 16, ("goodspeed",), "llamacpp", gguf)]
    assert len({c[7] for c in calls}) == 1   # one greedy reference for every run
    log = pd.read_csv(out)
    assert log.backend.tolist() == ["transformers", "llamacpp"] * 2 and (log.target_dtype == "float32").all()
    assert {"device", "python"} <= set(log.columns)
    # the transformers drafters alone keep that file's format (no backend column)
    assert rs.main(["--allocators", "fixed", "--out", str(out)]) == 0
    assert "backend" not in pd.read_csv(out).columns and calls[-1][3] == 8


# ------------------------------------------------------------------------------------------ serve, stubbed
def _ar(prompt, tokens):
    return [(sum(prompt) * 7 + 3 * i) % 50 for i in range(tokens)]


@pytest.fixture
def stubbed(monkeypatch):
    """``serve`` without models: prompts from the domain's name, greedy AR a function of the prompt (counted), and
    ``run_real`` replaced by a recorder that serves ``outputs`` (default: the right tokens)."""
    seen = dict(ar=0, runs=[], wrong=None)

    def prompt_stream(spec):
        return [[len(d), ord(d[0]), ord(d[-1])] for d in spec.domains]

    def autoregressive(target, prompt, tokens):
        seen["ar"] += 1
        return SimpleNamespace(tokens=torch.tensor(_ar(prompt, tokens)))

    def run_real(wl, former, alloc, label, seed, target, rpc_timeout, idle_timeout, client_timeout, pin, draft_gguf):
        seen["runs"].append(dict(label=label, pin=pin, gguf=draft_gguf, n=len(wl.clients), capacity=wl.capacity))
        outputs = {c: [_ar(p, spec.max_new_tokens) for p in prompt_stream(spec)] for c, spec in enumerate(wl.clients)}
        if seen["wrong"] is not None:
            outputs[seen["wrong"]][0][-1] += 1
        log = pd.DataFrame([dict(policy=label, client=c, round=0, S=4, accepted=2, tokens=3, t_round=0.5, t_draft_cpu=0.01,
                                 event="")
                            for c in outputs])
        return log, outputs
    monkeypatch.setattr(drafter_mod, "prompt_stream", prompt_stream)
    monkeypatch.setattr(run_mod, "run_real", run_real)
    monkeypatch.setattr(rs.decoding, "autoregressive", autoregressive)
    return seen


def test_serve_checks_every_clients_tokens_and_tags_the_runs(stubbed):
    ref, lines = {}, []
    log = rs.serve(object(), clients=3, tokens=5, capacity=12, allocators=("goodspeed", "fixed"), backend="llamacpp",
                   gguf="d.gguf", reference=ref, progress=lines.append)
    assert [r["gguf"] for r in stubbed["runs"]] == ["d.gguf"] * 2 and stubbed["runs"][0]["pin"] == rs.PIN
    assert stubbed["ar"] == 3 and len(ref) == 3
    assert (log.backend == "llamacpp").all() and (log.n_clients == 3).all() and (log.capacity == 12).all()
    assert log.policy.tolist() == ["goodspeed"] * 3 + ["fixed"] * 3
    assert np.isfinite(log.load_1min).all() and "3 llamacpp drafters" in lines[0] and "acceptance 0.500" in lines[0]
    # a second backend on the same prompts reuses the reference; transformers drafters get no GGUF file
    rs.serve(object(), clients=2, tokens=5, capacity=8, allocators=("fixed",), reference=ref)
    assert stubbed["ar"] == 3 and stubbed["runs"][-1]["gguf"] is None


def test_serve_raises_when_a_client_is_served_other_tokens(stubbed):
    stubbed["wrong"] = 1
    with pytest.raises(AssertionError, match=r"goodspeed \(llamacpp drafters\): client 1: served"):
        rs.serve(object(), clients=2, tokens=4, backend="llamacpp", gguf="d.gguf", progress=lambda s: None)
    with pytest.raises(ValueError, match="backend: expected one of"):
        rs.serve(object(), backend="onnx")


# ------------------------------------------------------------------------------------------ the committed runs
def test_runs_are_keyed_by_drafter_backend_in_the_llamacpp_file():
    old, new = rs.runs("serving_runs"), rs.runs("serving_runs_llamacpp")
    assert {k[0] for k in old} == {"realpair"}
    assert {k[0] for k in new} == {"realpair, llamacpp drafter", "realpair, transformers drafter"}
    assert {k[2] for k in new if "llamacpp" in k[0]} >= {2}
    for (setting, pol, n), log in new.items():
        assert (log.policy == pol).all() and (log.n_clients == n).all() and setting.split(", ")[1].startswith(log.backend.iloc[0])


def test_the_llamacpp_runs_replay_with_their_measured_passes_is_bookkeeping():
    """Each pass and draft at its measured time: round time and goodput agree by construction (to the log's rounding),
    for every run of both drafter runtimes; the eq (19) replay is a prediction, judged only at p50 / p90."""
    val = rs.serve_replay(0, "serving_runs_llamacpp")
    book = val[(val.verify == rs.REPLAYS[0]) & val.metric.isin(["round_time_s", "goodput_tok_s"])]
    assert len(book) == 2 * 3 * len(rs.runs("serving_runs_llamacpp"))
    assert (book.diff_pct.abs() < 0.1).all(), book[book.diff_pct.abs() >= 0.1]
    assert val.within[val["quantile"] == "p99"].isna().all() and val.within[val["quantile"] != "p99"].notna().all()


def test_the_transformers_files_replay_is_unchanged_by_the_keyed_runs():
    committed = pd.read_csv(paths.FIGURES / "tran2025" / "realpair_twin_vs_real.csv")
    ours = rs.serve_replay(0).round(6)
    pd.testing.assert_frame_equal(ours[committed.columns].reset_index(drop=True), committed, check_dtype=False, atol=2e-6)


def test_the_llamacpp_runs_checks_name_the_drafter_and_stay_apart_from_the_transformers_ones():
    from specedge.experiments.tran2025 import figures as figs

    rows = figs.realpair_validation_rows(rs.serve_replay(0, "serving_runs_llamacpp"))
    assert len({(r["check"], r["quantity"]) for r in rows}) == len(rows)
    llama = [r for r in rows if "llamacpp drafter" in r["check"]]
    assert llama and all("Q4_K_M GGUF on llama.cpp" in r["note"] for r in llama)
    assert all("transformers drafter" in r["check"] and "llama.cpp" not in r["note"] for r in rows if r not in llama)


def test_queueing_attribution_names_the_setting_and_keeps_the_real_values():
    att = rs.queueing_attribution(0, seeds=1, name="serving_runs_llamacpp")
    keys = rs.runs("serving_runs_llamacpp")
    assert len(att) == len(keys) * len(rs.WAKE_UPS) * 2 and set(att.setting) == {k[0] for k in keys}
    for (setting, pol, n), g in att.groupby(["setting", "policy", "n_clients"]):
        assert g.groupby("quantile").real.nunique().eq(1).all()   # the real run is one, whatever the replay's wake-up
        none = g[g.wake_up == rs.WAKE_UPS[2]].set_index("quantile").twin
        median = g[g.wake_up == rs.WAKE_UPS[0]].set_index("quantile").twin
        assert (none <= median + 1e-9).all()   # without the wake-up a request never waits longer
    assert "setting" not in rs.queueing_attribution(0, seeds=1).columns


def test_drafting_table_counts_every_clients_tokens():
    d = rs.drafting("serving_runs_llamacpp")
    raw = pd.read_csv(FILES["serving_runs_llamacpp"], keep_default_na=False, na_values=[""])
    assert len(d) == len(rs.runs("serving_runs_llamacpp"))
    tokens = raw[raw.event.isna()].groupby(["backend", "policy", "n_clients"]).tokens.sum()
    for r in d.itertuples():
        assert r.tokens == tokens[(r.setting.split(", ")[1].split()[0], r.policy, r.n_clients)]
        assert 0 < r.acceptance < 1 and r.round_p50_s <= r.round_p90_s and r.draft_cpu_p50_s > 0
    # the quantized drafter on llama.cpp drafts faster than the float32 one on transformers, at every N run with both
    both = d.pivot_table(index=["policy", "n_clients"], columns="setting", values="draft_cpu_p50_s").dropna()
    assert len(both) and (both["realpair, llamacpp drafter"] < both["realpair, transformers drafter"]).all()


# ------------------------------------------------------------------------------------------ the twins' input
def test_the_realpair_workload_gives_client_i_domains_i_and_i_plus_4():
    from specedge.experiments.tran2025 import runs as ex
    from specedge.serving.scenario import Fleet
    from specedge.zoo.realpair import ALL_DOMAINS

    cfg = Fleet(name="", paper_models="", clients=10, capacity=40, max_new_tokens=16, drafts=("draft-xs",))
    wl = ex.realpair_workload(cfg, seed=3)
    assert wl.target == TARGET and wl.capacity == 40 and len(wl.clients) == 10
    for i, c in enumerate(wl.clients):
        assert c.draft == DRAFT and c.domains == (ALL_DOMAINS[i % 8], ALL_DOMAINS[(i + 4) % 8])
        assert c.max_new_tokens == 16 and c.temperature == 0.0 and c.prompts == 1 and c.seed == 3


def test_the_realpair_sources_traces_name_the_pair():
    from specedge.serving import acceptance_sources

    t = acceptance_sources.traces("realpair")
    assert len(t) and (t.draft == DRAFT).all() and (t.target == TARGET).all()


def test_the_committed_replay_files_are_what_the_notebooks_call_writes(tmp_path):
    from specedge.experiments.tran2025 import figures as figs

    for name, stem in figs.REALPAIR_REPLAYS.items():
        val, rows = figs.realpair_replay(0, tmp_path, name)
        assert len(rows) == 2 * 2 * 3 * len(rs.runs(name))   # two replays x p50/p90 x three metrics per run
        assert (tmp_path / f"{stem}.csv").read_text() == (paths.FIGURES / "tran2025" / f"{stem}.csv").read_text()
    with pytest.raises(ValueError, match="name: expected one of"):
        figs.realpair_replay(0, tmp_path, "traces")
