"""How long the README's commands take on this machine, recorded by the commands themselves.

``make figures`` (full scale, every notebook, default profiles), ``make test`` and ``make test-fast``
call ``start`` before their work and ``stop`` after it succeeded (the first ``make``, building ``.venv``
from nothing, writes its own start time); ``stop`` writes the wall time, what
the command ended with and the host into the git-ignored ``build/timings/<command>.json``. A failed or
partial run records nothing. ``make readme`` then rewrites the README's timings block from those
records (``readme``), and docs/benchmarks.md's per-notebook seconds from the notebook runner's record of
its last complete full-scale run (``specedge.notebooks.record_notebooks``), so their numbers are the last
complete runs', never typed:

    python tools/timings.py start figures
    python tools/timings.py stop figures --ends-with "figures: done (...)"
    python tools/timings.py stop test --junit build/timings/test.xml     # "960 passed" from pytest's report
    python tools/timings.py readme                                        # README.md's timings block
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from specedge import paths
from specedge.host import machine

FOLDER = paths.TIMINGS
README = paths.ROOT / "README.md"
BENCHMARKS = paths.ROOT / "docs" / "benchmarks.md"      # its per-notebook block
BEGIN, END = "<!-- timings:start -->", "<!-- timings:end -->"
NB_BEGIN, NB_END = "<!-- notebook-seconds:start -->", "<!-- notebook-seconds:end -->"
# the README's rows, as typed
COMMANDS = {"figures": "make figures", "test": "make test", "test-fast": "make test-fast"}
VENV = "venv"          # building .venv from nothing (the first make); named in the block when recorded


def start(name: str, folder: Path = FOLDER) -> Path:
    """Note that ``name`` starts now (its start file; a later ``stop`` measures from it)."""
    _check(name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.start"
    path.write_text(repr(time.time()))
    return path


def passed(junit: Path) -> str:
    """pytest's count of passed tests from its JUnit XML report: ``"960 passed"``."""
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError) as e:
        raise ValueError(f"{junit}: not a readable JUnit XML report ({e})") from None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if not suites:
        raise ValueError(f"{junit}: no <testsuite> element")
    count = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    ran = count["tests"] - count["failures"] - count["errors"] - count["skipped"]
    return f"{ran} passed" + "".join(f", {count[k]} {k}" for k in ("failures", "errors", "skipped") if count[k])


