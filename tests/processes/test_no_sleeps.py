"""No test in tests/processes synchronises on a fixed sleep. The rule, exactly: a call to anything named
``sleep`` (``time.sleep``, ``asyncio.sleep``, ``sleep`` imported bare) and ``threading.Timer`` may appear
only inside ``process_waits.wait_until``, the polling loop that waits for a condition with a timeout. A
test that needs a client to be slow uses the library's emulated link (``drafter.Link``); one that needs
"mid-generation" waits for a verified round (a log row, the drafter's "round 0 verified" line)."""
import ast
from pathlib import Path

HERE = Path(__file__).parent
ALLOWED = {("process_waits.py", "wait_until")}


def sleeps(source: str, name: str) -> list[str]:
    """'file:line in function' of every sleep or Timer call in ``source`` outside the allowed helper."""
    tree = ast.parse(source)
    found = []

    def visit(node, func):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        if isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called in ("sleep", "Timer") and (name, func) not in ALLOWED:
                found.append(f"{name}:{node.lineno} in {func}")
        for child in ast.iter_child_nodes(node):
            visit(child, func)
    visit(tree, "<module>")
    return found


def test_the_rule_catches_a_fixed_sleep_and_allows_the_polling_helper():
    planted = "import time\nfrom time import sleep\ndef test_x():\n    time.sleep(0.01)\n    sleep(0.02)\n"
    assert sleeps(planted, "test_planted.py") == ["test_planted.py:4 in test_x", "test_planted.py:5 in test_x"]
    helper = "import time\ndef wait_until(c):\n    while not c():\n        time.sleep(0.005)\n"
    assert sleeps(helper, "process_waits.py") == []
    assert sleeps(helper, "test_other.py") == ["test_other.py:4 in wait_until"]   # only the one helper


def test_no_fixed_sleeps_in_tests_processes():
    files = sorted(HERE.glob("*.py"))
    assert len(files) >= 5
    found = [hit for path in files for hit in sleeps(path.read_text(), path.name)]
    assert not found, f"fixed sleeps used as synchronisation (wait on an event with process_waits.wait_until): {found}"
