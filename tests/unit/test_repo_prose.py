"""The repository speaks only of itself: no word about how it was built in its tracked text.

Scanned: README.md, docs/, the Makefile, pyproject.toml, environment.yml, lib/ (whole files), data/ (text
files), the notebooks (every cell), and the docstrings and comments of tests/ and benchmarks/. Flagged, with
file:line: ticket numbers, phrases about how the code was built (periods of work, who helped, job locks),
commit hashes (hex words that name a commit of this clone) and paths outside the repository. The serving
layer's gRPC sessions are product words: only phrases that place one in time are flagged. The planted
phrases below are assembled from pieces (``_say``), so this file itself holds none of them."""
from __future__ import annotations

import ast
import io
import json
import re
import shutil
import subprocess
import tokenize
from pathlib import Path

import pytest

from specedge import paths

PROCESS = [
    (re.compile(r"\bissues? ?#?\d+", re.I), "a ticket number"),
    (re.compile(r"(?<![\w&#/])#\d+\b(?![\w-])"), "a ticket number"),
    (re.compile(r"\b(?:this|previous|earlier|later|next|other|that|same) (?:work )?sessions?\b", re.I), "a work session"),
    (re.compile(r"\bsessions?' jobs\b", re.I), "a work session"),
    (re.compile(r"\b(?:other|another) helpers?\b|\bhelpers'|\bhelper (?:sessions?|agents?|engineers?)\b", re.I),
     "a helper of the build"),
    (re.compile(r"\bf" r"lock\b|\bheavy[- ](?:job[- ])?lo" r"ck\b|/tmp/\S*\.lo" r"ck\b", re.I), "a job lock"),
    (re.compile(r"\bwork[- ]?log\b", re.I), "a work log"),
    (re.compile(r"\.\./sha" r"red\b|(?<![\w.])/wo" r"rk/|\bsha" r"red/(?:papers|notes)/"), "a path outside the repository"),
]
HEX = re.compile(r"(?<![\w/.-])[0-9a-f]{7,40}(?![\w/-])")
TEXT_DATA = {".md", ".yaml", ".yml", ".json", ".txt"}
SKIP = {"data/zoo/tokenizer/tokenizer.json"}       # a vocabulary, not prose


def tracked() -> list[str]:
    """Tracked files (``git ls-files``), or every file under the root where this is no git checkout."""
    if shutil.which("git") and (paths.ROOT / ".git").exists():
        out = subprocess.run(["git", "ls-files"], cwd=paths.ROOT, capture_output=True, text=True, check=True)
        return out.stdout.split()
    return [str(p.relative_to(paths.ROOT)) for p in paths.ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]


def docstrings_and_comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of a Python file's docstrings and comments: its other strings are code, not prose."""
    out = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
           if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out += [(first.lineno + i, ln) for i, ln in enumerate(first.value.value.splitlines())]
    return out


def prose(rel: str, text: str) -> list[tuple[int, str]] | None:
    """The (line, text) pairs of ``rel`` that must speak of the product only; None: not scanned."""
    path = Path(rel)
    top = path.parts[0]
    if rel in SKIP:
        return None
    if rel in ("README.md", "Makefile", "pyproject.toml", "environment.yml") or top in ("docs", "lib"):
        return list(enumerate(text.splitlines(), 1))
    if top == "data" and path.suffix in TEXT_DATA:
        return list(enumerate(text.splitlines(), 1))
    if top == "notebooks" and path.suffix == ".ipynb":
        return list(enumerate(text.splitlines(), 1))        # the JSON's lines: a finding names the file's line
    if top in ("tests", "benchmarks") and path.suffix == ".py":
        return docstrings_and_comments(text)
    return None


def commits(words: set[str]) -> set[str]:
    """The hex words that name a commit of this clone (abbreviated or whole), in one ``git cat-file`` call."""
    if not words or not shutil.which("git") or not (paths.ROOT / ".git").exists():
        return set()
    out = subprocess.run(["git", "cat-file", "--batch-check"], cwd=paths.ROOT, capture_output=True, text=True,
                         input="\n".join(f"{w}^{{commit}}" for w in sorted(words)) + "\n").stdout.splitlines()
    return {w for w, line in zip(sorted(words), out) if line.split()[1:2] == ["commit"]}


