"""The figures of an ablation report, as typed values (:mod:`evalab.report.figures`): the
summary at the top, per metric a forest plot of Δ and a level plot, per metric of a grid an
interaction plot, and the learning curves. The HTML page draws them; ``ablate report
--figures DIR`` writes the same values as PDF, SVG and PNG (:func:`report_figures`)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from evalab.report.figures import (
    ESTIMATE,
    Figure,
    Group,
    IntervalPanel,
    Series,
    interval_panel,
    tick_text,
    xy_panel,
)
from evalab.report.numbers import number
from evalab.report.plots import Intervals, finite, forest_scale
from evalab.report.tables import decimals_for, row_name

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from evalab.ablation.analysis.analyze import MetricStats, RowAnalysis, StudyAnalysis
    from evalab.ablation.analysis.curve_bands import StudyCurves

__all__ = [
    "forest_figure",
    "forest_kinds",
    "interaction_figure",
    "level_figure",
    "plot_label",
    "report_figures",
    "summary_figure",
]

BETTER = Group("better than the base (CI excludes 0)", "#1a7f37")
WORSE = Group("worse than the base (CI excludes 0)", "#b42318")
UNCLEAR = Group("no clear difference (CI includes 0)", "#666666")
NEGLIGIBLE = Group("negligible (inside the study's min_effect)", "#8c8c8c")
NO_INTERVAL = Group("no interval", "#000000")


def plot_label(r: RowAnalysis) -> str:
    """A row's label in a plot: its labels, and its description on a line of its own (the
    renderers wrap both to the label column, never cut them); a grid cell's label says it all."""
    return row_name(r) + (f"\n{r.description}" if r.description and r.kind != "grid" else "")


def _pct(a: StudyAnalysis) -> int:
    return round(float(a.settings.get("confidence", 0.95)) * 100)


#: Δ's kinds of interval: what each is over and the fields that hold it (the first, over
#: seeds, always drawn; the others where any row has one)
_FOREST_KINDS: tuple[
    tuple[str, Callable[[MetricStats], tuple[float | None, float | None]]], ...
] = (
    ("seeds", lambda m: (m.delta_low, m.delta_high)),
    ("test examples", lambda m: (m.examples_low, m.examples_high)),
    ("seeds and examples", lambda m: (m.both_low, m.both_high)),
)


def forest_kinds(a: StudyAnalysis, ms: Sequence[MetricStats]) -> list[Intervals]:
    """Δ's intervals: over seeds, and over test examples and over both where any row has them."""
    kinds = []
    for i, (over, bounds) in enumerate(_FOREST_KINDS):
        pairs = [bounds(m) for m in ms]
        lows = [low for low, _ in pairs]
        if i == 0 or any(low is not None for low in lows):
            kinds.append(Intervals(f"{_pct(a)}% CI over {over}", lows, [h for _, h in pairs]))
    return kinds


def _say_no_interval(
    labels: Sequence[str], points: Sequence[float | None], kinds: Sequence[Intervals]
) -> list[str]:
    """Labels, marked where the row has a point but no interval of any kind (one seed, no
    seed spread): a dot alone would read as a precise value."""

    def bare(i: int) -> bool:
        return finite(points[i]) and not any(
            finite(iv.lows[i]) and finite(iv.highs[i]) for iv in kinds
        )

    return [f"{lab} (no interval)" if bare(i) else lab for i, lab in enumerate(labels)]


def _delta_panel(
    title: str,
    labels: Sequence[str],
    points: Sequence[float | None],
    kinds: Sequence[Intervals],
    xlabel: str,
    *,
    values: Sequence[str] = (),
    groups: Sequence[Group] = (ESTIMATE,),
    row_groups: Sequence[int] = (),
) -> IntervalPanel:
    """Every row once on one axis through zero: linear, or signed-log where effects of
    different scales would squeeze the small ones' intervals
    (:func:`evalab.report.plots.forest_scale`), the axis label saying so."""
    scale = forest_scale(points, kinds)
    if scale is not None:
        xlabel += f"; linear within ±{tick_text(scale)}, log beyond"
    return interval_panel(
        title,
        _say_no_interval(labels, points, kinds),
        points,
        kinds,
        xlabel=xlabel,
        reference=0.0,
        reference_label="no difference",
        zero="always",
        values=values,
        groups=groups,
        row_groups=row_groups,
        linear_width=scale,
    )


def _compared(a: StudyAnalysis, metric: str) -> tuple[list[RowAnalysis], list[str]]:
    rows = [r for r in a.rows if r.metrics[metric].delta is not None]
    labels = [
        plot_label(r) + (f" (vs {m.vs}, paired)" if m.paired and m.vs else "")
        for r, m in ((r, r.metrics[metric]) for r in rows)
    ]
    return rows, labels


