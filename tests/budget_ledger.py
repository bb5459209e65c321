"""The ledger of what one test run started that the test budget counts (tests/test_budget.py):
Ray instances per module, COMET oracle builds and runs per key, docs commands in bash.

A run's workers (``pytest -n 2``: xdist) are processes of their own, so a counter in a module
would see one worker's share and call a Ray instance started on each worker once. The
ledger is one file per run instead: the session's first process (xdist's controller, or the
only process) names it in ``$EVALAB_TEST_LEDGER`` before the workers start, every process
appends a line per start (``O_APPEND``: a short line is written whole), and the budget's
checks read the whole run's lines. Without the variable (a script importing a fixture
module outside pytest) nothing is recorded.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

ENV = "EVALAB_TEST_LEDGER"


def path() -> Path | None:
    """This run's ledger file (``None`` outside a test run)."""
    value = os.environ.get(ENV)
    return Path(value) if value else None


def record(event: str, key: str) -> None:
    """One ``event`` (``ray``, ``venv``, ``predict``, ``bash``...) for ``key``, by this process."""
    ledger = path()
    if ledger is None:
        return
    line = json.dumps({"event": event, "key": key, "pid": os.getpid()}) + "\n"
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def entries() -> list[dict[str, str | int]]:
    """Every line of this run so far, every worker's."""
    ledger = path()
    if ledger is None or not ledger.is_file():
        return []
    lines = ledger.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def counts(event: str) -> Counter[str]:
    """How many times this run recorded ``event``, by key."""
    return Counter(str(e["key"]) for e in entries() if e["event"] == event)


def processes(event: str) -> set[int]:
    """The processes (workers) that recorded ``event`` this run."""
    return {int(e["pid"]) for e in entries() if e["event"] == event}
