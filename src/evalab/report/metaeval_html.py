"""A self-contained HTML page of a meta-evaluation.

One file, no network, no script (a Content Security Policy forbids them): the result
table, one scatter plot per metric (human vs metric system score, one labelled point per
system, the least-squares regression line) and one ranking chart per statistic (value
with its confidence interval, metrics in rank order, coloured by rank cluster). The plots
are figure values (:mod:`evalab.report.figures`) drawn as inline SVG, the same ones
``meta-eval --figures DIR`` writes as PDF, SVG and PNG; every string from the inputs (system and
metric names, paths) is escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np

from evalab.metaeval.evaluate import MetaEvalResult
from evalab.metaeval.statistics import NAMES
from evalab.report.figures import Figure, Group, Series, figure_svg, interval_panel, xy_panel
from evalab.report.metaeval_table import footer, header, table_rows
from evalab.report.page import html_page
from evalab.report.plots import SERIES_COLOURS, Intervals
from evalab.report.table import cell_text

__all__ = [
    "metaeval_figures",
    "ranking_figure",
    "render_html",
    "scatter_figure",
    "scatter_svg",
]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{padding:0.25em 0.6em;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{border-bottom:2px solid #333} td.l,th.l{text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:1em} figure{margin:0}
.notes{color:#555;font-size:0.85em}
"""
e = html.escape


def scatter_figure(
    names: Sequence[str],
    human: Sequence[float],
    metric: Sequence[float],
    title: str,
    ylabel: str,
    *,
    name: str = "scatter",
) -> Figure:
    """Human (x) vs metric (y) system scores with the least-squares line, round ticks,
    Pearson's r over the systems in the panel (three systems or more) and every name beside
    its point, on the side that keeps it inside the plot.

    >>> fig = scatter_figure(["a", "b", "c"], [0.0, 1.0, 2.0], [1.0, 3.0, 4.0], "t", "m")
    >>> fig.panels[0].note, fig.panels[0].x.ticks[:3]
    ('Pearson r = 0.982 (3 systems)', (0.0, 0.5, 1.0))
    """
    h, m = np.asarray(human, float), np.asarray(metric, float)
    fit = None
    if len(h) >= 2 and np.ptp(h) > 0:
        slope, icept = (float(v) for v in np.polyfit(h, m, 1))
        x0, x1 = float(h.min()), float(h.max())
        fit = (x0, icept + slope * x0, x1, icept + slope * x1)
    note = ""
    if len(h) >= 3 and np.ptp(h) > 0 and np.ptp(m) > 0:
        note = f"Pearson r = {float(np.corrcoef(h, m)[0, 1]):.3f} ({len(h)} systems)"
    xs = tuple(float(v) for v in h)
    panel = xy_panel(
        title,
        [Series("system", xs, tuple(float(v) for v in m), (None,) * len(xs), (None,) * len(xs))],
        xlabel="human system score",
        ylabel=ylabel,
        style="points",
        note=note,
        point_names=names,
        fit=fit,
        fit_label="least-squares line",
    )
    return Figure(name, title, (panel,))


def scatter_svg(
    names: Sequence[str], human: Sequence[float], metric: Sequence[float], title: str, ylabel: str
) -> str:
    """:func:`scatter_figure` as inline SVG.

    >>> svg = scatter_svg(["a", "b", "c"], [0.0, 1.0, 2.0], [1.0, 3.0, 4.0], "t", "m")
    >>> svg.count("<circle"), "Pearson r = 0.982 (3 systems)" in svg, ">0.5<" in svg
    (4, True, True)
    """
    return figure_svg(scatter_figure(names, human, metric, title, ylabel))


def _cluster(rank: int | None) -> Group:
    if rank is None:
        return Group("no rank", "#000000")
    return Group(f"rank {rank}", SERIES_COLOURS[(rank - 1) % len(SERIES_COLOURS)])


def ranking_figure(
    title: str,
    names: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    ranks: Sequence[int | None],
    *,
    name: str = "ranking",
    xlabel: str = "value",
) -> Figure:
    """Metrics (best first) as points with their interval, labelled with their rank, the
    dot coloured by the rank cluster (metrics no significant difference separates share one),
    on an axis with round ticks that fits the values."""
    clusters = list(dict.fromkeys(ranks))
    panel = interval_panel(
        title,
        [f"{r}. {n}" if r is not None else n for n, r in zip(names, ranks, strict=True)],
        [v if math.isfinite(v) else None for v in values],
        [Intervals("confidence interval", lows, highs)],
        xlabel=xlabel,
        groups=[_cluster(r) for r in clusters],
        row_groups=[clusters.index(r) for r in ranks],
    )
    return Figure(name, title, (panel,))


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
            + "".join(
                f'<td class="{"l" if i < 3 else ""}">{e(cell_text(c))}</td>'
                for i, c in enumerate(row)
            )
            + "</tr>"
        )
    return "<table>" + "\n".join(rows) + "</table>"


def metaeval_figures(result: MetaEvalResult) -> list[Figure]:
    """Every figure of the page: per metric a scatter plot on the metric's own scale (a
    lower-is-better metric's scores, negated for the statistics, drawn as the metric gives
    them, its axis saying ``↓ (lower is better)``), per statistic a ranking."""
    out = [
        scatter_figure(
            result.systems,
            list(result.human_system),
            [-v for v in m.system] if m.negated else list(m.system),
            f"{m.name} ({m.system_mode})",
            f"{m.name} ↓ (lower is better)" if m.negated else m.name,
            name=f"scatter-{m.name}",
        )
        for m in result.metrics
    ]
    negated = {m.name for m in result.metrics if m.negated}
    for (level, stat), per_metric in result.estimates.items():
        ordered = sorted(
            per_metric.items(),
            key=lambda kv: (kv[1].rank or 0, -kv[1].value if math.isfinite(kv[1].value) else 0),
        )
        out.append(
            ranking_figure(
                f"{level}: {NAMES[(level, stat)].label}",
                # a lower-is-better metric enters the statistics negated: its row says so
                [f"{n} (negated: lower is better)" if n in negated else n for n, _ in ordered],
                [x.value for _, x in ordered],
                [x.low for _, x in ordered],
                [x.high for _, x in ordered],
                [x.rank for _, x in ordered],
                name=f"ranking-{level}-{stat}",
                xlabel=f"{NAMES[(level, stat)].label} with the human scores",
            )
        )
    return out


def render_html(result: MetaEvalResult, title: str = "Meta-evaluation against human scores") -> str:
    """The page: table, per-metric scatter plots, per-statistic rankings, signatures."""
    figures = metaeval_figures(result)
    scatters = len(result.metrics)
    parts = [
        _table(result),
        '<h2>Metric vs human, per system</h2><div class="plots">',
        *(f"<figure>{figure_svg(f)}</figure>" for f in figures[:scatters]),
        '</div><h2>Rankings</h2><p class="notes">Dots coloured by rank cluster: metrics that no '
        'significant difference separates share a rank and a colour.</p><div class="plots">',
        *(f"<figure>{figure_svg(f)}</figure>" for f in figures[scatters:]),
        "</div>",
        '<div class="notes">' + "".join(f"<p>{e(line)}</p>" for line in footer(result)) + "</div>",
    ]
    return html_page(title, parts, css=_CSS)
