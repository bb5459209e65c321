"""What a system is called: ``-i NAME=PATH``, else the part of its file name that differs.

``score``, ``compare`` and ``meta-eval`` name systems the same way. A system given as
``-i NAME=PATH`` is called ``NAME`` in every table and in JSON. Any other system is
called by its file name in JSON (its path where two systems share a file name), and in
tables by the part of the file name that differs between the systems
(:func:`display_names`): ``generaltest2022.en-de.hyp.Online-A.de`` shows as ``Online-A``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalab.errors import SettingsError

__all__ = ["NamedInputs", "display_names", "named_inputs", "split_named", "system_name"]


def system_name(path: str) -> str:
    """The name a system is reported under in JSON: its file name (``stdin`` for ``-``)."""
    return "stdin" if path == "-" else Path(path).name


def display_names(names: list[str]) -> dict[str, str]:
    """Short names for the table: the part of each name that differs between systems.

    ``generaltest2022.en-de.hyp.Online-A.de`` and ``...Online-B.de`` show as ``Online-A``
    and ``Online-B``: the common prefix and suffix are dropped at a ``.`` or ``/``
    boundary only. ``-`` and ``_`` join the words of a system's own name, so cutting there
    would print ``Online-A`` and ``Online-B`` as ``A`` and ``B``, which no reader can map
    back to a system. JSON output keeps the full names.

    >>> display_names(["out/base.txt", "out/sys1.txt"])
    {'out/base.txt': 'base', 'out/sys1.txt': 'sys1'}
    >>> display_names(["hyp.Online-A.de", "hyp.Online-B.de"])
    {'hyp.Online-A.de': 'Online-A', 'hyp.Online-B.de': 'Online-B'}
    """
    unique = list(dict.fromkeys(names))
    if len(unique) < 2:
        return {n: n for n in unique}
    seps = "./"
    prefix = os.path.commonprefix(unique)  # noqa: RUF071 - characters, not path parts
    cut = max((i + 1 for i, c in enumerate(prefix) if c in seps), default=0)
    rev = os.path.commonprefix([n[::-1] for n in unique])  # noqa: RUF071
    tail = max((i + 1 for i, c in enumerate(rev) if c in seps), default=0)
    short = {n: n[cut : len(n) - tail] for n in unique}
    if any(not v for v in short.values()) or len(set(short.values())) < len(unique):
        return {n: n for n in unique}
    return short


def split_named(item: str, option: str = "-i") -> tuple[str | None, str]:
    """``(NAME, PATH)`` of an ``option`` item ``NAME=PATH``; ``(None, item)`` for a plain path.

    A path that does not exist and holds a glob character is a pattern the shell found no
    file for (and passed as it is): refused as such, not read as a file name.
    """
    name, path = _split(item, option)
    if not os.path.lexists(path) and any(c in path for c in "*?["):
        raise SettingsError(
            f"{option} {path!r}: no file matches this pattern (a shell passes a pattern "
            "that matches nothing as it is)"
        )
    return name, path


def _split(item: str, option: str = "-i") -> tuple[str | None, str]:
    """``(NAME, PATH)`` of ``NAME=PATH``; ``(None, item)`` for a plain path.

    An existing file whose name has a ``=`` is a path, and so is an item whose part before
    the ``=`` has a ``/`` (``out/a=b.txt``). A name may hold ``=`` itself: the item is cut at
    the first ``=`` after which an existing file follows (else at the first ``=``).
    """
    cuts = [i for i, c in enumerate(item) if c == "="]
    at = next((i for i in cuts if os.path.lexists(item[i + 1 :])), cuts[0] if cuts else -1)
    name, sep, path = item[:at], "=" if cuts else "", item[at + 1 :]
    if not sep or os.path.lexists(item) or "/" in name or os.sep in name:
        return None, item
    if not name.strip():
        raise SettingsError(
            f"{option} {item!r}: no name before '='; write {option} NAME=PATH (or the path alone)"
        )
    if not path:
        raise SettingsError(f"{option} {item!r}: no file after '='; write {option} NAME=PATH")
    return name, path


@dataclass(frozen=True)
class NamedInputs:
    """The ``-i`` systems: their paths, and the name each is reported under."""

    paths: list[str]
    #: path -> the name in JSON and in every row (``NAME`` of ``NAME=PATH``, else the file name)
    keys: dict[str, str]
    #: path -> the name in tables (``NAME``, else the part of the file name that differs)
    short: dict[str, str]

    def short_by_key(self) -> dict[str, str]:
        """The table name of every system, by its JSON name."""
        return {self.keys[p]: self.short[p] for p in self.paths}


def named_inputs(items: Sequence[str]) -> NamedInputs:
    """Parse ``-i`` items (``PATH`` or ``NAME=PATH``); refuse a name given twice."""
    split = [split_named(item) for item in items]
    paths = [p for _, p in split]
    given = {p: n for n, p in split if n is not None}
    files = [system_name(p) for p in paths]
    keys = {
        p: given.get(p) or (f if files.count(f) == 1 else p)
        for p, f in zip(paths, files, strict=True)
    }
    differing = display_names(files) if len(set(files)) == len(files) else display_names(paths)
    by_file = dict(zip(paths, files if len(set(files)) == len(files) else paths, strict=True))
    short = {p: given.get(p) or differing[by_file[p]] for p in paths}
    for names in (keys, short):
        seen: dict[str, str] = {}
        for p, name in names.items():
            if name in seen and seen[name] != p:
                raise SettingsError(
                    f"-i: two systems are called {name!r} ({seen[name]} and {p}); "
                    "give each its own NAME=PATH"
                )
            seen[name] = p
    return NamedInputs(paths, keys, short)
