"""Correlation statistics between metric and human scores, batched over resamples.

Every function takes the scores of the items (``x`` = metric, ``y`` = human, 1-D) and
optional integer ``weights``: how often each item occurs, one row per resample
(``[B, n]``). A statistic with weights equals the statistic of the expanded sample (each
item repeated ``weight`` times), so a bootstrap resample of segments is a weight matrix and
the sort that Kendall's τ needs is done once for all resamples.

Kendall's τ_b counts discordant pairs in O(n log n): items are sorted by ``(x, y)`` and
the inversions of ``y`` are counted one bit of its rank at a time (a radix form of the
Fenwick-tree count that scipy and mt-metrics-eval use), each level a stable partition and a
cumulative sum that numpy runs for all resamples at once.
"""

from __future__ import annotations

import numpy as np

from evalab import _kernel

__all__ = [
    "kendall_tau_b",
    "kendall_tau_b_rows",
    "kendall_tau_b_swapped",
    "pairwise_accuracy",
    "pearson",
    "pearson_rows",
]


def _weights(n: int, weights: np.ndarray | None) -> np.ndarray:
    if weights is None:
        return np.ones((1, n))
    return np.atleast_2d(np.asarray(weights, dtype=np.float64))


def _squeeze(values: np.ndarray, weights: np.ndarray | None) -> np.ndarray | float:
    if weights is None or np.ndim(weights) == 1:
        return float(values[0])
    return values


def pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Pearson's r of ``x`` and ``y`` (NaN when either is constant).

    >>> round(pearson(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 7.0])), 6)
    0.993399
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = _weights(len(x), weights)
    total = w.sum(axis=1)
    # centring first keeps the sums of squares accurate (scipy centres too)
    mx = (w @ x) / total
    my = (w @ y) / total
    return _squeeze(_centred_r(x[None, :] - mx[:, None], y[None, :] - my[:, None], w), weights)


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of every row of ``x`` ``[T, n]`` against the same ``y``: ``pearson(row, y)``.

    The permutation test's pseudo-metrics in one pass; each row's mean is the same matrix
    product as :func:`pearson`'s and its sums the same row reductions, so the values are
    :func:`pearson`'s, bit for bit.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64)
    w = _weights(x.shape[1], None)
    total = w.sum(axis=1)
    mx = np.concatenate([(w @ row) / total for row in x])
    my = (w @ y) / total
    return _centred_r(x - mx[:, None], y[None, :] - my[:, None], w)


def _centred_r(dx: np.ndarray, dy: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r per row of the centred scores ``dx``, ``dy`` with weights ``w``."""
    sxy = (w * dx * dy).sum(axis=1)
    sxx = (w * dx * dx).sum(axis=1)
    syy = (w * dy * dy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sxy / (np.sqrt(sxx) * np.sqrt(syy))
    out: np.ndarray = np.where((sxx > 0) & (syy > 0), np.clip(r, -1.0, 1.0), np.nan)
    return out


def _dense_ranks(sorted_values: np.ndarray) -> np.ndarray:
    """Dense ranks (0, 1, ...) of an already sorted vector."""
    out: np.ndarray = np.r_[0, np.cumsum(sorted_values[1:] != sorted_values[:-1])]
    return out


def _tied_pairs(w: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Weighted pairs inside contiguous groups of items starting at ``starts``: Σ_g C(W_g, 2).

    ``w`` is items × resamples (each item's weights contiguous, so gathers copy rows).
    """
    sums = np.add.reduceat(w, starts, axis=0)
    out: np.ndarray = 0.5 * (sums * sums - sums).sum(axis=0)
    return out


def _inversions(ranks: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted pairs ``i < j`` with ``ranks[i] > ranks[j]``, for every weight column.

    Two ranks that differ first at bit ``b`` share the bits above it; the pair is an
    inversion when the earlier item has bit ``b`` set. For each bit, a stable sort by the
    higher bits lines up each prefix group in item order, and a cumulative sum of the
    weights of set-bit items gives every clear-bit item its inversions at that bit. The
    orders depend on ``ranks`` only, so one gather per bit serves every resample.
    """
    total = np.zeros(w.shape[1])
    # integer weights (bootstrap counts) are summed exactly in int64; others in float64
    integral = bool(np.all(w == np.round(w)))
    wk = w.astype(np.int64 if integral else np.float64)
    n_ranks = int(ranks.max()) + 1 if len(ranks) else 1
    # the kernel's int64 counts equal the levels' float sum while below 2^52 (2^26 items)
    if _kernel.ties is not None and integral and float(np.abs(w).sum(axis=0).max()) < 2**26:
        out = _kernel.ties.weighted_inversions(
            np.ascontiguousarray(ranks, dtype=np.int64),
            np.ascontiguousarray(wk),
            n_ranks,
            w.shape[1],
        )
        return np.frombuffer(out, np.int64).astype(np.float64)
    levels = max(1, int(ranks.max()).bit_length())
    for b in range(levels):
        prefix = ranks >> (b + 1)
        order = np.argsort(prefix, kind="stable")
        bit = ((ranks[order] >> b) & 1).astype(bool)
        if not bit.any() or bit.all():
            continue
        set_pos, clear_pos = np.flatnonzero(bit), np.flatnonzero(~bit)
        sorted_prefix = prefix[order]
        # set-bit weight up to each clear-bit item, minus that before its prefix group
        group_start = np.searchsorted(sorted_prefix, sorted_prefix[clear_pos], side="left")
        upto = np.searchsorted(set_pos, clear_pos)  # set-bit items before the item
        before_group = np.searchsorted(set_pos, group_start)
        cum = np.zeros((len(set_pos) + 1, w.shape[1]), dtype=wk.dtype)
        np.cumsum(wk[order[set_pos]], axis=0, out=cum[1:])
        inside = cum[upto] - cum[before_group]
        total += np.einsum("ib,ib->b", wk[order[clear_pos]], inside).astype(np.float64)
    return total


def kendall_tau_b(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray | float:
    """Kendall's τ_b of ``x`` and ``y`` in O(n log n) (NaN when either is constant).

    Equals ``scipy.stats.kendalltau(x, y).statistic`` (variant b) of the expanded sample.

    >>> round(kendall_tau_b(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0])), 12)
    0.666666666667
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = _weights(len(x), weights)
    if len(np.unique(y)) > len(np.unique(x)):
        x, y = y, x  # τ is symmetric; counting inversions of the fewer ranks takes fewer bits
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    ws = np.ascontiguousarray(w.T[order])  # items × resamples
    x_starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    xy_starts = np.flatnonzero(np.r_[True, (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])])
    by_y = np.argsort(ys, kind="stable")
    y_sorted = ys[by_y]
    y_starts = np.flatnonzero(np.r_[True, y_sorted[1:] != y_sorted[:-1]])
    total = ws.sum(axis=0)
    n0 = 0.5 * (total * total - total)
    n1 = _tied_pairs(ws, x_starts)
    n2 = _tied_pairs(ws[by_y], y_starts)
    n3 = _tied_pairs(ws, xy_starts)
    y_ranks = np.empty(len(ys), dtype=np.int64)
    y_ranks[by_y] = _dense_ranks(y_sorted)
    dis = _inversions(y_ranks, ws)
    con = n0 - n1 - n2 + n3 - dis
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (con - dis) / (np.sqrt(n0 - n1) * np.sqrt(n0 - n2))
    tau = np.where((n0 - n1 > 0) & (n0 - n2 > 0), np.clip(tau, -1.0, 1.0), np.nan)
    return _squeeze(tau, weights)


