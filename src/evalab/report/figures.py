"""The reports' figures as typed values, and the one SVG writer that draws them in a page.

A :class:`Figure` says everything a reader sees: its panels (stacked top to bottom), each
panel's rows or series, points, intervals, axis ranges and ticks, reference lines, labels
and legend. The decisions (which rows go on which panel, where an axis starts, which ticks)
are taken once, when the value is built (:func:`interval_panel`, :func:`xy_panel`); the HTML
pages draw the value with :func:`figure_svg` and ``--figures`` writes the very same value as
PDF, SVG and PNG with matplotlib (:func:`evalab.report.figure_files.write_figures`), so a figure
in the paper is the figure on the page.

Two kinds of panel cover every plot of the reports:

* :class:`IntervalPanel`: one line per row, a dot (coloured by the row's group) and one
  line per kind of interval, on a horizontal axis with vertical reference lines: forest
  plots, level plots, the summary figure, the systems of ``compare``, meta-eval rankings;
* :class:`XYPanel`: series of (x, y) points with an interval at each, drawn as a line over
  a band (learning curves) or as points joined by lines with error bars (interaction
  plots, whose x positions are named categories: a factor's levels).
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from evalab.report.plots import (
    COLOURS,
    SERIES_COLOURS,
    Intervals,
    axis_range,
    finite,
    nice_ticks,
    position,
    scaled_range,
    scaled_ticks,
)

__all__ = [
    "Axis",
    "Figure",
    "Group",
    "IntervalPanel",
    "LegendEntry",
    "PointLabel",
    "Rule",
    "Series",
    "XYPanel",
    "figure_svg",
    "interval_panel",
    "legend",
    "place_labels",
    "text_width",
    "xy_panel",
]


@dataclass(frozen=True)
class Axis:
    """A numeric axis: its range, its tick values and its label."""

    lo: float
    hi: float
    ticks: tuple[float, ...]
    label: str = ""
    #: None: linear; else signed-log, linear within ±linear_width
    #: (:func:`evalab.report.plots.position`, matplotlib's ``asinh`` scale)
    linear_width: float | None = None

    def fraction(self, v: float) -> float:
        """Where ``v`` lies on the axis, 0 at ``lo`` and 1 at ``hi``."""
        c = self.linear_width
        lo = position(self.lo, c)
        return (position(v, c) - lo) / (position(self.hi, c) - lo)


@dataclass(frozen=True)
class Rule:
    """A line across the plot at ``at`` (vertical in an interval panel), named in the legend
    when ``label`` is given; ``dashed`` for a reference, solid grey for zero."""

    at: float
    label: str = ""
    dashed: bool = True


@dataclass(frozen=True)
class Group:
    """What a dot's colour says (the estimate; better / worse; a cluster)."""

    label: str
    colour: str


ESTIMATE = Group("estimate", "#000000")


@dataclass(frozen=True)
class IntervalPanel:
    """Rows top to bottom: per row a dot and one line per kind of interval."""

    title: str
    labels: tuple[str, ...]
    points: tuple[float | None, ...]
    intervals: tuple[Intervals, ...]
    x: Axis
    rules: tuple[Rule, ...] = ()
    #: text written right of the plot on each row (the summary's numbers); () for none
    values: tuple[str, ...] = ()
    groups: tuple[Group, ...] = (ESTIMATE,)
    #: each row's group (an index into ``groups``); () for group 0 everywhere
    row_groups: tuple[int, ...] = ()

    def group_of(self, i: int) -> Group:
        return self.groups[self.row_groups[i] if self.row_groups else 0]


@dataclass(frozen=True)
class Series:
    """One line of an :class:`XYPanel`: y (None: no value) and its interval at each x."""

    label: str
    xs: tuple[float, ...]
    ys: tuple[float | None, ...]
    lows: tuple[float | None, ...]
    highs: tuple[float | None, ...]


@dataclass(frozen=True)
class XYPanel:
    """Series over a shared x axis: ``style`` ``"band"`` draws each series as a line over a
    translucent band (curves), ``"bars"`` as dots joined by a line with an error bar at each
    x (interaction plots; ``x_names`` name the x positions 0, 1, ...), ``"points"`` as dots
    alone, each named by ``point_names`` beside it (scatter plots, with a ``fit`` line)."""

    title: str
    series: tuple[Series, ...]
    x: Axis
    y: Axis
    style: str = "band"
    x_names: tuple[str, ...] = ()
    #: a line of text inside the panel's top left corner (the interaction and its CI)
    note: str = ""
    #: what the band or bar is, said in the legend
    interval_label: str = ""
    #: the names written beside the points of the first series (``"points"``)
    point_names: tuple[str, ...] = ()
    #: a dashed line from (x0, y0) to (x1, y1), named ``fit_label`` in the legend
    fit: tuple[float, float, float, float] | None = None
    fit_label: str = ""


Panel = IntervalPanel | XYPanel


