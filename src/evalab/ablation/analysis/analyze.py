"""Analysis of a study's stored runs: per-row statistics over seeds, deltas, effects.

Honest by construction: every mean comes with its spread and a t-based CI over seeds,
every delta to the base with a Welch CI and two p-values (Welch's t-test; a permutation
test that is exact when the relabelings can be enumerated), a flag when the seeds are too
few to tell the delta from seed noise (with the seeds a power analysis asks for), and runs
that failed or never ran are counted and listed, never silently dropped.
Seeds are treated as independent samples per row (unpaired tests): the same seed number in
two configurations does not make the two runs a matched pair.

The exception is a row of ``stage = "eval"`` (suppressed at evaluation): its run for a seed
evaluates the very model its trained row (``from``) produced for that seed, so its Δ is to
that trained row and paired by seed (paired t-test and CI, sign-flip permutation test,
power of the paired test), over the seeds both rows finished. A study that declares
``paired_seeds = true`` (its seeds share data order and initialization across rows) pairs
every row with the base the same way.

Where the runs have per-example data (``per_example.py``), each row also gets its value's
interval over test examples and Δ's intervals over test examples and over seeds and
examples, with the two-level p-value (``stats/two_level.py``); declared ``bounds`` clip
every interval, ``min_effect`` turns a Δ whose intervals lie inside it into "negligible"
(no seed count asked), and ``holm`` adjusts the rows' p-values per metric.

Numbers and codes only: the notes are typed values (:mod:`evalab.ablation.analysis.note_kinds`) that the
report layer turns into sentences. The parts: the stored runs by row and seed
(``study_runs``), a row's Δ over seeds (``row_stats``, ``seed_deltas``), finishing a
metric (``finish``: test-set fields, bounds, 'negligible', Holm), the grid's effects
(``grid_effects``) and which notes apply (``study_notes``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from evalab.ablation.analysis.example_intervals import Comparison, example_fields
from evalab.ablation.analysis.findings import (
    ComponentView,
    Conditions,
    HolmFamily,
    Side,
    component_pairs,
    conditions,
    definitions,
    reading,
)
from evalab.ablation.analysis.finish import finish_metric, row_p
from evalab.ablation.analysis.grid_effects import grid_effects
from evalab.ablation.analysis.row_stats import row_stats
from evalab.ablation.analysis.seed_deltas import DeltaTests
from evalab.ablation.analysis.study_analysis import (
    FailedRun,
    MetricStats,
    RowAnalysis,
    StudyAnalysis,
)
from evalab.ablation.analysis.study_notes import Provenance, interval_notes, study_notes
from evalab.ablation.analysis.study_runs import StudyRuns, examples_of_runs
from evalab.ablation.plan.runs import PlannedRun, Row, plan_runs, study_rows
from evalab.ablation.store.example_refusals import Refusal
from evalab.ablation.store.run_store import RunStore, stale_runs
from evalab.ablation.study.bounds import bounds_source, metric_bounds
from evalab.errors import SettingsError
from evalab.stats.effects import Contrast
from evalab.stats.resampling import check_n_samples

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study

#: the analysis and the values it returns (defined in ``study_analysis``)
__all__ = ["Contrast", "FailedRun", "MetricStats", "RowAnalysis", "StudyAnalysis", "analyze"]


def analyze(
    study: Study,
    db_path: str | Path | None = None,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    confidence: float = 0.95,
    aso: bool = False,
    seed: int = 0,
    permutations: int = 10_000,
    resamples: int = 1000,
    holm: bool = False,
) -> StudyAnalysis:
    """Analyze the stored runs of ``study`` (see the module docstring for what is computed).

    ``resamples``: bootstrap resamples of the test examples (rows with per-example data);
    ``holm``: Holm-adjust the rows' p-values per metric (`evalab ablate report --holm`).
    """
    if not 0 < alpha < 1 or not 0 < power < 1 or not 0 < confidence < 1:
        raise SettingsError(
            f"alpha, power and confidence must be in (0, 1); got {alpha}, {power}, {confidence}"
        )
    check_n_samples(resamples, "resamples")
    tests = DeltaTests(alpha, power, confidence, aso, seed, permutations)
    plan = plan_runs(study)
    runs, refused, provenance, db = _read(study, db_path, {r.key: r for r in plan})
    every = study_rows(study)
    rows, aliases = _distinct_rows(runs, every)
    stats, missing, families = _statistics(runs, rows, every, tests, resamples, holm, refused)
    planned = Counter(label for r in plan for label in set(r.rows))
    out_rows = [_row(study, planned, row, stats, missing, aliases[row.label]) for row in rows]
    notes = study_notes(study, out_rows, tests, provenance)
    notes += interval_notes(study, out_rows, tests, resamples, refused, holm=holm)
    return StudyAnalysis(
        study=study.name,
        description=study.description,
        path=str(study.path),
        db_path=db,
        code_version=study.code_version,
        metrics=list(study.metrics),
        primary=study.primary,
        higher_is_better=dict(study.higher_is_better),
        seeds=list(study.seeds),
        rows=out_rows,
        contrasts=grid_effects(runs, out_rows, confidence),
        reference_columns=list(study.reference),
        grid=dict(study.grid),
        settings={**asdict(tests), "resamples": resamples, "holm": holm}
        | {"paired_seeds": study.paired_seeds},
        notes=notes,
        display=study.display,
        holm=families,
        conditions=_conditions(study, every),
        definitions=definitions(
            study, lambda m: (metric_bounds(study, m), bounds_source(study, m))
        ),
        components=_components(study, out_rows, alpha),
    )


def _conditions(study: Study, every: list[Row]) -> Conditions:
    """What no row changes, from the trained rows' configurations and the eval rows' changes."""
    return conditions(
        study,
        [r.config for r in every if r.stage == "train"],
        [r.changes for r in every if r.stage == "eval"],
    )


def _read(
    study: Study, db_path: str | Path | None, by_key: dict[str, PlannedRun]
) -> tuple[StudyRuns, list[Refusal], Provenance, str]:
    """The study's stored runs that are current (a file a run read changed: not used), the
    per-example data refused, which runs are used and which belong elsewhere, the store's path."""
    with RunStore(db_path, create=False) as store:
        stored = store.runs(study.name)
        for key in stale_runs(study, stored.values()):
            del stored[key]
        examples, refused = examples_of_runs(study, store, stored, by_key)
        db = str(store.path)
    used = [r for k, r in stored.items() if k in by_key and r.status == "ok"]
    provenance = Provenance(used, sum(1 for k in stored if k not in by_key))
    return StudyRuns(study, stored, examples), refused, provenance, db


