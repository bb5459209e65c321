"""Pairwise accuracy with tie calibration (acc_eq; Deutsch, Foster & Freitag 2023, "Ties Matter").

A pair of items agrees with the humans when the metric orders it the same way, *or* when
both humans and the metric call it a tie. Metric scores are continuous and rarely tie
exactly, so the metric gets a tie threshold ε: a pair whose metric scores differ by at
most ε counts as a metric tie. acc_eq is the accuracy at the ε that maximises it
(calibrated on the data being evaluated, as in the paper); the candidates are 0 (no new
ties) and every absolute metric difference of a pair, and the smallest best ε is kept.

Raising ε past a pair's difference ``d`` changes the count by ``+1`` when humans tie the
pair (it becomes a tie in both), ``-1`` when the pair was concordant (it stops agreeing)
and ``0`` when it was discordant. The accuracy as a function of ε is therefore a constant
plus a cumulative sum over pairs sorted by ``d``, and the search is one sort.

With no grouping (all cells as one group) see :mod:`evalab.metaeval.flat_ties`. With
grouping (one group per segment, pairs of systems within it) the statistic is the
mean over groups of each group's accuracy at one shared ε, as mt-metrics-eval's
``KendallWithTiesOpt(variant="acc23")`` computes it; groups without a pair are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalab import _kernel

__all__ = ["GroupPairs", "TieCalibrated", "acc_eq_grouped", "acc_eq_grouped_swapped", "group_pairs"]


@dataclass(frozen=True)
class TieCalibrated:
    """acc_eq: the best accuracy(ies) and the threshold(s) ε that reach it."""

    accuracy: np.ndarray | float
    threshold: np.ndarray | float


@dataclass(frozen=True)
class GroupPairs:
    """The pairs of items within groups, sorted by metric difference, with what they add.

    ``group`` of each pair (index into the groups that have pairs), ``diff`` the absolute
    metric difference, ``change`` its +1/-1/0 effect once ε reaches ``diff``; ``base`` and
    ``count`` per group: agreeing pairs at ε = 0 and all pairs. ``groups`` maps the kept
    groups back to the input group ids.
    """

    groups: np.ndarray
    group: np.ndarray
    diff: np.ndarray
    change: np.ndarray
    base: np.ndarray
    count: np.ndarray


def group_pairs(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> GroupPairs:
    """Pairs of systems within each segment: ``x``, ``y``, ``mask`` are ``[systems, segments]``.

    ``mask`` marks the rated cells; a segment with fewer than two rated systems has no pair.
    """
    n_sys, n_seg = x.shape
    a, b = np.triu_indices(n_sys, k=1)
    valid = mask[a] & mask[b]  # [pairs of systems, segments]
    dx = x[a] - x[b]
    dy = y[a] - y[b]
    tie_h = dy == 0
    agree0 = ((dx == 0) & tie_h) | (dx * dy > 0)
    change = np.where(dx == 0, 0, np.where(tie_h, 1, np.where(dx * dy > 0, -1, 0)))
    count = valid.sum(axis=0)
    keep = np.flatnonzero(count > 0)
    remap = np.full(n_seg, -1)
    remap[keep] = np.arange(len(keep))
    seg = np.broadcast_to(np.arange(n_seg), dx.shape)
    moving = valid & (change != 0)
    diff = np.abs(dx[moving])
    order = np.argsort(diff, kind="stable")
    return GroupPairs(
        groups=keep,
        group=remap[seg[moving]][order],
        diff=diff[order],
        change=change[moving][order].astype(np.float64),
        base=(agree0 & valid).sum(axis=0)[keep].astype(np.float64),
        count=count[keep].astype(np.float64),
    )


def acc_eq_grouped(pairs: GroupPairs, weights: np.ndarray | None = None) -> TieCalibrated:
    """acc_eq averaged over groups with one shared ε; ``weights`` ``[B, groups]`` per resample.

    Weights are indexed by the input group ids (a bootstrap's segment counts); the result
    has one accuracy and threshold per weight row (scalars without weights).

    >>> x = np.array([[1.0, 5.0], [1.2, 1.0]]); y = np.array([[0.0, 3.0], [0.0, 1.0]])
    >>> acc_eq_grouped(group_pairs(x, y, np.ones_like(x, bool))).accuracy
    1.0
    """
    single = weights is None
    w = (
        np.ones((1, len(pairs.groups)))
        if weights is None
        else np.atleast_2d(weights)[:, pairs.groups]
    )
    if len(pairs.groups) == 0:
        nan = np.full(w.shape[0], np.nan)
        return TieCalibrated(float("nan"), float("nan")) if single else TieCalibrated(nan, nan)
    total = w.sum(axis=1)
    start = (w * (pairs.base / pairs.count)).sum(axis=1)
    # the value at ε = d is reached after the last pair with that difference
    ends = np.r_[pairs.diff[1:] != pairs.diff[:-1], True][: len(pairs.diff)]
    best, value = _best_on_curve(pairs, w, start, ends)
    acc = value / total
    thr = np.r_[0.0, pairs.diff[ends]][best]
    with np.errstate(invalid="ignore"):
        acc = np.where(total > 0, acc, np.nan)
    return TieCalibrated(float(acc[0]), float(thr[0])) if single else TieCalibrated(acc, thr)


def _best_on_curve(
    pairs: GroupPairs, w: np.ndarray, start: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per weight row: the index of the best value among ``[start, start + curve at ends]``, and it.

    A tiny tolerance keeps the smallest ε among values equal up to rounding of the sums:
    the first value within ``1e-12`` times the largest absolute value (of every row) of
    the row's maximum. The compiled kernel computes the same sums in the same order
    without holding the ``[rows, pairs]`` curves.
    """
    step = pairs.change / pairs.count[pairs.group]
    kernel = _kernel.ties
    if kernel is not None:
        index, value = kernel.item_curve_best(
            np.ascontiguousarray(w, dtype=np.float64),
            np.ascontiguousarray(step, dtype=np.float64),
            np.ascontiguousarray(start, dtype=np.float64),
            pairs.group.astype(np.int32),
            ends.astype(np.uint8),
            *w.shape,
        )
        return np.frombuffer(index, np.int64), np.frombuffer(value, np.float64)
    curve = np.cumsum(w[:, pairs.group] * step, axis=1)[:, ends]
    values = np.concatenate([start[:, None], start[:, None] + curve], axis=1)
    best = np.argmax(
        values >= values.max(axis=1, keepdims=True) - 1e-12 * np.abs(values).max(), axis=1
    )
    return best, values[np.arange(len(best)), best]


def acc_eq_grouped_swapped(
    better: np.ndarray, worse: np.ndarray, swap: np.ndarray, y: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """acc_eq by item of the permutation test's pseudo-metrics, ``[T]`` each.

    Trial ``t`` scores ``where(swap[t], worse, better)`` and ``where(swap[t], better, worse)``
    (``[systems, segments]`` each) against the humans ``y``. A pair of systems in a segment
    has one of four metric differences (which metric each of its two cells came from), so
    the ``4 × pairs`` candidates are sorted once, by difference and then by pair; a trial's
    pairs in that order are its candidates in the order of a stable sort by difference. Its
    accuracy curve is the running sum over the candidates with the trial's inactive ones
    adding 0, read at the ends of runs of equal difference: the same sums in the same order.
    """
    a, b = np.triu_indices(better.shape[0], k=1)
    pair, seg = np.nonzero(mask[a] & mask[b])
    if len(seg) == 0:
        nan = np.full(swap.shape[0], np.nan)
        return nan, nan.copy()
    groups, group = np.unique(seg, return_inverse=True)
    count = np.bincount(group).astype(np.float64)[group]
    dy = y[a[pair], seg] - y[b[pair], seg]
    ca, cb = a[pair] * better.shape[1] + seg, b[pair] * better.shape[1] + seg
    side = np.stack([better.ravel(), worse.ravel()])  # side[1]: the other metric's score
    # candidate k = 2 * (cell a swapped) + (cell b swapped)
    dx = np.stack([side[k >> 1, ca] - side[k & 1, cb] for k in range(4)])  # [4, pairs]
    agree0 = ((dx == 0) & (dy == 0)) | (dx * dy > 0)
    change = np.where(dx == 0, 0.0, np.where(dy == 0, 1.0, np.where(dx * dy > 0, -1.0, 0.0)))
    diff = np.abs(dx).ravel()
    order = np.lexsort((np.tile(np.arange(len(pair)), 4), diff))
    steps, which = (change / count).ravel()[order], (order // len(pair)).astype(np.int8)
    ends = np.flatnonzero(np.r_[diff[order][1:] != diff[order][:-1], True])
    flat = swap.reshape(len(swap), -1)
    code = (flat[:, ca].astype(np.int8) << 1) | flat[:, cb]  # [T, pairs]: the active candidate
    agree_w, of_pair = agree0 / count, order % len(pair)
    out = np.empty((2, len(swap)))
    for side_no, codes in enumerate((code, 3 - code)):  # the second takes each cell's other side
        start = agree_w[codes, np.arange(len(pair))].sum(axis=1)
        best = _swapped_best(steps, which, of_pair, ends, codes)
        out[side_no] = (start + best) / len(groups)
    return out[0], out[1]


def _swapped_best(
    steps: np.ndarray, which: np.ndarray, of_pair: np.ndarray, ends: np.ndarray, codes: np.ndarray
) -> np.ndarray:
    """Per trial, the largest running sum at a run end (or 0) of its active candidates' steps.

    Candidate ``m`` (of pair ``of_pair[m]``) is active in trial ``t`` when ``codes[t,
    of_pair[m]] == which[m]``; ``ends`` indexes the last candidate of each run.
    """
    kernel = _kernel.ties
    if kernel is not None:
        marks = np.zeros(len(steps), dtype=np.uint8)
        marks[ends] = 1
        out = kernel.swapped_curve_max(
            np.ascontiguousarray(steps, dtype=np.float64),
            np.ascontiguousarray(which, dtype=np.int8),
            np.ascontiguousarray(of_pair, dtype=np.int32),
            marks,
            np.ascontiguousarray(codes, dtype=np.int8),
            *codes.shape,
        )
        return np.frombuffer(out, dtype=np.float64).copy()
    best = np.empty(len(codes))
    for r in range(0, len(codes), _SWAPPED_ROWS):
        active = codes[r : r + _SWAPPED_ROWS, of_pair] == which
        curve = np.cumsum(np.where(active, steps, 0.0), axis=1)[:, ends]
        best[r : r + _SWAPPED_ROWS] = np.maximum(0.0, curve.max(axis=1))
    return best


#: trials of :func:`acc_eq_grouped_swapped` whose curves are summed at once ([rows, 4 x pairs])
_SWAPPED_ROWS = 16
