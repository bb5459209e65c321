"""One row's statistics per metric: its values over seeds and its Δ to the row it is taken
to (the trained row an eval row evaluates, else the base; none for the base's
configuration), paired by seed where the runs pair; an eval row of another trained row
also gets its Δ to the base (:class:`~evalab.ablation.analysis.study_analysis.Delta`).
"""

from __future__ import annotations

from dataclasses import replace

from evalab.ablation.analysis.example_intervals import Comparison
from evalab.ablation.analysis.finish import with_absent, within_bounds
from evalab.ablation.analysis.seed_deltas import DeltaTests, paired, seed_stats, unpaired
from evalab.ablation.analysis.study_analysis import Delta, FailedRun, MetricStats
from evalab.ablation.analysis.study_runs import StudyRuns
from evalab.ablation.plan.runs import Row
from evalab.ablation.study.bounds import metric_bounds, min_effect


def row_stats(
    runs: StudyRuns,
    row: Row,
    labels: dict[str, Row],
    comparisons: dict[str, list[Comparison]],
    tests: DeltaTests,
) -> tuple[dict[str, MetricStats], list[FailedRun]]:
    """One row's statistics over seeds per metric, and its missing runs (primary metric);
    appends the row's per-example data to ``comparisons`` where it and its comparison row have it."""
    study = runs.study
    stats: dict[str, MetricStats] = {}
    missing: list[FailedRun] = []
    for m in study.metrics:
        vals, miss = runs.by_seed(row, m)
        if m == study.primary:
            missing = miss
        # Δ is to the trained row for an eval row, to the base otherwise; none for the base's configuration
        other = (
            labels[row.parent]
            if row.stage == "eval"
            else None
            if row.config == study.base
            else _base_row(runs)
        )
        by_seed = row.stage == "eval" or (study.paired_seeds and other is not None)
        stats[m] = _delta_stats(
            runs, m, vals, other, by_seed, row.parent or "base", tests, min_effect(study, m)
        )
        if row.stage == "eval" and row.parent_config != study.base:
            stats[m] = replace(stats[m], to_base=_to_base(runs, vals, m, tests))
        mine, theirs = (
            runs.run_examples(row, m),
            None if other is None else runs.run_examples(other, m),
        )
        if mine is not None and (other is None or theirs is not None):
            comparisons[m].append(Comparison(row.label, mine, theirs, by_seed))
    return stats, missing


def _base_row(runs: StudyRuns) -> Row:
    return Row("", "", "grid", runs.study.base, {}, {})


def _delta_stats(
    runs: StudyRuns,
    metric: str,
    vals: dict[int, float],
    other: Row | None,
    by_seed: bool,
    vs: str,
    tests: DeltaTests,
    eps: float | None = None,
) -> MetricStats:
    """The row's values over seeds and its Δ to ``other`` (none when ``other`` is None):
    paired by seed (Δ to ``vs``) or unpaired (Δ to the base's configuration)."""
    study = runs.study
    common = seed_stats(metric, list(vals.values()), tests.confidence)
    better = study.better(metric)
    if other is not None and by_seed:
        mine = replace(common, paired=True, vs=vs)
        return paired(mine, vals, runs.by_seed(other, metric)[0], better, tests, eps)
    if other is None:
        return common
    base = runs.seed_values(study.base, metric)
    return unpaired(common, list(vals.values()), base, better, tests, eps)


def _to_base(runs: StudyRuns, vals: dict[int, float], metric: str, tests: DeltaTests) -> Delta:
    """An eval row's Δ to the base (its models are another trained row's): paired by seed
    when the study pairs seeds, else Welch; clipped like every interval of the metric."""
    study = runs.study
    ms = _delta_stats(runs, metric, vals, _base_row(runs), study.paired_seeds, "base", tests)
    ms = with_absent(within_bounds(ms, metric_bounds(study, metric)))
    return Delta(
        "base",
        ms.delta,
        ms.delta_low,
        ms.delta_high,
        ms.p_welch,
        ms.p_perm,
        ms.paired,
        {k: v for k, v in ms.absent.items() if k != "mean_ci"},
    )
