"""All pairs of cells, enumerated in bounded batches in increasing order of metric difference.

acc_eq with no grouping sorts every pair of rated cells by its absolute metric difference
(35 million pairs for 8 432 cells). Building all pairs and then sorting them holds several
copies of the whole list (indices, differences, keys, the sort's permutation). Here the
cells are sorted by metric score once; for a difference band ``[lo, hi)`` the partners
``j > i`` of cell ``i`` with ``xs[j] - xs[i]`` in the band are one contiguous run of the
sorted cells (the computed difference is monotone in ``xs[j]``), found by a binary search
on the exact float difference. Bands are chosen so that each holds about ``batch`` pairs;
a batch is sorted by itself, so the batches in order are the global order and only one
batch's temporaries exist at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from evalab import _kernel

__all__ = ["band_indices", "pair_bands", "pair_batches"]

#: pairs enumerated at once (bounds the batch temporaries, about 60 bytes a pair; a band's
#: pairs stay in the L2 cache while they are sorted and merged)
BATCH_PAIRS = 1 << 16
#: cells sampled to place the band edges (their pairs' differences give the quantiles)
_SAMPLE_CELLS = 600


def _first_at_least(xs: np.ndarray, t: float) -> np.ndarray:
    """Per cell ``i``, the first ``j > i`` with ``xs[j] - xs[i] >= t`` (``len(xs)`` if none).

    The compiled kernel sweeps once (the answer never decreases with ``i``); numpy bisects.
    """
    if _kernel.ties is not None:
        return np.frombuffer(_kernel.ties.first_at_least(xs, t), np.int64)
    n = len(xs)
    lo = np.arange(1, n + 1)
    hi = np.full(n, n)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        ok = np.zeros(n, dtype=bool)
        idx = np.flatnonzero(open_)
        ok[idx] = xs[mid[idx]] - xs[idx] >= t
        hi = np.where(open_ & ok, mid, hi)
        lo = np.where(open_ & ~ok, mid + 1, lo)


def _edges(xs: np.ndarray, batch: int) -> np.ndarray:
    """Band edges ``0 < e_1 < ... `` so that each band holds about ``batch`` pairs."""
    n = len(xs)
    bands = -(-(n * (n - 1) // 2) // batch)
    if bands <= 1:
        return np.zeros(0)
    sample = xs[np.linspace(0, n - 1, min(n, _SAMPLE_CELLS)).astype(np.int64)]
    i, j = np.triu_indices(len(sample), k=1)
    diffs = sample[j] - sample[i]
    edges = np.unique(np.quantile(diffs, np.arange(1, bands) / bands))
    out: np.ndarray = edges[edges > 0]
    return out


def pair_bands(xs: np.ndarray, batch: int = BATCH_PAIRS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(start, stop)`` per band: cell ``i``'s partners ``j`` are ``start[i] <= j < stop[i]``.

    Every difference ``xs[j] - xs[i]`` of a band is below every difference of the bands
    after it (a run of equal differences never straddles two bands); each band holds
    about ``batch`` pairs, every pair ``i < j`` of the sorted ``xs`` is in one band.
    """
    n = len(xs)
    if n < 2:
        return
    start = np.arange(1, n + 1)
    for edge in [*_edges(xs, batch), np.inf]:
        stop = np.full(n, n) if edge == np.inf else _first_at_least(xs, float(edge))
        yield start, stop
        start = stop


def band_indices(start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``(i, j)`` index arrays of one band, ``i`` ascending and ``j`` ascending for each ``i``."""
    lens = stop - start
    total = int(lens.sum())
    i = np.repeat(np.arange(len(start), dtype=np.int32), lens)
    # j = start[i] + rank of the pair among i's: one running count, reset at each i
    has = lens > 0
    heads, first, last = (np.cumsum(lens) - lens)[has], start[has], stop[has] - 1
    step = np.ones(total, dtype=np.int32)
    step[heads] = first - np.r_[0, last[:-1]]
    j = np.cumsum(step, dtype=np.int32)
    return i, j


def pair_batches(
    xs: np.ndarray, batch: int = BATCH_PAIRS
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(i, j)`` index arrays (``i < j``) of every pair of the sorted ``xs``, once each:
    the pairs of each non-empty band of :func:`pair_bands` in turn (:func:`band_indices`)."""
    for start, stop in pair_bands(xs, batch):
        if (stop - start).sum():
            yield band_indices(start, stop)
