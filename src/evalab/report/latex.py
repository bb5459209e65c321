"""The one LaTeX table writer: booktabs tables for every command's ``-f latex``.

Every output's first line names the packages its preamble needs (``% needs: booktabs,
graphicx``; ``array`` too where a label column is wrapped), and every table is fitted to a
two-column paper (:func:`fit_table`): in \\small, else \\footnotesize (never smaller), in one
column (``table``), else across both (``table*``), else split by columns into parts; the
choice is named in a ``%`` comment above the table. Each float has a ``\\caption`` (the
table's, then what its notation means) and a ``\\label``.

>>> from evalab.report.table import Number, Table
>>> print(latex_table(Table(["system", "bleu"], [["base_1", Number(31.2, 1)]], caption="50% & more")), end="")
% needs: booktabs, graphicx (\\usepackage{booktabs,graphicx})
% layout: one column (table), \\small; --latex-split: one-column parts, --no-latex-split: one table (shrunk to the line's width where wider)
\\begin{table}[t]
\\centering
\\small
\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%
\\begin{tabular}{lr}
\\toprule
system & BLEU \\\\
\\midrule
base\\_1 & 31.2 \\\\
\\bottomrule
\\end{tabular}}
\\caption{50\\% \\& more.}
\\label{tab:evalab-1}
\\end{table}
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evalab.report.table import Table, TableCell, cell_parts, cell_text, numeric_columns

__all__ = [
    "COLUMN_PT",
    "MATH_SYMBOLS",
    "PACKAGES",
    "PAGE_PT",
    "PREAMBLE",
    "SIZES",
    "WHOLE",
    "Fit",
    "LatexLayout",
    "LatexText",
    "Placement",
    "fit_table",
    "fits_page",
    "latex_comments",
    "latex_paragraph",
    "latex_table",
    "latex_tables",
    "latex_text",
    "needs_line",
    "paper_name",
    "split_columns",
    "table_tex",
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
    "κ": r"$\kappa$",
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


#: the packages a table may need, in the order its ``% needs:`` line names them: booktabs for
#: the rules, graphicx for ``\resizebox`` (the safety net of a float), array for the wrapped
#: (``>{\raggedright\arraybackslash}p{}``) label columns
PACKAGES = ("booktabs", "graphicx", "array")
#: the preamble of every package a table may need (each output names the ones it needs)
PREAMBLE = r"\usepackage{" + ",".join(PACKAGES) + "}"

#: the widths a table is fitted to: one column of a two-column paper (ACL's 219pt, the
#: narrowest of the common ones: article's is 229.5pt, ICML's 234pt) and both columns, for
#: ``table*`` (ACL's 455pt; article's 469pt, ICML's 487pt)
COLUMN_PT = 219.0
PAGE_PT = 455.0
#: the type sizes a table is set in, largest first, with their scale against 10pt: never
#: smaller than \footnotesize (8pt), the smallest type a printed table is read in
SIZES = (("small", 0.9), ("footnotesize", 0.8))
#: an upper estimate of one character's width at 10pt (±, Δ and capitals are wider than digits)
_CHAR_PT = 5.6
#: the characters of a number cell, at their bold 10pt widths (Computer Modern: a bold digit is
#: 5.75pt, "." 3.19pt, a space 3.83pt; "±" is math, 7.78pt)
_NUMBER_PT = {**dict.fromkeys("0123456789", 5.75), ".": 3.2, ",": 3.2, " ": 3.85, "±": 7.8}
_COLUMN_SEP_PT = 12.0  # 2 x \tabcolsep

#: a text column whose longest cell is longer than this may be wrapped in a ``p{}`` column
WRAP_CHARS = 24
_WRAPPED = r">{\raggedright\arraybackslash}p{%dpt}"
#: the narrowest a wrapped column is set (at 10pt; scaled with the type)
_WRAP_MIN_PT = 60.0

#: a footer line that records settings (a signature: ``bleu|nrefs:1|...``): kept as a ``%``
#: comment; every other footer line explains the table's notation and goes into the caption
_SIGNATURE = re.compile(r"\|[\w.+-]+:")

#: metric names as papers write them (the tables' own names are the registry's, lower case)
PAPER_NAMES = {
    "bleu": "BLEU",
    "chrf": "chrF",
    "chrf++": "chrF++",
    "ter": "TER",
    "comet": "COMET",
    "cometkiwi": "CometKiwi",
    "bertscore": "BERTScore",
    "bleurt": "BLEURT",
    "meteor": "METEOR",
    "rouge1": "ROUGE-1",
    "rouge2": "ROUGE-2",
    "rougel": "ROUGE-L",
    "rouge-l": "ROUGE-L",
    "rougelsum": "ROUGE-Lsum",
    "wer": "WER",
    "cer": "CER",
    "mer": "MER",
    "wil": "WIL",
    "ppl": "PPL",
}


def paper_name(text: str) -> str:
    """``text`` with a leading metric name as papers write it (``bleu ↑`` -> ``BLEU ↑``).

    >>> paper_name("chrf ↑"), paper_name("rougeL"), paper_name("system")
    ('chrF ↑', 'ROUGE-L', 'system')
    """
    name, sep, rest = text.partition(" ")
    return PAPER_NAMES.get(name.lower(), name) + sep + rest


class Placement(enum.Enum):
    """Where a table goes: one column (``table``) or both columns of a two-column page
    (``table*``)."""

    COLUMN = "table"
    PAGE = "table*"


@dataclass(frozen=True)
class LatexLayout:
    """How tables are written: ``split`` (``None``: as fits, see :func:`fit_table`; ``True``:
    split by columns into one-column tables where wider than a column; ``False``: never split),
    ``fragment`` (the ``tabular`` alone, to ``\\input`` in a float of one's own), and the
    ``caption`` and ``label`` of the (first) table, over the table's own."""

    split: bool | None = None
    fragment: bool = False
    caption: str | None = None
    label: str | None = None


#: the default layout: each table fitted by :func:`fit_table`
WHOLE = LatexLayout()


@dataclass(frozen=True)
class Fit:
    """How one table is set: its ``placement``, type ``size`` (a LaTeX size command's name),
    the column indices of each of its ``parts`` (one part: not split) and the wrapped label
    columns' width (pt)."""

    placement: Placement
    size: str
    parts: list[list[int]]

    def comment(self) -> str:
        """The choice in words, for the ``%`` comment above the table."""
        where = (
            "one column (table)" if self.placement is Placement.COLUMN else "both columns (table*)"
        )
        split = f", split by columns into {len(self.parts)} parts" if len(self.parts) > 1 else ""
        return (
            f"layout: {where}, \\{self.size}{split}; --latex-split: one-column parts, "
            "--no-latex-split: one table (shrunk to the line's width where wider)"
        )


def fit_table(table: Table, split: bool | None = None) -> Fit:
    """The largest type (\\small, then \\footnotesize) and narrowest placement at which the
    table fits: one column, else (``split`` not ``True``) both columns as ``table*``, else
    (``split`` not ``False``) parts that each fit (columns of one header group kept together,
    the label columns repeated). With ``split=False`` a table wider than both columns is one
    ``table*`` in \\footnotesize that ``\\resizebox`` shrinks to the text width."""
    texts = _texts(table)
    widths: list[tuple[Placement, float]] = [(Placement.COLUMN, COLUMN_PT)]
    widths += [] if split else [(Placement.PAGE, PAGE_PT)]
    whole = list(range(len(table.header)))
    for placement, width in widths:
        for size, _ in SIZES:
            if _table_pt(table, texts, size, width) <= width + 1e-6:
                return Fit(placement, size, [whole])
    smallest = SIZES[-1][0]
    if split is False:
        return Fit(Placement.PAGE, smallest, [whole])
    placement, width = widths[-1]
    return Fit(placement, smallest, split_columns(table, width=width, size=smallest))


def _scale(size: str) -> float:
    return dict(SIZES)[size]


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


#: a header longer than this is set on two lines (headers are often a column's widest cell)
_HEADER_CHARS = 12


def _header_lines(h: str) -> list[str]:
    """``seq_acc ↑ (mean ± sd)`` -> ``seq_acc ↑`` over ``(mean ± sd)``; another long header
    with spaces broken at the space nearest its middle (``positions`` over ``at eval``)."""
    name, sep, what = h.partition(" (")
    if sep and name:
        return [name, sep.strip() + what]
    spaces = [i for i, c in enumerate(h) if c == " "]
    if len(h) <= _HEADER_CHARS or not spaces:
        return [h]
    cut = min(spaces, key=lambda i: abs(2 * i - len(h)))
    return [h[:cut], h[cut + 1 :]]


def _header_cell(h: str, align: str) -> str:
    lines = _header_lines(h)
    if len(lines) == 1:
        return latex_text(h)
    align = "l" if align not in "lrc" else align
    return (
        rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}"
        + r"\\".join(_guard(latex_text(x)) for x in lines)
        + r"\end{tabular}"
    )


