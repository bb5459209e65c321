"""``--figures DIR``: every figure of a report as PDF, SVG and PNG, for the paper and the talk.

The figures are the typed values the HTML page draws (:mod:`evalab.report.figures`), drawn
here by matplotlib with the same panels, rows, intervals, axis ranges, ticks, lines,
labels and legend, laid out at a paper width (``--figure-width``: ``single``, a column of a
two-column paper, 3.3 in; ``double``, the full text width, 6.9 in; or a width in inches)
with 8 pt text, so that the figure goes into the paper at 100% (no scaling that shrinks the
text). PDF and SVG are vector, the PNG is rendered at PNG_DPI (slides, web pages). The
fonts are embedded: the PDF's as TrueType subsets (``pdf.fonttype = 42``, no Type 3 fonts,
which some publishers refuse), the SVG's as glyph outlines (``svg.fonttype = "path"``: it
looks the same where the font is not installed; each text's string is kept in a comment
before its glyphs). matplotlib is the
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
    LEGEND_LINE,
    LINE_H,
    TITLE_LINE,
    Box,
    Figure,
    IntervalPanel,
    Layout,
    XYPanel,
    layout,
    offset,
    place_labels,
    series_points,
    spans,
    tick_text,
)
from evalab.report.plots import COLOURS, SERIES_COLOURS, finite

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "PAPER_WIDTHS",
    "SUFFIXES",
    "figure_paths",
    "file_stem",
    "paper_width",
    "require_matplotlib",
    "write_figures",
]

#: the files written per figure
SUFFIXES = (".pdf", ".svg", ".png")
#: px of the layout per inch (the layout's 11 px text is 7.9 pt)
PX_PER_IN = 100.0
#: the widths of a two-column paper (inches): one column, and the full text width
PAPER_WIDTHS = {"single": 3.3, "double": 6.9}
#: the PNG's resolution (a 6.9 in figure is 1380 px wide: sharp on a projector)
PNG_DPI = 200
RC: Any = {
    "pdf.fonttype": 42,
    "svg.fonttype": "path",
    "svg.hashsalt": "evalab",
    "font.size": 11 * 72 / PX_PER_IN,  # the page's 11 px
    "font.family": "DejaVu Sans",
}
#: the layout's LINE_H between lines of a text, as matplotlib's line spacing (in font sizes)
LINE_SPACING = LINE_H / (RC["font.size"] * PX_PER_IN / 72)


def require_matplotlib(setting: str = "figures") -> None:
    """Refuse, naming the extra and the ``setting`` that wants figures, when matplotlib is
    not installed (before any work)."""
    from evalab.errors import Setting, require

    require("matplotlib", what=Setting(setting), extra="report")


def paper_width(text: str) -> float:
    """``--figure-width``'s value in inches: ``single``, ``double`` or a number of inches
    from 2 to 20.

    >>> paper_width("single"), paper_width("5")
    (3.3, 5.0)
    """
    from evalab.errors import OutOfRangeError

    if text in PAPER_WIDTHS:
        return PAPER_WIDTHS[text]
    from evalab import numbers

    try:
        inches = numbers.parse_float(text)
    except numbers.NumberError:
        inches = float("nan")
    if not 2.0 <= inches <= 20.0:
        raise OutOfRangeError(
            "figure_width",
            repr(text),
            "single (3.3 in), double (6.9 in) or inches from 2 to 20",
        )
    return inches


def file_stem(name: str) -> str:
    """A figure name as a file name: letters, digits, ``.``, ``_`` and ``-`` kept.

    >>> file_stem("forest-BLEU (sacre)/x")
    'forest-BLEU_sacre_x'
    """
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9._-]", "_", name)).strip("_") or "figure"


def figure_paths(figures: Sequence[Figure], folder: str | Path) -> list[list[Path]]:
    """Per figure, the files it is written to (``<name>.pdf``, ``.svg`` and ``.png`` in ``folder``);
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


def write_figures(
    figures: Sequence[Figure], folder: str | Path, width_in: float = PAPER_WIDTHS["double"]
) -> list[Path]:
    """Write every figure ``width_in`` inches wide as PDF, SVG and PNG into ``folder``
    (created when missing; each file atomically, :func:`figure_paths`); the paths written."""
    from evalab.io import write_bytes_atomic

    Path(folder).mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fig, paths in zip(figures, figure_paths(figures, folder), strict=True):
        for path, data in zip(paths, figure_bytes(fig, width_in), strict=True):
            write_bytes_atomic(path, data)
            written.append(path)
    return written


