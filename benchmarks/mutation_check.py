"""A small, predictable mutation check: one-line bugs in the library, each applied in turn, the tests
that should notice it run, and the file restored. The list names, for each bug, the test files that catch it.

    python benchmarks/mutation_check.py                 # every mutation (the older ones ~2 min each on 2 busy cores)
    python benchmarks/mutation_check.py --only twin     # the mutations whose name contains "twin"
    python benchmarks/mutation_check.py --test tests/unit/test_early_exit_edges.py   # those this file catches
    make mutants                                   # the same through the venv

Prints one line per mutation (caught / SURVIVED) and writes ``build/mutation_check.csv``; exits 1 if a
mutation survived. An entry whose line no longer occurs exactly once in its file is stale (the code
changed): the check refuses to start, naming it, so a survivor can never hide as "stale" (update the
entry; ``tests/unit/test_mutation_list.py`` checks the same in every test run). Hand-written rather than
``mutmut``: bugs a reviewer would make, each checked by the few test files that own the code, finish in
minutes on a 2-core machine, and read as a list.

Survivors (mutations the suite does not catch, with why it is accepted): none. The first seven of the list
each survived the suite before their tests were written. The entries from "a serving log's per-round series"
on aim at helpers only notebooks reached and at the telling case of the rules that decide a row (a tie at a
threshold, the sign of a paired difference, an absolute value, an exit matched on (accepted, token), a
caller's environment against the portable caps, a timing record changing a README line): 45 entries, 45 caught
in ~5 min on a 2-core AMD EPYC (4-11 s each, ``--test`` with their seven test files).
The entries from "codec: a drafted token of probability 0" on reach the serving processes' logic in process
(the wire codec, the verifier's caches, the drafter's loop, the server's pass, round-wait and late-round rules,
the run's memory check and collected log, the event loop) and WISP's drafting and estimator rows at their ties:
20 entries, 20 caught in ~3.5 min on a 2-core AMD EPYC (5-17 s each, ``--test`` with their thirteen test files).
The 15 entries under "the modules
the unit lane reached least" aim at nine modules the unit tests once reached least (their tests: one file each, named
after its module): 15 caught, 4-10 s each on the same machine.
The 19 entries from "venkatesha2025 Table 9" on aim at modules a result depends on that the unit tests had left under
90 % of their lines (venkatesha2025's tables, runs and real-pair section, the early exits' build, the predictor's command
and figures, the zoo's corpus and real-pair fetch): 19 caught in ~2.5 min on the same host (4-13 s each, ``--test``
with their eleven test files).
The 6 entries "host state: ..." aim at the host's state (its process, the draws that read it, the cross-kind products
and fit, the state within a run, the twin's clock): 6 caught, 6-10 s each on the same host.
The 4 entries "pass shape: ..." aim at the passes' factors drawn by the batch's new tokens (the sparse bins' widening,
the tokens each factor is recorded with, the batch's tokens summed, the kind's wiring): 4 caught, 7-9 s each on the same host.
The 5 entries "one run: ..." aim at each seed's time models fitted on one held-out run (the seeds' turn over the
policies, each run's mate of one client, the kind's wiring, the seeds' runs) and at the judge of a variant's seeds
(their median): 5 caught, 6-8 s each.
The 5 entries "intake steals: ..." aim at the requests taken in during a pass (their count, what they took from it, the
pass they lengthen, once or again) and at the kind's wiring: 5 caught, 8-10 s each.
The check edits files of ``lib/specedge`` (and ``tools/``) in place and restores them even on Ctrl-C; it refuses to start
when one of them has uncommitted changes (``git diff``), so a restore cannot lose work.
"""
from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "specedge"


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str             # under lib/specedge; tools/... under the repository (``path_of``)
    old: str              # must occur exactly once
    new: str
    tests: tuple[str, ...]


