"""How tests/processes wait: on an observable condition (a queue, a log row, a counter, a process state),
with a timeout, never on a fixed sleep. ``wait_until`` is the only place in tests/processes that sleeps
(a short poll inside the wait; ``test_no_sleeps.py`` checks it)."""
from __future__ import annotations

import time

POLL_S = 0.005


def wait_until(condition, timeout: float = 30.0, what: str = "the condition"):
    """Poll ``condition()`` until it is truthy (returned) or ``timeout`` s passed (AssertionError naming
    ``what``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(POLL_S)


def read_until(stream, match: str, timeout_lines: int = 1000) -> str:
    """Read lines of a subprocess's text ``stream`` until one contains ``match`` (returned); AssertionError
    when the stream ends first (the process exited) or after ``timeout_lines`` lines."""
    seen = []
    for _ in range(timeout_lines):
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if match in line:
            return line
    raise AssertionError(f"no line with {match!r}; read {seen[-5:]}")
