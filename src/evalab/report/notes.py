"""The words of a study's notes: one function per note code
(:mod:`evalab.ablation.analysis.note_kinds`), each turning the numbers the note cites into the sentence
every format prints (terminal, Markdown, LaTeX, HTML; the JSON carries the sentences and,
beside them, the codes with their numbers); and of the notes of a comparison
(:data:`evalab.stats.items.ItemNote`, :class:`evalab.stats.paired.FlatResamples`:
:func:`stats_sentence`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from evalab.ablation.analysis.note_kinds import (
    AsoNote,
    BoundsNote,
    CodeVersionNote,
    CurvesNote,
    DeltaNote,
    EvalRowsNote,
    FewSeedsNote,
    GridNote,
    HolmNote,
    MissingRunsNote,
    NegligibleNote,
    NoSeedSpreadNote,
    Note,
    OneSeedNote,
    RunsUsedNote,
    SeedsNote,
    StaleRunsNote,
    TestSetNote,
    TwoLevelNote,
)
from evalab.ablation.store.example_refusals import (
    ExampleGap,
    ExampleMismatch,
    SizeMismatch,
    UnreadableExamples,
)
from evalab.stats.items import FewClusters, ItemNote, NoSpread
from evalab.stats.paired import FlatResamples

if TYPE_CHECKING:
    from evalab.ablation.analysis.study_analysis import StudyAnalysis


def note_lines(a: StudyAnalysis) -> list[str]:
    """The sentences of the analysis's notes, in order."""
    return [sentence(n) for n in a.notes]


def sentence(note: Note) -> str:
    """The sentence of one note."""
    match note:
        case SeedsNote():
            return _seeds(note)
        case DeltaNote():
            return _delta(note)
        case FewSeedsNote():
            return _few_seeds(note)
        case OneSeedNote():
            return _one_seed(note)
        case NoSeedSpreadNote():
            return _no_seed_spread(note)
        case EvalRowsNote():
            return _eval_rows(note)
        case AsoNote():
            return _aso(note)
        case GridNote():
            return _grid(note)
        case MissingRunsNote():
            return _missing_runs(note)
        case CodeVersionNote():
            return _code_version(note)
        case RunsUsedNote():
            return _runs_used(note)
        case StaleRunsNote():
            return _stale_runs(note)
        case TestSetNote():
            return _test_set(note)
        case TwoLevelNote():
            return _two_level(note)
        case BoundsNote():
            return _bounds(note)
        case NegligibleNote():
            return _negligible(note)
        case HolmNote():
            return _holm(note)
        case UnreadableExamples() | ExampleMismatch() | ExampleGap() | SizeMismatch():
            return f"No test-set interval for {_refusal(note)}."
        case CurvesNote():
            from evalab.report.curves import selection_note

            return selection_note(note.curves)
        case _:
            assert_never(note)


def stats_sentence(note: ItemNote | FlatResamples) -> str:
    """The sentence of one note of a comparison: of per-item scores (``compare --scores``,
    ``power``) or of a paired test (``compare``)."""
    match note:
        case FlatResamples():
            which = "; ".join(f"{s} Δ {d:+.4g}" for s, d in note.systems)
            return (
                f"no spread: on {note.metric}, the difference to the baseline came out the same in "
                f"every resample ({which}: the same per-segment statistics as the baseline, or a "
                "difference that never varies); its p-value and a zero-width interval follow from "
                "that alone, not from evidence about other test sets"
            )
        case FewClusters():
            return (
                f"warning: clustered standard errors from {note.clusters} clusters; with fewer than "
                f"about {note.minimum} a cluster-robust standard error is biased down (its t interval "
                "too narrow, a design effect from it too small): read them as optimistic; more "
                "clusters make them trustworthy"
            )
        case NoSpread():
            which = "; ".join(f"{m} − {b} = {d:+.4g}" for m, b, d in note.pairs)
            return (
                f"no spread: the per-item difference is the same on every item ({which}), so its "
                "standard error is 0 and the paired t test and t interval are 0/0 (or Δ/0): not "
                "shown ('–'). Identical models need no test; a difference that never varies says "
                "nothing about items not scored"
            )
        case _:
            assert_never(note)