def _text_pt(text: str, size: str) -> float:
    return _scale(size) * sum(_NUMBER_PT.get(c, _CHAR_PT) for c in text)


def _natural_pt(table: Table, texts: list[list[str]], j: int, size: str) -> float:
    cells = [*_header_lines(paper_name(table.header[j])), *(row[j] for row in texts)]
    return max(_text_pt(t, size) for t in cells) + _COLUMN_SEP_PT


def _label_columns(table: Table) -> int:
    """How many columns label a row: the text columns before the first number column (one at
    least, never all of them)."""
    numeric = numeric_columns(table)
    labels = numeric.index(True) if True in numeric else 1
    return max(1, min(labels, len(numeric) - 1))


def _wrappable(table: Table, texts: list[list[str]], j: int) -> bool:
    """A column of text (a label, a note, settings) with a cell longer than :data:`WRAP_CHARS`."""
    numeric = numeric_columns(table)[j]
    return not numeric and max((len(r[j]) for r in texts), default=0) > WRAP_CHARS


def _column_pts(
    table: Table, texts: list[list[str]], size: str, width: float, cols: Sequence[int]
) -> dict[int, float]:
    """Each column's width (pt, with its separation) in a table of ``cols`` fitted to
    ``width``: a wrappable label column takes the width the others leave (its natural width
    at most, the narrowest wrap at least)."""
    natural = {j: _natural_pt(table, texts, j, size) for j in cols}
    wrapped = [j for j in cols if _wrappable(table, texts, j)]
    rest = sum(w for j, w in natural.items() if j not in wrapped)
    share = (width - rest) / max(len(wrapped), 1)
    narrowest = {j: _narrowest_pt(texts, j, size) for j in wrapped}
    return {j: min(w, max(narrowest[j], share)) if j in wrapped else w for j, w in natural.items()}