def stop(name: str, ends_with: str, folder: Path = FOLDER, now: float | None = None) -> dict:
    """Record ``name``'s run since its ``start``: seconds, what it ended with, the machine."""
    _check(name)
    begun = folder / f"{name}.start"
    if not begun.exists():
        raise FileNotFoundError(f"{begun}: no start recorded for {name!r} (call `start {name}` first)")
    seconds = (time.time() if now is None else now) - float(begun.read_text())
    record = {"command": name, "seconds": round(seconds, 1), "ends_with": ends_with, **machine()}
    (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    begun.unlink()
    return record


def notebook_block(record: dict) -> str:
    """docs/benchmarks.md's paragraph: each notebook's seconds inside one complete run, longest first."""
    workers = max(1, record["cores"] // record["jobs"])
    cache = "empty `build/sweeps/`" if record["cold_sweep_cache"] else "`build/sweeps/` already filled"
    each = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(record["seconds"].items(), key=lambda kv: -kv[1]))
    return textwrap.fill(f"Per notebook inside one `make figures` ({record['jobs']} notebooks at a time, {workers} sweep "
            f"worker{'s' if workers > 1 else ''} each, {cache}, {record['cores']}-core {record['cpu']} "
            f"({record['isa']}), capped at AVX2): {each} — {sum(record['seconds'].values()):,.0f} "
            f"notebook-seconds, {minutes(record['wall'])} of wall time.", width=115, break_on_hyphens=False)


def _check(name: str) -> None:
    if name not in (*COMMANDS, VENV):
        raise ValueError(f"command {name!r}: expected one of {sorted((*COMMANDS, VENV))}")


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def block(records: dict[str, dict], cold_cache: bool | None = None) -> str:
    """The README's timings block (between its markers) from one record per command; ``cold_cache``: whether the
    figures' run began with an empty sweep cache (``notebooks.json``'s ``cold_sweep_cache``; None: not recorded)."""
    missing = [COMMANDS[n] for n in COMMANDS if n not in records]
    if missing:
        raise ValueError(f"no recorded run of {', '.join(missing)}")
    hosts = {(r["cpu"], r["isa"], r["cores"], r["memory_gib"], r["gpu"]) for r in records.values()}
    if len(hosts) > 1:
        raise ValueError(f"the records come from different machines: {sorted(hosts)}")
    cpu, isa, cores, gib, gpu = hosts.pop()
    built = f" (building it took {minutes(records[VENV]['seconds'])})" if VENV in records else ""
    lines = [f"On a {cores}-core {cpu} ({isa}), {gib} GiB, {'a GPU' if gpu else 'no GPU'}, "
             f"with `.venv` already built{built}:",
             "", "| command | takes | ends with |", "|---|---|---|"]
    for name, typed in COMMANDS.items():
        cache = "" if cold_cache is None else ", `build/sweeps/` empty" if cold_cache else ", `build/sweeps/` already filled"
        note = {"figures": f" (notebooks {min(cores, len(list(paths.NOTEBOOKS.glob('*.ipynb'))))} at a time{cache})",
                "test-fast": " (unit tests only)"}.get(name, "")
        lines.append(f"| `{typed}` | {minutes(records[name]['seconds'])}{note} | `{records[name]['ends_with']}` |")
    return "\n".join(lines)


def load(folder: Path = FOLDER) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json")) if p.stem in (*COMMANDS, VENV)}


def replace_block(path: Path, begin: str, end: str, new: str) -> None:
    """Put ``new`` between ``path``'s one ``begin`` and ``end`` marker."""
    text = path.read_text()
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{path}: expected one {begin} ... {end} block")
    head, rest = text.split(begin)
    path.write_text(head + begin + "\n" + new + "\n" + end + rest.split(end, 1)[1])


def update_readme(readme: Path = README, folder: Path = FOLDER) -> bool:
    """Rewrite ``readme``'s timings block from the records; False (and says why) if one is missing."""
    records = load(folder)
    nb = folder / "notebooks.json"
    cold = json.loads(nb.read_text()).get("cold_sweep_cache") if nb.exists() else None
    try:
        new = block(records, cold)
    except ValueError as e:
        print(f"[specedge] kept {readme.name}'s timings block: {e} in {folder}", flush=True)
        return False
    replace_block(readme, BEGIN, END, new)
    print(f"[specedge] {readme.name}: timings block from {', '.join(sorted(records))}", flush=True)
    return True


def update_benchmarks(doc: Path = BENCHMARKS, folder: Path = FOLDER) -> bool:
    """Rewrite ``doc``'s per-notebook block from the last complete run; False (and says why) without one."""
    path = folder / "notebooks.json"
    if not path.exists():
        print(f"[specedge] kept {doc.name}'s per-notebook block: no complete full-scale run recorded in {folder}",
              flush=True)
        return False
    replace_block(doc, NB_BEGIN, NB_END, notebook_block(json.loads(path.read_text())))
    print(f"[specedge] {doc.name}: per-notebook block from {path.name}", flush=True)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/timings.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="action", required=True)
    sub.add_parser("start").add_argument("name", choices=sorted(COMMANDS))
    p = sub.add_parser("stop")
    p.add_argument("name", choices=sorted((*COMMANDS, VENV)))
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--ends-with", help="the command's last line")
    how.add_argument("--junit", type=Path, help="pytest's JUnit XML report (its passed count is the last line)")
    sub.add_parser("readme")
    a = ap.parse_args(argv)
    if a.action == "start":
        start(a.name)
    elif a.action == "stop":
        stop(a.name, a.ends_with if a.junit is None else passed(a.junit))
    else:
        update_readme()
        update_benchmarks()
    return 0


if __name__ == "__main__":
    sys.exit(main())