@dataclass(frozen=True)
class Figure:
    """One figure: ``name`` is its file name without suffix under ``--figures``."""

    name: str
    caption: str
    panels: tuple[Panel, ...] = field(default_factory=tuple)


def interval_panel(
    title: str,
    labels: Sequence[str],
    points: Sequence[float | None],
    intervals: Sequence[Intervals],
    *,
    xlabel: str = "",
    reference: float | None = None,
    reference_label: str = "",
    zero: str = "near",
    values: Sequence[str] = (),
    groups: Sequence[Group] = (ESTIMATE,),
    row_groups: Sequence[int] = (),
    linear_width: float | None = None,
) -> IntervalPanel:
    """A panel whose axis fits the points and intervals (:func:`evalab.report.plots.axis_range`:
    zero and ``reference`` added when near, zero always with ``zero="always"``), with round
    ticks, a dashed line at ``reference`` and a grey one at zero when they are on the axis.
    With ``linear_width`` the axis is signed-log (a forest plot's,
    :func:`evalab.report.plots.forest_scale`): zero always on it, ticks at round values.

    >>> p = interval_panel("t", ["a", "b"], [92.0, 94.0], [Intervals("ci", [91.0, 93.0], [93.0, 95.0])], reference=92.0)
    >>> p.x.lo > 90, [r.at for r in p.rules]
    (True, [92.0])
    """
    n = len(labels)
    if len(points) != n or any(len(iv.lows) != n or len(iv.highs) != n for iv in intervals):
        raise ValueError("labels, points and every interval need one value per row")
    if linear_width is None:
        lo, hi = axis_range(points, intervals, reference, zero=zero)
        ticks = nice_ticks(lo, hi)
    else:
        lo, hi = scaled_range(points, intervals, linear_width)
        ticks = scaled_ticks(lo, hi, linear_width)
    rules = []
    if reference is not None and finite(reference) and lo <= reference <= hi:
        rules.append(Rule(reference, reference_label))
    if reference != 0.0 and lo <= 0.0 <= hi:
        rules.append(Rule(0.0, "", dashed=False))
    return IntervalPanel(
        title,
        tuple(labels),
        tuple(points),
        tuple(Intervals(iv.label, tuple(iv.lows), tuple(iv.highs)) for iv in intervals),
        Axis(lo, hi, tuple(ticks), xlabel, linear_width),
        tuple(rules),
        tuple(values),
        tuple(groups),
        tuple(row_groups),
    )


def _span(values: Sequence[float], *, pad: float = 0.05) -> tuple[float, float]:
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 1.0, hi + 1.0
    margin = (hi - lo) * pad
    return lo - margin, hi + margin


STYLES = ("band", "bars", "points")
#: a point's name is cut to this many characters beside it (the tooltip has it whole)
POINT_NAME_CHARS = 28


def point_name(name: str) -> str:
    """A point's name as written beside it: cut in the middle when long, so that names that
    share a long start (``generaltest2022.de-en.``) still differ.

    >>> point_name("generaltest2022.de-en.Online-W"), point_name("short")
    ('generaltes…22.de-en.Online-W', 'short')
    """
    if len(name) <= POINT_NAME_CHARS:
        return name
    head = (POINT_NAME_CHARS - 1) * 2 // 5
    return name[:head] + "…" + name[-(POINT_NAME_CHARS - 1 - head) :]


def xy_panel(
    title: str,
    series: Sequence[Series],
    *,
    xlabel: str,
    ylabel: str,
    style: str = "band",
    x_names: Sequence[str] = (),
    note: str = "",
    interval_label: str = "",
    point_names: Sequence[str] = (),
    fit: tuple[float, float, float, float] | None = None,
    fit_label: str = "",
) -> XYPanel:
    """A panel whose y axis spans every value and interval end (series are compared by
    shape and by their gaps, so it need not reach zero); named x positions get an axis from
    -0.5 to the last position + 0.5.

    >>> p = xy_panel("t", [Series("s", (0.0, 1.0), (92.0, 94.0), (91.0, 93.0), (93.0, 95.0))], xlabel="f", ylabel="acc", style="bars", x_names=("a", "b"))
    >>> p.x.lo, p.x.ticks, p.y.lo > 90
    (-0.5, (0.0, 1.0), True)
    """
    if style not in STYLES:
        raise ValueError(f"unknown panel style {style!r}; expected band, bars or points")
    ys = [
        float(v)
        for s in series
        for v in (*s.ys, *s.lows, *s.highs)
        if v is not None and finite(float(v))
    ]
    y0, y1 = _span(ys + ([fit[1], fit[3]] if fit is not None else []))  # the fit line inside too
    if x_names:
        x = Axis(-0.5, len(x_names) - 0.5, tuple(float(k) for k in range(len(x_names))), xlabel)
    else:
        xs = [float(v) for s in series for v in s.xs]
        x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
        x1 = x1 if x1 > x0 else x0 + 1.0
        if style == "points":  # a dot on the axis' end would be half drawn
            x0, x1 = _span(xs, pad=0.08)
        x = Axis(x0, x1, tuple(nice_ticks(x0, x1)), xlabel)
    return XYPanel(
        title,
        tuple(series),
        x,
        Axis(y0, y1, tuple(nice_ticks(y0, y1)), ylabel),
        style,
        tuple(x_names),
        note,
        interval_label,
        tuple(point_names),
        fit,
        fit_label,
    )


