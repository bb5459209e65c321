"""The one progress display: a rich bar on a terminal, plain lines in a log, nothing with -q.

On a terminal (stderr is a tty) the bar shows the count, the rate, the time remaining
and the time elapsed. In a log (Slurm, ``nohup``, ``2> err.txt``) a line such as
``evalab: embedding (all-MiniLM-L6-v2): 640/2037 segments (31%), 52.1/s, about 27 s left``
is written at most every :data:`LOG_INTERVAL` seconds (``EVALAB_PROGRESS_INTERVAL``
overrides it), so a long job says it is alive and a short one stays silent.

>>> with progress_bar(10, "work", enabled=False) as advance:
...     advance(3)  # a no-op when no bar is shown
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from evalab import numbers

__all__ = ["LOG_INTERVAL", "log_interval", "model_loading", "progress_bar"]

#: seconds between two progress lines when stderr is not a terminal
LOG_INTERVAL = 10.0


def log_interval() -> float:
    """Seconds between log lines: ``EVALAB_PROGRESS_INTERVAL`` when set (tests set it low)."""
    raw = os.environ.get("EVALAB_PROGRESS_INTERVAL")
    try:
        return max(0.0, numbers.parse_float(raw)) if raw else LOG_INTERVAL
    except numbers.NumberError:
        return LOG_INTERVAL


@contextlib.contextmanager
def progress_bar(
    total: int | None,
    description: str,
    enabled: bool = True,
    *,
    transient: bool = True,
    fields: dict[str, Any] | None = None,
    extra_columns: tuple[Any, ...] = (),
    unit: str = "",
) -> Iterator[Callable[..., None]]:
    """Yield ``advance(k=1, **fields)``, which moves the bar by ``k`` (and updates ``fields``).

    With ``enabled=False`` ``advance`` does nothing, so callers never branch on whether
    progress is shown. ``extra_columns`` are rich columns shown after the count (they may
    read ``task.fields``, given initial values in ``fields``); ``unit`` names what is
    counted (``segments``, ``tokens``) in the bar's rate and in log lines.
    """
    if not enabled:
        yield lambda k=1, **_: None
        return
    if not sys.stderr.isatty():
        yield _LogLines(total, description, unit, log_interval()).advance
        return
    # imported here: rich costs start-up time that runs without a bar don't need
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    counted = (TextColumn(unit),) if unit else ()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *counted,
        *extra_columns,
        _rate_column(),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=transient) as bar:
        task = bar.add_task(description, total=total, **(fields or {}))
        yield lambda k=1, **update: bar.update(task, advance=k, **update)


def _rate_column() -> Any:
    """A rich column with the items per second (built here: rich loads on a terminal only)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")

    return RateColumn()


class _LogLines:
    """Plain progress lines on stderr, at most one per ``interval`` seconds."""

    def __init__(self, total: int | None, description: str, unit: str, interval: float) -> None:
        self.total, self.description, self.unit, self.interval = total, description, unit, interval
        self.done = 0
        self.start = self.last = time.monotonic()

    def advance(self, k: int = 1, **_: Any) -> None:
        self.done += k
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            sys.stderr.write(f"evalab: {self.line(now - self.start)}\n")
            sys.stderr.flush()

    def line(self, elapsed: float) -> str:
        """``description: done/total unit (pct), rate/s, about N s left``."""
        unit = f" {self.unit}" if self.unit else ""
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if not self.total:
            return f"{self.description}: {self.done:,}{unit}, {rate:,.1f}/s"
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta = f", about {_duration(left)} left" if left == left else ""
        return f"{self.description}: {self.done:,}/{self.total:,}{unit} ({self.done / self.total:.0%}), {rate:,.1f}/s{eta}"


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    return (
        f"{minutes} min {s:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
    )


#: seconds a model may take to load on a terminal before its "loading" line is written
LOAD_LINE_DELAY = 0.5


@contextlib.contextmanager
def model_loading(name: str, enabled: bool = True) -> Iterator[None]:
    """A line when a model starts loading and one when it is ready (with the time it took).

    The first line waits :data:`LOAD_LINE_DELAY` seconds on a terminal and the log
    interval in a log, so only a load that takes time is announced, and a model refused
    at once gives its one-line error alone.
    """
    if not enabled:
        yield
        return
    start = time.monotonic()
    shown = threading.Event()

    def announce() -> None:
        sys.stderr.write(f"evalab: loading {name} ...\n")
        sys.stderr.flush()
        shown.set()

    # on a terminal after a moment; in a log like any progress line (a refusal found within
    # the interval stays the one line it is)
    delay = min(LOAD_LINE_DELAY, log_interval()) if sys.stderr.isatty() else log_interval()
    timer = threading.Timer(delay, announce)
    if delay == 0:
        announce()
    else:
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        timer.cancel()
    if shown.is_set():
        sys.stderr.write(f"evalab: {name} ready ({time.monotonic() - start:.1f} s)\n")
        sys.stderr.flush()
