"""A self-contained HTML page for a study analysis.

One file, no network: inline CSS, the tables of :func:`evalab.report.tables.report_tables`
(cell for cell those of the other formats), per metric a forest plot of Δ and a level plot
inlined as SVG, a Content Security
Policy that forbids scripts, and every string that comes from the study file or the runs
(labels, descriptions, errors, metric names) passed through :func:`html.escape`.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalab.report.numbers import NO_VALUE
from evalab.report.page import html_page
from evalab.report.plots import (
    Intervals,
    finite,
    forest_panels,
    interval_plot_svg,
    panel_fits_zero,
)
from evalab.report.tables import (
    COMPONENTS,
    Table,
    component_lines,
    effect_lines,
    missing_lines,
    opening_sections,
    report_notes,
    report_tables,
    row_name,
    row_notes,
    title,
)

if TYPE_CHECKING:
    from evalab.ablation.analysis import MetricStats, RowAnalysis, StudyAnalysis
    from evalab.ablation.curve_rows import StudyCurves

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


def _table(t: Table) -> str:
    e = html.escape
    out = [f"<table><caption>{e(t.heading)}</caption>", "<thead><tr>"]
    out += [f'<th class="{"l" if i < t.left else ""}">{e(h)}</th>' for i, h in enumerate(t.header)]
    out.append("</tr></thead><tbody>")
    for j, row in enumerate(t.body):
        out.append(f'<tr class="{"base" if j == 0 else ""}">')
        for i, cell in enumerate(row):
            cls = "l" if i < t.left else ("flag" if t.header[i] == "Note" else "")
            out.append(f'<td class="{cls}">{e(cell)}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


#: rows beyond which "auto" draws with the built-in SVG writer: matplotlib's layout of a few
#: hundred tick labels takes seconds per plot (benchmarks/bench_ablation_report.py)
MPL_MAX_ROWS = 60


def _engine(engine: str, rows: int) -> str:
    return "svg" if engine == "auto" and rows > MPL_MAX_ROWS else engine


def plot_label(r: RowAnalysis) -> str:
    """A row's label in a plot: its labels and its description (cut at 48 characters; the
    tables carry it whole)."""
    text = row_name(r) + (f" {r.description}" if r.description else "")
    return text if len(text) <= 48 else text[:47] + "…"


def _forest_kinds(a: StudyAnalysis, ms: list[MetricStats]) -> list[Intervals]:
    pct = round(a.settings.get("confidence", 0.95) * 100)
    kinds = [
        Intervals(f"{pct}% CI over seeds", [m.delta_low for m in ms], [m.delta_high for m in ms])
    ]
    if any(m.examples_low is not None for m in ms):
        kinds.append(
            Intervals(
                f"{pct}% CI over test examples",
                [m.examples_low for m in ms],
                [m.examples_high for m in ms],
            )
        )
    if any(m.both_low is not None for m in ms):
        kinds.append(
            Intervals(
                f"{pct}% CI over seeds and examples",
                [m.both_low for m in ms],
                [m.both_high for m in ms],
            )
        )
    return kinds


def forest_plots(a: StudyAnalysis, metric: str, engine: str = "auto") -> list[str]:
    """Δ of every compared row with each interval it has (seeds; test set and both where
    the runs have per-example data), around a line at 0: one panel, or several with their
    own axes when the effects differ in scale (:func:`evalab.report.plots.forest_panels`);
    each panel lists every row, those drawn on another panel saying which."""
    rows = [r for r in a.rows if r.metrics[metric].delta is not None]
    ms = [r.metrics[metric] for r in rows]
    labels = [
        plot_label(r) + (f" (vs {m.vs}, paired)" if m.paired and m.vs else "")
        for r, m in zip(rows, ms, strict=True)
    ]
    points = [m.delta for m in ms]
    kinds = _forest_kinds(a, ms)
    labels = _say_no_interval(labels, points, kinds)
    panels = forest_panels(points, kinds)
    better = "higher" if a.higher_is_better.get(metric, True) else "lower"
    home = {i: k for k, panel in enumerate(panels) for i in panel}
    out = []
    for k, panel in enumerate(panels):
        keep = set(panel)
        part = "" if len(panels) == 1 else f", panel {k + 1} of {len(panels)}"
        scale = (
            "" if len(panels) == 1 else (" (largest effects)" if k == 0 else " (smaller effects)")
        )
        out.append(
            interval_plot_svg(
                [
                    lab if i in keep else f"{lab} (drawn on panel {home[i] + 1})"
                    for i, lab in enumerate(labels)
                ],
                [p if i in keep else None for i, p in enumerate(points)],
                [_only(iv, keep) for iv in kinds],
                title=f"Δ {metric} to the base ({better} is better){part}{scale}",
                xlabel=f"Δ {metric}",
                reference=0.0,
                reference_label="no difference",
                engine=_engine(engine, len(rows)),
                zero="always" if panel_fits_zero(panel, points, kinds) else "near",
            )
        )
    return out


def _only(iv: Intervals, keep: set[int]) -> Intervals:
    """The intervals of the rows in ``keep`` (None elsewhere)."""
    return Intervals(
        iv.label,
        [v if i in keep else None for i, v in enumerate(iv.lows)],
        [v if i in keep else None for i, v in enumerate(iv.highs)],
    )


def _say_no_interval(
    labels: list[str], points: list[float | None], kinds: list[Intervals]
) -> list[str]:
    """Labels, marked where the row has a point but no interval of any kind (one seed, no
    seed spread): a dot alone would read as a precise value."""

    def bare(i: int) -> bool:
        return finite(points[i]) and not any(
            finite(iv.lows[i]) and finite(iv.highs[i]) for iv in kinds
        )

    return [f"{lab} (no interval)" if bare(i) else lab for i, lab in enumerate(labels)]


def level_plot(a: StudyAnalysis, metric: str, engine: str = "auto") -> str:
    """Every row's mean with its intervals, on an axis that fits them (zero drawn only when
    near), beside a line at the base's mean."""
    pct = round(a.settings.get("confidence", 0.95) * 100)
    rows = list(a.rows)  # rows that are the same runs are one row already
    ms = [r.metrics[metric] for r in rows]
    kinds = [Intervals(f"{pct}% CI over seeds", [m.ci_low for m in ms], [m.ci_high for m in ms])]
    if any(m.mean_examples_low is not None for m in ms):
        kinds.append(
            Intervals(
                f"{pct}% CI over test examples",
                [m.mean_examples_low for m in ms],
                [m.mean_examples_high for m in ms],
            )
        )
    better = "higher" if a.higher_is_better.get(metric, True) else "lower"
    base = a.base.metrics[metric]
    points = [m.mean if m.n else None for m in ms]
    return interval_plot_svg(
        _say_no_interval([plot_label(r) for r in rows], points, kinds),
        points,
        kinds,
        title=f"{metric} ({better} is better)",
        xlabel=f"{metric}, mean over seeds",
        reference=base.mean if base.n else None,
        reference_label="base",
        engine=_engine(engine, len(rows)),
    )


