"""A self-contained HTML page for a study analysis.

One file, no network: inline CSS, the tables of :func:`evalab.report.tables.report_tables`
(cell for cell those of the other formats), the figures of
:func:`evalab.report.ablation_figures.report_figures` (a summary at the top; per metric a
forest plot of Δ and a level plot; interaction plots for a grid) inlined as SVG by
:func:`evalab.report.figures.figure_svg`, a Content Security Policy that forbids scripts, and every string that comes from the study file or the runs
(labels, descriptions, errors, metric names) passed through :func:`html.escape`.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalab.report.ablation_figures import (
    forest_figure,
    interaction_figure,
    level_figure,
    summary_figure,
)
from evalab.report.figures import Figure, IntervalPanel, figure_svg
from evalab.report.numbers import NO_VALUE
from evalab.report.page import html_page, html_table
from evalab.report.tables import (
    COMPONENTS,
    component_lines,
    effect_lines,
    missing_lines,
    opening_sections,
    report_notes,
    report_tables,
    row_notes,
    title,
)

if TYPE_CHECKING:
    from evalab.ablation.analysis.analyze import StudyAnalysis
    from evalab.ablation.analysis.curve_bands import StudyCurves

# The page fits a 1400 px screen (and, with smaller type and wrapping cells, a 900 px one)
# without a horizontal scroll: headers wrap, the text
# columns wrap, and the numbers (which must not break) are in tables of a few columns each.
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1360px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.6em 0 1.4em;font-size:0.85em;max-width:100%}
caption{text-align:left;font-weight:bold;padding:0.3em 0}
th,td{padding:0.25em 0.5em;border-bottom:1px solid #ddd;text-align:right}
td{white-space:nowrap}
th{border-bottom:2px solid #333;white-space:normal;vertical-align:bottom}
td.l,th.l{text-align:left;white-space:normal}
tr.base td{background:#f3f8f3}
td.flag{color:#a15c00;text-align:left;white-space:normal}
.plots{display:flex;flex-wrap:wrap;gap:1em}
.plots figure{margin:0;max-width:100%}
.plots svg{max-width:100%;height:auto}
code{background:#f5f5f5;padding:0 0.2em;overflow-wrap:anywhere}
.notes{color:#555;font-size:0.85em}
.missing{color:#a00}
@media (max-width:1200px){table{font-size:0.78em}th,td{padding:0.2em 0.3em}td{white-space:normal}th{overflow-wrap:anywhere}}
"""


def shown_path(path: str | os.PathLike[str], store: str | os.PathLike[str] | None = None) -> str:
    """``path`` as a report may print it: relative to the working folder, else to the
    folder of the ``store`` (the run database), else its file name alone; never an
    absolute path of the user's machine.

    >>> shown_path(Path.cwd() / "studies" / "a.toml")
    'studies/a.toml'
    >>> shown_path("/elsewhere/runs/a.toml", "/elsewhere/runs/s.db"), shown_path("/x/y/a.toml")
    ('a.toml', 'a.toml')
    >>> shown_path("/elsewhere/runs/sub/a.toml", "/elsewhere/runs/s.db")
    'sub/a.toml'
    """
    full = Path(os.path.abspath(path))
    roots = [Path.cwd()] + ([Path(os.path.abspath(store)).parent] if store else [])
    for root in roots:
        if full.is_relative_to(root):
            return full.relative_to(root).as_posix()
    return full.name


def _figure(fig: Figure) -> str:
    """The figure in the page (nothing for one without panels: a metric no row is compared on)."""
    if not fig.panels:
        return ""
    return f'<figure id="figure-{html.escape(fig.name)}">{figure_svg(fig)}</figure>'


def _summary_section(a: StudyAnalysis) -> list[str]:
    fig = summary_figure(a)
    if fig is None:
        return []
    panel = fig.panels[0]
    kind = panel.intervals[0].label if isinstance(panel, IntervalPanel) else ""
    return [
        '<h2>Summary</h2><p class="notes">Each row\'s Δ to the base on the primary metric '
        f"({html.escape(a.primary)}), in the study's order, with the interval its verdict reads "
        f"({html.escape(kind)}), the dot coloured by that verdict and the numbers beside it; the "
        "tables and the per-metric plots below give every interval.</p>",
        f'<div class="plots">{_figure(fig)}</div>',
    ]


