"""What each notebook needs from its hardware profile, checked before any work.

A profile provides runtime models (``runtime.<name>`` with numeric coefficients), links and constants
(``specedge.hardware``); a notebook with a ``profile`` parameter needs some of them. ``NEEDS`` states
that once per notebook, read from the ``needs`` of ``data/papers.yaml`` (``specedge.papers``; the
notebooks' names live there, not in the library); ``missing(notebook, profile)`` lists what a profile lacks (file, key path, what
was expected), ``check`` raises with that list — notebooks call it in their parameter cell, before an
output folder exists — and ``usable`` tells the runner which notebooks ``make figures PROFILE=x`` can
run (it skips the others and says why).

A runtime need names a kind of ``hardware.KINDS`` (its formula and the coefficients it needs, with
their signs): a typed entry was checked when the profile loaded, an untyped one (a table of numbers)
is checked here against the kind. Constants are named; their types are ``hardware.CONSTANTS``', checked
on loading. ``optional_constants`` may be absent (zhu2025 takes missing ones from its paper profile).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import hardware, papers


@dataclass(frozen=True)
class Need:
    runtime: dict[str, str] = field(default_factory=dict)          # runtime model -> kind (hardware.KINDS)
    links: tuple[str, ...] = ()
    constants: tuple[str, ...] = ()
    optional_constants: tuple[str, ...] = ()


def _load_needs(manifest: papers.Manifest = papers.MANIFEST) -> dict[str, Need]:
    """The ``needs`` of the manifest's notebooks: notebook -> :class:`Need` (kinds checked against
    ``hardware.KINDS``, so a typo there fails with the file and key named)."""
    out = {}
    for nb in manifest.notebooks.values():
        if nb.needs is None:
            continue
        for model, kind in nb.needs["runtime"].items():
            if hardware.KIND_ALIASES.get(kind, kind) not in hardware.KINDS:
                raise papers.ManifestError(f"{manifest.path}: key '{nb.paper}.notebooks.{nb.name}.needs.runtime.{model}': "
                                           f"expected one of {', '.join(hardware.KINDS)}, got {kind!r}")
        out[nb.name] = Need(runtime={m: hardware.KIND_ALIASES.get(k, k) for m, k in nb.needs["runtime"].items()},
                            links=nb.needs["links"], constants=nb.needs["constants"],
                            optional_constants=nb.needs["optional_constants"])
    return out


NEEDS: dict[str, Need] = _load_needs()


def missing(notebook: str, profile) -> list[str]:
    """What ``profile`` (a name, a path or a loaded ``Profile``) lacks for ``notebook``; [] if nothing."""
    if notebook not in NEEDS:
        raise KeyError(f"notebook {notebook!r} declares no profile needs; known: {sorted(NEEDS)}")
    prof = hardware.as_profile(profile)
    need, out = NEEDS[notebook], []
    for model, kind in need.runtime.items():
        if model not in prof.runtime:
            out.append(f"runtime.{model}: missing")
            continue
        have, declared = prof.coefficients(model), prof.kind(model)
        if declared not in (None, kind):
            out.append(f"runtime.{model}: expected a {kind!r} model ({hardware.KINDS[kind].formula}), got {declared!r}")
            continue
        for key, rule in hardware.KINDS[kind].needs.items():     # an untyped table: check it as this kind
            test, expected = hardware.RULES[rule]
            if key not in have:
                out.append(f"runtime.{model}.{key}: missing")
            elif not test(have[key]):
                out.append(f"runtime.{model}.{key}: expected {expected}, got {have[key]!r}")
    out += [f"links.{name}: missing" for name in need.links if name not in prof.links]
    out += [f"constants.{key}: missing" for key in need.constants if key not in prof.constants]
    return out


def check(notebook: str, profile) -> hardware.Profile:
    """The loaded profile, or a ``ValueError`` naming its file and every key ``notebook`` needs from it."""
    prof = hardware.as_profile(profile)
    gaps = missing(notebook, prof)
    if gaps:
        where = prof.path or prof.name
        raise ValueError(f"{where}: profile {prof.name!r} cannot serve {notebook}: " + "; ".join(gaps))
    return prof


def usable(profile) -> dict[str, list[str]]:
    """For every notebook with needs: what ``profile`` lacks for it ([] = it can run on it)."""
    prof = hardware.as_profile(profile)
    return {nb: missing(nb, prof) for nb in NEEDS}
