"""Learning curves in the report: the note that says how each run's values were picked from
its curves, and the HTML section with one curve plot per logged metric."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from evalab.report.figures import Figure, Series, figure_svg, xy_panel

if TYPE_CHECKING:
    from evalab.ablation.analysis.curve_bands import RowCurves, StudyCurves

#: points drawn per curve at most (a longer curve is drawn in equal bins of steps)
POINTS = 400


def selection_note(sc: StudyCurves) -> str:
    """What the runs' values are, in words (empty when no run logged a curve)."""
    from evalab.ablation.contract.curves import Select

    if not sc.rows:
        return ""
    if not sc.settings.select:
        values = (
            "each run's values are the ones it returned; a metric it only logged takes its last logged value "
            "(no [curves] select rule)"
        )
    else:
        rule = Select.parse(sc.settings.select)
        values = (
            'each logged metric\'s value is its last logged value (select = "last")'
            if rule.kind == "last"
            else f"each logged metric's value is the one at the step of the {'lowest' if rule.kind == 'min' else 'highest'} "
            f'{rule.metric} of the run (select = "{sc.settings.select}"); the steps are stored with the runs'
        )
    note = f"Curves: {len(sc.rows)} rows logged {', '.join(sc.metrics)}; {values}."
    if sc.settings.stop_when:
        stopped = [s for r in sc.rows for s in r.stopped_at if s is not None]
        runs = sum(len(r.stopped_at) for r in sc.rows)
        note += (
            f" Early stopping: {sc.settings.stop_when}; it held in {len(stopped)} of {runs} runs"
            + (f" (at steps {min(stopped)} to {max(stopped)})" if stopped else "")
            + "."
        )
    return note


def curves_section(sc: StudyCurves) -> str:
    """The HTML section: per logged metric, every row's mean over seeds and the range of its
    seeds (already escaped)."""

    if not sc.rows:
        return ""
    e = html.escape
    parts = [
        "<h2>Learning curves</h2>",
        f"<p>Per logged metric, each row's mean over its seeds at every logged step (line) and the range from "
        f"its lowest to its highest seed (band). Curves of more than {POINTS} steps are drawn in {POINTS} equal "
        f"bins of steps (each bin's mean and its widest range). {e(selection_note(sc))}</p>",
        '<div class="plots">',
    ]
    parts += [f"<figure>{figure_svg(f)}</figure>" for f in curve_figures(sc)]
    parts.append("</div>")
    return "".join(parts)


def curve_figures(sc: StudyCurves) -> list[Figure]:
    """Per logged metric, a figure of every row's mean over seeds at each step (a line) over
    the range of its seeds (a band); the y axis spans the bands (curves are compared by shape,
    so it need not reach zero)."""
    from evalab.ablation.analysis.curve_bands import thinned

    out = []
    for metric in sc.metrics:
        series = []
        for row in sc.rows:
            b = row.bands.get(metric)
            if b is None:
                continue
            t = thinned(b, POINTS)
            series.append(
                Series(
                    _label(row),
                    tuple(float(v) for v in t.steps),
                    tuple(float(v) for v in t.mean),
                    tuple(float(v) for v in t.low),
                    tuple(float(v) for v in t.high),
                )
            )
        panel = xy_panel(
            f"{metric} per step",
            series,
            xlabel="step",
            ylabel=metric,
            interval_label="range over seeds",
        )
        out.append(Figure(f"curves-{metric}", f"{metric} per step", (panel,)))
    return out


def _label(row: RowCurves) -> str:
    """A row's legend entry: its labels, its seeds, and the steps its values were taken at
    and it stopped at, where a rule chose them."""

    def steps(found: tuple[int | None, ...]) -> str:
        known = sorted(s for s in found if s is not None)
        if not known:
            return "none"
        return str(known[0]) if known[0] == known[-1] else f"{known[0]}-{known[-1]}"

    parts = [f"{row.seeds} seeds"]
    if row.selected_steps:
        parts.append(f"values at step {steps(row.selected_steps)}")
    if row.stopped_at:
        parts.append(f"stopped at {steps(row.stopped_at)}")
    return f"{' = '.join(row.labels)} ({'; '.join(parts)})"
