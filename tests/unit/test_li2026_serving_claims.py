"""li2026 serving: Table 1's "WISP at or below FCFS in every class" is decided over seeds, so one
pooled path's single violation cannot flip it, while a difference the seeds agree on still does."""
import pandas as pd
import pytest

from specedge import coverage
from specedge.serving.analysis import metrics
from specedge.experiments.li2026 import serving_runs as ex
from specedge.experiments.li2026 import serving_figures as figs
from specedge.experiments.li2026 import realpair as rp

SEEDS = (11, 12, 13)


def sweep_rows(violations: dict, n: int = 150, responses: int = 224) -> pd.DataFrame:
    """Sweep rows of mixed-class runs: ``violations[system][speed]`` lists each seed's violation count."""
    rows = []
    for system, by_speed in violations.items():
        for k, seed in enumerate(SEEDS):
            row = dict(system=system, devices=n, seed=seed, predictor=True, goodput=1000.0)
            for c in ex.CLASSES:
                row[f"responses_{c}"], row[f"violations_{c}"] = responses, by_speed.get(c, [0, 0, 0])[k]
            rows.append(row)
    return pd.DataFrame(rows)


def table1_claim(runs: pd.DataFrame, n: int = 150):
    """The predicate of Table 1's row (a violation rate's twin error is unmeasured, so the row itself is a tie)."""
    fig7 = metrics.per_class(runs, ["system", "devices"], ex.CLASSES)
    table1 = fig7[fig7.devices == n].pivot(index="system", columns="speed", values="violation_rate")[[8, 6, 4, 2]]
    rows = figs.table1_rows(table1, n, fig7, 0.05, coverage.paper_values("li2026_serving"), runs)
    row = next(r for r in rows if r["quantity"].startswith("WISP at or below FCFS"))
    assert row["status"] == "not-reproducible" and row["note"].startswith("the twin's validated error")
    return figs.at_or_below_fcfs(runs, [n])


def test_one_violation_in_one_seed_is_a_tie_not_a_failure():
    """The committed full-scale run's case: at 6 tok/s WISP missed 1 of 224 responses in one seed, FCFS none
    (pooled 0.16 % > 0 %: the old predicate said deviates); at 8 tok/s WISP is far below FCFS in every seed."""
    runs = sweep_rows({"WISP": {6: [1, 0, 0], 8: [2, 7, 5]}, "FCFS": {8: [59, 65, 79]}})
    c = table1_claim(runs)
    assert c is not None and c.holds, c
    assert "below in 1, tie in 3" in c.evidence


@pytest.mark.parametrize("wisp, fcfs, why", [
    ({6: [20, 25, 22], 8: [2, 7, 5]}, {8: [59, 65, 79]}, "above"),     # WISP above FCFS at 6 tok/s in every seed
    ({8: [60, 66, 78]}, {8: [59, 65, 79]}, "below in 0"),              # nowhere below: indistinguishable from FCFS
])
def test_a_difference_the_seeds_agree_on_still_fails_it(wisp, fcfs, why):
    c = table1_claim(sweep_rows({"WISP": wisp, "FCFS": fcfs}))
    assert c is not None and not c.holds and why in c.evidence, c


def test_one_seed_has_no_interval():
    runs = sweep_rows({"WISP": {8: [2, 7, 5]}, "FCFS": {8: [59, 65, 79]}})
    c = table1_claim(runs[runs.seed == SEEDS[0]])
    assert not c.holds and "rejected: one seed" in c.evidence


def test_realpair_rows_decide_over_seeds(monkeypatch, twin_files):
    """§9's Table 1, 3 and 6 rows on the real pair: the same interval predicates (device alpha stubbed)."""
    monkeypatch.setattr(rp, "device_alpha", lambda controlled, temperature=0.0: 0.9 if controlled else 0.6)
    t1 = sweep_rows({"WISP": {6: [1, 0, 0], 8: [2, 7, 5]}, "FCFS": {8: [59, 65, 79]}}, n=300)
    t3 = pd.DataFrame([dict(system=s, devices=120, seed=k, predictor=True, goodput=g + d)
                       for s, g in (("Centralized", 920.0), ("WISP", 1618.0)) for k, d in zip(SEEDS, (0.4, -0.8, 1.6))])
    t6 = pd.DataFrame([dict(system="WISP", devices=16, seed=k, predictor=p, goodput=g + d)
                       for p, g, ds in ((False, 434.0, (1.3, -2.0, 0.5)), (True, 435.0, (-1.5, 3.1, 1.4)))
                       for k, d in zip(SEEDS, ds)])
    sweep = pd.concat([t1, t3, t6], ignore_index=True)
    # a goodput error of 0.1 % leaves Table 3's +76 % and Table 6's +0.2 % decided; Table 1's claim has no margin to
    # judge against the violation rate's error (12 points), so it is undecided
    rows = figs.realpair_rows(sweep, (300,), 120, files=twin_files({"li2026": {"goodput_tok_s": 0.1}, "tran2025": {}}))
    t1_row = rows[0]
    assert t1_row["status"] == "not-reproducible" and "undecided" in t1_row["note"] and "12.0 points" in t1_row["note"]
    assert figs.at_or_below_fcfs(sweep[sweep.predictor], (300,)).holds
    got = {r["artifact"].split(" (")[0]: r["claim"] for r in rows[1:]}
    assert got["Table 3"].holds
    assert not got["Table 6"].holds and "tie" in got["Table 6"].evidence   # +1 tok/s against a seed spread of ~3
    # each row names its null, and a tie (not a loss) keeps the mechanism class of close acceptance
    assert all(not r["null_claim"].holds for r in rows[1:])
    # at a 1 % goodput error the +0.2 % of Table 6 is within it: a tie decided by the twin's error
    tie = figs.realpair_rows(sweep, (300,), 120, files=twin_files({"li2026": {"goodput_tok_s": 1.0}, "tran2025": {}}))[2]
    assert tie["status"] == "not-reproducible" and "1.0 %" in tie["note"] and "claim" not in tie
    t6_row = next(r for r in rows if r["artifact"].startswith("Table 6"))
    assert t6_row["cause"] == "models" and "0.600" in t6_row["note"] and "{" not in t6_row["note"]