#: most distinct ``y`` values for the class-count form of :func:`kendall_tau_b_rows`
_FEW_CLASSES = 64
#: rows of :func:`kendall_tau_b_rows` counted at once (bounds the [rows, n, classes] counts)
_ROWS_AT_ONCE = 32


def kendall_tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ_b of every row of ``x`` ``[T, n]`` against the same ``y`` ``[n]``.

    The permutation test scores a thousand pseudo-metrics against one human vector. When
    ``y`` has few distinct values (MQM scores have a few dozen), each row is sorted by
    ``(x, y)`` in one batched sort and its discordant pairs are counted from running counts
    of the ``y`` classes; otherwise the rows go one by one through :func:`kendall_tau_b`.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    values, classes = np.unique(np.asarray(y, dtype=np.float64), return_inverse=True)
    if len(values) > _FEW_CLASSES:
        return np.array([kendall_tau_b(row, y) for row in x])
    return np.concatenate(
        [
            _tau_few_classes(x[a : a + _ROWS_AT_ONCE], classes, len(values))
            for a in range(0, len(x), _ROWS_AT_ONCE)
        ]
    )


def _tau_few_classes(x: np.ndarray, classes: np.ndarray, k: int) -> np.ndarray:
    by_y = np.argsort(classes, kind="stable")
    order = np.argsort(x[:, by_y], axis=1, kind="stable")  # by x, then (stable) by y
    xs = np.take_along_axis(x[:, by_y], order, axis=1)
    cs = classes[by_y][order]
    n = x.shape[1]
    n0 = n * (n - 1) / 2
    per_class = np.bincount(classes, minlength=k).astype(np.float64)
    n2 = (per_class * (per_class - 1) / 2).sum()
    new_x = np.c_[np.ones((len(x), 1), bool), xs[:, 1:] != xs[:, :-1]]
    new_xy = new_x | np.c_[np.zeros((len(x), 1), bool), cs[:, 1:] != cs[:, :-1]]
    n1, n3 = _run_pairs(new_x), _run_pairs(new_xy)
    return _tau_of_counts(n0, n1, n2, n3, _class_inversions(cs, k).astype(np.float64))


def _tau_of_counts(
    n0: float, n1: np.ndarray, n2: float, n3: np.ndarray, dis: np.ndarray
) -> np.ndarray:
    """τ_b from the pair counts: all, tied in x, tied in y, tied in both, discordant."""
    con = n0 - n1 - n2 + n3 - dis
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (con - dis) / (np.sqrt(n0 - n1) * np.sqrt(n0 - n2))
    out: np.ndarray = np.where((n0 - n1 > 0) & (n0 - n2 > 0), np.clip(tau, -1.0, 1.0), np.nan)
    return out


