"""acc_eq with tie calibration and no grouping: the full data, resamples, a pairwise test.

All pairs of rated cells form one group (about 8.9 million pairs for 4 216 cells). Raising
the metric's tie threshold ε past a pair's absolute metric difference changes the count
of agreeing pairs by +1 (humans tie the pair), -1 (the pair was concordant) or 0; those
"moving" pairs are sorted by difference once, and the accuracy at every ε is a prefix sum.

A bootstrap resample draws segment ``s`` ``c_s`` times; it is scored as the expanded
sample (each cell repeated ``c_s`` times), as every other statistic is. A pair of cells in
segments ``s`` and ``t`` then stands for ``c_s * c_t`` pairs, and the copies of one cell
tie in both scores (they agree at every ε). So on each resample the threshold is
re-optimised over the same sorted pairs with weights: a constant from the pairs that
agree at ε = 0 (a segments × segments matrix, one product for all resamples) plus the best
weighted prefix sum, which the compiled kernel (``evalab._kernel.ties``) or, without it, a
numpy loop over resamples computes exactly.

:func:`pairwise_permutation_p` is mt-metrics-eval's ``PairwisePermutationSigDiff`` (the
test WMT23 used for acc_eq): each metric keeps its calibrated ε, and every pair's two
agreement outcomes are swapped with probability ½. Only the ``m`` pairs on which the two
metrics disagree move the difference, by ±1 each, so a trial's difference is ``2K - m``
with ``K ~ Binomial(m, ½)``: the trials are drawn from that distribution, which is the same
test without building 8.9 million swaps per trial. It treats pairs that share a cell as
independent, so it is far more confident than resampling segments (WMT21 en-de, chrF vs
BLEU: p < 0.001 against the paired bootstrap's 0.27); ``evalab meta-eval`` therefore
ranks with the paired bootstrap and this function is there to reproduce WMT's test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalab import _kernel
from evalab.metaeval.cell_pairs import band_indices, pair_bands
from evalab.metaeval.ties import TieCalibrated

__all__ = [
    "FlatPairs",
    "acc_eq_flat",
    "acc_eq_flat_resampled",
    "acc_eq_of_pairs",
    "flat_pairs",
    "pairwise_permutation_p",
]


@dataclass(frozen=True)
class FlatPairs:
    """The moving pairs sorted by metric difference, and what the others add.

    ``first``/``second``: the (compact) segments of each entry's cells; ``change`` its
    change (+1/-1 a pair, summed over the pairs of one run of equal differences that join
    the same two segments); ``ends`` marks the last entry of each run. ``agree[s, t]``
    (``s <= t``): pairs of distinct cells in segments ``s`` and ``t`` that agree at ε = 0;
    ``cells[s]`` rated cells per segment; ``segments`` maps the compact segments back to
    the input segment ids; ``point`` the full data's acc_eq and smallest best ε (found
    while the pairs are built, so the differences themselves are not kept).
    """

    first: np.ndarray
    second: np.ndarray
    change: np.ndarray
    ends: np.ndarray
    agree: np.ndarray
    cells: np.ndarray
    segments: np.ndarray
    point: TieCalibrated


@dataclass
class _Curve:
    """The full data's accuracy curve, followed batch by batch: its sum and first maximum."""

    run: int = 0
    best: int = 0
    threshold: float = 0.0

    def add(self, diff: np.ndarray, change: np.ndarray, ends: np.ndarray) -> None:
        curve = self.run + np.cumsum(change, dtype=np.int64)[ends]
        top = int(np.argmax(curve))
        if curve[top] > self.best:  # strictly: the first maximum keeps the smallest ε
            self.best, self.threshold = int(curve[top]), float(diff[ends][top])
        self.run += int(change.sum(dtype=np.int64))


