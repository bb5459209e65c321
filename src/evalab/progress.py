"""The one progress bar: rich on stderr, only when asked for and stderr is a terminal.

>>> with progress_bar(10, "work", enabled=False) as advance:
...     advance(3)  # a no-op when no bar is shown
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(
    total: int | None,
    description: str,
    enabled: bool = True,
    *,
    transient: bool = True,
    fields: dict[str, Any] | None = None,
    extra_columns: tuple[Any, ...] = (),
) -> Iterator[Callable[..., None]]:
    """Yield ``advance(k=1, **fields)``, which moves the bar by ``k`` (and updates ``fields``).

    Without a terminal on stderr (or with ``enabled=False``) ``advance`` does nothing, so
    callers never branch on whether a bar is shown. ``extra_columns`` are rich columns
    shown after the count (they may read ``task.fields``, given initial values in
    ``fields``); the bar ends with the time remaining and the time elapsed.
    """
    if not enabled or not sys.stderr.isatty():
        yield lambda k=1, **_: None
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

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), *extra_columns,
               TimeRemainingColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=transient) as bar:
        task = bar.add_task(description, total=total, **(fields or {}))
        yield lambda k=1, **update: bar.update(task, advance=k, **update)