def kendall_tau_b_swapped(
    better: np.ndarray, worse: np.ndarray, swap: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """τ_b against ``y`` of ``where(swap[t], worse, better)`` and ``where(swap[t], better, worse)``.

    The permutation test's pseudo-metrics: ``better``, ``worse`` and ``y`` are ``[n]``,
    ``swap`` ``[T, n]``; ``[T]`` each. The compiled kernel sorts each metric's cells by
    ``(score, y)`` once and merges the two sorted lists per trial (one linear pass); it
    gives :func:`kendall_tau_b_rows`'s numbers, which are exact counts until the last step.
    """
    kernel = _kernel.ties
    finite = bool(np.isfinite(better).all() and np.isfinite(worse).all())
    if kernel is None or not finite or len(y) < 2:
        return (
            kendall_tau_b_rows(np.where(swap, worse, better), y),
            kendall_tau_b_rows(np.where(swap, better, worse), y),
        )
    values, classes = np.unique(np.asarray(y, dtype=np.float64), return_inverse=True)
    xb = np.ascontiguousarray(better, dtype=np.float64)
    xw = np.ascontiguousarray(worse, dtype=np.float64)
    args = (
        xb,
        xw,
        classes.astype(np.int32),
        np.lexsort((classes, xb)).astype(np.int64),
        np.lexsort((classes, xw)).astype(np.int64),
        np.ascontiguousarray(swap, dtype=np.uint8),
        len(values),
        len(swap),
    )
    n = len(y)
    per_class = np.bincount(classes, minlength=len(values)).astype(np.float64)
    n2 = (per_class * (per_class - 1) / 2).sum()
    out = []
    for side in (0, 1):
        counts = np.frombuffer(kernel.swapped_tau_counts(*args, side), np.int64).reshape(-1, 3)
        n1, n3, dis = counts.T.astype(np.float64)
        out.append(_tau_of_counts(n * (n - 1) / 2, n1, n2, n3, dis))
    return out[0], out[1]


def _class_inversions(cs: np.ndarray, k: int) -> np.ndarray:
    """Per row of ``cs`` ``[rows, n]`` (classes ``0 .. k-1``), the pairs ``i < j`` with ``cs[i] > cs[j]``.

    As :func:`_inversions`, one bit of the class at a time: a pair first differs at bit
    ``b`` inside its group of equal higher bits, and is an inversion when the earlier item
    has the bit set. A stable sort by the higher bits (a radix sort of small integers)
    lines each group up in item order; a running count of set bits then gives every
    clear-bit item the set-bit items before it in its group. Exact integer counts.
    """
    cs = cs.astype(np.int8 if k <= 127 else np.int32)
    total = np.zeros(len(cs), dtype=np.int64)
    for b in range(max(1, (k - 1).bit_length())):
        order = np.argsort(cs >> (b + 1), axis=1, kind="stable")
        sorted_cs = np.take_along_axis(cs, order, axis=1)
        bit = ((sorted_cs >> b) & 1).astype(np.int32)
        prefix = sorted_cs >> (b + 1)
        before = np.cumsum(bit, axis=1, dtype=np.int32) - bit  # set bits before, whole row
        starts = np.ones(prefix.shape, dtype=bool)
        starts[:, 1:] = prefix[:, 1:] != prefix[:, :-1]
        # set bits before each item's group (non-decreasing, so carried forward by a max)
        at_start = np.maximum.accumulate(np.where(starts, before, 0), axis=1)
        total += np.where(bit == 0, before - at_start, 0).sum(axis=1, dtype=np.int64)
    return total


def _run_pairs(starts: np.ndarray) -> np.ndarray:
    """Σ C(size, 2) over the runs of each row (``starts`` marks a run's first item)."""
    rows, n = starts.shape
    run = np.cumsum(starts, axis=1) - 1 + (np.arange(rows) * n)[:, None]
    size = np.bincount(run.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)
    out: np.ndarray = (size * (size - 1) / 2).sum(axis=1)
    return out


def pairwise_accuracy(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Share of item pairs whose ``x`` and ``y`` differences have the same sign.

    Kocmi et al. (2021): a pair agrees when metric and humans order it the same way; a
    pair tied in both counts as agreeing, a tie in one only as disagreeing. ``x`` and ``y``
    may be ``[B, n]`` (one row per resample). NaN for fewer than two items.

    >>> pairwise_accuracy(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]))
    0.6666666666666666
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    batched = x.ndim == 2
    x2, y2 = np.atleast_2d(x), np.atleast_2d(y)
    i, j = np.triu_indices(x2.shape[1], k=1)
    if len(i) == 0:
        out = np.full(x2.shape[0], np.nan)
    else:
        agree = np.sign(x2[:, i] - x2[:, j]) == np.sign(y2[:, i] - y2[:, j])
        out = agree.mean(axis=1)
    return out if batched else float(out[0])
