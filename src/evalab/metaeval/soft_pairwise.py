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
"""

from __future__ import annotations

import numpy as np

from evalab.errors import InputError

__all__ = ["DEFAULT_PERMUTATIONS", "PCE_SEED", "pairwise_p_values", "soft_pairwise_accuracy"]

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
    seg32 = seg.astype(np.float32)
    totals = np.sum(seg32, axis=1)
    partial = np.matmul(_signs(n_permutations, seg.shape[1], seed), seg32.T)
    s = seg.shape[0]
    out = np.full((s, s), np.nan)
    for i in range(s):
        for j in range(i + 1, s):
            null = partial[:, i] - partial[:, j]
            out[i, j] = np.sum(null >= totals[i] - totals[j]) / n_permutations
    return out


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
    upper = np.triu_indices(h.shape[0], k=1)
    return float(1.0 - np.mean(np.abs(p_h - p_m)[upper]))
