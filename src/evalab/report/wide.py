"""The wide layout of a multi-system, multi-metric result: systems as rows, metrics as columns.

One cell per system and metric, ``36.6 ± 0.9`` (the score and its interval's half-width),
the best score of each column in bold (the highest, or the lowest for a metric where lower
is better; ties all bold) and a marker after the number: ``*`` for a significant difference
to the baseline (``compare``), or the system's significance cluster (``compare --rank``).
Every writer takes the bold cells as coordinates (:attr:`WideTable.bold`), so a system name
or a marker is never read as markup.

>>> t = wide_table(
...     ["A", "B"],
...     [WideMetric("bleu", True, 1), WideMetric("ter", False, 1)],
...     {("A", "bleu"): Cell(36.61, 0.94), ("B", "bleu"): Cell(35.0, 1.0, "*"),
...      ("A", "ter"): Cell(50.0), ("B", "ter"): Cell(48.2)},
... )
>>> from evalab.report.table import cell_text
>>> t.header, [[cell_text(c) for c in row] for row in t.body], sorted(t.bold)
(['system', 'bleu ↑', 'ter ↓'], [['A', '36.6 ± 0.9', '50.0'], ['B', '35.0 ± 1.0*', '48.2']], [(0, 1), (1, 2)])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalab.report.numbers import NO_VALUE, number
from evalab.report.table import Number

__all__ = ["Cell", "WideMetric", "WideTable", "wide_table"]


@dataclass(frozen=True)
class Cell:
    """One system's value on one metric: the score, its interval's half-width (None: no
    interval) and a marker written after it (``*``, a cluster)."""

    value: float | None
    half_width: float | None = None
    marker: str = ""


@dataclass(frozen=True)
class WideMetric:
    """A column: the metric's name, its direction (None: not known, so no best in bold) and
    the decimals of its cells."""

    name: str
    higher_is_better: bool | None
    decimals: int


@dataclass(frozen=True)
class WideTable:
    """The wide table's text: header, body and the ``(row, column)`` cells set in bold."""

    header: list[str]
    body: list[list[str | Number]]
    bold: frozenset[tuple[int, int]]


def _best(values: list[float | None], higher: bool, decimals: int) -> set[int]:
    # the best as shown: two scores that print the same are both the best
    shown = [
        (i, float(number(v, decimals)))
        for i, v in enumerate(values)
        if number(v, decimals) != NO_VALUE
    ]
    if not shown:
        return set()
    top = max(v for _, v in shown) if higher else min(v for _, v in shown)
    return {i for i, v in shown if v == top}


def wide_table(
    systems: Sequence[str],
    metrics: Sequence[WideMetric],
    cells: Mapping[tuple[str, str], Cell],
    *,
    first: str = "system",
) -> WideTable:
    """Systems x metrics: ``cells[(system, metric)]`` (a missing cell is the no-value
    symbol), the best of each column in bold; headers ``name ↑`` (or ``↓``; the name alone
    where the direction is not known)."""
    arrows = {True: " ↑", False: " ↓", None: ""}
    header = [first, *(f"{m.name}{arrows[m.higher_is_better]}" for m in metrics)]
    body: list[list[str | Number]] = [[s] for s in systems]
    bold: set[tuple[int, int]] = set()
    for j, m in enumerate(metrics, start=1):
        column = [cells.get((s, m.name)) for s in systems]
        for i, c in enumerate(column):
            c = c or Cell(None)
            body[i].append(Number(c.value, m.decimals, spread=c.half_width, marker=c.marker))
        values = [None if c is None else c.value for c in column]
        if m.higher_is_better is not None:
            bold |= {(i, j) for i in _best(values, m.higher_is_better, m.decimals)}
    return WideTable(header, body, frozenset(bold))
