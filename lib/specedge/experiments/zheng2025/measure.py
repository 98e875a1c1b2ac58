"""zheng2025's measuring step: forward-pass times of zoo (or hub/local) models on this machine, written
to a profile (``zoo_cpu`` for the zoo's own pair, committed; ``measured_<names>`` otherwise) that the
TK-SLT notebook reads instead of timing while it runs.

    python -m specedge.experiments.zheng2025.measure measure [--models a,b] [--profile name]
"""
from __future__ import annotations

import argparse
import datetime as dt

import torch

from ... import hardware, zoo
from ...profiling import device_description, pass_times
from .figures import pair_profile_name


def main(argv=None) -> int:
    """``python -m specedge.experiments.zheng2025.measure measure --models a,b,...``: time zoo models into a profile."""
    ap = argparse.ArgumentParser(description="Measure T_SLM / T_LLM of zoo (or hub/local) models on this CPU.")
    ap.add_argument("command", choices=["measure"])
    ap.add_argument("--models", default=",".join(zoo.DRAFTS + zoo.TARGETS))
    ap.add_argument("--profile", default=None,
                    help="profile name (default: zoo_cpu for zoo models, measured_<names> otherwise)")
    ap.add_argument("--force", action="store_true", help="replace a profile that holds other models")
    ap.add_argument("--rate-bps", type=float, default=100e6,
                    help="assumed uplink rate (the paper's value was lost in extraction)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    path = hardware.profile_path(args.profile or pair_profile_name(models))   # a name or a .yaml path
    name = path.stem
    if path.exists() and not args.force:
        held = sorted(hardware.load_profile(path).runtime)
        if sorted(models) != held:
            raise SystemExit(f"{path} holds pass times of {held}; measuring {models} would replace them. Pass "
                             f"--profile <new name> (default for these models: {pair_profile_name(models)}) or --force")
    for m in models:
        zoo.resolve(m)          # unknown names fail here, before any timing
    torch.set_num_threads(args.threads)
    runtime = {}
    for name_ in models:
        t = pass_times(zoo.load_model(name_))
        runtime[name_] = {"model": "seconds per forward pass, batch 1, 64 cached tokens",
                          "decode_s": t[1], "verify5_s": t[5]}
        print(f"{name_}: 1 token {t[1] * 1e3:.3f} ms, 5 tokens {t[5] * 1e3:.3f} ms")
    prof = {"name": name,
            "source": "measured by `python -m specedge.experiments.zheng2025.measure measure` (zoo models, random prompts)",
            "description": "Forward-pass times of the embedded model zoo on this machine, and an ASSUMED "
                           f"{args.rate_bps / 1e6:g} Mbit/s uplink for TK-SLT's L(K).",
            "measured": {"device": device_description("cpu"), "threads": args.threads,
                         "date": dt.date.today().isoformat()},
            "devices": {"cpu": {"description": device_description("cpu")}},
            "links": {"uplink": {"description": "assumed device-to-base-station uplink", "rate_bps": args.rate_bps,
                                 "latency_s": 0.0}},
            "runtime": runtime,
            "constants": {"bits_per_probability": 16}}
    print("wrote", hardware.save_profile(prof, path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
