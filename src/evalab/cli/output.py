"""Rendering result rows as a terminal table, JSON or LaTeX, to stdout or a file."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from evalab.errors import SettingsError
from evalab.io import write_text_atomic
from evalab.report.latex import latex_escape, latex_table

__all__ = ["FORMATS", "check_format", "emit", "json_safe", "latex_escape", "print_table", "to_json", "to_latex"]

FORMATS = ("table", "json", "latex")


def check_format(fmt: str, allowed: Sequence[str] = FORMATS) -> str:
    """Validate an output format name."""
    if fmt not in allowed:
        raise SettingsError(f"unknown format {fmt!r}; expected one of {', '.join(allowed)}")
    return fmt


def json_safe(value: Any) -> Any:
    """``value`` with NaN/inf floats (at any depth) replaced by ``None`` (JSON null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def to_json(rows: Sequence[dict[str, Any]] | dict[str, Any]) -> str:
    """JSON text (NaN/inf become null so the output is valid JSON)."""
    data = json_safe(rows) if isinstance(rows, dict) else [json_safe(r) for r in rows]
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_latex(header: Sequence[str], body: Sequence[Sequence[str]], caption: str = "") -> str:
    """A booktabs ``tabular`` with the first column left-aligned, the rest right-aligned."""
    return latex_table(header, body, caption)


def print_table(header: Sequence[str], body: Sequence[Sequence[str]], footer: Sequence[str] = ()) -> None:
    """Print a rich table to stdout, then footer lines (signatures)."""
    # imported here: rich costs ~30 ms of start-up that JSON, LaTeX and file output don't need
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(soft_wrap=True)
    if not console.is_terminal:
        # piped or redirected output has no width: a 80-column default would truncate long
        # system names ("generaltest2022.de-en.hy…"), so size the table to its content
        widest = [max(len(str(c)) for c in col) for col in zip(header, *body, strict=True)]
        console = Console(soft_wrap=True, width=max(80, sum(widest) + 3 * len(widest) + 1))
    table = Table(show_header=True, header_style="bold")
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right")
    for row in body:
        table.add_row(*(escape(str(c)) for c in row))
    console.print(table)
    for line in footer:
        console.print(line, highlight=False, markup=False)


def emit(text: str, out: str | None) -> None:
    """Write ``text`` to ``out`` atomically, or to stdout."""
    if out:
        write_text_atomic(out, text)
    else:
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()