#: where a wrapped cell may break: at a space, and after the characters of :func:`latex_paragraph`
_BREAKS = re.compile(r"\s+|(?<=[|/;,=_>])")


def _narrowest_pt(texts: list[list[str]], j: int, size: str) -> float:
    """The narrowest a wrapped column can be (with its separation): :data:`_WRAP_MIN_PT`,
    or its longest unbreakable word where that is wider."""
    words = [w for row in texts for w in _BREAKS.split(row[j])]
    longest = max((_text_pt(w, size) for w in words), default=0.0)
    return max(_WRAP_MIN_PT * _scale(size), longest) + _COLUMN_SEP_PT


def _table_pt(
    table: Table,
    texts: list[list[str]],
    size: str,
    width: float,
    cols: Sequence[int] | None = None,
) -> float:
    """An upper estimate of the width of the table (of its columns ``cols``) fitted to ``width``."""
    cols = range(len(table.header)) if cols is None else cols
    return sum(_column_pts(table, texts, size, width, cols).values())


def fits_page(table: Table) -> bool:
    """Whether the table fits both columns of a two-column page (:data:`PAGE_PT`) in
    \\footnotesize without a split: what decides the default ``--layout`` (wide where it fits)."""
    return _table_pt(table, _texts(table), SIZES[-1][0], PAGE_PT) <= PAGE_PT + 1e-6


def _units(table: Table, keep: int) -> list[list[int]]:
    """The columns after the ``keep`` label columns, in runs of one header group (each column
    a run of its own where there are no groups)."""
    group = [k for k, g in enumerate(table.groups) for _ in range(g.span)]
    group = group or list(range(len(table.header)))
    units: list[list[int]] = []
    for j in range(keep, len(table.header)):
        if units and group[units[-1][-1]] == group[j]:
            units[-1].append(j)
        else:
            units.append([j])
    return units


