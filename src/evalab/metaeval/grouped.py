"""Segment-level correlations "grouped by item": across systems within each segment.

Scores are ``[systems, segments]`` matrices with a mask of the rated cells. Each segment
gets the correlation of its rated systems' metric and human scores; segments with fewer
than two rated systems, or whose correlation is undefined (every score tied), are left
out, and the statistic is the mean over the rest (mt-metrics-eval's ``average_by="item"``).
A bootstrap resample of segments is then a weighted mean of the same per-segment values.

The per-segment statistics compare every pair of systems at once (vectorised over
segments): with a handful of systems per segment this is the cheapest exact form.
"""

from __future__ import annotations

import numpy as np

__all__ = ["item_kendall", "item_pearson", "weighted_mean"]


def item_kendall(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Kendall's τ_b across systems of every segment (NaN where undefined).

    ``x`` may hold several metrics, ``[..., systems, segments]`` (the counts are sums of
    small integers, so each metric's values are the ones it gets alone).
    """
    a, b = np.triu_indices(x.shape[-2], k=1)
    pair_rated = mask[a] & mask[b]
    valid = pair_rated.astype(np.float64)
    sy = np.sign(np.where(mask, y, 0.0)[a] - np.where(mask, y, 0.0)[b])
    n0 = valid.sum(axis=0)
    n2 = (valid * (sy == 0)).sum(axis=0)
    if np.isfinite(x).all():
        # the signs as bytes: the same integer counts, a quarter of the memory traffic
        xa, xb = x[..., a, :], x[..., b, :]
        sx = (xa > xb).view(np.int8) - (xa < xb).view(np.int8)
        n1 = np.count_nonzero((sx == 0) & pair_rated, axis=-2).astype(np.float64)
        s = (sx * (valid * sy).astype(np.int8)).sum(axis=-2).astype(np.float64)
    else:  # a NaN score leaves its pairs' segments undefined
        sx_nan = np.sign(x[..., a, :] - x[..., b, :])
        n1 = (valid * (sx_nan == 0)).sum(axis=-2)
        s = (valid * sx_nan * sy).sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / (np.sqrt(n0 - n1) * np.sqrt(n0 - n2))
    return np.where((n0 - n1 > 0) & (n0 - n2 > 0), np.clip(tau, -1.0, 1.0), np.nan)


def item_pearson(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Pearson's r across systems of every segment (NaN where undefined)."""
    w = mask.astype(np.float64)
    y = np.where(mask, y, 0.0)
    n = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = np.where(mask, x - (w * x).sum(axis=0) / n, 0.0)
        dy = np.where(mask, y - (w * y).sum(axis=0) / n, 0.0)
        sxx, syy = (dx * dx).sum(axis=0), (dy * dy).sum(axis=0)
        r = (dx * dy).sum(axis=0) / (np.sqrt(sxx) * np.sqrt(syy))
    return np.where((n >= 2) & (sxx > 0) & (syy > 0), np.clip(r, -1.0, 1.0), np.nan)


def weighted_mean(values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Mean of the defined (non-NaN) per-segment values; ``weights`` ``[B, segments]``.

    >>> weighted_mean(np.array([0.5, np.nan, 1.0]))
    0.75
    """
    ok = np.isfinite(values)
    v = np.where(ok, values, 0.0)
    if weights is None:
        return float(v.sum() / ok.sum()) if ok.any() else float("nan")
    w = np.atleast_2d(weights) * ok
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (w @ v) / total, np.nan)