def figure_bytes(
    fig: Figure, width_in: float = PAPER_WIDTHS["double"]
) -> tuple[bytes, bytes, bytes]:
    """The figure ``width_in`` inches wide as PDF, SVG and PNG bytes."""
    import matplotlib

    with matplotlib.rc_context(RC):
        drawn = draw(fig, width_in)
        pdf, svg, png = io.BytesIO(), io.BytesIO(), io.BytesIO()
        drawn.savefig(pdf, format="pdf", metadata={"CreationDate": None, "Creator": "evalab"})
        drawn.savefig(svg, format="svg", metadata={"Date": None, "Creator": "evalab"})
        drawn.savefig(png, format="png", dpi=PNG_DPI, metadata={"Software": "evalab"})
    return pdf.getvalue(), svg.getvalue(), png.getvalue()


def _text(text: str) -> str:
    # matplotlib reads $...$ as mathtext; a label is plain text
    return text.replace("$", r"\$")


def pt(px: float) -> float:
    """px of the page's layout as typographic points (offsets of texts)."""
    return px * 72 / PX_PER_IN


def draw(fig: Figure, width_in: float | None = None) -> Any:
    """The figure as a matplotlib ``Figure`` laid out ``width_in`` inches wide (the page's
    width when None) as :func:`evalab.report.figures.layout` lays it out at 100 px an inch:
    the same plot areas, title lines, wrapped labels, label columns and legend places."""
    from matplotlib.figure import Figure as MplFigure

    lay = layout(fig, None if width_in is None else width_in * PX_PER_IN)
    w, h = lay.width, lay.height
    drawn = MplFigure(figsize=(w / PX_PER_IN, h / PX_PER_IN))
    for p, box in zip(fig.panels, lay.boxes, strict=True):
        ax = drawn.add_axes(
            (
                box.left / w,
                1 - box.bottom / h,
                (box.right - box.left) / w,
                (box.bottom - box.top) / h,
            )
        )
        if isinstance(p, IntervalPanel):
            _interval_axes(ax, p, box, lay.values_right)
        else:
            _xy_axes(ax, p, box)
        for k, line in enumerate(box.title):
            drawn.text(
                0.5,
                1 - (box.title_y + k * TITLE_LINE) / h,
                _text(line),
                ha="center",
                va="baseline",
                fontweight="bold",
            )
        if isinstance(p, XYPanel) and p.note:
            drawn.text(box.left / w, 1 - box.note_y / h, _text(p.note), va="baseline")
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(length=0)
    _legend(drawn, lay)
    return drawn


def _interval_axes(ax: Axes, p: IntervalPanel, box: Box, values_right: bool) -> None:
    """The rows in px below the plot area's top (the layout's rows), the x axis in data."""
    from matplotlib.ticker import NullLocator

    kinds = len(p.intervals)
    centre = [row.centre for row in box.rows]
    if p.x.linear_width is not None:
        ax.set_xscale("asinh", linear_width=p.x.linear_width)
        ax.xaxis.set_minor_locator(NullLocator())
    for k, iv in enumerate(p.intervals):
        drawn = spans(iv.lows, iv.highs)
        ax.hlines(
            [centre[i] + offset(k, kinds, 7) for i, _, _ in drawn],
            [lo for _, lo, _ in drawn],
            [hi for _, _, hi in drawn],
            colors=COLOURS[k % len(COLOURS)],
            linewidth=pt(2.5),
        )
    for i, point in enumerate(p.points):
        if point is not None and finite(point):
            ax.plot([point], [centre[i]], "o", color=p.group_of(i).colour, markersize=pt(7))
    for r in p.rules:
        ax.axvline(
            r.at,
            color="#555555" if r.dashed else "#999999",
            linestyle=(0, (4, 3)) if r.dashed else "solid",
            linewidth=pt(1),
        )
    ax.set_xticks(list(box.ticks), [tick_text(v) for v in box.ticks])
    ax.set_yticks(centre, [_text("\n".join(row.lines)) for row in box.rows])
    ax.set_xlim(p.x.lo, p.x.hi)  # after the ticks, which would widen the limits to reach them
    ax.set_ylim(box.bottom - box.top, 0)  # the first row on top, as on the page
    ax.tick_params(axis="y", pad=pt(6))
    for label in ax.get_yticklabels():
        label.set_linespacing(LINE_SPACING)
    ax.spines["left"].set_visible(False)
    ax.set_xlabel(_text("\n".join(box.xlabel)), linespacing=LINE_SPACING)
    ax.grid(axis="x", color="#eeeeee", linewidth=pt(1))
    ax.set_axisbelow(True)
    for i, value in enumerate(p.values if values_right else ()):
        ax.annotate(
            _text(value),
            (1.0, centre[i]),
            xycoords=("axes fraction", "data"),
            xytext=(pt(12), 0),
            textcoords="offset points",
            va="center",
            ha="left",
        )


