"""WISP's real runs (``experiments.li2026.real``) and WISP's twin on the real pair (``experiments.li2026.realpair``):
the devices cycle drafts, domains and classes as documented, the measuring step refuses a run with events and
stacks both policies, a missing profile names its step, and the real pair's window caps K."""

import pandas as pd
import pytest

from specedge.experiments.li2026 import serving_runs as ex
from specedge.experiments.li2026 import real as lr
from specedge.experiments.serving_validation import runs as sv
from specedge.serving.timemodels import estimator
from specedge.experiments.li2026 import realpair as rp


def test_devices_cycle_drafts_domains_and_classes():
    wl = sv.devices(7, prompts=2, tokens=10, seed=5, capacity=3)
    assert wl.target == "target-m" and wl.cache and wl.capacity == 3
    assert [c.draft for c in wl.clients] == ["draft-xs", "draft-s", "draft-m"] * 2 + ["draft-xs"]
    assert [c.domains[0] for c in wl.clients] == list(ex.DOMAINS) + [ex.DOMAINS[0]]
    assert [c.slo_class for c in wl.clients] == [8, 4, 2, 8, 4, 2, 8]
    c = wl.clients[1]
    assert (c.prompts, c.max_new_tokens, c.gamma, c.draft_rule, c.temperature, c.seed) == (2, 10, 8, "predictor:mlp", 0.0, 5)
    assert 0 < c.alpha <= 1 and c.alpha == wl.clients[4].alpha     # one draft, one reported alpha
    # each device reports its own draft's eq (5) alpha: the MLP stop rule, window 8, greedy, over the six domains
    from specedge.serving import acceptance_sources
    from specedge.serving.analysis import client_mix

    acc, six = acceptance_sources.acceptance("zoo"), ("chat", "code", "math", "qa", "sql", "summarize")
    for spec in wl.clients[:3]:
        assert spec.alpha == client_mix.reported_alpha(acc, spec.draft, True, 8, 0.0, 4000, six)
    assert len({spec.alpha for spec in wl.clients[:3]}) == 3


def test_the_workload_scales():
    full, ci = lr.workload("full"), lr.workload("ci")
    assert full == sv.devices(3, 2, 64) and ci == sv.devices(2, 1, 24)
    assert (len(full.clients), full.clients[0].prompts, full.clients[0].max_new_tokens) == (3, 2, 64)
    assert (len(ci.clients), ci.clients[0].prompts, ci.clients[0].max_new_tokens) == (2, 1, 24)


def test_centralized_prompts_are_the_devices_own_and_at_most_max_n_4():
    from specedge import zoo
    from specedge.serving.real.drafter import prompt_stream

    wl = lr.workload("full")                      # 3 devices x 2 prompts = 6 prompts: the first 4
    tok = zoo.load_tokenizer()
    want = [p for spec in wl.clients for p in prompt_stream(spec, tok)]
    got = lr.centralized_prompts(wl)
    assert len(want) == 6 and got == want[:4]
    assert lr.centralized_prompts(lr.workload("ci")) == [p for s in lr.workload("ci").clients for p in prompt_stream(s, tok)]


def test_zoo_fit_names_the_step_when_the_profile_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(estimator, "ZOO_PROFILE", tmp_path / "none.csv")
    estimator.zoo_fit.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="none.csv is missing: `make profiles` measures it"):
            estimator.zoo_fit(0)
    finally:
        estimator.zoo_fit.cache_clear()


def test_zoo_fit_is_the_fit_of_the_committed_profile():
    fit = estimator.zoo_fit(0)
    again = estimator.fit(pd.read_csv(estimator.ZOO_PROFILE), seed=0)
    assert fit.estimator == again.estimator and fit.delta == again.delta > 0
    assert estimator.zoo_fit(0) is fit                     # fitted once per process


def test_the_committed_real_runs_hold_both_policies():
    runs = lr.load_real_runs()
    assert set(runs) == {"WISP", "Centralized"} and all(len(g) for g in runs.values())


@pytest.fixture
def fake_runs(monkeypatch):
    """``measure_real`` with the processes replaced: what it passes on, and the logs it gets back."""
    from types import SimpleNamespace

    from specedge.serving.sim import centralized
    from specedge.serving.real import run

    seen, logs = {}, SimpleNamespace(real=pd.DataFrame(dict(event=["", ""], client=[0, 1])))
    from specedge.serving.timemodels.estimator import Estimator

    est = Estimator(1e-3, 1e-6, 1e-5, 0.01)
    monkeypatch.setattr(lr, "zoo_fit", lambda seed: SimpleNamespace(estimator=est, delta=0.02))

    def run_real(wl, former, alloc, label, seed):
        seen.update(wl=wl, former=former, alloc=alloc, label=label, seed=seed)
        return logs.real, {}

    def central(model, prompts, tokens):
        seen.update(prompts=prompts, tokens=tokens)
        return pd.DataFrame(dict(token=[1, 2, 3]))

    monkeypatch.setattr(run, "run_real", run_real)
    monkeypatch.setattr(centralized, "run_real", central)
    return seen, logs


def test_measure_real_stacks_both_policies_and_passes_the_fit_and_c_8n(fake_runs):
    seen, _ = fake_runs
    out = lr.measure_real("ci", seed=4)
    assert out.policy.tolist() == ["WISP", "WISP", "Centralized", "Centralized", "Centralized"]
    assert seen["label"] == "WISP" and seen["seed"] == 4 and seen["tokens"] == 24
    assert seen["alloc"].initial([0, 1]) == {0: 8, 1: 8}               # C = 8 N split over N = 2 devices
    assert seen["former"].delta == 0.02 and seen["former"].estimator.c == 0.01


def test_measure_real_refuses_a_run_with_events(fake_runs):
    _, logs = fake_runs
    logs.real = pd.DataFrame(dict(event=["", "dropped: late"], client=[0, 1]))
    with pytest.raises(RuntimeError, match=r"unexpected events \['dropped: late'\]"):
        lr.measure_real("ci")


# ------------------------------------------------------------------------------------ the real pair's twin
def test_realpair_setting_sets_k_to_the_traced_window_and_keeps_the_rest():
    base = ex.SCENARIO.setting(horizon_s=7.0)
    s = rp.setting(base)
    assert s.gamma == rp.WINDOW == 4 and s.horizon_s == 7.0
    assert rp.setting().gamma == 4 and rp.setting().horizon_s == ex.SCENARIO.base.horizon_s


def test_realpair_run_log_refuses_a_window_beyond_the_traces():
    with pytest.raises(ValueError, match="the real pair's traces hold 4 drafts per round, got K = 5"):
        rp.run_log(ex.SCENARIO.point("WISP", 2, setting=ex.SCENARIO.setting(gamma=5)))


def test_realpair_point_runs_on_the_pairs_draft_and_its_alpha_rises_with_the_stop_rule():
    st = ex.SCENARIO.setting(rp.setting(), horizon_s=6.0, warmup_s=1.0, max_new_tokens=16)
    log = rp.run_log(ex.SCENARIO.point("WISP", 2, slo_class=8, setting=st))
    rounds = log[log.event == ""]
    assert len(rounds) and rounds.S.max() <= rp.WINDOW                 # never more than the traced window
    row = rp.run_point(ex.SCENARIO.point("WISP", 2, slo_class=8, setting=st))
    assert (row["system"], row["devices"], row["slo_class"]) == ("WISP", 2, 8)
    off, on = rp.device_alpha(False), rp.device_alpha(True)
    assert 0 < off < on <= 1       # stopping before predicted rejections raises the accepted share
