"""A test-only metric: the mean of numbers written one per line (stats: value, count).

Small enough to check every resampling result against a brute-force loop, and additive
like every evalab metric, so it exercises exactly the code paths BLEU/chrF use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalab.metrics.base import Metric, MetricSettings


@dataclass(frozen=True)
class MeanSettings(MetricSettings):
    pass


class MeanMetric(Metric):
    name = "mean"
    settings_class = MeanSettings

    @property
    def stat_names(self) -> tuple[str, ...]:
        return ("total", "count")

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        values = np.array([float(h) if h.strip() else 0.0 for h in hypotheses])
        return np.column_stack([values, np.ones_like(values)])

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums, dtype=np.float64)
        return sums[..., 0] / sums[..., 1]

    def _signature_fields(self, nrefs: int | None) -> list[tuple[str, str]]:
        return [("nrefs", str(nrefs))]


def mean_rows(values) -> np.ndarray:
    """Stats rows of MeanMetric for an array of values."""
    values = np.asarray(values, dtype=np.float64)
    return np.column_stack([values, np.ones_like(values)])


def mean_scorer(sums: np.ndarray) -> np.ndarray:
    return sums[..., 0] / sums[..., 1]
