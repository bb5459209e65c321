"""Which metrics are significantly worse than the best: p-values and rank clusters.

Segment level: the PERM-BOTH permutation test of Deutsch et al. (2021) that the WMT
metrics task uses. Both metrics' segment scores are standardised (z-scores over the rated
cells), then in each trial every rated cell's two scores are swapped with probability ½
and both statistics recomputed; the p-value is the share of trials whose difference
(better minus worse) reaches the observed one. acc_eq with no grouping is the exception:
re-calibrating its threshold over every pair of cells (8.9 million on WMT21 en-de) on
every trial is out of reach, and mt-metrics-eval's shortcut (``PairwisePermutationSigDiff``,
:func:`evalab.metaeval.flat_ties.pairwise_permutation_p`) treats pairs that share a cell
as independent, which on that data calls a difference of 0.0001 significant (p < 0.001)
that the paired bootstrap does not (p = 0.27). It gets the paired bootstrap, as the
system level does, with the threshold re-calibrated on every resample.

System level (and acc_eq with no grouping): the bootstrap resamples of segments that give
the intervals are paired across metrics (the same resample scores every metric), and the p-value is the share of
resamples in which the worse metric's statistic reaches the better one's. A corpus metric's
system score is not a sum of segment scores, so swapping segments between two metrics
(as a permutation test would) is not defined for it; resampling is.

Clusters: metrics sorted best first; a new cluster starts at a metric that some metric of
the current cluster beats significantly (p < alpha). A metric's rank is its cluster's number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalab.metaeval.correlation import kendall_tau_b_swapped, pearson_rows
from evalab.metaeval.grouped import item_kendall, weighted_mean
from evalab.metaeval.statistics import SegmentData
from evalab.metaeval.ties import acc_eq_grouped_swapped

__all__ = ["PERMUTABLE", "bootstrap_p", "clusters", "permutation_p"]

#: segment-level statistics with a permutation test (acc_eq with no grouping: paired bootstrap)
PERMUTABLE = ("pearson", "kendall", "pearson_item", "kendall_item", "acc_eq_item")


def _zscores(d: SegmentData) -> np.ndarray:
    values = d.metric[d.mask]
    sd = values.std()
    out: np.ndarray = (d.metric - values.mean()) / (sd if sd > 0 else 1.0)
    return out


def permutation_p(
    stat: str, better: SegmentData, worse: SegmentData, n_trials: int, rng: np.random.Generator
) -> float:
    """PERM-BOTH p-value that ``better`` beats ``worse`` on segment-level ``stat``."""
    zb, zw = _zscores(better), _zscores(worse)
    ob, ow = _trials(stat, zb, zw, np.zeros((1, *zb.shape), dtype=bool), better)
    delta = ob[0] - ow[0]
    reached = 0
    for start in range(0, n_trials, _TRIALS_AT_ONCE):
        swap = rng.integers(2, size=(min(_TRIALS_AT_ONCE, n_trials - start), *zb.shape), dtype=bool)
        va, vb = _trials(stat, zb, zw, swap, better)
        reached += int(np.count_nonzero(va - vb >= delta - 1e-12))
    return reached / n_trials


def _trials(
    stat: str, zb: np.ndarray, zw: np.ndarray, swap: np.ndarray, like: SegmentData
) -> tuple[np.ndarray, np.ndarray]:
    """``stat`` of both pseudo-metrics of every trial: ``swap[t]`` takes ``zw``'s cells into the first."""
    if stat == "acc_eq_item":
        return acc_eq_grouped_swapped(zb, zw, swap, np.where(like.mask, like.human, 0.0), like.mask)
    if stat == "kendall":
        m = like.mask
        return kendall_tau_b_swapped(zb[m], zw[m], swap[:, m], like.human[m])
    a, b = np.where(swap, zw, zb), np.where(swap, zb, zw)
    return _values(stat, a, like), _values(stat, b, like)


#: permutation trials whose pseudo-metrics are built (and, for acc_eq, scored) together
_TRIALS_AT_ONCE = 100


def _values(stat: str, metrics: np.ndarray, like: SegmentData) -> np.ndarray:
    """``stat`` of each pseudo-metric ``metrics[t]`` ``[systems, segments]`` against the humans."""
    if stat == "pearson":
        return pearson_rows(metrics[:, like.mask], like.human[like.mask])
    one = np.ones((1, like.mask.shape[1]))
    if stat == "kendall_item":
        per_segment = np.concatenate(
            [
                item_kendall(metrics[a : a + _ITEM_ROWS], like.human, like.mask)
                for a in range(0, len(metrics), _ITEM_ROWS)
            ]
        )
        return np.array([np.atleast_1d(weighted_mean(v, one))[0] for v in per_segment])
    return np.array(
        [SegmentData(m, like.human, like.mask).resampled(stat, one)[0] for m in metrics]
    )


#: pseudo-metrics whose per-segment Kendall τ_b are computed at once ([rows, system pairs, segments])
_ITEM_ROWS = 16


def bootstrap_p(better: np.ndarray, worse: np.ndarray) -> float:
    """Share of paired resamples in which ``worse`` reaches ``better`` (NaN pairs skipped)."""
    ok = np.isfinite(better) & np.isfinite(worse)
    return float(np.mean(worse[ok] >= better[ok])) if ok.any() else float("nan")


def clusters(values: Sequence[float], p_matrix: np.ndarray, alpha: float) -> list[int]:
    """Rank (cluster number, from 1) of every metric; ``p_matrix[i, j]``: p that i beats j.

    >>> clusters([0.9, 0.8, 0.1], np.array([[1, .3, .01], [.7, 1, .02], [1, 1, 1]]), 0.05)
    [1, 1, 2]
    """
    order = sorted(
        range(len(values)),
        key=lambda i: (not np.isfinite(values[i]), -values[i] if np.isfinite(values[i]) else 0),
    )
    ranks = [0] * len(values)
    rank, members = 1, list[int]()
    for i in order:
        if members and any(p_matrix[m, i] < alpha for m in members):
            rank, members = rank + 1, []
        members.append(i)
        ranks[i] = rank
    return ranks
