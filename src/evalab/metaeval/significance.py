"""Which metrics are significantly worse than the best: p-values and rank clusters.

Segment level: the PERM-BOTH permutation test of Deutsch et al. (2021) that the WMT
metrics task uses. Both metrics' segment scores are standardised (z-scores over the rated
cells), then in each trial every rated cell's two scores are swapped with probability ½
and both statistics recomputed; the p-value is the share of trials whose difference
(better minus worse) reaches the observed one.

System level: the bootstrap resamples of segments that give the intervals are paired
across metrics (the same resample scores every metric), and the p-value is the share of
resamples in which the worse metric's statistic reaches the better one's. A corpus metric's
system score is not a sum of segment scores, so swapping segments between two metrics
(as a permutation test would) is not defined for it; resampling is.

Clusters: metrics sorted best first; a new cluster starts at a metric that some metric of
the current cluster beats significantly (p < alpha). A metric's rank is its cluster's number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalab.metaeval.statistics import SegmentData

__all__ = ["PERMUTABLE", "bootstrap_p", "clusters", "permutation_p"]

#: segment-level statistics with a permutation test (the others are quadratic per trial
#: (acc_eq with no grouping) or cost O(n log n) per trial per metric (Kendall, no grouping))
PERMUTABLE = ("pearson", "pearson_item", "kendall_item", "acc_eq_item")


def _zscores(d: SegmentData) -> np.ndarray:
    values = d.metric[d.mask]
    sd = values.std()
    return (d.metric - values.mean()) / (sd if sd > 0 else 1.0)


def permutation_p(
    stat: str, better: SegmentData, worse: SegmentData, n_trials: int, rng: np.random.Generator
) -> float:
    """PERM-BOTH p-value that ``better`` beats ``worse`` on segment-level ``stat``."""
    one = np.ones((1, better.mask.shape[1]))
    zb, zw = _zscores(better), _zscores(worse)

    def value(metric: np.ndarray) -> float:
        return float(SegmentData(metric, better.human, better.mask).resampled(stat, one)[0])

    delta = value(zb) - value(zw)
    reached = 0
    for _ in range(n_trials):
        swap = rng.integers(2, size=zb.shape, dtype=bool)
        a, b = np.where(swap, zw, zb), np.where(swap, zb, zw)
        reached += value(a) - value(b) >= delta - 1e-12
    return reached / n_trials


def bootstrap_p(better: np.ndarray, worse: np.ndarray) -> float:
    """Share of paired resamples in which ``worse`` reaches ``better`` (NaN pairs skipped)."""
    ok = np.isfinite(better) & np.isfinite(worse)
    return float(np.mean(worse[ok] >= better[ok])) if ok.any() else float("nan")


def clusters(values: Sequence[float], p_matrix: np.ndarray, alpha: float) -> list[int]:
    """Rank (cluster number, from 1) of every metric; ``p_matrix[i, j]``: p that i beats j.

    >>> clusters([0.9, 0.8, 0.1], np.array([[1, .3, .01], [.7, 1, .02], [1, 1, 1]]), 0.05)
    [1, 1, 2]
    """
    order = sorted(range(len(values)), key=lambda i: (not np.isfinite(values[i]), -values[i] if np.isfinite(values[i]) else 0))
    ranks = [0] * len(values)
    rank, members = 1, []
    for i in order:
        if members and any(p_matrix[m, i] < alpha for m in members):
            rank, members = rank + 1, []
        members.append(i)
        ranks[i] = rank
    return ranks