def spans(
    lows: Sequence[float | None], highs: Sequence[float | None]
) -> list[tuple[int, float, float]]:
    """``(index, low, high)`` of every interval with two finite ends."""
    return [
        (i, lo, hi)
        for i, (lo, hi) in enumerate(zip(lows, highs, strict=True))
        if lo is not None and hi is not None and finite(lo) and finite(hi)
    ]


def series_points(s: Series) -> list[tuple[float, float, tuple[float, float] | None]]:
    """``(x, y, (low, high) or None)`` of every finite point of a series."""
    ends = {i: (lo, hi) for i, lo, hi in spans(s.lows, s.highs)}
    return [
        (x, y, ends.get(i))
        for i, (x, y) in enumerate(zip(s.xs, s.ys, strict=True))
        if y is not None and finite(y)
    ]


@dataclass(frozen=True)
class LegendEntry:
    """One entry of a figure's legend: ``shape`` is line, dot, dash, rule or band."""

    shape: str
    colour: str
    label: str


def legend(fig: Figure) -> list[LegendEntry]:
    """The figure's legend, the same in both renderers: the kinds of interval, the groups
    of the dots and the named reference lines (interval panels), the series (xy panels)."""
    out: list[LegendEntry] = []
    for p in fig.panels:
        if isinstance(p, IntervalPanel):
            out += [
                LegendEntry("line", COLOURS[k % len(COLOURS)], iv.label)
                for k, iv in enumerate(p.intervals)
            ]
            used = {p.row_groups[i] if p.row_groups else 0 for i in range(len(p.labels))}
            out += [
                LegendEntry("dot", g.colour, g.label) for k, g in enumerate(p.groups) if k in used
            ]
            out += [LegendEntry("dash", "#555555", r.label) for r in p.rules if r.label]
        else:
            shape = "band" if p.style == "band" else "dot"
            out += [
                LegendEntry(shape, SERIES_COLOURS[k % len(SERIES_COLOURS)], s.label)
                for k, s in enumerate(p.series)
            ]
            out += [LegendEntry("dash", FIT_COLOUR, p.fit_label)] if p.fit and p.fit_label else []
            if p.style == "bars" and p.interval_label:  # what the error bars are
                out.append(LegendEntry("line", "#555555", f"error bar: {p.interval_label}"))
    return list(dict.fromkeys(out))  # each entry once, in the order first met


FIT_COLOUR = "#c44e52"

# ---- the layout: sizes in px; the SVG writer and matplotlib read the same numbers ----------
#: the page's figure width: a two-column paper's text width at 100 px an inch, the default
#: ``--figure-width`` (figure_files.PAPER_WIDTHS), so that the page shows the paper's figure
WIDTH = 690.0
#: a title line, a label line, the axis' tick labels and label under the plot area
TITLE_LINE, LINE_H, AXIS_H = 15.0, 13.5, 38.0
XY_PLOT_H = 220.0
#: the row labels' column takes at most this share of the figure's width (labels are wrapped
#: to it, never cut); the numbers right of the rows at most VALUES_SHARE, else they are
#: written as the label's last line
LABEL_SHARE, VALUES_SHARE = 0.42, 0.3
#: an xy panel's margins: room for the y tick labels and the rotated y label
XY_LEFT, RIGHT = 62.0, 20.0
LEGEND_LINE = 16.0


#: where a long word may break, best first: after a dot, underscore or slash, else a hyphen
_HYPHEN = "-"
_SOFT_BREAKS = ("._/", _HYPHEN)


