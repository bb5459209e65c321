"""The terminal writer: a table as rich prints it (box drawing, bold cells, its footer).

rich is imported inside the functions: it costs ~30 ms of start-up that JSON, LaTeX and
file output don't need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalab.report.table import Table, cell_text, flat_header, numeric_columns

__all__ = ["natural_width", "print_tables", "rich_table"]


def natural_width(tables: Sequence[Table]) -> int:
    """Characters a terminal needs to print every table without wrapping a cell (at least 80)."""
    widths = [80]
    for t in tables:
        columns = zip(flat_header(t), *([cell_text(c) for c in r] for r in t.body), strict=True)
        widths.append(sum(max(len(x) for x in col) + 3 for col in columns) + 1)
    return max(widths)


def rich_table(table: Table) -> Any:
    """The table as a rich renderable: text columns left-aligned, number columns right-aligned,
    the caption as its title, the bold cells in bold (every string shown as written)."""
    from rich.table import Table as RichTable
    from rich.text import Text

    title = Text(table.caption) if table.caption else None
    rt = RichTable(title=title, show_header=True, header_style="bold")
    for h, numeric in zip(flat_header(table), numeric_columns(table), strict=True):
        rt.add_column(Text(h), justify="right" if numeric else "left")
    for i, row in enumerate(table.body):
        rt.add_row(
            *(
                Text(cell_text(c), style="bold" if (i, j) in table.bold else "")
                for j, c in enumerate(row)
            )
        )
    return rt


def print_tables(tables: Sequence[Table], console: Any = None) -> None:
    """Print the tables (to ``console``, default stdout), a blank line between them, each
    followed by its footer lines (signatures). Piped output has no width: the console is
    sized to the tables' content rather than cut to 80 columns."""
    from rich.console import Console

    if console is None:
        console = Console(soft_wrap=True)
        if not console.is_terminal:
            console = Console(soft_wrap=True, width=natural_width(tables))
    for k, t in enumerate(tables):
        if k:
            console.print()
        console.print(rich_table(t))
        for line in t.footer:
            console.print(line, highlight=False, markup=False)
