"""Notebook parameters checked at the door.

The cell right after each notebook's ``parameters`` cell (and papermill's injected one) calls

    params.check(globals(), scale=("ci", "full"), seed=int, epsilon=params.between(0, 1), ...)

before anything else runs, so a typo or a wrongly typed value fails in the second cell with a message
naming the parameter, instead of running on defaults (papermill only warns about unknown names) or
failing late after figures were written. A rule is:

- a type or a tuple of types (``int`` refuses ``bool``; ``float`` accepts ``int``),
- a list of allowed values (``["loky", "dask", "ray"]``),
- a ``Rule`` (``between(lo, hi)``, ``at_least(n)``, ``list_of(type)``) for numbers and lists.

Any other public name in the namespace that is not a module, a function, a class or IPython's own is
an unknown parameter: the error lists the known ones.
"""
from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass
from typing import Any, Callable

_IPYTHON = {"In", "Out", "get_ipython", "exit", "quit", "open"}


@dataclass(frozen=True)
class Rule:
    """A predicate with the words for what it expects."""
    test: Callable[[Any], bool]
    expected: str


def _number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def between(lo: float, hi: float, *, integer: bool = False) -> Rule:
    """A number in the open interval (lo, hi) (an int when ``integer``)."""
    kind = "an int" if integer else "a number"
    return Rule(lambda x: _number(x) and (not integer or isinstance(x, int)) and lo < x < hi,
                f"{kind} in ({lo}, {hi})")


def at_least(lo: float, *, integer: bool = True) -> Rule:
    """A number >= lo (an int unless ``integer=False``)."""
    kind = "an int" if integer else "a number"
    return Rule(lambda x: _number(x) and (not integer or isinstance(x, int)) and x >= lo, f"{kind} >= {lo}")


def list_of(kind: type | tuple[type, ...], *, nonempty: bool = True) -> Rule:
    """A non-empty list (or tuple) whose items are all ``kind``."""
    name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
    return Rule(lambda x: isinstance(x, (list, tuple)) and (len(x) > 0 or not nonempty)
                and all(_is(v, kind) for v in x), f"a {'non-empty ' if nonempty else ''}list of {name}")


def _is(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, kinds)


def _describe(rule) -> str:
    if isinstance(rule, Rule):
        return rule.expected
    if isinstance(rule, list):
        return f"one of {rule}"
    kinds = rule if isinstance(rule, tuple) else (rule,)
    return " or ".join(k.__name__ for k in kinds)


def _ok(value, rule) -> bool:
    if isinstance(rule, Rule):
        return bool(rule.test(value))
    if isinstance(rule, list):
        return value in rule
    return _is(value, rule)


def check(namespace: dict, **spec) -> None:
    """Raise ``ValueError`` naming every unknown or invalid parameter of ``namespace`` (a notebook's
    ``globals()``) against ``spec`` (name -> rule); return quietly when all are valid."""
    unknown = sorted(k for k, v in namespace.items()
                     if not k.startswith("_") and k not in spec and k not in _IPYTHON
                     and not (inspect.ismodule(v) or inspect.isroutine(v) or inspect.isclass(v)))
    errors = [f"unknown parameter(s) {unknown}; this notebook's parameters are {sorted(spec)}"] if unknown else []
    for name, rule in spec.items():
        if name not in namespace:
            errors.append(f"{name}: missing (the parameters cell must define it)")
        elif not _ok(namespace[name], rule):
            errors.append(f"{name}: expected {_describe(rule)}, got {namespace[name]!r}")
    if errors:
        raise ValueError("parameters: " + "; ".join(errors))
