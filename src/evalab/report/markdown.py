"""The one Markdown writer: GitHub-flavoured tables and text that show every string as written.

Every command's ``-f markdown`` (``score``, ``compare``, ``meta-eval``, ``ablate report`` and
the others) escapes through :func:`md_escape` and writes tables with :func:`markdown_table`.

>>> from evalab.report.table import Number, Table
>>> print(markdown_table(Table(["system", "BLEU"], [["*bold*", Number(31.2, 1)]])), end="")
| system | BLEU |
|:--|--:|
| \\*bold\\* | 31.2 |
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from evalab.report.table import Table, TableCell, cell_parts, flat_header, numeric_columns

__all__ = ["markdown_table", "md_code", "md_escape", "md_row"]

#: characters that format Markdown text wherever they are: code spans, emphasis, strikethrough,
#: table cells (and the backslash that escapes them)
_MD_ALWAYS = re.compile(r"([\\`*~|])")


def md_escape(text: str) -> str:
    """Text that a Markdown viewer shows as written (GitHub-flavoured tables included).

    >>> print(md_escape("a|b *x* _y_ z_1 [l](u) <b> &lt; \\\\"))
    a\\|b \\*x\\* \\_y\\_ z_1 [l]\\(u) &lt;b> &amp;lt; \\\\
    """
    text = text.replace("\r", " ").replace("\n", " ")
    text = re.sub(r"&(?=#?[A-Za-z0-9]+;)", "&amp;", text)  # an entity would print as its character
    text = _MD_ALWAYS.sub(r"\\\1", text)
    # emphasis: a "_" not between two letters or digits ("d_model" is left as it is; "___" is not)
    text = re.sub(r"(?<![^\W_])_|_(?![^\W_])", r"\\_", text)
    text = text.replace("](", "]\\(")  # a link (or image) [text](target)
    # "<" before a letter, "/", "!" or "?" could open raw HTML in a Markdown viewer
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)


def md_code(text: str) -> str:
    """A code span (shown verbatim) that a backtick in ``text`` cannot close early: fenced by
    one more backtick than its longest run."""
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace(chr(10), ' ')}{pad}{fence}"


def md_row(cells: Sequence[str], bold: Collection[int] = ()) -> str:
    """One Markdown table line, every cell escaped (those at the ``bold`` indices in ``**``)."""
    texts = [md_escape(str(c)) for c in cells]
    return (
        "| " + " | ".join(f"**{t}**" if j in bold and t else t for j, t in enumerate(texts)) + " |"
    )


def _md_cell(cell: TableCell, bold: bool) -> str:
    # the marker after the bold number, escaped like the rest: "**38.4 ± 0.9**\\*"
    text, marker = (md_escape(x) for x in cell_parts(cell))
    return (f"**{text}**" if bold and text else text) + marker


def markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table (text columns left-aligned, number columns
    right-aligned), then the footer lines (signatures, notes), escaped; the bold cells in
    ``**bold**``, a cell's marker after it (``\\*``: a plain asterisk as shown)."""
    align = "|" + "|".join("--:" if n else ":--" for n in numeric_columns(table)) + "|"
    rows = [
        "| " + " | ".join(_md_cell(c, (i, j) in table.bold) for j, c in enumerate(row)) + " |"
        for i, row in enumerate(table.body)
    ]
    lines = [md_row(flat_header(table)), align, *rows]
    if table.footer:
        lines += ["", *(f"{md_escape(line)}  " for line in table.footer)]
    return "\n".join(lines) + "\n"
