"""Where a study file is wrong: errors that name the file and the line of a key, and the
checks every section shares."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from evalab.ablation.contract import keys
from evalab.errors import SettingsError


class Where:
    """Builds error messages that name the file and, when found, the line of a key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str, after: str | None = None) -> int | None:
        start = 0
        if after is not None:
            pat = re.compile(r"^\s*\[+\s*" + re.escape(after) + r"\s*\]+")
            hits = [i for i, ln in enumerate(self.lines) if pat.match(ln)]
            if hits:
                start = hits[0]
        pat = re.compile(
            r"^\s*[\"']?"
            + re.escape(key)
            + r"[\"']?\s*=|[{,]\s*[\"']?"
            + re.escape(key)
            + r"[\"']?\s*="
        )
        for i in range(start, len(self.lines)):
            if pat.search(self.lines[i]):
                return i + 1
        return None

    def error(
        self, where: str, message: str, key: str | None = None, section: str | None = None
    ) -> SettingsError:
        line = self.line_of(key, section) if key else None
        loc = f"{self.path}:{line}" if line else str(self.path)
        return SettingsError(f"{loc}: {where}: {message}")

    def study_table(self, raw: Any, key: str, example: str) -> dict[str, Any]:
        """``raw``, the value of ``[study] key``, if it is a table; else an error showing
        ``example``."""
        if not isinstance(raw, dict):
            raise self.error(f"[study] {key}", f"must be a table such as {example}", key, "study")
        return raw

    def check_known(
        self, given: Iterable[str], known: Collection[str], where: str, section: str
    ) -> None:
        """An error for the first key of ``given`` that is not in ``known``, listing them."""
        for key in given:
            if key not in known:
                raise self.error(
                    f"{where} key {key!r}", f"unknown; known keys: {', '.join(known)}", key, section
                )


def table_or_default(data: dict[str, Any], name: str) -> Any:
    """A top-level section of the study file, or its declared default (a copy)."""
    return data[name] if name in data else copy.copy(keys.keys_of("")[name].default)


def check_plain(value: Any, where: str, w: Where, key: str | None = None) -> None:
    """Configurations are hashed and stored as JSON: TOML dates and times are not allowed."""
    if isinstance(value, dict):
        for k, v in value.items():
            check_plain(v, f"{where}.{k}" if key else f"{where} {k}", w, k)
    elif isinstance(value, list):
        for v in value:
            check_plain(v, where, w, key)
    elif not isinstance(value, str | int | float | bool):
        raise w.error(
            where,
            f"{value!r} is a TOML {type(value).__name__}; use a string (configurations are stored as JSON)",
            key,
        )
