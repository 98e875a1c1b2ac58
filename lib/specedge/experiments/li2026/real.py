"""WISP's serving side run for real on this machine (li2026 notebook §8): the twin's validation data.

Two real runs on the zoo's target-m:

- **WISP**: the gRPC verification server with WISP's batch former (Algorithm 1 on the eq (19) estimator
  fitted to ``data/li2026/verify_profile_zoo.csv``: ``serving.timemodels.estimator.zoo_fit``, δ from its prediction
  interval) and one drafter process per device (zoo drafts with the MLP stop rule, SLO classes 8 / 4 / 2 tok/s), prefix caches on.
- **Centralized**: the same devices' prompts generated on the server by transformers' continuous
  batching (``serving.sim.centralized.run_real``).

Wall-clock timings: ``make profiles`` (``python -m specedge.experiments.li2026.real measure``) writes them to
``REAL_RUNS`` and the full-scale notebook reads them, so rerunning the notebook leaves its outputs
unchanged; at CI scale the notebook runs them live (2 devices, 24 tokens), so every CI run exercises
the real multi-process system.
"""
from __future__ import annotations

import pandas as pd

from ... import paths
from ...serving.timemodels.estimator import zoo_fit
from ...serving.workload import Workload
from ..serving_validation.runs import devices

REAL_RUNS = paths.DATA / "li2026" / "real_runs.csv"


def workload(scale: str = "full", seed: int = 0) -> Workload:
    """3 devices x 2 prompts x 64 tokens (CI: 2 devices x 1 prompt x 24 tokens): the validation's WISP devices
    (``serving_validation.runs.devices``)."""
    n, prompts, tokens = (3, 2, 64) if scale == "full" else (2, 1, 24)
    return devices(n, prompts, tokens, seed)


def centralized_prompts(wl: Workload) -> list[list[int]]:
    """The devices' own prompts (``serving.real.drafter.prompt_stream``, at least 4), generated together on the server."""
    from ... import zoo
    from ...serving.real.drafter import prompt_stream

    tok = zoo.load_tokenizer()
    return [p for spec in wl.clients for p in prompt_stream(spec, tok)][: max(len(wl.clients), 4)]


def measure_real(scale: str = "full", seed: int = 0) -> pd.DataFrame:
    """Both real runs; one table with a ``policy`` column ("WISP": the server's per-round log, events
    included; "Centralized": one row per generated token)."""
    from ... import zoo
    from ...serving.sim import centralized
    from ...serving.policies.allocation import FixedS
    from ...serving.real.run import run_real
    from ...serving.policies.wisp_batching import WISPBatcher

    fit = zoo_fit(seed)
    wl = workload(scale, seed)
    n = len(wl.clients)
    rlog, _ = run_real(wl, WISPBatcher(fit.estimator, delta=fit.delta, memory_budget=1e12), FixedS(8 * n, n),
                       label="WISP", seed=seed)
    if (rlog["event"] != "").any():
        raise RuntimeError(f"real WISP run: unexpected events {rlog[rlog['event'] != ''].event.tolist()}")
    tokens = wl.clients[0].max_new_tokens
    clog = centralized.run_real(zoo.load_model("target-m").eval(), centralized_prompts(wl), tokens)
    return pd.concat([rlog.assign(policy="WISP"), clog.assign(policy="Centralized")], ignore_index=True)


def load_real_runs(path=REAL_RUNS) -> dict[str, pd.DataFrame]:
    """The committed real-run logs by policy (``make profiles`` measures them)."""
    from ...serving.real import real_logs

    return real_logs.load(path, "python -m specedge.experiments.li2026.real measure")


if __name__ == "__main__":
    from ...serving.real import real_logs

    raise SystemExit(real_logs.measure_main("measure WISP's real runs (and centralized serving) on this machine",
                                            measure_real, REAL_RUNS))