def _cut(word: str, px: float) -> int:
    """Where to split a word wider than ``px``: after the last ``.``, ``_`` or ``/`` (else
    ``-``) that keeps the first piece within ``px`` (and not in its first third), else at
    the widest piece that fits (one character at least)."""
    fits = max([k for k in range(1, len(word)) if text_width(word[:k]) <= px], default=1)
    for marks in _SOFT_BREAKS:
        soft = [k for k in range(max(fits // 3, 1), fits + 1) if word[k - 1] in marks]
        if soft:
            return soft[-1]
    return fits


def wrap(text: str, px: float) -> tuple[str, ...]:
    """``text`` as lines at most ``px`` wide (:func:`text_width`): split at its newlines,
    then at spaces; a word wider than ``px`` is split after a ``.``, ``-``, ``_`` or ``/``
    where it can (:func:`_cut`). Nothing is cut off.

    >>> wrap("no attention (shallow model)\\nsmall", 90)
    ('no attention', '(shallow', 'model)', 'small')
    >>> wrap("1. generaltest2022.uk-en.Online-B", 120)
    ('1.', 'generaltest2022.', 'uk-en.Online-B')
    """
    out: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in para.split(" "):
            while text_width(word) > px and len(word) > 1:
                if line:
                    out.append(line)
                    line = ""
                k = _cut(word, px)
                out.append(word[:k])
                word = word[k:]
            joined = f"{line} {word}" if line else word
            if line and text_width(joined) > px:
                out.append(line)
                line = word
            else:
                line = joined
        out.append(line)
    return tuple(out)


def row_height(p: IntervalPanel, lines: int = 1) -> float:
    """A row's height: room for its interval lines and its label's lines."""
    return max(16 + 7 * len(p.intervals), LINE_H * lines + 4)


@dataclass(frozen=True)
class Row:
    """One row of an interval panel as laid out: its top and height in px below the plot
    area's top, and its label's lines."""

    top: float
    height: float
    lines: tuple[str, ...]

    @property
    def centre(self) -> float:
        return self.top + self.height / 2


@dataclass(frozen=True)
class Box:
    """A panel's plot area in px from the figure's top left, its title's lines (the first
    baseline at ``title_y``), the note's baseline (xy panels, 0 for none) and its rows
    (interval panels)."""

    left: float
    top: float
    right: float
    bottom: float
    title_y: float
    title: tuple[str, ...] = ()
    note_y: float = 0.0
    rows: tuple[Row, ...] = ()
    #: the x ticks drawn: the axis' ticks whose labels fit side by side (:func:`shown_ticks`)
    ticks: tuple[float, ...] = ()
    #: the x axis' label, wrapped to the plot area's width
    xlabel: tuple[str, ...] = ()


@dataclass(frozen=True)
class LegendPlace:
    """A legend entry as placed: its text's lines from ``(x, y)`` (first baseline), its mark
    20 px left of ``x``."""

    entry: LegendEntry
    x: float
    y: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """Where everything of a figure goes, in px; both renderers place their marks by it."""

    width: float
    height: float
    boxes: tuple[Box, ...]
    legend: tuple[LegendPlace, ...]
    #: the rows' numbers in a column right of the plot area (else in the labels)
    values_right: bool = True


#: the least gap (px) between two tick labels
TICK_GAP = 8.0


def shown_ticks(axis: Axis, plot_px: float) -> tuple[float, ...]:
    """The axis' ticks whose labels fit side by side on a plot area ``plot_px`` wide: every
    k-th tick for the smallest k that fits, counted from zero where zero is a tick.

    >>> shown_ticks(Axis(0.0, 0.1, (0.0, 0.02, 0.04, 0.06, 0.08, 0.1)), 120)
    (0.0, 0.04, 0.08)
    """
    ticks = list(axis.ticks)
    anchor = ticks.index(0.0) if 0.0 in ticks else 0
    for k in range(1, len(ticks) + 1):
        kept = [t for i, t in enumerate(ticks) if (i - anchor) % k == 0]
        marks = [(plot_px * axis.fraction(t), text_width(tick_text(t)) / 2) for t in kept]
        if all(x1 - h1 - x0 - h0 >= TICK_GAP for (x0, h0), (x1, h1) in itertools.pairwise(marks)):
            return tuple(kept)
    return tuple(ticks[anchor : anchor + 1])


def _row_text(p: IntervalPanel, i: int, values_right: bool) -> str:
    value = p.values[i] if p.values and not values_right else ""
    return p.labels[i] + (f"\n{value}" if value else "")


def _columns(bars: Sequence[IntervalPanel], w: float) -> tuple[float, float, bool]:
    """The interval panels' label column's right edge, the right margin, and whether the
    rows' numbers stand right of the plot (else as the labels' last lines)."""
    value_px = max((12 + text_width(v) for p in bars for v in p.values), default=0.0)
    values_right = value_px <= VALUES_SHARE * w
    widest = max(
        (
            text_width(line)
            for p in bars
            for i in range(len(p.labels))
            for line in _row_text(p, i, values_right).split("\n")
        ),
        default=24.0,
    )
    left = min(widest, LABEL_SHARE * w - 12) + 12
    return left, RIGHT + (value_px if values_right else 0.0), values_right


def _rows(p: IntervalPanel, label_px: float, values_right: bool) -> tuple[Row, ...]:
    """The panel's rows top to bottom, each as tall as its wrapped label needs."""
    rows: list[Row] = []
    y = 0.0
    for i in range(len(p.labels)):
        lines = wrap(_row_text(p, i, values_right), label_px)
        rows.append(Row(y, row_height(p, len(lines)), lines))
        y += rows[-1].height
    return tuple(rows)


def layout(fig: Figure, width: float | None = None) -> Layout:
    """The figure's layout at ``width`` px (the page's WIDTH when None): panels stacked,
    interval panels sharing one label column (so that their axes line up) whose labels are
    wrapped to it, every title and axis label wrapped to its room, the legend under the
    last panel."""
    w = WIDTH if width is None else width
    left, right, values_right = _columns([p for p in fig.panels if isinstance(p, IntervalPanel)], w)
    boxes, top = [], 0.0
    for p in fig.panels:
        title = wrap(p.title, w - 20)
        head = 8 + TITLE_LINE * len(title)
        note_y = 0.0
        if isinstance(p, XYPanel) and p.note:
            head += LINE_H
            note_y = top + head - 6
        rows: tuple[Row, ...] = ()
        if isinstance(p, IntervalPanel):
            rows = _rows(p, left - 12, values_right)
            x0, x1 = left, w - right
            body = max(rows[-1].top + rows[-1].height if rows else 0.0, row_height(p))
        else:
            x0, x1, body = XY_LEFT, w - RIGHT, XY_PLOT_H
        named = isinstance(p, XYPanel) and bool(p.x_names)
        xlabel = wrap(p.x.label, x1 - x0) if p.x.label else ()
        box = Box(
            x0, top + head, x1, top + head + body, top + 17, title, note_y, rows,
            p.x.ticks if named else shown_ticks(p.x, x1 - x0), xlabel,
        )  # fmt: skip
        boxes.append(box)
        top += head + body + AXIS_H + LINE_H * max(len(xlabel) - 1, 0)
    places, bottom = legend_places(fig, w, top + 12)
    return Layout(w, bottom + 8, tuple(boxes), places, values_right)


def legend_places(fig: Figure, width: float, top: float) -> tuple[tuple[LegendPlace, ...], float]:
    """The legend's entries flowed left to right in lines from ``top`` (each label wrapped to
    the width); the places and the last line's bottom."""
    out: list[LegendPlace] = []
    x, y, tallest = 10.0, top, 1
    for e in legend(fig):
        lines = wrap(e.label, width - 40)
        need = 20 + max(text_width(t) for t in lines) + 16
        if x > 10 and x + need > width - 10:
            x, y, tallest = 10.0, y + LEGEND_LINE * tallest, 1
        out.append(LegendPlace(e, x + 20, y, lines))
        x += need
        tallest = max(tallest, len(lines))
    bottom = y + LEGEND_LINE * (tallest - 1) + 4 if out else top - 12
    return tuple(out), bottom


def offset(k: int, count: int, step: float) -> float:
    """The vertical offset of the ``k``-th of ``count`` interval lines of a row."""
    return (k - (count - 1) / 2) * step


def tick_text(v: float) -> str:
    """A tick's label, the same in both renderers (a true minus sign, as matplotlib writes it).

    >>> tick_text(-0.5), tick_text(20.0), tick_text(-0.0)
    ('−0.5', '20', '0')
    """
    return f"{v + 0.0:.6g}".replace("-", "−")


def figure_svg(fig: Figure, width: float | None = None) -> str:
    """The figure as an ``<svg>`` element (every text escaped), its panels stacked, each a
    ``<g class="panel">`` titled by its title, the legend under the last; every dot and
    interval carries a tooltip ``<row>: <kind> [low, high]``.

    >>> f = Figure("f", "t", (interval_panel("Δ", ["a", "<b>"], [1.0, -2.0], [Intervals("seeds", [0.5, -3.0], [1.5, -1.0])], reference=0.0),))
    >>> svg = figure_svg(f)
    >>> svg.startswith("<svg") and svg.count("<circle") == 3 and "&lt;b&gt;" in svg  # 2 rows, 1 in the legend
    True
    """
    lay = layout(fig, width)
    e = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width:.0f}" height="{lay.height:.0f}" '
        f'viewBox="0 0 {lay.width:.0f} {lay.height:.0f}" role="img" font-family="sans-serif" font-size="11">',
        f"<title>{e(fig.caption)}</title>",
    ]
    for p, box in zip(fig.panels, lay.boxes, strict=True):
        parts.append(f'<g class="panel"><title>{e(p.title)}</title>')
        parts.append(
            f'<text x="{lay.width / 2:.1f}" y="{box.title_y:.1f}" text-anchor="middle" font-weight="bold">'
            + _tspans(box.title, lay.width / 2, TITLE_LINE)
            + "</text>"
        )
        parts += (
            _interval_svg(p, box, lay.values_right)
            if isinstance(p, IntervalPanel)
            else _xy_svg(p, box)
        )
        parts.append("</g>")
    parts += _legend_svg(lay)
    parts.append("</svg>")
    return "\n".join(parts)


def _tspans(lines: Sequence[str], x: float, step: float) -> str:
    """Lines of one ``<text>`` (escaped), each from ``x``, ``step`` px apart."""
    return "".join(
        f'<tspan x="{x:.1f}" dy="{0 if k == 0 else step:g}">{html.escape(t)}</tspan>'
        for k, t in enumerate(lines)
    )


def _x_axis_svg(axis: Axis, left: float, pw: float, y_top: float, y_axis: float) -> list[str]:
    parts = [
        f'<line x1="{left:.1f}" y1="{y_axis:.1f}" x2="{left + pw:.1f}" y2="{y_axis:.1f}" stroke="#333"/>'
    ]
    for v in axis.ticks:
        x = left + pw * axis.fraction(v)
        parts.append(
            f'<line x1="{x:.1f}" y1="{y_top:.1f}" x2="{x:.1f}" y2="{y_axis:.1f}" stroke="#eee"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{y_axis + 14:.1f}" text-anchor="middle">{tick_text(v)}</text>'
        )
    if axis.label:
        parts.append(
            f'<text x="{left + pw / 2:.1f}" y="{y_axis + 28:.1f}" text-anchor="middle">'
            + _tspans(axis.label.split("\n"), left + pw / 2, LINE_H)
            + "</text>"
        )
    return parts


def _interval_svg(p: IntervalPanel, box: Box, values_right: bool) -> list[str]:
    e = html.escape
    left = box.left
    pw, y0, y1 = box.right - box.left, box.top, box.bottom

    def x(v: float) -> float:
        return left + pw * p.x.fraction(v)

    shown = Axis(p.x.lo, p.x.hi, box.ticks, "\n".join(box.xlabel), p.x.linear_width)
    parts = _x_axis_svg(shown, left, pw, y0, y1)
    for r in p.rules:
        dash = ' stroke-dasharray="4 3"' if r.dashed else ""
        parts.append(
            f'<line x1="{x(r.at):.1f}" y1="{y0:.1f}" x2="{x(r.at):.1f}" y2="{y1:.1f}" '
            f'stroke="{"#555" if r.dashed else "#999"}"{dash}/>'
        )
    kinds = len(p.intervals)
    for i, row in enumerate(box.rows):
        lab = " ".join(p.labels[i].split("\n"))  # the tooltips' name of the row, on one line
        cy = y0 + row.centre
        first = cy + 4 - LINE_H * (len(row.lines) - 1) / 2
        parts.append(
            f'<text x="{left - 6:.1f}" y="{first:.1f}" text-anchor="end">'
            + _tspans(row.lines, left - 6, LINE_H)
            + "</text>"
        )
        for k, iv in enumerate(p.intervals):
            for _, lo, hi in spans(iv.lows[i : i + 1], iv.highs[i : i + 1]):
                y = cy + offset(k, kinds, 7)
                parts.append(
                    f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" '
                    f'stroke="{COLOURS[k % len(COLOURS)]}" stroke-width="2.5"><title>{e(lab)}: '
                    f"{e(iv.label)} [{lo:.4g}, {hi:.4g}]</title></line>"
                )
        point = p.points[i]
        if point is not None and finite(point):
            g = p.group_of(i)
            parts.append(
                f'<circle cx="{x(point):.1f}" cy="{cy:.1f}" r="3.5" fill="{g.colour}"><title>{e(lab)}: '
                f"{point:.4g} ({e(g.label)})</title></circle>"
            )
        if p.values and values_right:
            parts.append(f'<text x="{left + pw + 12:.1f}" y="{cy + 4:.1f}">{e(p.values[i])}</text>')
    return parts


def _xy_svg(p: XYPanel, box: Box) -> list[str]:
    e = html.escape
    left, pw, y0, y1 = box.left, box.right - box.left, box.top, box.bottom

    def px(v: float) -> float:
        return left + pw * p.x.fraction(v)

    def py(v: float) -> float:
        return y1 - XY_PLOT_H * p.y.fraction(v)

    axis = Axis(p.x.lo, p.x.hi, () if p.x_names else box.ticks, "\n".join(box.xlabel))
    parts = _x_axis_svg(axis, left, pw, y0, y1)
    for k, name in enumerate(p.x_names):
        parts.append(
            f'<text x="{px(k):.1f}" y="{y1 + 14:.1f}" text-anchor="middle">{e(name)}</text>'
        )
    parts.append(f'<line x1="{left}" y1="{y0:.1f}" x2="{left}" y2="{y1:.1f}" stroke="#333"/>')
    for v in p.y.ticks:
        parts.append(
            f'<line x1="{left}" y1="{py(v):.1f}" x2="{left + pw:.1f}" y2="{py(v):.1f}" stroke="#eee"/>'
        )
        parts.append(
            f'<text x="{left - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{tick_text(v)}</text>'
        )
    parts.append(
        f'<text transform="translate(12 {(y0 + y1) / 2:.1f}) rotate(-90)" text-anchor="middle">{e(p.y.label)}</text>'
    )
    if p.note:
        parts.append(f'<text x="{left}" y="{box.note_y:.1f}">{e(p.note)}</text>')
    if p.fit is not None:
        x0, fy0, x1, fy1 = p.fit
        parts.append(
            f'<line x1="{px(x0):.1f}" y1="{py(fy0):.1f}" x2="{px(x1):.1f}" y2="{py(fy1):.1f}" '
            f'stroke="{FIT_COLOUR}" stroke-dasharray="5 3"/>'
        )
    for k, s in enumerate(p.series):
        parts += _series_svg(p, s, SERIES_COLOURS[k % len(SERIES_COLOURS)], px, py)
    return parts + _labels_svg(p, box)


def _series_svg(
    p: XYPanel, s: Series, colour: str, px: Callable[[float], float], py: Callable[[float], float]
) -> list[str]:
    e = html.escape
    pts = series_points(s)
    banded = [(x, ci) for x, _, ci in pts if ci is not None]
    parts = []
    if p.style == "band" and banded:
        upper = " ".join(f"{px(x):.1f},{py(hi):.1f}" for x, (_, hi) in banded)
        lower = " ".join(f"{px(x):.1f},{py(lo):.1f}" for x, (lo, _) in reversed(banded))
        parts.append(
            f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.18" stroke="none">'
            f"<title>{e(s.label)}: {e(p.interval_label)}</title></polygon>"
        )
    if p.style == "points":
        return parts + _points_svg(p, s, colour, px, py)
    line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, _ in pts)
    parts.append(
        f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.6"><title>{e(s.label)}</title></polyline>'
    )
    if p.style == "bars":
        for x, y, ci in pts:
            name = p.x_names[round(x)] if p.x_names else tick_text(x)
            if ci is not None:
                parts.append(
                    f'<line x1="{px(x):.1f}" y1="{py(ci[0]):.1f}" x2="{px(x):.1f}" y2="{py(ci[1]):.1f}" stroke="{colour}" '
                    f'stroke-width="2"><title>{e(s.label)}, {e(name)}: {e(p.interval_label)} [{ci[0]:.4g}, {ci[1]:.4g}]</title></line>'
                )
            parts.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colour}"><title>{e(s.label)}, '
                f"{e(name)}: {y:.4g}</title></circle>"
            )
    return parts


