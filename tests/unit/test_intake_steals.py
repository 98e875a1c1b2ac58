"""The server's intake taken from its pass (the kind "intake steals", tried): the real passes' time off their core per
request taken in (``log.pass_intakes``), what it took from each pass (``measured_times.taken_in``), and the twin's pass
lengthened by a request taken in during it (``interfaces.Times.steal``)."""
import numpy as np
import pandas as pd
import pytest

from specedge.serving.interfaces import Times
from specedge.serving.log import pass_intakes
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.sim.twin import PromptAcceptance, simulate
from specedge.serving.timemodels import measured_times
from specedge.serving.workload import ClientSpec, Workload
from test_twin_error_attribution import FRAME


def _log(rows, cpu=True):
    """A real log of verified rounds: (batch, client, arrival, start, t_verify, t_verify_cpu) per row."""
    df = pd.DataFrame(rows, columns=["batch", "client", "arrival", "start", "t_verify", "t_verify_cpu"])
    df = df.assign(end=df["start"] + df["t_verify"], event="")
    return df if cpu else df.drop(columns="t_verify_cpu")


# batch 2 runs [10, 15) ms and takes in two requests (at 11 and 14 ms; both verified in batch 3), batch 0 [0, 5) takes
# in the request stamped at 2 ms (batch 1's); batch 1 [5, 9) is opened by its own request (stamped as it begins) and
# takes none in; batch 3 [15, 19) none. Batches listed out of time order: the count follows each pass's times.
LOG = _log([(2, 0, 0.0095, 0.010, 0.005, 0.0035),
            (0, 0, 0.0000, 0.000, 0.005, 0.0041),
            (1, 1, 0.0020, 0.005, 0.004, 0.0038),
            (3, 1, 0.0110, 0.015, 0.004, 0.0039),
            (3, 2, 0.0140, 0.015, 0.004, 0.0039)])


def test_pass_intakes_counts_the_requests_stamped_during_each_pass_and_its_time_off_the_core():
    p = pass_intakes(LOG)
    assert p["batch"].tolist() == [0, 1, 2, 3]                     # batch order, as ``runtime.log_batches``
    assert p["taken_in"].tolist() == [1, 0, 2, 0]
    np.testing.assert_allclose(p["off_core"], [0.0009, 0.0002, 0.0015, 0.0001], atol=1e-12)
    # a request stamped as a pass begins opened it: not taken in during it; one stamped as it ends is not in it either
    edge = _log([(0, 0, 0.000, 0.000, 0.005, 0.004), (1, 1, 0.005, 0.005, 0.004, 0.004)])
    assert pass_intakes(edge)["taken_in"].tolist() == [0, 0]
    assert pass_intakes(LOG.drop(columns="t_verify_cpu"))["off_core"].isna().all()   # no pass CPU logged
    assert pass_intakes(LOG.assign(event="refused")).empty                           # nothing verified


def test_taken_in_is_the_time_off_the_core_beyond_the_passes_that_took_none_in():
    stolen, per_request = measured_times.taken_in(LOG)
    base = np.median([0.0002, 0.0001])                             # the passes that took none in
    np.testing.assert_allclose(stolen, [0.0009 - base, 0, 0.0015 - base, 0], atol=1e-12)
    np.testing.assert_allclose(per_request, [0.0009 - base, (0.0015 - base) / 2, (0.0015 - base) / 2], atol=1e-12)
    # never below 0; no pass that took none in: measured from 0; no pass CPU: nothing taken
    fast = LOG.assign(t_verify_cpu=LOG["t_verify_cpu"].where(LOG["batch"] != 0, 0.0050))
    assert measured_times.taken_in(fast)[0][0] == 0.0
    busy = _log([(0, 0, 0.000, 0.000, 0.005, 0.004), (1, 1, 0.002, 0.005, 0.004, 0.0035), (1, 2, 0.006, 0.005, 0.004, 0.0035)])
    np.testing.assert_allclose(measured_times.taken_in(busy)[0], [0.001, 0.0005], atol=1e-12)
    assert not measured_times.taken_in(LOG.drop(columns="t_verify_cpu"))[0].any()


def _two_clients():
    return Workload("target-m", tuple(ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed")
                                      for _ in range(2)), capacity=6)


