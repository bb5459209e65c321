"""The one table value of every command, and what every writer asks of it.

``score``, ``compare``, ``meta-eval``, ``ppl``, ``semsim``, ``power``, ``metrics``,
``ablate status`` and ``ablate report`` build a :class:`Table`: the column names (under
optional header groups), rows of cells, footer lines (notes and signatures), a caption and
the cells set in bold. A cell is text (a ``str``: a system name, a note) or a number:
:class:`Number` (a value, optionally ``± spread`` and a marker such as a significance
``*``) or :class:`Interval`. The writers (terminal, Markdown, LaTeX, CSV/TSV, HTML, JSON)
format numbers with :mod:`evalab.report.numbers` and align columns by what they hold: a
column with numbers is right-aligned, a column of text only left-aligned.

>>> t = Table(["system", "BLEU"], [["A", Number(36.61, 1, spread=0.94, marker="*")]])
>>> cell_text(t.body[0][1]), numeric_columns(t)
('36.6 ± 0.9*', [False, True])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalab.report.numbers import NO_VALUE, interval, number, p_value

__all__ = [
    "Group",
    "Interval",
    "Number",
    "NumberText",
    "Table",
    "TableCell",
    "cell_marker",
    "cell_parts",
    "cell_text",
    "flat_header",
    "numeric_columns",
    "table_data",
]


@dataclass(frozen=True)
class Number:
    """A number cell: ``value`` with ``decimals`` decimals (``+`` before a positive one when
    ``signed``; a p-value, ``<0.001``, when ``p``), then ``± spread`` when given, then
    ``also`` in parentheses (``31.20 (31.15 ± 0.40)``: a score and its bootstrap mean), then
    the ``marker`` (``*``, `` (2)``), which the paper formats set apart (a superscript)."""

    value: float | None
    decimals: int
    signed: bool = False
    spread: float | None = None
    marker: str = ""
    p: bool = False
    scientific_from: float = math.inf
    also: Number | None = None


@dataclass(frozen=True)
class Interval:
    """An interval cell ``[low, high]``, then its ``marker``."""

    low: float | None
    high: float | None
    decimals: int
    marker: str = ""


@dataclass(frozen=True)
class NumberText:
    """A number its command has already written (``ppl``'s significant digits, ``power``'s
    formats): aligned as a number, written as it is in every format."""

    text: str


#: a cell: text as written, or a number that the writers format
TableCell = str | Number | Interval | NumberText


@dataclass(frozen=True)
class Group:
    """A header group: ``label`` over the next ``span`` columns (blank: no label)."""

    label: str
    span: int


@dataclass(frozen=True)
class Table:
    """One table: ``header`` (under ``groups``, which span every column left to right when
    given), ``body`` rows of cells, ``footer`` lines (notes, then signatures), ``caption``,
    and the ``(row, column)`` body cells set in ``bold`` (the best of a column)."""

    header: Sequence[str]
    body: Sequence[Sequence[TableCell]]
    footer: Sequence[str] = ()
    caption: str = ""
    bold: frozenset[tuple[int, int]] = frozenset()
    groups: Sequence[Group] = ()


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _number_text(c: Number) -> str:
    if c.p:
        text = p_value(c.value, c.decimals)
    else:
        text = number(c.value, c.decimals, signed=c.signed, scientific_from=c.scientific_from)
    if _finite(c.spread) and text != NO_VALUE:
        text += f" ± {number(c.spread, c.decimals, scientific_from=c.scientific_from)}"
    if c.also is not None:
        text += f" ({cell_text(c.also)})"
    return text


def cell_parts(cell: TableCell) -> tuple[str, str]:
    """The cell's text without its marker, and its marker (blank where there is no value:
    no ``*`` after the no-value symbol)."""
    if isinstance(cell, str):
        return cell, ""
    if isinstance(cell, NumberText):
        return cell.text, ""
    text = (
        _number_text(cell)
        if isinstance(cell, Number)
        else interval(cell.low, cell.high, cell.decimals)
    )
    return text, "" if text == NO_VALUE else cell.marker


def cell_text(cell: TableCell) -> str:
    """The cell as the terminal, HTML and JSON show it: its text, then its marker."""
    text, marker = cell_parts(cell)
    return text + marker


def cell_marker(cell: TableCell) -> str:
    """The cell's marker as shown (``*``, ``(2)``): :func:`cell_parts`'s, without spaces."""
    return cell_parts(cell)[1].strip()


def numeric_columns(table: Table) -> list[bool]:
    """Per column, whether it holds a number (right-aligned in every writer); a column of
    text only (names, notes, a test's method) is left-aligned."""
    return [
        any(not isinstance(row[j], str) for row in table.body) for j in range(len(table.header))
    ]


def flat_header(table: Table) -> list[str]:
    """The column names with their group's label before them (``BLEU score``), for the
    formats that have one header row (terminal, Markdown, CSV)."""
    labels = [g.label for g in table.groups for _ in range(g.span)]
    if not labels:
        return list(table.header)
    return [f"{g} {h}" if g else h for g, h in zip(labels, table.header, strict=True)]


def table_data(table: Table) -> dict[str, Any]:
    """The table as JSON data: its caption as ``heading``, the header and the cells as text."""
    return {
        "heading": table.caption,
        "header": flat_header(table),
        "body": [[cell_text(c) for c in row] for row in table.body],
    }
