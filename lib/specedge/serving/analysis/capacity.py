"""System capacity (li2026 eq 20): Cap(tau) = max{N : Pr[token speed < tau] <= epsilon}, by bisection.

``bisect(f, lo, hi, epsilon)`` takes ``f(N) -> (violations, trials)`` (e.g. responses slower than their
class, out of all responses decided in a run with N devices) and assumes the violation rate grows with
N, as eq (20)'s definition does; it needs O(log(hi - lo)) evaluations of ``f``. A point with no trials
counts as violating (nothing was served in time to judge). If even ``lo`` violates, the capacity is
``lo - 1``; if ``hi`` does not, it is ``hi`` and ``saturated`` says the search bound was the limit: the
capacity is censored, a lower bound ("at least hi"), never a value to compare as if it were measured.

``guess``: a first upper bracket (e.g. the N at which the server's throughput cannot serve every device
its class speed, rounded up to ``grid``), taken before ``hi`` and presumed to violate: the search bisects
below it, never runs the (expensive) points near ``hi``, and runs the guess itself only once the answer
lies next to it; if it then meets epsilon, the bracket doubles until a point violates or ``hi`` is
reached. The answer is the same as without it whenever the violation rate grows with N.

``resolution``: the search stops once its bracket (good, bad) is at most ``max(1, int(resolution x good))``
wide (``resolution = 1/64``: within 1.6 %) instead of running N, N + 1, ... where a run's own noise (its
Wilson interval) is as wide as the differences left to bisect. The capacity is then the largest N
evaluated that meets epsilon (as always), and ``info["resolution"]`` = r says how far the bracket was left
open: N + r + 1 was evaluated and violates, so with a violation rate that grows with N the exact capacity
lies in [N, N + r]; r = 0 is the exact answer (``resolution = 0``, the default).

The points a search evaluates are ``split``'s: multiples of large powers of two, the same for brackets that
differ (another epsilon's guess), so that searches sharing a cache of points meet the same N.

``search(lo, hi, epsilon, ...)`` is the same bisection as a generator (it yields each N and is sent its
counts), so that ``run_all`` can advance many searches in lockstep and evaluate each round's points together
(one parallel sweep); ``bisect`` drives one search with ``f``.

``searches`` runs many of them over seeds, their points through ``run_points`` (a sweep runner, the sweep cache or
in process); ``throughput_bound`` is an optimistic N from eq (19)'s peak throughput, a search's first bracket.

``wilson(k, n)`` is the Wilson score interval of a violation rate (scipy's binomial test gives the
same interval as ``proportion_ci(method="wilson")``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from scipy import stats


def rate(violations: int, trials: int) -> float:
    return violations / trials if trials > 0 else 1.0


def grid(x: float, per_octave: int = 8) -> int:
    """The smallest point of a coarse grid at or above ``x`` > 0: an integer up to ``per_octave``, above it
    k x 2^j with ``per_octave`` <= k < 2 ``per_octave`` (a power of two), i.e. at most 1 / ``per_octave``
    above ``x``. Its points are multiples of large powers of two, which ``split`` meets."""
    if not x > 0 or not math.isfinite(x):
        raise ValueError(f"x: need a finite number > 0, got {x!r}")
    if per_octave < 1 or per_octave & (per_octave - 1):
        raise ValueError(f"per_octave: need a power of two >= 1, got {per_octave!r}")
    if x <= per_octave:
        return math.ceil(x)
    step = 2 ** (math.floor(math.log2(x)) - int(math.log2(per_octave)))
    return math.ceil(x / step) * step


def split(good: int, bad: int) -> int:
    """A point strictly between ``good`` and ``bad`` (bad - good >= 2): of the multiples of the largest power
    of two at most half the bracket, the one nearest its centre (a tie: the multiple of the larger power).
    A bracket whose ends are multiples of that power is halved exactly; brackets that differ meet the same
    points (both halves of (1, 960) and of (1, 1024) start at 512)."""
    if bad - good < 2:
        raise ValueError(f"good, bad: need bad - good >= 2, got good={good!r}, bad={bad!r}")
    step = 1 << (((bad - good) // 2).bit_length() - 1)
    below = (good + bad) // 2 // step * step          # > good: the centre minus less than step <= half the bracket
    above = below + step
    if above >= bad or (good + bad) - 2 * below < 2 * above - (good + bad):
        return below
    if (good + bad) - 2 * below > 2 * above - (good + bad):
        return above
    return below if below & -below > above & -above else above


def search(lo: int, hi: int, epsilon: float, *, guess: int | None = None, resolution: float = 0.0,
           known: dict[int, tuple[int, int]] | None = None):
    """``bisect`` as a generator, for callers that evaluate many searches' points together (``run_all``):
    it yields each N to evaluate, is sent that N's (violations, trials), and returns ``(capacity, info)``
    (``StopIteration.value``). The points and the answer are ``bisect``'s. ``known``: (violations, trials)
    of points already evaluated, used without yielding them (a search resumed with a point's count revised)."""
    if not (isinstance(lo, int) and isinstance(hi, int)) or lo < 1 or hi < lo:
        raise ValueError(f"lo, hi: need integers 1 <= lo <= hi, got lo={lo!r}, hi={hi!r}")
    if guess is not None and (not isinstance(guess, int) or guess < 1):
        raise ValueError(f"guess: need a positive integer or None, got {guess!r}")
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon: must lie in [0, 1), got {epsilon!r}")
    if not 0 <= resolution < 1:
        raise ValueError(f"resolution: a fraction of the capacity in [0, 1), got {resolution!r}")
    seen: dict[int, float] = {int(n): rate(*vt) for n, vt in (known or {}).items()}

    def ok(n: int):                        # a generator: ``yield from ok(n)`` evaluates n once
        if n not in seen:
            seen[n] = rate(*(yield n))
        return seen[n] <= epsilon

    def narrow(good: int, bad: int):       # ok(good); bad violates, or is presumed to
        while bad - good > max(1, int(resolution * good)):
            mid = split(good, bad)
            if (yield from ok(mid)):
                good = mid
            else:
                bad = mid
        return good, bad

    if not (yield from ok(lo)):
        cap, saturated, left = lo - 1, False, 0
    else:
        good, bad = lo, hi
        if guess is not None:              # presumed to violate: run only once the answer lies next to it
            good, bad = yield from narrow(lo, min(max(guess, lo), hi))
            while (yield from ok(bad)) and bad < hi:    # the guess was no bracket: widen it
                good, bad = bad, min(2 * bad, hi)
        if (yield from ok(bad)):           # bad == hi here
            cap, saturated, left = hi, True, 0
        else:
            good, bad = yield from narrow(good, bad)
            cap, saturated, left = good, False, bad - good - 1
    return cap, dict(saturated=saturated, resolution=left, evaluated=dict(sorted(seen.items())))


def run_all(searches: list, evaluate: Callable[[list[tuple[int, int]]], list[tuple[int, int]]]) -> list:
    """Drive ``search`` generators in lockstep: each round, every unfinished search's next N goes to one
    call ``evaluate([(search index, N), ...]) -> [(violations, trials), ...]``, which may run them all at
    once (e.g. one parallel sweep). Returns each search's ``(capacity, info)``, in order; each is what it
    would be alone, as a search's points depend only on its own results."""
    done: list = [None] * len(searches)
    pending: dict[int, int] = {}
    for i, s in enumerate(searches):
        try:
            pending[i] = next(s)
        except StopIteration as stop:
            done[i] = stop.value
    while pending:
        asked = list(pending.items())
        for (i, _), result in zip(asked, evaluate(asked), strict=True):
            try:
                pending[i] = searches[i].send(result)
            except StopIteration as stop:
                done[i] = stop.value
                del pending[i]
    return done


def bisect(f: Callable[[int], tuple[int, int]], lo: int, hi: int, epsilon: float, *,
           guess: int | None = None, resolution: float = 0.0, return_info: bool = False):
    """The largest N in [lo, hi] with rate(f(N)) <= epsilon (lo - 1 if none), to ``resolution`` (module
    docstring); ``info``: saturated, resolution (r) and every evaluated N's rate."""
    (cap, info), = run_all([search(lo, hi, epsilon, guess=guess, resolution=resolution)],
                           lambda asked: [f(n) for _, n in asked])
    return (cap, info) if return_info else cap


def wilson(violations: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of violations / trials."""
    if trials < 1 or not 0 <= violations <= trials:
        raise ValueError(f"need 0 <= violations <= trials and trials >= 1, got {violations}/{trials}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: must lie in (0, 1), got {confidence!r}")
    ci = stats.binomtest(int(violations), int(trials)).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


# A point whose first seed alone puts the violation rate on one side of epsilon with this confidence (its
# Wilson interval) is decided on that seed; every other point runs all of its search's seeds.
DECISIVE = 0.999


def searches(curves: list, points_of: Callable, run_points: Callable, guess: Callable,
             decisive: float | None = DECISIVE, cost: Callable | None = None) -> list[dict]:
    """Many capacity searches (``search``) advanced in lockstep (``run_all``), each N run over seeds.

    ``curves``: objects with ``epsilon``, ``seeds``, ``seed``, ``hi`` and ``resolution``; ``points_of(curve,
    n, seeds)``: that search's points at N (each with a ``seed``; hashable, so two searches asking for one
    point run it once); ``run_points(points) -> [row, ...]`` (rows with ``violations`` and ``responses``),
    called once per round with every search's points (the costliest first by ``cost(point)``, if given);
    ``guess(curve)``: the first upper bracket. A point runs its first seed; the others only when that seed's
    Wilson interval at ``decisive`` straddles epsilon (None: always), and the capacity's own count always
    pools every seed (should those seeds overturn it, the search resumes with every count it has). Returns
    one dict per curve: capacity, censored (reached ``hi``: a lower bound), resolution, guess, the pooled
    violation rate at the capacity with its Wilson interval, every evaluated N's counts and the N decided
    on their first seed (``first_seed_only``)."""
    from ... import sweep

    full = [sweep.seeds(c.seed, c.seeds) for c in curves]
    counts: list[dict[int, dict[int, tuple[int, int]]]] = [{} for _ in curves]   # curve -> N -> seed -> (v, t)

    def pooled(i: int, n: int) -> tuple[int, int]:
        vt = counts[i][n].values()
        return sum(v for v, _ in vt), sum(t for _, t in vt)

    def simulate(wanted: dict[tuple[int, int], list[int]]) -> None:       # (curve, N) -> seeds to run
        pts = {(i, n): points_of(curves[i], int(n), seeds) for (i, n), seeds in wanted.items()}
        unique = list(dict.fromkeys(p for ps in pts.values() for p in ps))
        unique = sorted(unique, key=cost, reverse=True) if cost else unique
        if not unique:
            return
        rows = dict(zip(unique, run_points(unique), strict=True))
        for (i, n), ps in pts.items():
            counts[i].setdefault(n, {}).update({p.seed: (rows[p]["violations"], rows[p]["responses"]) for p in ps})

    def undecided(i: int, n: int) -> bool:
        (v, t), = counts[i][n].values()
        if decisive is None or t == 0:
            return True
        low, high = wilson(v, t, decisive)
        return low <= curves[i].epsilon <= high

    def evaluate(asked: list[tuple[int, int]]) -> list[tuple[int, int]]:
        simulate({(i, n): full[i][:1] for i, n in asked})
        simulate({(i, n): full[i][1:] for i, n in asked if len(full[i]) > 1 and undecided(i, n)})
        return [pooled(i, n) for i, n in asked]

    todo, found = list(range(len(curves))), [None] * len(curves)
    while todo:
        gens = [search(1, curves[i].hi, curves[i].epsilon, guess=guess(curves[i]), resolution=curves[i].resolution,
                       known={n: pooled(i, n) for n in counts[i]}) for i in todo]
        for i, res in zip(todo, run_all(gens, lambda asked: evaluate([(todo[j], n) for j, n in asked]))):
            found[i] = res
        short = [i for i in todo if found[i][0] >= 1 and len(counts[i][found[i][0]]) < len(full[i])]
        simulate({(i, found[i][0]): full[i][1:] for i in short})           # the answers' own counts: every seed
        todo = [i for i in short if rate(*pooled(i, found[i][0])) > curves[i].epsilon]

    table = []
    for i, (c, (cap, info)) in enumerate(zip(curves, found)):
        v, t = pooled(i, cap) if cap in counts[i] else (0, 0)
        low, high = wilson(v, t) if t else (math.nan, math.nan)
        table.append(dict(capacity=int(cap), censored=bool(info["saturated"]), resolution=int(info["resolution"]),
                          guess=guess(c), violation_rate_at_capacity=v / t if t else math.nan, wilson_low=low,
                          wilson_high=high, evaluated=" ".join(f"{n}:{a}/{b}" for n, (a, b) in
                                                               ((n, pooled(i, n)) for n in sorted(counts[i]))),
                          first_seed_only=" ".join(str(n) for n in sorted(counts[i]) if len(counts[i][n]) < len(full[i]))))
    return table


def knees(curves, epsilon: float, by=("system", "speed"), x: str = "devices", y: str = "violation_rate"):
    """Per group of ``by``: the smallest ``x`` whose ``y`` exceeds ``epsilon`` (inf if none); ``curves`` a
    pandas frame of violation rates over N."""
    def first(g):
        g = g.sort_values(x)
        over = g[g[y] > epsilon]
        return float(over[x].iloc[0]) if len(over) else math.inf
    return curves.groupby(list(by)).apply(first, include_groups=False)


def throughput_bound(est, context: float, speed: float, epsilon: float, rounds=None, prefix_cache: bool = True) -> float:
    """The N past which a server cannot give (1 - epsilon) of its devices ``speed`` tokens/s: its peak committed
    tokens/s by eq (19) (``est``: an ``estimator.Estimator``) without the per-batch constant c (batches of any
    size), every request at ``context`` cached tokens, divided by (1 - epsilon) x ``speed``. ``rounds``: per kind
    of device, its (drafted, accepted, rounds) summed over traced rounds (``client_mix.round_sums``), the kinds
    in equal numbers, each request S drafts + 1 new tokens (plus the whole context without ``prefix_cache``);
    None: centralized serving, one token per response per step. Optimistic, so the capacity lies below it."""
    if not 0 <= epsilon < 1 or not speed > 0:
        raise ValueError(f"epsilon, speed: need 0 <= epsilon < 1 and speed > 0, got {epsilon!r}, {speed!r}")
    if rounds is None:
        tokens, cost = 1.0, est.a + est.b_compute * (context + 1) + est.b_read * context
    else:
        cached = context if prefix_cache else 0.0
        tokens = cost = 0.0
        for drafted, accepted, n in rounds:
            new = drafted / n + 1 + (context - cached)
            tokens += accepted / n + 1
            cost += est.a * new + est.b_compute * (new + cached) * new + est.b_read * cached
    return tokens / cost / ((1 - epsilon) * speed)


@lru_cache(maxsize=None)
def _version(run_point: Callable) -> str:
    from ... import sweep

    return sweep.point_version(run_point)     # the key sweep.run gives run_point's points itself


def run_points(points: list, run_point: Callable, run: Callable | None = None, point_cache: str = "") -> list[dict]:
    """``searches``' ``run_points``: the rows of ``run_point`` at ``points``, by ``run(points, run_point)`` (a sweep
    runner returning a frame) when given, else here, through the sweep cache ``point_cache`` when set (the key
    ``sweep.run`` itself gives, so a search reads back the points a sweep ran)."""
    from ... import sweep

    if run is not None:
        return run(points, run_point).to_dict("records")
    if point_cache:
        return sweep.run(run_point, points, backend="sequential", cache_dir=point_cache, version=_version(run_point),
                         progress=False).to_dict("records")
    return [run_point(p) for p in points]


@dataclass(frozen=True)
class Curve:
    """One capacity search (eq 20) of a serving system: its system, target and class (every device in it),
    epsilon, the seeds of each N (``seeds`` from ``seed``), the search bound ``hi``, the setting its points run
    under (the driver's), a sweep cache folder for the points ("": none; searches sharing it share points) and
    where the bisection stops (``resolution``, ``bisect``)."""
    system: str
    target: str
    slo_class: int
    epsilon: float
    seeds: int
    seed: int
    hi: int
    setting: object = None
    point_cache: str = ""
    resolution: float = 0.0


def capacities(curves: list[Curve], point: Callable, run_point: Callable, guess: Callable, run: Callable | None = None,
               decisive: float | None = DECISIVE, cost: Callable | None = None) -> list[dict]:
    """``searches`` of ``curves``, N's point of each seed ``point(curve, n, seed)``, each round's points one
    ``run_points`` call (``run``, or here through the first curve's ``point_cache``); ``guess(curve)``: the first
    upper bracket. One row per curve: its system, target, speed (class) and epsilon, then the search's result."""
    def points_of(c: Curve, n: int, seeds) -> list:
        return [point(c, n, s) for s in seeds]

    def run_pts(points: list) -> list[dict]:
        return run_points(points, run_point, run, curves[0].point_cache)

    found = searches(curves, points_of, run_pts, guess, decisive, cost=cost)
    return [dict(system=c.system, target=c.target, speed=c.slo_class, epsilon=c.epsilon, **f) for c, f in zip(curves, found)]
