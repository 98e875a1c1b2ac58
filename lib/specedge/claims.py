"""Claim predicates: the only way a qualitative statement of a paper becomes ``match`` or ``trend``.

Each predicate looks at numbers and returns a ``Claim``: its name, whether it holds, and the
evidence it saw (formatted, so a row of ``comparison.csv`` shows what decided its status). Bad
evidence never passes: an empty input, a NaN, a constant series or a tie makes a predicate fail,
with the reason in the evidence. ``compare.Comparison.claim`` turns a Claim into a row.

"A above B" (``above``, ``below``, ``argmax_is``, ``argmin_is``) takes a ``margin``: the lead must
exceed it, so noise or a rounding difference cannot pass for an effect; the evidence names it. On
results simulated with several seeds, "A above B" / "A at or below B" (``interval_above``,
``interval_at_most``, ``interval_argmax_is``) decide on the paired differences' confidence interval over
seeds: an interval containing zero is a tie, never a win or a loss decided by one path.

A censored value (a search that stopped at its bound, e.g. a capacity "at least 512") is an
``AtLeast``: the predicates treat it as the lower bound it is. It may hold a claim on the side where
the truth can only be larger (the largest of ``argmax_is``, the earlier value of
``strictly_decreasing``); where its unknown excess could reverse the order, the claim fails
("undecided").

Summaries of draws (``mean_intervals``, ``reductions``, ``ratio_reduction``) share ``mean_interval``'s
Student-t interval and ``reduction_pct``, the one percent reduction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Claim:
    name: str        # the predicate, e.g. "strictly_decreasing"
    holds: bool
    evidence: str    # what it saw, e.g. "0.31 > 0.22 > 0.19"
    margin: float | None = None   # the lead a comparative predicate required ("A above B by margin")
    window: tuple[float, float] | None = None   # the values that pass (``within``): compared with the feasible range

    def __bool__(self) -> bool:
        return self.holds


class AtLeast(float):
    """A lower bound in place of a value (a censored measurement): the true value is >= it."""

    def __repr__(self) -> str:
        return f"AtLeast({float(self)!r})"


def _censored(values) -> np.ndarray:
    return np.array([isinstance(v, AtLeast) for v in values], bool)


def _fmt(x) -> str:
    if isinstance(x, AtLeast):
        return "≥" + _fmt(float(x))
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    try:
        return f"{float(x):.4g}"
    except (TypeError, ValueError):
        return str(x)


def _series(values) -> tuple[np.ndarray | None, str]:
    """Finite float array, or None with the reason it is unusable."""
    try:
        arr = np.asarray(list(values), dtype=float).ravel()
    except (TypeError, ValueError):
        return None, "rejected: not numbers"
    if arr.size == 0:
        return None, "rejected: empty"
    if not np.all(np.isfinite(arr)):
        return None, "rejected: NaN/inf in " + ", ".join(_fmt(v) for v in arr)
    return arr, ""


def _monotone(name: str, values, sign: int) -> Claim:
    values = list(values)
    arr, why = _series(values)
    if arr is None:
        return Claim(name, False, why)
    if arr.size < 2:
        return Claim(name, False, f"rejected: one value ({_fmt(values[0])})")
    d = np.diff(arr) * sign
    sym = " < " if sign > 0 else " > "
    text = sym.join(_fmt(v) for v in values)
    if np.all(d == 0):
        return Claim(name, False, "constant: " + text)
    cens = _censored(values)
    lower = cens[:-1] if sign > 0 else cens[1:]     # the side of each step that must be the smaller
    if np.all(d > 0) and lower.any():
        return Claim(name, False, "undecided (a lower bound on the smaller side): " + text)
    return Claim(name, bool(np.all(d > 0)), text)


def strictly_increasing(values: Iterable[float]) -> Claim:
    """Every step up (a tie or a constant series fails)."""
    return _monotone("strictly_increasing", values, +1)


def strictly_decreasing(values: Iterable[float]) -> Claim:
    """Every step down (a tie or a constant series fails)."""
    return _monotone("strictly_decreasing", values, -1)


def ordered(values: Sequence[float], labels: Sequence[str] | None = None) -> Claim:
    """``values[0] < values[1] < ...`` strictly, labelled in the evidence: ``a=1 < b=2 < c=3``."""
    values = list(values)
    arr, why = _series(values)
    if arr is None:
        return Claim("ordered", False, why)
    labels = list(labels) if labels is not None else [str(i) for i in range(arr.size)]
    if len(labels) != arr.size:
        raise ValueError(f"ordered: {len(labels)} labels for {arr.size} values")
    if arr.size < 2:
        return Claim("ordered", False, "rejected: fewer than two values")
    text = " < ".join(f"{lab}={_fmt(v)}" for lab, v in zip(labels, values))
    if _censored(values)[:-1].any():
        return Claim("ordered", False, "undecided (a lower bound below another value): " + text)
    return Claim("ordered", bool(np.all(np.diff(arr) > 0)), text)


def correlation_sign(x: Iterable[float], y: Iterable[float], sign: int, min_abs: float = 0.0) -> Claim:
    """Pearson r of (x, y) has ``sign`` (+1/-1) and ``|r| >= min_abs``; constant input fails."""
    if sign not in (1, -1):
        raise ValueError(f"correlation_sign: sign must be +1 or -1, got {sign!r}")
    if not 0.0 <= min_abs <= 1.0:
        raise ValueError(f"correlation_sign: min_abs must lie in [0, 1], got {min_abs!r}")
    a, why_a = _series(x)
    b, why_b = _series(y)
    if a is None or b is None:
        return Claim("correlation_sign", False, why_a or why_b)
    if a.size != b.size:
        raise ValueError(f"correlation_sign: x has {a.size} values, y has {b.size}")
    if a.size < 3:
        return Claim("correlation_sign", False, f"rejected: {a.size} points")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return Claim("correlation_sign", False, "rejected: constant input")
    r = float(np.corrcoef(a, b)[0, 1])
    ok = (r * sign > 0) and abs(r) >= min_abs
    return Claim("correlation_sign", bool(ok), f"r = {r:+.3f} over {a.size} points (want sign {sign:+d}, |r| >= {min_abs:g})")


def _margin(name: str, margin: float | None) -> float:
    if margin is not None and not (isinstance(margin, (int, float, np.floating)) and math.isfinite(margin)
                                   and margin >= 0):
        raise ValueError(f"{name}: margin must be a finite number >= 0, got {margin!r}")
    return 0.0 if margin is None else float(margin)


def _with_margin(text: str, margin: float | None) -> str:
    return text if margin is None else f"{text}; margin {_fmt(margin)}"


def _extreme(name: str, values: Mapping[str, float], expected: str, sign: int, margin: float | None) -> Claim:
    m = _margin(name, margin)
    if not values:
        return Claim(name, False, "rejected: empty", margin)
    arr, why = _series(values.values())
    if arr is None:
        return Claim(name, False, why, margin)
    if expected not in values:
        raise ValueError(f"{name}: expected key {expected!r} is not among {sorted(values)}")
    score = sign * arr
    best = score.max()
    text = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
    cens = dict(zip(values, _censored(values.values())))
    # a lower bound decides nothing where its excess could reverse the order: another key's bound
    # for the largest, the expected key's own for the smallest
    if (sign > 0 and any(c for k, c in cens.items() if k != expected)) or (sign < 0 and cens[expected]):
        return Claim(name, False, _with_margin("undecided (a lower bound): " + text, margin), margin)
    ties = int(np.sum(score == best))
    if ties > 1:
        return Claim(name, False, _with_margin("tie: " + text, margin), margin)
    i = int(np.flatnonzero(score == best)[0])
    winner = list(values)[i]
    lead = float(best - np.max(np.delete(score, i))) if arr.size > 1 else math.inf
    holds = winner == expected and lead > m
    shown = f"{winner} ({text})" if margin is None else f"{winner} by {_fmt(lead)} ({text}); margin {_fmt(margin)}"
    return Claim(name, holds, shown, margin)


def argmax_is(values: Mapping[str, float], expected: str, margin: float | None = None) -> Claim:
    """``expected`` has the strictly largest value, ahead of the runner-up by more than ``margin``
    (a tie for the top fails)."""
    return _extreme("argmax_is", values, expected, +1, margin)


def argmin_is(values: Mapping[str, float], expected: str, margin: float | None = None) -> Claim:
    """``expected`` has the strictly smallest value, below the runner-up by more than ``margin``
    (a tie for the bottom fails)."""
    return _extreme("argmin_is", values, expected, -1, margin)


def within(value: float, low: float, high: float) -> Claim:
    """``low <= value <= high`` (a range the paper states, e.g. "34-54 %")."""
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"within: need finite low <= high, got [{low}, {high}]")
    arr, why = _series([value])
    if arr is None:
        return Claim("within", False, why)
    v = float(arr[0])
    return Claim("within", low <= v <= high, f"{_fmt(v)} in [{_fmt(low)}, {_fmt(high)}]", window=(float(low), float(high)))


def below(value: float, bound: float, margin: float | None = None) -> Claim:
    """``value < bound - margin`` strictly (``margin``: the gap noise cannot explain)."""
    m = _margin("below", margin)
    arr, why = _series([value, bound])
    if arr is None:
        return Claim("below", False, why, margin)
    if isinstance(value, AtLeast):
        return Claim("below", False, _with_margin(f"undecided: {_fmt(value)} < {_fmt(bound)}", margin), margin)
    return Claim("below", bool(arr[0] < arr[1] - m), _with_margin(f"{_fmt(arr[0])} < {_fmt(arr[1])}", margin),
                 margin)


def above(value: float, bound: float, margin: float | None = None) -> Claim:
    """``value > bound + margin`` strictly (``margin``: the gap noise cannot explain)."""
    m = _margin("above", margin)
    arr, why = _series([value, bound])
    if arr is None:
        return Claim("above", False, why, margin)
    if isinstance(bound, AtLeast):
        return Claim("above", False, _with_margin(f"undecided: {_fmt(value)} > {_fmt(bound)}", margin), margin)
    return Claim("above", bool(arr[0] > arr[1] + m), _with_margin(f"{_fmt(arr[0])} > {_fmt(arr[1])}", margin),
                 margin)


def all_of(flags: Mapping[str, bool], name: str = "all_of") -> Claim:
    """Every labelled condition holds (e.g. "below ADS for every pair"); empty input fails."""
    if not flags:
        return Claim(name, False, "rejected: empty")
    failed = [k for k, v in flags.items() if not bool(v)]
    text = (f"all {len(flags)} hold" if not failed
            else f"fails for {len(failed)} of {len(flags)}: " + ", ".join(map(str, failed[:8]))
            + (" ..." if len(failed) > 8 else ""))
    return Claim(name, not failed, text)


def monotone_flags(df, x: str, by: list[str], increasing: bool, value: str) -> dict[str, bool]:
    """Per curve of a table (one curve per group of ``by``): is the mean of ``value`` over the draws strictly
    increasing (or decreasing) in ``x``? Keys name the curve and carry the predicate's evidence, ready for
    :func:`all_of` (e.g. "latency grows with K for every scheme")."""
    test = strictly_increasing if increasing else strictly_decreasing
    means = df.groupby(by + [x])[value].mean()
    flags = {}
    for key, g in means.groupby(level=list(range(len(by)))):
        c = test(g.sort_index(level=x).to_numpy())
        label = ", ".join(map(str, key if isinstance(key, tuple) else (key,)))
        flags[f"{label}: {c.evidence}"] = c.holds
    return flags


# --------------------------------------------------------------------------- claims over seeds
def _half_width(sd, n, confidence: float):
    """Half-width of the Student-t interval of a mean, ``t((1 + confidence) / 2, n - 1) * sd / sqrt(n)``
    (numbers or arrays; NaN where n < 2)."""
    from scipy import stats

    if not 0 < confidence < 1:
        raise ValueError(f"confidence: must lie in (0, 1), got {confidence!r}")
    return stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n)


def mean_interval(values: Iterable[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` (one per seed) and its Student-t confidence interval (mean, low, high);
    NaN bounds with fewer than two values."""
    arr, why = _series(values)
    if arr is None:
        raise ValueError(f"values: {why}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: must lie in (0, 1), got {confidence!r}")
    m = float(arr.mean())
    if arr.size < 2:
        return m, float("nan"), float("nan")
    half = float(_half_width(arr.std(ddof=1), arr.size, confidence))
    return m, m - half, m + half


