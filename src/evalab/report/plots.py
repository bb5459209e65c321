"""The layout of the reports' plots: axis ranges, round ticks and a forest plot's panels.

Honest by construction: a point and its interval (no bars whose length depends on where
the axis starts); a level axis fits the data, zero and the reference line drawn only when
near (an axis from 0 would squeeze accuracies of 92-94 into 2% of the plot); a forest
plot keeps zero on every panel it can and splits rows of different scales over panels
(:func:`forest_panels`) so that every row's interval is readable. The figures themselves
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