def test_a_request_taken_in_during_a_pass_lengthens_it_and_one_reaching_the_idle_server_does_not():
    wl, acc = _two_clients(), PromptAcceptance(FRAME)
    # client 1 drafts 2 ms longer than client 0: its request reaches the server 2 ms into client 0's 5 ms pass
    base = dict(draft=[lambda k: 0.010, lambda k: 0.012], verify=lambda b: 0.005)
    taken = []

    def steal():
        taken.append(1)
        return 0.001
    plain = simulate(wl, FCFS(), FixedS(2, 2), Times(**base), acc, seed=1)
    stolen = simulate(wl, FCFS(), FixedS(2, 2), Times(**base, steal=steal), acc, seed=1)
    assert plain.equals(simulate(wl, FCFS(), FixedS(2, 2), Times(**base, steal=None), acc, seed=1))
    first = stolen[(stolen["client"] == 0) & (stolen["round"] == 0)].iloc[0]
    assert first["t_verify"] == pytest.approx(0.006)                  # 5 ms and the 1 ms the intake took
    assert first["end"] == pytest.approx(first["start"] + 0.006)
    mate, alone = (stolen[(stolen["client"] == 1) & (stolen["round"] == 0)].iloc[0],
                   plain[(plain["client"] == 1) & (plain["round"] == 0)].iloc[0])
    assert alone["t_queue"] == pytest.approx(0.003) and mate["t_queue"] == pytest.approx(0.004)   # waits for it
    assert mate["t_verify"] == pytest.approx(0.005)                   # its own pass took nothing in
    assert len(taken) == (stolen["t_verify"] > 0.0055).sum()          # one draw per pass lengthened, none when idle
    assert stolen["tokens"].sum() == plain["tokens"].sum()


def test_a_request_taken_in_during_the_lengthened_part_of_a_pass_lengthens_it_again():
    wl, acc = _two_clients(), PromptAcceptance(FRAME)
    # client 2 reaches the server 2 ms into client 0's 5 ms pass (a steal of 1 ms), client 1 5.5 ms into it: after
    # its 5 ms, within the 1 ms the first steal added
    draws = iter([0.001, 0.002] * 100)
    wl3 = Workload("target-m", wl.clients + (ClientSpec("draft-xs", ("code",), 1, 12, gamma=2, draft_rule="fixed"),),
                   capacity=6)
    times = Times(draft=[lambda k: 0.010, lambda k: 0.0155, lambda k: 0.012], verify=lambda b: 0.005,
                  steal=lambda: next(draws))
    log = simulate(wl3, FCFS(), FixedS(3, 3), times, acc, seed=1)
    first = log[(log["client"] == 0) & (log["round"] == 0)].iloc[0]
    # client 2 at 2 ms into the pass takes 1 ms, client 1 at 5.5 ms (in that 1 ms) takes 2 ms more: 5 + 1 + 2
    assert first["t_verify"] == pytest.approx(0.008)


def test_times_with_steal_draws_the_passes_own_factors_and_refuses_what_it_cannot_combine():
    model = measured_times.Drawn(clients=(measured_times.ClientTimes(0.001, 0.001, np.ones(3), np.zeros(3), np.zeros(3),
                                                                     np.zeros(3)),),
                                 verify_factors=np.full(4, 2.0), dispatch=np.zeros(1), turnaround=np.zeros(1), runs=(),
                                 own_factors=np.full(4, 0.5), steals=np.array([0.003]))

    class Eq19:
        def __call__(self, batch):
            return 0.004
    t = measured_times.times(model, Eq19(), seed=0, steal=True)
    assert t.verify([]) == pytest.approx(0.002) and t.steal() == pytest.approx(0.003)
    plain = measured_times.times(model, Eq19(), seed=0)
    assert plain.verify([]) == pytest.approx(0.008) and plain.steal is None
    none = measured_times.times(measured_times.Drawn(**{**model.__dict__, "steals": np.zeros(0)}), Eq19(), steal=True)
    assert none.steal is None                                         # no request taken in during a fitted pass
    with pytest.raises(ValueError, match="steal: not with host or pass_shape"):
        measured_times.times(model, Eq19(), steal=True, pass_shape=True)
    with pytest.raises(ValueError, match="no own_factors"):
        measured_times.times(measured_times.Drawn(**{**model.__dict__, "own_factors": None}), Eq19(), steal=True)


def test_the_kind_intake_steals_lengthens_the_passes_that_take_a_request_in():
    """WISP's setting, two clients (repeat 2): a pass that takes the other client's request in ran ~0.6 ms longer
    than one that took none in, both in the real run and in the twin that draws every pass's factor alike (longer
    passes catch more requests); with the intake taken from the pass, those passes run longer still, and the passes'
    mean stays (their own factors are the measured ones less what the intakes took)."""
    from specedge.experiments.serving_validation import runs as sv

    key = ("li2026", "WISP", 2, 2)
    assert sv.KINDS["intake steals"] - sv.KINDS["one run"] == {"steal"}
    runs = sv.load_repeats()
    trace, prompt = sv.acceptances("li2026")
    ctx = sv.contexts(runs, "li2026", trace, prompt, keys=[key])[key]

    def gap_and_mean(kind, seed):
        log = ctx.stochastic(kind, seed)
        taken, tv = pass_intakes(log)["taken_in"].to_numpy(), verified_passes(log)
        return float(np.median(tv[taken > 0]) - np.median(tv[taken == 0])), float(np.mean(tv))
    for s in (0, 1):
        (g1, m1), (g2, m2) = gap_and_mean("one run", s), gap_and_mean("intake steals", s)
        assert g2 > g1 + 0.4e-3
        assert m2 == pytest.approx(m1, rel=0.05)


def verified_passes(log):
    from specedge.serving.log import verified
    return verified(log).groupby("batch", sort=True)["t_verify"].first().to_numpy(float)
