"""Soft pairwise accuracy (WMT24's system-level meta-evaluation; Thompson et al. 2024).

Pairwise accuracy asks whether a metric orders each pair of systems as people do; soft
pairwise accuracy asks how *confidently*: for every pair ``(i, j)`` a paired permutation
test gives the p-value of "system i is better than j", once from the human scores and once
from the metric's, and

    SPA = 1 - mean over pairs i < j of |p_human(i, j) - p_metric(i, j)|.

The test is mt-metrics-eval's ``pce.compute_pairwise_p_values``: system scores are sums of
segment scores; each of ``n_permutations`` trials swaps every segment's two scores with
probability ½ (a ±1 sign per segment, drawn once and shared by every pair); the p-value is
the share of trials whose difference is at least the observed one. The signs are drawn as
it draws them (``default_rng(seed).random((n_permutations, segments), dtype=float32)``
rounded, seed 4 by default) and the sums made in float32 as it makes them, so the same
scores give the same p-values and the same SPA as ``stats.PairwiseConfidenceError``, up to
one thing: where a trial's difference ties the observed one within float32 rounding (human
MQM scores are discrete and tie often), the count can go either way with the summation order
BLAS picks, in the oracle itself too (the same scores at another place in memory give p-values
0.002 apart). The test states that tolerance: the mean number of such ties per pair, over
the number of permutations.

In ``meta-eval`` (:class:`SoftPairwise`) it is computed on the segments every system was
rated on (mt-metrics-eval filters the human ``None`` cells and needs the rest to form a
``[systems, segments]`` matrix), and on each bootstrap resample of segments, so an interval
and the paired bootstrap clusters come as for every system-level statistic. A resample's
``L`` drawn segments (one drawn twice is two segments, each with its own sign) are tested
with the first ``L`` columns of one ``[permutations, all segments]`` draw of signs (seed 4),
drawn once for every resample: drawing the oracle's own ``[permutations, L]`` signs for each
resample would cost more than the test itself, and any fair draw of signs is the same test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from evalab.errors import InputError

__all__ = [
    "DEFAULT_PERMUTATIONS",
    "PCE_SEED",
    "SoftPairwise",
    "pairwise_p_values",
    "soft_pairwise_accuracy",
]

#: mt-metrics-eval's defaults
DEFAULT_PERMUTATIONS = 1000
PCE_SEED = 4


def _signs(n_permutations: int, n_segments: int, seed: int) -> np.ndarray:
    """``[permutations, segments]`` float32 ±1: which segments each trial swaps."""
    signs = np.random.default_rng(seed).random(size=(n_permutations, n_segments), dtype=np.float32)
    np.rint(signs, out=signs, casting="same_kind")
    signs *= 2.0
    signs -= 1.0
    return signs


def pairwise_p_values(
    scores: np.ndarray, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = PCE_SEED
) -> np.ndarray:
    """``[systems, systems]``: above the diagonal, the p-value of "row is better than column".

    ``scores`` are ``[systems, segments]`` segment scores, higher better.
    """
    seg = np.asarray(scores, dtype=np.float64)
    if seg.ndim != 2 or seg.shape[0] < 2 or seg.shape[1] < 1:
        raise InputError(
            f"soft pairwise accuracy needs [systems >= 2, segments] scores, got {seg.shape}"
        )
    if not np.isfinite(seg).all():
        raise InputError(
            "soft pairwise accuracy needs every system scored on every segment (no missing "
            "or infinite score): keep the segments every system was rated on"
        )
    return _p_values(_signs(n_permutations, seg.shape[1], seed), seg)


def _p_values(signs: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """The p-value matrix of ``seg`` ``[systems, segments]`` under the trials ``signs``."""
    seg32 = seg.astype(np.float32)
    return _p_of(np.matmul(signs, seg32.T), np.sum(seg32, axis=1))


def _p_of(partial: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """P-values from the trials' signed sums ``[trials, systems]`` and the observed sums."""
    s = totals.shape[0]
    i, j = np.triu_indices(s, k=1)
    out = np.full((s, s), np.nan)
    # float32 differences, element for element those of the oracle's loop over pairs
    out[i, j] = np.count_nonzero(partial[:, i] - partial[:, j] >= totals[i] - totals[j], axis=0)
    out[i, j] /= partial.shape[0]
    return out


