"""``evalab metrics``: every metric with its settings, defaults and choices."""

from __future__ import annotations

from typing import Annotated

import typer

from evalab.cli import app
from evalab.cli.output import check_format, emit, to_json


@app.command("metrics")
def metrics_command(
    format: Annotated[str, typer.Option("-f", "--format", help="table or json")] = "table",
) -> None:
    """List the metrics with their settings and defaults."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from evalab.metrics.registry import available_metrics, metric_class

    check_format(format, ("table", "json"))
    entries = []
    for name in available_metrics():
        cls = metric_class(name)
        entries.append(
            {
                "metric": name,
                "scale": cls.scale,
                "higher_is_better": cls.higher_is_better,
                "summary": (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
                "settings": cls.settings_class.describe(),
            }
        )
    if format == "json":
        emit(to_json(entries), None)
        return
    table = Table(show_header=True, header_style="bold", show_lines=True)
    for col in ("metric", "scale", "settings (default) [choices]"):
        table.add_column(col)
    for e in entries:
        lines = []
        for s in e["settings"]:
            choices = f" [{', '.join(map(str, s['choices']))}]" if s["choices"] else ""
            lines.append(f"{s['name']} = {s['default']!r}{choices}: {s['help']}")
        # help texts contain brackets ("[a-z0-9]"): print them literally, not as rich markup
        table.add_row(escape(f"{e['metric']}\n{e['summary']}"), f"0-{e['scale']:g}", escape("\n".join(lines) or "(none)"))
    Console(soft_wrap=False).print(table)
