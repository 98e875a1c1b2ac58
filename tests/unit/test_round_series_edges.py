"""serving.analysis.round_series and serving.analysis.client_mix at their boundaries, against hand-worked values: a log's time split,
the utility curve and when it settles, expected goodput, moving bands, peaks at ties, a client's traced alpha."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from specedge.serving.analysis import client_mix, round_series
from specedge.serving.workload import ClientSpec, Workload


def _log(**cols):
    n = len(next(iter(cols.values())))
    return pd.DataFrame(dict(cols, event=cols.get("event", [""] * n)))


# ------------------------------------------------------------------------------------------------ time_split
def test_time_split_of_a_hand_worked_log():
    # batch 0: clients 0 and 1 arrive at 0.8 and 0.9, drafting took at most 0.3 s -> the run began at 0.5;
    # the batch starts at 1.0 (receiving 0.5), its pass takes 0.5, replies take 0.1 and 0.2 (the slowest: 0.2),
    # it ends at 1.7 (the last reply). batch 1 starts at 2.0 (receiving 2.0 - 1.7 = 0.3), pass 0.25, replies
    # 0.05 / 0.3. batch 2 starts at 2.1, before batch 1 ended (2.6): no negative receiving time.
    log = _log(batch=[0, 0, 1, 1, 2, 0], client=[0, 1, 0, 1, 0, 1],
               arrival=[0.8, 0.9, 1.8, 1.9, 2.05, 0.0], t_draft=[0.3, 0.2, 0.3, 0.3, 0.3, 9.0],
               start=[1.0, 1.0, 2.0, 2.0, 2.1, 0.0], t_verify=[0.5, 0.5, 0.25, 0.25, 0.125, 9.0],
               end=[1.6, 1.7, 2.3, 2.6, 2.3, 99.0], t_send=[0.1, 0.2, 0.05, 0.3, 0.05, 9.0],
               event=["", "", "", "", "", "dropped"])
    split = round_series.time_split(log)
    assert split == pytest.approx(dict(receiving=0.5 + 0.3 + 0.0, verification=0.5 + 0.25 + 0.125,
                                       sending=0.2 + 0.3 + 0.05), abs=1e-12)


def test_time_split_takes_each_batch_once_not_each_request():
    one = _log(batch=[0], client=[0], arrival=[1.0], t_draft=[0.5], start=[1.0], t_verify=[0.5], end=[1.75], t_send=[0.25])
    four = _log(batch=[0] * 4, client=[0, 1, 2, 3], arrival=[1.0] * 4, t_draft=[0.5] * 4, start=[1.0] * 4,
                t_verify=[0.5] * 4, end=[1.75] * 4, t_send=[0.25] * 4)
    assert round_series.time_split(one) == round_series.time_split(four) == dict(receiving=0.5, verification=0.5,
                                                                                sending=0.25)


# ------------------------------------------------------------------------------------------------ utility
def test_utility_curve_is_the_log_of_each_clients_running_mean_summed():
    # running means after batch 1: (2, 4) -> log 8; after batch 2: (3, 3) -> log 9; a dropped round does not count
    log = _log(batch=[0, 0, 1, 1, 1], client=[0, 1, 0, 1, 0], tokens=[2, 4, 4, 2, 50],
               event=["", "", "", "", "dropped"])
    assert round_series.utility_curve(log).to_numpy() == pytest.approx([math.log(8), math.log(9)])


def test_utility_curve_is_nan_while_a_client_has_no_tokens_yet():
    log = _log(batch=[0, 1, 1], client=[0, 0, 1], tokens=[2, 2, 4])
    u = round_series.utility_curve(log)
    assert np.isnan(u.iloc[0]) and u.iloc[1] == pytest.approx(math.log(2) + math.log(2))


def test_utility_while_all_active_stops_before_the_first_client_leaves():
    # client 1 is in batches 0 and 1 only: T = 2, means (3, 1.5); a later batch of client 0 alone is not used
    log = _log(batch=[0, 0, 1, 1, 2], client=[0, 1, 0, 1, 0], tokens=[2, 1, 4, 2, 100])
    t, u = round_series.utility_while_all_active(log)
    assert t == 2 and u == pytest.approx(math.log(3) + math.log(1.5))
    full = _log(batch=[0, 0, 1, 1], client=[0, 1, 0, 1], tokens=[2, 1, 4, 2])
    assert round_series.utility_while_all_active(full) == (2, pytest.approx(math.log(3) + math.log(1.5)))
    with pytest.raises(ValueError, match="no batch holds every client"):
        round_series.utility_while_all_active(_log(batch=[0, 1], client=[0, 1], tokens=[1, 1]))


def test_stabilisation_counts_a_value_exactly_at_the_margin_as_settled():
    # final 100, rel 0.01: the band is [99, 101], both ends inside
    assert round_series.stabilisation(pd.Series([50.0, 101.0, 99.0, 100.0])) == 2
    assert round_series.stabilisation(pd.Series([50.0, 101.5, 99.0, 100.0])) == 3
    assert round_series.stabilisation(pd.Series([100.0])) == 1                      # one value: settled at once


def test_stabilisation_of_a_negative_curve_uses_the_size_of_its_final_value():
    # utilities are logs of goodputs below 1 token: negative. final -100, band [-101, -99]
    assert round_series.stabilisation(pd.Series([-50.0, -101.0, -99.5, -100.0])) == 2
    assert round_series.stabilisation(pd.Series([-50.0, -40.0, -100.0])) == 3


# ------------------------------------------------------------------------------------------------ goodput
def test_expected_goodput_is_the_closed_form_mean_over_the_window():
    # client 0 (alpha 0.5) drafts 1 then 3: (1 + 0.5) and (1 + 0.5 + 0.25 + 0.125); client 1 (alpha 0) one token
    log = _log(batch=[0, 0, 1, 1, 2, 2, 3, 3], client=[0, 1] * 4, S=[9, 9, 1, 2, 3, 2, 4, 4],
               event=["", "", "", "", "", "", "", "dropped"])
    got = round_series.expected_goodput(log[log.batch < 3], [0.5, 0.0], skip=1, window=2)
    assert got == pytest.approx([(1.5 + 1.875) / 2, 1.0])
    with pytest.raises(ValueError, match="window: the run has 2 complete rounds after 1, not 3"):
        round_series.expected_goodput(log[log.batch < 3], [0.5, 0.0], skip=1, window=3)
    with pytest.raises(ValueError, match="window"):       # batch 3 lacks client 1's verified round
        round_series.expected_goodput(log, [0.5, 0.0], skip=1, window=3)


def test_moving_mean_and_std_over_a_window_of_two():
    m, s = round_series.moving(pd.Series([1.0, 3.0, 7.0]), window=2)
    assert m.tolist() == [1.0, 2.0, 5.0] and s.to_numpy() == pytest.approx([0.0, math.sqrt(2), math.sqrt(8)])


def test_estimate_bands_pair_each_estimate_with_its_own_round():
    est = pd.DataFrame(dict(batch=[1, 0, 0, 1], client=[0, 0, 1, 1], X=[4.0, 2.0, 10.0, 20.0]))
    log = _log(batch=[0, 0, 1, 1, 2], client=[0, 1, 0, 1, 0], tokens=[1, 3, 5, 7, 100])
    f = round_series.estimate_bands(est, log, window=2).set_index(["client", "batch"])
    assert f.loc[(0, 1), ["real_ma", "est_ma"]].tolist() == [3.0, 3.0]
    assert f.loc[(1, 1), ["real_ma", "est_ma"]].tolist() == [5.0, 15.0]
    assert f.loc[(1, 1), "est_std"] == pytest.approx(math.sqrt(50)) and f.loc[(0, 0), "real_std"] == 0.0
    assert len(f) == 4                                     # batch 2 has no estimate


def test_a_plateau_peak_counts_once_and_a_band_edge_is_inside():
    # tokens 1, 3, 3, 1: batch 1 is a peak (above the round before, at least the round after), batch 2 is not
    f = pd.DataFrame(dict(client=[0] * 4, batch=[0, 1, 2, 3], tokens=[1, 3, 3, 1], real_ma=[2.0] * 4,
                          real_std=[1.0] * 4, est_ma=[0.0] * 4, est_std=[0.0] * 4))
    assert round_series.peaks_in_bands(f) == 1.0          # 3 = 2 + 1: on the band's edge, inside
    assert round_series.peaks_in_bands(f.assign(real_std=0.5)) == 0.0
    assert np.isnan(round_series.peaks_in_bands(f.iloc[:1]))     # one round: no peak


# ------------------------------------------------------------------------------------------------ client_mix
class _Traces(SimpleNamespace):
    """A ``twin.TraceAcceptance`` stand-in: per (draft, domain, temperature) the accept flags and round bounds."""


def test_client_alpha_counts_each_rounds_leading_run_of_accepts():
    # rounds [1 1 0 1], [1 1 1], [0 1]: leading runs 2, 3, 0 of 4, 3, 2 drafted; eq (12): 5 / (3 + 3 + 1)
    acc = np.array([1, 1, 0, 1, 1, 1, 1, 0, 1], bool)
    tr = _Traces(rounds={("d", "code", 0.0): (acc, None, np.array([0, 4, 7, 9])),
                         ("e", "chat", 0.0): (np.array([0, 0], bool), None, np.array([0, 2]))})
    wl = Workload("t", (ClientSpec("d", ("code",), 1, 8), ClientSpec("e", ("chat",), 1, 8)), capacity=2)
    assert client_mix.client_alpha(tr, wl) == pytest.approx([5 / 7, 0.0])
    t = client_mix.clients_table({"mix": wl}, tr)
    assert t[["client", "draft", "domain"]].values.tolist() == [[0, "d", "code"], [1, "e", "chat"]]
    assert t.alpha.to_numpy() == pytest.approx([5 / 7, 0.0])


def test_spread_of_one_client_is_zero_and_of_none_an_error():
    assert client_mix.spread([0.3]) == 0.0
    assert client_mix.spread([0.7, 0.2, 0.5]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="at least one client"):
        client_mix.spread([])


def _frame(draft, target="t"):
    return pd.DataFrame([dict(draft=draft, target=target, domain="chat", temperature=0.0, prompt=0, round=0, i=0,
                              q=0.5, p=0.5, accepted=True)])


def test_pooled_traces_relabel_the_target_and_refuse_a_draft_in_two_sources():
    pooled = client_mix.pooled_traces({"zoo": _frame("a"), "pair": _frame("b", target="u")})
    assert pooled.target.unique().tolist() == [client_mix.POOLED] and pooled.draft.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="draft 'a' is also in 'zoo'"):
        client_mix.pooled_traces({"zoo": _frame("a"), "pair": _frame("a", target="u")})
    with pytest.raises(ValueError, match="exactly one target"):
        client_mix.pooled_traces({"zoo": pd.concat([_frame("a"), _frame("b", target="u")])})
    with pytest.raises(ValueError, match="missing columns \\['q'\\]"):
        client_mix.pooled_traces({"zoo": _frame("a").drop(columns="q")})
    with pytest.raises(ValueError, match="at least one"):
        client_mix.pooled_traces({})


def test_one_domain_workload_needs_distinct_domains():
    wl = client_mix.one_domain_workload("t", [("a", "chat"), ("b", "code")], capacity=2, max_tokens=8)
    assert [(c.draft, c.domains) for c in wl.clients] == [("a", ("chat",)), ("b", ("code",))]
    for bad in ([], [("a", "chat"), ("b", "chat")]):
        with pytest.raises(ValueError, match="distinct domains"):
            client_mix.one_domain_workload("t", bad, capacity=2, max_tokens=8)


def test_a_switching_workload_cycles_drafts_and_switches_half_way_round():
    from specedge.serving.workload import switching

    wl = switching("t", ("a", "b"), 5, capacity=7, max_new_tokens=9, domains=("d0", "d1", "d2", "d3", "d4"), prompts=2,
                   temperature=0.5, seed=4)
    assert (wl.target, wl.capacity, len(wl.clients)) == ("t", 7, 5)
    # five domains: the second one is i + 2 (mod 5), an odd count's lower half
    assert [(c.draft, c.domains) for c in wl.clients] == [("a", ("d0", "d2")), ("b", ("d1", "d3")), ("a", ("d2", "d4")),
                                                          ("b", ("d3", "d0")), ("a", ("d4", "d1"))]
    assert {(c.prompts, c.max_new_tokens, c.temperature, c.seed, c.draft_rule) for c in wl.clients} == {(2, 9, 0.5, 4, "server")}
    assert switching("t", ["a"], 0, 1, 1, ("x", "y")).clients == ()
    for drafts, domains in (((), ("x", "y")), (("a",), ("x",))):
        with pytest.raises(ValueError, match="need a draft and two domains"):
            switching("t", drafts, 2, 2, 8, domains)


def test_read_traces_names_a_missing_file_and_a_missing_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="traces file missing"):
        client_mix.read_traces(tmp_path / "none.csv", "t")
    f = tmp_path / "traces.csv"
    pd.concat([_frame("a"), _frame("b", target="u")]).to_csv(f, index=False)
    assert client_mix.read_traces(f, "u").draft.tolist() == ["b"]
    with pytest.raises(ValueError, match="no traces for 'v'"):
        client_mix.read_traces(f, "v")