M = Mutation
MUTATIONS = [
    # --- seven mutations that once survived the suite
    M("eq (3): eta and 1 - eta swapped", "serving/policies/allocation.py",
      "alpha_hat[c] = keep_a * alpha_hat[c] + eta * (o.accept_prob_sum / drafted)",
      "alpha_hat[c] = eta * alpha_hat[c] + keep_a * (o.accept_prob_sum / drafted)", ("tests/unit/test_tran2025.py",)),
    M("estimator.fit: its estimator without the intercept", "serving/timemodels/estimator.py",
      "est = Estimator(*model.coef_, model.intercept_)", "est = Estimator(*model.coef_, 0.0)",
      ("tests/unit/test_wisp_serving.py",)),
    M("twin: uplink time ignored", "serving/sim/twin.py",
      "else float(td + tu))", "else float(td))", ("tests/unit/test_twin_timing.py", "tests/unit/test_serving_twin.py")),
    M("SLO outcomes: a pass ending at its deadline misses it", "serving/analysis/slo_outcomes.py",
      "ns(r[\"end\"].to_numpy(float)) > ns(", "ns(r[\"end\"].to_numpy(float)) >= ns(", ("tests/unit/test_slo_outcomes.py",)),
    M("validation runs: a setting's own campaign fitted with the common repeats", "experiments/serving_validation/runs.py",
      "return dict(SCENARIO.setups)[key[0]].campaign if key[0] in SETUPS else \"\", key[3] == 0",
      "return \"\", key[3] == 0", ("tests/unit/test_twin_validation_runs.py",)),
    M("twin error: a violation rate's error read from the pooled row", "serving/analysis/slo_outcomes.py",
      "t = outcomes[outcomes[\"slo_class\"] != ALL]", "t = outcomes",
      ("tests/unit/test_slo_outcomes.py", "tests/unit/test_twin_verdicts.py")),
    M("twin error: responses compared run by run, not pooled over a policy and N's runs", "serving/analysis/slo_outcomes.py",
      "cells = t.groupby([\"side\", \"policy\", \"n_clients\", \"slo_class\"])",
      "cells = t.groupby([\"side\", \"policy\", \"n_clients\", \"repeat\", \"slo_class\"])", ("tests/unit/test_slo_outcomes.py",)),
    M("own repeats: a run predicted by the median of all its repeats, itself included", "serving/analysis/twin_attribution.py",
      "y = float(np.median([np.percentile(vals[k][m], q) for k in ks if k != key]))",
      "y = float(np.median([np.percentile(vals[k][m], q) for k in ks]))", ("tests/unit/test_twin_error_attribution.py",)),
    M("twin bias: the arithmetic mean of the ratios, not the geometric", "serving/analysis/twin_attribution.py",
      "t = t.assign(log_ratio=np.log(t[\"twin\"] / t[\"real\"])", "t = t.assign(log_ratio=(t[\"twin\"] / t[\"real\"] - 1)",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("own rows: the bias judged at the N of the largest bias, not the furthest beyond its tolerance",
      "experiments/serving_validation/runs.py",
      "worst = b.loc[(b[\"bias_pct\"].abs() - b[\"allowed\"]).idxmax()]", "worst = b.loc[b[\"bias_pct\"].abs().idxmax()]",
      ("tests/unit/test_twin_validation_runs.py",)),
    M("staggered start: the server's queue open before the last client has started", "serving/sim/twin.py",
      "barrier=None if starts is None else max(starts),", "barrier=None if starts is None else min(starts),",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("staggered start: a fitted run's starts not taken after its first client's", "serving/timemodels/measured_times.py",
      "return tuple(float(t) for t in row - row.min())", "return tuple(float(t) for t in row)",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("server intake: a request waits for it even when the server is idle", "serving/sim/processes.py",
      "                if began <= loop.now < ends:", "                if True:",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("server intake: the wait drawn without how far into the pass its request came", "serving/timemodels/measured_times.py",
      "        return self.bins[min(int(into // self.bin_s), self.n)]()", "        return self.bins[0]()",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("server intake: the link taken from every request, not the idle server's", "serving/log.py",
      "    reached = sent + float(np.median(up[idle & np.isfinite(up)]))", "    reached = sent + float(np.nanmedian(up))",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("prompt lengths: the first prompt's length for every prompt", "serving/sim/twin.py",
      "            unseen = lengths[prompt % len(lengths)] if made == 0 else 1", "            unseen = lengths[0] if made == 0 else 1",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("prompt lengths: a prompt's first verification with its drafts counted", "serving/log.py",
      "    return {int(c): tuple(int(x) for x in (g[\"n_new\"] - g[\"S\"])) for c, g in first.groupby(\"client\")}",
      "    return {int(c): tuple(int(x) for x in g[\"n_new\"]) for c, g in first.groupby(\"client\")}",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("drafting start: the uplink not taken off the arrival", "serving/log.py",
      "    return rows[\"arrival\"] - rows[\"up\"] - rows[\"t_draft\"]", "    return rows[\"arrival\"] - rows[\"t_draft\"]",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("batch order: a batch's requests in their order of drafting, not of arrival", "serving/log.py",
      "    for b in _synchronous(rows, n, \"arrival\"):", "    for b in _synchronous(rows, n, \"began\"):",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("batch order: a batch with a client missing kept", "serving/log.py",
      "        if len(b) == n:", "        if len(b) <= n:",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("drafters' wake-up: a client's own next round counted among the others busy", "serving/log.py",
      "side=\"right\") - np.searchsorted(closes, ends, side=\"right\") - 1",
      "side=\"right\") - np.searchsorted(closes, ends, side=\"right\")",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("drafters' wake-up: the reply's way and the wait in hand drawn from different rounds", "serving/timemodels/measured_times.py",
      "        return tuple(pairs[int(draw())])", "        return pairs[int(draw())][0], pairs[int(draw())][1]",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("drafters' wake-up: the next drafting starts once the post-reply work is done, the wait in hand ignored",
      "serving/sim/processes.py", "                        if rest > 0:", "                        if False:",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("drafters' wake-up: the clients just answered not counted busy", "serving/sim/processes.py",
      "            sim.busy += len(batch)", "            sim.busy += 0",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("reply order: a pass's requests put in the order their next requests arrived", "serving/log.py",
      '    for b in _synchronous(d, n, "hand"):', '    for b in _synchronous(d, n, "arrival"):',
      ("tests/unit/test_twin_error_attribution.py",)),
    M("wake-up on the drafters' clocks: a reply stamped in hand before it came", "serving/sim/processes.py",
      "                seen = max(received, at)", "                seen = at",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("wake-up on the drafters' clocks: a drafting stamped later than its work leaves time for", "serving/sim/processes.py",
      "max(t0, min(seen + hand, loop.now - out[0]))", "max(t0, seen + hand)",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("wake-up on the drafters' clocks: the way less the CPU once the reply is in", "serving/timemodels/measured_times.py",
      "                 wake=woken if stamped else _held(woken, held_post), wake_stamps=stamped, host=process, steal=stolen)",
      "                 wake=_held(woken, held_post), wake_stamps=stamped, host=process, steal=stolen)",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("queueing mechanism: a request arriving as its own pass begins counted inside it", "serving/analysis/twin_attribution.py",
      "    i, inside = running_pass(start, start + tv, arrival, at_start=False)",
      "    i, inside = running_pass(start, start + tv, arrival)", ("tests/unit/test_sliced_core.py",)),
    M("server intake: a request reaching the server as a pass begins not counted in it", "serving/log.py",
      "    j, inside = running_pass(start, start + tv, reached)",
      "    j, inside = running_pass(start, start + tv, reached, at_start=False)",
      ("tests/unit/test_twin_error_attribution.py",)),
    M("core slowness: one bin for every run at the same time", "serving/timemodels/measured_times.py",
      "    key = run[ok].astype(np.int64) * (1 << 40) + group", "    key = 0 * run[ok].astype(np.int64) * (1 << 40) + group",
      ("tests/unit/test_core_speed.py",)),
    M("busy periods: a drafting that begins as the last ends opens a new period", "serving/timemodels/measured_times.py",
      "        opened = began[order] > np.maximum.accumulate(", "        opened = began[order] >= np.maximum.accumulate(",
      ("tests/unit/test_core_speed.py",)),
    M("busy periods: a period closed by the latest drafting's end, not the longest's", "serving/timemodels/measured_times.py",
      "np.maximum.accumulate(np.concatenate(([-np.inf], ended[order][:-1])))",
      "np.concatenate(([-np.inf], ended[order][:-1]))",
      ("tests/unit/test_core_speed.py",)),
    M("busy periods: the slowness drawn anew for every job, the core idle or not", "serving/sim/processes.py",
      "        if self.core.idle():\n            self.value = self.draw()",
      "        if True:\n            self.value = self.draw()",
      ("tests/unit/test_core_speed.py",)),
    M("busy periods: each drafting's residual of the 0.1 s interval, not of its period", "serving/timemodels/measured_times.py",
      "                             period_residuals=within[at:at + n] if n else np.ones(1))",
      "                             period_residuals=residuals[at:at + n] if n else np.ones(1))",
      ("tests/unit/test_core_speed.py",)),
    M("host state: its parts forget at twice their correlation times", "serving/timemodels/host_state.py",
      "            keep = np.exp(-(now - self.t) / np.asarray(TIMES_S))",
      "            keep = np.exp(-(now - self.t) / (2 * np.asarray(TIMES_S)))", ("tests/unit/test_host_state.py",)),
    M("host state: a draw's noise of variance 1 - loading^2, whatever the state's variance", "serving/timemodels/host_state.py",
      "        self.noise = np.sqrt(max(1.0 - self.loading ** 2 * process.variance, 0.0))",
      "        self.noise = np.sqrt(max(1.0 - self.loading ** 2, 0.0))", ("tests/unit/test_host_state.py",)),
    M("host state: the pairs of one kind after the other only, not before", "serving/timemodels/host_state.py",
      "                    for sign, (i0, i1) in ((1.0, after), (-1.0, before)):",
      "                    for sign, (i0, i1) in ((1.0, after),):", ("tests/unit/test_host_state.py",)),
    M("host state: the fitted correlation not scaled by the weights' sum", "serving/timemodels/host_state.py",
      "        return weight * (mean - lam[ia] * lam[ib] * correlation(dt, w) / w.sum())",
      "        return weight * (mean - lam[ia] * lam[ib] * correlation(dt, w))", ("tests/unit/test_host_state.py",)),
    M("host state: within a run, the run's level kept", "serving/timemodels/host_state.py",
      "        return State(self.loadings, np.where(np.isinf(TIMES_S), 0.0, self.weights))",
      "        return State(self.loadings, self.weights)", ("tests/unit/test_host_state.py",)),
    M("host state: the twin never gives the host its clock", "serving/sim/twin.py",
      "        times.host.bind(lambda: sim.loop.now)", "        pass", ("tests/unit/test_host_state.py",)),
    M("pass shape: a bin with too few passes not widened to its neighbours", "serving/timemodels/measured_times.py",
      "            while np.count_nonzero((at >= lo) & (at <= hi)) < SHAPE_MIN and",
      "            while np.count_nonzero((at >= lo) & (at <= hi)) < 0 and", ("tests/unit/test_pass_shape.py",)),
    M("pass shape: each factor recorded with its batch's cached tokens, not its new ones",
      "serving/timemodels/measured_times.py",
      "        tokens.append(np.array([f[0] for f in feats], int))",
      "        tokens.append(np.array([f[2] for f in feats], int))", ("tests/unit/test_pass_shape.py",)),
    M("pass shape: a batch's shape read off its first request alone", "serving/timemodels/measured_times.py",
      "shaped(sum(p.n_new for p in batch))", "shaped(batch[0].n_new)", ("tests/unit/test_pass_shape.py",)),
    M("pass shape: the kind never draws by shape", "experiments/serving_validation/runs.py",
      '                                         pass_shape="shape" in has, steal="steal" in has)',
      '                                         pass_shape=False, steal="steal" in has)', ("tests/unit/test_pass_shape.py",)),
    M("one run: the policies never alternate (the first policy's runs only)", "experiments/serving_validation/runs.py",
      "policies[(s // len(repeats) + s % len(repeats)) % len(policies)])", "policies[0])",
      ("tests/unit/test_one_run.py",)),
    M("one run: each seed's run of one client any run's, not its mate", "experiments/serving_validation/runs.py",
      "            a = mate if mate in runs and mate != key else ones[j % len(ones)] if ones else None",
      "            a = ones[j % len(ones)] if ones else None", ("tests/unit/test_one_run.py",)),
    M("one run: the kind keeps the pooled models", "experiments/serving_validation/runs.py",
      "                drawn, alone = one(s)", "                pass", ("tests/unit/test_one_run.py",)),
    M("one run: every seed the first run's", "experiments/serving_validation/runs.py",
      "        j = seed % len(order)", "        j = 0", ("tests/unit/test_one_run.py",)),
    M("one run: a variant's value the seeds' mean, not their median", "serving/analysis/twin_attribution.py",
      "float(np.median([np.percentile(v[m], q) for v in vals]))", "float(np.mean([np.percentile(v[m], q) for v in vals]))",
      ("tests/unit/test_one_run.py",)),
    M("intake steals: a request stamped as its own pass begins counted as taken in", "serving/log.py",
      "    j, inside = running_pass(start, stop, rows[\"arrival\"].to_numpy(float), at_start=False)",
      "    j, inside = running_pass(start, stop, rows[\"arrival\"].to_numpy(float), at_start=True)",
      ("tests/unit/test_intake_steals.py",)),
    M("intake steals: a pass's time off its core taken whole, not beyond the passes that took none in",
      "serving/timemodels/measured_times.py", "    base = float(np.median(none)) if len(none) else 0.0",
      "    base = 0.0", ("tests/unit/test_intake_steals.py",)),
    M("intake steals: the pass runs for its drawn time only", "serving/sim/processes.py",
      "                while sim.stolen > 0:", "                while False:", ("tests/unit/test_intake_steals.py",)),
    M("intake steals: a request taken in during the lengthened part takes nothing", "serving/sim/processes.py",
      "                    sim.passing = (start, loop.now + extra)", "                    pass",
      ("tests/unit/test_intake_steals.py",)),
    M("intake steals: the kind draws no steal", "experiments/serving_validation/runs.py",
      '                                         pass_shape="shape" in has, steal="steal" in has)',
      '                                         pass_shape="shape" in has, steal=False)',
      ("tests/unit/test_intake_steals.py",)),
    M("drafters' core: the slowness of time 0 for every job", "serving/sim/processes.py",
      "self.core.add(gen, work * self.speed(self.loop.now))", "self.core.add(gen, work * self.speed(0.0))",
      ("tests/unit/test_core_speed.py",)),
    M("woken-first core: a woken job cuts the running slice short", "serving/sim/processes.py",
      "            self.hold = self.since + self.slice * ((now - self.since) // self.slice + 1)",
      "            self.hold = None", ("tests/unit/test_woken_first.py",)),
    M("twin: only the first request's verify time", "serving/sim/processes.py",
      "tv = verify(batch)", "tv = verify(batch[:1])",
      ("tests/unit/test_twin_timing.py", "tests/unit/test_serving_twin.py")),
    M("sweep key: a dataclass's last field ignored", "sweep.py",
      "for f in dataclasses.fields(value)}", "for f in dataclasses.fields(value)[:-1]}", ("tests/processes/test_sweep.py",)),
    M("real_logs.save: two columns swapped", "serving/real/real_logs.py",
      "df.assign(device=cpu_name()",
      'df.rename(columns={"t_send": "t_round", "t_round": "t_send"}).assign(device=cpu_name()',
      ("tests/processes/test_real_logs.py",)),
    M("real-run log: t_round and t_send swapped", "serving/real/drafter.py",
      "t_round=t_recv - t_round0,\n                                 t_send=t_recv - reply.t_reply,",
      "t_send=t_recv - t_round0,\n                                 t_round=t_recv - reply.t_reply,",
      ("tests/processes/test_real_logs.py",)),
    # --- sampling
    M("sampling: accept when u <= ratio is u > ratio", "sampling.py",
      "ok = u < acceptance_ratio(p_x, q_x)", "ok = u > acceptance_ratio(p_x, q_x)", ("tests/unit/test_sampling.py",)),
    M("sampling: residual without subtracting q", "sampling.py",
      "residual = torch.clamp(p_next - q_next * (~bonus)[:, None], min=0)",
      "residual = torch.clamp(p_next, min=0)", ("tests/unit/test_sampling.py",)),
    M("sampling: E tokens per round with gamma instead of gamma + 1", "sampling.py",
      "(g + 1 if a == 1 else (1 - a ** (g + 1)) / (1 - a))", "(g + 1 if a == 1 else (1 - a ** g) / (1 - a))",
      ("tests/unit/test_sampling.py",)),
    M("sampling: acceptance probability max instead of min", "sampling.py",
      "return torch.minimum(p, q).sum(-1)", "return torch.maximum(p, q).sum(-1)", ("tests/unit/test_sampling.py",)),
    # --- serving policies
    M("SyncRounds: verifies before every client is queued", "serving/policies/batching.py",
      "if not active <= first.keys():", "if not first:", ("tests/unit/test_serving_twin.py", "tests/unit/test_tran2025.py")),
    M("FCFS: newest first", "serving/policies/batching.py",
      "ordered = sorted(queue, key=lambda r: (r.arrival, r.client, r.round))",
      "ordered = sorted(queue, key=lambda r: (-r.arrival, r.client, r.round))",
      ("tests/unit/test_serving_twin.py", "tests/unit/test_wisp_serving.py")),
    M("slo: eq (6) budget ignores the network time", "serving/slo.py",
      "- _check(\"t_draft\", t_draft) - _check(\"t_network\", t_network))", "- _check(\"t_draft\", t_draft))",
      ("tests/unit/test_wisp_serving.py",)),
    M("GOODSPEED: eq (4) X without smoothing", "serving/policies/allocation.py",
      "X[c] = keep_x * X[c] + beta * o.tokens",
      "X[c] = o.tokens", ("tests/unit/test_tran2025.py",)),
    # --- the predicates that decide comparison rows (edge cases: tests/unit/test_claims_edges.py)
    M("claims.above: a tie at the margin passes", "claims.py",
      "bool(arr[0] > arr[1] + m)", "bool(arr[0] >= arr[1] + m)", ("tests/unit/test_claims_edges.py",)),
    M("claims.within: the stated range's ends excluded", "claims.py",
      "low <= v <= high", "low < v < high", ("tests/unit/test_claims_edges.py",)),
    M("claims.argmax_is: a two-way tie for the top passes", "claims.py",
      "if ties > 1:", "if ties > 2:", ("tests/unit/test_claims_edges.py",)),
    M("claims.argmax_is: a lead exactly at the margin passes", "claims.py",
      "holds = winner == expected and lead > m", "holds = winner == expected and lead >= m",
      ("tests/unit/test_claims_edges.py",)),
    M("claims.interval_at_most: a tie over seeds fails", "claims.py",
      'verdict in ("below", "tie")', 'verdict == "below"', ("tests/unit/test_claims_edges.py",)),
    M("claims.strictly_increasing: a lower bound on the smaller side decides", "claims.py",
      "if np.all(d > 0) and lower.any():", "if False:", ("tests/unit/test_claims_edges.py",)),
    # --- solvers
    M("venkatesha2025: SD latency without communication", "solvers/venkatesha2025.py",
      "(_gamma(gamma) * _nonneg(\"T_d\", T_d) + _nonneg(\"T_c\", T_c)\n",
      "(_gamma(gamma) * _nonneg(\"T_d\", T_d) + 0 * _nonneg(\"T_c\", T_c)\n", ("tests/unit/test_venkatesha2025.py",)),
    M("venkatesha2025: FSD latency with rho and 1 - rho swapped", "solvers/venkatesha2025.py",
      "+ _nonneg(\"T_t\", T_t) + (1 - rho) * _nonneg(\"t_sync\", t_sync))",
      "+ _nonneg(\"T_t\", T_t) + rho * _nonneg(\"t_sync\", t_sync))", ("tests/unit/test_venkatesha2025.py",)),
    # --- the modules the unit lane reached least: the sweep, the notebook runner, coverage counting, profiling, the arena's
    # capacity and figures, zheng2025's and zhu2025's figures, the real pair's card step (tests named after each module)
    M("sweep: joblib's -1 read as all cores but one", "sweep.py",
      "n_jobs = min(n_jobs if n_jobs > 0 else max(1, cores() + 1 + n_jobs), workers())",
      "n_jobs = min(n_jobs if n_jobs > 0 else max(1, cores() + n_jobs), workers())", ("tests/unit/test_sweep_backends.py",)),
    M("sweep.local: fans out only above the threshold, not at it", "sweep.py",
      "n_jobs = 1 if len(configs) < MIN_PARALLEL_POINTS else workers()",
      "n_jobs = 1 if len(configs) <= MIN_PARALLEL_POINTS else workers()", ("tests/unit/test_sweep_backends.py",)),
    M("notebooks.kernel_env: zero sweep workers when jobs exceed cores", "notebooks.py",
      "return {**host.PORTABLE_ENV, sweep.WORKERS_ENV: str(max(1, cores // jobs))}",
      "return {**host.PORTABLE_ENV, sweep.WORKERS_ENV: str(cores // jobs)}", ("tests/unit/test_notebooks.py",)),
    M("notebooks.run: a seed of 0 dropped as falsy", "notebooks.py",
      "if v is not None and k in declared}", "if v and k in declared}", ("tests/unit/test_notebooks.py",)),
    M("coverage.statement_table: a setting row outranks an analytic one", "coverage.py",
      'how = next((k for k in (*COVERING, "setting") if k in held), None)',
      'how = next((k for k in ("setting", *COVERING) if k in held), None)', ("tests/unit/test_coverage.py",)),
    M("zheng2025 output_dir: every zoo pair in one folder (the profile's name)", "experiments/zheng2025/figures.py",
      'variant = [f"pair-{pair_slug([draft, target])}"] if (draft, target) != DEFAULT_PAIR else []',
      'variant = [f"pair-{pair_profile_name([draft, target]).removeprefix(\'measured_\')}"] '
      'if (draft, target) != DEFAULT_PAIR else []', ("tests/unit/test_zheng2025_figures.py",)),
    M("zheng2025 Fig 3 rows: alpha read in row order, not K order", "experiments/zheng2025/figures.py",
      'by_t = {T: grp.sort_values("K").alpha.values for T, grp in frame.groupby("temperature")}',
      'by_t = {T: grp.alpha.values for T, grp in frame.groupby("temperature")}', ("tests/unit/test_zheng2025_figures.py",)),
    M("arena regime map: no 1 % floor under the colour scale", "experiments/edge_sd_arena/figures.py",
      "vmax = max(float(regime_map.margin_pct.max()), 1.0)", "vmax = float(regime_map.margin_pct.max())",
      ("tests/unit/test_arena_figures.py",)),
    M("arena Pareto labels: a neighbour on the right looked for within 2 dx, not 4", "experiments/edge_sd_arena/figures.py",
      "if not any(0 < u <= 4 * dx for u, _ in near):", "if not any(0 < u <= 2 * dx for u, _ in near):",
      ("tests/unit/test_arena_figures.py",)),
    M("arena capacity: attainment 1 at a capacity never run", "experiments/edge_sd_arena/capacity.py",
      'attainment_at_capacity=1 - v / t if t else float("nan")', "attainment_at_capacity=1 - v / t if t else 1.0",
      ("tests/unit/test_arena_capacity.py",)),
    M("arena capacity table: a repeated label searched twice", "experiments/edge_sd_arena/capacity.py",
      "for label in dict.fromkeys(labels)]", "for label in labels]", ("tests/unit/test_arena_capacity.py",)),
    M("zhu2025 Fig 9: the g0 closest to the paper without the absolute value", "experiments/zhu2025/figures.py",
      "closest = int((g_needed.reduction_pct - p).abs().idxmin())", "closest = int((g_needed.reduction_pct - p).idxmin())",
      ("tests/unit/test_zhu2025_figures.py",)),
    M("zhu2025 Fig 8: the heuristic's cause given when it is the best benchmark", "experiments/zhu2025/figures.py",
      "if m.idxmin() == zs.HEURISTIC:", "if m.idxmin() != zs.HEURISTIC:", ("tests/unit/test_zhu2025_figures.py",)),
    M("real-pair card: alpha(K) without the full vocabulary", "experiments/model_zoo/realpair_card.py",
      "zheng2025.topk_alpha(q, p, (*KS, len(tok)), temperatures=(0.0, 1.0))",
      "zheng2025.topk_alpha(q, p, KS, temperatures=(0.0, 1.0))", ("tests/unit/test_realpair_card.py",)),
    M("profiling CLI: a thread count of 0 accepted", "profiling.py",
      "if args.threads < 1:", "if args.threads < 0:", ("tests/unit/test_profiling.py",)),
    # --- the README's timings
    M("timings: skipped tests counted as passed", "tools/timings.py",
      'ran = count["tests"] - count["failures"] - count["errors"] - count["skipped"]',
      'ran = count["tests"] - count["failures"] - count["errors"]', ("tests/unit/test_timings.py",)),
    M("notebooks: a partial run recorded as the complete one", "notebooks.py",
      'complete = args.scale == "full" and not (args.names or args.profile or args.seed is not None)',
      'complete = args.scale == "full"', ("tests/unit/test_timings.py",)),
    # --- a serving log's per-round series (helpers the notebooks reach; edge cases: tests/unit/test_round_series_edges.py)
    M("round_series.time_split: the mean reply instead of the slowest", "serving/analysis/round_series.py",
      'send=("t_send", "max")', 'send=("t_send", "mean")', ("tests/unit/test_round_series_edges.py",)),
    M("round_series.time_split: a batch starting before the last ended adds negative receiving time",
      "serving/analysis/round_series.py", '.clip(lower=0).sum()', '.sum()', ("tests/unit/test_round_series_edges.py",)),
    M("round_series.time_split: the first batch waits from the quickest drafter", "serving/analysis/round_series.py",
      'rows["t_draft"].max()', 'rows["t_draft"].min()', ("tests/unit/test_round_series_edges.py",)),
    M("round_series.utility_curve: running sums instead of running means", "serving/analysis/round_series.py",
      "xbar = x.cumsum().div(np.arange(1, len(x) + 1), axis=0)", "xbar = x.cumsum()", ("tests/unit/test_round_series_edges.py",)),
    M("round_series.utility_while_all_active: the first batch without every client included", "serving/analysis/round_series.py",
      "t = len(full) if full.all() else int(np.argmin(full))", "t = len(full) if full.all() else int(np.argmin(full)) + 1",
      ("tests/unit/test_round_series_edges.py",)),
    M("round_series.stabilisation: a value exactly at the margin counts as unsettled", "serving/analysis/round_series.py",
      "> rel * abs(final))", ">= rel * abs(final))", ("tests/unit/test_round_series_edges.py",)),
    M("round_series.stabilisation: the margin without the absolute value", "serving/analysis/round_series.py",
      "> rel * abs(final))", "> rel * final)", ("tests/unit/test_round_series_edges.py",)),
    M("round_series.expected_goodput: the round at skip left out", "serving/analysis/round_series.py",
      '(log["batch"] >= skip)', '(log["batch"] > skip)', ("tests/unit/test_round_series_edges.py",)),
    M("round_series.peaks_in_bands: a plateau's first round is no peak", "serving/analysis/round_series.py",
      "(t[1:-1] >= t[2:])", "(t[1:-1] > t[2:])", ("tests/unit/test_round_series_edges.py",)),
    M("round_series.peaks_in_bands: a peak on the band's upper edge is outside", "serving/analysis/round_series.py",
      "(p.tokens <= p[c] + p[w])", "(p.tokens < p[c] + p[w])", ("tests/unit/test_round_series_edges.py",)),
    # --- heterogeneous clients
    M("client_mix.client_alpha: every accept of a round counted, not the leading run", "serving/analysis/client_mix.py",
      "acc_n.append(int(np.argmin(ok)) if not ok.all() else len(ok))", "acc_n.append(int(ok.sum()))", ("tests/unit/test_round_series_edges.py",)),
    M("client_mix.spread: max minus mean", "serving/analysis/client_mix.py",
      "float(a.max() - a.min())", "float(a.max() - a.mean())", ("tests/unit/test_round_series_edges.py",)),
    M("client_mix.pooled_traces: a draft in two sources let through", "serving/analysis/client_mix.py",
      "if d in seen:", "if d in seen and seen[d] == name:", ("tests/unit/test_round_series_edges.py",)),
    # --- early exits: stated definitions, the agreement table, Fig 4a/4b verdicts, the gamma sweep (tests/unit/test_early_exit_edges.py)
    M("early_exit.sim: the earliest exit matched on the token alone", "early_exit/sim.py",
      "if e.key == self.key), self.n_layers)", "if e.token == self.token), self.n_layers)", ("tests/unit/test_early_exit_edges.py",)),
    M("early_exit.sim: an exit agrees on the token alone (stated miss rate)", "early_exit/sim.py",
      "return any(e.key == r.key for e in r.exits)", "return any(e.token == r.token for e in r.exits)", ("tests/unit/test_early_exit_edges.py",)),
    M("early_exit.sim: stated avg EE over every round, the final where none agrees", "early_exit/sim.py",
      "for r in seq if _agrees(r)]", "for r in seq]", ("tests/unit/test_early_exit_edges.py",)),
    M("early_exit.sim: stated miss rate counts the hits", "early_exit/sim.py",
      "[not _agrees(r) for r in rounds]", "[_agrees(r) for r in rounds]", ("tests/unit/test_early_exit_edges.py",)),
    M("early_exit.offline.agreement_table: depth over the exits without the final", "early_exit/offline.py",
      "depth=e / (agree.exit.max() + 1)", "depth=e / agree.exit.max()", ("tests/unit/test_early_exit_edges.py",)),
    M("venkatesha2025_verdicts.plateau_threads: reaching the share exactly is not enough", "experiments/venkatesha2025/verdicts.py",
      "gain >= share * gain[-1]", "gain > share * gain[-1]", ("tests/unit/test_early_exit_edges.py",)),
    M("venkatesha2025_verdicts.first_gamma_below: exactly the level counts as below", "experiments/venkatesha2025/verdicts.py",
      "below = g[y < level]", "below = g[y <= level]", ("tests/unit/test_early_exit_edges.py",)),
    M("venkatesha2025_verdicts.speedup_rises: a dip of exactly the tolerance fails", "experiments/venkatesha2025/verdicts.py",
      "np.diff(spd) >= -tolerance * spd[:-1]", "np.diff(spd) > -tolerance * spd[:-1]", ("tests/unit/test_early_exit_edges.py",)),
    M("venkatesha2025_verdicts.server_priority_gain_shrinks: an equal gain passes", "experiments/venkatesha2025/verdicts.py",
      '> (m7[cq, "fifo", hi] - m7[cq, "priority", hi])', '>= (m7[cq, "fifo", hi] - m7[cq, "priority", hi])', ("tests/unit/test_early_exit_edges.py",)),
    M("early_exit.draft_length: the paired interval's sign flipped (smaller gamma minus larger)",
      "early_exit/draft_length.py", "d = (w[b] - w[a]).to_numpy()", "d = (w[a] - w[b]).to_numpy()", ("tests/unit/test_early_exit_edges.py",)),
    M("early_exit.draft_length: AR->SD as the mean of per-prompt ratios", "early_exit/draft_length.py",
      'speedup_ar_sd=s["ar"] / s["sd"]', 'speedup_ar_sd=(p["ar"][idx] / p["sd"][idx]).mean(-1)', ("tests/unit/test_early_exit_edges.py",)),
    # --- predictor operating points, the host's caps, the README's timings, a headline row (tests/unit/test_glue_edges.py)
    M("predictor.operating.fpr_ratio: a zero MLP FPR gives inf, not NaN", "predictor/operating.py",
      "fpr[mlp].replace(0.0, np.nan)", "fpr[mlp]", ("tests/unit/test_glue_edges.py",)),
    M("predictor.operating.balanced_weight: rejected over accepted", "predictor/operating.py",
      "return n1 / n0", "return n0 / n1", ("tests/unit/test_glue_edges.py",)),
    M("host.portable: a caller's environment overrides the caps", "host.py",
      "return {**(dict(os.environ) if env is None else env), **PORTABLE_ENV}",
      "return {**PORTABLE_ENV, **(dict(os.environ) if env is None else env)}", ("tests/unit/test_glue_edges.py",)),
    M("host.write_kernel_env: a kernel spec's own settings override the caps", "host.py",
      'spec["env"] = {**spec.get("env", {}), **PORTABLE_ENV}', 'spec["env"] = {**PORTABLE_ENV, **spec.get("env", {})}',
      ("tests/unit/test_glue_edges.py",)),
    M("timings.load: the venv record ignored (the README line loses the build time)", "tools/timings.py",
      "if p.stem in (*COMMANDS, VENV)}", "if p.stem in COMMANDS}", ("tests/unit/test_glue_edges.py",)),
    M("timings.block: every host named without a GPU", "tools/timings.py",
      "'a GPU' if gpu else 'no GPU'", "'no GPU'", ("tests/unit/test_glue_edges.py",)),
    M("zhu2025 headline: the error without its absolute value", "experiments/zhu2025/figures.py",
      "if abs(p - ours) > tolerance else reading", "if ours - p > tolerance else reading", ("tests/unit/test_glue_edges.py",)),
    M("zhu2025 headline: an error exactly at the tolerance names a cause", "experiments/zhu2025/figures.py",
      "if abs(p - ours) > tolerance else reading", "if abs(p - ours) >= tolerance else reading", ("tests/unit/test_glue_edges.py",)),
    # --- venkatesha2025's closed forms and Table 5 timings, the scenario's device classes (tests/unit/test_solver_scenario_edges.py)
    M("venkatesha2025.rho_for_speedup: the largest reachable speedup (rho = 0) is NaN", "solvers/venkatesha2025.py",
      "return np.where(rho >= 0, np.minimum(rho, 1.0), np.nan)", "return np.where(rho > 0, np.minimum(rho, 1.0), np.nan)",
      ("tests/unit/test_solver_scenario_edges.py",)),
    M("venkatesha2025.timings_table: drafting per token, not per round of 4", "solvers/venkatesha2025.py",
      "T_d_gamma4_ms=1e3 * 4 * t.T_d", "T_d_gamma4_ms=1e3 * t.T_d", ("tests/unit/test_solver_scenario_edges.py",)),
    M("venkatesha2025.Timings.from_profile: a round's drafting taken as one token's", "solvers/venkatesha2025.py",
      'return cls(co["T_d_s"] / co["gamma"], co["T_t_s"], co["T_c_s"], threads)',
      'return cls(co["T_d_s"], co["T_t_s"], co["T_c_s"], threads)', ("tests/unit/test_solver_scenario_edges.py",)),
    M("venkatesha2025.Timings.from_profile: zero communication refused", "solvers/venkatesha2025.py",
      'co["T_t_s"] <= 0 or co["T_c_s"] < 0:', 'co["T_t_s"] <= 0 or co["T_c_s"] <= 0:', ("tests/unit/test_solver_scenario_edges.py",)),
    M("scenario.draft_s: devices past the mix take its last class", "serving/scenario.py",
      "return dict(self.device_classes)[classes[device % len(classes)]]",
      "return dict(self.device_classes)[classes[min(device, len(classes) - 1)]]", ("tests/unit/test_solver_scenario_edges.py",)),
    # --- the rules naming a tie's or a loss's cause, and the arena's paired verdict (tests/unit/test_cause_rules_edges.py)
    M("tran2025 _tie_or_loss: the paired difference's sign flipped", "experiments/tran2025/figures.py",
      "lo, hi = claims.mean_interval(np.asarray(a) - np.asarray(b))[1:]",
      "lo, hi = claims.mean_interval(np.asarray(b) - np.asarray(a))[1:]", ("tests/unit/test_cause_rules_edges.py",)),
    M("tran2025 _tie_or_loss: a tie named a loss (lower end below 0)", "experiments/tran2025/figures.py",
      'return "" if c_holds else "unexplained" if hi < 0 else "models"',
      'return "" if c_holds else "unexplained" if lo < 0 else "models"', ("tests/unit/test_cause_rules_edges.py",)),
    M("edge_sd_arena.results._paired: the sign ignored", "experiments/edge_sd_arena/results.py",
      "d = sign * (a - b)", "d = a - b", ("tests/unit/test_cause_rules_edges.py",)),
    M("edge_sd_arena.results._paired: seeds of one side only paired with NaN", "experiments/edge_sd_arena/results.py",
      'a, b = a.align(b, join="inner")', 'a, b = a.align(b, join="outer")', ("tests/unit/test_cause_rules_edges.py",)),
    M("edge_sd_arena.results._paired: a tie read as a loss", "experiments/edge_sd_arena/results.py",
      '("wins" if lo > 0 else "loses" if hi < 0 else "tie")', '("wins" if lo > 0 else "loses" if lo < 0 else "tie")',
      ("tests/unit/test_cause_rules_edges.py",)),
    M("zoo.acceptance.greedy_rounds: the window not capped before the last token", "zoo/acceptance.py",
      "g = min(gamma, max_new_tokens - j - 1)", "g = min(gamma, max_new_tokens - j)",
      ("tests/unit/test_zoo_acceptance.py",)),
    M("arena_capacity.first_bracket: a violation rate exactly at the level counts as a miss", "experiments/edge_sd_arena/capacity.py",
      "capacity.rate(int(v), int(t)) > 1 - scn.capacity_attainment", "capacity.rate(int(v), int(t)) >= 1 - scn.capacity_attainment",
      ("tests/unit/test_bracket_dataset_edges.py",)),
    M("predictor.dataset.build_dataset: positions after the first rejection kept as rejections", "predictor/dataset.py",
      'out = traces[acc | rej].copy()\n    out["label"] = acc[acc | rej].astype(int).to_numpy()',
      'out = traces[acc | rej | ~acc].copy()\n    out["label"] = acc[acc | rej | ~acc].astype(int).to_numpy()', ("tests/unit/test_bracket_dataset_edges.py",)),
    # --- the serving processes' logic and WISP's rows, reached in process (unit lane)
    M("codec: a drafted token of probability 0 taken (the ratio p/q divides by it)", "serving/real/codec.py",
      "if (chosen <= 0).any():", "if (chosen < 0).any():", ("tests/unit/test_codec_wire.py",)),
    M("codec: a top-K index equal to the vocabulary size taken", "serving/real/codec.py",
      "if idx.min() < 0 or idx.max() >= vocab:", "if idx.min() < 0 or idx.max() > vocab:", ("tests/unit/test_codec_wire.py",)),
    M("verifier: the cache keeps one slot past the accepted prefix", "serving/real/verifier.py",
      "keep = len(r.new_tokens) + res.accepted", "keep = len(r.new_tokens) + res.accepted + 1",
      ("tests/unit/test_verifier_sessions.py",)),
    M("drafter: a round may draft up to the last token (no room for the verdict's)", "serving/real/drafter.py",
      "s = max(0, min(int(s), self.max_new_tokens - len(self.output) - 1))",
      "s = max(0, min(int(s), self.max_new_tokens - len(self.output)))", ("tests/unit/test_drafter_loop.py",)),
    M("server: a pass of exactly max_pass_tokens split in two", "serving/real/server.py",
      "if out[-1] and size + n > self.max_pass_tokens:", "if out[-1] and size + n >= self.max_pass_tokens:",
      ("tests/unit/test_server_servicer.py",)),
    M("server: the round wait from the lower of two middle gaps", "serving/real/server.py",
      "med = sorted(self._gaps)[len(self._gaps) // 2]", "med = sorted(self._gaps)[(len(self._gaps) - 1) // 2]",
      ("tests/unit/test_server_servicer.py",)),
    M("server: a round that waited exactly the round wait goes on without the missing", "serving/real/server.py",
      "if waited <= self._round_wait():", "if waited < self._round_wait():", ("tests/unit/test_server_servicer.py",)),
    M("run.check_memory: drafters needing exactly 90 % of the memory refused", "serving/real/run.py",
      "if need > 0.9 * available:", "if need >= 0.9 * available:", ("tests/unit/test_run_orchestration.py",)),
    M("run._collect: the server's accepted + 1 kept over the drafter's committed tokens", "serving/real/run.py",
      'log["tokens"] = log["tokens_committed"].where(log["tokens_committed"].notna(), log["tokens"])',
      'log["tokens"] = log["tokens"]', ("tests/unit/test_run_orchestration.py",)),
    M("engine: run(until) runs the event due exactly at until", "serving/sim/engine.py",
      "if heap[0][0] >= end:", "if heap[0][0] > end:", ("tests/unit/test_engine_event_loop.py",)),
    M("real_logs.save: rounded to milliseconds", "serving/real/real_logs.py",
      ".round(6).to_csv(out, index=False)", ".round(3).to_csv(out, index=False)", ("tests/unit/test_real_logs_files.py",)),
    M("verify_diagnostics.session_repeats: shapes timed once counted as repeats", "serving/timemodels/verify_diagnostics.py",
      'return d[d["shape"].map(d["shape"].value_counts()) > 1]', 'return d[d["shape"].map(d["shape"].value_counts()) >= 1]',
      ("tests/unit/test_verify_diagnostics_tables.py",)),
    M("log.packed_products: eq (18)'s own-request count instead of the packed row's", "serving/log.py",
      "return sum(n for n, _ in pairs) * sum(n + c for n, c in pairs)", "return sum(n * (n + c) for n, c in pairs)",
      ("tests/unit/test_verify_profiling_cli.py", "tests/unit/test_verify_diagnostics_tables.py")),
    M("li2026_estimator_figures.fit_figures: the signed error instead of its absolute value", "experiments/li2026/estimator_figures.py",
      'pred["abs_error_ms"] = 1000 * (pred.predicted - pred.measured).abs()',
      'pred["abs_error_ms"] = 1000 * (pred.predicted - pred.measured)', ("tests/unit/test_estimator_figures.py",)),
    M("li2026_real.centralized_prompts: only one prompt per device", "experiments/li2026/real.py",
      "[: max(len(wl.clients), 4)]", "[: len(wl.clients)]", ("tests/unit/test_li2026_real_runs.py",)),
    M("li2026_realpair.run_log: the traced window itself refused", "experiments/li2026/realpair.py",
      "if point.setting.gamma > WINDOW:", "if point.setting.gamma >= WINDOW:", ("tests/unit/test_li2026_real_runs.py",)),
    M("li2026_drafting.table11: the fastest of the three under 1 ms instead of the slowest", "experiments/li2026/drafting.py",
      "claims.below(float(mean[fast].max()), 1.0)", "claims.below(float(mean[fast].min()), 1.0)",
      ("tests/unit/test_li2026_drafting_rows.py",)),
    M("li2026_drafting_waste._fig1: rounds with nothing drafted kept", "experiments/li2026/drafting_waste.py",
      "f1 = f1[f1.drafted > 0]", "f1 = f1[f1.drafted >= 0]", ("tests/unit/test_li2026_drafting_rows.py",)),
    M("li2026_estimator_figures.fig4_rows: a batch as slow as the slower request alone counts as slower",
      "experiments/li2026/estimator_figures.py",
      'bool(r["Batched A+B"] > max(r["Solo A"], r["Solo B"]))', 'bool(r["Batched A+B"] >= max(r["Solo A"], r["Solo B"]))',
      ("tests/unit/test_li2026_estimator_figures_rows.py",)),
    M("li2026_estimator_figures.fig4_rows: Solo B's spread of exactly a quarter of Solo A's counts as flat",
      "experiments/li2026/estimator_figures.py",
      'spread["Solo B"] < spread["Solo A"] / 4}', 'spread["Solo B"] <= spread["Solo A"] / 4}',
      ("tests/unit/test_li2026_estimator_figures_rows.py",)),
    # --- venkatesha2025's tables, real-pair section, runs and Fig 6; early exits' build, passes and card; the predictor's
    #     command, figures and helpers; the zoo's corpus and real-pair fetch (each caught by its module's own test file)
    M("venkatesha2025 Table 9: the client's null (batches run one after another, b x) taken as 1x", "experiments/venkatesha2025/tables.py",
      'else (float(b), f"the batch run sequentially', 'else (1.0, f"the batch run sequentially',
      ("tests/unit/test_venkatesha2025_tables_rows.py",)),
    M("venkatesha2025 FSD check: the concurrent-vs-simulated gap without its absolute value", "experiments/venkatesha2025/tables.py",
      "gap = float((cc.miss_rate_concurrent - cc.miss_rate_sim).abs().mean())",
      "gap = float((cc.miss_rate_concurrent - cc.miss_rate_sim).mean())", ("tests/unit/test_venkatesha2025_tables_rows.py",)),
    M("venkatesha2025 Table 6: a cache-miss rate of exactly 1 not read as 'every pre-draft missed'", "experiments/venkatesha2025/tables.py",
      'cause="our-reading" if r.miss_rate >= 1 else "models"', 'cause="our-reading" if r.miss_rate > 1 else "models"',
      ("tests/unit/test_venkatesha2025_tables_rows.py",)),
    M("venkatesha2025 real pair: the threaded run's tolerance without its one round", "experiments/venkatesha2025/realpair.py",
      "tolerance=round((hi - lo) / 2 + 1 / checks, 4)", "tolerance=round((hi - lo) / 2, 4)",
      ("tests/unit/test_venkatesha2025_realpair_stages.py",)),
    M("venkatesha2025 runs: Alpaca given MT-bench's chat prompts", "experiments/venkatesha2025/runs.py",
      "texts = zoo.eval_prompts(domain, (part + 1) * n_prompts)[part * n_prompts:]",
      "texts = zoo.eval_prompts(domain, (part + 1) * n_prompts)[:n_prompts]", ("tests/unit/test_venkatesha2025_runs_and_fig6.py",)),
    M("venkatesha2025 Fig 6: every panel draws gamma = 4", "experiments/venkatesha2025/figures.py",
      "sub = grid[grid.gamma == g]", "sub = grid[grid.gamma == 4]", ("tests/unit/test_venkatesha2025_runs_and_fig6.py",)),
    M("early_exit._training_texts: a domain reaching exactly its characters takes one more record", "early_exit/__init__.py",
      "if n >= chars_per_domain:", "if n > chars_per_domain:", ("tests/unit/test_early_exit_build.py",)),
    M("early_exit.bottleneck_rank: the adapters' down bias left out of the size", "early_exit/__init__.py",
      "(2 * d + 1)", "(2 * d)", ("tests/unit/test_early_exit_build.py",)),
    M("early_exit.passes.local_profile: c per round, not per drafted token", "early_exit/passes.py",
      "c=round(td / gamma / tt, 4)", "c=round(td / tt, 4)", ("tests/unit/test_early_exit_passes_profile.py",)),
    M("early_exit.passes.pair_passes: the exits' cost shared over every position, the final's too", "early_exit/passes.py",
      'out["exit_step_s"] = (out["verify_exits_s"] - out["verify_s"]) / (ee.n_layers - 1)',
      'out["exit_step_s"] = (out["verify_exits_s"] - out["verify_s"]) / ee.n_layers', ("tests/unit/test_early_exit_passes_profile.py",)),
    M("early_exit.zoo_adapters card: the trainable share as a fraction, not a percentage", "early_exit/zoo_adapters.py",
      'pct_params=round(100 * m["param_fraction"], 3)', 'pct_params=round(m["param_fraction"], 3)',
      ("tests/unit/test_early_exit_zoo_adapters_card.py",)),
    M("predictor.cli meta: the traces' window read as their smallest drafted count", "predictor/cli.py",
      'window=int(traces["drafted"].max())', 'window=int(traces["drafted"].min())', ("tests/unit/test_predictor_cli_commands.py",)),
    M("li2026_drafting_figures.confusion_figure: the accepted row's cells swapped", "experiments/li2026/drafting_figures.py",
      "m = np.array([[c.TN_pct, c.FP_pct], [c.FN_pct, c.TP_pct]]) / 100",
      "m = np.array([[c.TN_pct, c.FP_pct], [c.TP_pct, c.FN_pct]]) / 100", ("tests/unit/test_predictor_figures_data.py",)),
    M("predictor.dataset.test_prompts: the per-domain cap keeps the last ids", "predictor/dataset.py",
      "out[domain] = ids if per_domain is None else ids[:per_domain]",
      "out[domain] = ids if per_domain is None else ids[-per_domain:]", ("tests/unit/test_predictor_parts_edges.py",)),
    M("predictor.waste.theorem1_real: a predictor's Rec1 and FPR swapped", "predictor/waste.py",
      'rec1, fpr = (float(op.loc[LABELS[fam], c]) for c in ("Rec1", "FPR"))',
      'rec1, fpr = (float(op.loc[LABELS[fam], c]) for c in ("FPR", "Rec1"))', ("tests/unit/test_predictor_parts_edges.py",)),
    M("predictor.traces.zoo_prompts: a long prompt cut to its first tokens", "predictor/traces.py",
      "_encode(tokenizer, t)[-max_len:]", "_encode(tokenizer, t)[:max_len]", ("tests/unit/test_predictor_parts_edges.py",)),
    M("zoo.corpus._chunks: a paragraph filling a chunk exactly starts a new one", "zoo/corpus.py",
      "if cur and len(cur) + len(para) > size:", "if cur and len(cur) + len(para) >= size:", ("tests/unit/test_zoo_corpus_parts.py",)),
    M("zoo.corpus._is_eval: a hash exactly at the fraction held out", "zoo/corpus.py",
      "return h / 0xFFFFFFFF < fraction", "return h / 0xFFFFFFFF <= fraction", ("tests/unit/test_zoo_corpus_parts.py",)),
    M("zoo.realpair.verified_gguf: a joined file of the right size kept without its hash", "zoo/realpair.py",
      "if out.stat().st_size == spec.gguf_bytes and sha256_of(out) == spec.gguf_sha256:",
      "if out.stat().st_size == spec.gguf_bytes:", ("tests/unit/test_zoo_realpair_steps.py",)),
]


def pytest(tests, python: str, timeout: float) -> int:
    """pytest's return code on ``tests`` with this checkout's library first on the path."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'lib'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               PYTHONHASHSEED="0", SPECEDGE_SCALE="ci")
    return subprocess.run([python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout).returncode


def path_of(m: Mutation) -> Path:
    """The file a mutation edits: a library module's path under lib/specedge, a script of tools/ under the root."""
    return ROOT / m.file if m.file.startswith("tools/") else LIB / m.file


def stale(mutations) -> list[str]:
    """The entries whose line does not occur exactly once in their file (with how often it does)."""
    out = []
    for m in mutations:
        path = path_of(m)
        n = path.read_text().count(m.old) if path.exists() else None
        if n != 1:
            out.append(f"{m.name} ({m.file}: {'no file' if n is None else f'{n}x'})")
    return out


def run_one(m: Mutation, python: str, timeout: float) -> tuple[str, float]:
    path = path_of(m)
    src = path.read_text()
    t0 = time.perf_counter()
    try:
        path.write_text(src.replace(m.old, m.new))
        try:
            rc = pytest(m.tests, python, timeout)
            status = "caught" if rc == 1 else ("SURVIVED" if rc == 0 else f"error rc={rc}")
        except subprocess.TimeoutExpired:
            status = "caught (timeout)"
    finally:
        path.write_text(src)
    return status, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="run the mutations whose name contains this text")
    ap.add_argument("--test", action="append", default=[], metavar="PATH",
                    help="run the mutations that this test file catches (repeatable; with --only: both must hold)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutation's tests")
    ap.add_argument("--out", default=str(ROOT / "build" / "mutation_check.csv"))
    ap.add_argument("--no-baseline", action="store_true", help="skip the run of every test file unmutated first")
    args = ap.parse_args(argv)
    todo = [m for m in MUTATIONS if args.only.lower() in m.name.lower()
            and (not args.test or set(m.tests) & {str(Path(t)) for t in args.test})]
    if not todo:
        raise SystemExit(f"no mutation's name contains {args.only!r}" + (f" and is caught by {args.test}" if args.test else ""))
    if bad := stale(todo):
        raise SystemExit("stale mutation entries (their line is not in the code exactly once): " + "; ".join(bad))
    files = sorted({str(path_of(m)) for m in todo})
    dirty = subprocess.run(["git", "diff", "--name-only", "--", *files], cwd=ROOT, capture_output=True, text=True).stdout
    if dirty.strip():
        raise SystemExit(f"uncommitted changes in {dirty.split()}: commit or stash them first (the check edits these files)")
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    if not args.no_baseline:              # a mutation is only "caught" if its tests pass without it
        tests = sorted({t for m in todo for t in m.tests})
        if pytest(tests, sys.executable, 4 * args.timeout) != 0:
            raise SystemExit(f"the tests fail without any mutation: python -m pytest {' '.join(tests)}")
    rows = []
    for m in todo:
        status, secs = run_one(m, sys.executable, args.timeout)
        rows.append(dict(mutation=m.name, file=m.file, status=status, seconds=round(secs, 1), tests=" ".join(m.tests)))
        print(f"{status:>16}  {secs:6.1f} s  {m.name}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["mutation"])
        w.writeheader()
        w.writerows(rows)
    survived = [r["mutation"] for r in rows if r["status"] == "SURVIVED"]
    print(f"{len(rows)} mutations: {sum(r['status'].startswith('caught') for r in rows)} caught, "
          f"{len(survived)} survived -> {args.out}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
