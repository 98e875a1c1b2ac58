"""The serving layer's policies and runtime models by name: one lookup over every registry (``build``).

Each builder is registered next to its class (``specedge.registry.Registry``); this module imports every
module that registers one, so that a name is found whatever the caller imported before.

=============== ===================================================================== =============================
kind            names (module)                                                        builder keywords
=============== ===================================================================== =============================
allocator       ``GOODSPEED``/``goodspeed``, ``Fixed-S``/``fixed``, ``Fixed-S ⌊C/N⌋``, capacity, clients, seed, eta,
                ``Random-S``/``random`` (``allocation``), ``goodspeed-slo``            beta, weights (client -> SLO
                (``slo_weighted_allocation``), ``as2`` (``as2_allocation``)            class), costs (eq 6's L_i)
former          ``sync``, ``fcfs`` (``batching``), ``wisp``, ``edf``, ``wisp-stop``, estimator, delta, memory_budget
                ``wisp-drop``, ``wisp-continue`` (``wisp_batching``: readings)
verify model    a profile's runtime kind: ``affine_tokens``, ``affine_interactions``  coefficients
                (``runtime.verify_model``)
device model    a profile's runtime kind: ``per_token``, ``draft_verify_comm``        coefficients
                (``time_models.draft_time``)
=============== ===================================================================== =============================
"""
from __future__ import annotations

from . import as2_allocation, slo_weighted_allocation, wisp_batching  # noqa: F401  (they register their builders)
from .allocation import ALLOCATORS
from .batching import FORMERS
from ..timemodels.runtime import VERIFY_KINDS
from ..timemodels.time_models import DEVICE_KINDS

KINDS = {"allocator": ALLOCATORS, "former": FORMERS, "verify model": VERIFY_KINDS, "device model": DEVICE_KINDS}


def build(kind: str, name: str, /, **context):
    """A fresh object of ``kind`` named ``name`` (``KINDS[kind].build``); errors list the known kinds and names."""
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {sorted(KINDS)}, got {kind!r}")
    return KINDS[kind].build(name, **context)


def allocator(name: str, /, **context):
    return build("allocator", name, **context)


def former(name: str, /, **context):
    return build("former", name, **context)
