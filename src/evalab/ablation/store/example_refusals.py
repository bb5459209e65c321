"""Why a row has no test-set interval: typed refusals of its runs' per-example data.

Each is a frozen dataclass named by its ``code`` and holding what the report cites; the
analysis lists them beside its notes (:mod:`evalab.ablation.analysis.note_kinds`),
``ablate status`` names the unreadable ones, and :mod:`evalab.report.notes` words them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class UnreadableExamples:
    """No test-set interval: a run's per-example data could not be read (``error`` is the
    refusal's one line, an exception message)."""

    code: ClassVar[str] = "unreadable_examples"
    row: str
    seed: int
    error: str


@dataclass(frozen=True)
class ExampleMismatch:
    """No test-set interval: a run's per-example data does not reproduce its stored value."""

    code: ClassVar[str] = "example_mismatch"
    metric: str
    row: str
    seed: int
    value: float
    stored: float | None


@dataclass(frozen=True)
class ExampleGap:
    """No test-set interval: ``lacking`` finished runs of row ``of`` (the row itself, or the
    row its Δ is taken to) have no usable per-example data."""

    code: ClassVar[str] = "example_gap"
    metric: str
    row: str
    of: str
    of_compared: bool  # ``of`` is the row Δ is taken to
    finished: int
    lacking: tuple[int, ...]


@dataclass(frozen=True)
class SizeMismatch:
    """No test-set interval: the row's runs were scored on test sets of different sizes."""

    code: ClassVar[str] = "size_mismatch"
    metric: str
    row: str
    sizes: tuple[int, ...]


#: a refusal of a row's test-set interval
Refusal = UnreadableExamples | ExampleMismatch | ExampleGap | SizeMismatch