def _better(a: StudyAnalysis, metric: str) -> str:
    return "higher" if a.higher_is_better.get(metric, True) else "lower"


def _directed(a: StudyAnalysis, metric: str) -> str:
    """The metric with its direction: ``acc ↑ (higher is better)``."""
    higher = a.higher_is_better.get(metric, True)
    return f"{metric} {'↑' if higher else '↓'} ({_better(a, metric)} is better)"


def _by_effect(
    a: StudyAnalysis, metric: str, rows: Sequence[RowAnalysis], labels: Sequence[str]
) -> tuple[list[RowAnalysis], list[str]]:
    """The rows best first (largest Δ in the metric's better direction), rows without a Δ last."""
    sign = 1.0 if a.higher_is_better.get(metric, True) else -1.0

    def key(k: int) -> float:
        d = rows[k].metrics[metric].delta
        return -sign * d if d is not None and finite(d) else float("inf")

    order = sorted(range(len(rows)), key=key)
    return [rows[k] for k in order], [labels[k] for k in order]


def forest_figure(a: StudyAnalysis, metric: str) -> Figure:
    """Δ of every compared row, best first, with each interval it has (seeds; test set and
    both where the runs have per-example data), around a line at 0, on one axis."""
    rows, labels = _by_effect(a, metric, *_compared(a, metric))
    ms = [r.metrics[metric] for r in rows]
    panel = _delta_panel(
        f"Δ {metric} to the base ({_better(a, metric)} is better)",
        labels,
        [m.delta for m in ms],
        forest_kinds(a, ms),
        f"Δ {_directed(a, metric)}",
    )
    return Figure(f"forest-{metric}", f"Δ {metric} to the base", (panel,))


def level_figure(a: StudyAnalysis, metric: str) -> Figure:
    """Every row's mean with its intervals, on an axis that fits them (zero drawn only when
    near), beside a line at the base's mean."""
    pct = _pct(a)
    ms = [r.metrics[metric] for r in a.rows]  # rows that are the same runs are one row already
    kinds = [Intervals(f"{pct}% CI over seeds", [m.ci_low for m in ms], [m.ci_high for m in ms])]
    if any(m.mean_examples_low is not None for m in ms):
        kinds.append(
            Intervals(
                f"{pct}% CI over test examples",
                [m.mean_examples_low for m in ms],
                [m.mean_examples_high for m in ms],
            )
        )
    base = a.base.metrics[metric]
    points = [m.mean if m.n else None for m in ms]
    panel = interval_panel(
        f"{metric} ({_better(a, metric)} is better)",
        _say_no_interval([plot_label(r) for r in a.rows], points, kinds),
        points,
        kinds,
        xlabel=f"{_directed(a, metric)}, mean over seeds",
        reference=base.mean if base.n else None,
        reference_label="base",
    )
    return Figure(f"level-{metric}", f"{metric} of every row", (panel,))


def _headline(m: MetricStats) -> tuple[float | None, float | None]:
    """The interval a row's verdict reads: over seeds and examples where the row has it."""
    if m.both_low is not None and m.both_high is not None:
        return m.both_low, m.both_high
    return m.delta_low, m.delta_high


def _verdict(m: MetricStats, higher: bool) -> int:
    """The row's group in the summary: 0 better, 1 worse, 2 unclear, 3 negligible, 4 no interval."""
    lo, hi = _headline(m)
    if m.negligible:
        return 3
    if lo is None or hi is None or not (finite(lo) and finite(hi)):
        return 4
    if lo > 0 or hi < 0:
        return 0 if (lo > 0) == higher else 1
    return 2


def summary_figure(a: StudyAnalysis) -> Figure | None:
    """The primary metric's Δ of every compared row in study order: the interval its verdict
    reads (over seeds and examples where the row has per-example data, else over seeds),
    the dot coloured by the verdict, the numbers written beside each row."""
    metric = a.primary
    rows, labels = _compared(a, metric)
    if not rows:
        return None
    ms = [r.metrics[metric] for r in rows]
    ends = [_headline(m) for m in ms]
    both = [m.both_low is not None for m in ms]
    pct = _pct(a)
    label = (
        f"{pct}% CI over seeds and examples"
        if all(both)
        else f"{pct}% CI over seeds"
        if not any(both)
        else f"{pct}% CI over seeds and examples (over seeds where a row has no per-example data)"
    )
    kind = Intervals(label, [lo for lo, _ in ends], [hi for _, hi in ends])
    d = decimals_for(a, metric)
    values = [
        f"{number(m.delta, d, signed=True)}"
        + (f" [{number(lo, d)}, {number(hi, d)}]" if lo is not None and hi is not None else "")
        for m, (lo, hi) in zip(ms, ends, strict=True)
    ]
    higher = a.higher_is_better.get(metric, True)
    panel = _delta_panel(
        f"Summary: Δ {metric} to the base, {_better(a, metric)} is better",
        labels,
        [m.delta for m in ms],
        [kind],
        f"Δ {_directed(a, metric)}",
        values=values,
        groups=(BETTER, WORSE, UNCLEAR, NEGLIGIBLE, NO_INTERVAL),
        row_groups=[_verdict(m, higher) for m in ms],
    )
    return Figure("summary", f"Summary: Δ {metric} to the base", (panel,))


