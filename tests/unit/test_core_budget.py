"""The drafters' core budget per synchronous round (``serving.analysis.core_budget``) on hand-made logs."""
import numpy as np
import pandas as pd
import pytest

from specedge.serving.analysis import core_budget as cb


def _rounds(rows):
    return pd.DataFrame(rows, columns=cb.COLUMNS)


# two clients, two synchronous batches; batch 1's window opens at the first reply in (client 1's, at 1.0) and
# closes at the last request (client 0's, at 1.9)
TWO = _rounds([
    # batch client round left received drafted arrival cpu draft_cpu
    (0, 0, 0, 0.6, 1.2, 0.0, 0.5, 0.4, 0.3),
    (0, 1, 0, 0.6, 1.0, 0.0, 0.4, 0.3, 0.2),
    (1, 0, 1, 2.5, 2.9, 1.4, 1.9, 0.5, 0.4),
    (1, 1, 1, 2.5, 2.6, 1.1, 1.6, 0.3, 0.25),
])


def test_budget_sums_the_batch_and_opens_at_the_first_reply_in():
    b = cb.budget(TWO)
    assert list(b["batch"]) == [1]   # batch 0 holds first rounds: no window
    row = b.iloc[0]
    assert row["clients"] == 2
    assert row["cpu"] == pytest.approx(0.8)
    assert row["draft_cpu"] == pytest.approx(0.65)
    assert row["window"] == pytest.approx(0.9)
    assert row["busy"] == pytest.approx(0.8 / 0.9)


def test_budget_ties_and_order():
    # both replies in at once, both requests at once: the window is the one interval; rows in any order
    tied = TWO.assign(received=[1.0, 1.0, 2.9, 2.9], arrival=[0.5, 0.5, 1.9, 1.9]).iloc[::-1]
    b = cb.budget(tied)
    assert b["window"].tolist() == pytest.approx([0.9])
    assert b["busy"].tolist() == pytest.approx([0.8 / 0.9])


def test_a_batch_with_a_first_round_has_no_window():
    late = pd.concat([TWO, _rounds([(1, 2, 0, 2.5, 2.7, 1.0, 1.8, 0.2, 0.1)])], ignore_index=True)
    assert cb.budget(late).empty


def test_start_delays():
    d = cb.start_delays(TWO).sort_values("client")
    assert d["round"].tolist() == [1, 1]
    assert d["delay"].tolist() == pytest.approx([1.4 - 0.6, 1.1 - 0.6])
    assert d["in_hand"].tolist() == pytest.approx([1.4 - 1.2, 1.1 - 1.0])


def test_empty_and_missing_columns():
    empty = _rounds([])
    assert cb.budget(empty).empty and cb.start_delays(empty).empty
    with pytest.raises(ValueError, match="missing columns.*cpu"):
        cb.budget(TWO.drop(columns=["cpu"]))


def test_real_core_rounds_reads_the_drafters_clocks():
    log = pd.DataFrame(dict(event=["", "", "dropped: x"], batch=[0, 1, 2], client=[0, 0, 0], round=[0, 1, 2],
                            end=[1.0, 2.0, 3.0], t_send=[0.1, 0.2, 0.0], t_round=[0.9, 0.7, 0.0],
                            arrival=[0.5, 1.6, 2.5], t_client_cpu=[0.3, 0.4, 0.0], t_draft_cpu=[0.2, 0.3, 0.0]))
    r = cb.real_core_rounds(log)
    assert len(r) == 2
    assert r["received"].tolist() == pytest.approx([1.1, 2.2])
    assert r["drafted"].tolist() == pytest.approx([0.2, 1.5])
    assert r["cpu"].tolist() == pytest.approx([0.3, 0.4])
    assert np.isnan(cb.real_core_rounds(log.drop(columns=["t_client_cpu"]))["cpu"]).all()
