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


def test_a_log_gets_plain_lines_at_most_every_interval(monkeypatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    clock = iter([0.0, 4.0, 11.0, 12.0, 25.0, 26.0])
    monkeypatch.setattr("evalab.progress.time.monotonic", lambda: next(clock))
    monkeypatch.delenv("EVALAB_PROGRESS_INTERVAL", raising=False)
    with progress_bar(100, "embedding", unit="segments") as advance:
        for _ in range(5):  # at 4 s, 11 s, 12 s, 25 s, 26 s
            advance(20)
    lines = __import__("sys").stderr.getvalue().splitlines()
    assert lines == [
        "evalab: embedding: 40/100 segments (40%), 3.6/s, about 16 s left",
        "evalab: embedding: 80/100 segments (80%), 3.2/s, about 6 s left",
    ]


def test_model_loading_says_start_and_ready(monkeypatch) -> None:
    from evalab.progress import model_loading

    monkeypatch.setattr("sys.stderr", io.StringIO())
    monkeypatch.setenv("EVALAB_PROGRESS_INTERVAL", "0")  # announce at once
    with model_loading("encoder (x)"):
        pass
    with model_loading("encoder (y)", enabled=False):
        pass
    lines = __import__("sys").stderr.getvalue().splitlines()
    assert lines[0] == "evalab: loading encoder (x) ..." and lines[1].startswith(
        "evalab: encoder (x) ready ("
    )
    assert len(lines) == 2


def test_a_quick_load_or_refusal_is_not_announced(monkeypatch) -> None:
    from evalab.progress import model_loading

    monkeypatch.setattr("sys.stderr", io.StringIO())
    monkeypatch.delenv("EVALAB_PROGRESS_INTERVAL", raising=False)
    with model_loading("encoder (x)"):
        pass
    try:
        with model_loading("encoder (y)"):
            raise ValueError("no such folder")
    except ValueError:
        pass
    assert __import__("sys").stderr.getvalue() == ""