def _one_minus_error(p_human: np.ndarray, p_metric: np.ndarray) -> float:
    upper = np.triu_indices(p_human.shape[0], k=1)
    return float(1.0 - np.mean(np.abs(p_human - p_metric)[upper]))


def soft_pairwise_accuracy(
    human: np.ndarray,
    metric: np.ndarray,
    *,
    higher_is_better: bool = True,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = PCE_SEED,
) -> float:
    """SPA of a metric's ``[systems, segments]`` scores against the humans' (higher better).

    A lower-is-better metric (TER, MetricX) is negated first, so its p-values are about the
    same "i is better than j" as the humans'.
    """
    h = np.asarray(human, dtype=np.float64)
    m = np.asarray(metric, dtype=np.float64)
    if h.shape != m.shape:
        raise InputError(f"human scores {h.shape} and metric scores {m.shape} differ in shape")
    p_h = pairwise_p_values(h, n_permutations, seed)
    p_m = pairwise_p_values(m if higher_is_better else -m, n_permutations, seed)
    return _one_minus_error(p_h, p_m)


@dataclass(frozen=True)
class SoftPairwise:
    """SPA against one human ``[systems, segments]`` matrix, on the segments all systems were
    rated on (``columns``), on the full data and on bootstrap resamples of segments."""

    human: np.ndarray
    #: the segments (of all) rated for every system, in order
    columns: np.ndarray
    n_permutations: int = DEFAULT_PERMUTATIONS
    seed: int = PCE_SEED

    @classmethod
    def rated_by_all(cls, human: np.ndarray) -> SoftPairwise | None:
        """On the segments whose every cell is rated (None where there is none)."""
        columns = np.flatnonzero(np.isfinite(human).all(axis=0))
        return cls(human, columns) if columns.size else None

    def point(self, metric: np.ndarray) -> float:
        """SPA of a metric's ``[systems, segments]`` scores (higher better) on the full data."""
        c = self.columns
        return soft_pairwise_accuracy(
            self.human[:, c], metric[:, c], n_permutations=self.n_permutations, seed=self.seed
        )

    def resampled(self, metrics: Sequence[np.ndarray], counts: np.ndarray) -> np.ndarray:
        """``[metrics, B]``: SPA of each metric on each resample (``counts`` ``[B, segments]``:
        how often each segment is drawn); NaN where a resample draws none of the columns."""
        out = np.full((len(metrics), counts.shape[0]), np.nan)
        n_sys = self.human.shape[0]
        # the humans' and every metric's scores in one matrix: one product per resample
        stacked = np.concatenate([self.human, *metrics]).astype(np.float32)
        drawn = np.rint(counts[:, self.columns]).astype(np.int64)
        for b, k in enumerate(drawn):
            idx = np.repeat(self.columns, k)
            if idx.size == 0:
                continue
            seg = stacked[:, idx]
            partial = np.matmul(self._resample_signs[:, : idx.size], seg.T)
            totals = np.sum(seg, axis=1)
            p = [
                _p_of(partial[:, a : a + n_sys], totals[a : a + n_sys])
                for a in range(0, stacked.shape[0], n_sys)
            ]
            out[:, b] = [_one_minus_error(p[0], q) for q in p[1:]]
        return out

    @cached_property
    def _resample_signs(self) -> np.ndarray:
        # a resample draws at most every segment (its counts sum to the number of segments)
        return _signs(self.n_permutations, self.human.shape[1], self.seed)
