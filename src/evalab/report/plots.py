"""Dot-and-interval plots (forest plots) as inline SVG markup.

One picture serves both plots of the HTML report: the forest plot of Δ to the base, with
each kind of interval (over seeds; over test examples and over both, where the runs have
per-example data) drawn and labelled, and the level plot of each row's mean with its
intervals. Both are honest by construction: a point and its interval (no bars whose length
depends on where the axis starts), and the axis always reaches zero and the reference
line (0 for Δ, the base's mean for levels), so a small difference is never blown up by a
truncated axis.

matplotlib draws them when the ``report`` extra is installed (imported here, lazily, and
used through ``Figure`` so no global pyplot state is touched); without it a small
hand-written SVG keeps the HTML report's plots. Either way the output is an ``<svg>``
element with every label escaped, ready to inline in a page.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

ENGINES = ("auto", "matplotlib", "svg")
#: one colour per kind of interval (seeds, test set, both), distinguishable in grey too
COLOURS = ("#1f5fa8", "#d07a12", "#4d9a4d", "#8c4f9f")
#: one colour per row of a curve plot (the Okabe-Ito palette, distinguishable with colour blindness)
SERIES_COLOURS = (
    "#0072b2",
    "#e69f00",
    "#009e73",
    "#cc79a7",
    "#56b4e9",
    "#d55e00",
    "#000000",
    "#f0e442",
)


@dataclass(frozen=True)
class Intervals:
    """One kind of interval over the plot's rows (``None`` where a row has none)."""

    label: str
    lows: Sequence[float | None]
    highs: Sequence[float | None]


def finite(x: float | None) -> bool:
    """A number to draw (not None, NaN or infinite)."""
    return x is not None and math.isfinite(x)


def _near(value: float, lo: float, hi: float) -> bool:
    """Whether drawing ``value`` on an axis over [lo, hi] at most doubles its span."""
    return lo <= value <= hi or min(abs(value - lo), abs(value - hi)) <= (hi - lo)


def axis_range(
    points: Sequence[float | None],
    intervals: Sequence[Intervals],
    reference: float | None,
    *,
    zero: str = "near",
) -> tuple[float, float]:
    """The x range: every point and interval end, padded 5%; zero and the reference are
    added when they are near the data (when drawing them at most doubles the span), zero
    also always when ``zero="always"``: an axis from 0 would squeeze accuracies of 92-94
    into 2% of the plot.

    >>> [round(v, 6) for v in axis_range([95.0, 96.0], [Intervals("ci", [94.0, 95.0], [96.0, 97.0])], 96.0)]
    [93.85, 97.15]
    >>> [round(v, 6) for v in axis_range([2.0], [Intervals("ci", [1.0], [3.0])], None)]
    [-0.15, 3.15]
    """
    values = [v for v in points if v is not None and finite(v)]
    values += [v for iv in intervals for v in (*iv.lows, *iv.highs) if v is not None and finite(v)]
    lo, hi = (min(values), max(values)) if values else (0.0, 0.0)
    extra = [0.0] if zero == "always" or not values or _near(0.0, lo, hi) else []
    if reference is not None and finite(reference) and _near(reference, lo, hi):
        extra.append(reference)
    lo, hi = min(lo, *extra, hi), max(hi, *extra, lo)
    pad = (hi - lo) * 0.05 or 1.0
    return lo - pad, hi + pad


#: the narrowest plot area (px) the two engines draw at; a forest plot's panels are chosen so
#: that every row's widest interval spans at least MIN_INTERVAL_PX of it
PLOT_AREA_PX = 320
MIN_INTERVAL_PX = 40


def _row_values(
    i: int, points: Sequence[float | None], intervals: Sequence[Intervals]
) -> list[float]:
    ends = [v for iv in intervals for v in (iv.lows[i], iv.highs[i])]
    return [v for v in (points[i], *ends) if v is not None and finite(v)]


def _row_width(i: int, intervals: Sequence[Intervals]) -> float:
    """The row's widest interval (0 when it has none)."""
    widths = [
        iv.highs[i] - iv.lows[i]  # type: ignore[operator]  # finite() checked both ends
        for iv in intervals
        if finite(iv.lows[i]) and finite(iv.highs[i])
    ]
    return max(widths, default=0.0)


def interval_px(
    i: int,
    rows: Sequence[int],
    points: Sequence[float | None],
    intervals: Sequence[Intervals],
    zero: str,
) -> float:
    """Pixels of row ``i``'s widest interval on a panel of ``rows`` (PLOT_AREA_PX wide)."""
    sub = [
        Intervals(iv.label, [iv.lows[j] for j in rows], [iv.highs[j] for j in rows])
        for iv in intervals
    ]
    lo, hi = axis_range([points[j] for j in rows], sub, None, zero=zero)
    return PLOT_AREA_PX * _row_width(i, intervals) / (hi - lo)


