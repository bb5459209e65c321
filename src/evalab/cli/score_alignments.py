"""``evalab score --align N`` and ``--errors K``: jiwer's alignments of the worst segments
and its error counts, for the WER and CER metrics among ``-m``.

The text and table are :mod:`evalab.report.word_alignment`'s; JSON gets them as data in
the result object of each WER/CER score (``alignments``, ``errors``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evalab.errors import SettingsError
from evalab.metrics.base import Metric, Stats
from evalab.metrics.wer import WER, error_counts
from evalab.report.table import Table
from evalab.report.word_alignment import (
    ALIGNED_METRICS,
    AlignedSegments,
    SystemErrors,
    alignment_data,
    alignment_text,
    error_table,
    errors_data,
)

__all__ = ["AlignmentResults", "alignment_results", "check_align_options"]

#: the formats ``--align`` writes: text after the table, or data in the JSON
ALIGN_FORMATS = ("table", "json")


def check_align_options(
    align: int | None, errors: int | None, metrics: Sequence[str], fmt: str
) -> None:
    """``--align N`` and ``--errors K``: at least 1, a WER/CER metric among ``-m``, and
    ``--align`` in a format that can hold its text (table) or data (json)."""
    for flag, value in (("--align", align), ("--errors", errors)):
        if value is None:
            continue
        if value < 1:
            raise SettingsError(
                f"{flag} must be at least 1 (the segments or errors shown), got {value}"
            )
        if not any(m in ALIGNED_METRICS for m in metrics):
            raise SettingsError(
                f"{flag} shows the alignments of wer or cer; none is among -m {' '.join(metrics)}"
            )
    if align is not None and fmt not in ALIGN_FORMATS:
        raise SettingsError(
            f"--align writes text alignments (-f table) or their data (-f json), not -f {fmt}"
        )


@dataclass(frozen=True)
class AlignmentResults:
    """What ``--align`` and ``--errors`` found, per system (its key) and WER/CER metric."""

    shown: Sequence[AlignedSegments]
    errors: Sequence[SystemErrors]
    #: the ``K`` of ``--errors`` (``None``: not asked)
    top: int | None

    def json_fields(self, system: str, metric: str) -> dict[str, Any]:
        """The fields the JSON result object of ``system`` and ``metric`` gains."""
        fields: dict[str, Any] = {}
        for s in self.shown:
            if (s.system, s.metric) == (system, metric):
                fields["alignments"] = alignment_data(s)
        for e in self.errors:
            if (e.system, e.metric) == (system, metric):
                fields["errors"] = errors_data(e.errors)
        return fields

    def tables(self, short: Mapping[str, str]) -> list[Table]:
        """The error-count table (when asked), systems under their table names."""
        if self.top is None:
            return []
        return [
            error_table(
                [replace(e, system=short.get(e.system, e.system)) for e in self.errors], self.top
            )
        ]

    def text(self, short: Mapping[str, str]) -> str:
        """The alignments as text, systems under their table names ('' when not asked)."""
        if not self.shown:
            return ""
        return "\n" + alignment_text(
            [replace(s, system=short.get(s.system, s.system)) for s in self.shown]
        )


def alignment_results(
    built: Mapping[str, Metric],
    systems: Mapping[str, Sequence[str]],
    refs: Sequence[Sequence[str | None]],
    table: Mapping[str, Mapping[str, Stats]],
    align: int | None,
    errors: int | None,
) -> AlignmentResults:
    """The worst ``align`` segments' alignments and the ``errors`` most frequent errors of
    every system for each WER/CER metric of ``built``."""
    shown, counted = [], []
    for sys_name, hyps in systems.items():
        for name, metric in built.items():
            if name not in ALIGNED_METRICS or not isinstance(metric, WER):
                continue
            rows = table[name][sys_name].rows
            if align is not None:
                worst = metric.worst_segments(rows, align)
                scores = [float(v) for v in metric.scores_from_sums(rows[worst])] if worst else []
                found = metric.alignments(hyps, refs, worst)
                shown.append(
                    AlignedSegments(sys_name, name, found, scores, metric.separator == " ")
                )
            if errors is not None:
                wrong = [int(k) for k in np.flatnonzero(rows[:, 1:].sum(axis=1))]
                every = metric.alignments(hyps, refs, wrong)  # the others add no error
                counts = error_counts(every, metric.separator).top(errors)
                counted.append(SystemErrors(sys_name, name, counts))
    return AlignmentResults(shown, counted, errors)
