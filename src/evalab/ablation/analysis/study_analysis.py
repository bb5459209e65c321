"""The typed values a study's analysis hands to the report: per metric of a row
(:class:`MetricStats`, with an eval row's second Δ in :class:`Delta`), per row
(:class:`RowAnalysis`, its missing runs as :class:`FailedRun`) and per study
(:class:`StudyAnalysis`, with its notes as codes and numbers, :mod:`evalab.ablation.analysis.note_kinds`).
Numbers and codes only; the report layer writes the words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

from evalab.ablation.analysis.findings import (
    ComponentView,
    Conditions,
    HolmFamily,
    MetricDefinition,
)
from evalab.ablation.analysis.note_kinds import Note, note_dict
from evalab.ablation.study.display import Display
from evalab.stats.effects import Contrast

#: why a number is None (``MetricStats.absent`` maps a field group to one of these)
ABSENT = ("no_runs", "one_seed", "no_seed_spread", "no_common_seeds")


@dataclass(frozen=True)
class Delta:
    """A row's second Δ: an eval row's Δ to the base, when it evaluates another trained row."""

    vs: str
    delta: float | None
    low: float | None
    high: float | None
    p_t: float | None
    p_perm: float | None
    paired: bool
    absent: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricStats:
    """One metric of one row, over its finished seeds: the row's values (n, mean, sd, CI
    over seeds), Δ to the row it is taken to with its tests, the test-set intervals where
    the runs have per-example data, and why what is None is absent. The report reads these
    fields by name and the JSON carries them flat: they are built from the smaller values of
    :mod:`evalab.ablation.analysis.seed_deltas` and :class:`~evalab.ablation.analysis.example_intervals.TestSetFields`."""

    metric: str
    n: int
    values: list[float]
    mean: float
    std: float
    ci_low: float | None
    ci_high: float | None
    # row - base (eval rows: row - its trained row; None for the base row)
    delta: float | None = None
    delta_low: float | None = None
    delta_high: float | None = None
    p_welch: float | None = None
    p_perm: float | None = None
    perm_exact: bool | None = None
    seeds_needed: int | None = None
    too_few_seeds: bool = False
    aso_eps: float | None = None  # eps_min of "this row is better than the base"
    direction: str = ""  # "better" | "worse" | "" (delta sign under higher_is_better)
    paired: bool = False  # Δ paired by seed (eval rows, or a study with paired_seeds = true)
    vs: str = ""  # the row Δ is taken to ("base", or an eval row's trained row)
    # Test-set uncertainty, where the runs have per-example data (ablation/store/per_example.py);
    # None where they do not. delta_low/delta_high above stay the interval over seeds.
    n_examples: int | None = None
    mean_examples_low: float | None = None  # the row's value, CI over test examples (seeds pooled)
    mean_examples_high: float | None = None
    examples_low: float | None = None  # Δ, CI over test examples (paired bootstrap, seeds pooled)
    examples_high: float | None = None
    # Δ, CI over seeds and examples (seed variance + test-set variance)
    both_low: float | None = None
    both_high: float | None = None
    p_both: float | None = None  # two-level resampling p-value of Δ ≠ 0 (the row's p when present)
    p_holm: float | None = None  # Holm-adjusted p across the rows compared (when requested)
    negligible: bool = False  # |Δ| and its CI inside the study's min_effect: no seed count asked
    # every seed of both rows gave the same value (paired: the same difference): the t-test is
    # 0/0, so p_welch and the CI over seeds are NaN (shown '–'), not the degenerate limit
    no_seed_spread: bool = False
    # why a CI or p is None: "mean_ci", "delta_ci", "p_t", "p_perm" -> a code of ABSENT
    absent: dict[str, str] = field(default_factory=dict)
    to_base: Delta | None = None  # an eval row of another trained row: its Δ to the base as well


@dataclass(frozen=True)
class FailedRun:
    """A planned run without a usable result."""

    seed: int
    status: str  # "failed" | "pending"
    error: str
    attempts: int


@dataclass(frozen=True)
class RowAnalysis:
    """One row of the report."""

    label: str
    description: str
    kind: str
    changes: dict[str, Any]
    planned: int
    ok: int
    metrics: dict[str, MetricStats]
    missing: list[FailedRun]
    reference: dict[str, float | None] = field(default_factory=dict)
    stage: str = "train"  # "eval": suppressed at evaluation of row ``parent``'s trained models
    parent: str = ""
    # the configuration it ran with ([evaluation] defaults included)
    config: dict[str, Any] = field(default_factory=dict)
    # the other rows that are the same runs (a grid cell equal to a variant or the base)
    aliases: tuple[str, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label of the row: its own, then those of the rows with the same runs."""
        return (self.label, *self.aliases)

    @property
    def failed(self) -> int:
        return sum(m.status == "failed" for m in self.missing)

    @property
    def pending(self) -> int:
        return sum(m.status == "pending" for m in self.missing)


@dataclass(frozen=True)
class StudyAnalysis:
    """Everything the renderers show. ``to_dict()`` is the JSON form."""

    study: str
    description: str
    path: str
    db_path: str
    code_version: str
    metrics: list[str]
    primary: str
    higher_is_better: dict[str, bool]
    seeds: list[int]
    rows: list[RowAnalysis]
    contrasts: dict[str, list[Contrast]]
    reference_columns: list[str]
    grid: dict[str, list[Any]]
    settings: dict[str, Any]
    notes: list[Note]  # codes and numbers; report.notes writes their sentences
    display: Display = field(default_factory=Display)  # the study's [display]: config columns
    holm: list[HolmFamily] = field(default_factory=list)  # the families p(Holm) was adjusted over
    conditions: Conditions | None = None  # what no row changes
    definitions: list[MetricDefinition] = field(default_factory=list)
    components: list[ComponentView] = field(default_factory=list)

    @property
    def base(self) -> RowAnalysis:
        return self.rows[0]

    @cached_property
    def largest_mean(self) -> dict[str, float]:
        """Per metric, the largest |mean| of a row with finished runs (0 where none has
        them): read once over the rows, not once per cell (the report's decimals follow it)."""
        return {
            m: max((abs(r.metrics[m].mean) for r in self.rows if r.metrics[m].n), default=0.0)
            for m in self.metrics
        }

    def row(self, label: str) -> RowAnalysis:
        """The row with this label, or whose runs a row of this label shares (KeyError if absent)."""
        for r in self.rows:
            if label in r.labels:
                return r
        raise KeyError(label)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (NaN stays NaN; the JSON renderer turns it into null)."""
        d = asdict(replace(self, notes=[]))
        d["notes"] = [note_dict(n) for n in self.notes]
        d["contrasts"] = {m: [c.to_dict() for c in cs] for m, cs in self.contrasts.items()}
        for row, r in zip(d["rows"], self.rows, strict=True):
            row["failed"], row["pending"] = r.failed, r.pending
        return d