def _points_svg(
    p: XYPanel, s: Series, colour: str, px: Callable[[float], float], py: Callable[[float], float]
) -> list[str]:
    e = html.escape
    parts = []
    for i, (x, y) in enumerate(zip(s.xs, s.ys, strict=True)):
        if y is None or not finite(y):
            continue
        name = p.point_names[i] if i < len(p.point_names) else ""
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colour}"><title>{e(name)}: '
            f"{e(p.x.label)} {x:.4g}, {e(p.y.label)} {y:.4g}</title></circle>"
        )
    return parts


def _labels_svg(p: XYPanel, box: Box) -> list[str]:
    e = html.escape
    parts = []
    for lab in place_labels(p, box):
        if lab.leader:
            (x0, y0), (x1, y1) = lab.point, lab.leader_end()
            parts.append(
                f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#999" stroke-width="0.8"/>'
            )
        parts.append(
            f'<text class="point-name" x="{lab.x:.1f}" y="{lab.y:.1f}">{e(lab.text)}<title>{e(lab.name)}</title></text>'
        )
    return parts


# ---- point names: placed so that none overlaps another, a point, the note or the edge -------
#: a character's advance at 11 px in DejaVu Sans (what matplotlib embeds and what Chromium and
#: most systems draw as sans-serif), rounded up: narrow, medium, wide and the rest
_NARROW, _MEDIUM, _WIDE = set("ijlIJ',.:;|!"), set('frt()-/[]\\ "'), set("mwMWDGOQ%@#&+<=>^~")
#: a label's box above and below its baseline, and the gap kept around it
LABEL_ASCENT, LABEL_DESCENT, LABEL_GAP = 9.0, 3.0, 1.5
#: the offset of a name beside its point (no leader line), and the grid step of the search
NEAR_DX, NEAR_DY, SEARCH_STEP = 5.0, 4.0, 6.0
#: a point's radius (both renderers draw 3.5 px dots)
DOT_R = 3.5


