"""The twin's validation runs: pinned real runs of two papers' settings, and their setups for ``serving.analysis.validation``.

Real runs (``measure``, under ``make profiles``; wall-clock times are committed to ``REAL_RUNS``, never
measured by a notebook): the gRPC server pinned to one core and every drafter to the other
(``run_real(pin=PIN)``), so that verification and drafting do not contend for a core, for
N in ``SIZES`` clients and

- tran2025 (GOODSPEED's setting): synchronous rounds, allocators GOODSPEED and Fixed-S, C = 6 N
  (Table I's 4 clients / C = 24), every client on draft-xs over two domains;
- li2026 (WISP's setting): batch formers WISP (Algorithm 1 on the eq (19) fit of the zoo target) and
  FCFS, drafters with the MLP stop rule and SLO classes 8 / 4 / 2 tok/s (``devices``, cycled: li2026's own
  real run's devices too);
- li2026_binding: WISP's setting with its classes x 10 (80 / 40 / 20 tok/s), which bind on this CPU where 8 / 4 /
  2 never do; measured in a campaign of its own (``measure --setting li2026_binding --repeats 5``, its file
  ``campaign_file``), so that the twin's violation rate, and WISP's against FCFS's, can be judged.

``SETUPS`` gives ``serving.analysis.validation`` each setting's clients and policy objects as data; ``section`` is a
notebook's Validation section (the replay and the stochastic twin against these runs, per metric and quantile).
"""
from __future__ import annotations

import os

import pandas as pd

from ... import paths
from ...serving import acceptance_sources, policies as named, scenario
from ...serving.real import real_logs
from ...serving.analysis import client_mix, twin_attribution as _ta, twin_error
from ...serving.analysis.validation import (METRICS, TOLERANCE, VERIFY, Setup, dispatch, draft_passes, floor_s,
                                            metric_values, modelled_rounds, stochastic_twin, turnaround, verify_model)
from ...serving.analysis import validation as _validation
from ...serving.timemodels.estimator import zoo_fit
from ...serving.workload import ClientSpec, Workload, switching

SCENARIO = scenario.setups("serving_validation")   # data/scenarios/: each setting's fleet and policies, by name
SIZES = SCENARIO.sizes
PIN = (0, 1)                 # server on core 0, drafters on core 1
REAL_RUNS = paths.DATA / "serving_validation" / "real_runs.csv"
REPEATS = REAL_RUNS.with_name("real_runs_repeats.csv")   # the same runs measured again (``measure_repeats``)
TRACES = REAL_RUNS.with_name("serving_traces.csv.gz")    # the real runs' prompts as their drafters see them (``traces``)
POLICIES = {name: tuple(p for p, _ in st.policies) for name, st in SCENARIO.setups}
ZOO = acceptance_sources.source("zoo")   # the zoo's pairs: every setting's drafts, target and domains
CLASSES = dict(SCENARIO.setups)["li2026"].slo_classes   # WISP's setting: device i's SLO class (tok/s), cycled
# the settings measured in the common files (``REAL_RUNS``, ``REPEATS``), and those measured in a campaign of their own
COMMON = tuple(name for name, st in SCENARIO.setups if not st.campaign)


def _tran2025_workload(n: int, scale: str = "full", seed: int = 0) -> Workload:
    """GOODSPEED's setting: N clients, C = ``capacity_per_client`` x N, client i on the zoo's domains i and i + 3
    (``workload.switching``, as tran2025's own runs)."""
    st, (prompts, tokens) = dict(SCENARIO.setups)["tran2025"], SCENARIO.size(scale)
    return switching(ZOO.target, st.drafts, n, st.capacity_per_client * n, tokens, ZOO.domains, prompts=prompts, seed=seed)


def devices(n: int, prompts: int, tokens: int, seed: int = 0, capacity: int = 8, drafts=ZOO.drafts[:len(CLASSES)],
            classes=CLASSES) -> Workload:
    """``n`` real WISP devices: device i drafts with ``drafts[i % len]`` on the zoo's domain i (mod 6) in class
    ``classes[i % len]`` (tok/s), ``prompts`` prompts of ``tokens`` tokens, window 8, the MLP stop rule reporting its
    eq (5) alpha (``client_mix.reported_alpha`` on the zoo's traces), prefix caches."""
    k, d, doms = len(classes), len(drafts), ZOO.domains
    return Workload(ZOO.target, tuple(
        ClientSpec(drafts[i % d], (doms[i % len(doms)],), prompts, tokens, 8, "predictor:mlp", 0.0, classes[i % k],
                   _reported_alpha(drafts[i % d]), seed=seed) for i in range(n)), capacity=capacity, cache=True)


def _reported_alpha(draft: str) -> float:
    """Eq (5)'s alpha a device of ``draft`` reports with the MLP stop rule, window 8, greedy, over the zoo's domains."""
    return client_mix.reported_alpha(acceptance_sources.acceptance("zoo"), draft, True, 8, 0.0, 4000, ZOO.domains)


def _wisp_workload(name: str):
    """A setting of WISP's (one with SLO classes): ``devices`` of its drafts and classes, C = ``capacity_per_client`` x N."""
    st = dict(SCENARIO.setups)[name]

    def build(n: int, scale: str = "full", seed: int = 0) -> Workload:
        return devices(n, *SCENARIO.size(scale), seed, capacity=st.capacity_per_client * n, drafts=st.drafts,
                       classes=st.slo_classes)
    return build


def _policies(paper: str):
    """``Setup.policies`` of setting ``paper``: its policy's batch former and allocator by registry name (with the
    scenario's parameters), C = ``capacity_per_client`` x N; a former that decides with an estimate gets the zoo
    target's eq (19) fit (``timemodels.estimator.zoo_fit``, the real server's)."""
    st = dict(SCENARIO.setups)[paper]

    def build(policy: str, n: int, seed: int = 0):
        former, alloc = st.policy(policy)
        context = {}
        if "estimator" in named.KINDS["former"].takes(former.name):
            context = dict(estimator=zoo_fit(seed).estimator, delta=zoo_fit(seed).delta)
        return former.build("former", **context), alloc.build("allocator", capacity=st.capacity_per_client * n,
                                                               clients=n, seed=seed)
    return build


SETUPS = {name: Setup(_tran2025_workload if st.slo_classes is None else _wisp_workload(name), _policies(name))
          for name, st in SCENARIO.setups}


def setup(paper: str) -> Setup:
    if paper not in SETUPS:
        raise ValueError(f"paper: expected one of {sorted(SETUPS)}, got {paper!r}")
    return SETUPS[paper]


def workload(paper: str, n: int, scale: str = "full", seed: int = 0) -> Workload:
    """The clients of one real run (module docstring)."""
    return setup(paper).workload(n, scale, seed)


def policies(paper: str, policy: str, n: int, seed: int = 0):
    """(batch former, allocator) of a run: fresh objects, the same classes in the real run and the replay."""
    return setup(paper).policies(policy, n, seed)


