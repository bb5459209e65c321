"""``evalab metrics``: every metric with its settings, defaults and choices."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evalab.cli.app import command
from evalab.cli.options import Format, LatexOptions
from evalab.cli.output import check_format, emit, emit_table, to_json
from evalab.report.table import Table as ReportTable


@dataclass(frozen=True)
class MetricsRequest:
    """``evalab metrics``' options, as the command line gives them."""

    format: Format = "table"
    latex: LatexOptions = field(default_factory=LatexOptions)


@command(MetricsRequest, "metrics")
def metrics_command(req: MetricsRequest) -> None:
    """List the metrics with their settings and defaults."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from evalab.metrics.registry import available_metrics, metric_class

    format = req.format
    check_format(format)
    latex = req.latex.layout(format)
    entries: list[dict[str, Any]] = []
    for name in available_metrics():
        cls = metric_class(name)
        entries.append(
            {
                "metric": name,
                "scale": cls.scale,
                "range": _score_range(cls.bounds or (0.0, cls.scale)),
                "higher_is_better": cls.higher_is_better,
                "summary": (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
                "settings": cls.settings_class.describe(),
            }
        )
    if format == "json":
        emit(to_json(entries), None)
        return
    header = ["metric", "range", "settings (default) [choices]"]
    described = [(e, _setting_lines(e["settings"])) for e in entries]
    if format != "table":
        body = [[e["metric"], e["range"], "; ".join(lines) or "(none)"] for e, lines in described]
        emit_table(format, ReportTable(header, body), None, latex=latex)
        return
    table = Table(show_header=True, header_style="bold", show_lines=True)
    for col in header:
        table.add_column(col)
    for e, lines in described:
        # help texts contain brackets ("[a-z0-9]"): print them literally, not as rich markup
        table.add_row(
            escape(f"{e['metric']}\n{e['summary']}"),
            e["range"] + ("" if e["higher_is_better"] else "\nlower is better"),
            escape("\n".join(lines) or "(none)"),
        )
    Console(soft_wrap=False).print(table)


def _score_range(bounds: tuple[float, float]) -> str:
    """Where a score can lie, as an interval: ``[0, 100]``, ``[0, 25]``, ``[0, inf)`` (an
    error rate past its scale), ``(-inf, inf)`` (COMET's regression)."""
    low, high = bounds
    left = "(" if math.isinf(low) else "["
    right = ")" if math.isinf(high) else "]"
    return f"{left}{low:g}, {high:g}{right}"


def _setting_lines(settings: list[dict[str, Any]]) -> list[str]:
    """``name = default [choices]: help`` for each setting of a metric."""
    lines = []
    for s in settings:
        choices = f" [{', '.join(map(str, s['choices']))}]" if s["choices"] else ""
        lines.append(f"{s['name']} = {s['default']!r}{choices}: {s['help']}")
    return lines