def render_html(
    analysis: StudyAnalysis,
    *,
    plot_engine: str = "auto",
    extra_sections: Sequence[tuple[str, str]] = (),
    curves: StudyCurves | None = None,
) -> str:
    """The analysis as one self-contained HTML page (with the runs' learning ``curves``, from
    :func:`evalab.ablation.curve_rows.study_curves`, when given).

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
    for heading, lines in opening_sections(a):
        parts.append(
            f"<h2>{e(heading)}</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>"
        )
    parts += ["<h2>Results</h2>", _table(tables[0])]
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
    to_base = all(t.heading.endswith("Δ to the base") for t in tables[1:])
    parts.append(
        "<h2>Δ to the base</h2>" if to_base else "<h2>Δ per metric (to the row in 'Δ to')</h2>"
    )
    parts += [_table(t) for t in tables[1:]]
    parts.append(
        "<h2>Plots</h2><p>Per metric, left: Δ to the base with its intervals (a forest plot; the dashed "
        "line is no difference). Where the effects differ in scale, they are drawn on several panels, each with its own "
        "axis, and every panel names the panel that draws each other row. Right: each row's mean with its "
        "intervals, on an axis that fits them (zero, a grey line, only when near); the dashed line is the base's mean. Dots are estimates, coloured lines intervals, "
        "named in the legend under each plot.</p>"
    )
    for m in a.metrics:
        parts.append(
            '<div class="plots">'
            + "".join(f"<figure>{svg}</figure>" for svg in forest_plots(a, m, plot_engine))
            + f"<figure>{level_plot(a, m, plot_engine)}</figure></div>"
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