def _pct(confidence: float) -> int:
    return round(confidence * 100)


def _seeds(n: SeedsNote) -> str:
    return f"{n.seeds} seeds per row; mean ± sd over seeds; {_pct(n.confidence)}% CI = mean ± t(n-1)·sd/√n."


def _delta(n: DeltaNote) -> str:
    pct = _pct(n.confidence)
    trained = " (trained rows)" if n.eval_rows else ""
    if n.paired_seeds:
        what = (
            f"Δ = row − base{trained}, PAIRED by seed (paired_seeds = true: the seeds share data order and "
            f"initialization across rows), over the seeds both rows finished: {pct}% CI from the paired t "
            "distribution, p(t) = paired t-test, p(perm) = sign-flip permutation test (exact over all 2^n sign "
            f"patterns when feasible, else {n.permutations} random ones), both two-sided"
        )
    else:
        what = (
            f"Δ = row − base{trained} with a Welch {pct}% CI; p(t) = Welch's t-test, p(perm) = permutation test "
            f"of |Δ| (exact over all relabelings when feasible, else {n.permutations} random relabelings), both "
            "two-sided, unpaired"
        )
    adjusted = "Holm-adjusted in p(Holm)" if n.holm else "not adjusted"
    return f"{what}, {adjusted} for the {n.compared} rows compared with the base."


def _few_seeds(n: FewSeedsNote) -> str:
    test = "paired t-test" if n.paired_seeds else "two-sided two-sample t-test"
    return (
        f"'few seeds' = p(t) ≥ {n.alpha:g} and a power analysis ({test}, α = {n.alpha:g}, "
        f"power = {n.power:g}, observed Δ and pooled sd) needs more seeds per row than were run; the number shown is that requirement."
    )


def _one_seed(n: OneSeedNote) -> str:
    return (
        f"One seed (rows {'; '.join(n.rows)}): with one seed in the row or in the row its Δ is taken to (one "
        "pair, paired), p(t) and p(perm) are '–': the t-test needs two, and the permutation test's only "
        "possible p is 1, whatever Δ is."
    )


def _no_seed_spread(n: NoSeedSpreadNote) -> str:
    return (
        f"No seed spread (rows {'; '.join(n.rows)}): where every seed of a row gave the same value, its mean's CI over "
        "seeds is not shown ('–'); where that holds for the row its Δ is taken to as well ('no seed spread'; paired: "
        "the same difference on every seed), the t-test is 0/0: p(t) and Δ's CI over seeds are not shown either, nor a grid effect's CI and p (t). "
        "Their limits (p 0, a zero-width CI) hold only for runs that cannot vary with the seed; a coarse metric on few "
        "test examples can agree by chance. p(perm) (and the test-set intervals, where shown) do not rely on it."
    )


def _eval_rows(n: EvalRowsNote) -> str:
    return (
        f"Stage 'eval' rows ({', '.join(n.rows)}) are suppressed at evaluation: not retrained, each "
        "evaluates the trained model of its row (Stage column) for every seed. Their Δ is to that trained row and PAIRED "
        f"by seed (the same model evaluated twice): {_pct(n.confidence)}% CI from the paired t distribution, p(t) = paired t-test, "
        "p(perm) = sign-flip permutation test (exact over all 2^n sign patterns when feasible), 'few seeds' from the "
        "paired t-test's power. A retrained row asks whether a model can learn the task without the component; an eval "
        "row asks whether the trained model relies on it."
    )


def _aso(n: AsoNote) -> str:
    return f"ASO = ε_min of 'row better than base' (Dror et al. 2019, α = {n.alpha:g}); < 0.5 supports the row being better, < 0.2 strongly."


def _grid(n: GridNote) -> str:
    return (
        "Grid effects: removal = y(factor ablated) − y(full system); addition = y(factor present) − "
        "y(neither); interaction = y(both) − y(A ablated) − y(B ablated) + y(neither); other factors held at the base."
    )


def _missing_runs(n: MissingRunsNote) -> str:
    return f"Missing runs: {n.failed} failed, {n.pending} not run; statistics use the finished seeds only."


def _code_version(n: CodeVersionNote) -> str:
    how = "written in the study file" if n.pinned else "hash of the code the entry imports"
    return f"Code version {n.code_version} ({how})."