def _plot_sections(a: StudyAnalysis, curves: StudyCurves | None) -> list[str]:
    """Per metric the forest and level plots, the curves, then the grid effects with their
    interaction plot."""
    e = html.escape
    parts = [
        "<h2>Plots</h2><p>Per metric, first Δ to the base with its intervals (a forest plot; the dashed "
        "line is no difference). Where the effects differ in scale, they are drawn on several panels, each with its own "
        "axis, and every panel names the panel that draws each other row. Then each row's mean with its "
        "intervals, on an axis that fits them (zero, a grey line, only when near); the dashed line is the base's mean. "
        "Dots are estimates, coloured lines intervals, named in the legend under each plot.</p>"
    ]
    for m in a.metrics:
        parts.append(
            f'<div class="plots">{_figure(forest_figure(a, m))}{_figure(level_figure(a, m))}</div>'
        )
    if curves is not None:
        from evalab.report.curves import curves_section

        parts.append(curves_section(curves))
    for metric, effects in effect_lines(a):
        parts.append(f"<h2>Grid effects on {e(metric)}</h2><ul>")
        for kind, name, arith, extra in effects:
            tail = f' <span class="notes">({e(extra)})</span>' if extra else ""
            parts.append(f"<li><b>{e(kind)}</b>: {e(name)}: <code>{e(arith)}</code>{tail}</li>")
        parts.append("</ul>")
        fig = interaction_figure(a, metric)
        if fig is not None:
            parts.append(
                '<p class="notes">Interaction plot: each cell\'s mean with its CI over seeds, one line '
                "per level of the second factor (the other factors at the base's levels); parallel lines "
                "mean no interaction.</p>"
                f'<div class="plots">{_figure(fig)}</div>'
            )
    return parts


def render_html(
    analysis: StudyAnalysis,
    *,
    extra_sections: Sequence[tuple[str, str]] = (),
    curves: StudyCurves | None = None,
) -> str:
    """The analysis as one self-contained HTML page (with the runs' learning ``curves``, from
    :func:`evalab.ablation.analysis.curve_bands.study_curves`, when given).

    ``extra_sections`` are ``(heading, trusted_html)`` pairs appended before the notes (for
    callers such as ``evalab demo`` that add their own, already escaped, content); the
    headings are escaped.
    """
    a = analysis
    e = html.escape
    tables = report_tables(a)
    parts = [
        f"<p>Primary metric <b>{e(a.primary)}</b>; seeds {e(', '.join(map(str, a.seeds)))}; "
        f"study file <code>{e(shown_path(a.path, a.db_path))}</code>; code version "
        f"<code>{e(a.code_version)}</code>; run database <code>{e(shown_path(a.db_path))}</code>.</p>",
    ]
    parts += _summary_section(a)
    for heading, lines in opening_sections(a):
        parts.append(
            f"<h2>{e(heading)}</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>"
        )
    parts += ["<h2>Results</h2>", html_table(tables[0], base_row=True)]
    if row_notes(a):
        parts.append(
            '<ul class="rows">' + "".join(f"<li>{e(n)}</li>" for n in row_notes(a)) + "</ul>"
        )
    if component_lines(a):
        parts.append(
            f"<h2>{e(COMPONENTS)}</h2><ul>"
            + "".join(f"<li>{e(x)}</li>" for x in component_lines(a))
            + "</ul>"
        )
    to_base = all(t.caption.endswith("Δ to the base") for t in tables[1:])
    parts.append(
        "<h2>Δ to the base</h2>" if to_base else "<h2>Δ per metric (to the row in 'Δ to')</h2>"
    )
    parts += [html_table(t, base_row=True) for t in tables[1:]]
    parts += _plot_sections(a, curves)
    missing = missing_lines(a)
    if missing:
        parts.append('<h2 class="missing">Missing runs</h2><ul class="missing">')
        parts += [f"<li>{e(line)}</li>" for line in missing]
        parts.append("</ul>")
    if a.reference_columns:
        parts.append(
            f'<p class="notes">Reference columns from the study file: {e(", ".join(a.reference_columns))} '
            f"(shown as given; {NO_VALUE} = no value for that row).</p>"
        )
    for heading, body in extra_sections:
        parts.append(f"<h2>{e(heading)}</h2>{body}")
    parts.append(
        '<div class="notes">' + "".join(f"<p>{e(n)}</p>" for n in report_notes(a)) + "</div>"
    )
    return html_page(title(a), parts, css=_CSS)
