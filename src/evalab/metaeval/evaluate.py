"""Meta-evaluation of metrics against human scores: statistics, intervals, clusters.

:func:`meta_evaluate` takes the human segment scores ``[systems, segments]`` (NaN = not
rated) and each metric's :class:`~evalab.metaeval.scores.MetricScores`, and returns every
statistic of every metric with a bootstrap percentile interval (segments resampled with
replacement; both the metric's and the humans' system scores recomputed on each resample)
and its rank cluster against the other metrics.

Human system scores are the mean over each system's rated segments (``rated-mean``, the
WMT convention) or over the segments rated for every system (``common-mean``).

Soft pairwise accuracy (WMT24) is a system-level statistic of segment scores: it is
computed for the metrics with segment scores, on the segments rated for every system
(:class:`~evalab.metaeval.soft_pairwise.SoftPairwise`), and gets its interval and clusters
from the same paired bootstrap resamples as the other system-level statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalab.errors import InputError, OutOfRangeError, Setting
from evalab.metaeval.scores import MetricScores
from evalab.metaeval.significance import PERMUTABLE, bootstrap_p, clusters, permutation_p
from evalab.metaeval.soft_pairwise import SoftPairwise
from evalab.metaeval.statistics import (
    NAMES,
    SEGMENT_STATS,
    SOFT_ACCURACY,
    SYSTEM_STATS,
    SegmentData,
    system_statistic,
)
from evalab.stats.bootstrap import percentile_interval
from evalab.stats.resampling import DEFAULT_SEED, bootstrap_counts

__all__ = ["HUMAN_SYSTEM_MODES", "Estimate", "MetaEvalResult", "MetaEvalSettings", "meta_evaluate"]

HUMAN_SYSTEM_MODES = ("rated-mean", "common-mean")


@dataclass(frozen=True)
class MetaEvalSettings:
    """Resampling and significance settings (all seeded: the same call gives the same numbers)."""

    n_bootstrap: int = 1000
    n_permutations: int = 1000
    seed: int = DEFAULT_SEED
    confidence: float = 0.95
    alpha: float = 0.05
    human_system: str = "rated-mean"

    @property
    def signature(self) -> str:
        """The settings that change the intervals and clusters."""
        return (
            f"bs:{self.n_bootstrap}|perm:{self.n_permutations}|seed:{self.seed}|"
            f"conf:{self.confidence:g}|alpha:{self.alpha:g}|human:{self.human_system}"
        )


@dataclass(frozen=True)
class Estimate:
    """One statistic of one metric: value, interval, acc_eq threshold, rank and p vs the best."""

    value: float
    low: float | None = None
    high: float | None = None
    threshold: float | None = None
    rank: int | None = None
    p_vs_best: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_low": self.low,
            "ci_high": self.high,
            "threshold": self.threshold,
            "rank": self.rank,
            "p_vs_best": self.p_vs_best,
        }


@dataclass
class MetaEvalResult:
    """Every statistic of every metric, keyed ``(level, statistic) -> {metric: Estimate}``."""

    systems: list[str]
    human_system: np.ndarray
    metrics: list[MetricScores]
    settings: MetaEvalSettings
    estimates: dict[tuple[str, str], dict[str, Estimate]] = field(default_factory=dict)
    n_segments: int = 0
    rated_segments: int = 0
    notes: list[str] = field(default_factory=list)
    #: soft pairwise accuracy's test: on the segments rated for every system (None: not computed)
    soft: SoftPairwise | None = None


def human_system_scores(human: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """The humans' system scores and the mask of the segments they average over."""
    if mode not in HUMAN_SYSTEM_MODES:
        raise OutOfRangeError("human_system", repr(mode), f"one of {', '.join(HUMAN_SYSTEM_MODES)}")
    mask = np.isfinite(human)
    if mode == "common-mean":
        mask = np.broadcast_to(mask.all(axis=0), human.shape)
        if not mask.any():
            raise InputError(
                Setting("human_system"), " common-mean: no segment is rated for every system"
            )
    return _masked_means(np.where(mask, human, 0.0), mask, np.ones((1, human.shape[1])))[0], mask


