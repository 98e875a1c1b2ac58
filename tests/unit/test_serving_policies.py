"""Policies and time models by name (``specedge.registry``, ``serving.policies``, ``serving.timemodels.time_models``) and the
scenario from plain data (``serving.scenario``)."""
from __future__ import annotations

import pytest

from specedge import hardware
from specedge.registry import Registry
from specedge.serving.real import codec
from specedge.serving import policies, scenario
from specedge.serving.timemodels import time_models
from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator, RandomS, by_name
from specedge.serving.policies.as2_allocation import AS2Allocator
from specedge.serving.policies.batching import FCFS, SyncRounds
from specedge.serving.timemodels.estimator import Estimator
from specedge.serving.policies.slo_weighted_allocation import SLOWeightedGoodspeed
from specedge.serving.interfaces import REPLY_BYTES
from specedge.serving.timegrid import on_grid
from specedge.serving.policies.wisp_batching import WISPBatcher

EST = Estimator(1e-4, 1e-7, 1e-6, 0.01)


def test_every_name_builds_its_class_with_the_keywords_it_declares():
    ctx = dict(capacity=12, clients=3, seed=5, beta=0.5, weights={0: 4.0, 1: 8.0, 2: 16.0}, costs={0: 0.1, 1: 0.2, 2: 0.3})
    assert policies.allocator("goodspeed", **ctx) == GoodspeedAllocator(12, beta=0.5)
    assert policies.allocator("GOODSPEED", **ctx) == GoodspeedAllocator(12, beta=0.5)
    assert policies.allocator("fixed", **ctx) == FixedS(12, 3)
    assert policies.allocator("Fixed-S ⌊C/N⌋", **ctx) == FixedS(12, 3, floor=True)
    assert policies.allocator("random", **ctx) == RandomS(12, seed=5)
    assert policies.allocator("goodspeed-slo", **ctx) == SLOWeightedGoodspeed(12, weights=ctx["weights"], beta=0.5)
    assert policies.allocator("as2", **ctx).costs == AS2Allocator(ctx["costs"]).costs
    assert policies.former("sync") == SyncRounds()
    assert policies.former("fcfs", memory_budget=1e9) == FCFS(memory_budget=1e9)
    assert policies.former("wisp", estimator=EST, delta=0.01, memory_budget=1e9) == WISPBatcher(EST, delta=0.01, memory_budget=1e9)
    assert policies.former("edf", estimator=EST).label == "EDF-only"
    # the allocation module's own name keeps its signature
    assert by_name("Fixed-S", 12, 3) == FixedS(12, 3) and by_name("GOODSPEED", 12, 3, eta=0.2) == GoodspeedAllocator(12, eta=0.2)


def test_an_unknown_name_kind_or_keyword_is_an_error_listing_what_is_known():
    with pytest.raises(ValueError, match=r"allocator: expected one of \[.*'as2'.*'goodspeed'.*\], got 'goodsped'"):
        policies.allocator("goodsped", capacity=4, clients=2)
    with pytest.raises(ValueError, match=r"former 'fcfs': unknown keyword\(s\) \['budget'\]"):
        policies.former("fcfs", budget=1e9)
    with pytest.raises(ValueError, match="kind: expected one of"):
        policies.build("scheduler", "fcfs")
    reg = Registry("thing")
    reg.register("a")(lambda x=1: x)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a")(lambda: 0)
    assert reg.build("a", x=3) == 3 and "a" in reg and reg.names() == ["a"]


def test_time_models_of_a_profile_by_kind():
    assert time_models.draft_time("tran2025_paper", "draft_small") == time_models.DraftTime(0.004)       # per_token
    jet = time_models.draft_time("venkatesha2025_paper", "jetson_vicuna68m_vicuna7b")                  # draft_verify_comm
    assert jet.s_per_token == pytest.approx(0.334 / 4) and jet(3) == 3 * jet.s_per_token
    with pytest.raises(ValueError, match="a drafting model needs one of"):
        time_models.draft_time("li2026_paper", "verify")
    with pytest.raises(KeyError, match="no runtime entry 'nope'"):
        time_models.draft_time("li2026_paper", "nope")


def test_the_link_is_rtt_half_plus_the_codec_bytes_over_the_bandwidth_each_way():
    size = lambda s: codec.payload_bytes("topk", int(s), 1000, 8)
    link = time_models.Link(0.02, 1e7, size)
    assert link.up(0, 3) == 0.01 + 8 * size(3) / 1e7
    assert link.down(5) == 0.01 + 8 * REPLY_BYTES / 1e7 and link.send(5) == 8 * REPLY_BYTES / 1e7
    t = time_models.times([time_models.DraftTime(0.01)] * 2, link, EST)
    assert t.draft[1](4) == 0.04 and t.up(1, 3) == link.up(1, 3) and t.bytes_up(2) == size(2) and t.bytes_down == REPLY_BYTES
    # payload sizes: ids < top-K < dense, dense grows by |V| float32 per drafted token
    ids, topk, dense = (codec.payload_bytes(p, 4, 1000, 8) for p in codec.PAYLOADS[::-1])
    assert ids < topk < dense and codec.payload_bytes("dense", 5, 1000, 8) - dense == pytest.approx(4000, abs=8)
    with pytest.raises(ValueError, match="payload: expected one of"):
        codec.payload_bytes("sparse", 4, 1000, 8)


def test_noisy_is_the_estimate_times_a_median_one_lognormal_on_the_nanosecond_grid():
    assert time_models.noisy(EST, 0.0, 1) is EST
    a, b = time_models.noisy(lambda batch: 0.1, 0.2, 7), time_models.noisy(lambda batch: 0.1, 0.2, 7)
    xs = [a([]) for _ in range(5000)]
    assert xs == [b([]) for _ in range(5000)]                       # the same seed, the same times
    assert sorted(xs)[2500] == pytest.approx(0.1, rel=0.02) and min(xs) > 0
    assert all(on_grid(x) == x for x in xs)                      # host-independent last digits


def test_a_scenario_loads_from_plain_data_and_names_the_traced_pairs(tmp_path):
    scn = scenario.load("arena_default", windows={"realpair": 4})
    assert scn.kv_bytes_per_token == hardware.kv_bytes_per_token(64, 8, 128, 2) == 262144.0   # Qwen3-32B, bf16
    assert scn.draft_s(1, "mixed") == 0.02 and scn.ar_s(0, "fast") == pytest.approx(0.004 * 54.7)
    assert list(scenario.describe(scn).device_class) == ["l4", "phone", "jetson"]
    with pytest.raises(hardware.ProfileError, match="workload.pair.*one of \\['otherpair'\\]"):
        scenario.load("arena_default", windows={"otherpair": 4})
    with pytest.raises(hardware.ProfileError, match="workload.gamma.*at most the traces' window \\(2"):
        scenario.load("arena_default", windows={"realpair": 2})
    text = scenario.path("arena_default").read_text()
    bad = tmp_path / "arena_default.yaml"
    bad.write_text(text.replace("    kv_heads: 8\n", ""))
    with pytest.raises(hardware.ProfileError, match="key 'server.target.kv_heads' missing"):
        scenario.load(bad, windows={"realpair": 4})
    with pytest.raises(FileNotFoundError, match="no scenario 'nope'.*available: \\['arena_default'\\]"):
        scenario.load("nope", windows={"realpair": 4})
