"""The per-round log's one row type (``interfaces.LogRow``): every system's log has its fields as columns, in its
order, and each field of a row holds what the field says (the twin's rows are tuples in its order, made in the hot
path: a value under the wrong field fails here), ``log.frame`` / ``log.from_columns`` refuse what is not a field."""
import math

import numpy as np
import pandas as pd
import pytest

from specedge.serving import slo
from specedge.serving.interfaces import LOG_COLUMNS, LogRow, Times
from specedge.serving.log import frame, from_columns, verified
from specedge.serving.policies.allocation import FixedS, GoodspeedAllocator
from specedge.serving.policies.batching import FCFS
from specedge.serving.sim import centralized, replay
from specedge.serving.sim.twin import IIDAcceptance, simulate
from specedge.serving.sim.twin_vectorised import simulate_sync
from specedge.serving.timemodels.runtime import AffineTokens
from specedge.serving.workload import ClientSpec, Workload
from test_replay import hand_log, workload as replay_workload

N = 5
DRAFT = [0.004 + 0.001 * c for c in range(N)]                 # s per drafted token, per client


def up(c, s):
    return 1e-3 * (c + 1) + 1e-5 * s


def down(c):
    return 2e-3 + 1e-4 * c


def send(c):
    return 3e-4 * (c + 1)


def test_the_logs_columns_are_the_rows_fields():
    assert LOG_COLUMNS == list(LogRow._fields) and len(set(LOG_COLUMNS)) == len(LOG_COLUMNS)
    assert LOG_COLUMNS[0] == "system" and LOG_COLUMNS[-1] == "event"


@pytest.fixture(scope="module")
def twin_log():
    """FCFS batches of up to 3 of 5 clients, every time and size different per client, SLO classes on odd clients."""
    wl = Workload("target-m", tuple(ClientSpec("draft-s", ("code",), 2, 30, slo_class=(None, 8)[c % 2], alpha=0.6)
                                    for c in range(N)), capacity=12)
    times = Times([lambda k, c=c: DRAFT[c] * k for c in range(N)], AffineTokens(0.009, 6e-5), up=up, down=down,
                  bytes_up=lambda s: 72 + 9 * s, bytes_down=77, send=send)
    return wl, simulate(wl, FCFS(max_batch=3), GoodspeedAllocator(12), times, IIDAcceptance(0.6), rounds=150, seed=3,
                        label="lab")


def test_each_field_of_the_twins_rows_holds_what_it_says(twin_log):
    wl, log = twin_log
    assert list(log.columns) == LOG_COLUMNS and len(log) > 200
    assert (log.system == "twin").all() and (log.policy == "lab").all() and (log.event == "").all()
    verify = AffineTokens(0.009, 6e-5)
    for b, g in log.groupby("batch"):
        assert g.start.nunique() == 1 and g.end.nunique() == 1 and g.t_verify.nunique() == 1
        assert g.t_verify.iloc[0] == pytest.approx(verify.c0 + verify.c_tok * float((g.S + 1).sum()), abs=1e-12)
        assert (g.t_receive == g.arrival.max() - g.arrival.min()).all()
    for r in log.itertuples():
        c, spec = r.client, wl.clients[r.client]
        assert 0 <= c < N and 0 <= r.accepted <= r.S and 1 <= r.tokens <= r.accepted + 1
        assert r.t_draft == DRAFT[c] * r.S
        assert r.t_queue == r.start - r.arrival >= 0
        assert r.end == r.start + r.t_verify
        assert r.t_send == send(c)
        assert r.bytes_up == 72 + 9 * r.S and r.bytes_down == 77
        began = r.arrival - r.t_draft - up(c, r.S)                 # the round's drafting started
        assert r.t_round == pytest.approx(r.end + down(c) - began, abs=1e-12)
        if spec.slo_class is None:                               # empty: NaN beside the other clients' classes
            assert math.isnan(r.slo_class) and math.isnan(r.deadline)
        else:
            assert r.slo_class == spec.slo_class
            budget = slo.budget(spec.alpha, r.S, spec.slo_class, r.t_draft, up(c, r.S) + down(c))
            assert r.deadline == pytest.approx(r.arrival + budget, abs=1e-12)
    for c, g in log.groupby("client"):                           # each client's rounds, in order
        assert g["round"].tolist() == list(range(len(g)))


