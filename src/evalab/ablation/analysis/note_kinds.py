"""The notes a study's report states under its tables, as typed values: one frozen
dataclass per kind, named by its ``code``, holding the numbers and labels it cites.

The analysis decides which notes apply and with which numbers; the report layer
(:mod:`evalab.report.notes`) writes one sentence per note, in every format. Nothing here
is a sentence: a test (``tests/test_words.py``) checks that no module below the report
builds one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from evalab.ablation.contract.codeversion import GitState
from evalab.ablation.store.example_refusals import Refusal

if TYPE_CHECKING:
    from evalab.ablation.analysis.curve_bands import StudyCurves


@dataclass(frozen=True)
class SeedsNote:
    """How a row's mean, sd and CI over seeds are computed."""

    code: ClassVar[str] = "seeds"
    seeds: int
    confidence: float


@dataclass(frozen=True)
class DeltaNote:
    """What Δ, its CI and p-values are, and how many rows are compared with the base."""

    code: ClassVar[str] = "delta"
    paired_seeds: bool  # the study pairs every row with the base by seed
    eval_rows: bool  # some rows are suppressed at evaluation (Δ of the trained rows meant)
    confidence: float
    permutations: int
    holm: bool  # p-values are Holm-adjusted (in p(Holm))
    compared: int  # trained rows compared with the base


@dataclass(frozen=True)
class FewSeedsNote:
    """What the 'few seeds' flag means and the power analysis behind it."""

    code: ClassVar[str] = "few_seeds"
    alpha: float
    power: float
    paired_seeds: bool


@dataclass(frozen=True)
class OneSeedNote:
    """Rows with a Δ but one seed (or one pair): no p-values."""

    code: ClassVar[str] = "one_seed"
    rows: tuple[str, ...]


@dataclass(frozen=True)
class NoSeedSpreadNote:
    """Rows where every seed gave the same value: no CI over seeds."""

    code: ClassVar[str] = "no_seed_spread"
    rows: tuple[str, ...]


@dataclass(frozen=True)
class EvalRowsNote:
    """The rows suppressed at evaluation and how their Δ is paired."""

    code: ClassVar[str] = "eval_rows"
    rows: tuple[str, ...]
    confidence: float


@dataclass(frozen=True)
class AsoNote:
    """What the ASO column is."""

    code: ClassVar[str] = "aso"
    alpha: float


@dataclass(frozen=True)
class GridNote:
    """What the grid effects are."""

    code: ClassVar[str] = "grid"


@dataclass(frozen=True)
class MissingRunsNote:
    """Runs that failed or never ran."""

    code: ClassVar[str] = "missing_runs"
    failed: int
    pending: int


@dataclass(frozen=True)
class CodeVersionNote:
    """The code version of the runs used, and whether the study file pins it."""

    code: ClassVar[str] = "code_version"
    code_version: str
    pinned: bool


@dataclass(frozen=True)
class Commit(GitState):
    """Runs used that executed one git commit (dirty: with uncommitted changes)."""

    runs: int


@dataclass(frozen=True)
class RunsUsedNote:
    """The git commits the used runs executed."""

    code: ClassVar[str] = "runs_used"
    commits: tuple[Commit, ...]


@dataclass(frozen=True)
class StaleRunsNote:
    """Stored runs of another configuration or code version, not used."""

    code: ClassVar[str] = "stale_runs"
    runs: int


@dataclass(frozen=True)
class TestSetNote:
    """How the intervals over test examples are computed."""

    code: ClassVar[str] = "test_set"
    examples: tuple[int, ...]  # the test-set sizes
    confidence: float
    resamples: int


@dataclass(frozen=True)
class TwoLevelNote:
    """How the interval over seeds and test examples is computed."""

    code: ClassVar[str] = "two_level"
    confidence: float


@dataclass(frozen=True)
class MetricBounds:
    metric: str
    low: float
    high: float


@dataclass(frozen=True)
class BoundsNote:
    """The declared bounds every interval stays inside."""

    code: ClassVar[str] = "bounds"
    bounds: tuple[MetricBounds, ...]


@dataclass(frozen=True)
class MinEffect:
    metric: str
    effect: float


@dataclass(frozen=True)
class NegligibleNote:
    """What 'negligible' means, with each metric's smallest effect of interest."""

    code: ClassVar[str] = "negligible"
    effects: tuple[MinEffect, ...]


@dataclass(frozen=True)
class HolmNote:
    """What p(Holm) adjusts and over which family."""

    code: ClassVar[str] = "holm"


@dataclass(frozen=True)
class CurvesNote:
    """How the runs' values were picked from their logged curves."""

    code: ClassVar[str] = "curves"
    curves: StudyCurves


#: every note the analysis can state
Note = (
    SeedsNote
    | DeltaNote
    | FewSeedsNote
    | OneSeedNote
    | NoSeedSpreadNote
    | EvalRowsNote
    | AsoNote
    | GridNote
    | MissingRunsNote
    | CodeVersionNote
    | RunsUsedNote
    | StaleRunsNote
    | TestSetNote
    | TwoLevelNote
    | BoundsNote
    | NegligibleNote
    | HolmNote
    | Refusal
    | CurvesNote
)


def runs_used(used: Sequence[Any]) -> RunsUsedNote | None:
    """The git commits of the used runs (None when no run recorded one), sorted by commit."""
    commits: dict[tuple[str, bool], int] = {}
    for run in used:
        if run.git_commit:
            key = (run.git_commit, bool(run.git_dirty))
            commits[key] = commits.get(key, 0) + 1
    if not commits:
        return None
    return RunsUsedNote(tuple(Commit(c, dirty, n) for (c, dirty), n in sorted(commits.items())))


def note_dict(note: Note) -> dict[str, Any]:
    """A note's JSON form: its code and the values it cites (a curves note: its rules and
    what logged them, not every curve)."""
    if isinstance(note, CurvesNote):
        c = note.curves
        return {
            "code": note.code,
            "rows": len(c.rows),
            "metrics": list(c.metrics),
            "select": c.settings.select,
            "stop_when": c.settings.stop_when,
        }
    return {"code": note.code, **asdict(note)}
