"""Matching the human-score file's systems to the ``-i`` system files.

A system file is known by its short name (the part of its file name that differs from the
other systems', e.g. ``Facebook-AI`` for ``newstest2021.en-de.hyp.Facebook-AI.de``), its
file name or its path. The human file names systems its own way; ``--name-map
HUMAN=SYSTEM`` says which human name belongs to which system (``Nemo=NVIDIA-NeMo``).
Without one, a human name matches a system when it is the system's short name or a
dot-separated part of its file name (``Facebook-AI`` in ``newstest2021.en-de.hyp.Facebook-AI.de``),
provided exactly one human name matches.
Human-file systems that are not among the ``-i`` files are ignored (MQM files rate
reference translations and unreleased systems too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from evalab.errors import InputError, Setting, SettingsError
from evalab.metaeval.human import HumanScores

__all__ = ["MIN_SYSTEMS", "align_human", "find_system", "parse_name_map"]

#: fewest systems a meta-evaluation accepts: two points always correlate perfectly
MIN_SYSTEMS = 3
#: the setting most refusals name (the CLI: ``--name-map``)
NAME_MAP = Setting("name_map")


def parse_name_map(items: Sequence[str]) -> dict[str, str]:
    """``["Nemo=NVIDIA-NeMo", ...]`` -> ``{"Nemo": "NVIDIA-NeMo"}`` (human name -> system)."""
    out: dict[str, str] = {}
    for item in items:
        human, sep, system = item.partition("=")
        if not sep or not human or not system:
            raise SettingsError(
                NAME_MAP, f" {item!r}: expected HUMAN_NAME=SYSTEM_NAME, e.g. Nemo=NVIDIA-NeMo"
            )
        if human in out:
            raise SettingsError(NAME_MAP, f": human system {human!r} is mapped twice")
        out[human] = system
    return out


def _matching(system: str, file_name: str, known: Sequence[str]) -> str:
    """The human name of a system: its short name, else the one dotted part of its file name."""
    if system in known:
        return system
    found = [h for h in known if f".{h}." in f".{file_name}."]
    if len(found) > 1:
        raise InputError(
            f"system {system!r}: several human systems match its file name ({', '.join(found)}); "
            "pick one with ",
            NAME_MAP,
            " HUMAN=SYSTEM",
        )
    return found[0] if found else system


def find_system(name: str, aliases: Mapping[str, str], file_names: Mapping[str, str]) -> str | None:
    """The short name of the ``-i`` system called ``name``: an alias, or the one system whose
    file name has ``name`` as a dot-separated part (``hyp.UEdin`` in ``nt.en-de.hyp.UEdin.de``)."""
    if name in aliases:
        return aliases[name]
    found = [s for s, f in file_names.items() if f".{name}." in f".{f}."]
    return found[0] if len(found) == 1 else None


def _resolve(
    human_name: str, system: str, aliases: Mapping[str, str], file_names: Mapping[str, str]
) -> str:
    """The short name of the ``-i`` system a ``--name-map`` value denotes."""
    found = find_system(system, aliases, file_names)
    if found is None:
        names = ", ".join(sorted(set(aliases.values())))
        raise InputError(
            NAME_MAP,
            f" {human_name}={system}: {system!r} is not one of the ",
            Setting("systems", said="given"),
            f" systems ({names})",
        )
    return found


def align_human(
    human: HumanScores,
    systems: Sequence[str],
    aliases: Mapping[str, str],
    name_map: Mapping[str, str],
    file_names: Mapping[str, str] | None = None,
) -> np.ndarray:
    """Human scores ``[systems, segments]`` in the order of ``systems`` (NaN = not rated).

    ``aliases`` maps every accepted name of a system (short name, file name, path) to its
    short name in ``systems``; ``file_names`` maps short names to file names.
    """
    known = human.system_names()
    by_system: dict[str, str] = {}
    for h, s in name_map.items():
        if h not in human.scores:
            raise InputError(
                NAME_MAP,
                f" {h}={s}: {human.path} has no system {h!r} (it has: {', '.join(known)})",
            )
        target = _resolve(h, s, aliases, file_names or {})
        if target in by_system:
            raise SettingsError(
                NAME_MAP,
                ": ",
                Setting("systems", said="the"),
                f" system {target!r} is named by both {by_system[target]!r} and {h!r}; "
                "map one human system to it",
            )
        by_system[target] = h
    rows = []
    taken: dict[str, str] = {}  # human system -> the -i system that took its scores
    for s in systems:
        h = by_system.get(s) or _matching(s, (file_names or {}).get(s, s), known)
        if h not in human.scores:
            raise InputError(
                f"system {s!r} has no scores in {human.path} (it has: {', '.join(known)}); "
                "name the human system with ",
                NAME_MAP,
                " HUMAN=SYSTEM",
            )
        if h in taken:
            # one set of human judgements cannot rate two different outputs
            raise InputError(
                f"systems {taken[h]!r} and {s!r} both take the scores of {h!r} in {human.path}; "
                "name each system's human scores with ",
                NAME_MAP,
                " HUMAN=SYSTEM",
            )
        taken[h] = s
        row = human.scores[h]
        if not np.isfinite(row).any():
            raise InputError(
                f"system {s!r} ({h} in {human.path}): no segment is rated (every score is None)"
            )
        rows.append(row)
    if len(rows) < MIN_SYSTEMS:
        raise InputError(
            f"meta-evaluation needs at least {MIN_SYSTEMS} systems with human scores (",
            Setting("systems"),
            f" SYS1 SYS2 SYS3 ...), got {len(rows)}: with 2, every system-level correlation "
            "is +1 or -1 whatever the metric",
        )
    return np.stack(rows)
