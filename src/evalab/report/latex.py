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

from collections.abc import Callable, Sequence

__all__ = ["MATH_SYMBOLS", "latex_escape", "latex_table", "latex_text"]

_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
    "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}

#: characters pdflatex's default fonts lack (it prints "<" as an inverted "!")
MATH_SYMBOLS = {
    "±": r"$\pm$", "Δ": r"$\Delta$", "↑": r"$\uparrow$", "↓": r"$\downarrow$", "–": "--",
    "ε": r"$\varepsilon$", "→": r"$\rightarrow$", "≈": r"$\approx$", "<": r"$<$", ">": r"$>$",
    "−": "-", "·": r"$\cdot$", "√": r"$\surd$", "≥": r"$\geq$", "α": r"$\alpha$",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters.

    >>> latex_escape("a_b & 5%")
    'a\\\\_b \\\\& 5\\\\%'
    """
    return "".join(_SPECIAL.get(c, c) for c in text)


def latex_text(text: str) -> str:
    """Escaped text with the symbols pdflatex's default fonts lack written as math."""
    return "".join(MATH_SYMBOLS.get(ch, ch) for ch in latex_escape(text))


def latex_table(
    header: Sequence[str],
    body: Sequence[Sequence[str]],
    caption: str = "",
    *,
    columns: str | None = None,
    small: bool = False,
    cell: Callable[[str], str] = latex_escape,
) -> str:
    """A booktabs ``table``; ``columns`` defaults to ``l`` then ``r`` for the rest."""
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
