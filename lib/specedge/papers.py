"""The paper manifest: ``data/papers.yaml``, one entry per paper, read and checked before anything runs.

A paper has a key, a title, an arXiv id (or none) and its notebooks; each notebook its output folder
(``figures/<folder>/``: one key per folder, unique across the manifest), its line in the README's papers
table, its expected seconds (the runner starts the longest first), and where it applies its statement
inventory (``data/coverage/``), what it needs from a hardware profile (``specedge.needs`` checks the kinds)
and the output folders of other notebooks it reads. The runner, the coverage tool, the comparison's
results table and the README's papers table read it from here (``docs/adding-a-paper.md``).

A manifest that breaks a rule is refused with its file, the key and what was expected (``ManifestError``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import paths

MANIFEST_FILE = paths.DATA / "papers.yaml"
START, END = "<!-- papers:start -->", "<!-- papers:end -->"
_PAPER_KEYS = {"title": True, "arxiv": True, "notebooks": True}                    # key -> required
_NOTEBOOK_KEYS = {"folder": True, "summary": True, "expected_s": True, "inventory": False, "needs": False,
                  "reads": False}
_NEED_KEYS = ("runtime", "links", "constants", "optional_constants")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ARXIV = re.compile(r"^\d{4}\.\d{4,5}$")


class ManifestError(ValueError):
    """A manifest that breaks a rule: the message names the file, the key and what was expected."""


@dataclass(frozen=True)
class Notebook:
    name: str                       # notebooks/<name>.ipynb
    paper: str                      # the key of its paper
    folder: str                     # figures/<folder>/: its output key
    summary: str                    # its line in the README's papers table
    expected_s: float
    inventory: Path | None = None   # its statement inventory
    needs: dict | None = None       # what it needs from a hardware profile (None: no `profile` parameter)
    reads: tuple[str, ...] = ()     # output folders of other notebooks it reads


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    arxiv: str | None
    notebooks: tuple[str, ...]


@dataclass(frozen=True)
class Manifest:
    path: Path
    papers: dict[str, Paper]        # in the manifest's order
    notebooks: dict[str, Notebook]  # by name, in the manifest's order
    folders: dict[str, Notebook]    # by output folder, in the manifest's order

    @property
    def expected_s(self) -> dict[str, float]:
        """Notebook name -> its expected full-scale seconds."""
        return {n: nb.expected_s for n, nb in self.notebooks.items()}

    @property
    def reads(self) -> dict[str, tuple[str, ...]]:
        """Notebook name -> the notebooks whose output folders it reads (only notebooks that read any)."""
        return {n: tuple(self.folders[f].name for f in nb.reads) for n, nb in self.notebooks.items() if nb.reads}

    @property
    def inventories(self) -> dict[str, Path]:
        """Output folder -> its statement inventory, for the folders that have one."""
        return {f: nb.inventory for f, nb in self.folders.items() if nb.inventory is not None}

    def select(self, name: str) -> list[str]:
        """The notebook names ``name`` selects: a notebook's name that one, a paper's key all its notebooks,
        an output folder's key its notebook; [] when it is none of them."""
        if name in self.notebooks:
            return [name]
        if name in self.papers:
            return list(self.papers[name].notebooks)
        return [self.folders[name].name] if name in self.folders else []

    def readme_table(self) -> str:
        """The README's papers table: one line per notebook, with its paper's key and arXiv id."""
        lines = ["| key | paper | notebook |", "|---|---|---|"]
        for p in self.papers.values():
            arxiv = f" (arXiv {p.arxiv})" if p.arxiv else ""
            lines += [f"| `{p.key}` | {self.notebooks[n].summary}{arxiv} | `notebooks/{n}.ipynb` |" for n in p.notebooks]
        return "\n".join(lines)


class _UniqueKeys(yaml.SafeLoader):
    """YAML that refuses a key written twice in one mapping (plain YAML keeps the last one silently)."""


