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

__all__ = ["GroupPairs", "TieCalibrated", "acc_eq_grouped", "group_pairs"]


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
    if len(pairs.diff):
        # the value at ε = d is reached after the last pair with that difference
        ends = np.flatnonzero(np.r_[pairs.diff[1:] != pairs.diff[:-1], True])
        steps = w[:, pairs.group] * (pairs.change / pairs.count[pairs.group])
        curve = np.cumsum(steps, axis=1)[:, ends]
        candidates = np.r_[0.0, pairs.diff[ends]]
        values = np.concatenate([start[:, None], start[:, None] + curve], axis=1)
    else:
        candidates = np.zeros(1)
        values = start[:, None]
    # a tiny tolerance keeps the smallest ε among values equal up to rounding of the sums
    best = np.argmax(
        values >= values.max(axis=1, keepdims=True) - 1e-12 * np.abs(values).max(), axis=1
    )
    acc = values[np.arange(len(best)), best] / total
    thr = candidates[best]
    with np.errstate(invalid="ignore"):
        acc = np.where(total > 0, acc, np.nan)
    return TieCalibrated(float(acc[0]), float(thr[0])) if single else TieCalibrated(acc, thr)


def acc_eq_grouped_many(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """acc_eq by item of many metric score matrices ``x`` ``[T, systems, segments]`` at once.

    The permutation test scores a thousand pseudo-metrics against the same humans: the
    pairs and their human side are shared, and each row's pairs are sorted in one batched
    call. Returns the ``[T]`` accuracies (the thresholds are not needed there).
    """
    a, b = np.triu_indices(x.shape[1], k=1)
    valid = mask[a] & mask[b]
    pair, seg = np.nonzero(valid)
    if len(seg) == 0:
        return np.full(x.shape[0], np.nan)
    groups, group = np.unique(seg, return_inverse=True)
    count = np.bincount(group).astype(np.float64)
    dy = y[a[pair], seg] - y[b[pair], seg]
    dx = x[:, a[pair], seg] - x[:, b[pair], seg]  # [T, pairs]
    agree0 = ((dx == 0) & (dy == 0)) | (dx * dy > 0)
    start = (agree0 / count[group]).sum(axis=1)
    change = np.where(dx == 0, 0.0, np.where(dy == 0, 1.0, np.where(dx * dy > 0, -1.0, 0.0)))
    diff = np.abs(dx)
    order = np.argsort(diff, axis=1, kind="stable")
    sorted_diff = np.take_along_axis(diff, order, axis=1)
    curve = np.cumsum(np.take_along_axis(change / count[group], order, axis=1), axis=1)
    # only the end of a run of equal differences is a threshold every pair of the run passed
    ends = np.concatenate(
        [sorted_diff[:, 1:] != sorted_diff[:, :-1], np.ones((len(x), 1), bool)], axis=1
    )
    best = np.maximum(0.0, np.where(ends, curve, -np.inf).max(axis=1))
    out: np.ndarray = (start + best) / len(groups)
    return out