def campaign_file(setting: str):
    """The file of ``setting``'s runs when it is measured in a campaign of its own (scenario key ``campaign``), else None."""
    setup(setting)
    name = dict(SCENARIO.setups)[setting].campaign
    return REAL_RUNS.with_name(f"{name}.csv") if name else None


def measure(scale: str = "full", seed: int = 0, sizes=SIZES, settings=COMMON) -> pd.DataFrame:
    """Every real run of ``settings``, pinned (module docstring; ``serving.analysis.validation.measure``)."""
    for st in settings:
        setup(st)
    return _validation.measure(SETUPS, {st: POLICIES[st] for st in settings}, sizes, scale, seed, PIN)


def measure_repeats(repeats: int, scale: str = "full", seed: int = 0, sizes=SIZES, settings=COMMON) -> pd.DataFrame:
    """``measure`` ``repeats`` times over (repeat 1, 2, ...; the committed ``REAL_RUNS`` are repeat 0): the same
    prompts and policies, so that the runs differ only by the real system's own timing (its run-to-run spread)
    and the stochastic twin can be judged on runs no model was fitted to. Each run keeps its load at start
    (``load_1min``); ``load_1min_end`` is the load after the last run of its repeat."""

    if repeats < 1:
        raise ValueError(f"repeats: must be >= 1, got {repeats}")
    out = []
    for r in range(1, repeats + 1):
        df = measure(scale, seed, sizes, settings)
        out.append(df.assign(repeat=r, load_1min_end=os.getloadavg()[0]))
    return pd.concat(out, ignore_index=True)


def load_repeats(path=REPEATS, base=REAL_RUNS) -> dict[tuple[str, str, int, int], pd.DataFrame]:
    """Every committed run by (paper, policy, N, repeat): ``REAL_RUNS`` as repeat 0, then ``REPEATS``'s."""
    runs = {(*k, 0): g for k, g in load_real_runs(base).items()}
    runs.update(_repeats(path, "python -m specedge.experiments.serving_validation.runs measure --repeats 5"))
    return runs


def _repeats(path, command: str) -> dict:
    """The runs of a file of repeats by (paper, policy, N, repeat)."""
    df = real_logs.read(path, command)
    runs = {}
    for r, g in df.groupby("repeat", sort=True):
        runs.update({(*k, int(r)): v for k, v in _validation.by_run(g).items()})
    return runs


def load_campaign(setting: str) -> dict[tuple[str, str, int, int], pd.DataFrame]:
    """The runs of a setting measured in a campaign of its own (``campaign_file``) by (paper, policy, N, repeat)."""
    path = campaign_file(setting)
    if path is None:
        raise ValueError(f"setting: {setting!r} is measured in the common files, not in a campaign of its own")
    return _repeats(path, f"python -m specedge.experiments.serving_validation.runs measure --setting {setting} --repeats 5")


def _campaign_of(key) -> tuple[str, bool]:
    """The campaign ``key`` was measured in: its setting's own (``campaign_file``), else the common files' repeat 0
    (``REAL_RUNS``) or their repeats (``REPEATS``)."""
    return dict(SCENARIO.setups)[key[0]].campaign if key[0] in SETUPS else "", key[3] == 0


def campaign(runs: dict, key) -> dict:
    """The runs measured in the same campaign as ``key`` (repeat 0, the committed ``REAL_RUNS``; the repeats of
    ``REPEATS``, measured together under another load; or a setting's own, ``campaign_file``): models are fitted
    within one machine state."""
    if len(key) < 4:
        return runs
    return {k: v for k, v in runs.items() if _campaign_of(k) == _campaign_of(key)}


def held_out(runs: dict, key, same_policy: bool = False) -> list:
    """The runs the held-out time models of run ``key`` are fitted on: the other runs of its setting and N in its
    campaign (``campaign``), from other repeats where there are any (not the same run again), else the other
    policy's (the same clients). ``same_policy``: of those, only ``key``'s policy's where there are any (tried, not
    kept: docs/twin-validation.md, "GOODSPEED's round time, budgeted on the drafters' core")."""
    same = [k for k in campaign(runs, key) if k[0] == key[0] and k[2] == key[2] and k != key]
    other = [k for k in same if len(k) > 3 and k[3] != key[3]] or same
    return [k for k in other if k[1] == key[1]] or other if same_policy else other


# The held-out stochastic twins of ``contexts``' ``stochastic(kind, seed)`` (``twin_attribution``'s ``_TWINS``): what each
# adds to the held-out drawn times, "held-out": the drafters' shared core ("shared"), run in the kernel's time slices
# ("sliced"), a round started when its drafter's job first runs ("queued"), a woken drafter served first ("woken"), the
# core's measured slowness ("speed"), the staggered start ("starts"), the server's intake during a pass ("intake"), the
# prompts' own lengths ("lengths"), the drafters' wake-up drawn by how many others are busy ("wake"), the same read on
# the drafters' own clocks only ("stamps"), the core's slowness per busy period ("periods"), and the
# host's state read by the periods, passes and link ("host"), the passes' factors drawn by the batch's new tokens
# ("shape"), each seed's times drawn from one held-out run ("one": the validated twin, ``one_run``), and the server's
# intake of a request taken from the pass it comes in ("steal"); "drafter wake" and "validated, woken first" are tried
# on it before its stamps, "host state" and "pass shape" before its one run, "intake steals" on it
# (docs/twin-validation.md: not kept)
KINDS = {
    "held-out": frozenset(),
    "shared core": frozenset({"shared"}),
    "sliced core": frozenset({"shared", "sliced"}),
    "queued core": frozenset({"shared", "sliced", "queued"}),
    "core speed": frozenset({"shared", "speed"}),
    "woken first": frozenset({"shared", "sliced", "queued", "woken", "speed"}),
    "staggered start": frozenset({"shared", "speed", "starts"}),
    "server intake": frozenset({"shared", "speed", "starts", "intake"}),
    "prompt lengths": frozenset({"shared", "speed", "starts", "intake", "lengths"}),
    "wake stamps": frozenset({"shared", "speed", "starts", "intake", "lengths", "stamps"}),
    "busy periods": frozenset({"shared", "periods", "starts", "intake", "lengths", "stamps"}),
    "host state": frozenset({"shared", "periods", "starts", "intake", "lengths", "stamps", "host"}),
    "pass shape": frozenset({"shared", "periods", "starts", "intake", "lengths", "stamps", "shape"}),
    "one run": frozenset({"shared", "periods", "starts", "intake", "lengths", "stamps", "one"}),
    "intake steals": frozenset({"shared", "periods", "starts", "intake", "lengths", "stamps", "one", "steal"}),
    "drafter wake": frozenset({"shared", "speed", "starts", "intake", "lengths", "wake"}),
    "validated, woken first": frozenset({"shared", "speed", "starts", "intake", "lengths", "sliced", "queued", "woken"}),
}