def _mapping(loader: _UniqueKeys, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ManifestError(f"{loader.name}: key {key!r} (line {key_node.start_mark.line + 1}) is written twice "
                                "in one mapping: expected each key once")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _fail(path: Path, key: str, expected: str, got=None) -> ManifestError:
    return ManifestError(f"{path}: key '{key}': expected {expected}" + ("" if got is None else f", got {got!r}"))


def _keys(path: Path, where: str, spec, allowed: dict[str, bool]) -> dict:
    """``spec`` as a mapping with every required key of ``allowed`` and no other."""
    if not isinstance(spec, dict):
        raise _fail(path, where, f"a mapping with keys {', '.join(allowed)}", spec)
    for k, required in allowed.items():
        if required and k not in spec:
            raise _fail(path, f"{where}.{k}", "a value (the key is missing)")
    for k in spec:
        if k not in allowed:
            raise _fail(path, f"{where}.{k}", f"one of the keys {', '.join(allowed)}")
    return spec


def _text(path: Path, where: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, where, "a non-empty string", value)
    return value


def _names(path: Path, where: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(path, where, "a list of names", value)
    return tuple(value)


def _needs(path: Path, where: str, spec) -> dict:
    """A profile need's shape (the kinds are ``specedge.needs``' to check)."""
    spec = _keys(path, where, spec, dict.fromkeys(_NEED_KEYS, False))
    runtime = spec.get("runtime") or {}
    if not isinstance(runtime, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in runtime.items()):
        raise _fail(path, f"{where}.runtime", "a mapping of runtime model -> kind", runtime)
    return {"runtime": dict(runtime), **{k: _names(path, f"{where}.{k}", spec.get(k) or []) for k in _NEED_KEYS[1:]}}


def _notebook(path: Path, paper: str, name, spec, root: Path, notebooks_dir: Path) -> Notebook:
    where = f"{paper}.notebooks.{name}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(path, where, "a notebook's name (lower case, digits, underscores)", name)
    if not (notebooks_dir / f"{name}.ipynb").is_file():
        raise _fail(path, where, f"a notebook {notebooks_dir / name}.ipynb (the file is missing)")
    spec = _keys(path, where, spec, _NOTEBOOK_KEYS)
    folder = spec["folder"]
    if not isinstance(folder, str) or not _NAME.match(folder):
        raise _fail(path, f"{where}.folder", "an output folder's key (lower case, digits, underscores)", folder)
    seconds = spec["expected_s"]
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise _fail(path, f"{where}.expected_s", "a number of seconds > 0", seconds)
    inventory = None
    if spec.get("inventory") is not None:
        inventory = root / _text(path, f"{where}.inventory", spec["inventory"])
        if not inventory.is_file():
            raise _fail(path, f"{where}.inventory", f"a file (relative to the repository): {inventory} is missing")
    return Notebook(name=name, paper=paper, folder=folder, summary=_text(path, f"{where}.summary", spec["summary"]),
                    expected_s=seconds, inventory=inventory,
                    needs=None if "needs" not in spec else _needs(path, f"{where}.needs", spec["needs"]),
                    reads=_names(path, f"{where}.reads", spec.get("reads") or []))


def load(path: Path = MANIFEST_FILE, root: Path = paths.ROOT, notebooks_dir: Path = paths.NOTEBOOKS) -> Manifest:
    """The checked manifest of ``path``: inventories relative to ``root``, notebooks in ``notebooks_dir``."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"{path} is missing: the paper manifest is committed with the repository (data/)")
    with path.open() as f:
        loader = _UniqueKeys(f)
        loader.name = str(path)
        try:
            table = loader.get_single_data() or {}
        finally:
            loader.dispose()
    if not isinstance(table, dict) or not table:
        raise _fail(path, "(top)", "a mapping of paper key -> entry", table)
    papers, notebooks, folders = {}, {}, {}
    for key, spec in table.items():
        if not isinstance(key, str) or not _NAME.match(key):
            raise _fail(path, str(key), "a paper's key (lower case, digits, underscores)", key)
        spec = _keys(path, key, spec, _PAPER_KEYS)
        arxiv = spec["arxiv"]
        if arxiv is not None and not (isinstance(arxiv, str) and _ARXIV.match(arxiv)):
            raise _fail(path, f"{key}.arxiv", "an arXiv id such as '2509.04576' (quoted) or null", arxiv)
        if not isinstance(spec["notebooks"], dict) or not spec["notebooks"]:
            raise _fail(path, f"{key}.notebooks", "a non-empty mapping of notebook name -> entry", spec["notebooks"])
        for name, nb_spec in spec["notebooks"].items():
            nb = _notebook(path, key, name, nb_spec, root, notebooks_dir)
            if name in notebooks:
                raise _fail(path, f"{key}.notebooks.{name}", f"a notebook named once (paper {notebooks[name].paper} "
                                                             "names it too)")
            if nb.folder in folders:
                raise _fail(path, f"{key}.notebooks.{name}.folder", f"an output folder of its own ("
                            f"{folders[nb.folder].paper}.notebooks.{folders[nb.folder].name} writes to it too)", nb.folder)
            notebooks[name] = folders[nb.folder] = nb
        papers[key] = Paper(key=key, title=_text(path, f"{key}.title", spec["title"]), arxiv=arxiv,
                            notebooks=tuple(spec["notebooks"]))
    for nb in notebooks.values():
        for target in nb.reads:
            if target not in folders or target == nb.folder:
                raise _fail(path, f"{nb.paper}.notebooks.{nb.name}.reads",
                            f"output folders of other notebooks ({', '.join(f for f in folders if f != nb.folder)})",
                            target)
    manifest = Manifest(path=path, papers=papers, notebooks=notebooks, folders=folders)
    waiting = dict(manifest.reads)
    while waiting:                                  # a reader waits for what it reads: no circle may form
        free = [n for n, srcs in waiting.items() if not set(srcs) & set(waiting)]
        if not free:
            raise _fail(path, ", ".join(f"{notebooks[n].paper}.notebooks.{n}.reads" for n in waiting),
                        "no circle of notebooks reading each other's outputs")
        for n in free:
            del waiting[n]
    return manifest


MANIFEST: Manifest = load()
