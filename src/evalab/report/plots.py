"""The layout of the reports' plots: axis ranges, round ticks and a forest plot's panels.

Honest by construction: a point and its interval (no bars whose length depends on where
the axis starts); a level axis fits the data, zero and the reference line drawn only when
near (an axis from 0 would squeeze accuracies of 92-94 into 2% of the plot); a forest
plot draws every row once on one axis through zero, linear where every interval is readable
on it, signed-log (linear near zero, logarithmic far from it) where effects of different
scales would squeeze the small ones (:func:`forest_scale`). The figures themselves
are typed values built from these decisions (:mod:`evalab.report.figures`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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


#: the narrowest plot area (px) the renderers draw a forest plot at (a single-column figure);
#: a forest plot's axis is chosen so that every row's widest interval spans MIN_INTERVAL_PX
#: of it where it can
PLOT_AREA_PX = 180
MIN_INTERVAL_PX = 24


def position(v: float, linear_width: float | None) -> float:
    """Where ``v`` lies on an axis: ``v`` itself on a linear one; on a signed-log one
    (``linear_width`` c) c·asinh(v/c): linear within ±c, logarithmic beyond, sign and zero
    kept (matplotlib's ``asinh`` scale).

    >>> position(3.0, None), round(position(0.01, 1.0), 4), round(position(-1000.0, 1.0), 2)
    (3.0, 0.01, -7.6)
    """
    return v if linear_width is None else linear_width * math.asinh(v / linear_width)


def value_at(pos: float, linear_width: float | None) -> float:
    """The value at axis position ``pos`` (the inverse of :func:`position`)."""
    return pos if linear_width is None else linear_width * math.sinh(pos / linear_width)


def scaled_range(
    points: Sequence[float | None],
    intervals: Sequence[Intervals],
    linear_width: float | None,
) -> tuple[float, float]:
    """The x range of a forest plot: every point, interval end and zero, padded 5% of the
    axis' length (on a signed-log axis, of its drawn length)."""
    values = [v for v in points if v is not None and finite(v)]
    values += [v for iv in intervals for v in (*iv.lows, *iv.highs) if v is not None and finite(v)]
    pos = [position(v, linear_width) for v in (*values, 0.0)]
    lo, hi = min(pos), max(pos)
    pad = (hi - lo) * 0.05 or 1.0
    return value_at(lo - pad, linear_width), value_at(hi + pad, linear_width)


def _row_width(i: int, intervals: Sequence[Intervals]) -> float:
    """The row's widest interval (0 when it has none)."""
    widths = [
        iv.highs[i] - iv.lows[i]  # type: ignore[operator]  # finite() checked both ends
        for iv in intervals
        if finite(iv.lows[i]) and finite(iv.highs[i])
    ]
    return max(widths, default=0.0)


#: a row whose Δ lies this many times its widest interval's width from zero reads as
#: "clearly away from zero" even drawn as a dot: the axis is not chosen to widen it
FAR = 4.0


def near_rows(points: Sequence[float | None], intervals: Sequence[Intervals]) -> list[int]:
    """The rows whose interval a forest plot must draw wide enough to read: those with an
    interval of positive width whose Δ lies within FAR widths of zero (where the interval's
    place against zero and its neighbours is the finding).

    >>> near_rows([-95.0, 0.5, 3.0], [Intervals("ci", [-97.0, -0.5, 2.5], [-93.0, 1.5, 3.5])])
    [1, 2]
    """
    out = []
    for i, p in enumerate(points):
        w = _row_width(i, intervals)
        if w > 0 and (p is None or not finite(p) or abs(p) < FAR * w):
            out.append(i)
    return out


def narrowest_share(
    points: Sequence[float | None],
    intervals: Sequence[Intervals],
    linear_width: float | None,
    rows: Sequence[int] | None = None,
) -> float:
    """The smallest share of the axis' drawn length that the widest interval of a row of
    ``rows`` (every row when None) spans (1.0 when none has an interval of positive width)."""
    lo, hi = scaled_range(points, intervals, linear_width)
    length = position(hi, linear_width) - position(lo, linear_width)
    shares = []
    for i in range(len(points)) if rows is None else rows:
        spans = [
            position(iv.highs[i], linear_width) - position(iv.lows[i], linear_width)  # type: ignore[arg-type]
            for iv in intervals
            if finite(iv.lows[i]) and finite(iv.highs[i])
        ]
        if max(spans, default=0.0) > 0:
            shares.append(max(spans) / length)
    return min(shares, default=1.0)


def forest_scale(points: Sequence[float | None], intervals: Sequence[Intervals]) -> float | None:
    """The axis of a forest plot, every row on it once: linear (None) when the interval of
    every row near zero (:func:`near_rows`) spans MIN_INTERVAL_PX of a PLOT_AREA_PX axis
    through zero; else signed-log (:func:`position`) with the round linear width (1, 2 or 5
    times a power of ten) that draws the narrowest of those intervals widest, when that at
    least doubles it.

    >>> forest_scale([1.0, 2.0], [Intervals("ci", [0.0, 1.0], [2.0, 3.0])]) is None
    True
    >>> forest_scale([-9.0, 0.3, -0.2], [Intervals("ci", [-12.0, 0.1, -0.5], [-6.0, 0.5, 0.1])])
    0.5
    """
    near = near_rows(points, intervals)
    linear = narrowest_share(points, intervals, None, near)
    widths = [_row_width(i, intervals) for i in near]
    if linear * PLOT_AREA_PX >= MIN_INTERVAL_PX or not widths:
        return None
    low = math.floor(math.log10(min(widths) / 8))
    high = math.ceil(math.log10(max(widths) * 2))
    candidates = [m * 10.0**k for k in range(low, high + 1) for m in (1, 2, 5)]
    best = max(candidates, key=lambda c: (narrowest_share(points, intervals, c, near), c))
    return (
        float(f"{best:.6g}")
        if narrowest_share(points, intervals, best, near) >= 2 * linear
        else None
    )


def scaled_ticks(lo: float, hi: float, linear_width: float | None, count: int = 9) -> list[float]:
    """Round ticks of an axis over [lo, hi]: :func:`nice_ticks` on a linear one; on a
    signed-log one zero, then ±1, ±5, ±2 times powers of ten, each kept where it lies at
    least 1/(count+1) of the axis from every tick kept before.

    >>> scaled_ticks(-120.0, 2.0, 0.5)
    [-100.0, -10.0, -1.0, 0.0, 1.0]
    """
    if linear_width is None:
        return nice_ticks(lo, hi)
    p0, p1 = position(lo, linear_width), position(hi, linear_width)
    gap = (p1 - p0) / (count + 1)
    top = math.ceil(math.log10(max(abs(lo), abs(hi))))
    bottom = math.floor(math.log10(linear_width)) - 1
    candidates = [0.0] + [
        s * m * 10.0**k for m in (1, 5, 2) for k in range(top, bottom - 1, -1) for s in (1.0, -1.0)
    ]
    kept: list[float] = []
    for v in candidates:
        pos = position(v, linear_width)
        if lo <= v <= hi and all(abs(pos - position(t, linear_width)) >= gap for t in kept):
            kept.append(float(f"{v:.6g}"))
    return sorted(kept)


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