def contexts(runs: dict, paper: str, trace, prompt, keys=None, seed: int = 0, same_policy: bool = False,
             core_bin_s: float | None = None) -> dict:
    """``serving.analysis.twin_attribution.Context`` of each run of ``paper`` (or of ``keys``): its setting's clients and
    policy objects, eq (19) fitted on the other runs, the server's wake-up and turnaround of the other runs, the
    held-out time models (``held_out``, with its ``same_policy``; ``serving.timemodels.measured_times``), acceptance ``trace`` (a ``TraceAcceptance``)
    and ``prompt`` (a ``PromptAcceptance``); ``core_bin_s``: the interval of the drafters' core's slowness (None:
    ``measured_times.CORE_BIN_S``; another only for the doc's sensitivity)."""
    from dataclasses import replace as _replace

    import numpy as np

    from ...serving.timemodels import measured_times
    from ...serving.analysis import twin_attribution
    from ...serving.log import dispatch_latency
    from ...serving.real.drafter import PROMPT_TOKENS
    from ...serving.sim.processes import DRAFTER_CORE_SLICE_S
    from ...serving.sim.twin import simulate

    keys = [k for k in runs if k[0] == paper] if keys is None else list(keys)
    if not keys:
        raise ValueError(f"runs: none of {paper!r}")
    st = setup(paper)
    out = {}
    everything = runs
    for key in keys:
        _, pol, n = key[:3]
        runs = campaign(everything, key)
        wl = st.workload(n, "full", seed)
        twin_wl = _replace(wl, clients=tuple(_replace(c, prompt_tokens=PROMPT_TOKENS) for c in wl.clients))
        verify = verify_model(runs, key, seed)
        passes = (lambda r, c, wl=wl: draft_passes(r, wl.clients[c]))
        fitted = held_out(runs, key, same_policy)
        drawn = measured_times.fit(runs, fitted, passes, verify,
                                   measured_times.CORE_BIN_S if core_bin_s is None else core_bin_s)
        alone_keys = [k for k in runs if k[0] == paper and k[2] == 1 and k != key]
        alone = measured_times.fit(runs, alone_keys, passes, verify) if alone_keys else None
        drawn = _client_cpu(drawn, everything, paper, n, passes, verify)
        alone = _client_cpu(alone, everything, paper, 1, passes, verify) if alone is not None else None
        one = one_run(runs, everything, key, fitted, passes, verify,
                      measured_times.CORE_BIN_S if core_bin_s is None else core_bin_s)
        others = [k for k in runs if k != key]
        lengths = _prompt_lengths(runs, fitted, n)
        own_wl = _replace(wl, clients=tuple(_replace(c, prompt_tokens=lengths.get(i, PROMPT_TOKENS))
                                            for i, c in enumerate(wl.clients)))

        def stochastic(kind, s, real=runs[key], pol=pol, n=n, wl=twin_wl, verify=verify, drawn=drawn, alone=alone,
                       core_slice=DRAFTER_CORE_SLICE_S, recorder=None, own_wl=own_wl, one=one):
            former, alloc = st.policies(pol, n, seed)   # the real run's policy objects; ``s`` seeds the twin's draws
            if kind == "own":
                return stochastic_twin(real, wl, former, alloc, verify, trace, label=pol, seed=s)
            if kind not in KINDS:
                raise ValueError(f"kind: expected 'own' or one of {sorted(KINDS)}, got {kind!r}")
            has = KINDS[kind]
            if "one" in has:             # this seed's times from one held-out run and its run of one client
                drawn, alone = one(s)
            times = measured_times.times(drawn, verify, s, "shared" in has, alone,
                                         core_slice if "sliced" in has else None, core_speed="speed" in has,
                                         starts="starts" in has, intake="intake" in has,
                                         wake="wake" in has, wake_stamps="stamps" in has,
                                         core_periods="periods" in has, host="host" in has,
                                         pass_shape="shape" in has, steal="steal" in has)
            if "lengths" in has:         # each prompt's own length, as the held-out runs' server verified it
                wl = own_wl
            if "queued" in has:          # the round starts when the drafter's job first gets the core
                times = _replace(times, core_queued=True)
            if "woken" in has:           # a drafter woken by its reply runs first, for a slice (``WakeFirstCore``)
                times = _replace(times, wake_first=True)
            if recorder is not None:   # ``core_budget.Recorder``: the draws of a shared-core twin, recorded
                recorder.share = measured_times.split(alone.clients[0])[0] if alone is not None else 1.0
                times = recorder.wrap(times)
            return simulate(wl, former, alloc, times, prompt, seed=s, label=pol, dispatch=drawn.dispatch,
                            turnaround=drawn.turnaround)

        out[key] = twin_attribution.Context(
            key=key, real=runs[key], workload=wl, policies=(lambda s, pol=pol, n=n: st.policies(pol, n, seed)),
            verify=verify, dispatch=dispatch(runs, key),
            dispatches=np.concatenate([dispatch_latency(runs[k]) for k in others]), turnaround=turnaround(runs, key),
            drawn=drawn, trace=trace, prompt=prompt, passes=passes,
            fitted_rounds=(lambda rounds, which, wl=wl: modelled_rounds(rounds, wl, which)), stochastic=stochastic)
    return out


