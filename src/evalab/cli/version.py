"""``evalab --version``'s line, for the fast path of :func:`evalab.cli.main` (before the app
is loaded) and for the app's own ``--version`` option alike."""

from __future__ import annotations


def version_line() -> str:
    """What ``evalab --version`` prints."""
    from evalab._version import __version__

    return f"evalab {__version__}"
