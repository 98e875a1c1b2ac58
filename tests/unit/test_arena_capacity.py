"""The arena's capacity search (experiments.edge_sd_arena.capacity) on a stand-in for ``arena.run_point`` whose violation
rate is known: the capacity is the hand-worked largest N, every evaluated N is listed, the sweep's cache is read
back instead of rerun, and the table runs one search per combination label."""
import dataclasses
import math

import pandas as pd
import pytest

from specedge import sweep
from specedge.experiments.edge_sd_arena import runs as arena, capacity as cap


@pytest.fixture(scope="module")
def scn():
    base = arena.load_scenario(scale="ci")
    return dataclasses.replace(base, seeds=2, capacity_attainment=0.8, capacity_max_devices=40)


LIMIT = {"fixed / dense / sync": 13, "centralized": 40, "AR on the edge": 0}   # the largest N meeting the level
RAN = []


def fake_point(p) -> dict:
    """10 responses per seed; every response violated above the combination's LIMIT, one in ten at N = LIMIT - 1
    (a rate of 0.1 <= 0.2 still meets the level), none below."""
    RAN.append((p.devices, p.seed))
    limit = LIMIT[p.combo.label]
    v = 10 if p.devices > limit else 1 if p.devices == limit - 1 else 0
    return dict(violations=v, responses=10, devices=p.devices, seed=p.seed)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(cap, "run_point", fake_point)
    cap._version.cache_clear()
    yield
    cap._version.cache_clear()


def _search(scn, label, guess=None, cache=""):
    bw, _, mix = scn.reference
    return cap.Search(arena.from_label(label), bw, mix, 0, scn, guess, cache)


@pytest.mark.parametrize("guess", [None, 16, 14, 40])
def test_capacity_is_the_largest_n_meeting_the_level_whatever_the_first_bracket(scn, fake, guess):
    got = cap.capacity_of(_search(scn, "fixed / dense / sync", guess))
    assert got["capacity"] <= 13 <= got["capacity"] + got["resolution"] and got["resolution"] <= math.ceil(13 * cap.RESOLUTION)
    assert not got["censored"] and got["combination"] == "fixed / dense / sync" and got["attainment_level"] == 0.8
    evaluated = dict(e.split(":") for e in got["evaluated"].split())
    assert list(map(int, evaluated)) == sorted(map(int, evaluated))            # listed in N order
    assert evaluated[str(got["capacity"])] in ("0/20", "2/20")                  # both seeds pooled: 20 responses
    assert all(v == "20/20" for n, v in evaluated.items() if int(n) > 13)
    want = 0.9 if got["capacity"] == 12 else 1.0
    assert got["attainment_at_capacity"] == pytest.approx(want)


def test_a_combination_meeting_the_level_at_the_bound_is_censored_and_one_missing_at_one_device_is_zero(scn, fake):
    top = cap.capacity_of(_search(scn, "centralized"))
    assert top["capacity"] == 40 and top["censored"] and top["evaluated"].split()[-1] == "40:0/20"
    none = cap.capacity_of(_search(scn, "AR on the edge"))
    assert none["capacity"] == 0 and not none["censored"]
    assert math.isnan(none["attainment_at_capacity"])                          # N = 0 was never run: no rate
    assert none["evaluated"].startswith("1:20/20")


def test_a_search_reads_the_sweeps_cached_points_back_instead_of_running_them(scn, fake, tmp_path, monkeypatch):
    first = cap.capacity_of(_search(scn, "fixed / dense / sync", 16, str(tmp_path)))
    cached = sorted(p.name for p in tmp_path.iterdir())
    assert cached and all(name.endswith(".json") for name in cached)
    assert len(cached) == 2 * len(first["evaluated"].split())                  # one file per (N, seed)
    # the key is the one the notebook's sweep.run gives run_point's points: same function, same version
    bw, _, mix = scn.reference
    n = int(first["evaluated"].split()[-1].split(":")[0])                     # (the guess itself is presumed, not run)
    pts = [arena.Point(arena.from_label("fixed / dense / sync"), bw, n, mix, s, scn) for s in sweep.seeds(0, scn.seeds)]
    assert {f"{sweep.key(fake_point, p, cap._version())}.json" for p in pts} <= set(cached)
    RAN.clear()
    assert cap.capacity_of(_search(scn, "fixed / dense / sync", 16, str(tmp_path))) == first
    assert RAN == []                                                            # every point read back


def test_capacity_table_runs_one_search_per_label_bracketed_by_the_sweep(scn, fake):
    bw, _, mix = scn.reference
    rows = pd.DataFrame(dict(combination="fixed / dense / sync", bandwidth_bps=bw, mix=mix, devices=[8, 8, 16, 16],
                             violations=[0, 0, 10, 10], responses=10))
    labels = ["fixed / dense / sync", "centralized", "fixed / dense / sync"]      # a repeated label: searched once
    seen = []

    def runner(fn, searches):
        seen.extend(searches)
        return pd.DataFrame([fn(s) for s in searches])

    table = cap.capacity_table(labels, rows, scn, 0, run=runner, point_cache="")
    assert table.combination.tolist() == ["fixed / dense / sync", "centralized"]
    assert [s.guess for s in seen] == [16, None]                                 # the sweep's first miss; none
    assert [s.point_cache for s in seen] == ["", ""] and {s.mix for s in seen} == {mix}
    pd.testing.assert_frame_equal(cap.capacity_table(labels, rows, scn, 0), table)   # in-process: the same rows
    assert table.set_index("combination").capacity.to_dict()["centralized"] == 40
