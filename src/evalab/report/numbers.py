"""The one number formatter of every table: decimals, signs and the "no value" symbol.

Every command's cells (``score``, ``compare``, ``meta-eval``, ``ablate report``, ``ppl``,
``power``) are written by these functions, so a number reads the same in every table and
format: a fixed number of decimals, a sign only where asked for (and never ``-0.0``: a value
that rounds to zero is written unsigned), and :data:`NO_VALUE` wherever there is none
(``None``, NaN, an infinity).

>>> number(-0.04, 1), number(0.04, 1, signed=True), number(float("nan"), 2)
('0.0', '0.0', '–')
>>> plus_minus(36.61, 0.94, 1), interval(35.6, 37.5, 1), p_value(0.0004), p_value(0.0123)
('36.6 ± 0.9', '[35.6, 37.5]', '<0.001', '0.012')
"""

from __future__ import annotations

import math

__all__ = [
    "NO_VALUE",
    "count",
    "interval",
    "number",
    "p_value",
    "plus_minus",
    "scale_decimals",
]

#: the one "no value" symbol of every table (an en dash: not a minus sign, LaTeX ``--``)
NO_VALUE = "–"


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def number(
    x: float | None, decimals: int, *, signed: bool = False, scientific_from: float = math.inf
) -> str:
    """``x`` with ``decimals`` decimals (``+`` before a positive value when ``signed``);
    :data:`NO_VALUE` for None, NaN and infinities. A value that rounds to zero is written
    unsigned (``0.0``, never ``-0.0`` or ``+0.0``). ``|x| >= scientific_from`` is written
    in scientific notation (a random model's word perplexity runs to 1e16)."""
    if x is None or not math.isfinite(x):
        return NO_VALUE
    if abs(x) >= scientific_from:
        return f"{x:+.{decimals}e}" if signed else f"{x:.{decimals}e}"
    text = f"{x:+.{decimals}f}" if signed else f"{x:.{decimals}f}"
    zero = f"{0:.{decimals}f}"
    return zero if text.lstrip("+-") == zero else text


def count(n: int | None) -> str:
    """An integer count, :data:`NO_VALUE` for None."""
    return NO_VALUE if n is None else str(n)


def p_value(p: float | None, decimals: int = 3) -> str:
    """A p-value with ``decimals`` decimals, ``<0.001`` (for 3) below the smallest it shows."""
    if p is None or not math.isfinite(p):
        return NO_VALUE
    floor = 10.0**-decimals
    return f"<{floor:.{decimals}f}" if p < floor else f"{p:.{decimals}f}"


def interval(low: float | None, high: float | None, decimals: int) -> str:
    """``[low, high]``; :data:`NO_VALUE` unless both bounds are finite."""
    if not (_finite(low) and _finite(high)):
        return NO_VALUE
    return f"[{number(low, decimals)}, {number(high, decimals)}]"


def plus_minus(value: float | None, half_width: float | None, decimals: int) -> str:
    """``value ± half_width`` (``value`` alone without a finite half-width)."""
    if not _finite(half_width):
        return number(value, decimals)
    if not _finite(value):
        return NO_VALUE
    return f"{number(value, decimals)} ± {number(half_width, decimals)}"


def scale_decimals(scale: float, width: int | None = None) -> int:
    """Decimals of a metric's score: ``width`` when given, else 1 on a 0-100 scale, 4 on 0-1."""
    return width if width is not None else (1 if scale == 100 else 4)
