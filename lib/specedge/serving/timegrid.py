"""Times on an integer-nanosecond grid, so that a decision does not depend on a float's last digits.

The twin's decisions compare sums of float seconds (a deadline against now + an estimated verify time,
eq 15; now against a latest start, eq 17; a round's time against what its class allows, eq 4). Two x86
hosts can differ in the last bits of such sums (numpy dispatches float64 ``exp`` to an AVX-512 kernel
where the host has one; BLAS kernels sum in a different order), and one flipped comparison reshuffles
every later batch and random draw of a run (without the grid, WISP's Table 3 goodput was 1065.71 tok/s
on one host and 1067.56 on an AVX-512 host). Rounding the time a decision compares to whole nanoseconds
makes a few-ulp difference change the outcome only when the value sits within those ulps of a half-nanosecond
(about 1e-8 of the time for the twin's 0.01-0.1 s values), and makes exact ties stay ties.
"""
from __future__ import annotations

import numpy as np

NS = 1e-9   # s: the grid
_BIG = 1e300   # beyond it (inf): no rounding


def ns(t):
    """Seconds -> whole nanoseconds (float; numbers or numpy arrays; inf stays inf)."""
    return np.rint(np.multiply(t, 1e9))


def ns_scalar(t: float) -> float:
    """``ns`` of one number, without numpy's per-call cost (the same value: round half to even)."""
    return float(round(t * 1e9)) if -_BIG < t < _BIG else t * 1e9


_APART = 1e-8   # s: x above y by more than this ...
_WITHIN = 1e6   # s: ... with both within +-1e6 s (t * 1e9 within 0.07 ns of exact there) puts ns(x) above ns(y)


def ns_le(x: float, y: float) -> bool:
    """``ns_scalar(x) <= ns_scalar(y)``, decided by the floats where they already imply it: ``ns`` is
    monotone (x <= y gives ns(x) <= ns(y)), and x above y by more than 10 ns gives ns(x) > ns(y) (their
    products with 1e9 lie more than 9 apart, so their roundings differ), so only a near-tie (x above y
    within 10 ns) or a value beyond +-1e6 s (inf, nan) needs the grid."""
    if x <= y:
        return True
    if x - y > _APART and x < _WITHIN and y > -_WITHIN:
        return False
    return ns_scalar(x) <= ns_scalar(y)


def on_grid(t: float) -> float:
    """Seconds rounded to the nearest nanosecond: ``round(t, 9)``, the double nearest the exact decimal
    rounding. Within +-1e6 s, t * 1e9 is within 0.07 of the exact product, so where it lies more than
    0.07 from a half its nearest integer n is the exact rounding, and n / 1e9 (n exact, one correctly
    rounded division) is that double: ``round`` with digits, a decimal conversion, only decides the rest."""
    t = float(t)
    z = t * 1e9
    if -1e15 < z < 1e15:
        n = round(z)
        if n and abs(z - n) < 0.43:   # (a zero keeps the sign of t there)
            return n / 1e9
    return round(t, 9)
