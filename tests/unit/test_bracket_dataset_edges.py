"""Where a capacity search starts (arena_capacity.first_bracket: a rate exactly at the level is no miss) and what
WISP's dataset keeps (li2026 App B: accepted positions and the first rejection), at their boundaries."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

from specedge.predictor import dataset
from specedge.experiments.edge_sd_arena import runs as arena, capacity as arena_capacity

BW = 1e7


def _rows(devices, violations, responses=10):
    return pd.DataFrame(dict(combination="c", bandwidth_bps=BW, mix="fast", devices=devices, violations=violations,
                             responses=responses))


def test_a_violation_rate_exactly_at_the_level_is_no_miss():
    scn = dataclasses.replace(arena.load_scenario(scale="ci"), capacity_attainment=0.75, capacity_max_devices=64)
    # pooled over seeds: N = 2: 5/20 = 0.25 = 1 - 0.75 (a tie: attained); N = 4: 6/20 (missed)
    rows = _rows([2, 2, 4, 4], [2, 3, 3, 3])
    assert arena_capacity.first_bracket(rows, "c", BW, "fast", scn) == 4
    assert arena_capacity.first_bracket(rows[rows.devices == 2], "c", BW, "fast", scn) is None
    # rows of another combination, bandwidth or mix do not count
    other = pd.concat([rows[rows.devices == 2], _rows([2], [10]).assign(mix="mixed"), _rows([2], [10]).assign(combination="d")])
    assert arena_capacity.first_bracket(other, "c", BW, "fast", scn) is None


def test_the_first_bracket_is_capped_at_the_largest_n_searched():
    scn = dataclasses.replace(arena.load_scenario(scale="ci"), capacity_attainment=0.75, capacity_max_devices=32)
    assert arena_capacity.first_bracket(_rows([16, 64], [0, 9]), "c", BW, "fast", scn) == 32


def _traces():
    # one round of a prompt: positions 1, 2 accepted, 3 the first rejection, 4 after it (dropped)
    return pd.DataFrame(dict(domain="code", prompt=[0, 0, 0, 0, 1], i=[1, 2, 3, 4, 1], max_prob=[0.9, 0.8, 0.3, 0.2, 0.5],
                             entropy=0.1, margin=0.2, logit_std=1.0, accepted=[1, 1, 0, 0, 0],
                             first_rejected=[0, 0, 1, 0, 1]))


def test_build_dataset_keeps_accepts_and_the_first_rejection_only():
    d = dataset.build_dataset(_traces())
    assert d.i.tolist() == [1, 2, 3, 1] and d.label.tolist() == [1, 1, 0, 0]
    assert d.prompt_key.tolist() == ["code/0", "code/0", "code/0", "code/1"]
    with pytest.raises(ValueError, match="both accepted and first_rejected"):
        dataset.build_dataset(_traces().assign(first_rejected=[1, 0, 1, 0, 1]))
    with pytest.raises(ValueError, match="missing columns \\['entropy'\\]"):
        dataset.build_dataset(_traces().drop(columns="entropy"))


def test_binned_acceptance_by_hand_and_a_statistic_it_does_not_know():
    data = pd.DataFrame(dict(max_prob=[0.1, 0.2, 0.3, 0.4], label=[0, 0, 1, 1]))
    b = dataset.binned_acceptance(data, "max_prob", bins=2)
    assert b.acceptance.tolist() == [0.0, 1.0] and b.n.tolist() == [2, 2]
    assert b.value.to_numpy() == pytest.approx([0.15, 0.35])
    with pytest.raises(ValueError, match="stat must be one of"):
        dataset.binned_acceptance(data, "i")


def test_a_committed_split_needs_its_seed():
    with pytest.raises(ValueError, match="needs 'split_seed'"):
        dataset.committed_split(_traces(), {"split_prompts": {}})


def test_split_by_prompt_keeps_each_prompt_whole_and_every_split_non_empty():
    data = pd.DataFrame(dict(prompt_key=[f"p{k}" for k in (0, 0, 1, 2, 2, 2)]))
    split = dataset.split_by_prompt(data, seed=3)
    assert set(split) == {"train", "val", "test"}
    assert all(split[data.prompt_key == k].nunique() == 1 for k in ("p0", "p1", "p2"))
    with pytest.raises(ValueError, match="at least 3 distinct prompts"):
        dataset.split_by_prompt(data[data.prompt_key != "p1"])
    with pytest.raises(ValueError, match="summing to 1"):
        dataset.split_by_prompt(data, fractions=(0.5, 0.5, 0.5))
    assert np.array_equal(split, dataset.split_by_prompt(data, seed=3))
