"""The ``evalab`` command line: a thin layer over the library.

:func:`entry` (the console script, and ``python -m evalab``) and :func:`main` answer
``evalab --version`` from here, before typer, click, rich or numpy are imported (together
about ten times a bare interpreter's start); every other call runs the typer app of
:mod:`evalab.cli.app`, on which each command module registers itself.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from evalab.cli.version import version_line


@contextmanager
def collector_paused(freeze: bool) -> Iterator[None]:
    """The cyclic garbage collector off while start-up builds what the process keeps.

    Start-up (typer, click, numpy, the command's modules and its click command) allocates
    objects that live as long as the process: the collector ran some 60 times over them, a
    tenth of a one-line ``evalab score``. Reference counting frees objects as usual. With
    ``freeze`` (a process that runs one command) what start-up built is then left out of
    every later collection (``gc.freeze``); without it (a call from a program) the first
    collection after the block looks at it once. The collector is on again after the block
    if it was on before.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_on:
            gc.enable()


def main(argv: Sequence[str] | None = None, *, process: bool = False) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    ``process``: this call is the process's one command (the console script), so what
    start-up builds is kept out of later garbage collections (:func:`collector_paused`).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:  # the app's eager --version, without loading the app
        sys.stdout.write(version_line() + "\n")
        return 0
    with collector_paused(freeze=process):
        from evalab.cli.app import command_for, run

        root = command_for(args)
    return run(args, root)


#: commands that hold nothing an exit handler must release (no Ray, no pools outliving the
#: command; files are written atomically before they return), so their process may end
#: without Python's teardown, as mypy's fast exit does: freeing hundreds of thousands of
#: segment strings one by one costs ~40 ms of every call from a shell loop
FAST_EXIT_COMMANDS = frozenset({"score", "compare", "metrics"})


def entry() -> None:
    """Console-script entry point."""
    code = main(process=True)
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command in FAST_EXIT_COMMANDS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # `evalab compare ... | head`: the reader has gone
            pass
        os._exit(code)
    sys.exit(code)