def split_columns(
    table: Table, *, width: float = COLUMN_PT, size: str = SIZES[-1][0]
) -> list[list[int]]:
    """Column indices of each part of a table split to fit ``width``: the label columns in
    every part, then the others in order, a header group's columns in one part where they fit
    one; as few parts as fit, as even as they can be (no part left with one column while
    another is full)."""
    parts = _pack(table, width, width, size)
    low, high = 0.0, width  # the narrowest budget that still packs into as many parts
    for _ in range(12):
        mid = (low + high) / 2
        low, high = (low, mid) if len(_pack(table, mid, width, size)) <= len(parts) else (mid, high)
    return _pack(table, high, width, size) if high < width else parts


def _pack(table: Table, budget: float, width: float, size: str) -> list[list[int]]:
    """The parts of a greedy packing of the columns into parts no wider than ``budget`` (a
    part of one column where that alone is wider); the label columns wrapped against
    ``width``."""
    texts, keep = _texts(table), _label_columns(table)
    labels = list(range(keep))
    parts: list[list[int]] = []

    def fits(cols: list[int]) -> bool:
        return _table_pt(table, texts, size, min(budget, width), cols) <= budget + 1e-6

    for unit in _units(table, keep):
        for piece in [unit] if fits(labels + unit) else [[j] for j in unit]:
            if parts and fits(parts[-1] + piece):
                parts[-1] += piece
            else:
                parts.append(labels + piece)
    return parts or [list(range(len(table.header)))]


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class LatexText:
    """LaTeX source and the packages its preamble needs."""

    text: str
    packages: frozenset[str]


def needs_line(packages: Iterable[str]) -> str:
    """The first comment line of every LaTeX output: the packages its preamble needs.

    >>> print(needs_line({"array", "booktabs"}), end="")
    % needs: booktabs, array (\\usepackage{booktabs,array})
    """
    given = set(packages)
    names = [p for p in PACKAGES if p in given]
    if not names:
        return "% needs: no package\n"
    return f"% needs: {', '.join(names)} (\\usepackage{{{','.join(names)}}})\n"


def latex_tables(tables: Sequence[Table], layout: LatexLayout = WHOLE) -> str:
    """Tables as one LaTeX output: the ``% needs:`` line, then each table (:func:`table_tex`),
    a blank line between them."""
    texts = [table_tex(t, layout, index=i) for i, t in enumerate(tables)]
    return needs_line(p for t in texts for p in t.packages) + "\n".join(t.text for t in texts)


def latex_table(table: Table, layout: LatexLayout = WHOLE) -> str:
    """One table as a LaTeX output: :func:`latex_tables` of it alone."""
    return latex_tables([table], layout)


def _label(layout: LatexLayout, index: int) -> str:
    if layout.label:
        return layout.label if index == 0 else f"{layout.label}-{index + 1}"
    return f"tab:evalab-{index + 1}"


def _caption(table: Table, layout: LatexLayout, index: int) -> str:
    """The caption: the table's (``layout.caption`` for the first table), then the footer's
    notes, which explain the notation (bold, ±, *, (k)); "Results." where there is neither."""
    own = layout.caption if layout.caption is not None and index == 0 else table.caption
    text = _sentence(own)
    notes = [_sentence(line) for line in table.footer if not _SIGNATURE.search(line)]
    return " ".join([text, *notes]).strip() or "Results."


def _sentence(line: str) -> str:
    line = line.strip()
    return line if not line or line[-1] in ".:;!?" else line + "."


