"""``--figures DIR``: every figure of a report as PDF and SVG, for the paper.

The figures are the typed values the HTML page draws (:mod:`evalab.report.figures`), drawn
here by matplotlib with the same panels, rows, intervals, axis ranges, ticks, lines,
labels and legend. Both files are vector; the fonts are embedded: the PDF's as TrueType
subsets (``pdf.fonttype = 42``, no Type 3 fonts, which some publishers refuse), the SVG's
as glyph outlines (``svg.fonttype = "path"``: it looks the same where the font is not
installed; each text's string is kept in a comment before its glyphs). matplotlib is the
``report`` extra, imported only when figures are written, through ``Figure`` so that no
global pyplot state is touched. File contents do not depend on the date (no timestamps).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.report.figures import (
    FIT_COLOUR,
    Figure,
    IntervalPanel,
    LegendEntry,
    XYPanel,
    figure_width,
    legend_rows,
    offset,
    panel_height,
    point_name,
    row_height,
    series_points,
    spans,
    tick_text,
)
from evalab.report.plots import COLOURS, SERIES_COLOURS, finite

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["SUFFIXES", "figure_paths", "file_stem", "require_matplotlib", "write_figures"]

#: the files written per figure
SUFFIXES = (".pdf", ".svg")
#: px of the page's layout per inch
PX_PER_IN = 100.0
RC: Any = {
    "pdf.fonttype": 42,
    "svg.fonttype": "path",
    "svg.hashsalt": "evalab",
    "font.size": 8,
    "font.family": "DejaVu Sans",
}


def require_matplotlib(option: str = "--figures") -> None:
    """Refuse, naming the extra, when matplotlib is not installed (before any work)."""
    from evalab.errors import require

    require("matplotlib", what=option, extra="report")


def file_stem(name: str) -> str:
    """A figure name as a file name: letters, digits, ``.``, ``_`` and ``-`` kept.

    >>> file_stem("forest-BLEU (sacre)/x")
    'forest-BLEU_sacre_x'
    """
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9._-]", "_", name)).strip("_") or "figure"


def figure_paths(figures: Sequence[Figure], folder: str | Path) -> list[list[Path]]:
    """Per figure, the files it is written to (``<name>.pdf``, ``<name>.svg`` in ``folder``);
    names made unique with ``-2``, ``-3``... where two figures' file names would be the same."""
    used: set[str] = set()
    out = []
    for fig in figures:
        stem, k = file_stem(fig.name), 2
        while stem in used:
            stem, k = f"{file_stem(fig.name)}-{k}", k + 1
        used.add(stem)
        out.append([Path(folder) / f"{stem}{suffix}" for suffix in SUFFIXES])
    return out


def write_figures(figures: Sequence[Figure], folder: str | Path) -> list[Path]:
    """Write every figure as PDF and SVG into ``folder`` (created when missing; each file
    atomically, :func:`figure_paths`); the paths written."""
    from evalab.io import write_bytes_atomic

    Path(folder).mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fig, paths in zip(figures, figure_paths(figures, folder), strict=True):
        for path, data in zip(paths, figure_bytes(fig), strict=True):
            write_bytes_atomic(path, data)
            written.append(path)
    return written


def figure_bytes(fig: Figure) -> tuple[bytes, bytes]:
    """The figure as PDF and SVG bytes."""
    import matplotlib

    with matplotlib.rc_context(RC):
        drawn = draw(fig)
        pdf, svg = io.BytesIO(), io.BytesIO()
        drawn.savefig(pdf, format="pdf", metadata={"CreationDate": None, "Creator": "evalab"})
        drawn.savefig(svg, format="svg", metadata={"Date": None, "Creator": "evalab"})
    return pdf.getvalue(), svg.getvalue()


def _text(text: str) -> str:
    # matplotlib reads $...$ as mathtext; a label is plain text
    return text.replace("$", r"\$")