def _masked_means(values: np.ndarray, mask: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = (counts @ values.T) / (counts @ mask.T.astype(np.float64))
        return out


def meta_evaluate(
    human: np.ndarray,
    systems: Sequence[str],
    metrics: Sequence[MetricScores],
    settings: MetaEvalSettings,
    progress: Any = None,
) -> MetaEvalResult:
    """Meta-evaluate ``metrics`` against ``human`` ``[systems, segments]`` scores."""
    rated = human[np.isfinite(human)]
    if rated.size and np.all(rated == rated[0]):
        raise InputError(
            f"every rated human score is {rated[0]:g}: with no difference between any two cells, "
            "no statistic can say whether a metric agrees with the humans"
        )
    h_sys, h_mask = human_system_scores(human, settings.human_system)
    result = MetaEvalResult(
        list(systems),
        h_sys,
        list(metrics),
        settings,
        n_segments=human.shape[1],
        rated_segments=int(np.isfinite(human).sum()),
    )
    data = {
        m.name: SegmentData(m.segment, human, np.isfinite(human))
        for m in metrics
        if m.segment is not None
    }
    result.soft = SoftPairwise.rated_by_all(human) if data else None
    boot_sys, boot_seg = _bootstrap(human, h_mask, metrics, data, result.soft, settings, progress)
    _system_level(result, boot_sys, data)
    if data:
        _segment_level(result, data, boot_seg)
    return result


def _joined(table: dict[str, dict[str, list[np.ndarray]]]) -> dict[str, dict[str, np.ndarray]]:
    return {k: {s: np.concatenate(v) for s, v in d.items() if v} for k, d in table.items()}


def _bootstrap(
    human: np.ndarray,
    h_mask: np.ndarray,
    metrics: Sequence[MetricScores],
    data: dict[str, SegmentData],
    soft: SoftPairwise | None,
    settings: MetaEvalSettings,
    progress: Any,
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, np.ndarray]]]:
    """Resampled system- and segment-level statistics: ``{metric: {stat: [B]}}`` each."""
    n_seg = human.shape[1]
    h_values = np.where(h_mask, human, 0.0)
    sys_out: dict[str, dict[str, list[np.ndarray]]] = {
        m.name: {s: [] for s in SYSTEM_STATS} for m in metrics
    }
    seg_out: dict[str, dict[str, list[np.ndarray]]] = {
        n: {s: [] for s in SEGMENT_STATS} for n in data
    }
    for n in data if soft is not None else ():
        sys_out[n][SOFT_ACCURACY] = []
    for counts in bootstrap_counts(n_seg, settings.n_bootstrap, settings.seed):
        counts = counts.astype(np.float64)
        h = _masked_means(h_values, h_mask, counts)
        for m in metrics:
            if m.resample is None:
                continue
            ms = m.resample(counts)
            for stat in SYSTEM_STATS:
                sys_out[m.name][stat].append(system_statistic(stat, ms, h))
        if soft is not None:
            spa = soft.resampled([d.metric for d in data.values()], counts)
            for name, row in zip(data, spa, strict=True):
                sys_out[name][SOFT_ACCURACY].append(row)
        for name, d in data.items():
            for stat in seg_out[name]:
                if stat != "acc_eq":
                    seg_out[name][stat].append(d.resampled(stat, counts))
        if progress is not None:
            progress(counts.shape[0])
    # acc_eq with no grouping holds every pair of cells: one metric at a time, over the
    # same resamples drawn again from the seed, its pairs dropped once it is done
    for name, d in data.items():
        for counts in bootstrap_counts(n_seg, settings.n_bootstrap, settings.seed):
            seg_out[name]["acc_eq"].append(d.resampled("acc_eq", counts.astype(np.float64)))
        d.release_flat()
    return _joined(sys_out), _joined(seg_out)


def _enough_defined(samples: np.ndarray, confidence: float, what: str, notes: list[str]) -> bool:
    """Whether a percentile interval over the resamples with a defined statistic is honest.

    A resample can leave a statistic undefined (e.g. every human score of it tied). Dropping
    those conditions the interval on the rest; it is shown, with a note, while they are
    fewer than the interval's tail (1 - confidence), and refused beyond: the interval would
    then describe a sample the data does not resemble.
    """
    bad = int(np.count_nonzero(~np.isfinite(samples)))
    if bad == 0:
        return True
    if bad > (1.0 - confidence) * samples.size:
        notes.append(
            f"{what}: no interval: the statistic is undefined on {bad} of {samples.size} resamples"
        )
        return False
    notes.append(
        f"{what}: interval over the {samples.size - bad} of {samples.size} resamples on which the "
        "statistic is defined"
    )
    return True