def table_tex(table: Table, layout: LatexLayout = WHOLE, *, index: int = 0) -> LatexText:
    """One booktabs table float (``table`` or ``table*``, in the type size
    :func:`fit_table` chooses, the choice in a ``%`` comment above it), or with
    ``layout.fragment`` its ``tabular`` alone.

    Text columns are left-aligned, number columns right-aligned; cells are written with
    :func:`latex_text`, so the table compiles with pdflatex, and a cell's marker (a
    significance ``*``, a cluster ``(2)``) after the number, outside its bold, in the
    cell's type. A header ``name (what)`` is set on two lines, header groups as
    ``\\multicolumn`` over a ``\\cmidrule``, metric names as papers write them; a label
    column with long cells is wrapped (``p{}``) where the table would not fit otherwise. The
    caption is the table's, then the notes of its footer (what bold, ±, * and (k) mean); the
    footer's signatures follow the table as ``%`` comments (a fragment's notes too). A split table's parts repeat
    the label columns and are captioned "part i of k". Every float has a ``\\label``.
    """
    # a fragment goes in a float of yours: split only where asked
    fit = fit_table(table, bool(layout.split) if layout.fragment else layout.split)
    texts = _texts(table)
    width = COLUMN_PT if fit.placement is Placement.COLUMN else PAGE_PT
    caption, label = _caption(table, layout, index), _label(layout, index)
    parts, packages = [], {"booktabs"}
    for i, part in enumerate(fit.parts):
        pts = _column_pts(table, texts, fit.size, width, part)
        wraps = {
            j: pts[j] - _COLUMN_SEP_PT
            for j in part
            if _wrappable(table, texts, j) and pts[j] < _natural_pt(table, texts, j, fit.size)
        }
        packages |= {"array"} if wraps else set()
        tabular = _tabular(table, part, wraps)
        if layout.fragment:
            parts.append(tabular)
            continue
        packages.add("graphicx")
        of = f" (part {i + 1} of {len(fit.parts)})" if len(fit.parts) > 1 else ""
        parts.append(_float(fit, tabular, caption + of, label + (f"-part{i + 1}" if i else "")))
    head = "" if layout.fragment else f"% {fit.comment()}\n"
    # a fragment has no caption: its notes (what the notation means) are comments for yours
    kept = [line for line in table.footer if layout.fragment or _SIGNATURE.search(line)]
    text = head + "\n".join(parts) + latex_comments(kept)
    return LatexText(text, frozenset(packages))


def _float(fit: Fit, tabular: str, caption: str, label: str) -> str:
    """The float around a tabular: its type size, ``\\resizebox`` as the safety net (shrinks
    the tabular to the line's width only where wider: a page narrower than :data:`COLUMN_PT`),
    its caption and label."""
    env = fit.placement.value
    return (
        "\n".join(
            [
                rf"\begin{{{env}}}[t]",
                r"\centering",
                f"\\{fit.size}",
                r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
                tabular.rstrip("\n") + "}",
                rf"\caption{{{latex_paragraph(caption)}}}",
                rf"\label{{{latex_text(label)}}}",
                rf"\end{{{env}}}",
            ]
        )
        + "\n"
    )


def _tabular(table: Table, part: list[int], wraps: dict[int, float]) -> str:
    """The ``tabular`` of the columns ``part``; the columns in ``wraps`` wrapped at that width."""
    numeric = numeric_columns(table)
    metric_cols = {j for j, h in enumerate(table.header) if h.strip().lower() == "metric"}
    cols = [_WRAPPED % wraps[j] if j in wraps else "r" if numeric[j] else "l" for j in part]
    groups = [(k, g.label) for k, g in enumerate(table.groups) for _ in range(g.span)]
    lines = [rf"\begin{{tabular}}{{{''.join(cols)}}}", r"\toprule"]
    if any(label for _, label in groups):
        lines += _group_lines([groups[j] for j in part])
    header = [
        _header_cell(paper_name(table.header[j]), "l" if j in wraps else c)
        for j, c in zip(part, cols, strict=True)
    ]
    lines += [_guard(" & ".join(header)) + r" \\", r"\midrule"]
    for i, row in enumerate(table.body):
        cells = [
            _latex_cell(row[j], j in wraps, (i, j) in table.bold, paper=j in metric_cols)
            for j in part
        ]
        lines.append(_guard(" & ".join(cells)) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _latex_cell(cell: TableCell, wrapped: bool, bold: bool, *, paper: bool = False) -> str:
    text, marker = cell_parts(cell)
    text = paper_name(text) if paper else text
    tex = latex_paragraph(text) if wrapped else latex_text(text)
    tex = rf"\textbf{{{tex}}}" if bold and tex else tex
    # the marker inline, in the cell's type (a superscript would print below \footnotesize)
    return tex + (latex_text(marker) if marker.strip() else "")


def _guard(tex: str) -> str:
    """A row that starts with ``[`` or ``*`` behind ``{}``: after ``\\\\``, ``\\toprule`` or
    ``\\midrule`` LaTeX would read it as the command's optional argument."""
    return "{}" + tex if tex.startswith(("[", "*")) else tex
