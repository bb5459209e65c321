"""Bar charts (mean over seeds, error bars = the 95% CI) as inline SVG markup.

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

ENGINES = ("auto", "matplotlib", "svg")


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def bar_chart_svg(
    labels: Sequence[str],
    means: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    *,
    title: str = "",
    ylabel: str = "",
    reference: float | None = None,
    engine: str = "auto",
) -> str:
    """An ``<svg>`` bar chart: one bar per label, error bars from ``lows`` to ``highs``.

    ``reference`` draws a dashed line (the base row's mean). ``engine`` is ``"auto"``
    (matplotlib if installed), ``"matplotlib"`` or ``"svg"`` (hand-written).

    >>> svg = bar_chart_svg(["base", "(A)"], [1.0, 2.0], [0.5, 1.5], [1.5, 2.5], engine="svg")
    >>> svg.startswith("<svg") and svg.count("<rect") >= 2
    True
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown plot engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if engine in ("auto", "matplotlib"):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            if engine == "matplotlib":
                from evalab.errors import MissingExtraError

                raise MissingExtraError("matplotlib plots", "report", "matplotlib") from None
        else:
            return _matplotlib_svg(labels, means, lows, highs, title, ylabel, reference)
    return _plain_svg(labels, means, lows, highs, title, ylabel, reference)


def _mpl_text(text: str) -> str:
    # matplotlib reads $...$ as mathtext; a label is plain text
    return text.replace("$", r"\$")


def _matplotlib_svg(labels, means, lows, highs, title, ylabel, reference) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    n = len(labels)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "evalab", "font.size": 9}):
        fig = Figure(figsize=(max(4.0, 0.9 * n + 1.5), 3.2), layout="constrained")
        ax = fig.subplots()
        xs = list(range(n))
        heights = [m if _finite(m) else 0.0 for m in means]
        err_lo = [m - lo if _finite(lo) and _finite(m) else 0.0 for m, lo in zip(means, lows, strict=True)]
        err_hi = [hi - m if _finite(hi) and _finite(m) else 0.0 for m, hi in zip(means, highs, strict=True)]
        colors = ["#4c72b0" if i else "#55a868" for i in range(n)]
        ax.bar(xs, heights, yerr=[err_lo, err_hi], capsize=3, color=colors, edgecolor="#333333", linewidth=0.5)
        finite = [v for v in [*means, *(x for x in lows if _finite(x)), *(x for x in highs if _finite(x))] if _finite(v)]
        if finite:
            lo, hi = min(finite), max(finite)
            pad = (hi - lo) * 0.15 or abs(hi) * 0.05 or 1.0
            ax.set_ylim(lo - pad, hi + pad)
        if reference is not None and _finite(reference):
            ax.axhline(reference, color="#55a868", linestyle="--", linewidth=0.8)
        ax.set_xticks(xs, [_mpl_text(lab) for lab in labels], rotation=30 if n > 4 else 0, ha="right" if n > 4 else "center")
        ax.set_ylabel(_mpl_text(ylabel))
        ax.set_title(_mpl_text(title))
        ax.spines[["top", "right"]].set_visible(False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    start = text.find("<svg")
    return re.sub(r"\s+$", "", text[start:])


def _plain_svg(labels, means, lows, highs, title, ylabel, reference) -> str:
    n = len(labels)
    width, height = max(360, 70 * n + 90), 280
    left, right, top, bottom = 60, 15, 30, 70
    pw, ph = width - left - right, height - top - bottom
    finite = [v for v in [*means, *lows, *highs, reference] if _finite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    lo = min(lo, 0.0) if lo >= 0 and (hi - lo) > 0.5 * hi else lo - 0.1 * ((hi - lo) or 1.0)
    hi = hi + 0.1 * ((hi - lo) or 1.0)

    def y(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    e = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" font-family="sans-serif" font-size="11">',
        f'<title>{e(title)}</title>',
        f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" font-weight="bold">{e(title)}</text>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
    ]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        parts.append(f'<text x="{left - 5}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#ddd"/>')
    parts.append(f'<text x="14" y="{top + ph / 2:.1f}" transform="rotate(-90 14 {top + ph / 2:.1f})" text-anchor="middle">{e(ylabel)}</text>')
    slot = pw / max(n, 1)
    for i, (lab, m, l_, h_) in enumerate(zip(labels, means, lows, highs, strict=True)):
        cx = left + slot * (i + 0.5)
        bw = slot * 0.6
        if _finite(m):
            y0 = y(max(lo, min(0.0, hi))) if lo <= 0 <= hi else y(lo)
            ym = y(m)
            color = "#55a868" if i == 0 else "#4c72b0"
            parts.append(f'<rect x="{cx - bw / 2:.1f}" y="{min(ym, y0):.1f}" width="{bw:.1f}" height="{abs(y0 - ym):.1f}" fill="{color}" stroke="#333" stroke-width="0.5"><title>{e(lab)}: {m:.4g}</title></rect>')
        if _finite(l_) and _finite(h_):
            parts.append(f'<line x1="{cx:.1f}" y1="{y(l_):.1f}" x2="{cx:.1f}" y2="{y(h_):.1f}" stroke="#000"/>')
            for v in (l_, h_):
                parts.append(f'<line x1="{cx - 4:.1f}" y1="{y(v):.1f}" x2="{cx + 4:.1f}" y2="{y(v):.1f}" stroke="#000"/>')
        parts.append(f'<text x="{cx:.1f}" y="{top + ph + 14}" text-anchor="end" transform="rotate(-30 {cx:.1f} {top + ph + 14})">{e(lab)}</text>')
    if _finite(reference):
        parts.append(f'<line x1="{left}" y1="{y(reference):.1f}" x2="{left + pw}" y2="{y(reference):.1f}" stroke="#55a868" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    return "\n".join(parts)
