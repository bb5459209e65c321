"""The ``evalab`` command line: a thin layer over the library.

:func:`entry` (the console script, and ``python -m evalab``) and :func:`main` answer
``evalab --version`` from here, before typer, click, rich or numpy are imported (together
about ten times a bare interpreter's start); every other call runs the typer app of
:mod:`evalab.cli.app`, on which each command module registers itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def version_line() -> str:
    """What ``evalab --version`` prints."""
    from evalab._version import __version__

    return f"evalab {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:  # the app's eager --version, without loading the app
        sys.stdout.write(version_line() + "\n")
        return 0
    from evalab.cli.app import run

    return run(args)


#: commands that hold nothing an exit handler must release (no Ray, no pools outliving the
#: command; files are written atomically before they return), so their process may end
#: without Python's teardown, as mypy's fast exit does: freeing hundreds of thousands of
#: segment strings one by one costs ~40 ms of every call from a shell loop
FAST_EXIT_COMMANDS = frozenset({"score", "compare", "metrics"})


def entry() -> None:
    """Console-script entry point."""
    code = main()
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command in FAST_EXIT_COMMANDS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # `evalab compare ... | head`: the reader has gone
            pass
        os._exit(code)
    sys.exit(code)
