"""A self-contained HTML page for a study analysis.

One file, no network: inline CSS, one inline SVG bar chart per metric, a Content Security
Policy that forbids scripts, and every string that comes from the study file or the runs
(labels, descriptions, errors, metric names) passed through :func:`html.escape`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalab.report.plots import bar_chart_svg
from evalab.report.tables import (
    effect_lines,
    fmt,
    left_columns,
    main_table,
    missing_lines,
    secondary_table,
    title,
)

if TYPE_CHECKING:
    from evalab.ablation.analysis import StudyAnalysis

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{padding:0.3em 0.6em;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{border-bottom:2px solid #333}
td.l,th.l{text-align:left;white-space:normal}
tr.base td{background:#f3f8f3}
td.flag{color:#a15c00;text-align:left}
.scroll{overflow-x:auto}
.plots{display:flex;flex-wrap:wrap;gap:1em}
.plots figure{margin:0}
code{background:#f5f5f5;padding:0 0.2em}
.notes{color:#555;font-size:0.85em}
.missing{color:#a00}
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _table(header: Sequence[str], body: Sequence[Sequence[str]], left: int = 2, flag_col: str = "Note") -> str:
    e = html.escape
    out = ['<div class="scroll"><table>', "<thead><tr>"]
    out += [f'<th class="{"l" if i < left else ""}">{e(h)}</th>' for i, h in enumerate(header)]
    out.append("</tr></thead><tbody>")
    for j, row in enumerate(body):
        out.append(f'<tr class="{"base" if j == 0 and left >= 2 else ""}">')
        for i, cell in enumerate(row):
            cls = "l" if i < left else ("flag" if header[i] == flag_col else "")
            out.append(f'<td class="{cls}">{e(cell)}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def render_html(
    analysis: StudyAnalysis,
    *,
    plot_engine: str = "auto",
    extra_sections: Sequence[tuple[str, str]] = (),
) -> str:
    """The analysis as one self-contained HTML page.

    ``extra_sections`` are ``(heading, trusted_html)`` pairs appended before the notes (for
    callers such as ``evalab demo`` that add their own, already escaped, content); the
    headings are escaped.
    """
    a = analysis
    e = html.escape
    header, body = main_table(a)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title(a))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{e(title(a))}</h1>",
        f"<p>Primary metric <b>{e(a.primary)}</b>; seeds {e(', '.join(map(str, a.seeds)))}; "
        f"study file <code>{e(a.path)}</code>; code version <code>{e(a.code_version)}</code>; "
        f"run database <code>{e(a.db_path)}</code>.</p>",
        "<h2>Results</h2>",
        _table(header, body, left=left_columns(header)),
    ]
    sec = secondary_table(a)
    if sec:
        parts += ["<h3>Other metrics</h3>", _table(*sec, left=1, flag_col="")]
    parts.append("<h2>Plots</h2><p>Mean over seeds; error bars are the 95% CI over seeds; "
                 "the dashed line is the base.</p><div class=\"plots\">")
    for m in a.metrics:
        rows = [r for r in a.rows if not (r.kind == "grid" and not r.changes)]
        stats = [r.metrics[m] for r in rows]
        d = a.higher_is_better.get(m, True)
        svg = bar_chart_svg(
            [r.label for r in rows], [s.mean for s in stats], [s.ci_low for s in stats],
            [s.ci_high for s in stats], title=f"{m} ({'higher' if d else 'lower'} is better)",
            ylabel=m, reference=stats[0].mean if stats and stats[0].n else None, engine=plot_engine,
        )
        parts.append(f"<figure>{svg}</figure>")
    parts.append("</div>")
    for metric, lines in effect_lines(a):
        parts.append(f"<h2>Grid effects on {e(metric)}</h2><ul>")
        for kind, name, arith, extra in lines:
            tail = f" <span class=\"notes\">({e(extra)})</span>" if extra else ""
            parts.append(f"<li><b>{e(kind)}</b>: {e(name)}: <code>{e(arith)}</code>{tail}</li>")
        parts.append("</ul>")
    missing = missing_lines(a)
    if missing:
        parts.append('<h2 class="missing">Missing runs</h2><ul class="missing">')
        parts += [f"<li>{e(line)}</li>" for line in missing]
        parts.append("</ul>")
    if a.reference_columns:
        parts.append(f"<p class=\"notes\">Reference columns from the study file: {e(', '.join(a.reference_columns))} "
                     f"(shown as given; {fmt(None, 0)} = no value for that row).</p>")
    for heading, body in extra_sections:
        parts.append(f"<h2>{e(heading)}</h2>{body}")
    parts.append('<div class="notes">' + "".join(f"<p>{e(n)}</p>" for n in a.notes) + "</div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
