"""Names -> builders: a ``Registry`` of one kind of object (an allocator, a batch former, a runtime model).

Vidur's registries: a name maps to a builder of a fresh object, registered next to its class
(``@ALLOCATORS.register("GOODSPEED", "goodspeed")``). A caller passes one context to every name of a kind
(e.g. the arena passes ``capacity``, ``clients``, ``beta``, ``weights`` and ``costs`` whatever its draft
policy): each builder gets the keywords it declares. An unknown name, or a keyword that no builder of the
kind takes, is an error that lists what is known (``serving.policies`` is the serving layer's one lookup).
"""
from __future__ import annotations

import inspect
from typing import Callable


class Registry:
    """Names of one ``kind`` -> builders (callables taking keyword arguments, returning a fresh object)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._builders: dict[str, Callable] = {}
        self._takes: dict[str, set[str]] = {}

    def register(self, *names: str):
        """Decorator: the builder under each of ``names`` (a name registered twice is an error)."""
        def add(builder: Callable) -> Callable:
            for name in names:
                if name in self._builders:
                    raise ValueError(f"{self.kind} {name!r}: registered twice")
                self._builders[name] = builder
                self._takes[name] = {p.name for p in inspect.signature(builder).parameters.values()
                                     if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
            return builder
        return add

    def names(self) -> list[str]:
        return sorted(self._builders)

    def __contains__(self, name: str) -> bool:
        return name in self._builders

    def takes(self, name: str) -> set[str]:
        """The keywords the builder of ``name`` declares."""
        return set(self._takes[self.check(name)])

    def check(self, name: str) -> str:
        """``name`` if registered, else a ``ValueError`` naming the kind and listing the known names."""
        if name not in self._builders:
            raise ValueError(f"{self.kind}: expected one of {self.names()}, got {name!r}")
        return name

    def build(self, name: str, /, **context):
        """A fresh object of ``name``, its builder given the keywords of ``context`` it declares; a keyword
        that no builder of this kind declares is an error (a misspelt option never passes silently)."""
        builder = self._builders[self.check(name)]
        known = set().union(*self._takes.values())
        unknown = sorted(set(context) - known)
        if unknown:
            raise ValueError(f"{self.kind} {name!r}: unknown keyword(s) {unknown}; the {self.kind}s take {sorted(known)}")
        return builder(**{k: v for k, v in context.items() if k in self._takes[name]})