def test_the_replays_rows_are_the_same_fields_with_its_own_columns_after_them():
    real = hand_log()
    out = replay.replay(real, replay_workload(), FCFS(max_batch=2), FixedS(4, 2), AffineTokens(0.01, 0.002), label="r")
    assert list(out.columns) == LOG_COLUMNS + list(replay.EXTRA)
    assert (out.system == "replay").all() and (out.policy == "r").all() and (out.event == "").all()
    real = real.sort_values(["client", "round"]).reset_index(drop=True)
    for col in ("client", "round", "S", "accepted", "tokens", "t_draft", "t_send", "bytes_up", "bytes_down", "up",
                "n_new", "n_cached", "accept_prob_sum"):
        np.testing.assert_array_equal(out[col].to_numpy(float), real[col].to_numpy(float), err_msg=col)
    assert (out.t_queue == out.start - out.arrival).all() and not out.mismatch.any()


def test_the_centralized_and_vectorised_logs_have_the_rows_fields():
    wl = Workload("target-m", tuple(ClientSpec("draft-s", ("code",), 1, 12, slo_class=(None, 5)[c % 2], prompt_tokens=8)
                                    for c in range(3)), capacity=6)
    log = centralized.simulate(wl, AffineTokens(0.01, 1e-4), until=2.0, rtt=0.05, label="C")
    assert list(log.columns) == LOG_COLUMNS and len(log) > 100
    assert (log.batch == log["round"]).all() and (log.arrival == log.start).all()
    np.testing.assert_allclose(log.end - log.start, log.t_verify, rtol=0, atol=1e-12)
    assert (log.tokens == 1).all() and log.deadline.isna().all() and (log.S == 0).all()
    assert (log.slo_class.isna() == (log.client % 2 == 0)).all()
    vec = simulate_sync(wl, FixedS(6, 3), 0.004, AffineTokens(0.009, 6e-5), _Traces(),
                        rounds=20, down=[1e-3, 2e-3, 3e-3], label="V")
    assert list(vec.columns) == LOG_COLUMNS and len(vec) == 60
    assert (vec.t_send == np.tile([1e-3, 2e-3, 3e-3], 20)).all() and (vec.bytes_up == 40 + 8 * vec.S).all()


class _Traces:
    """One traced round of 8 accepted positions for every key (``twin_vectorised``'s reading of traces)."""

    def _get(self, draft, domain, temperature):
        return None, (np.ones(8, bool), np.full(8, 0.9), np.array([0, 8]))


def test_frame_builds_the_log_of_rows_as_pandas_does_and_refuses_what_is_no_field():
    rows = [LogRow("twin", "p", k, k, 0, 2, 1, 2, 0.1, 0.0, 0.5, 0.2, 1e-3, 1.0, 56, 50, 1.0 * k, 1.5 * k, 2.0 * k,
                   None, math.nan, "") for k in range(3)]
    want = pd.DataFrame(rows, columns=LOG_COLUMNS)
    pd.testing.assert_frame_equal(frame(rows), want)
    pd.testing.assert_frame_equal(frame(rows, {"batch": int, "start": float}, ("system",)), want)
    assert verified(frame(rows)).shape == (3, len(LOG_COLUMNS))
    with pytest.raises(ValueError, match=r"\['tokens_made'\] are not fields of LogRow"):
        frame(rows, {"tokens_made": int})
    with pytest.raises(ValueError, match=r"\['sytem'\] are not fields"):
        frame(rows, constant=("sytem",))
    columns = dict(zip(LOG_COLUMNS, zip(*rows)))
    pd.testing.assert_frame_equal(from_columns(**{k: list(v) for k, v in columns.items()}), want)
    with pytest.raises(TypeError, match="event"):
        from_columns(**{k: list(v) for k, v in columns.items() if k != "event"})
    with pytest.raises(TypeError, match="tokens_made"):
        from_columns(tokens_made=[1], **{k: list(v) for k, v in columns.items()})
