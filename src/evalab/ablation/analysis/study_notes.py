"""Which notes a study's analysis states, in the report's order, with the numbers each
cites (:mod:`evalab.ablation.analysis.note_kinds`): how the statistics are computed, then what applies
to this study's rows (one seed, no seed spread, eval rows, ASO, a grid, missing runs), the
provenance of the runs, and the test-set intervals, bounds, 'negligible' and Holm's
adjustment where shown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalab.ablation.analysis.note_kinds import (
    AsoNote,
    BoundsNote,
    CodeVersionNote,
    DeltaNote,
    EvalRowsNote,
    FewSeedsNote,
    GridNote,
    HolmNote,
    MetricBounds,
    MinEffect,
    MissingRunsNote,
    NegligibleNote,
    NoSeedSpreadNote,
    Note,
    OneSeedNote,
    SeedsNote,
    StaleRunsNote,
    TestSetNote,
    TwoLevelNote,
    runs_used,
)
from evalab.ablation.analysis.seed_deltas import DeltaTests
from evalab.ablation.analysis.study_analysis import RowAnalysis
from evalab.ablation.store.example_refusals import Refusal
from evalab.ablation.study.bounds import metric_bounds, min_effect

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study


@dataclass(frozen=True)
class Provenance:
    """The runs the analysis used and the stored runs it did not (another configuration or
    code version)."""

    used: Sequence[Any]
    stale: int


def study_notes(
    study: Study, rows: list[RowAnalysis], tests: DeltaTests, provenance: Provenance
) -> list[Note]:
    """How the statistics over seeds are computed, what applies to these rows, and where
    the runs come from."""
    notes: list[Note] = [
        SeedsNote(len(study.seeds), tests.confidence),
        DeltaNote(
            study.paired_seeds,
            any(r.stage == "eval" for r in rows),
            tests.confidence,
            tests.permutations,
            any(ms.p_holm is not None for r in rows for ms in r.metrics.values()),
            sum(1 for r in rows if r.changes and r.stage == "train"),
        ),
        FewSeedsNote(tests.alpha, tests.power, study.paired_seeds),
    ]
    notes += _row_notes(study, rows, tests)
    failed, pending = sum(r.failed for r in rows), sum(r.pending for r in rows)
    if failed or pending:
        notes.append(MissingRunsNote(failed, pending))
    notes.append(CodeVersionNote(study.code_version, bool(study.code and study.code.pinned)))
    commits = runs_used(provenance.used)
    notes += [commits] if commits is not None else []
    notes += [StaleRunsNote(provenance.stale)] if provenance.stale else []
    return notes


def _row_notes(study: Study, rows: list[RowAnalysis], tests: DeltaTests) -> list[Note]:
    """The notes some rows call for: one seed, no seed spread, eval rows; ASO; a grid."""
    notes: list[Note] = []
    single = tuple(
        r.label
        for r in rows
        if any(
            ms.delta is not None and ms.absent.get("p_perm") == "one_seed"
            for ms in r.metrics.values()
        )
    )
    if single:
        notes.append(OneSeedNote(single))
    flat = tuple(
        r.label
        for r in rows
        if any(ms.no_seed_spread or (ms.n >= 2 and ms.std == 0) for ms in r.metrics.values())
    )
    if flat:
        notes.append(NoSeedSpreadNote(flat))
    evals = tuple(r.label for r in rows if r.stage == "eval")
    if evals:
        notes.append(EvalRowsNote(evals, tests.confidence))
    if tests.aso:
        notes.append(AsoNote(tests.alpha))
    if study.grid:
        notes.append(GridNote())
    return notes


def interval_notes(
    study: Study,
    rows: list[RowAnalysis],
    tests: DeltaTests,
    resamples: int,
    refused: list[Refusal],
    *,
    holm: bool,
) -> list[Note]:
    """What the test-set intervals, bounds, 'negligible' and p(Holm) are, where shown, then
    why a row has no test-set interval."""
    shown = [ms for r in rows for ms in r.metrics.values()]
    notes: list[Note] = []
    sizes = tuple(sorted({ms.n_examples for ms in shown if ms.n_examples is not None}))
    if sizes:
        notes.append(TestSetNote(sizes, tests.confidence, resamples))
    if any(ms.both_low is not None for ms in shown):
        notes.append(TwoLevelNote(tests.confidence))
    bounded = tuple(
        MetricBounds(m, *b) for m in study.metrics if (b := metric_bounds(study, m)) is not None
    )
    if bounded:
        notes.append(BoundsNote(bounded))
    effects = tuple(
        MinEffect(m, e) for m in study.metrics if (e := min_effect(study, m)) is not None
    )
    if effects:
        notes.append(NegligibleNote(effects))
    if holm:
        notes.append(HolmNote())
    return [*notes, *refused]