def text_width(text: str) -> float:
    """An upper estimate of ``text``'s width in px at 11 px (the labels' size).

    >>> text_width("Online-W"), text_width("iii")
    (53.0, 9.0)
    """
    widths = {c: 3.0 for c in _NARROW} | {c: 4.0 for c in _MEDIUM} | {c: 11.0 for c in _WIDE}
    return sum(widths.get(c, 9.0 if c.isupper() else 7.0) for c in text)


@dataclass(frozen=True)
class PointLabel:
    """A point's name as placed, in px from the figure's top left: the text starts at ``x``
    on the baseline ``y``; ``leader`` when it stands away from its point (a line joins them)."""

    text: str
    name: str
    x: float
    y: float
    width: float
    point: tuple[float, float]
    leader: bool

    def box(self) -> tuple[float, float, float, float]:
        """``(left, top, right, bottom)`` of the text."""
        return self.x, self.y - LABEL_ASCENT, self.x + self.width, self.y + LABEL_DESCENT

    def leader_end(self) -> tuple[float, float]:
        """The point of the label's box nearest to its point (where the leader line ends)."""
        x0, y0, x1, y1 = self.box()
        px, py = self.point
        return min(max(px, x0), x1), min(max(py, y0), y1)


Rect = tuple[float, float, float, float]


