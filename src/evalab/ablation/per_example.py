"""Per-example statistics of one run: what test-set uncertainty is computed from.

A run has per-example data when the study computes a metric from a file the run wrote
(``[metrics.NAME]`` with ``outputs``: evalab scores the file and keeps the metric's
per-segment statistics rows) or when the run returns per-example values for a mean-type
metric (``"per_example": {"acc": [1, 0, 1, ...]}``: rows ``[value, 1]``).

Either way the run's value of the metric is ``scores_from_sums(rows.sum(0))`` and a resample
of the test set with example counts ``c`` (shape ``[B, n]``) scores as
``scores_from_sums(c @ rows)``: the additive statistics contract of ``metrics/base.py``,
which makes a bootstrap over examples one matrix product.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ExampleStats:
    """One metric of one run, per test example.

    ``rows`` is ``[n_examples, k]`` in the test set's order (the same order in every run of
    a study, so rows of two runs pair example by example); ``scores_from_sums`` maps summed
    rows of shape ``[..., k]`` to the metric on the scale of the run's stored value.
    """

    metric: str
    rows: np.ndarray
    scores_from_sums: Callable[[np.ndarray], np.ndarray]

    @property
    def n_examples(self) -> int:
        return int(self.rows.shape[0])

    def value(self) -> float:
        """The run's value of the metric (all examples)."""
        return float(self.scores_from_sums(self.rows.sum(axis=0)))

    def resampled(self, counts: np.ndarray) -> np.ndarray:
        """Values under resamples given as example counts of shape ``[B, n_examples]``."""
        return np.asarray(self.scores_from_sums(counts @ self.rows), dtype=float)


def mean_rows(values: np.ndarray | list[float]) -> np.ndarray:
    """Rows ``[value, 1]`` for per-example values of a mean-type metric."""
    v = np.asarray(values, dtype=float).reshape(-1)
    return np.column_stack([v, np.ones_like(v)])


def mean_of_rows(sums: np.ndarray) -> np.ndarray:
    """``scores_from_sums`` of :func:`mean_rows`: the mean (NaN for an empty resample)."""
    sums = np.asarray(sums, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[..., 0] / sums[..., 1]
