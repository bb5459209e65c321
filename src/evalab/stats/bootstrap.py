"""Bootstrap percentile confidence intervals for any corpus metric.

The corpus is resampled with replacement ``n_samples`` times (same stream as sacrebleu's
``--confidence``), each resample is scored from its summed stats rows, and the interval is
read off the sorted resampled scores the way sacrebleu's ``estimate_ci`` does: with
``lower = floor(n_samples * (1 - confidence) / 2)`` (``n // 40`` at 95%) the interval is
``[sorted[lower], sorted[n_samples - lower - 1]]``, reported also as ``mean ± half-width``
where ``mean`` is the mean of the resampled scores.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from evalab.errors import OutOfRangeError
from evalab.stats.resampling import (
    DEFAULT_SEED,
    as_scorer,
    bootstrap_counts,
    check_n_samples,
    check_seed,
    compact_stats,
    resampled_sums,
    stats_matrix,
)

#: the key of one scorer and its stats in :func:`bootstrap_scores` (a metric's name, ...)
K = TypeVar("K")

__all__ = [
    "ConfidenceInterval",
    "bootstrap_ci",
    "check_confidence",
    "check_resampling",
    "percentile_interval",
]


def check_confidence(confidence: Any) -> float:
    """Validate a confidence level strictly between 0 and 1."""
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise OutOfRangeError("confidence", repr(confidence), "a number between 0 and 1")
    if not 0.0 < float(confidence) < 1.0:
        raise OutOfRangeError("confidence", confidence, "strictly between 0 and 1 (e.g. 0.95)")
    return float(confidence)


def check_resampling(n_samples: Any, confidence: Any, seed: Any) -> tuple[int, float, int]:
    """The settings of a bootstrap, each validated (resamples, then seed, then confidence):
    ``(n_samples, confidence, seed)`` as an int, a float and an int."""
    n = check_n_samples(n_samples)
    seed = check_seed(seed)
    return n, check_confidence(confidence), seed


@dataclass(frozen=True)
class ConfidenceInterval:
    """A bootstrap percentile interval around a corpus score.

    ``score`` is the metric on the full corpus, ``mean`` the mean of the resampled scores,
    ``low``/``high`` the percentile bounds; ``half_width`` is ``(high - low) / 2``, the
    ``±`` of sacrebleu's ``μ = mean ± half-width``.
    """

    score: float
    mean: float
    low: float
    high: float
    confidence: float
    n_samples: int
    seed: int

    @property
    def half_width(self) -> float:
        """Half the width of the interval."""
        return 0.5 * (self.high - self.low)

    @property
    def signature(self) -> str:
        """The resampling settings: ``bs:N|seed:S|conf:C`` (appended to a metric's signature)."""
        return f"bs:{self.n_samples}|seed:{self.seed}|conf:{self.confidence:g}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields: score, mean, ci_low, ci_high, half_width, confidence, n_samples, seed."""
        return {
            "score": self.score,
            "mean": self.mean,
            "ci_low": self.low,
            "ci_high": self.high,
            "half_width": self.half_width,
            "confidence": self.confidence,
            "n_samples": self.n_samples,
            "seed": self.seed,
        }

    def format(self, decimals: int = 2) -> str:
        """``score (mean ± half-width)`` with ``decimals`` decimals."""
        d = decimals
        return f"{self.score:.{d}f} ({self.mean:.{d}f} ± {self.half_width:.{d}f})"


def percentile_interval(scores: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """``(mean, low, high)`` of resampled ``scores`` at ``confidence`` (sacrebleu's indices).

    >>> percentile_interval(np.arange(40.0), 0.95)
    (19.5, 1.0, 38.0)
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    # resamples with an undefined score (NaN) carry no information about the spread
    values = np.sort(values[np.isfinite(values)])
    n = values.size
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    # floor(n * alpha / 2) = n // 40 at 95%; the epsilon keeps a product that rounding
    # left just below an integer (e.g. 39.99999999) at that integer
    lower = math.floor(n * (1.0 - confidence) / 2.0 + 1e-9)
    upper = n - lower - 1
    return float(values.mean()), float(values[lower]), float(values[upper])


def point_score(scorer: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> float:
    """The corpus score of ``rows``: ``scorer`` of their sums.

    A Metric's ``scores_from_sums`` scores one summed vector with its exact scalar
    arithmetic (BLEU's is sacrebleu's), so this is the score ``aggregate`` gives.
    """
    return float(np.asarray(scorer(rows.sum(axis=0))))


def bootstrap_scores(
    scorers: Mapping[K, Callable[[np.ndarray], np.ndarray]],
    stats: Mapping[K, np.ndarray],
    n_samples: int,
    seed: int,
    chunk_rows: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[K, np.ndarray]:
    """Scores of ``n_samples`` bootstrap resamples of every ``stats[key]`` ``[n, ...]`` under
    ``scorers[key]``: ``[n_samples, ...]`` each. One stream of resamples serves every key
    (the same ``n`` segments drawn for all); ``progress`` is called once per chunk."""
    n = next(iter(stats.values())).shape[0]
    # a bootstrap row's weights sum to n: the bound for exact float32 products
    compact = {key: compact_stats(rows, n) for key, rows in stats.items()}
    parts: dict[K, list[np.ndarray]] = {key: [] for key in scorers}
    for counts in bootstrap_counts(n, n_samples, seed, chunk_rows):
        for key, scorer in scorers.items():
            sums = resampled_sums(counts, compact[key])
            parts[key].append(np.asarray(scorer(sums), dtype=np.float64))
        if progress is not None:
            progress(counts.shape[0])
    return {key: np.concatenate(p, axis=0) for key, p in parts.items()}


def warn_if_tiny(n_segments: int) -> None:
    """Warn that resampling one segment cannot say anything about uncertainty."""
    if n_segments == 1:
        warnings.warn(
            "only one segment: every resample is the original corpus, so the interval is a "
            "single point and paired p-values carry no information",
            stacklevel=3,
        )


def bootstrap_ci(
    metric_or_scorer: Any,
    stats: Any,
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    *,
    chunk_rows: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> ConfidenceInterval:
    """Bootstrap percentile confidence interval of a corpus metric from its stats rows.

    ``metric_or_scorer`` is a :class:`~evalab.metrics.base.Metric` (its ``scores_from_sums``
    is used) or a vectorised callable; ``stats`` the :class:`~evalab.metrics.base.Stats`
    value of ``metric.stats(hyps, refs)`` (or its ``[n_segments, k]`` rows). The point
    score is the metric's corpus score (``metric.aggregate``); the resamples are
    sacrebleu's for the same seed. ``progress``, when given, is called with the number of
    resamples scored after each chunk (a progress display's ``advance``).

    >>> rows = np.array([[1.0, 1], [0, 1], [1, 1], [1, 1]])  # accuracy as (correct, count)
    >>> ci = bootstrap_ci(lambda s: s[..., 0] / s[..., 1], rows, n_samples=200, seed=0)
    >>> ci.score, ci.low <= ci.high
    (0.75, True)
    """
    scorer, _ = as_scorer(metric_or_scorer)
    rows = stats_matrix(stats, metric=metric_or_scorer)
    n_samples, confidence, seed = check_resampling(n_samples, confidence, seed)
    warn_if_tiny(rows.shape[0])
    point = point_score(scorer, rows)
    scores = bootstrap_scores({0: scorer}, {0: rows}, n_samples, seed, chunk_rows, progress)[0]
    mean, low, high = percentile_interval(scores, confidence)
    return ConfidenceInterval(point, mean, low, high, confidence, n_samples, seed)
