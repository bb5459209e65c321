"""evalab.progress: one bar, a no-op without a terminal."""

from __future__ import annotations

import io

from evalab.progress import progress_bar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_terminal_or_disabled_gives_a_no_op(monkeypatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    for enabled in (True, False):
        with progress_bar(5, "work", enabled) as advance:
            advance(2)
            advance(1, failed=1)
    assert not __import__("sys").stderr.getvalue()


def test_a_terminal_gets_a_bar_that_advances(monkeypatch) -> None:
    monkeypatch.setattr("sys.stderr", _Tty())
    with progress_bar(4, "work", transient=False, fields={"failed": 0}) as advance:
        advance(3)
        advance(1, failed=2)
    out = __import__("sys").stderr.getvalue()
    assert "work" in out and "4/4" in out
