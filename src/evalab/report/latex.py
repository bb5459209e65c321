"""The one LaTeX table writer: booktabs tables for ``score``/``compare`` and ablation reports.

Every table fits a standard article's text width and compiles with pdflatex (Debian:
texlive-latex-base + texlive-latex-recommended) under this preamble (:data:`PREAMBLE`)::

    \\documentclass{article}
    \\usepackage{booktabs,graphicx}  % \\toprule ...; \\resizebox (a table never overflows)

>>> from evalab.report.table import Number, Table
>>> print(latex_table(Table(["system", "BLEU"], [["base_1", Number(31.2, 1)]], caption="50% & more")), end="")
\\begin{table}[t]
\\centering
\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%
\\begin{tabular}{lr}
\\toprule
system & BLEU \\\\
\\midrule
base\\_1 & 31.2 \\\\
\\bottomrule
\\end{tabular}}
\\caption{50\\% \\& more}
\\end{table}
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evalab.report.table import Table, TableCell, cell_parts, cell_text, numeric_columns

__all__ = [
    "MATH_SYMBOLS",
    "PREAMBLE",
    "TEXT_WIDTH_PT",
    "WHOLE",
    "LatexLayout",
    "fits_page",
    "latex_comments",
    "latex_paragraph",
    "latex_table",
    "latex_text",
    "split_columns",
]

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "|": r"\textbar{}",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}

#: characters pdflatex's default fonts lack (it prints "<" as an inverted "!")
MATH_SYMBOLS = {
    "±": r"$\pm$",
    "Δ": r"$\Delta$",
    "↑": r"$\uparrow$",
    "↓": r"$\downarrow$",
    "–": "--",
    "—": "---",
    "ε": r"$\varepsilon$",
    "→": r"$\rightarrow$",
    "≈": r"$\approx$",
    "<": r"$<$",
    ">": r"$>$",
    "−": "-",
    "·": r"$\cdot$",
    "√": r"$\surd$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "α": r"$\alpha$",
    "μ": r"$\mu$",
    "µ": r"$\mu$",
    "τ": r"$\tau$",
    "ρ": r"$\rho$",
    "σ": r"$\sigma$",
    "χ": r"$\chi$",
    "×": r"$\times$",
    "…": r"\ldots{}",
    "’": "'",
    "‘": "`",
    "“": "``",
    "”": "''",
    "\u00a0": "~",
    "│": r"\textbar{}",
    "✓": r"$\surd$",
    "✗": r"$\times$",
    "²": r"$^2$",
}

#: a Greek letter with a one-letter subscript, as in Kendall's τ_b (escaped: ``τ\\_b``)
_GREEK_SUBSCRIPT = re.compile(r"([αεμρστχ])\\_([A-Za-z0-9])(?![A-Za-z0-9])")

#: combining marks that LaTeX writes as accent commands (é = e + U+0301 -> \'{e})
_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0308": '"',
    "\u030a": "r",
    "\u030c": "v",
    "\u0327": "c",
    "\u0328": "k",
    "\u0306": "u",
    "\u030b": "H",
}


def _escape(text: str) -> str:
    # the specials only: :func:`latex_text` is the one escaper the writers use
    return "".join(_SPECIAL.get(c, c) for c in text)


def latex_text(text: str) -> str:
    """Escaped text that pdflatex compiles with its default fonts: the symbols tables print
    as math, accented Latin letters as accent commands, and any other non-ASCII character
    (a system name in Chinese, say) as its code point, ``[U+4E2D]``, rather than an error.

    >>> print(latex_text("μ ± hw, Δ of Müller_2, τ_b"))
    $\\mu$ $\\pm$ hw, $\\Delta$ of M\\"{u}ller\\_2, $\\tau_b$
    """
    text = _GREEK_SUBSCRIPT.sub(
        lambda m: "$" + MATH_SYMBOLS[m[1]].strip("$") + "_" + m[2] + "$", _escape(text)
    )
    return "".join(_ascii_latex(ch) for ch in text)


#: escaped characters after which a long token may break across lines (a metric signature, a path)
_BREAK_AFTER = re.compile(r"(\\textbar\{\}|\\_|/|;|,|=|\$>\$)(?!\\allowbreak)")


def latex_paragraph(text: str) -> str:
    """:func:`latex_text` for running text (captions, notes): a long token without spaces,
    such as ``bleu|nrefs:1|...`` or a path, may break after ``|``, ``/``, ``_``, ``;``,
    ``,``, ``=`` and ``>`` instead of running into the margin.

    >>> latex_paragraph("bleu|nrefs:1")
    'bleu\\\\textbar{}\\\\allowbreak{}nrefs:1'
    """
    return _BREAK_AFTER.sub(r"\1\\allowbreak{}", latex_text(text))


def _ascii_latex(ch: str) -> str:
    if ch.isascii() and ch not in "<>":
        return ch
    if ch in MATH_SYMBOLS:
        return MATH_SYMBOLS[ch]
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if base.isascii() and base.isalpha() and len(marks) == 1 and marks[0] in _ACCENTS:
        return rf"\{_ACCENTS[marks[0]]}{{{base}}}"
    return f"[U+{ord(ch):04X}]"


#: what every table needs in the preamble: booktabs for the rules, graphicx for ``\\resizebox``,
#: array for the wrapped (``p{}``) label columns
PREAMBLE = r"\usepackage{booktabs,graphicx,array}"

#: a standard article's text width (10pt class: 345pt), and an upper estimate of one
#: character's width in a table cell (\small: 9pt digits are 4.5pt; ±, Δ and capitals are wider)
TEXT_WIDTH_PT = 345.0
_CHAR_PT = {True: 5.0, False: 5.6}
#: the characters of a number cell, at their bold 10pt widths (Computer Modern: a bold digit is
#: 5.75pt, "." 3.19pt, a space 3.83pt; "±" is math, 7.78pt); \small scales them by 0.9
_NUMBER_PT = {**dict.fromkeys("0123456789", 5.75), ".": 3.2, ",": 3.2, " ": 3.85, "±": 7.8}
_COLUMN_SEP_PT = 12.0  # 2 x \tabcolsep
#: how much wider than the text a table may be estimated for the wide layout to be the
#: default: ``\resizebox`` shrinks it to at least 1/1.1 = 91% (the estimate is an upper bound)
WIDE_TOLERANCE = 1.1

#: a left-aligned column whose longest cell is longer than this is wrapped in a ``p{}`` column
WRAP_CHARS = 24
_WRAPPED = r">{\raggedright\arraybackslash}p{%dpt}"
#: the narrowest a wrapped column is set (11em at 10pt); it takes the text width the others leave
_WRAP_MIN_PT = 110


@dataclass(frozen=True)
class LatexLayout:
    """How a table is written: ``split`` (by columns into "part i of k" tables when wider than
    the page, off by default), ``fragment`` (the ``tabular`` alone, to ``\\input`` in a float
    of one's own) and ``small`` (``\\small`` type)."""

    split: bool = False
    fragment: bool = False
    small: bool = False


#: the default layout: one float per table, never split
WHOLE = LatexLayout()


def latex_table(table: Table, layout: LatexLayout = WHOLE, *, keep: int = 1) -> str:
    """One booktabs ``table`` (preamble: :data:`PREAMBLE`), or its ``tabular`` alone.

    Text columns are left-aligned, number columns right-aligned; cells are written with
    :func:`latex_text`, so the table compiles with pdflatex, and a cell's marker (a
    significance ``*``, a cluster) as a superscript, ``$^{*}$``, after the number (outside
    its bold). A header ``name (what)`` is set on two lines, header groups as
    ``\\multicolumn`` over a ``\\cmidrule``; a label column (text before the first number
    column) with long cells is wrapped (``p{}``). The table is shrunk to the text width should it be wider, so pdflatex never
    reports an overfull box. The footer lines (signatures) follow the table as ``%``
    comments, not in the caption. With ``layout.split`` a table wider than the estimate of
    the page is split by columns into parts, each repeating the first ``keep`` columns and
    captioned "part i of k".
    """
    header, texts = list(table.header), _texts(table)
    cols = list(_column_specs(table, texts))
    groups = [(k, g.label) for k, g in enumerate(table.groups) for _ in range(g.span)]
    parts = (
        split_columns(header, texts, keep=keep, small=layout.small)
        if layout.split
        else [list(range(len(header)))]
    )
    out = []
    for i, part in enumerate(parts):
        caption = table.caption
        cap = caption if len(parts) == 1 else f"{caption} (part {i + 1} of {len(parts)})".lstrip()
        out.append(
            _one_table(
                [header[j] for j in part],
                [[row[j] for row in table.body] for j in part],
                [cols[j] for j in part],
                cap,
                layout=layout,
                bold={(r, k) for k, j in enumerate(part) for r, c in table.bold if c == j},
                groups=[groups[j] for j in part] if groups else [],
            )
        )
    return "\n".join(out) + latex_comments(table.footer)


def _texts(table: Table) -> list[list[str]]:
    return [[cell_text(c) for c in row] for row in table.body]


def latex_comments(lines: Sequence[str]) -> str:
    """``lines`` as LaTeX ``%`` comments (kept in the source, not typeset), in ASCII.

    >>> print(latex_comments(["bleu|nrefs:1|μ"]), end="")
    % bleu|nrefs:1|$\\mu$
    """
    return "".join(
        "% " + "".join(_ascii_latex(ch) for ch in line.replace("\n", " ")) + "\n" for line in lines
    )


def _column_specs(table: Table, texts: list[list[str]]) -> Iterator[str]:
    header, numeric = list(table.header), numeric_columns(table)
    # the label columns (text before the first number column; the first column at least) wrap;
    # a text column after the numbers (a note, a method) stays one line
    labels = max(1, numeric.index(True) if True in numeric else 1)
    kinds = []
    for j, number_column in enumerate(numeric):
        longest = max((len(row[j]) for row in texts), default=0)
        kinds.append("r" if number_column else "p" if longest > WRAP_CHARS and j < labels else "l")
    rest = sum(_width_pt(header, texts, j, False) for j, k in enumerate(kinds) if k != "p")
    wrapped = kinds.count("p")
    width = max(_WRAP_MIN_PT, (TEXT_WIDTH_PT - rest) / max(wrapped, 1) - _COLUMN_SEP_PT)
    yield from (_WRAPPED % width if k == "p" else k for k in kinds)


def _latex_cell(cell: TableCell, wrapped: bool, bold: bool) -> str:
    text, marker = cell_parts(cell)
    tex = latex_paragraph(text) if wrapped else latex_text(text)
    tex = rf"\textbf{{{tex}}}" if bold and tex else tex
    return tex + (rf"$^{{{latex_text(marker.strip())}}}$" if marker.strip() else "")


def _group_lines(groups: list[tuple[int, str]]) -> list[str]:
    """The header groups' row (``\\multicolumn``) and their rules (``\\cmidrule``)."""
    runs: list[list[Any]] = []  # [group index, label, first column, span]
    for j, (k, label) in enumerate(groups):
        if runs and runs[-1][0] == k:
            runs[-1][3] += 1
        else:
            runs.append([k, label, j, 1])
    cells = [
        rf"\multicolumn{{{span}}}{{c}}{{{latex_text(label)}}}" if span > 1 else latex_text(label)
        for _, label, _, span in runs
    ]
    rules = "".join(
        rf"\cmidrule(lr){{{first + 1}-{first + span}}}" for _, label, first, span in runs if label
    )
    return [" & ".join(cells) + r" \\", *([rules] if rules else [])]


def _one_table(
    header: list[str],
    columns: list[list[TableCell]],
    cols: list[str],
    caption: str,
    *,
    layout: LatexLayout,
    bold: set[tuple[int, int]],
    groups: list[tuple[int, str]],
) -> str:
    lines = [rf"\begin{{tabular}}{{{''.join(cols)}}}", r"\toprule"]
    lines += _group_lines(groups) if any(label for _, label in groups) else []
    lines.append(
        " & ".join(
            _header_cell(h, "l" if a.startswith(">") else a)
            for h, a in zip(header, cols, strict=True)
        )
        + r" \\"
    )
    lines.append(r"\midrule")
    for i, row in enumerate(zip(*columns, strict=True)):
        lines.append(
            " & ".join(
                _latex_cell(c, a.startswith(">"), (i, j) in bold)
                for j, (c, a) in enumerate(zip(row, cols, strict=True))
            )
            + r" \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}"]
    if layout.fragment:
        return "\n".join(lines) + "\n"
    # the tabular at its natural width, or at the line's width when wider than that
    lines[0] = r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%" + "\n" + lines[0]
    lines[-1] += "}"
    head = [r"\begin{table}[t]", r"\centering", *([r"\small"] if layout.small else [])]
    tail = [rf"\caption{{{latex_paragraph(caption)}}}"] if caption else []
    return "\n".join([*head, *lines, *tail, r"\end{table}"]) + "\n"


def _header_lines(h: str) -> list[str]:
    # "seq_acc ↑ (mean ± sd)" -> "seq_acc ↑" over "(mean ± sd)": headers are the widest cells
    name, sep, what = h.partition(" (")
    return [name, sep.strip() + what] if sep and name else [h]


def _header_cell(h: str, align: str) -> str:
    lines = _header_lines(h)
    if len(lines) == 1:
        return latex_text(h)
    align = "l" if align not in "lrc" else align
    return (
        rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}"
        + r"\\".join(latex_text(x) for x in lines)
        + r"\end{tabular}"
    )


