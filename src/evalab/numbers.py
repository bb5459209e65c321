"""The one grammar of every number a user gives: per-item score files, run metrics files,
logged curves, imported runs, human scores, ``--set`` values and numeric options.

Python's ``float()`` and ``int()`` accept more than a number written in a file should be:
``float("7_5")`` is 75.0, ``int("٣")`` is 3, ``float("1e400")`` is infinity, and
``float(10**400)`` raises ``OverflowError``. Here a number is the decimal literal of JSON
and CSV exports (an optional sign, digits with at most one point, an optional exponent),
nothing else; its value must be finite, and an integer literal must be exact as a float
(at most 2**53 in magnitude), since every stored metric is a float.

Refusals raise :class:`NumberError` with a reason code; the caller names the file, the line
and the field. A value already parsed elsewhere (``json.loads``, TOML, a worker's return
value) is held to the same rules by :func:`number_value`; JSON text is read by :func:`loads`,
which never turns a digit string into a Python ``int`` (a 400-digit integer is a refusal, not
an ``OverflowError``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
#: the words for a value that is no finite number (Python's, JSON's, spreadsheets')
_NOT_FINITE = {"nan", "inf", "infinity", ".nan", ".inf"}
#: the largest integer every one below which a float holds exactly
EXACT_INT = 2**53
#: reason codes of NumberError, with what each means (the caller's words)
REASONS = {
    "syntax": "not a decimal number (digits, one optional point and exponent; no underscores, hex or words)",
    "range": "beyond the range of a float (about 1.8e308; a non-zero value under about 5e-324 reads as 0)",
    "inexact": "an integer beyond 2**53 = 9007199254740992, which a float cannot hold exactly",
    "not-finite": "not a finite number",
    "not-integer": "not a whole number (digits only, no point or exponent)",
}


class NumberError(ValueError):
    """A text that is not a number this module accepts; ``reason`` is a key of :data:`REASONS`."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"{shown(text)}: {REASONS[reason]}")
        self.text = text
        self.reason = reason


def shown(text: str) -> str:
    """``text`` quoted for a one-line message, a long one cut (a 400-digit integer)."""
    return repr(text) if len(text) <= 40 else f"{text[:24]!r}... ({len(text)} characters)"


def parse_number(text: str) -> float | int:
    """The value of a decimal literal: an ``int`` for an integer literal, else a ``float``.

    Surrounding spaces are allowed (a CSV cell ``" 0.5"``); nothing else.

    >>> parse_number("0.25"), parse_number(" -3 "), parse_number("1e-3")
    (0.25, -3, 0.001)
    >>> parse_number("7_5")
    Traceback (most recent call last):
    ...
    evalab.numbers.NumberError: '7_5': not a decimal number (digits, one optional point and exponent; no underscores, hex or words)
    """
    stripped = text.strip(" \t")
    if not _NUMBER_RE.fullmatch(stripped):
        word = stripped.lstrip("+-").lower()
        raise NumberError(text, "not-finite" if word in _NOT_FINITE else "syntax")
    if _INTEGER_RE.fullmatch(stripped):
        if len(stripped.lstrip("+-").lstrip("0")) > 16 or abs(int(stripped)) > EXACT_INT:
            raise NumberError(text, "inexact")
        return int(stripped)
    value = float(stripped)
    mantissa = re.split("[eE]", stripped)[0]
    if not math.isfinite(value) or (value == 0.0 and any(c in "123456789" for c in mantissa)):
        raise NumberError(text, "range")  # too large, or so small that it reads as 0 (1e-400)
    return value


def parse_float(text: str) -> float:
    """:func:`parse_number` as a ``float`` (``"3"`` is 3.0).

    >>> parse_float("1")
    1.0
    """
    return float(parse_number(text))


def parse_int(text: str) -> int:
    """:func:`parse_number` of an integer literal (``"3.0"`` and ``"1e3"`` are refused).

    >>> parse_int(" 42 ")
    42
    """
    stripped = text.strip(" \t")
    if _NUMBER_RE.fullmatch(stripped) and not _INTEGER_RE.fullmatch(stripped):
        raise NumberError(text, "not-integer")  # 1.5, 1e3, 1e400: a number, not a whole one
    value = parse_number(text)
    assert isinstance(value, int)
    return value


def number_value(value: object) -> float | int:
    """A number parsed elsewhere, held to :func:`parse_number`'s rules: an ``int`` (not a
    ``bool``) at most 2**53 in magnitude, or a finite ``float``; :class:`NumberError`
    otherwise (``TypeError`` for a value that is no number at all).

    >>> number_value(3), number_value(0.5)
    (3, 0.5)
    >>> number_value(10**400)
    Traceback (most recent call last):
    ...
    evalab.numbers.NumberError: '100000000000000000000000'... (401 characters): an integer beyond 2**53 = 9007199254740992, which a float cannot hold exactly
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    if isinstance(value, int):
        if abs(value) > EXACT_INT:
            raise NumberError(_int_text(value), "inexact")
        return value
    if not math.isfinite(value):
        raise NumberError(repr(value), "not-finite")
    return value


def _int_text(value: int) -> str:
    """``str(value)``, or its first digits and size past Python's 4300-digit ``str`` limit."""
    try:
        return str(value)
    except ValueError:
        return f"{value >> (value.bit_length() - 64)}... (about {value.bit_length() * 30103 // 100000} digits)"


def read_value(value: object) -> float | int:
    """A number as a file holds it: text by :func:`parse_number`, a parsed number by
    :func:`number_value`, a :class:`Refused` JSON number raises its error; ``TypeError`` for
    anything else (a bool, None, a list).

    >>> read_value("0.5"), read_value(3)
    (0.5, 3)
    """
    if isinstance(value, str):
        return parse_number(value)
    if isinstance(value, Refused):
        raise value.error
    return number_value(value)


class Refused:
    """A JSON number that :func:`parse_number` refuses, kept in place so the caller can say
    which key held it (``json.loads`` hooks do not know the key)."""

    __slots__ = ("error",)

    def __init__(self, error: NumberError) -> None:
        self.error = error

    def __repr__(self) -> str:
        return self.error.text


def _json_number(text: str) -> Any:
    try:
        return parse_number(text)
    except NumberError as exc:
        return Refused(exc)


def _json_constant(text: str) -> Refused:
    return Refused(NumberError(text, "not-finite"))


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads`` with every number read by :func:`parse_number`; a number it refuses
    (and ``NaN``/``Infinity``) is a :class:`Refused` in the result. JSON nested too deeply
    for Python's parser is a ``json.JSONDecodeError`` like any other bad JSON."""
    try:
        return json.loads(
            text,
            parse_int=_json_number,
            parse_float=_json_number,
            parse_constant=_json_constant,
            **kwargs,
        )
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError("nested too deeply", doc, 0) from None


def first_refused(value: Any, path: str = "") -> tuple[str, Refused] | None:
    """The first :class:`Refused` inside ``value`` (dicts and lists), with its key path."""
    if isinstance(value, Refused):
        return path, value
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        found = first_refused(
            item,
            f"{path}.{key}"
            if path and isinstance(key, str)
            else f"{path}[{key}]"
            if not isinstance(key, str)
            else key,
        )
        if found is not None:
            return found
    return None