def _overlaps(a: Rect, b: Rect) -> bool:
    g = LABEL_GAP
    return a[0] < b[2] + g and b[0] < a[2] + g and a[1] < b[3] + g and b[1] < a[3] + g


def _candidates(px: float, py: float, w: float, box: Box) -> list[tuple[float, float, bool]]:
    """Text starts ``(x, baseline, leader)`` for a name ``w`` wide: beside the point first
    (right, left; above, below), then every grid place in the panel, nearest first."""
    near = [
        (px + NEAR_DX, py - NEAR_DY),
        (px - NEAR_DX - w, py - NEAR_DY),
        (px + NEAR_DX, py + LABEL_ASCENT + NEAR_DY),
        (px - NEAR_DX - w, py + LABEL_ASCENT + NEAR_DY),
    ]
    grid = [
        (box.left + 2 + i * SEARCH_STEP, box.top + LABEL_ASCENT + 2 + j * SEARCH_STEP)
        for i in range(int((box.right - box.left - w - 4) // SEARCH_STEP) + 1)
        for j in range(
            int((box.bottom - box.top - LABEL_ASCENT - LABEL_DESCENT - 4) // SEARCH_STEP) + 1
        )
    ]
    grid.sort(key=lambda c: (c[0] + w / 2 - px) ** 2 + (c[1] - 4 - py) ** 2)
    return [(x, y, False) for x, y in near] + [(x, y, True) for x, y in grid]


def place_labels(p: XYPanel, box: Box) -> tuple[PointLabel, ...]:
    """The names of a ``"points"`` panel's first series, each placed greedily (points in
    order) at the first candidate place (:func:`_candidates`) inside the plot area that
    overlaps no point, no name placed before and not the panel's note; a name no place fits
    is left out (its point keeps its tooltip on the page)."""
    if not p.series or not p.point_names:
        return ()
    s, pw, ph = p.series[0], box.right - box.left, box.bottom - box.top
    pts = [
        (i, box.left + pw * p.x.fraction(x), box.bottom - ph * p.y.fraction(y))
        for i, (x, y) in enumerate(zip(s.xs, s.ys, strict=True))
        if y is not None and finite(y) and i < len(p.point_names) and p.point_names[i]
    ]
    taken: list[Rect] = [(x - DOT_R, y - DOT_R, x + DOT_R, y + DOT_R) for _, x, y in pts]
    if p.note:
        taken.append(
            (
                box.left + 6,
                box.top + 14 - LABEL_ASCENT,
                box.left + 6 + text_width(p.note),
                box.top + 17,
            )
        )
    out = []
    for i, px, py in pts:
        text = point_name(p.point_names[i])
        w = text_width(text)
        for x, y, leader in _candidates(px, py, w, box):
            rect = (x, y - LABEL_ASCENT, x + w, y + LABEL_DESCENT)
            inside = (
                rect[0] >= box.left
                and rect[2] <= box.right
                and rect[1] >= box.top
                and rect[3] <= box.bottom
            )
            if inside and not any(_overlaps(rect, t) for t in taken):
                taken.append(rect)
                out.append(PointLabel(text, p.point_names[i], x, y, w, (px, py), leader))
                break
    return tuple(out)


def _legend_svg(lay: Layout) -> list[str]:
    parts = []
    for place in lay.legend:
        entry, tx, ly = place.entry, place.x, place.y
        lx = tx - 20
        c = entry.colour
        if entry.shape == "dot":
            parts.append(f'<circle cx="{lx + 8:.1f}" cy="{ly - 4:.1f}" r="3.5" fill="{c}"/>')
        elif entry.shape == "band":
            parts.append(
                f'<rect x="{lx:.1f}" y="{ly - 9:.1f}" width="16" height="8" fill="{c}" fill-opacity="0.35"/>'
            )
        else:
            dash = ' stroke-dasharray="4 3"' if entry.shape == "dash" else ""
            parts.append(
                f'<line x1="{lx:.1f}" y1="{ly - 4:.1f}" x2="{lx + 16:.1f}" y2="{ly - 4:.1f}" stroke="{c}" stroke-width="2.5"{dash}/>'
            )
        parts.append(
            f'<text x="{tx:.1f}" y="{ly:.1f}">{_tspans(place.lines, tx, LEGEND_LINE)}</text>'
        )
    return parts