def flat_pairs(x: np.ndarray, y: np.ndarray, seg: np.ndarray) -> FlatPairs:
    """All pairs of the cells ``x`` (metric), ``y`` (human) in segments ``seg``."""
    segments, compact = np.unique(np.asarray(seg), return_inverse=True)
    n_seg = len(segments)
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    xs, ys, ss = x[order], np.asarray(y, dtype=np.float64)[order], compact[order].astype(np.int32)
    # room for every pair; the pages past the moving pairs are never written, so never resident
    room = len(xs) * (len(xs) - 1) // 2
    first, second = np.empty(room, np.int32), np.empty(room, np.int32)
    change, ends = np.empty(room, np.int8), np.empty(room, np.uint8)
    agree = np.zeros(n_seg * n_seg, dtype=np.int64)
    curve, filled = _Curve(), 0
    for start, stop in pair_bands(xs):
        band = _moving(xs, ys, ss, (start, stop), n_seg, agree)
        out = (first[filled:], second[filled:], change[filled:], ends[filled:])
        filled += _sorted_merged(band, n_seg, out, curve)
    cells = np.bincount(compact, minlength=n_seg).astype(np.float64)
    n = cells.sum()
    point = (
        TieCalibrated(float((agree.sum() + curve.best) / (n * (n - 1) / 2)), curve.threshold)
        if n >= 2
        else TieCalibrated(float("nan"), float("nan"))
    )
    return FlatPairs(
        first=first[:filled],
        second=second[:filled],
        change=change[:filled],
        ends=ends[:filled],
        agree=agree.reshape(n_seg, n_seg).astype(np.float64),
        cells=cells,
        segments=segments,
        point=point,
    )


