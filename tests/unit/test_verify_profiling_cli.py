"""Profiling batched verification (``serving.real.verify_profiling``): the design's random batches and their checks,
fresh ids that refuse a repeat, packed products by hand, and the command line writing both tables."""
import numpy as np
import pandas as pd
import pytest
import torch

from specedge.serving.log import packed_products, parse_batch
from specedge.serving.real import verify_profiling as vp


def test_packed_products_and_the_batch_encoding_by_hand():
    pairs = [(2, 3), (1, 0)]
    # dense kernels: sum(L_new) = 3 new tokens meet sum(L_total) = 5 + 1 = 6 keys
    assert packed_products(pairs) == 18
    cfg = vp.Config("x", "mixed", "train", tuple(pairs))
    assert cfg.encoded() == "2:3 1:0" and parse_batch(cfg.encoded()) == pairs and cfg.regime == "mixed"
    assert packed_products([]) == 0


def test_split_keeps_the_total_and_gives_the_remainder_to_the_first_part():
    assert vp._split(10, [1, 1]) == [5, 5]
    assert vp._split(10, [3, 1]) == [8, 2]          # floor(7.5) = 7 and floor(2.5) = 2; the one left goes first
    assert vp._split(1200, [4, 2, 1, 1]) == [600, 300, 150, 150]
    assert vp._split(1401, [1, 1, 1, 1]) == [351, 350, 350, 350]


@pytest.mark.parametrize("scale", [0.0, -0.1, 1.01])
def test_design_refuses_a_length_scale_outside_its_range(scale):
    with pytest.raises(ValueError, match=r"length_scale: must lie in \(0, 1\]"):
        vp.design(0, scale)


def test_design_lengths_scale_and_never_fall_under_one_token():
    full, tiny = vp.design(1), vp.design(1, 1e-4)
    assert [c.name for c in full] == [c.name for c in tiny]
    assert all(n >= 1 and (c >= 1 or c == 0) for cfg in tiny for n, c in cfg.batch)
    mem = [c for c in full if c.category == "memory-det"]
    assert len(mem) == 48 and all(n + c in (500, 1000, 1500, 2000) for cfg in mem for n, c in cfg.batch)
    assert {len(c.batch) for c in mem} == {1, 4}
    comp = [c for c in full if c.category == "compute-det"]
    assert sorted({sum(n for n, _ in c.batch) for c in comp}) == [1200, 1400, 1600, 1800, 2000]


def test_random_batches_stay_in_their_categorys_ranges_and_an_unknown_one_is_refused():
    rng = np.random.default_rng(0)
    for _ in range(30):
        comp = vp._random("compute-rand", rng, 1.0)
        assert all(c == 0 for _, c in comp) and 1 <= len(comp) <= 4 and 1200 <= sum(n for n, _ in comp) <= 2000
        mem = vp._random("memory-rand", rng, 1.0)
        assert all(1 <= n <= 20 and 500 <= n + c <= 2000 for n, c in mem)
        mixed = vp._random("mixed", rng, 1.0)
        assert any(c == 0 and n >= 200 for n, c in mixed) and any(c > 0 for _, c in mixed)
    with pytest.raises(ValueError, match="category: expected one of"):
        vp._random("compute-det", rng, 1.0)


def test_fresh_ids_refuse_a_repeated_prefix_but_not_short_requests():
    ids = vp._Ids(vocab=4, seed=0)          # ids drawn from [3, 4): always 3
    assert ids(3) == [3, 3, 3] and ids(3) == [3, 3, 3]   # under 4 tokens: not checked
    assert ids(4) == [3, 3, 3, 3] and ids(5) == [3] * 5   # two different prefixes
    with pytest.raises(RuntimeError, match="prompt prefix repeated"):
        ids(4)


def test_load_target_refuses_an_unknown_kind():
    with pytest.raises(ValueError, match=r"target: expected one of \['widened', 'zoo'\], got 'big'"):
        vp.load_target("big")


def test_threads_sets_torch_threads_only_when_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    vp.threads(None)
    vp.threads(0)
    vp.threads(3)
    assert calls == [3]


def test_main_writes_the_profile_and_the_interference_table(tmp_path, monkeypatch):
    monkeypatch.setitem(vp.TARGETS, "zoo", ("target-m", None, torch.float32, 0.01))
    full = vp.design
    monkeypatch.setattr(vp, "design", lambda seed, scale: [c for c in full(seed, scale) if c.name.endswith(("/0", "single"))][:3])
    assert vp.main(["--targets", "zoo", "--runs", "1", "--out", str(tmp_path)]) == 0
    prof = pd.read_csv(tmp_path / "verify_profile_zoo.csv")
    assert len(prof) == 3 and prof.target.eq("zoo").all() and (prof.runs == 1).all()
    fig4 = pd.read_csv(tmp_path / "interference_zoo.csv")
    # A's lengths 100..2000 times 0.01 (at least one token), three cases each
    assert sorted(fig4.a_length.unique()) == [1, 2, 5, 8, 10, 12, 15, 18, 20]
    assert len(fig4) == 27 and set(fig4.case) == {"Solo A", "Solo B", "Batched A+B"}
