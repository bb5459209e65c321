"""The CSV and TSV writer: a table as a spreadsheet reads it.

Every number is split into its parts, each in a column of its own, so that a spreadsheet
reads them as numbers: ``36.6 ± 0.9`` in a column ``bleu`` becomes ``36.6`` under ``bleu``
and ``0.9`` under ``bleu ±``; an interval ``[35.6, 37.5]`` under ``CI`` becomes ``CI low``
and ``CI high``; a marker (a significance ``*``, a cluster ``(2)``) goes to ``... marker``;
a second number in parentheses (``compare``'s bootstrap mean) to ``... mean`` and
``... mean ±``. Values keep the table's decimals, without a ``+`` sign; a p-value has as
many significant digits as the table's decimals (``0.000412``, not ``<0.001``); a cell
without a value is empty. Text cells are written as they are.

CSV follows RFC 4180 (the :mod:`csv` module's quoting: a field with a comma, a quote or a
line break is quoted, quotes doubled; lines end in CRLF). TSV has no quoting: a tab or a
line break inside a cell is written as a space. After the table, an empty row, then the
footer lines (notes, signatures), each a one-field row starting with ``# ``; several tables
follow each other after an empty row.

>>> from evalab.report.table import Number, Table
>>> t = Table(["system", "bleu"], [["a, b", Number(36.61, 1, spread=0.94, marker="*")]])
>>> print(delimited_table(t, ",").replace("\\r", ""), end="")
system,bleu,bleu ±,bleu marker
"a, b",36.6,0.9,*
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

from evalab.report.numbers import NO_VALUE
from evalab.report.table import (
    Interval,
    NumberText,
    Table,
    TableCell,
    cell_marker,
    cell_text,
    flat_header,
    numeric_columns,
)

__all__ = ["DELIMITERS", "delimited_table", "delimited_tables"]

#: the formats and their delimiters
DELIMITERS = {"csv": ",", "tsv": "\t"}


def _value(x: float | None, decimals: int, p: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return ""
    if p:
        return f"{x:.{max(decimals, 1)}g}"
    text = f"{x:.{decimals}f}"
    return text.lstrip("-") if float(text) == 0 else text


def _parts(cell: TableCell) -> list[tuple[str, str]]:
    """The cell's ``(column suffix, value)`` parts: ``("", "36.6"), ("±", "0.9")``...; none
    for a cell without a value (the no-value symbol, a number that is None or NaN)."""
    if cell_text(cell) == NO_VALUE:
        return []
    if isinstance(cell, str | NumberText):
        return [("", cell_text(cell))]
    if isinstance(cell, Interval):
        out = [("low", _value(cell.low, cell.decimals)), ("high", _value(cell.high, cell.decimals))]
    else:
        out = [("", _value(cell.value, cell.decimals, cell.p))]
        out += [("±", _value(cell.spread, cell.decimals))] if cell.spread is not None else []
        if cell.also is not None:
            out += [(f"mean {k}".strip(), v) for k, v in _parts(cell.also) if k != "marker"]
    marker = cell_marker(cell)
    return out + ([("marker", marker)] if marker else [])


def _columns(table: Table) -> list[list[str]]:
    """Each column's parts' suffixes, in the order they first appear."""
    out = []
    for j, numeric in enumerate(numeric_columns(table)):
        suffixes: list[str] = [""] if not numeric else []
        for row in table.body:
            for k, _ in _parts(row[j]) if numeric else []:
                if k not in suffixes:
                    suffixes.append(k)
        out.append(suffixes or [""])
    return out


def _rows(table: Table) -> list[list[str]]:
    columns = _columns(table)
    header = [
        f"{name} {k}".rstrip()
        for name, ks in zip(flat_header(table), columns, strict=True)
        for k in ks
    ]
    rows = [header]
    for row in table.body:
        cells = []
        for cell, ks in zip(row, columns, strict=True):
            parts = dict(_parts(cell))
            cells += [parts.get(k, "") for k in ks]
        rows.append(cells)
    return rows


def delimited_table(table: Table, delimiter: str) -> str:
    """The table as CSV (``delimiter`` ``,``) or TSV (``\\t``), then its footer lines."""
    notes = [[f"# {line}"] for line in table.footer]
    rows = [*_rows(table), *([[], *notes] if notes else [])]
    if delimiter != "\t":
        buf = io.StringIO()
        csv.writer(buf, delimiter=delimiter, lineterminator="\r\n").writerows(rows)
        return buf.getvalue()
    return "".join("\t".join(_tsv_field(c) for c in r) + "\n" for r in rows)


def _tsv_field(text: str) -> str:
    return text.replace("\r\n", " ").replace("\t", " ").replace("\n", " ").replace("\r", " ")


def delimited_tables(tables: Sequence[Table], fmt: str) -> str:
    """Several tables in ``fmt`` (``csv`` or ``tsv``), an empty row between them."""
    newline = "\r\n" if fmt == "csv" else "\n"
    return newline.join(delimited_table(t, DELIMITERS[fmt]) for t in tables)
