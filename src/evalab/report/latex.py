"""The one LaTeX table writer: booktabs tables for ``score``/``compare`` and ablation reports.

>>> print(latex_table(["system", "BLEU"], [["base_1", "31.2"]], caption="50% & more"), end="")
\\begin{table}[t]
\\centering
\\begin{tabular}{lr}
\\toprule
system & BLEU \\\\
\\midrule
base\\_1 & 31.2 \\\\
\\bottomrule
\\end{tabular}
\\caption{50\\% \\& more}
\\end{table}
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

__all__ = ["MATH_SYMBOLS", "latex_escape", "latex_table", "latex_text"]

_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
    "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}

#: characters pdflatex's default fonts lack (it prints "<" as an inverted "!")
MATH_SYMBOLS = {
    "±": r"$\pm$", "Δ": r"$\Delta$", "↑": r"$\uparrow$", "↓": r"$\downarrow$", "–": "--", "—": "---",
    "ε": r"$\varepsilon$", "→": r"$\rightarrow$", "≈": r"$\approx$", "<": r"$<$", ">": r"$>$",
    "−": "-", "·": r"$\cdot$", "√": r"$\surd$", "≥": r"$\geq$", "≤": r"$\leq$", "α": r"$\alpha$",
    "μ": r"$\mu$", "µ": r"$\mu$", "τ": r"$\tau$", "ρ": r"$\rho$", "σ": r"$\sigma$", "χ": r"$\chi$",
    "×": r"$\times$", "…": r"\ldots{}", "’": "'", "‘": "`", "“": "``", "”": "''", "\u00a0": "~",
    "│": "|", "✓": r"$\surd$", "✗": r"$\times$", "²": r"$^2$",
}

#: a Greek letter with a one-letter subscript, as in Kendall's τ_b (escaped: ``τ\\_b``)
_GREEK_SUBSCRIPT = re.compile(r"([αεμρστχ])\\_([A-Za-z0-9])(?![A-Za-z0-9])")

#: combining marks that LaTeX writes as accent commands (é = e + U+0301 -> \'{e})
_ACCENTS = {
    "\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0308": '"',
    "\u030a": "r", "\u030c": "v", "\u0327": "c", "\u0328": "k", "\u0306": "u", "\u030b": "H",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters.

    >>> latex_escape("a_b & 5%")
    'a\\\\_b \\\\& 5\\\\%'
    """
    return "".join(_SPECIAL.get(c, c) for c in text)


def latex_text(text: str) -> str:
    """Escaped text that pdflatex compiles with its default fonts: the symbols tables print
    as math, accented Latin letters as accent commands, and any other non-ASCII character
    (a system name in Chinese, say) as its code point, ``[U+4E2D]``, rather than an error.

    >>> print(latex_text("μ ± hw, Δ of Müller_2, τ_b"))
    $\\mu$ $\\pm$ hw, $\\Delta$ of M\\"{u}ller\\_2, $\\tau_b$
    """
    text = _GREEK_SUBSCRIPT.sub(lambda m: "$" + MATH_SYMBOLS[m[1]].strip("$") + "_" + m[2] + "$", latex_escape(text))
    return "".join(_ascii_latex(ch) for ch in text)


def _ascii_latex(ch: str) -> str:
    if ch.isascii() and ch not in "<>":
        return ch
    if ch in MATH_SYMBOLS:
        return MATH_SYMBOLS[ch]
    base, *marks = unicodedata.normalize("NFD", ch)
    if base.isascii() and base.isalpha() and len(marks) == 1 and marks[0] in _ACCENTS:
        return rf"\{_ACCENTS[marks[0]]}{{{base}}}"
    return f"[U+{ord(ch):04X}]"


def latex_table(
    header: Sequence[str],
    body: Sequence[Sequence[str]],
    caption: str = "",
    *,
    columns: str | None = None,
    small: bool = False,
    cell: Callable[[str], str] = latex_text,
) -> str:
    """A booktabs ``table``; ``columns`` defaults to ``l`` then ``r`` for the rest; cells
    are written with :func:`latex_text`, so the table compiles with pdflatex."""
    cols = columns or "l" + "r" * (len(header) - 1)
    lines = [r"\begin{table}[t]", r"\centering", *([r"\small"] if small else []), rf"\begin{{tabular}}{{{cols}}}", r"\toprule"]
    lines.append(" & ".join(cell(h) for h in header) + r" \\")
    lines.append(r"\midrule")
    for row in body:
        lines.append(" & ".join(cell(c) for c in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{cell(caption)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"