def _fits(
    rows: list[int], points: Sequence[float | None], intervals: Sequence[Intervals], zero: str
) -> bool:
    return all(
        interval_px(i, rows, points, intervals, zero) >= MIN_INTERVAL_PX
        for i in rows
        if _row_width(i, intervals) > 0
    )


def panel_fits_zero(
    rows: list[int], points: Sequence[float | None], intervals: Sequence[Intervals]
) -> bool:
    """Whether a panel of ``rows`` can keep zero on its axis and every interval readable."""
    return _fits(rows, points, intervals, "always")


def forest_panels(
    points: Sequence[float | None], intervals: Sequence[Intervals]
) -> list[list[int]]:
    """The rows of each panel of a forest plot, largest effects first: rows are taken from
    the smallest effect up and a new panel starts where adding a row would squeeze some row's
    interval under MIN_INTERVAL_PX; a row too narrow for any axis through zero gets a panel
    of its own whose axis omits a far zero. One panel when the effects are of one scale.

    >>> forest_panels([-90.0, 0.3, -0.2], [Intervals("ci", [-100.0, 0.1, -0.5], [-80.0, 0.5, 0.1])])
    [[0], [1, 2]]
    >>> forest_panels([1.0, 2.0], [Intervals("ci", [0.0, 1.0], [2.0, 3.0])])
    [[0, 1]]
    """
    order = sorted(
        (i for i in range(len(points)) if _row_values(i, points, intervals)),
        key=lambda i: max(abs(v) for v in _row_values(i, points, intervals)),
    )
    panels: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if _fits([*current, i], points, intervals, "always"):
            current.append(i)
            continue
        if current:
            panels.append(current)
        current = [i]
    if current:
        panels.append(current)
    return [sorted(p) for p in panels[::-1]]


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values (steps of 1, 2 or 5 times a power of ten) in [lo, hi].

    >>> nice_ticks(-4.85, 101.85)
    [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    """
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 5, 10)), key=lambda st: abs(st - raw))
    return [
        float(round(k * step, 12)) for k in range(math.ceil(lo / step), math.floor(hi / step) + 1)
    ]


def interval_plot_svg(
    labels: Sequence[str],
    points: Sequence[float | None],
    intervals: Sequence[Intervals],
    *,
    title: str = "",
    xlabel: str = "",
    reference: float | None = None,
    reference_label: str = "",
    engine: str = "auto",
    zero: str = "near",
) -> str:
    """An ``<svg>`` with one line per label: the point and each kind of interval (offset
    and coloured per kind, named in a legend), a vertical reference line, and an x axis
    that includes zero.

    ``engine`` is ``"auto"`` (matplotlib if installed), ``"matplotlib"`` or ``"svg"``.

    >>> svg = interval_plot_svg(["(A)", "(B)"], [1.0, -2.0], [Intervals("seeds", [0.5, -3.0], [1.5, -1.0])],
    ...                         reference=0.0, engine="svg")
    >>> svg.startswith("<svg") and svg.count("<circle") == 2 and "seeds" in svg
    True
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown plot engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if len(points) != len(labels) or any(
        len(iv.lows) != len(labels) or len(iv.highs) != len(labels) for iv in intervals
    ):
        raise ValueError("labels, points and every interval need one value per row")
    args = (labels, points, intervals, title, xlabel, reference, reference_label, zero)
    if engine in ("auto", "matplotlib"):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            if engine == "matplotlib":
                from evalab.errors import MissingExtraError

                raise MissingExtraError("matplotlib plots", "report", "matplotlib") from None
        else:
            return _matplotlib_svg(*args)
    return _plain_svg(*args)


def _offset(k: int, count: int, step: float) -> float:
    return (k - (count - 1) / 2) * step


def _mpl_text(text: str) -> str:
    # matplotlib reads $...$ as mathtext; a label is plain text
    return text.replace("$", r"\$")


def _matplotlib_svg(
    labels, points, intervals, title, xlabel, reference, reference_label, zero
) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    n, kinds = len(labels), len(intervals)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "evalab", "font.size": 9}):
        fig = Figure(figsize=(6.2, 1.5 + n * (0.2 + 0.12 * kinds)), layout="constrained")
        ax = fig.subplots()
        ys = [n - 1 - i for i in range(n)]
        for k, iv in enumerate(intervals):
            rows = [i for i in range(n) if finite(iv.lows[i]) and finite(iv.highs[i])]
            if rows:
                ax.hlines(
                    [ys[i] + _offset(k, kinds, 0.22) for i in rows],
                    [iv.lows[i] for i in rows],
                    [iv.highs[i] for i in rows],
                    colors=COLOURS[k % len(COLOURS)],
                    linewidth=2.2,
                    label=_mpl_text(iv.label),
                )
        shown = [i for i in range(n) if finite(points[i])]
        ax.plot(
            [points[i] for i in shown],
            [ys[i] for i in shown],
            "o",
            color="black",
            markersize=4,
            label="estimate",
        )
        lo, hi = axis_range(points, intervals, reference, zero=zero)
        if finite(reference) and lo <= reference <= hi:
            ax.axvline(
                reference,
                color="#555555",
                linestyle="--",
                linewidth=0.8,
                label=_mpl_text(reference_label) or None,
            )
        if reference != 0 and lo <= 0.0 <= hi:
            ax.axvline(0.0, color="#999999", linewidth=0.6)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_yticks(ys, [_mpl_text(lab) for lab in labels])
        ax.set_xlabel(_mpl_text(xlabel))
        ax.set_title(_mpl_text(title))
        ax.spines[["top", "right"]].set_visible(False)
        # a figure legend placed "outside" is laid out with the figure: one anchored to the
        # axes (narrow beside long row labels) was clipped at the figure's edge
        fig.legend(fontsize=7, loc="outside lower center", ncol=min(3, kinds + 2), frameon=False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return re.sub(r"\s+$", "", text[text.find("<svg") :])


def _plain_svg(labels, points, intervals, title, xlabel, reference, reference_label, zero) -> str:
    n, kinds = len(labels), len(intervals)
    row_h = 16 + 7 * kinds
    left = min(260, 12 + 6.3 * max((len(lab) for lab in labels), default=4))
    width, top = 620, 32
    ph = row_h * max(n, 1)
    legend_y = top + ph + (38 if xlabel else 26)
    height = legend_y + 16 * ((kinds + 2 + 2) // 3) + 4
    pw = width - left - 20
    lo, hi = axis_range(points, intervals, reference, zero=zero)

    def x(v: float) -> float:
        return left + pw * (v - lo) / (hi - lo)

    e = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" viewBox="0 0 {width} {height:.0f}" '
        f'role="img" font-family="sans-serif" font-size="11">',
        f"<title>{e(title)}</title>",
        f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" font-weight="bold">{e(title)}</text>',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
    ]
    for v in nice_ticks(lo, hi):
        parts.append(
            f'<text x="{x(v):.1f}" y="{top + ph + 14}" text-anchor="middle">{v:.3g}</text>'
        )
        parts.append(
            f'<line x1="{x(v):.1f}" y1="{top}" x2="{x(v):.1f}" y2="{top + ph}" stroke="#eee"/>'
        )
    if xlabel:
        parts.append(
            f'<text x="{left + pw / 2:.1f}" y="{top + ph + 28}" text-anchor="middle">{e(xlabel)}</text>'
        )
    if lo <= 0.0 <= hi:
        parts.append(
            f'<line x1="{x(0.0):.1f}" y1="{top}" x2="{x(0.0):.1f}" y2="{top + ph}" stroke="#999"/>'
        )
    if finite(reference) and lo <= reference <= hi:
        parts.append(
            f'<line x1="{x(reference):.1f}" y1="{top}" x2="{x(reference):.1f}" y2="{top + ph}" '
            'stroke="#555" stroke-dasharray="4 3"/>'
        )
    for i, lab in enumerate(labels):
        cy = top + row_h * (i + 0.5)
        parts.append(f'<text x="{left - 6:.1f}" y="{cy + 4:.1f}" text-anchor="end">{e(lab)}</text>')
        for k, iv in enumerate(intervals):
            if finite(iv.lows[i]) and finite(iv.highs[i]):
                y = cy + _offset(k, kinds, 7)
                parts.append(
                    f'<line x1="{x(iv.lows[i]):.1f}" y1="{y:.1f}" x2="{x(iv.highs[i]):.1f}" y2="{y:.1f}" '
                    f'stroke="{COLOURS[k % len(COLOURS)]}" stroke-width="2.5"><title>{e(lab)}: {e(iv.label)} '
                    f"[{iv.lows[i]:.4g}, {iv.highs[i]:.4g}]</title></line>"
                )
        if finite(points[i]):
            parts.append(
                f'<circle cx="{x(points[i]):.1f}" cy="{cy:.1f}" r="3.5" fill="#000"><title>{e(lab)}: '
                f"{points[i]:.4g}</title></circle>"
            )
    legend = [(COLOURS[k % len(COLOURS)], iv.label) for k, iv in enumerate(intervals)] + [
        ("#000", "estimate")
    ]
    shown_ref = finite(reference) and lo <= reference <= hi
    legend += [("#555", reference_label)] if shown_ref and reference_label else []
    for j, (colour, text) in enumerate(legend):
        lx, ly = 10 + (j % 3) * (width - 20) / 3, legend_y + 16 * (j // 3)
        parts.append(
            f'<line x1="{lx:.1f}" y1="{ly - 4:.1f}" x2="{lx + 16:.1f}" y2="{ly - 4:.1f}" stroke="{colour}" stroke-width="2.5"/>'
        )
        parts.append(f'<text x="{lx + 20:.1f}" y="{ly:.1f}">{e(text)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


@dataclass(frozen=True)
class Series:
    """One line of a curve plot: its mean at each step and a band (``low`` to ``high``)."""

    label: str
    steps: Sequence[float]
    mean: Sequence[float]
    low: Sequence[float]
    high: Sequence[float]


def curve_plot_svg(
    series: Sequence[Series], *, title: str = "", xlabel: str = "step", ylabel: str = ""
) -> str:
    """An ``<svg>`` of learning curves: per series a line (its mean) over a translucent band,
    one colour each, named in a legend; the y axis spans the bands (curves are compared by
    shape, so it need not reach zero), every label escaped.

    >>> svg = curve_plot_svg([Series("base", [0, 1, 2], [1.0, 0.5, 0.4], [0.9, 0.4, 0.3], [1.1, 0.6, 0.5])])
    >>> svg.startswith("<svg") and svg.count("<polyline") == 1 and svg.count("<polygon") == 1
    True
    """
    e = html.escape
    width, left, top, right = 620, 58, 30, 16
    ph = 240
    legend_y = top + ph + 48
    height = (
        legend_y + 16 * len(series) + 6
    )  # one legend line per series: a row's entry may be long
    pw = width - left - right
    xs = [float(v) for s in series for v in s.steps]
    ys = [float(v) for s in series for v in (*s.low, *s.high) if finite(float(v))]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = (min(ys), max(ys)) if ys else (0.0, 1.0)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    pad = (y1 - y0) * 0.05
    y0, y1 = y0 - pad, y1 + pad

    def px(v: float) -> float:
        return left + pw * (v - x0) / (x1 - x0)

    def py(v: float) -> float:
        return top + ph * (1 - (v - y0) / (y1 - y0))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" viewBox="0 0 {width} {height:.0f}" '
        f'role="img" font-family="sans-serif" font-size="11">',
        f"<title>{e(title)}</title>",
        f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" font-weight="bold">{e(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>',
    ]
    for v in nice_ticks(x0, x1):
        parts.append(
            f'<text x="{px(v):.1f}" y="{top + ph + 14}" text-anchor="middle">{v:.6g}</text>'
        )
    for v in nice_ticks(y0, y1):
        parts.append(
            f'<line x1="{left}" y1="{py(v):.1f}" x2="{left + pw}" y2="{py(v):.1f}" stroke="#eee"/>'
        )
        parts.append(f'<text x="{left - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.4g}</text>')
    parts.append(
        f'<text x="{left + pw / 2:.1f}" y="{top + ph + 30}" text-anchor="middle">{e(xlabel)}</text>'
    )
    parts.append(
        f'<text transform="translate(12 {top + ph / 2:.1f}) rotate(-90)" text-anchor="middle">{e(ylabel)}</text>'
    )
    for k, s in enumerate(series):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        upper = " ".join(f"{px(x):.1f},{py(h):.1f}" for x, h in zip(s.steps, s.high, strict=True))
        lower = " ".join(
            f"{px(x):.1f},{py(lo):.1f}"
            for x, lo in zip(reversed(s.steps), reversed(s.low), strict=True)
        )
        parts.append(
            f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.18" stroke="none">'
            f"<title>{e(s.label)}: range over seeds</title></polygon>"
        )
        line = " ".join(f"{px(x):.1f},{py(m):.1f}" for x, m in zip(s.steps, s.mean, strict=True))
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.6">'
            f"<title>{e(s.label)}: mean over seeds</title></polyline>"
        )
    for k, s in enumerate(series):
        lx, ly = left, legend_y + 16 * k
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        parts.append(
            f'<rect x="{lx:.1f}" y="{ly - 9:.1f}" width="16" height="8" fill="{colour}" fill-opacity="0.35"/>'
        )
        parts.append(
            f'<line x1="{lx:.1f}" y1="{ly - 5:.1f}" x2="{lx + 16:.1f}" y2="{ly - 5:.1f}" stroke="{colour}" stroke-width="1.6"/>'
        )
        parts.append(f'<text x="{lx + 20:.1f}" y="{ly:.1f}">{e(s.label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