#: the x distance (in levels) between neighbouring series' error bars of an interaction plot
DODGE = 0.12


def dodge(j: int, count: int) -> float:
    """The x offset of series ``j`` of ``count`` at each level, so that no two series' error
    bars are drawn over each other; at most ±0.3 of a level apart, inside the level's slot.

    >>> [dodge(j, 3) for j in range(3)], dodge(0, 1)
    ([-0.12, 0.0, 0.12], 0.0)
    """
    step = min(DODGE, 0.6 / max(count - 1, 1))
    return round((j - (count - 1) / 2) * step, 6)


def _cell(a: StudyAnalysis, levels: dict[str, Any]) -> RowAnalysis | None:
    from evalab.stats.effects import cell_label

    label = cell_label(levels)
    return next((r for r in a.rows if label in r.labels), None)


def interaction_figure(a: StudyAnalysis, metric: str) -> Figure | None:
    """Per pair of grid factors (the others at the base's levels): the metric's mean of every
    cell with its CI over seeds, one line per level of the second factor over the levels of
    the first; parallel lines = no interaction. The panel names the interaction contrast."""
    from evalab.ablation.study.grid import format_level
    from evalab.stats.effects import cell_label

    factors = [f for f, levels in a.grid.items() if len(levels) >= 2]
    if len(factors) < 2:
        return None
    base = a.base.config
    ref = {f: base.get(f) if base.get(f) in a.grid[f] else a.grid[f][-1] for f in a.grid}
    d = decimals_for(a, metric)
    panels = []
    for f, g in itertools.combinations(factors, 2):
        series = []
        for j, lg in enumerate(a.grid[g]):
            cells = [_cell(a, {**ref, f: lf, g: lg}) for lf in a.grid[f]]
            ms = [c.metrics[metric] if c is not None else None for c in cells]
            shift = dodge(j, len(a.grid[g]))
            series.append(
                Series(
                    f"{g}={format_level(lg)}",
                    tuple(k + shift for k in range(len(cells))),
                    tuple(m.mean if m is not None and m.n else None for m in ms),
                    tuple(m.ci_low if m is not None else None for m in ms),
                    tuple(m.ci_high if m is not None else None for m in ms),
                )
            )
        names = {cell_label({**ref, f: lf, g: lg}) for lf in a.grid[f] for lg in a.grid[g]}
        found = [
            c
            for c in a.contrasts.get(metric, [])
            if c.kind == "interaction" and set(c.cells) <= names
        ]
        note = ""
        if len(found) == 1:
            c = found[0]
            ci = f" [{number(c.low, d)}, {number(c.high, d)}]" if c.low is not None else ""
            note = f"interaction {number(c.value, d, signed=True)}{ci}"
        elif found:
            note = f"{len(found)} interaction contrasts (listed under the grid effects)"
        others = [x for x in a.grid if x not in (f, g)]
        title = f"{metric}: {f} × {g}" + (
            f" ({', '.join(f'{x}={format_level(ref[x])}' for x in others)})" if others else ""
        )
        panels.append(
            xy_panel(
                title,
                series,
                xlabel=f,
                ylabel=f"{metric}, mean over seeds",
                style="bars",
                x_names=[format_level(v) for v in a.grid[f]],
                note=note,
                interval_label=f"{_pct(a)}% CI over seeds",
            )
        )
    return Figure(f"interaction-{metric}", f"{metric}: grid interactions", tuple(panels))


def report_figures(a: StudyAnalysis, curves: StudyCurves | None = None) -> list[Figure]:
    """Every figure of the report, in the page's order."""
    from evalab.report.curves import curve_figures

    out = [f for f in [summary_figure(a)] if f is not None]
    for m in a.metrics:
        out += [forest_figure(a, m), level_figure(a, m)]
    out += [f for m in a.metrics for f in [interaction_figure(a, m)] if f is not None]
    if curves is not None:
        out += curve_figures(curves)
    return [f for f in out if f.panels]
