"""README's "Your serving policy" runs as written: its Python block registers an allocator and builds it by name,
and its YAML block, put into a scenario, names that allocator for a draft option (the README cannot drift)."""
from __future__ import annotations

import contextlib
import io
import re

import pytest
import yaml

from specedge import paths
from specedge.experiments.edge_sd_arena import runs as arena
from specedge.serving.policies.allocation import ALLOCATORS

NAME = "even-split"


def _blocks() -> tuple[str, str]:
    """The Python and the YAML block of the README's "Your serving policy" paragraph."""
    text = (paths.ROOT / "README.md").read_text()
    section = text[text.index("**Your serving policy.**"):]
    section = section[:section.index("\n## ")]
    py, yml = (re.search(rf"```{lang}\n(.*?)```", section, re.S) for lang in ("python", "yaml"))
    assert py and yml, "README's serving-policy paragraph needs a ```python and a ```yaml block"
    return py.group(1), yml.group(1)


@pytest.fixture
def registered():
    """The README's code run once; its registration undone afterwards (the registry is one per process)."""
    code, _ = _blocks()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
        yield out.getvalue()
    finally:
        ALLOCATORS._builders.pop(NAME, None)
        ALLOCATORS._takes.pop(NAME, None)


def test_the_readme_policy_registers_builds_and_allocates_as_its_comment_says(registered):
    assert registered.strip() == "{0: 2, 1: 2, 2: 2}"
    assert NAME in ALLOCATORS
    code, _ = _blocks()
    assert "# {0: 2, 1: 2, 2: 2}" in code                         # the comment states what it prints


def test_a_scenario_with_the_readme_yaml_builds_the_registered_policy(registered, tmp_path):
    _, block = _blocks()
    data = yaml.safe_load((paths.DATA / "scenarios" / "arena_default.yaml").read_text())
    data["policies"]["draft"].update(yaml.safe_load(block)["policies"]["draft"])
    (tmp_path / "arena_default.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    scn = arena.load_scenario(tmp_path / "arena_default.yaml", "ci")
    pol = scn.policy("draft", "even")
    assert pol.name == NAME and str(pol.rule) == "server"
    alloc = pol.build("allocator", capacity=8, clients=4)
    assert type(alloc).__name__ == "EvenSplit" and alloc.initial([0, 1, 2, 3]) == {0: 2, 1: 2, 2: 2, 3: 2}


def test_a_scenario_naming_an_unregistered_policy_is_refused(tmp_path):
    _, block = _blocks()
    assert NAME not in ALLOCATORS
    data = yaml.safe_load((paths.DATA / "scenarios" / "arena_default.yaml").read_text())
    data["policies"]["draft"].update(yaml.safe_load(block)["policies"]["draft"])
    (tmp_path / "arena_default.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(Exception, match=NAME):
        arena.load_scenario(tmp_path / "arena_default.yaml", "ci")