def _runs_used(n: RunsUsedNote) -> str:
    parts = [
        f"{c.runs} at git {c.commit[:10]}{' with uncommitted changes' if c.dirty else ''}"
        for c in n.commits
    ]
    return f"Runs used: {'; '.join(parts)}."


def _stale_runs(n: StaleRunsNote) -> str:
    return f"{n.runs} stored run(s) of this study belong to another configuration or code version and are not used."


def _test_set(n: TestSetNote) -> str:
    return (
        f"Test-set intervals (metrics with per-example data, {', '.join(map(str, n.examples))} test examples): "
        f"CI (test set) = {_pct(n.confidence)}% percentile interval of {n.resamples} bootstrap resamples of the test examples, the same "
        "resamples for every run of every row (so Δ is paired across rows, example by example), each seed's run scored "
        "on the resample and the row's value averaged over its seeds. It says how far the value or Δ would move on "
        "another test set of the same size with these trained models; it exists with a single seed."
    )


def _two_level(n: TwoLevelNote) -> str:
    return (
        "CI (seeds + test set) = Δ over both sources (two levels: seeds, then the test examples every seed's run "
        "scores): se² = the seeds' variance of Δ (Welch's, or the paired one) + the test-set variance of Δ from the "
        "same resamples, with the seed × example interaction (seeds disagreeing on single examples), which both "
        f"contain, counted once; {_pct(n.confidence)}% CI = Δ ± t(ν)·se with ν the seeds' degrees of freedom (Welch's, or S−1 "
        "paired), so it is never narrower than the seeds-only CI; p (2-level) = P(|T_ν| ≥ |Δ|/se), two-sided, the row's "
        "p for 'differs from base' where shown. It needs two seeds per row: with one the seed noise is unknown and only the test-set CI is shown."
    )


def _bounds(n: BoundsNote) -> str:
    parts = [f"{b.metric} in [{b.low:g}, {b.high:g}]" for b in n.bounds]
    return (
        f"Declared bounds: {'; '.join(parts)}. Intervals never leave them: t-based ones are clipped to the "
        "bounds (Δ's to [lo − hi, hi − lo]); percentile ones stay inside by construction."
    )


def _negligible(n: NegligibleNote) -> str:
    parts = [f"{e.metric} ±{e.effect:g}" for e in n.effects]
    return (
        f"'negligible' = |Δ| and every interval shown for it (one covering seed noise included) inside the "
        f"smallest effect of interest ({', '.join(parts)}): equivalent at the intervals' level, no seeds asked "
        "for; where |Δ| is below it but an interval is not, 'few seeds' counts the seeds needed to detect that "
        "smallest effect, not the observed Δ."
    )


def _holm(n: HolmNote) -> str:
    return (
        "p(Holm) = Holm's step-down adjustment (family-wise error) of each row's p — p (2-level) where shown, else "
        "p(t), else p(perm) where p(t) is undefined — over the family of distinct comparisons it belongs to "
        "(per metric: the trained rows' Δ to the base; the eval rows' Δ to the trained row they evaluate)."
    )


def _refusal(n: UnreadableExamples | ExampleMismatch | ExampleGap | SizeMismatch) -> str:
    """Which row or run has no test-set interval, and why."""
    match n:
        case UnreadableExamples():
            return f"run {n.row} seed {n.seed}: {n.error}"
        case ExampleMismatch():
            return (
                f"{n.metric}, run {n.row} seed {n.seed}: its per-example data "
                f"scores {n.value:.6g}, its stored value is {n.stored}"
            )
        case ExampleGap():
            whose = f"row {n.of}" + (" (the row Δ is taken to)" if n.of_compared else "")
            return (
                f"{n.metric}, row {n.row}: {whose} has usable per-example data on {n.finished - len(n.lacking)} of "
                f"its {n.finished} finished runs (none for seed {', '.join(map(str, n.lacking))})"
            )
        case SizeMismatch():
            return (
                f"{n.metric}, row {n.row}: runs were scored on test sets of different sizes "
                f"({list(n.sizes)} examples), so they do not pair example by example"
            )
        case _:
            assert_never(n)
