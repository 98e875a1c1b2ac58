"""What WISP needs from the twin: prefix-cache accounting (and SLED's recomputation), the drafting
controller's stop rule on traced rounds, SLO deadlines on every request, and the centralized baseline."""
import numpy as np
import pytest

from _stand_ins import ConstantRule
from specedge.serving.sim import centralized
from specedge.serving.timemodels import shape_scaling
from specedge.serving.analysis.capacity import Curve
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.interfaces import Times
from specedge.serving.sim.twin import IIDAcceptance, TraceAcceptance, simulate
from specedge.serving.workload import ClientSpec, Workload
from specedge.experiments.li2026 import serving_runs as L


class Seen(FCFS):
    def __init__(self):
        super().__init__()
        self.seen = []

    def form(self, queue, now, active):
        out = super().form(queue, now, active)
        self.seen += out
        return out


def _run(cache, prompt=20, gamma=3, tokens=30, slo_class=None, alpha=None):
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, tokens, gamma, "fixed", 0.0, slo_class, alpha,
                                          prompt),), cache=cache)
    former = Seen()
    times = Times([lambda s: 0.01 * s], AffineTokens(0.02, 0.001), up=lambda c, s: 0.005, down=lambda c: 0.005)
    log = simulate(wl, former, FixedS(3, 1), times, IIDAcceptance(0.5), seed=3)
    return former.seen, log


def test_prefix_cache_feeds_only_new_tokens_and_sled_recomputes():
    seen, log = _run(cache=True)
    first, rest = seen[0], seen[1:]
    assert (first.n_new, first.n_cached) == (20 + 3, 0)          # the prompt and the drafts
    ctx = 20 + log["accepted"].iloc[0]
    for p, acc in zip(rest, log["accepted"].iloc[1:]):
        assert p.n_cached == ctx and p.n_new == 1 + p.n_draft     # last correction + drafts
        ctx += 1 + acc
    seen_nc, log_nc = _run(cache=False)
    assert all(p.n_cached == 0 for p in seen_nc)
    ctx = 0
    for p, acc in zip(seen_nc, log_nc["accepted"]):
        unseen = 20 if ctx == 0 else 1
        assert p.n_new == ctx + unseen + p.n_draft                # the whole prefix, every time
        ctx += unseen + acc


def test_every_slo_request_carries_its_deadline():
    seen, log = _run(cache=True, slo_class=4, alpha=0.5)
    for p in seen:
        budget = 0.5 * p.n_draft / 4 - 0.01 * p.n_draft - 0.01    # eq (6): alpha N_d / s_c - T_draft - T_net
        assert p.deadline == pytest.approx(p.arrival + budget)
        assert p.expected_tokens == pytest.approx(0.5 * p.n_draft)
    assert (log["slo_class"] == 4).all()


def test_stop_rule_on_traced_rounds():
    acc = TraceAcceptance(stop_rules={"yes": ConstantRule(True), "no": ConstantRule(False)})
    rng = np.random.default_rng(0)
    draws = [acc.draw_controlled(rng, "draft-s", "code", 0.0, 5, "yes") for _ in range(300)]
    assert all(s == 5 and 0 <= n <= 5 for s, n, _ in draws)       # never predicts a rejection
    assert all(acc.draw_controlled(rng, "draft-s", "code", 0.0, 5, "no")[:2] == (0, 0) for _ in range(50))
    with pytest.raises(KeyError, match="stop rule"):
        acc.draw_controlled(rng, "draft-s", "code", 0.0, 5, "mlp")
    with pytest.raises(ValueError, match="gamma"):
        acc.draw_controlled(rng, "draft-s", "code", 0.0, 50, "yes")


def test_mlp_stop_rule_raises_acceptance_on_every_draft():
    for d in L.DRAFTS:
        assert L.alpha(d, True, draws=1000) > L.alpha(d, False, draws=1000)


def test_centralized_twin_closed_form():
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 10, prompt_tokens=8) for _ in range(3)))
    step = lambda batch: 0.1 + 0.01 * sum(p.n_new for p in batch)     # noqa: E731
    log = centralized.simulate(wl, step, until=5.0)
    first = log[log["round"] == 0]
    assert len(first) == 3 and np.allclose(first["t_verify"], 0.1 + 0.01 * 24)   # three prefills together
    decode = log[(log["round"] > 0) & (log["round"] < 10)]
    assert np.allclose(decode["t_round"], 0.13) and (log.groupby("client").size() > 10).all()
    mixed = Workload("target-m", (ClientSpec("draft-xs", ("code",), 2, 10, prompt_tokens=(8, 5)),))
    with pytest.raises(ValueError, match=r"clients\[0\]\.prompt_tokens: one length for every prompt"):
        centralized.simulate(mixed, step, until=5.0)


def test_centralized_real_run_through_transformers_continuous_batching():
    from specedge import zoo

    model = zoo.load_model("target-m").eval()
    log = centralized.run_real(model, [[5, 6, 7, 8], [9, 10, 11], [12, 13]], 6, slo_classes=[2, 4, 8])
    assert len(log) == 18 and (log["t_round"] > 0).all() and (log["system"] == "real").all()
    assert sorted(log["slo_class"].unique()) == [2, 4, 8]
    step = centralized.step_time_of(log)            # the twin's step: the median decode interval
    later = log.groupby("client")["t_round"].apply(lambda s: s.iloc[1:])
    assert step.c == pytest.approx(float(np.median(later))) and step.a == step.b_read == 0


