"""The grid's factorial effects per metric (removals, additions, interactions, main
effects: :func:`evalab.stats.effects.factorial_effects`), from each cell's values by seed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalab.ablation.analysis.study_analysis import RowAnalysis
from evalab.ablation.analysis.study_runs import StudyRuns
from evalab.ablation.plan.runs import Row
from evalab.ablation.study.bounds import metric_bounds
from evalab.stats.effects import Contrast, factorial_effects


def grid_effects(
    runs: StudyRuns, rows: list[RowAnalysis], confidence: float
) -> dict[str, list[Contrast]]:
    """Factorial effects of the grid, per metric (none without a grid)."""
    study = runs.study
    contrasts: dict[str, list[Contrast]] = {}
    if study.grid:
        ref_levels = {
            f: (study.base[f] if study.base[f] in levels else levels[-1])
            for f, levels in study.grid.items()
        }
        for m in study.metrics:
            top = max((abs(r.metrics[m].mean) for r in rows if r.metrics[m].n), default=0.0)
            contrasts[m] = factorial_effects(
                study.grid,
                ref_levels,
                _grid_cell_values(runs, m),
                confidence=confidence,
                decimals=2 if top >= 10 else 3 if top >= 1 else 4,
                paired=study.paired_seeds,
                bounds=metric_bounds(study, m),
            )
    return contrasts


def _grid_cell_values(runs: StudyRuns, metric: str) -> Callable[[dict[str, Any]], dict[int, float]]:
    """The metric's values by seed in the grid cell with the given factor levels."""

    def values(levels: dict[str, Any]) -> dict[int, float]:
        row = Row("", "", "grid", {**runs.study.base, **levels}, {}, {})
        return runs.by_seed(row, metric)[0]

    return values