def mean_intervals(df: pd.DataFrame, by: list[str], value: str, confidence: float = 0.95) -> pd.DataFrame:
    """The mean of ``value`` and its Student-t interval (as :func:`mean_interval`) per group of ``by``, groups
    in order of appearance: the columns of ``by``, then mean, n (the draws), ci_low and ci_high (NaN bounds for
    a group of one draw). Means and spreads are pandas' group reductions."""
    _, why = _series(df[value])
    if why:
        raise ValueError(f"column {value!r}: {why}")
    out = df.groupby(by, sort=False)[value].agg(["mean", "std", "count"]).reset_index()
    half = _half_width(out["std"], out["count"], confidence)
    out["ci_low"] = out["mean"] - half
    out["ci_high"] = out["mean"] + half
    return out.rename(columns={"count": "n"}).drop(columns="std")


def reduction_pct(ours, baseline):
    """Reduction of ``ours`` relative to ``baseline`` in percent, ``100 (1 - ours / baseline)`` (elementwise on
    arrays and series); a baseline that is not positive and finite has no reduction (ValueError)."""
    b = np.asarray(baseline, float)
    if not (np.all(b > 0) and np.all(np.isfinite(b))):
        raise ValueError(f"baseline must be > 0 and finite, got {baseline!r}")
    return 100.0 * (1.0 - ours / baseline)