def findings(files: dict[str, str]) -> list[str]:
    """``file:line: what: the line`` for every process word, outside path and commit hash in ``files``
    (relative path -> text)."""
    found, hexes = [], []
    for rel, text in sorted(files.items()):
        lines = prose(rel, text)
        for n, line in lines or ():
            found += [f"{rel}:{n}: {why}: {line.strip()[:160]}" for rx, why in PROCESS if rx.search(line)]
            hexes += [(rel, n, w, line) for w in HEX.findall(line) if re.search(r"\d", w) and re.search(r"[a-f]", w)]
    named = commits({w for *_, w, _ in hexes})
    found += [f"{rel}:{n}: a commit hash ({w}): {line.strip()[:160]}" for rel, n, w, line in hexes if w in named]
    return found


def read(rel: str) -> str | None:
    try:
        return (paths.ROOT / rel).read_text()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return None


def test_tracked_text_speaks_of_the_product_only():
    files = {rel: text for rel in tracked() if prose(rel, "") is not None and (text := read(rel)) is not None}
    assert {"README.md", "Makefile"} <= set(files) and any(r.startswith("docs/") for r in files)
    found = findings(files)
    assert not found, "process words in tracked text:\n" + "\n".join(found)


def _say(*words: str, sep: str = " ") -> str:
    """A phrase joined from its words at run time (the phrases planted below never stand in this file)."""
    return sep.join(words)


def test_a_planted_phrase_is_caught_with_its_file_and_line():
    # the whole hash: an abbreviated one may be all digits (a number, not flagged), as 7 hex digits are 1 time in 27
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True,
                          text=True).stdout.strip() if (paths.ROOT / ".git").exists() else ""
    now, ticket, outside = _say("this", "session"), _say("issue", "32"), _say("..", "shared", "papers", "a.txt", sep="/")
    lock = _say(_say("f", "lock", sep=""), _say("", "tmp", _say("specedge-heavy", "lo" + "ck", sep="."), sep="/"))
    planted = {
        "docs/x.md": f"Fine text.\nAs {now} found ({ticket}), see {outside}.\n" + (f"Measured at {head}.\n" if head else ""),
        "Makefile": f"bench:\n\t{lock} $(PY) x.py\n",
        "tests/unit/test_x.py": f'"""{_say("Other", "helpers")}\' jobs ({_say("#", "21", sep="")})."""\n'
                                f'X = "{now}"   # a string in code: not prose\n',
        "notebooks/a.ipynb": json.dumps({"cells": [{"source": [_say("an", "earlier", "session", "measured", "it")]}]}, indent=1),
        "data/coverage/a.yaml": f"# re-read for {_say('issue', '19')} from {_say('', 'work', 'shared', 'papers', 'a.txt', sep='/')}\n",
    }
    found = findings(planted)
    where = {f.split(": ")[0] for f in found}
    assert {"docs/x.md:2", "Makefile:2", "tests/unit/test_x.py:1", "data/coverage/a.yaml:1"} <= where
    assert any(w.startswith("notebooks/a.ipynb:") for w in where)
    assert not any(w.startswith("tests/unit/test_x.py:2") for w in where)      # code strings are not prose
    if head:
        assert any(f.startswith("docs/x.md:3: a commit hash") for f in found)


@pytest.mark.parametrize("text", [
    "one prefix cache per session; each session's own position ids",          # the serving layer's sessions
    "colour #1f77b4; the #-th row; eq (19); Table 2 and Fig 4",
    "a critical issue we identified where prompt reuse caused 60% speedup",
    "sha256 3f5a9c2e4b7d1f08a6c3e5b2d9f4a7c1e8b6d3f2a5c9e7b4d1f8a2c6e3b5d9f4 of the wheel",
    "a helper that writes reproducible files",
])
def test_product_words_are_not_flagged(text):
    assert findings({"docs/x.md": text}) == []