def _moving(
    xs: np.ndarray,
    ys: np.ndarray,
    ss: np.ndarray,
    band: tuple[np.ndarray, np.ndarray],
    n_seg: int,
    agree: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The moving pairs of one band of :func:`pair_bands`: segments ``lo <= hi``, change, dx.

    In band order (``i`` ascending, then ``j``); the pairs of distinct cells that agree at
    ε = 0 are counted into ``agree`` (``[segments * segments]``, at ``lo * segments + hi``).
    """
    start, stop = band
    kernel = _kernel.ties
    if kernel is not None:
        lo, hi, step, dx = kernel.band_pairs(
            xs, ys, ss, start.astype(np.int64), stop.astype(np.int64), agree, n_seg
        )
        return (
            np.frombuffer(lo, np.int32),
            np.frombuffer(hi, np.int32),
            np.frombuffer(step, np.int8),
            np.frombuffer(dx, np.float64),
        )
    i, j = band_indices(start, stop)
    dxs, dy = xs[j] - xs[i], ys[j] - ys[i]  # dx >= 0
    si, sj = ss[i], ss[j]
    low, high = np.minimum(si, sj), np.maximum(si, sj)
    agreeing = np.where(dxs > 0, dy > 0, dy == 0)
    agree += np.bincount(low[agreeing] * n_seg + high[agreeing], minlength=len(agree))
    moving = np.flatnonzero((dxs > 0) & (dy >= 0))
    changes = np.where(dy[moving] == 0, 1, -1).astype(np.int8)
    return low[moving], high[moving], changes, dxs[moving]


def _sorted_merged(
    band: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    n_seg: int,
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    curve: _Curve,
) -> int:
    """Write a band's moving pairs into ``out`` sorted by difference, merged; follow ``curve``.

    The order within a run of equal differences is never read, so the pairs of one run
    that join the same two segments are one entry with the sum of their changes (none
    where it is 0; a sum beyond ±127 as entries of ±127 and the rest, to fit a byte), the
    entries of a run in order of ``lo * n_seg + hi``, its last one marked as its end.
    Returns the entries written (the compiled kernel writes the same ones).
    """
    lo, hi, step, dx = band
    order = np.argsort(dx)
    kernel = _kernel.ties
    if kernel is not None:
        written, curve.run, curve.best, curve.threshold = kernel.merge_runs(
            lo,
            hi,
            step,
            dx,
            order.astype(np.int64),
            n_seg,
            *out,
            curve.run,
            curve.best,
            curve.threshold,
        )
        return int(written)
    if len(order) == 0:
        return 0
    diff, step = dx[order], step[order].astype(np.int64)
    new_run = np.r_[False, diff[1:] != diff[:-1]]
    curve.add(diff, step, np.r_[new_run[1:], True])
    run, key = np.cumsum(new_run), (lo.astype(np.int64) * n_seg + hi)[order]
    by_key = np.lexsort((key, run))
    run, key, step = run[by_key], key[by_key], step[by_key]
    heads = np.flatnonzero(np.r_[True, (run[1:] != run[:-1]) | (key[1:] != key[:-1])])
    net = np.add.reduceat(step, heads)
    parts = -(-np.abs(net) // 127)
    entry = np.repeat(np.arange(len(net)), parts)
    rank = np.arange(len(entry)) - np.repeat(np.cumsum(parts) - parts, parts)
    size = np.minimum(np.abs(net)[entry] - 127 * rank, 127)
    run_of, key_of = run[heads][entry], key[heads][entry]
    k = len(entry)
    out[0][:k], out[1][:k] = key_of // n_seg, key_of % n_seg
    out[2][:k] = np.sign(net)[entry] * size
    out[3][:k] = np.r_[run_of[1:] != run_of[:-1], True][:k]
    return k


def acc_eq_flat(x: np.ndarray, y: np.ndarray) -> TieCalibrated:
    """acc_eq over all pairs of items (no grouping): ``x`` metric, ``y`` human scores.

    >>> acc_eq_flat(np.array([1.0, 1.1, 3.0]), np.array([0.0, 0.0, 1.0])).accuracy
    1.0
    """
    return acc_eq_of_pairs(flat_pairs(x, y, np.zeros(len(x), dtype=np.int64)))


def acc_eq_of_pairs(pairs: FlatPairs) -> TieCalibrated:
    """acc_eq of the full data and the smallest ε that reaches it."""
    return pairs.point


def acc_eq_flat_resampled(pairs: FlatPairs, counts: np.ndarray) -> np.ndarray:
    """acc_eq, ε re-optimised, on every resample: ``counts`` ``[B, segments]`` (input ids)."""
    c = np.atleast_2d(np.asarray(counts, dtype=np.float64))[:, pairs.segments]
    n = c @ pairs.cells
    # pairs of distinct cells agreeing at ε = 0, plus the copies of each cell (tied in both)
    base = ((c @ pairs.agree) * c).sum(axis=1) + (c * (c - 1) / 2) @ pairs.cells
    gain = _best_prefix(pairs, c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= 2, (base + gain) / (n * (n - 1) / 2), np.nan)


def _best_prefix(pairs: FlatPairs, c: np.ndarray) -> np.ndarray:
    """Per resample, the largest weighted prefix sum of the changes at a run end, or 0."""
    if len(pairs.change) == 0:
        return np.zeros(len(c))
    n = c @ pairs.cells
    kernel = _kernel.ties
    # the kernel reads counts as bytes and sums in int32: both exact within these bounds
    if kernel is not None and c.max() < 256 and n.max() * (n.max() - 1) / 2 < 2**31:
        by_segment = np.ascontiguousarray(c.T, dtype=np.uint8)
        out = kernel.tie_curve_max(
            pairs.first, pairs.second, pairs.change, pairs.ends, by_segment, *by_segment.shape
        )
        return np.frombuffer(out, dtype=np.int32).astype(np.float64)
    ends = pairs.ends.astype(bool)
    change = pairs.change.astype(np.float64)
    return np.array(
        [
            max(0.0, np.cumsum(change * row[pairs.first] * row[pairs.second])[ends].max())
            for row in c
        ]
    )


def _agreement(x: np.ndarray, y: np.ndarray, threshold: float, k: int) -> np.ndarray:
    """Whether each pair ``(i, i + k)`` agrees at tie threshold ``threshold``."""
    dx, dy = x[k:] - x[:-k], y[k:] - y[:-k]
    out: np.ndarray = np.where(np.abs(dx) <= threshold, dy == 0, np.sign(dx) == np.sign(dy))
    return out


def pairwise_permutation_p(
    better: tuple[np.ndarray, float],
    worse: tuple[np.ndarray, float],
    y: np.ndarray,
    n_trials: int,
    rng: np.random.Generator,
) -> float:
    """p-value that ``better`` (scores, calibrated ε) beats ``worse`` on acc_eq, pairs swapped."""
    (xb, eb), (xw, ew) = better, worse
    y = np.asarray(y, dtype=np.float64)
    only_better = only_worse = 0
    for k in range(1, len(y)):
        ab, aw = _agreement(xb, y, eb, k), _agreement(xw, y, ew, k)
        only_better += int(np.count_nonzero(ab & ~aw))
        only_worse += int(np.count_nonzero(aw & ~ab))
    differing = only_better + only_worse
    swapped = rng.binomial(differing, 0.5, size=n_trials)
    return float(np.mean(2 * swapped - differing >= only_better - only_worse))
