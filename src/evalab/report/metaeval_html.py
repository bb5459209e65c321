"""A self-contained HTML page of a meta-evaluation.

One file, no network, no script (a Content Security Policy forbids them): the result
table, one scatter plot per metric (human vs metric system score, one labelled point per
system, the least-squares regression line) and one ranking chart per statistic (value
with its confidence interval, metrics in rank order). Plots are hand-written inline SVG;
every string from the inputs (system and metric names, paths) is escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

import numpy as np

from evalab.metaeval.evaluate import MetaEvalResult
from evalab.metaeval.statistics import LABELS
from evalab.report.metaeval_table import footer, header, table_rows
from evalab.report.page import html_page
from evalab.report.plots import nice_ticks

__all__ = ["ranking_svg", "render_html", "scatter_svg"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{padding:0.25em 0.6em;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{border-bottom:2px solid #333} td.l,th.l{text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:1em} figure{margin:0}
.notes{color:#555;font-size:0.85em}
"""
_W, _H, _PAD = 420, 300, 50
e = html.escape


def _scale(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _bounds(values: Sequence[float]) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    pad = 0.08 * ((hi - lo) or 1.0)
    return lo - pad, hi + pad


def _axes(title: str, xlabel: str, ylabel: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" font-family="sans-serif" font-size="10">',
        f"<title>{e(title)}</title>",
        f'<text x="{_W / 2}" y="16" text-anchor="middle" font-weight="bold" font-size="12">{e(title)}</text>',
        f'<rect x="{_PAD}" y="{_PAD / 2}" width="{_W - 1.5 * _PAD}" height="{_H - 1.5 * _PAD}" fill="none" stroke="#333"/>',
        f'<text x="{_W / 2}" y="{_H - 8}" text-anchor="middle">{e(xlabel)}</text>',
        f'<text x="12" y="{_H / 2}" transform="rotate(-90 12 {_H / 2})" text-anchor="middle">{e(ylabel)}</text>',
    ]


def _ticks(
    sx: Callable[[float], float],
    sy: Callable[[float], float],
    xr: tuple[float, float],
    yr: tuple[float, float],
) -> list[str]:
    """Round tick values (:func:`evalab.report.plots.nice_ticks`) on both axes, with a light grid."""
    parts = []
    for v in nice_ticks(*xr):
        parts.append(
            f'<line x1="{sx(v):.1f}" y1="{_PAD / 2}" x2="{sx(v):.1f}" y2="{_H - _PAD}" stroke="#eee"/>'
        )
        parts.append(
            f'<text x="{sx(v):.1f}" y="{_H - _PAD + 12}" text-anchor="middle">{v:.4g}</text>'
        )
    for v in nice_ticks(*yr):
        parts.append(
            f'<line x1="{_PAD}" y1="{sy(v):.1f}" x2="{_W - _PAD / 2}" y2="{sy(v):.1f}" stroke="#eee"/>'
        )
        parts.append(f'<text x="{_PAD - 3}" y="{sy(v) + 3:.1f}" text-anchor="end">{v:.4g}</text>')
    return parts


def scatter_svg(
    names: Sequence[str], human: Sequence[float], metric: Sequence[float], title: str, ylabel: str
) -> str:
    """Human (x) vs metric (y) system scores with the least-squares line, round ticks,
    Pearson's r over the systems in the panel (three systems or more) and every name inside
    the plot.

    >>> svg = scatter_svg(["a", "b", "c"], [0.0, 1.0, 2.0], [1.0, 3.0, 4.0], "t", "m")
    >>> svg.count("<circle"), "Pearson r = 0.982 (3 systems)" in svg, ">0.5<" in svg
    (3, True, True)
    """
    (x0, x1), (y0, y1) = _bounds(human), _bounds(metric)
    sx = _scale(x0, x1, _PAD, _W - _PAD / 2)
    sy = _scale(y0, y1, _H - _PAD, _PAD / 2)
    parts = _axes(title, "human system score", ylabel)
    parts += _ticks(sx, sy, (x0, x1), (y0, y1))
    h, m = np.asarray(human, float), np.asarray(metric, float)
    if len(h) >= 2 and np.ptp(h) > 0:
        slope, icept = np.polyfit(h, m, 1)
        parts.append(
            f'<line x1="{sx(x0):.1f}" y1="{sy(icept + slope * x0):.1f}" x2="{sx(x1):.1f}" '
            f'y2="{sy(icept + slope * x1):.1f}" stroke="#c44e52" stroke-dasharray="5 3"/>'
        )
    if len(h) >= 3 and np.ptp(h) > 0 and np.ptp(m) > 0:
        r = float(np.corrcoef(h, m)[0, 1])
        parts.append(
            f'<text x="{_PAD + 6}" y="{_PAD / 2 + 14}" font-size="11">Pearson r = {r:.3f} '
            f"({len(h)} systems)</text>"
        )
    middle = (_PAD + _W - _PAD / 2) / 2
    for name, a, b in zip(names, h, m, strict=True):
        parts.append(
            f'<circle cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="3.5" fill="#4c72b0"><title>{e(name)}: '
            f"human {a:.4g}, metric {b:.4g}</title></circle>"
        )
        # left of the point in the right half, so that no label runs past the plot's edge
        left = sx(a) > middle
        shown = name if len(name) <= 28 else name[:27] + "…"
        parts.append(
            f'<text x="{sx(a) + (-5 if left else 5):.1f}" y="{sy(b) - 4:.1f}" '
            f'text-anchor="{"end" if left else "start"}">{e(shown)}<title>{e(name)}</title></text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def ranking_svg(
    title: str,
    names: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    ranks: Sequence[int | None],
) -> str:
    """Metrics (best first) as points with their interval, labelled with their rank."""
    ends = [
        v
        for v in [
            *values,
            *(x for x in lows if x is not None),
            *(x for x in highs if x is not None),
        ]
    ]
    x0, x1 = _bounds(ends)
    sx = _scale(x0, x1, _PAD + 40, _W - _PAD / 2)
    step = (_H - 1.5 * _PAD) / max(len(names), 1)
    parts = _axes(title, "value (bars: confidence interval)", "")
    for v in (x0, x1):
        parts.append(
            f'<text x="{sx(v):.1f}" y="{_H - _PAD + 12}" text-anchor="middle">{v:.3g}</text>'
        )
    for k, (name, v, lo, hi, rank) in enumerate(
        zip(names, values, lows, highs, ranks, strict=True)
    ):
        y = _PAD / 2 + step * (k + 0.5)
        label = f"{rank}. {name}" if rank is not None else name
        parts.append(f'<text x="{_PAD + 36}" y="{y + 3:.1f}" text-anchor="end">{e(label)}</text>')
        if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
            parts.append(
                f'<line x1="{sx(lo):.1f}" y1="{y:.1f}" x2="{sx(hi):.1f}" y2="{y:.1f}" stroke="#333"/>'
            )
        if math.isfinite(v):
            parts.append(
                f'<circle cx="{sx(v):.1f}" cy="{y:.1f}" r="4" fill="#55a868"><title>{e(name)}: {v:.4f}</title></circle>'
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _table(result: MetaEvalResult) -> str:
    head = header(result)
    rows = [
        "<tr>"
        + "".join(f'<th class="{"l" if i < 3 else ""}">{e(h)}</th>' for i, h in enumerate(head))
        + "</tr>"
    ]
    for row in table_rows(result):
        rows.append(
            "<tr>"
            + "".join(f'<td class="{"l" if i < 3 else ""}">{e(c)}</td>' for i, c in enumerate(row))
            + "</tr>"
        )
    return "<table>" + "\n".join(rows) + "</table>"


def render_html(result: MetaEvalResult, title: str = "Meta-evaluation against human scores") -> str:
    """The page: table, per-metric scatter plots, per-statistic rankings, signatures."""
    parts = [
        _table(result),
        '<h2>Metric vs human, per system</h2><div class="plots">',
    ]
    for m in result.metrics:
        svg = scatter_svg(
            result.systems,
            list(result.human_system),
            list(m.system),
            f"{m.name} ({m.system_mode})",
            m.name,
        )
        parts.append(f"<figure>{svg}</figure>")
    parts.append('</div><h2>Rankings</h2><div class="plots">')
    for (level, stat), per_metric in result.estimates.items():
        ordered = sorted(
            per_metric.items(),
            key=lambda kv: (kv[1].rank or 0, -kv[1].value if math.isfinite(kv[1].value) else 0),
        )
        svg = ranking_svg(
            f"{level}: {LABELS[(level, stat)]}",
            [n for n, _ in ordered],
            [x.value for _, x in ordered],
            [x.low for _, x in ordered],
            [x.high for _, x in ordered],
            [x.rank for _, x in ordered],
        )
        parts.append(f"<figure>{svg}</figure>")
    parts.append("</div>")
    parts.append(
        '<div class="notes">' + "".join(f"<p>{e(line)}</p>" for line in footer(result)) + "</div>"
    )
    return html_page(title, parts, css=_CSS)