def _xy_axes(ax: Axes, p: XYPanel, box: Box) -> None:
    for k, s in enumerate(p.series):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        pts = series_points(s)
        banded = [(x, *ci) for x, _, ci in pts if ci is not None]  # (x, low, high)
        xs, lows, highs = ([b[col] for b in banded] for col in range(3))
        if p.style == "band" and banded:
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.18, linewidth=0)
        ax.plot(
            [x for x, _, _ in pts],
            [y for _, y, _ in pts],
            color=colour,
            linewidth=0 if p.style == "points" else pt(1.6),
            marker=None if p.style == "band" else "o",
            markersize=pt(7),
        )
        if p.style == "bars" and banded:
            ax.vlines(xs, lows, highs, color=colour, linewidth=pt(2))
    if p.fit is not None:
        x0, y0, x1, y1 = p.fit
        ax.plot([x0, x1], [y0, y1], color=FIT_COLOUR, linestyle=(0, (5, 3)), linewidth=pt(1))
    _point_names(ax, p, box)
    names = p.x_names or [tick_text(v) for v in box.ticks]
    ax.set_xticks(list(box.ticks), [_text(t) for t in names])
    ax.set_yticks(list(p.y.ticks), [tick_text(v) for v in p.y.ticks])
    ax.set_xlim(p.x.lo, p.x.hi)  # after the ticks, which would widen the limits to reach them
    ax.set_ylim(p.y.lo, p.y.hi)
    ax.set_xlabel(_text("\n".join(box.xlabel)), linespacing=LINE_SPACING)
    ax.set_ylabel(_text(p.y.label))
    ax.grid(axis="y", color="#eeeeee", linewidth=pt(1))
    ax.set_axisbelow(True)


def _point_names(ax: Axes, p: XYPanel, box: Box) -> None:
    """The names where the page writes them (:func:`evalab.report.figures.place_labels`, in
    the layout's px, read back as data coordinates of the plot area the axes fill), with
    their leader lines."""
    pw, ph = box.right - box.left, box.bottom - box.top

    def data(px: float, py: float) -> tuple[float, float]:
        fx, fy = (px - box.left) / pw, (box.bottom - py) / ph
        return p.x.lo + fx * (p.x.hi - p.x.lo), p.y.lo + fy * (p.y.hi - p.y.lo)

    for lab in place_labels(p, box):
        if lab.leader:
            (x0, y0), (x1, y1) = data(*lab.point), data(*lab.leader_end())
            ax.plot([x0, x1], [y0, y1], color="#999999", linewidth=pt(0.8))
        ax.text(*data(lab.x, lab.y), _text(lab.text), ha="left", va="baseline")


def _legend(drawn: Any, lay: Layout) -> None:
    """The legend where the page draws it: per entry its mark, then its label's lines."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    w, h = lay.width, lay.height

    def fx(px: float) -> float:
        return px / w

    def fy(px: float) -> float:
        return 1 - px / h

    for place in lay.legend:
        e, tx, ly = place.entry, place.x, place.y
        if e.shape == "dot":
            mark: Any = Line2D(
                [fx(tx - 12)], [fy(ly - 4)], marker="o", markersize=pt(7), color=e.colour
            )
        elif e.shape == "band":
            mark = Rectangle((fx(tx - 20), fy(ly - 1)), fx(16), 8 / h, color=e.colour, alpha=0.35)
        else:
            mark = Line2D(
                [fx(tx - 20), fx(tx - 4)],
                [fy(ly - 4)] * 2,
                color=e.colour,
                linewidth=pt(2.5),
                linestyle=(0, (4, 3)) if e.shape == "dash" else "solid",
            )
        mark.set_transform(drawn.transFigure)
        drawn.add_artist(mark)
        for k, line in enumerate(place.lines):
            drawn.text(fx(tx), fy(ly + k * LEGEND_LINE), _text(line), va="baseline")