def test_centralized_twin_refuses_a_zero_time_step():
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 1, 4, prompt_tokens=8),))
    with pytest.raises(ValueError, match="step_time: 0.0 s"):
        centralized.simulate(wl, lambda batch: 0.0, until=1.0)


def test_qwen3_14b_derivation():
    f = shape_scaling.scaling(L.SCENARIO.target("Qwen3-32B"), L.SCENARIO.target("Qwen3-14B"))
    assert f["c"] == pytest.approx(40 / 64) and f["b_read"] == pytest.approx(40 / 64)
    assert f["b_compute"] == pytest.approx(40 * 40 / (64 * 64))
    assert 0.40 < f["a"] < 0.45                                   # 13.2 B vs 31.2 B non-embedding weights
    assert L.kv_bytes_per_token("Qwen3-32B") == 64 * 8 * 128 * 2 * 2


def test_drafter_with_stop_rule_drafts_the_rounds_of_decoding_controller():
    """The edge drafter with WISP's controller proposes exactly the drafts of decoding's controlled
    loop (same stop positions), and its greedy output is the target's own."""
    import torch

    from specedge import decoding, zoo
    from specedge.predictor import controller, persistence
    from specedge.serving.real.drafter import Drafter
    from specedge.serving.real.drafter import stop_rule_for
    from specedge.serving.real.verifier import Verifier

    target, draft = zoo.load_model("target-m"), zoo.load_model("draft-xs")
    spec = ClientSpec("draft-xs", ("code",), 1, 24, 6, "predictor:mlp")
    prompt = zoo.load_tokenizer().encode(zoo.eval_prompts("code", 1)[0])[-30:]
    d, v = Drafter(draft, prompt, 24, "s0", stop_rule=stop_rule_for(spec)), Verifier(target)
    lengths = []
    while not d.done:
        req, _ = d.propose(6)
        lengths.append(len(req.draft_ids))
        d.commit(v.verify([req])[0])
    ctl = controller.StopAtFirstPredictedRejection(persistence.load(L.paths.DATA / "predictor", "mlp"), 6)
    ref = ctl.speculative(draft, target, torch.tensor(prompt), 24)
    assert d.output == decoding.autoregressive(target, prompt, 24).tokens.tolist() == ref.tokens.tolist()
    assert lengths == [len(r.draft_ids) for r in ref.rounds]
    assert min(lengths) < 6   # the stop rule did stop somewhere


def test_the_profile_parameter_reaches_the_twin_estimator(tmp_path):
    import yaml

    from specedge import hardware

    data = yaml.safe_load(hardware.profile_path("li2026_paper").read_text())
    data["name"] = "mine"
    data["runtime"]["verify"]["a"] *= 2
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(data))
    base = L.estimator(L.SCENARIO.point("WISP", 4))
    mine = L.estimator(L.SCENARIO.point("WISP", 4, setting=L.SCENARIO.setting(profile=str(tmp_path / "mine.yaml"))))
    assert mine.a == pytest.approx(2 * base.a) and mine.b_read == base.b_read


def test_every_li2026_system_keeps_its_kv_within_the_same_14_gb():
    """Every system's forward pass holds at most 14 GB of KV (WISP's memory model, eq 14): centralized
    serving's running responses (each reserving prompt + response) and the speculative systems'
    verification batches (without it, 474 devices would decode at once at 2 tok/s, more KV than 14 GB holds)."""
    st = L.SCENARIO.setting(horizon_s=12.0, warmup_s=2.0)
    kv = L.kv_bytes_per_token("Qwen3-32B")
    slots = int(st.memory_gb * 1e9 // ((st.prompt_tokens + st.max_new_tokens) * kv))
    assert slots == 208
    log = L.run_log(L.SCENARIO.point("Centralized", 260, 2, setting=st))
    assert log.groupby("round").size().max() == slots                  # 260 before: all at once
    for system in ("FCFS", "SLED", "WISP"):
        former = L.former(L.SCENARIO.point(system, 4, 2, setting=st), L.estimator(L.SCENARIO.point(system, 4, 2, setting=st)))
        assert former.memory_budget == st.memory_gb * 1e9, system


def test_centralized_memory_admission_is_first_come_first_served():
    wl = Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 4, prompt_tokens=6) for _ in range(3)),
                  kv_bytes_per_token=1.0)
    log = centralized.simulate(wl, lambda batch: 0.1, until=2.0, memory_budget=20.0)   # two responses of 10 fit
    first = log[log["round"] == 0]
    assert sorted(first["client"]) == [0, 1]
    late = log[log["client"] == 2].iloc[0]
    assert late["start"] == pytest.approx(0.4) and late["t_round"] == pytest.approx(0.5)   # waited for a slot
    with pytest.raises(ValueError, match="memory_budget"):
        centralized.simulate(wl, lambda batch: 0.1, until=2.0, memory_budget=5.0)


def test_capacity_search_runs_nothing_above_the_servers_throughput_bound():
    """The bisection is bracketed by the N at which the server's peak throughput
    cannot serve the class (``throughput_guess``), not by evaluating N = hi (before: N = 512, the
    costliest run of every search), and runs nothing at or above that bracket when the capacity lies
    well below it; the capacity found lies below that bound and below the cap."""
    st = L.SCENARIO.setting(profile="li2026_paper")
    row = L.capacity_of(Curve("SLED", "Qwen3-32B", 8, 0.05, 1, 0, 512, st))
    evaluated = [int(e.split(":")[0]) for e in row["evaluated"].split()]
    assert not row["censored"] and 0 < row["capacity"] < row["guess"] < 512
    assert max(evaluated) < row["guess"]          # presumed to violate: run only next to the answer
