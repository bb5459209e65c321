"""Renderers for an ablation :class:`~evalab.ablation.analysis.analyze.StudyAnalysis`.

``render_table(analysis, console=None)`` prints rich tables (terminal);
``render_markdown(analysis) -> str``, ``render_latex(analysis) -> str``,
``render_json(analysis) -> str`` and ``render_html(analysis) -> str`` return text.
All five show the same tables and notes (Table 3's layout, then one Δ table per metric).
The HTML page is self-contained: a summary figure, per metric a forest plot of Δ with its
intervals and a level plot (mean and intervals, on an axis that fits them), interaction plots
for a grid, inlined as SVG (:mod:`evalab.report.figures`; the same figures as PDF, SVG and PNG:
:mod:`evalab.report.figure_files`), and every string that comes from the study or the runs is
escaped.
"""

from __future__ import annotations

from itertools import chain

from evalab._lazy import lazy_exports

_EXPORTS = {
    "tables": (
        "render_table",
        "render_markdown",
        "render_latex",
        "render_json",
    ),
    "html": ("render_html",),
    "figures": ("figure_svg",),
    "figure_files": ("write_figures",),
}

__all__ = sorted(chain.from_iterable(_EXPORTS.values()))


__getattr__ = lazy_exports(__name__, _EXPORTS)