def one_run(runs: dict, everything: dict, key, fitted, passes, verify, bin_s: float):
    """The held-out time models of run ``key`` one run at a time (the kind "one run", the validated twin): seed ->
    (``measured_times.fit`` on one run of ``fitted``; the same on that run's run of one client, of its policy and
    repeat, else the one as far in the order of ``runs``' other runs of one client, else None), each with its drafters'
    whole CPU as ``_client_cpu`` gives it (``everything``: every run). Seed s takes repeat s mod R and policy
    (s // R + s mod R) mod P of the R repeats and P policies of ``fitted``: the first seeds cover every repeat and both
    policies, R x P seeds every run once (a pair not measured is passed over), then again. A real run's machine state
    holds for the whole run and differs from run to run (docs/twin-validation.md); rounds drawn from several runs'
    values mix their states within one run. Each run is fitted once."""
    from ...serving.timemodels import measured_times

    if not fitted:
        raise ValueError(f"fitted: no held-out run of {key} to fit its time models on")
    def cell(k):   # (repeat, policy)
        return k[3] if len(k) > 3 else 0, k[1]

    repeats, policies = sorted({cell(k)[0] for k in fitted}), sorted({cell(k)[1] for k in fitted})
    turns = [(repeats[s % len(repeats)], policies[(s // len(repeats) + s % len(repeats)) % len(policies)])
             for s in range(len(repeats) * len(policies))]
    order = sorted(fitted, key=lambda k: turns.index(cell(k)))
    ones = sorted((k for k in runs if k[0] == key[0] and k[2] == 1 and k != key), key=cell)
    cache: dict = {}

    def models(seed: int):
        j = seed % len(order)
        k = order[j]
        if k not in cache:
            mate = (*k[:2], 1, *k[3:])
            a = mate if mate in runs and mate != key else ones[j % len(ones)] if ones else None
            d = measured_times.fit(runs, [k], passes, verify, bin_s)
            a = None if a is None else _client_cpu(measured_times.fit(runs, [a], passes, verify), everything, key[0], 1,
                                                   passes, verify)
            cache[k] = (_client_cpu(d, everything, key[0], key[2], passes, verify), a)
        return cache[k]
    return models


def _prompt_lengths(runs: dict, keys, n: int) -> dict[int, tuple[int, ...]]:
    """Per client (of ``n``), its prompts' lengths in tokens as the first of the runs ``keys`` that verified each of its
    prompts logged them (``serving.log.prompt_lengths``; every run of a setting drafts the same prompts): the real
    drafters cut each prompt to its last ``PROMPT_TOKENS`` ids, and the shorter ones keep their own length."""
    from ...serving.log import prompt_lengths

    out: dict[int, tuple[int, ...]] = {}
    for k in keys:
        for c, lengths in prompt_lengths(runs[k]).items():
            if c < n and len(lengths) > len(out.get(c, ())):
                out[c] = lengths
    return out


def core_budget_table(paper: str = "tran2025", policy: str = "GOODSPEED", sizes=(4, 8), seeds: int = 2,
                      runs: dict | None = None, kind: str = "shared core", same_policy: bool = False) -> pd.DataFrame:
    """The drafters' core per synchronous round (``serving.analysis.core_budget``), real against the validated twin
    (``kind``: processor sharing on a core of constant speed, "core speed" (of measured speed: the validated twin),
    "sliced core", "queued core" or "woken first"; its held-out models, ``held_out``'s ``same_policy``; ``seeds`` seeds
    pooled), for the repeats (1-5) of ``policy`` at each N of
    ``sizes``: per run and side the means over full batches of the CPU charged (``cpu``), the core's window
    (``window``), the pass (``t_verify``) and the pass's end to the first reply in (``first_reply``), and over rounds
    of ``cycles``' quantities (means; ``t_round_p50``, ``in_hand_p90`` and ``delay_p50`` too), in ms."""
    from ...serving.analysis import core_budget as cb
    from ...serving.log import verified

    runs = _all_runs() if runs is None else runs
    keys = [k for k in runs if k[0] == paper and k[1] == policy and k[2] in sizes and len(k) > 3 and k[3] > 0]
    if not keys:
        raise ValueError(f"runs: no repeats of {paper!r} {policy!r} at N in {sizes}")
    trace, prompt = acceptances(paper)
    ctxs = contexts(runs, paper, trace, prompt, keys, same_policy=same_policy)

    def side(logs_rounds, n):
        b, c = [], []
        for log, rounds in logs_rounds:
            v = verified(log).groupby("batch").agg(start=("start", "first"), tv=("t_verify", "first"))
            first = rounds.groupby("batch")["received"].min()
            bb = cb.budget(rounds).set_index("batch").join(v)
            b.append(bb.assign(first_reply=first.reindex(bb.index) - bb["start"] - bb["tv"])[bb["clients"] == n])
            c.append(cb.cycles(rounds))
        b, c = pd.concat(b), pd.concat(c)
        ms = lambda x: 1e3 * float(x)   # noqa: E731
        return dict(cpu=ms(b["cpu"].mean()), window=ms(b["window"].mean()), t_verify=ms(b["tv"].mean()),
                    first_reply=ms(b["first_reply"].mean()), **{k: ms(c[k].mean()) for k in
                                                                  ("cycle", "in_hand", "t_round", "reply")},
                    t_round_p50=ms(c["t_round"].median()), in_hand_p90=ms(c["in_hand"].quantile(0.9)),
                    delay_p50=ms(c["delay"].median()))

    rows = []
    for key in keys:
        ctx = ctxs[key]
        rows.append(dict(policy=key[1], n_clients=key[2], repeat=key[3], side="real",
                         **side([(ctx.real, cb.real_core_rounds(ctx.real))], key[2])))
        twins = []
        for s in range(seeds):
            rec = cb.Recorder()
            log = ctx.stochastic(kind, s, recorder=rec)
            twins.append((log, cb.twin_core_rounds(log, rec)))
        rows.append(dict(policy=key[1], n_clients=key[2], repeat=key[3], side="twin", **side(twins, key[2])))
    return pd.DataFrame(rows)


def _client_cpu(drawn, runs: dict, paper: str, n: int, passes, verify):
    """``drawn`` (``measured_times.fit``) as it is where its runs logged the drafters' whole CPU (``t_client_cpu``);
    where they did not (repeat 0's campaign), with the drafter CPU besides drafting of the runs of ``paper`` with ``n``
    clients that did (``measured_times.with_client_cpu``: the repeats' campaign, every one of them held out from the
    judged run); unchanged where none did."""
    from ...serving.timemodels import measured_times

    if any(c.other_cpu is not None and len(c.other_cpu) for c in drawn.clients):
        return drawn
    keys = [k for k, v in runs.items() if k[0] == paper and k[2] == n and "t_client_cpu" in v]
    return measured_times.with_client_cpu(drawn, measured_times.fit(runs, keys, passes, verify)) if keys else drawn


def trace_pairs(sizes=SIZES, scale: str = "full", seed: int = 0) -> dict[tuple[str, str], int]:
    """Every (draft, domain) the real runs' clients draft on (``SETUPS``, N in ``sizes``), with its prompts per domain."""
    out: dict[tuple[str, str], int] = {}
    for paper in SETUPS:
        for n in sizes:
            for c in workload(paper, n, scale, seed).clients:
                for d in c.domains:
                    out[c.draft, d] = max(out.get((c.draft, d), 0), c.prompts)
    return out


def traces(sizes=SIZES, window: int = 8, tokens: int | None = None, target: str = "target-m", progress: bool = True,
           pairs=None) -> pd.DataFrame:
    """Fixed-window traces (``predictor.traces.generate_traces``: T = 0, ``window`` drafts per round) of every draft and domain of
    the real runs (``trace_pairs``) on the real runs' own prompts as their drafters see them (``serving.real.drafter.prompt_stream``:
    the tokenizer's ids, the last ``PROMPT_TOKENS``; the zoo's traces keep the last 96), each prompt decoded alone (no
    padding), ``tokens`` per prompt (the runs'): at T = 0 the drafter's logits at every position of the target's path
    are those the real drafter computed, so its stop rule's features are. ``prompt`` is the prompt's index within its
    domain, as the twin's clients walk them (``twin.PromptAcceptance``)."""
    import torch

    from ... import zoo
    from ...predictor.traces import generate_traces
    from ...serving.real.drafter import prompt_stream
    from ...serving.workload import ClientSpec

    pairs = trace_pairs(sizes) if pairs is None else pairs
    tokens = SCENARIO.size("full")[1] if tokens is None else tokens
    frames = []
    for draft in dict.fromkeys(d for d, _ in pairs):
        d_model, t_model, tok = zoo.load_pair(draft, target)
        for (dr, domain), k in pairs.items():
            if dr != draft:
                continue
            for j, ids in enumerate(prompt_stream(ClientSpec(draft, (domain,), k, tokens), tok)):
                f = generate_traces(d_model, t_model, {domain: [torch.tensor(ids)]}, window=window, temperatures=(0.0,),
                                    max_new_tokens=tokens, progress=False, draft=draft, target=target)
                frames.append(f.assign(prompt=j))
        if progress:
            print(f"serving traces: {draft} done", flush=True)
    return pd.concat(frames, ignore_index=True)


def load_real_runs(path=REAL_RUNS) -> dict[tuple[str, str, int], pd.DataFrame]:
    """The committed pinned runs by (paper, policy, N)."""
    return _validation.by_run(real_logs.read(path, "python -m specedge.experiments.serving_validation.runs measure"))


def replay_run(runs: dict, key, verify: str = VERIFY[0], scale: str = "full", seed: int = 0, modelled: bool = False,
               model=None):
    """``serving.analysis.validation.replay_run`` of the run ``key`` = (paper, policy, N) in its paper's setup."""
    return _validation.replay_run(runs, key, setup(key[0]), verify, scale, seed, modelled, model)


def stochastic_run(runs: dict, key, acceptance, scale: str = "full", seed: int = 0, model=None) -> pd.DataFrame:
    """``serving.analysis.validation.stochastic_run`` of the run ``key`` in its paper's setup."""
    return _validation.stochastic_run(runs, key, setup(key[0]), acceptance, scale, seed, model)


def validation(runs: dict, paper: str, acceptance=None, scale: str = "full", seed: int = 0, sizes=SIZES):
    """``serving.analysis.validation.validation`` of ``paper``'s runs of N in ``sizes``, in its setup."""
    return _validation.validation(runs, paper, setup(paper), acceptance, scale, seed, sizes)


def section(paper: str, acceptance, out, scale: str = "full", seed: int = 0):
    """A notebook's Validation section for ``paper`` (``serving.analysis.validation.section``): the committed pinned runs
    (N in ``SIZES``, the first two at CI scale) against their replays and the stochastic twin."""
    return _validation.section(load_real_runs(), paper, setup(paper), acceptance, out, seed,
                               SIZES if scale == "full" else SIZES[:2])


def main(argv=None) -> int:
    """``measure`` (``REAL_RUNS``), ``measure --repeats K`` (``REPEATS``: K more repeats of every run), ``measure
    --setting S --repeats K`` (a setting measured in a campaign of its own: K repeats into its ``campaign_file``) or
    ``traces`` (``TRACES``: no timing, the models' outputs)."""
    import argparse
    import sys
    from pathlib import Path

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["traces"]:
        ap = argparse.ArgumentParser(description="fixed-window traces of the real runs' prompts as their drafters see them")
        ap.add_argument("cmd", choices=["traces"])
        ap.add_argument("--out", default=str(TRACES))
        args = ap.parse_args(argv)
        from ...predictor.traces import _write_gz_csv
        df = traces()
        print(f"{len(df)} drafted positions -> {_write_gz_csv(df, Path(args.out))}")
        return 0
    if "--repeats" not in argv:
        return real_logs.measure_main("measure the pinned real runs the twin is validated against", measure, REAL_RUNS, argv)
    ap = argparse.ArgumentParser(description="measure the pinned real runs again (run-to-run spread, held-out runs)")
    ap.add_argument("cmd", choices=["measure"])
    ap.add_argument("--repeats", type=int, required=True)
    ap.add_argument("--setting", choices=[s for s in SETUPS if s not in COMMON], default=None,
                    help="a setting measured in a campaign of its own (default: every setting of the common files)")
    ap.add_argument("--out", default=None, help=f"default: {REPEATS} (the setting's own file with --setting)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    settings = COMMON if args.setting is None else (args.setting,)
    out = args.out or str(REPEATS if args.setting is None else campaign_file(args.setting))
    df = measure_repeats(args.repeats, "full", args.seed, settings=settings)
    print(f"{len(df)} rows -> {real_logs.save(df, out)}")
    return 0


# the stochastic twin the serving notebooks validate, the one the sweeps run, the validated one before its core's speed
# was measured, and two tried beside that one: the drafters' core in the kernel's time slices instead of processor
# sharing, and on that core a round started when the drafter's job first gets the core; and one tried beside the
# validated one: a drafter woken by its reply served first, for a slice, and two tried on the validated one before its
# stamps: the drafters' wake-up drawn by how many others are busy, and that woken drafter served first (their names:
# ``twin_attribution.TWINS``; none of the five kept: the doc's numbers)
STOCHASTIC = twin_error.VALIDATED
BEFORE = twin_error.DOMAIN_IID
CONSTANT_CORE = _ta.twin_named("shared core")
SLICED = _ta.twin_named("sliced core")
QUEUED = _ta.twin_named("queued core")
WOKEN = _ta.twin_named("woken first")
CORE_SPEED = _ta.twin_named("core speed")   # before the start
# the validated one before the server's intake during a pass, before the prompts' own lengths, before its drafters'
# wake-up read on their clocks, and before its core's slowness drawn per busy period
STAGGERED = _ta.twin_named("staggered start")
INTAKE = _ta.twin_named("server intake")
LENGTHS = twin_error.LENGTHS
STAMPS = twin_error.STAMPS
PERIODS = twin_error.PERIODS   # the validated one with every held-out run pooled, not one run's per seed
# tried on the validated one, not kept: a reply's way and its drafter's wait in hand drawn by how many others are busy;
# the woken drafter served first (``WOKEN``'s core) on the validated one
WAKE = _ta.twin_named("drafter wake")
WOKEN_VALIDATED = _ta.twin_named("validated, woken first")
SEEDS = 5
# a queueing delay within this of the real one at p50 is within tolerance (or within the real runs' own spread)
QUEUE_P50 = 15.0


def acceptances(paper: str, traces_path=TRACES):
    """(the domain's traces i.i.d. per round, by prompt and position) of ``paper``'s setting: ``twin.TraceAcceptance`` of
    the zoo's traces (the sweeps' twin) and ``twin.PromptAcceptance`` of the real runs' own prompts as their drafters see
    them (``traces``, committed at ``traces_path``), with the MLP stop rule in WISP's setting."""
    from pathlib import Path

    from ...serving.sim.twin import PromptAcceptance, TraceAcceptance

    setup(paper)
    if not Path(traces_path).exists():
        raise FileNotFoundError(f"{traces_path}: the real runs' prompts' traces are missing; "
                                "`python -m specedge.experiments.serving_validation.runs traces` writes them")
    models = sorted({a.rule.model for _, (_, a) in dict(SCENARIO.setups)[paper].policies if a.rule.kind == "predictor"})
    if not models:
        return TraceAcceptance(), PromptAcceptance(traces_path)
    from ...predictor import persistence
    rules = {m: persistence.load(paths.DATA / "predictor", m) for m in models}
    return TraceAcceptance(stop_rules=rules), PromptAcceptance(traces_path, stop_rules=rules)


def attribution_section(paper: str, out, trace, prompt, scale: str = "full", seeds: int = SEEDS):
    """The stochastic twin's error attributed to its components (``serving.analysis.twin_attribution``) on ``paper``'s
    committed runs (repeat 0; N 1-2 at CI scale), ``seeds`` seeds each: writes ``twin_error_attribution.csv``
    (per component, metric and quantile the worst and mean |difference| from the real runs, the queueing delay's
    mechanism among the metrics: ``twin_attribution.queueing_mechanism``) and its figure; returns (per-run table,
    summary)."""
    from ...serving.analysis import twin_attribution as ta

    runs = _all_runs()      # the committed runs (repeat 0) are judged; the repeats give their drafters' whole CPU
    keys = [k for k in runs if k[0] == paper and k[3] == 0 and (scale == "full" or k[2] <= 2)]
    table = ta.attribution(contexts(runs, paper, trace, prompt, keys), seeds=range(seeds), mechanism=True)
    summ = ta.summary(table, floor_s({k: v for k, v in runs.items() if k[3] == 0}))
    _plotting().save(ta.figure(summ).figure, summ, out, "twin_error_attribution")
    return table, summ


def _plotting():
    from ... import plotting
    return plotting


def _all_runs() -> dict:
    """Every committed run keyed (paper, policy, N, repeat): the repeats where measured, else repeat 0 alone; then
    the runs of every setting measured in a campaign of its own whose file is committed (``load_campaign``)."""
    runs = load_repeats() if REPEATS.exists() else {(*k, 0): g for k, g in load_real_runs().items()}
    for st in SETUPS:
        if st not in COMMON and campaign_file(st).exists():
            runs.update(load_campaign(st))
    return runs


def spread(runs: dict, quantiles=(50, 90)) -> pd.DataFrame:
    """The real runs' own run-to-run spread: per run (paper, policy, N) measured in several repeats, metric and
    quantile, (max - min) / median of the repeats' values in %, and the repeats' count."""
    import numpy as np

    rows = []
    groups: dict = {}
    for k in runs:
        groups.setdefault(k[:3], []).append(k)
    for (paper, pol, n), ks in groups.items():
        if len(ks) < 2:
            continue
        vals = [metric_values(runs[k]) for k in ks]
        for m in vals[0]:
            for q in quantiles:
                v = np.array([np.percentile(x[m], q) for x in vals])
                med = float(np.median(v))
                rows.append(dict(paper=paper, policy=pol, n_clients=n, metric=m, quantile=f"p{q}", repeats=len(ks),
                                 spread_pct=100 * float(v.max() - v.min()) / med if med else np.nan,
                                 spread=float(v.max() - v.min())))
    return pd.DataFrame(rows)


def _passes(key):
    """``draft_passes`` of the run ``key``'s clients: (rounds, client) -> the draft passes of each round."""
    wl = setup(key[0]).workload(key[2], "full", 0)
    return lambda r, c: draft_passes(r, wl.clients[c])


def core_slowness(runs: dict, keys) -> pd.DataFrame:
    """Per real run of ``keys``: its drafting rounds, the spread of their drafting CPU over the client's line (sd of
    its log) and the share of that variance common to the drafters on the core within ``measured_times.CORE_BIN_S``
    (``measured_times.core_share``: what the validated twin draws as the core's slowness), in %."""
    import numpy as np

    from ...serving.timemodels import measured_times

    rows = []
    for key in keys:
        m = measured_times.fit(runs, [key], _passes(key), None)
        f = np.concatenate([np.log(np.asarray(c.cpu_factors, float)) for c in m.clients])
        f = f[np.isfinite(f)]
        rows.append(dict(paper=key[0], policy=key[1], n_clients=key[2], repeat=key[3] if len(key) > 3 else 0,
                         rounds=len(f), sd_log_factor=float(np.std(f)) if len(f) else np.nan,
                         core_share_pct=100 * measured_times.core_share(m), bin_s=measured_times.CORE_BIN_S))
    return pd.DataFrame(rows)


def drafting_stretch(runs: dict, keys) -> pd.DataFrame:
    """Per real run of ``keys`` and number of draft passes k of a round (``draft_passes``, rounds after each client's
    first): the rounds, their median drafting CPU and wall time (ms) and the median wall / CPU: how much longer a
    drafting took than its own CPU, the other drafters on the core taking the rest."""
    import numpy as np

    from ...serving.log import real_rounds

    rows = []
    for key in keys:
        passes = _passes(key)
        per = [r.assign(k=passes(r, c)) for c, r in real_rounds(runs[key]).items()]
        d = pd.concat(per, ignore_index=True)
        d = d[(d["round"] > 0) & (d["k"] > 0) & (d["t_draft_cpu"] > 0)]
        for k, g in d.groupby("k"):
            rows.append(dict(paper=key[0], policy=key[1], n_clients=key[2], repeat=key[3] if len(key) > 3 else 0,
                             k_passes=int(k), rounds=len(g), cpu_ms=1e3 * float(g["t_draft_cpu"].median()),
                             wall_ms=1e3 * float(g["t_draft"].median()),
                             stretch=float(np.median(g["t_draft"] / g["t_draft_cpu"]))))
    return pd.DataFrame(rows)


def stochastic_section(paper: str, out, trace, prompt, scale: str = "full", seeds: int = SEEDS):
    """The stochastic twins (the validated one, ``STOCHASTIC``, the one the sweeps run, ``BEFORE``, the validated one
    with every held-out run pooled, not one run's per seed, ``PERIODS``, before that its core's slowness per 0.1 s, not
    per busy period, ``STAMPS``, before its drafters' wake-up was read on their
    clocks, ``LENGTHS``, before the prompts' own lengths, ``INTAKE``,
    before the server's intake, ``STAGGERED``, and before its staggered start, ``CORE_SPEED``, and with a core of
    constant speed, ``CONSTANT_CORE``, the two tried on that one, ``SLICED`` and ``QUEUED``, the one tried on the core of
    measured speed, ``WOKEN``, and the two tried on ``LENGTHS``, ``WAKE`` and ``WOKEN_VALIDATED``) against every
    committed real run of ``paper`` (N 1-2 at CI scale), ``seeds`` seeds each, its time models fitted on the other
    repeats (``held_out``), with the real runs' own held-out error beside them (``twin_attribution.own_repeats``):
    writes ``stochastic_vs_real.csv`` (per run, metric and quantile, with the queueing delay's mechanism,
    ``twin_attribution.queueing_mechanism``) and ``real_run_spread.csv`` (``spread`` over the repeats of ``REPEATS``,
    measured together: repeat 0 was measured in another campaign, its machine state another); returns (table,
    spread)."""
    from ...serving.analysis import twin_attribution as ta

    runs = _all_runs()
    keys = [k for k in runs if k[0] == paper and (scale == "full" or k[2] <= 2)]
    table = ta.attribution(contexts(runs, paper, trace, prompt, keys),
                           components=(BEFORE, CONSTANT_CORE, CORE_SPEED, STAGGERED, INTAKE, LENGTHS, STAMPS, PERIODS,
                                       STOCHASTIC, SLICED, QUEUED, WOKEN, WAKE, WOKEN_VALIDATED),
                           seeds=range(seeds), mechanism=True)
    repeats = {k: runs[k] for k in keys if k[3] > 0}   # the repeats' campaign
    table = pd.concat([table, ta.own_repeats(repeats)], ignore_index=True)
    sp = spread(repeats)
    plotting = _plotting()
    plotting.write_csv(table, out / "stochastic_vs_real.csv")
    plotting.write_csv(core_slowness(runs, keys), out / "core_slowness.csv")
    plotting.write_csv(drafting_stretch(runs, keys), out / "drafting_stretch.csv")
    plotting.write_csv(sp, out / "real_run_spread.csv")
    return table, sp


BINDING = "li2026_binding"   # WISP's setting with classes that bind (``binding_section``)


def binding_section(out, scale: str = "full", seeds: int = SEEDS, setting: str = BINDING,
                    components=(BEFORE, LENGTHS, STAMPS, PERIODS, STOCHASTIC)):
    """WISP's setting with classes that bind (``setting``, measured in a campaign of its own: ``campaign_file``): the
    stochastic twins (``components``: ``BEFORE``, ``LENGTHS``, ``STAMPS``, ``PERIODS`` and ``STOCHASTIC``, others for the doc) against every run of it (N 1-2
    at CI scale), ``seeds`` seeds each, time models fitted on the other repeats of its N (``held_out``), and their SLO
    outcomes per class (``serving.analysis.slo_outcomes``): writes ``slo_binding_vs_real.csv`` (as
    ``stochastic_vs_real.csv``), ``slo_binding_spread.csv`` (``spread``), ``slo_binding_outcomes.csv`` and its figure
    (per run, side and class: rounds, violation and deadline-miss rates, responses and their violations, the twin's
    seeds pooled) and ``slo_binding_gap.csv`` (WISP's rates minus FCFS's, real against each twin, per N and class:
    ``slo_outcomes.gap_summary``); returns (table, spread, outcomes, gap)."""
    from ...serving.analysis import slo_outcomes as so
    from ...serving.analysis import twin_attribution as ta

    runs = _all_runs()
    keys = [k for k in runs if k[0] == setting and (scale == "full" or k[2] <= 2)]
    if not keys:
        raise FileNotFoundError(f"{campaign_file(setting)}: no runs of {setting!r}; `python -m "
                                f"specedge.experiments.serving_validation.runs measure --setting {setting} --repeats 5` "
                                "measures them")
    trace, prompt = acceptances(setting)
    logs: dict = {}
    table = ta.attribution(contexts(runs, setting, trace, prompt, keys), components=components, seeds=range(seeds),
                           keep=logs)
    table = pd.concat([table, ta.own_repeats({k: runs[k] for k in keys})], ignore_index=True)
    ids = lambda k: dict(paper=k[0], policy=k[1], n_clients=k[2], repeat=k[3])   # noqa: E731
    tokens = SCENARIO.size("full")[1]     # per response: the runs' (``contexts`` builds every twin at full size)
    outcomes = pd.concat([so.by_class([runs[k]], tokens).assign(**ids(k), side="real") for k in keys]
                         + [so.by_class(v, tokens).assign(**ids(k), side=comp) for (k, comp), v in logs.items()],
                         ignore_index=True)
    outcomes = outcomes[["paper", "policy", "n_clients", "repeat", "side", "slo_class", "rounds", *so.RATES,
                         "responses", "response_violations", "response_violation_pct"]]
    gap = pd.concat([so.gap_summary(so.policy_gap(outcomes, "WISP", "FCFS"), rate=r).assign(rate=r) for r in so.RATES],
                    ignore_index=True)
    sp = spread({k: runs[k] for k in keys})
    plotting = _plotting()
    for name, df in (("vs_real", table), ("spread", sp), ("gap", gap)):
        plotting.write_csv(df, out / f"slo_binding_{name}.csv")
    labels = {BEFORE: "the sweeps' twin (domain i.i.d.)", LENGTHS: "the validated twin, its wake-up not on the clocks",
              STAMPS: "the validated twin, its core's slowness per 0.1 s",
              PERIODS: "the validated twin, every held-out run pooled", STOCHASTIC: "the validated twin",
              WOKEN: "woken first (not kept)"}
    plotting.save(so.figure(outcomes, labels).figure, outcomes, out, "slo_binding_outcomes")
    return table, sp, outcomes, gap


def binding(cmp, out, floor: float, scale: str = "full", seeds: int = SEEDS) -> pd.DataFrame:
    """A notebook's section on the setting with classes that bind: ``binding_section`` (its tables and figure in
    ``out``) and its checks in ``cmp`` (``add_binding_rows``); returns the violation rates per policy, N and class, real
    against each twin (means over the runs), for display."""
    result = binding_section(out, scale, seeds)
    add_binding_rows(cmp, result, floor, seeds=seeds)
    return result[2].pivot_table(index=["policy", "n_clients", "slo_class"], columns="side", values="violation_pct").round(1)


BINDING_WHAT = "WISP's setting with classes that bind (80 / 40 / 20 tok/s)"
VIOLATION_POINTS = 5.0   # a class's violation rate within this many points of the real run's (or its runs' own spread)


def add_binding_rows(cmp, binding, floor: float, what: str = BINDING_WHAT, seeds: int = SEEDS) -> None:
    """The checks of the stochastic twins on the setting with classes that bind (``binding_section``'s result): the
    compared metrics on every repeat at the runs' own spread (``add_stochastic_rows``); per class the violation rate,
    worst |difference| in percentage points over the runs, within ``VIOLATION_POINTS`` or the real runs' own spread
    (max - min over the repeats of a policy and N, worst) where larger; per N WISP's violation rate minus FCFS's, the
    twin's mean over the repeats against the real runs' mean, within the real runs' range of it."""
    from ...serving.analysis import slo_outcomes as so

    table, sp, outcomes, gap = binding
    add_stochastic_rows(cmp, table, sp, floor, what, seeds)
    real = outcomes[outcomes["side"] == "real"]
    own = real.groupby(["policy", "n_clients", "slo_class"])["violation_pct"].agg(lambda v: v.max() - v.min())
    n_runs = real.groupby(["policy", "n_clients", "repeat"]).ngroups
    for comp in (BEFORE, STOCHASTIC):
        for cls, err in so.run_errors(outcomes, comp).sort_index().items():
            sprd = float(own.xs(cls, level="slo_class").max())
            tol = max(VIOLATION_POINTS, sprd)
            c = "every class pooled" if cls == so.ALL else f"the {cls} tok/s class"
            cmp.check(f"{comp} vs real ({what})",
                      f"SLO violation rate (eq 4, share of rounds) of {c}, worst |difference| over {n_runs} runs x {seeds} "
                      "seeds (percentage points)", round(float(err), 1), 0.0, tolerance=round(tol, 1),
                      note=f"the real runs' own spread (max - min over the repeats, worst run): {sprd:.1f} points"
                           + ("; judged at it" if sprd > VIOLATION_POINTS else ""), unit="points")
        for n, g in gap[(gap["side"] == comp) & (gap["slo_class"] == so.ALL) & (gap["rate"] == "violation_pct")].groupby("n_clients"):
            r = g.iloc[0]
            cmp.check(f"{comp} vs real ({what})",
                      f"WISP's SLO violation rate minus FCFS's at N = {n}, every class pooled: the twin's mean over "
                      f"{int(r.repeats)} repeats ({r.twin_mean:+.1f} points) minus the real runs' ({r.real_mean:+.1f})",
                      round(float(r.error), 1), 0.0, tolerance=round(float(r.real_max - r.real_min), 1),
                      note=f"the real runs' range of it: {r.real_min:+.1f} to {r.real_max:+.1f} points (max - min: the "
                           "tolerance)", unit="points")


def twin_error_sections(paper: str, out, scale: str = "full", seeds: int = SEEDS):
    """``attribution_section`` and ``stochastic_section`` of ``paper`` with its acceptance models (``acceptances``):
    returns (the attribution's summary, the stochastic twins against the real runs, the real runs' spread)."""
    trace, prompt = acceptances(paper)
    _, summ = attribution_section(paper, out, trace, prompt, scale, seeds)
    table, sp = stochastic_section(paper, out, trace, prompt, scale, seeds)
    return summ, table, sp


def add_rows(cmp, real: pd.DataFrame, stoch, floor: float, what: str, mechanisms_: dict, twin_error_tables=None) -> None:
    """``serving.analysis.validation.add_rows`` (the replay's checks and the stochastic twin's against the replay, with the
    residuals' mechanisms ``mechanisms_``: ``notes``), then,
    with ``twin_error_tables`` (``twin_error_sections``' result), the stochastic twins' against the real runs
    (``add_stochastic_rows``)."""
    _validation.add_rows(cmp, real, stoch, floor, what, mechanisms_)
    if twin_error_tables is not None:
        add_stochastic_rows(cmp, twin_error_tables[1], twin_error_tables[2], floor, what)


def add_stochastic_rows(cmp, table: pd.DataFrame, sp: pd.DataFrame, floor: float, what: str, seeds: int = SEEDS) -> None:
    """The checks of the stochastic twin against the real runs (``checks.csv``; ours against ours): per twin kind
    (``BEFORE``, ``STOCHASTIC``), metric and quantile the worst |difference| over the held-out runs, a queueing delay
    within ``floor`` s counting as 0; first on the committed runs (repeat 0, measured on a quieter machine: 5 % at
    p50, 10 % at p90, ``TOLERANCE``; queueing ``QUEUE_P50`` % at p50), then on every repeat, judged at the real runs'
    own run-to-run spread where it is larger (``spread``'s worst run, given beside it)."""
    from ...serving.analysis import twin_attribution as ta

    worst_spread = sp.groupby(["metric", "quantile"])["spread_pct"].max() if len(sp) else pd.Series(dtype=float)
    for runs_label, t in (("committed runs, repeat 0", table[table["repeat"] == 0]), ("every repeat", table)):
        if t.empty:
            continue
        summ = ta.summary(t, floor)
        n_runs = t.groupby(["paper", "policy", "n_clients", "repeat"]).ngroups
        sizes = f"N {t.n_clients.min()}-{t.n_clients.max()}"
        for comp in (BEFORE, STOCHASTIC):
            name = f"{comp} vs real ({runs_label})"
            for m in [m for m in METRICS if m in set(summ.metric)]:
                for q, tol in TOLERANCE.items():
                    row = summ[(summ.component == comp) & (summ.metric == m) & (summ["quantile"] == q)]
                    if row.empty:
                        continue
                    sprd = float(worst_spread.get((m, q), float("nan")))
                    label = METRICS[m] + (f" (a difference within {1e3 * floor:.2f} ms counts as 0)" if m == "queue_s" else "")
                    label += f", worst |difference| at {q} over {what}, {sizes}, {n_runs} runs x {seeds} seeds"
                    tol = QUEUE_P50 if (m == "queue_s" and q == "p50") else tol
                    note = f"the real runs' own run-to-run spread (max - min over the repeats, worst run): {sprd:.1f} %"
                    if runs_label == "every repeat" and sprd == sprd and sprd > tol:
                        tol, note = sprd, note + "; judged at it"
                    cmp.check(name, label, round(float(row.error_pct.iloc[0]), 1), 0.0, tolerance=round(tol, 1),
                              note=note, unit="%")
    if ta.OWN in set(table["component"]):
        add_own_rows(cmp, table, floor, what, seeds)


def add_own_rows(cmp, table: pd.DataFrame, floor: float, what: str, seeds: int = SEEDS) -> None:
    """The checks of the validated stochastic twin (``STOCHASTIC``, its time models held out) against the real runs'
    own held-out error (``twin_attribution.own_repeats``: each repeat predicted by the median of its other repeats),
    on the runs that have repeats: per metric and quantile, (1) its mean |difference| over the runs beyond the real
    runs' own (``twin_attribution.beyond_own``), and (2) its bias, the geometric mean of twin / real over one N's runs
    (``twin_attribution.bias``) at the N where it is furthest beyond its tolerance; both within 5 % at p50, 10 % at
    p90 and ``QUEUE_P50`` % for the queueing delay at p50, a bias within twice its standard error where larger."""
    import numpy as np

    from ...serving.analysis import twin_attribution as ta

    comp = STOCHASTIC     # the held-out twin: ``BEFORE`` is fitted on the judged run's own medians
    if comp not in set(table["component"]):
        return
    excess = ta.beyond_own(table, floor, comp)
    biases = ta.bias(table[table["repeat"] > 0], floor, comp)
    for m in [m for m in METRICS if m in set(excess.metric)]:
        for q, tol in TOLERANCE.items():
            tol = QUEUE_P50 if (m == "queue_s" and q == "p50") else tol
            e = excess[(excess.metric == m) & (excess["quantile"] == q)]
            if e.empty:
                continue
            e = e.iloc[0]
            cmp.check(f"{comp} vs real (beyond the real runs' own error)",
                      f"{METRICS[m]}: mean |difference| at {q} over {what}'s {int(e.runs)} repeated runs x {seeds} "
                      "seeds, minus the real runs' own (each run against the median of its other repeats)",
                      round(float(e.excess_pct), 1), 0.0, tolerance=tol, unit="points of %",
                      note=f"mean |difference|: the twin {e.mean_pct:.1f} %, the real runs' own {e.own_mean_pct:.1f} %; "
                           f"worst run: the twin {e.worst_pct:.1f} %, the real runs' own {e.own_worst_pct:.1f} %")
            b = biases[(biases.metric == m) & (biases["quantile"] == q)].assign(
                allowed=lambda d: np.maximum(tol, 2 * d["se_pct"]))
            if b.empty:
                continue
            worst = b.loc[(b["bias_pct"].abs() - b["allowed"]).idxmax()]
            per_n = "; ".join(f"N = {int(r.n_clients)}: {r.bias_pct:+.1f} ± {r.se_pct:.1f} %" for r in b.itertuples())
            cmp.check(f"{comp} vs real (bias)",
                      f"{METRICS[m]}: the twin's bias at {q}, the geometric mean of twin / real over the repeated runs "
                      f"of one N of {what} ({seeds} seeds), at the N furthest beyond its tolerance",
                      round(float(worst.bias_pct), 1), 0.0, tolerance=round(float(worst.allowed), 1), unit="%",
                      note=f"per N, bias ± its standard error: {per_n}; tolerance {tol:g} %, or twice the "
                           "standard error where larger")


if __name__ == "__main__":
    raise SystemExit(main())
