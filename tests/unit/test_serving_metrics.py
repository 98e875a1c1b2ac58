"""The serving log's verified rounds are selected in one place; every metric reads them through it."""
import pandas as pd
import pytest

from specedge.serving import metrics


def test_verified_keeps_only_rounds_in_the_logs_order():
    log = pd.DataFrame({"event": ["", "drop", "", "refused", ""], "tokens": [1, 0, 2, 0, 3], "batch": [0, 0, 1, 1, 1]})
    assert metrics.verified(log).tokens.tolist() == [1, 2, 3]
    assert metrics.verified(log).index.tolist() == [0, 2, 4]
    assert metrics.tokens_per_pass(log) == pytest.approx(6 / 2)


def test_verified_of_a_log_without_rounds_is_empty_and_metrics_refuse_it():
    log = pd.DataFrame({"event": ["drop", "refused"], "tokens": [0, 0], "batch": [0, 0]})
    assert metrics.verified(log).empty
    with pytest.raises(ValueError, match="no verified rounds"):
        metrics.tokens_per_pass(log)
    assert metrics.verified(log.iloc[:0]).empty
