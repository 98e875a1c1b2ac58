"""numpy's ``Generator.integers(n)``, number for number, without its per-call cost.

A scalar ``rng.integers(n)`` costs ~4 us, most of the twin's per-round cost for its acceptance draws.
numpy draws it (``random_bounded_uint64_fill``, n - 1 < 2**32) by Lemire's method on the bit
generator's 32-bit stream, which PCG64 makes from its 64-bit words, low half first
(``pcg64_next32``). ``Ints`` takes those words in blocks (``random_raw``) and applies the same method,
so ``Ints(rng).integers(n)`` returns what ``rng.integers(n)`` would, in the same order (tested against
numpy), as long as nothing else draws from ``rng`` meanwhile (the blocks run ahead of it).
"""
from __future__ import annotations

import numpy as np

_MASK = 0xFFFFFFFF


class Ints:
    """``integers(n)`` of ``rng`` (a PCG64 ``numpy.random.Generator`` no other code draws from)."""

    def __init__(self, rng: np.random.Generator, block: int = 2048):
        bitgen = rng.bit_generator
        state = bitgen.state
        if state["bit_generator"] != "PCG64":
            raise ValueError(f"rng: Ints reproduces PCG64's 32-bit stream, got {state['bit_generator']}")
        self._bitgen, self._block = bitgen, block
        self._buf: list[int] = [state["uinteger"]] if state["has_uint32"] else []
        self._i = 0

    def _refill(self):
        words = self._bitgen.random_raw(self._block)
        halves = np.empty(2 * self._block, np.uint64)
        halves[0::2], halves[1::2] = words & _MASK, words >> np.uint64(32)
        self._buf, self._i = halves.tolist(), 0

    def integers(self, n: int) -> int:
        """A uniform integer in [0, n), as ``rng.integers(n)``."""
        if n <= 1:
            if n == 1:
                return 0                       # numpy draws nothing for an empty range
            raise ValueError(f"n: need n >= 1, got {n}")
        if n > 1 << 32:
            raise ValueError(f"n: Ints covers n <= 2**32, got {n}")
        buf, i = self._buf, self._i
        if i >= len(buf):
            self._refill()
            buf, i = self._buf, 0
        m = buf[i] * n
        self._i = i + 1
        if (m & _MASK) < n:                    # Lemire's rejection: rare, exact
            threshold = (_MASK - (n - 1)) % n
            while (m & _MASK) < threshold:
                if self._i >= len(self._buf):
                    self._refill()
                m = self._buf[self._i] * n
                self._i += 1
        return m >> 32
