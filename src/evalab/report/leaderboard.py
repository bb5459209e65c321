"""A leaderboard page: the ranking table and a plot of every model's estimate with its interval.

``evalab arena -f html`` and ``evalab winrate -f html`` write it: one self-contained page (no
script, no request: :func:`evalab.report.page.html_page`) with the figure first, models best at
the top, each dot coloured by its significance cluster, and the same table the other formats
print below it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from evalab.report.figures import Figure, Group, figure_svg, interval_panel
from evalab.report.page import html_page, html_table
from evalab.report.plots import Intervals
from evalab.report.table import Table

__all__ = ["leaderboard_figure", "leaderboard_html"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{padding:0.25em 0.6em;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{border-bottom:2px solid #333} td.l,th.l{text-align:left}
figure{margin:0} .notes{color:#555;font-size:0.85em}
"""
#: cluster colours, cycled (a dot's colour says which cluster it is in)
_CLUSTER_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def leaderboard_figure(
    title: str,
    models: Sequence[str],
    points: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    clusters: Sequence[int | None],
    *,
    xlabel: str,
    interval: str,
) -> Figure:
    """Models top to bottom as given (best first), a dot and an interval each."""
    numbers = sorted({c for c in clusters if c is not None})
    groups = [
        Group(f"cluster {c}", _CLUSTER_COLOURS[k % len(_CLUSTER_COLOURS)])
        for k, c in enumerate(numbers)
    ] or [Group("estimate", "#000000")]
    row_groups = [numbers.index(c) if c is not None else 0 for c in clusters]
    panel = interval_panel(
        title,
        models,
        points,
        [Intervals(interval, list(lows), list(highs))],
        xlabel=xlabel,
        groups=groups,
        row_groups=row_groups,
    )
    return Figure("leaderboard", title, (panel,))


def leaderboard_html(title: str, figure: Figure, table: Table, notes: Sequence[str]) -> str:
    """The page: the figure, the table, and the notes (footer lines) under it."""
    body = [
        f"<figure>{figure_svg(figure)}</figure>",
        html_table(table),
        '<div class="notes">' + "".join(f"<p>{html.escape(n)}</p>" for n in notes) + "</div>",
    ]
    return html_page(title, body, css=_CSS)
