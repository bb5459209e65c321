"""The meta-evaluation statistics, each computable on the full data and on resamples.

System level (one score per system): Pearson, Kendall τ_b, pairwise accuracy.
Segment level (one score per rated system × segment cell): Pearson and Kendall τ_b with no
grouping (all rated cells as one sample) and grouped by item (per segment across systems,
averaged), and acc_eq with tie calibration, with no grouping and grouped by item.

A :class:`SegmentData` is the rated cells of one metric; its statistics take bootstrap
``counts`` ``[B, segments]`` (how often each segment is drawn) and return ``[B]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from evalab.metaeval.correlation import kendall_tau_b, pairwise_accuracy, pearson
from evalab.metaeval.flat_ties import FlatPairs, acc_eq_flat_resampled, acc_eq_of_pairs, flat_pairs
from evalab.metaeval.grouped import item_kendall, item_pearson, weighted_mean
from evalab.metaeval.ties import GroupPairs, TieCalibrated, acc_eq_grouped, group_pairs

__all__ = [
    "NAMES",
    "SEGMENT_STATS",
    "SOFT_ACCURACY",
    "SYSTEM_STATS",
    "SegmentData",
    "StatisticName",
    "system_statistic",
]

SYSTEM_STATS = ("pearson", "kendall", "accuracy")
#: system level from segment scores (:mod:`evalab.metaeval.soft_pairwise`), after SYSTEM_STATS
SOFT_ACCURACY = "soft_accuracy"
SEGMENT_STATS = ("pearson", "kendall", "pearson_item", "kendall_item", "acc_eq", "acc_eq_item")


@dataclass(frozen=True)
class StatisticName:
    """How a statistic is named: ``label`` in full, ``short`` as a column of the wide table
    (short, so that nine fit a page; the table's notes spell them out)."""

    label: str
    short: str


#: every statistic's names, by ``(level, statistic)``
NAMES = {
    ("system", "pearson"): StatisticName("Pearson", "sys r"),
    ("system", "kendall"): StatisticName("Kendall τ_b", "sys τ_b"),
    ("system", "accuracy"): StatisticName("pairwise accuracy", "sys acc"),
    ("system", SOFT_ACCURACY): StatisticName("soft pairwise accuracy", "sys SPA"),
    ("segment", "pearson"): StatisticName("Pearson (no grouping)", "seg r"),
    ("segment", "kendall"): StatisticName("Kendall τ_b (no grouping)", "seg τ_b"),
    ("segment", "pearson_item"): StatisticName("Pearson (group by item)", "item r"),
    ("segment", "kendall_item"): StatisticName("Kendall τ_b (group by item)", "item τ_b"),
    ("segment", "acc_eq"): StatisticName("acc_eq, tie-calibrated (no grouping)", "seg acc_eq"),
    ("segment", "acc_eq_item"): StatisticName(
        "acc_eq, tie-calibrated (group by item)", "item acc_eq"
    ),
}

#: weight rows of one batched Kendall call (bounds the [rows, cells] temporaries)
_KENDALL_ROWS = 128


def system_statistic(name: str, metric: np.ndarray, human: np.ndarray) -> np.ndarray:
    """A system-level statistic of every row of ``[B, systems]`` scores (NaN where undefined)."""
    ok = np.isfinite(metric) & np.isfinite(human)
    out: np.ndarray | float
    if name == "pearson":
        out = item_pearson(metric.T, human.T, ok.T)
    elif name == "kendall":
        out = item_kendall(metric.T, human.T, ok.T)
    else:
        out = pairwise_accuracy(np.where(ok, metric, 0.0), np.where(ok, human, 0.0))
    return np.where(ok.all(axis=1), out, np.nan)


@dataclass
class SegmentData:
    """One metric's segment scores against the humans: ``[systems, segments]`` and the mask."""

    metric: np.ndarray
    human: np.ndarray
    mask: np.ndarray
    _pairs: GroupPairs | None = field(default=None, repr=False)
    _flat: FlatPairs | None = field(default=None, repr=False)
    _flat_point: TieCalibrated | None = field(default=None, repr=False)

    @property
    def pairs(self) -> GroupPairs:
        """The system pairs within segments (computed once, for acc_eq by item)."""
        if self._pairs is None:
            self._pairs = group_pairs(self.metric, np.where(self.mask, self.human, 0.0), self.mask)
        return self._pairs

    @property
    def flat(self) -> FlatPairs:
        """All pairs of rated cells (computed once, for acc_eq with no grouping)."""
        if self._flat is None:
            self._flat = flat_pairs(*self.cells())
            self._flat_point = self._flat.point
        return self._flat

    def release_flat(self) -> None:
        """Drop the pairs of cells (10 bytes a moving pair), keeping the full data's acc_eq."""
        self._flat = None

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rated cells flattened: metric, human, and the segment of each."""
        return self.metric[self.mask], self.human[self.mask], np.nonzero(self.mask)[1]

    def point(self, name: str) -> tuple[float, float | None]:
        """The statistic on the full data, and acc_eq's threshold ε (None otherwise)."""
        if name == "acc_eq":
            res = self._flat_point or acc_eq_of_pairs(self.flat)
            return float(res.accuracy), float(res.threshold)
        if name == "acc_eq_item":
            res = acc_eq_grouped(self.pairs)
            return float(res.accuracy), float(res.threshold)
        return float(self.resampled(name, np.ones((1, self.mask.shape[1])))[0]), None

    def resampled(self, name: str, counts: np.ndarray) -> np.ndarray:
        """The statistic on every bootstrap resample (``counts`` ``[B, segments]``)."""
        return _RESAMPLED[name](self, counts)


def _flat_pearson(d: SegmentData, counts: np.ndarray) -> np.ndarray:
    x, y, seg = d.cells()
    return np.atleast_1d(pearson(x, y, counts[:, seg]))


def _flat_kendall(d: SegmentData, counts: np.ndarray) -> np.ndarray:
    x, y, seg = d.cells()
    parts = [
        kendall_tau_b(x, y, counts[a : a + _KENDALL_ROWS, seg])
        for a in range(0, len(counts), _KENDALL_ROWS)
    ]
    return np.concatenate([np.atleast_1d(p) for p in parts])


def _item(
    fn: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> Callable[[SegmentData, np.ndarray], np.ndarray]:
    def resampled(d: SegmentData, counts: np.ndarray) -> np.ndarray:
        return np.atleast_1d(weighted_mean(fn(d.metric, d.human, d.mask), counts))

    return resampled


def _acc_eq(d: SegmentData, counts: np.ndarray) -> np.ndarray:
    return acc_eq_flat_resampled(d.flat, counts)


def _acc_eq_item(d: SegmentData, counts: np.ndarray) -> np.ndarray:
    return np.atleast_1d(acc_eq_grouped(d.pairs, counts).accuracy)


_RESAMPLED: dict[str, Callable[[SegmentData, np.ndarray], np.ndarray]] = {
    "pearson": _flat_pearson,
    "kendall": _flat_kendall,
    "pearson_item": _item(item_pearson),
    "kendall_item": _item(item_kendall),
    "acc_eq": _acc_eq,
    "acc_eq_item": _acc_eq_item,
}