def reductions(df: pd.DataFrame, ours: str, baseline: str, by: list[str], value: str, column: str) -> pd.DataFrame:
    """:func:`reduction_pct` of the mean ``value`` of ``ours`` against that of ``baseline`` (two values of
    ``column``, e.g. two schemes) per group of ``by``: the columns of ``by`` and reduction_pct."""
    means = df.groupby(by + [column], sort=False)[value].mean().unstack(column)
    return reduction_pct(means[ours], means[baseline]).rename("reduction_pct").reset_index()


def ratio_reduction(ours, baseline) -> tuple[float, float]:
    """:func:`reduction_pct` of ``mean(ours)`` against ``mean(baseline)`` over paired samples (the same draw
    at index k), with its delta-method standard error (NaN with one pair)."""
    x, y = np.asarray(ours, float), np.asarray(baseline, float)
    if x.size != y.size or x.size == 0:
        raise ValueError(f"ours and baseline must be paired samples of one size > 0, got {x.size} and {y.size}")
    n, mx, my = x.size, x.mean(), y.mean()
    red = float(reduction_pct(mx, my))
    if n < 2:
        return red, float("nan")
    r = mx / my
    var = (x.var(ddof=1) - 2 * r * np.cov(x, y)[0, 1] + r * r * y.var(ddof=1)) / (n * my * my)
    return red, 100.0 * float(np.sqrt(max(var, 0.0)))