def _statistics(
    runs: StudyRuns,
    rows: list[Row],
    every: list[Row],
    tests: DeltaTests,
    resamples: int,
    holm: bool,
    refused: list[Refusal],
) -> tuple[dict[str, dict[str, MetricStats]], dict[str, list[FailedRun]], list[HolmFamily]]:
    """Every distinct row's statistics per metric, its missing runs, and the Holm families;
    appends to ``refused`` the rows that get no test-set interval."""
    study = runs.study
    labels = {r.label: r for r in every}
    stats: dict[str, dict[str, MetricStats]] = {}
    missing: dict[str, list[FailedRun]] = {}
    comparisons: dict[str, list[Comparison]] = {m: [] for m in study.metrics}
    for row in rows:
        stats[row.label], missing[row.label] = row_stats(runs, row, labels, comparisons, tests)
        refused += [r for r in runs.example_gaps(row, labels, comparisons) if r not in refused]
    families: list[HolmFamily] = []
    stages = {r.label: r.stage for r in rows}
    for m in study.metrics:
        fields, sizes = example_fields(
            m,
            comparisons[m],
            confidence=tests.confidence,
            resamples=resamples,
            seed=tests.seed,
            bounds=metric_bounds(study, m),
        )
        refused += sizes
        families += finish_metric(study, m, stats, fields, holm=holm, stages=stages)
    return stats, missing, families


def _row(
    study: Study,
    planned_runs: Counter[str],
    row: Row,
    stats: dict[str, dict[str, MetricStats]],
    missing: dict[str, list[FailedRun]],
    aliases: tuple[str, ...],
) -> RowAnalysis:
    """One distinct row of the report, under its own label and those of the rows it equals;
    ``planned_runs``: the number of planned runs of each row label."""
    names = (row.label, *aliases)
    planned = planned_runs[row.label]
    reference = {
        col: next((study.reference[col][x] for x in names if x in study.reference[col]), None)
        for col in study.reference
    }
    return RowAnalysis(
        row.label,
        row.description,
        row.kind,
        row.changes,
        planned,
        planned - len(missing[row.label]),
        stats[row.label],
        missing[row.label],
        reference,
        row.stage,
        row.parent,
        {**study.evaluation, **row.config},
        aliases,
    )


def _distinct_rows(
    runs: StudyRuns, rows: list[Row]
) -> tuple[list[Row], dict[str, tuple[str, ...]]]:
    """The rows that are distinct runs, in order (the first row of each set of runs), and
    for each the labels of the later rows with the same runs (a grid cell that equals a
    variant or the base): one comparison, shown once, under every label it carries."""
    first: dict[tuple[str, ...], Row] = {}
    aliases: dict[str, list[str]] = {}
    for row in rows:
        keys = tuple(runs.keys(row).values())
        if keys in first:
            aliases[first[keys].label].append(row.label)
        else:
            first[keys] = row
            aliases[row.label] = []
    return list(first.values()), {k: tuple(v) for k, v in aliases.items()}


def _components(study: Study, rows: list[RowAnalysis], alpha: float) -> list[ComponentView]:
    """The component view on the primary metric: a retrained row beside the eval row
    that removes the same component (``component = "NAME"`` on both)."""
    found = {x: r for r in rows for x in r.labels}
    out = []
    m = study.primary
    for component, trained, at_eval in component_pairs(study):
        sides = []
        for label in (trained, at_eval):
            ms = found[label].metrics[m]
            p = row_p(ms)
            worse = ms.direction == "worse"
            low, high = (
                (ms.both_low, ms.both_high)
                if ms.p_both is not None
                else (ms.delta_low, ms.delta_high)
            )
            sides.append(
                Side(
                    label,
                    ms.vs,
                    ms.paired,
                    ms.delta,
                    low,
                    high,
                    p,
                    bool(p is not None and p < alpha and worse),
                )
            )
        out.append(
            ComponentView(component, m, sides[0], sides[1], reading(sides[0], sides[1]), alpha)
        )
    return out