def draw(fig: Figure) -> Any:
    """The figure as a matplotlib ``Figure``: the page's sizes at 100 px an inch."""
    from matplotlib.figure import Figure as MplFigure

    rows = legend_rows(fig)
    heights = [panel_height(p) for p in fig.panels]
    legend_h = 16 * len(rows) + 12
    size = (figure_width(fig) / PX_PER_IN, (sum(heights) + legend_h) / PX_PER_IN)
    drawn = MplFigure(figsize=size, layout="constrained")
    # one subfigure per panel: its title is laid out with it (an axes title wider than its
    # axes, beside long row labels, ran past the figure's edge)
    subs = drawn.subfigures(len(fig.panels), 1, squeeze=False, height_ratios=heights)[:, 0]
    for sub, p in zip(subs, fig.panels, strict=True):
        ax = sub.subplots()
        if isinstance(p, IntervalPanel):
            _interval_axes(ax, p)
        else:
            _xy_axes(ax, p)
        sub.suptitle(_text(p.title), fontweight="bold", fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    # matplotlib fills a legend's columns first: the rows of the page's legend, transposed
    columns = max((len(r) for r in rows), default=1)
    handles = [_handle(r[c]) for c in range(columns) for r in rows if c < len(r)]
    if handles:
        drawn.legend(
            handles=handles, loc="outside lower center", ncol=columns, frameon=False, fontsize=7
        )
    return drawn


def _interval_axes(ax: Axes, p: IntervalPanel) -> None:
    n, kinds = len(p.labels), len(p.intervals)
    step = 7 / row_height(p)  # the page's 7 px between a row's interval lines, in rows
    for k, iv in enumerate(p.intervals):
        drawn = spans(iv.lows, iv.highs)
        ax.hlines(
            [i + offset(k, kinds, step) for i, _, _ in drawn],
            [lo for _, lo, _ in drawn],
            [hi for _, _, hi in drawn],
            colors=COLOURS[k % len(COLOURS)],
            linewidth=2.2,
        )
    for i, point in enumerate(p.points):
        if point is not None and finite(point):
            ax.plot([point], [i], "o", color=p.group_of(i).colour, markersize=4)
    for r in p.rules:
        ax.axvline(
            r.at,
            color="#555555" if r.dashed else "#999999",
            linestyle="--" if r.dashed else "-",
            linewidth=0.8,
        )
    ax.set_xlim(p.x.lo, p.x.hi)
    ax.set_xticks(list(p.x.ticks), [tick_text(v) for v in p.x.ticks])
    ax.set_ylim(n - 0.5, -0.5)  # the first row on top, as on the page
    ax.set_yticks(range(n), [_text(lab) for lab in p.labels])
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel(_text(p.x.label))
    ax.grid(axis="x", color="#eeeeee", linewidth=0.6)
    ax.set_axisbelow(True)
    for i, value in enumerate(p.values):
        ax.annotate(
            _text(value),
            (1.0, i),
            xycoords=("axes fraction", "data"),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            ha="left",
        )


def _xy_axes(ax: Axes, p: XYPanel) -> None:
    for k, s in enumerate(p.series):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        pts = series_points(s)
        banded = [(x, ci) for x, _, ci in pts if ci is not None]
        if p.style == "band" and banded:
            ax.fill_between(
                [x for x, _ in banded],
                [lo for _, (lo, _) in banded],
                [hi for _, (_, hi) in banded],
                color=colour,
                alpha=0.18,
                linewidth=0,
            )
        ax.plot(
            [x for x, _, _ in pts],
            [y for _, y, _ in pts],
            color=colour,
            linewidth=0 if p.style == "points" else 1.4,
            marker=None if p.style == "band" else "o",
            markersize=4,
        )
        if p.style == "bars" and banded:
            ax.vlines(
                [x for x, _ in banded],
                [lo for _, (lo, _) in banded],
                [hi for _, (_, hi) in banded],
                color=colour,
                linewidth=1.8,
            )
    if p.fit is not None:
        x0, y0, x1, y1 = p.fit
        ax.plot([x0, x1], [y0, y1], color=FIT_COLOUR, linestyle="--", linewidth=0.9)
    _point_names(ax, p)
    ax.set_xlim(p.x.lo, p.x.hi)
    ax.set_ylim(p.y.lo, p.y.hi)
    names = p.x_names or [tick_text(v) for v in p.x.ticks]
    ax.set_xticks(list(p.x.ticks), [_text(t) for t in names])
    ax.set_yticks(list(p.y.ticks), [tick_text(v) for v in p.y.ticks])
    ax.set_xlabel(_text(p.x.label))
    ax.set_ylabel(_text(p.y.label))
    ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
    ax.set_axisbelow(True)
    if p.note:
        ax.text(0.01, 0.98, _text(p.note), transform=ax.transAxes, va="top", ha="left")


def _point_names(ax: Axes, p: XYPanel) -> None:
    """The names beside the points, on the side the page writes them (``XYPanel.anchor``)."""
    if not p.series or not p.point_names:
        return
    s = p.series[0]
    for name, x, y in zip(p.point_names, s.xs, s.ys, strict=False):
        if y is None or not finite(y):
            continue
        anchor = p.anchor(x)
        ax.annotate(
            _text(point_name(name)),
            (x, y),
            xytext=(-4 if anchor == "end" else 4, 3),
            textcoords="offset points",
            ha="right" if anchor == "end" else "left",
            va="bottom",
            fontsize=7,
        )


def _handle(e: LegendEntry) -> Any:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    label = _text(e.label)
    if e.shape == "dot":
        return Line2D([], [], color=e.colour, marker="o", linestyle="", markersize=4, label=label)
    if e.shape == "band":
        return Patch(color=e.colour, alpha=0.35, label=label)
    return Line2D(
        [],
        [],
        color=e.colour,
        linestyle="--" if e.shape == "dash" else "-",
        linewidth=2,
        label=label,
    )