def _text_pt(text: str, small: bool) -> float:
    scale = 0.9 if small else 1.0
    return sum(_NUMBER_PT[c] * scale if c in _NUMBER_PT else _CHAR_PT[small] for c in text)


def _width_pt(header: Sequence[str], body: Sequence[Sequence[str]], j: int, small: bool) -> float:
    texts = [*_header_lines(header[j]), *(row[j] for row in body)]
    return max(_text_pt(t, small) for t in texts) + _COLUMN_SEP_PT


def fits_page(table: Table, *, small: bool = False) -> bool:
    """Whether the table, at its natural width (an upper estimate), fits :data:`TEXT_WIDTH_PT`
    within :data:`WIDE_TOLERANCE`: what decides the default ``--layout`` (wide where it fits)."""
    header, body = table.header, _texts(table)
    width = sum(_width_pt(header, body, j, small) for j in range(len(header)))
    return width <= TEXT_WIDTH_PT * WIDE_TOLERANCE


def split_columns(
    header: Sequence[str], body: Sequence[Sequence[str]], *, keep: int = 1, small: bool = False
) -> list[list[int]]:
    """Column indices of each part of a table split to fit :data:`TEXT_WIDTH_PT`: the first
    ``keep`` columns in every part, the others in order, as many per part as fit (one at least)."""

    def width(j: int) -> float:
        return _width_pt(header, body, j, small)

    keep = min(keep, len(header))
    fixed = sum(width(j) for j in range(keep))
    parts: list[list[int]] = []
    used = math.inf
    for j in range(keep, len(header)):
        if used + width(j) > TEXT_WIDTH_PT:
            parts.append(list(range(keep)))
            used = fixed
        parts[-1].append(j)
        used += width(j)
    return parts or [list(range(len(header)))]
