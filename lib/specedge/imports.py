"""The library's own import graph, read from its source: which ``specedge`` modules a file imports,
counting every import, also those inside functions (a lazy import still runs that code).

Two users: ``sweep`` keys a cached point by the source of the modules its function can run
(``closure``), and ``tests/unit/test_layering.py`` checks that the layers only import downward.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

LIB = Path(__file__).resolve().parent          # the ``specedge`` package folder


def module_name(path: Path, root: Path = LIB) -> str:
    """``specedge.a.b`` for ``<root>/a/b.py`` (a package's ``__init__.py`` is the package)."""
    parts = (root.name,) + path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files(root: Path = LIB) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports_of(path: Path, known: set[str], name: str | None = None) -> set[str]:
    """The modules of ``known`` that the file ``path`` imports (``name``: its dotted name, needed to
    resolve relative imports; a file outside the package has none and only absolute imports count)."""
    package = "" if name is None else (name if path.name == "__init__.py" else name.rsplit(".", 1)[0])
    out = set()
    for level, module, names in _statements(path.read_text()):
        if level is None:                                                  # `import a.b, c`
            out |= set(names)
            continue
        if level:
            if not package:
                continue
            base = package.split(".")
            target = ".".join(base[:len(base) - (level - 1)] + ([module] if module else []))
        else:
            target = module or ""
        subs = {f"{target}.{n}" for n in names} & known                    # `from pkg import module`
        out |= subs
        if len(subs) < len(names):                                         # names defined in target itself
            out.add(target)
    return {m for m in out if m in known and m != name}


@lru_cache(maxsize=1024)
def _statements(source: str) -> tuple:
    """Every import statement of ``source`` as (level or None for ``import``, module, names); parsed once
    per content (a sweep asks for the same files' imports at every call)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.append((None, None, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, node.module, tuple(a.name for a in node.names)))
    return tuple(out)


def graph(root: Path = LIB) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    files = module_files(root)
    return {name: imports_of(path, set(files), name) for name, path in files.items()}


def closure(start: set[str], edges: dict[str, set[str]]) -> set[str]:
    """``start`` and every module that importing them runs: reachable along ``edges``, and the
    packages (``__init__``) above each of those, which Python runs first."""
    seen, todo = set(), list(start)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += edges.get(m, ())
        todo += [p for p in (m.rsplit(".", k)[0] for k in range(1, m.count(".") + 1)) if p in edges]
    return seen