def _estimates(
    values: dict[str, float],
    boot: dict[str, np.ndarray | None],
    thresholds: dict[str, float | None],
    p_matrix: np.ndarray,
    settings: MetaEvalSettings,
    label: str,
    notes: list[str],
) -> dict[str, Estimate]:
    names = list(values)
    ranks = clusters([values[n] for n in names], p_matrix, settings.alpha)
    finite = [i for i, n in enumerate(names) if np.isfinite(values[n])]
    best = max(finite, key=lambda i: values[names[i]], default=None)
    out = {}
    for i, n in enumerate(names):
        samples = boot.get(n)
        low = high = None
        if samples is not None and _enough_defined(
            samples, settings.confidence, f"{label}, {n}", notes
        ):
            _, low, high = percentile_interval(samples, settings.confidence)
        p = (
            None
            if best is None or i == best or np.isnan(p_matrix[best, i])
            else float(p_matrix[best, i])
        )
        # an undefined statistic (NaN: e.g. every human score of a segment tied) has no rank
        rank = ranks[i] if i in finite else None
        out[n] = Estimate(values[n], low, high, thresholds.get(n), rank, p)
    return out


def _system_level(
    result: MetaEvalResult,
    boot: dict[str, dict[str, np.ndarray]],
    data: dict[str, SegmentData],
) -> None:
    for stat in SYSTEM_STATS:
        values = {
            m.name: float(
                system_statistic(stat, m.system[None, :], result.human_system[None, :])[0]
            )
            for m in result.metrics
        }
        _system_estimates(result, stat, values, boot)
    if result.soft is not None:
        soft = result.soft
        values = {n: soft.point(d.metric) for n, d in data.items()}
        _system_estimates(result, SOFT_ACCURACY, values, boot)
    if any(m.resample is None for m in result.metrics):
        fixed = ", ".join(m.name for m in result.metrics if m.resample is None)
        result.notes.append(
            f"{fixed}: system-level scores given in --scores are fixed, so they have no interval"
        )


def _system_estimates(
    result: MetaEvalResult,
    stat: str,
    values: dict[str, float],
    boot: dict[str, dict[str, np.ndarray]],
) -> None:
    """One system-level statistic's estimates: paired-bootstrap intervals, p-values, clusters."""
    names = list(values)
    samples = {n: boot[n].get(stat) for n in names}
    p = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            sa, sb = samples[a], samples[b]
            if i != j and sa is not None and sb is not None and values[a] >= values[b]:
                p[i, j] = bootstrap_p(sa, sb)
    result.estimates[("system", stat)] = _estimates(
        values, samples, {}, p, result.settings, NAMES[("system", stat)].label, result.notes
    )


def _segment_level(
    result: MetaEvalResult, data: dict[str, SegmentData], boot: dict[str, dict[str, np.ndarray]]
) -> None:
    names = list(data)
    rng = np.random.default_rng(result.settings.seed)
    for stat in SEGMENT_STATS:
        points = {n: data[n].point(stat) for n in names}
        values = {n: v for n, (v, _) in points.items()}
        thresholds = {n: t for n, (_, t) in points.items()}
        samples = {n: boot.get(n, {}).get(stat) for n in names}
        p = np.full((len(names), len(names)), np.nan)
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i >= j:
                    continue
                hi, lo = (i, j) if values[a] >= values[b] else (j, i)
                better, worse = samples[names[hi]], samples[names[lo]]
                if stat in PERMUTABLE and result.settings.n_permutations > 0:
                    p[hi, lo] = permutation_p(
                        stat, data[names[hi]], data[names[lo]], result.settings.n_permutations, rng
                    )
                elif stat not in PERMUTABLE and better is not None and worse is not None:
                    p[hi, lo] = bootstrap_p(better, worse)
        result.estimates[("segment", stat)] = _estimates(
            values,
            samples,
            thresholds,
            p,
            result.settings,
            NAMES[("segment", stat)].label,
            result.notes,
        )
    result.notes.append(
        f"{NAMES[('segment', 'acc_eq')].label}: interval and significance from the paired bootstrap of "
        "segments, the tie threshold re-calibrated on every resample (a permutation test would "
        "re-calibrate over every pair of cells on every trial)"
    )
