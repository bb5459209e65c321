"""The study file's ``[display]`` table: how the report names and shows configuration keys.

The report has one column per configuration key that some row changes (Table 3 of
"Attention Is All You Need": h, d_k, P_drop, ε_ls, ...). ``[display]`` only changes how
those columns look, never which rows or numbers there are::

    [display]
    columns = { heads = "h", d_k = "d_k", dropout = "P_drop" }   # key -> column name, in this order
    derived = { d_k = "d_model / heads" }                         # a column computed from each row's configuration
    values = { pos_encoding = { sin = "sinusoid" } }              # how a value is written in its column

A derived column is ``KEY op KEY`` (or a number on either side) with ``op`` one of
``+ - * /``, computed from the configuration each row actually ran with, and the report
says so in a note: it is shown, never stored or passed to a run.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from evalab.ablation.study.grid import format_level

DISPLAY_KEYS = ("columns", "derived", "values")
_OPS: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}
# a number is digits with at most one decimal point ("2", "0.5", ".5"): "1.2.3" is no operand
_OPERAND = r"[A-Za-z_][\w]*|[0-9]+(?:\.[0-9]*)?|\.[0-9]+"
_EXPR_RE = re.compile(rf"^\s*({_OPERAND})\s*([-+*/])\s*({_OPERAND})\s*$")
_NAME_RE = re.compile(r"^[A-Za-z_][\w]*$")


@dataclass(frozen=True)
class Display:
    """Parsed ``[display]``: column names, derived columns (name -> expression), value labels."""

    columns: dict[str, str] = field(default_factory=dict)
    derived: dict[str, str] = field(default_factory=dict)
    values: dict[str, dict[str, str]] = field(default_factory=dict)

    def name(self, key: str) -> str:
        """The column name of ``key`` (the key itself when none is given)."""
        return self.columns.get(key, key)

    def value(self, key: str, config: dict[str, Any]) -> Any:
        """The value of column ``key`` in ``config`` (None when absent or not computable)."""
        if key in self.derived:
            return derive(self.derived[key], config)
        return config.get(key)

    def text(self, key: str, value: Any) -> str:
        """``value`` as written in column ``key``: its label when one is declared."""
        if value is None:
            return "–"
        plain = format_level(value)
        return self.values.get(key, {}).get(plain, plain)


def derive(expression: str, config: dict[str, Any]) -> float | int | None:
    """The value of ``KEY op KEY`` in ``config``; an integer when exact, None when an operand
    is missing or not a number, or on division by zero.

    >>> derive("d_model / heads", {"d_model": 32, "heads": 4}), derive("d_model / heads", {"d_model": 32, "heads": 3})
    (8, 10.666666666666666)
    >>> derive("d_model / heads", {"d_model": 32, "heads": 0}) is None
    True
    """
    m = _EXPR_RE.match(expression)
    if m is None:
        return None
    left, op, right = m.groups()
    operands = []
    for token in (left, right):
        v = config.get(token) if _NAME_RE.match(token) else float(token)
        if not isinstance(v, int | float) or isinstance(v, bool):
            return None
        operands.append(float(v))
    if op == "/" and operands[1] == 0:
        return None
    out = _OPS[op](*operands)
    if not math.isfinite(out):
        return None
    return int(out) if out.is_integer() else out


def parse_display(
    raw: Any, keys: Iterable[str], error: Callable[[str, str, str | None], Exception]
) -> Display:
    """Validate ``[display]`` against the study's configuration ``keys``; ``error(where,
    message, key)`` builds the exception raised for the first problem."""
    if not isinstance(raw, dict):
        raise error("[display]", "must be a table with columns, derived and values", None)
    for k in raw:
        if k not in DISPLAY_KEYS:
            raise error(
                f"[display] key {k!r}", f"unknown; known keys: {', '.join(DISPLAY_KEYS)}", k
            )
    ordered = list(keys)
    derived = _derived(raw.get("derived", {}), set(ordered), error)
    columns = _columns(raw.get("columns", {}), ordered, derived, error)
    values_raw = raw.get("values", {})
    if not isinstance(values_raw, dict):
        raise error(
            "[display] values",
            'must be a table such as { pos_encoding = { sin = "sinusoid" } }',
            "values",
        )
    values = {}
    for k, table in values_raw.items():
        if k not in ordered and k not in derived:
            raise error(
                f"[display] values {k}", "is neither a configuration key nor a derived column", k
            )
        values[k] = _string_table(table, f"[display] values {k}", error)
    return Display(columns, derived, values)


def _derived(
    raw: Any, known: set[str], error: Callable[[str, str, str | None], Exception]
) -> dict[str, str]:
    """``[display] derived``: new column name -> ``KEY op KEY`` over configuration keys."""
    derived = _string_table(raw, "[display] derived", error)
    for name, expr in derived.items():
        if name in known:
            raise error(
                f"[display] derived {name}",
                "is a configuration key; a derived column needs a new name",
                name,
            )
        m = _EXPR_RE.match(expr)
        names = [t for t in (m.groups()[::2] if m else ()) if _NAME_RE.match(t)]
        if m is None or not names or any(t not in known for t in names):
            raise error(
                f"[display] derived {name}",
                f"{expr!r} is not KEY op KEY (op one of + - * /, KEY a "
                'configuration key or a number, at least one key), e.g. "d_model / heads"',
                name,
            )
    return derived


def _columns(
    raw: Any,
    ordered: list[str],
    derived: dict[str, str],
    error: Callable[[str, str, str | None], Exception],
) -> dict[str, str]:
    """``[display] columns``: key or derived column -> its title, every title shown once."""
    columns = _string_table(raw, "[display] columns", error)
    for k in columns:
        if k not in ordered and k not in derived:
            raise error(
                f"[display] columns {k}",
                "is neither a configuration key ([base], [evaluation]) nor a derived column",
                k,
            )
    shown: dict[str, str] = {}
    for k in [*ordered, *derived]:
        title = columns.get(k, k)
        if title in shown:
            raise error(
                f"[display] columns {k}",
                f"is shown as {title!r}, the name of column {shown[title]!r} too; "
                "give each column its own name",
                k if k in columns else None,
            )
        shown[title] = k
    return columns


def _operands(expression: str) -> tuple[str, ...]:
    """The two operands of ``KEY op KEY`` (none when it is not of that form)."""
    m = _EXPR_RE.match(expression)
    return m.groups()[::2] if m else ()


def check_rows(
    display: Display,
    rows: Iterable[tuple[str, dict[str, Any]]],
    error: Callable[[str, str, str | None], Exception],
) -> None:
    """``[display]`` against the configuration of every row (``(label, config)`` pairs).

    A derived column must be a number in every row: a cell that cannot be computed
    (division by zero, a text or missing operand) would read as "–" next to real values.
    A value label must name a value some row has: a typo would silently label nothing.
    """
    rows = list(rows)
    for name, expr in display.derived.items():
        for label, config in rows:
            if derive(expr, config) is None:
                operands = ", ".join(
                    f"{t} = {config.get(t)!r}" for t in _operands(expr) if _NAME_RE.match(t)
                )
                raise error(
                    f"[display] derived {name}",
                    f"{expr!r} is not a finite number in row {label!r} "
                    f"({operands}): divide only by keys that are never 0 and use numeric keys",
                    name,
                )
    for key, labels in display.values.items():
        shown = {
            format_level(v)
            for v in (display.value(key, config) for _, config in rows)
            if v is not None
        }
        for value in labels:
            if value not in shown:
                raise error(
                    f"[display] values {key}",
                    f"labels {value!r}, which is no value of {key} in any row "
                    f"(values: {', '.join(sorted(shown))}); write the value as the report shows it",
                    key,
                )


def _string_table(
    raw: Any, where: str, error: Callable[[str, str, str | None], Exception]
) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) and v for v in raw.values()):
        raise error(where, 'must be a table of key = "non-empty text"', None)
    return dict(raw)