def _paired(a: Sequence[float], b: Sequence[float], confidence: float) -> tuple[str, str]:
    """The paired differences a_k - b_k (same seed k) over seeds: ("above" | "below" | "tie", evidence) from
    their confidence interval, or ("rejected", why) when there is no interval (unpaired, NaN, one seed)."""
    if len(a) != len(b):
        return "rejected", f"rejected: {len(a)} vs {len(b)} seeds (paired by seed)"
    arr, why = _series(np.asarray(a, float) - np.asarray(b, float)) if len(a) else (None, "rejected: empty")
    if arr is None:
        return "rejected", why
    if arr.size < 2:
        return "rejected", f"rejected: one seed ({_fmt(arr[0])}), no interval"
    m, lo, hi = mean_interval(arr, confidence)
    verdict = "above" if lo > 0 else ("below" if hi < 0 else "tie")
    return verdict, f"{verdict}: mean diff {m:+.4g} [{lo:+.4g}, {hi:+.4g}] ({confidence:.0%}, {arr.size} seeds)"


def interval_above(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Claim:
    """A above B over seeds: the paired differences a_k - b_k (same seed k) have a confidence interval
    that clears zero. An interval containing zero is a tie (the claim fails, the evidence says "tie")."""
    verdict, text = _paired(a, b, confidence)
    return Claim("interval_above", verdict == "above", text)


def interval_at_most(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Claim:
    """A at or below B over seeds: holds unless the paired differences' confidence interval lies wholly
    above zero; a tie holds (the seeds cannot tell A from B), so one path's small excess of A over B does
    not fail it. No interval (one seed, unpaired, NaN) fails."""
    verdict, text = _paired(a, b, confidence)
    return Claim("interval_at_most", verdict in ("below", "tie"), text)


def interval_argmax_is(values: Mapping[str, Sequence[float]], expected: str, confidence: float = 0.95) -> Claim:
    """``expected`` is above every other entry over seeds (``interval_above`` against each, paired by
    seed): a tie with any of them fails the claim."""
    if expected not in values or len(values) < 2:
        return Claim("interval_argmax_is", False, f"rejected: need {expected!r} and at least one other, got {list(values)}")
    parts, ok = [], True
    for k, v in values.items():
        if k == expected:
            continue
        c = interval_above(values[expected], v, confidence)
        ok &= c.holds
        parts.append(f"vs {k}: {c.evidence}")
    return Claim("interval_argmax_is", ok, f"{expected} " + "; ".join(parts))


def interval_ordered(values: Mapping[str, Sequence[float]], confidence: float = 0.95) -> Claim:
    """Entries in increasing order over seeds: each above the one before it (``interval_above``, paired by
    seed); a tie or a reversal of any neighbouring pair fails the claim."""
    if len(values) < 2:
        return Claim("interval_ordered", False, f"rejected: need at least two entries, got {list(values)}")
    keys = list(values)
    parts = {f"{lo} < {hi}": interval_above(values[hi], values[lo], confidence) for lo, hi in zip(keys, keys[1:])}
    return Claim("interval_ordered", all(c.holds for c in parts.values()),
                 "; ".join(f"{k}: {c.evidence}" for k, c in parts.items()))


def falls_with(samples: Mapping[float, Sequence[float]], name: str = "falls_with", x: str = "x") -> Claim:
    """"The value falls as ``x`` falls": ``samples`` maps each x to its paired draws (the same order, e.g. seeds, in
    every sample); the draws at the largest x lie above those at the smallest (``interval_above``) and the means fall
    at every step down in x (``strictly_decreasing``). Rejected with fewer than two x values."""
    if len(samples) < 2:
        return Claim(name, False, f"rejected: need two {x} values, got {sorted(samples)}")
    lo, hi = min(samples), max(samples)
    ends = interval_above(samples[hi], samples[lo])
    steps = strictly_decreasing([float(np.mean(samples[k])) for k in sorted(samples, reverse=True)])
    return Claim(name, ends.holds and steps.holds, f"{x} {hi:g} vs {lo:g}: {ends.evidence}; means from {x} {hi:g} down: {steps.evidence}")


RANKING = ("argmax_is", "argmin_is", "interval_argmax_is")  # "X is best" predicates: their null is a rival, not a tie


def strongest_alternative(values: Mapping[str, object], expected: str, lowest: bool = False) -> str:
    """The strongest entry other than ``expected`` (largest mean, or smallest with ``lowest``): the null of
    "``expected`` is best" is the same predicate naming it (``argmax_is(values, strongest_alternative(...))``),
    which holds if the rival leads by the margin, so the null can pass. A null that sets ``expected`` to a
    rival's value is a tie, which fails by construction (``compare`` refuses it)."""
    others = {k: float(np.mean(np.asarray(v, float))) for k, v in values.items() if k != expected}
    if expected not in values or not others:
        raise ValueError(f"strongest_alternative: need {expected!r} and at least one other entry, got {list(values)}")
    return (min if lowest else max)(others, key=others.get)


def log_slope_positive(samples: Mapping[float, Sequence[float]], name: str = "log_slope_positive", x: str = "x",
                       confidence: float = 0.95) -> Claim:
    """"The value falls as ``x`` falls", as a trend over seeds: ``samples`` maps each x to its paired draws (the same
    order, e.g. seeds, in every sample); per draw the least-squares slope of log value on log x over every x; holds
    when the slopes' confidence interval lies above zero (a tie or a falling trend fails). A step up between two
    neighbouring x does not fail it on its own: the whole series decides. Rejected with fewer than three x values,
    unequal draws or a value <= 0 (no logarithm)."""
    if len(samples) < 3:
        return Claim(name, False, f"rejected: need three {x} values, got {sorted(samples)}")
    xs = sorted(samples)
    sizes = {len(samples[k]) for k in xs}
    if len(sizes) != 1:
        return Claim(name, False, f"rejected: unequal draws per {x} ({sorted(sizes)})")
    arr = np.asarray([np.asarray(samples[k], float) for k in xs])
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0) or min(xs) <= 0:
        return Claim(name, False, f"rejected: a value or {x} <= 0 or not finite")
    lx = np.log(np.asarray(xs, float))
    lx = lx - lx.mean()
    ly = np.log(arr)
    slopes = (lx[:, None] * (ly - ly.mean(axis=0))).sum(axis=0) / (lx ** 2).sum()
    verdict, text = _paired(slopes, np.zeros_like(slopes), confidence)
    return Claim(name, verdict == "above", f"slope of log value on log {x} over {x} = {', '.join(f'{v:g}' for v in xs)}: "
                 + text.replace("mean diff", "mean slope").replace(" seeds)", " draws)"))


def median_null(values: pd.Series, who: str) -> pd.Series:
    """``null_like_median`` on a labelled Series: a copy with ``who`` at the median of the others."""
    out = values.copy()
    out[who] = null_like_median(values.to_dict(), who)[who]
    return out


def is_lowest(values: pd.Series, who: str) -> bool:
    """``who``'s value is the smallest, ties included (within a relative 1e-12: equal plans give equal values)."""
    return bool(values[who] <= values.min() * (1 + 1e-12))
def interval_at_most_every(pairs: Mapping[str, tuple[Sequence[float], Sequence[float]]], confidence: float = 0.95) -> Claim:
    """A at or below B in every part (``interval_at_most`` of each (a, b) of ``pairs``, e.g. per class a system's
    seeds against a baseline's) and below it in at least one (else the seeds cannot tell A from B); the evidence
    counts below / tie / above-or-undecided and names every part that is not a tie."""
    if not pairs:
        return Claim("interval_at_most_every_class", False, "rejected: no parts")
    parts = {k: interval_at_most(a, b, confidence) for k, (a, b) in pairs.items()}
    failed = {k: c for k, c in parts.items() if not c}
    below = {k: c for k, c in parts.items() if c.evidence.startswith("below")}
    text = (f"below in {len(below)}, tie in {len(parts) - len(below) - len(failed)}, above or undecided in {len(failed)} "
            f"of {len(parts)}" + "".join(f"; {k} {c.evidence}" for k, c in {**failed, **below}.items()))
    return Claim("interval_at_most_every_class", not failed and bool(below), text)


def by_seed(rows: pd.DataFrame, column: str, value: str) -> dict[object, np.ndarray]:
    """Per value of ``column``, the ``value`` of each seed (rows with a ``seed`` column, e.g. a sweep's), in seed
    order: the paired samples the ``interval_*`` predicates take (a seed a group lacks is NaN, which fails them)."""
    v = rows.pivot_table(index="seed", columns=column, values=value, sort=True, dropna=False)
    return {k: v[k].to_numpy() for k in v.columns}


def null_like_median(values: Mapping[str, float], who: str) -> dict[str, float]:
    """The null of "``who`` is lowest / highest": ``values`` with ``who`` at the median of the others (no effect)."""
    if who not in values or len(values) < 2:
        raise ValueError(f"values: need {who!r} and at least one other entry, got {list(values)}")
    return {**values, who: float(np.median([v for k, v in values.items() if k != who]))}
