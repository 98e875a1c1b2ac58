"""The serving log's verified rounds are selected in one place (``serving.log``); every metric reads them through it."""
import pandas as pd
import pytest

from specedge.serving.analysis import metrics
from specedge.serving.log import verified


def test_verified_keeps_only_rounds_in_the_logs_order():
    log = pd.DataFrame({"event": ["", "drop", "", "refused", ""], "tokens": [1, 0, 2, 0, 3], "batch": [0, 0, 1, 1, 1]})
    assert verified(log).tokens.tolist() == [1, 2, 3]
    assert verified(log).index.tolist() == [0, 2, 4]
    assert metrics.tokens_per_pass(log) == pytest.approx(6 / 2)


def test_verified_of_a_log_without_rounds_is_empty_and_metrics_refuse_it():
    log = pd.DataFrame({"event": ["drop", "refused"], "tokens": [0, 0], "batch": [0, 0]})
    assert verified(log).empty
    with pytest.raises(ValueError, match="no verified rounds"):
        metrics.tokens_per_pass(log)
    assert verified(log.iloc[:0]).empty


def _log():
    """Two clients of classes 4 and 2 tok/s, rounds of 2 tokens: client 0 at 0.5 s per round (4 tok/s), client 1 at
    2 s per round (1 tok/s, violating); responses of 4 tokens."""
    rows = []
    for c, dt, cls in ((0, 0.5, 4), (1, 2.0, 2)):
        t = 0.0
        while t + dt <= 12.0:
            t += dt
            rows.append(dict(event="", client=c, tokens=2, t_round=dt, t_send=0.0, end=t, start=t - dt, slo_class=cls, batch=len(rows)))
    return pd.DataFrame(rows)


def test_slo_summary_counts_responses_and_iterations_per_class_over_the_steady_window():
    s = metrics.slo_summary(_log(), 4, 2.0, 12.0, (2, 4))
    # client 0: responses of 1 s starting at 2, 3, ..., 11 -> 10, none violated; client 1: responses of 4 s
    # starting at 4 and 8 -> 2, each at 1 tok/s < 2 (violated)
    assert (s["responses_4"], s["violations_4"], s["responses_2"], s["violations_2"]) == (10, 0, 2, 2)
    assert s["responses"] == 12 and s["violations"] == 2 and s["violation_rate"] == pytest.approx(2 / 12)
    steady = metrics.steady(_log(), 2.0)
    assert s["iterations"] == len(steady) and s["iteration_violation_rate"] == pytest.approx((steady.client == 1).mean())
    assert s["goodput"] == pytest.approx(steady.tokens.sum() / 10.0)
    with pytest.raises(ValueError, match="warmup, horizon"):
        metrics.slo_summary(_log(), 4, 12.0, 12.0, (2, 4))
