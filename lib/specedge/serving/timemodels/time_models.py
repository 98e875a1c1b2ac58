"""Time models as named objects, built once from a profile and a scenario: the device, the link, the verifier.

- ``DraftTime``: a device's seconds per drafted token; ``k`` draft-model passes take k x that. Built from a
  profile's runtime entry by its kind (``DEVICE_KINDS``: ``per_token``'s c_tok, ``draft_verify_comm``'s
  T_d / γ) or given directly.
- ``Link``: one device's own link: each way RTT/2 + 8 x bytes / bandwidth, the request's bytes a function of
  its S (``codec.payload_bytes``: the wire codec's own messages), the reply ``interfaces.REPLY_BYTES``.
- the verifier: a profile's verification model by kind (``runtime.verify_model``); ``noisy`` makes the true
  pass time of an estimate (a log-normal factor, median 1), so that a former deciding with the estimate is
  not an oracle.
- ``times(drafts, link, verify)``: the ``interfaces.Times`` the engine consumes, built in one place.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ... import hardware
from ..interfaces import REPLY_BYTES
from ...registry import Registry
from ..timegrid import on_grid
from ..interfaces import Times


@dataclass(frozen=True)
class DraftTime:
    """A device drafting at ``s_per_token`` seconds per draft-model pass."""
    s_per_token: float

    def __call__(self, k: int) -> float:
        return k * self.s_per_token


@dataclass(frozen=True)
class DraftRate:
    """A device drafting ``tokens_per_s`` draft-model passes a second, as a paper states it: k passes take
    k / ``tokens_per_s`` (the quotient itself; ``DraftTime`` of the inverse can differ in the last digit)."""
    tokens_per_s: float

    def __call__(self, k: int) -> float:
        return k / self.tokens_per_s


DEVICE_KINDS = Registry("drafting runtime kind")   # a profile's runtime kind -> the device's DraftTime


@DEVICE_KINDS.register("per_token")
def _per_token(coefficients):
    return DraftTime(float(coefficients["c_tok"]))


@DEVICE_KINDS.register("draft_verify_comm")
def _draft_verify_comm(coefficients):
    return DraftTime(float(coefficients["T_d_s"]) / int(coefficients["gamma"]))


def draft_time(profile: "str | hardware.Profile", runtime: str) -> DraftTime:
    """The drafting model of ``profile``'s entry ``runtime``, by its kind (``DEVICE_KINDS``)."""
    prof = hardware.as_profile(profile)
    if runtime not in prof.runtime:
        raise KeyError(f"{prof.path or prof.name}: no runtime entry {runtime!r} (have {sorted(prof.runtime)})")
    kind = prof.kind(runtime)
    if kind not in DEVICE_KINDS:
        raise ValueError(f"{prof.path or prof.name}: runtime.{runtime} is of kind {kind!r}; a drafting model needs "
                         f"one of {DEVICE_KINDS.names()}")
    return DEVICE_KINDS.build(kind, coefficients=prof.coefficients(runtime))


@dataclass(frozen=True)
class Link:
    """One device's link: ``rtt_s`` round trip, ``bandwidth_bps`` each way, ``request_bytes(S)`` per request."""
    rtt_s: float
    bandwidth_bps: float
    request_bytes: Callable[[int], int]
    reply_bytes: int = REPLY_BYTES

    def up(self, client: int, s: int) -> float:
        """The request's time on the link (latency + transmission)."""
        return self.rtt_s / 2 + 8 * self.request_bytes(s) / self.bandwidth_bps

    def down(self, client: int) -> float:
        """The reply's time on the link, what the device waits."""
        return self.rtt_s / 2 + 8 * self.reply_bytes / self.bandwidth_bps

    def send(self, client: int) -> float:
        """The server's own time putting the reply on the link (the log's ``t_send``)."""
        return 8 * self.reply_bytes / self.bandwidth_bps


@dataclass(frozen=True)
class Latency:
    """A link of ``one_way_s`` each way and no transmission time: the request, the reply and the server's
    send all take the latency; the bytes logged are the engine's defaults (``Times.bytes_up``/``bytes_down``)."""
    one_way_s: float
    reply_bytes: int = Times.bytes_down

    def request_bytes(self, s: int) -> int:
        return Times.bytes_up(s)

    def up(self, client: int, s: int) -> float:
        return self.one_way_s

    def down(self, client: int) -> float:
        return self.one_way_s

    def send(self, client: int) -> float:
        return self.one_way_s


def noisy(model, sigma: float, seed: int):
    """The 'true' verification time: the estimate ``model(batch)`` times a log-normal factor (median 1),
    ``sigma`` its log's spread; ``model`` itself when ``sigma`` <= 0."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 23]))
    if sigma <= 0:
        return model
    # the normals drawn 4096 at a time: numpy fills a block with the numbers one call each would give
    normals = iter(())

    def verify(batch):
        nonlocal normals
        z = next(normals, None)
        if z is None:
            normals = iter(rng.normal(0.0, sigma, 4096).tolist())
            z = next(normals)
        # math.exp (the C library's, the same on every x86 host, where numpy's has an AVX-512 kernel) and
        # the result on the nanosecond grid: the times every later decision sums carry no host's last digits
        return on_grid(float(model(batch)) * math.exp(z))
    return verify


def times(drafts: Sequence[DraftTime | DraftRate], link: Link | Latency, verify) -> Times:
    """The engine's ``Times`` of devices drafting at ``drafts``, each behind its own ``link``, and a verifier."""
    return Times(draft=list(drafts), verify=verify, up=link.up, down=link.down, bytes_up=link.request_bytes,
                 bytes_down=link.reply_bytes, send=link.send)
