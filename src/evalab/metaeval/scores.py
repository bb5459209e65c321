"""Metric scores to meta-evaluate: per system and per segment, recomputable on resamples.

A :class:`MetricScores` holds a metric's segment scores ``[systems, segments]`` and knows
how to score every system on a bootstrap resample of segments (a count matrix
``[B, segments]``):

* ``corpus`` (the default for evalab metrics): the metric's corpus score of the resampled
  stats rows, ``scores_from_sums(counts @ rows)``. For BLEU this is corpus BLEU of the
  resample, not a mean of sentence scores (the stats contract makes it a weighted sum);
* ``mean``: the mean of the segment scores over the resampled segments;
* ``rated-mean``: the mean over the resampled segments the humans rated for that system;
* ``given``: a precomputed system score (``--scores`` with ``-``), fixed: no interval.

Segment scores of evalab metrics are the metric's sentence scores: sentence BLEU uses
effective order, as sacrebleu's ``sentence_bleu``; other metrics score each stats row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evalab.errors import InputError, OutOfRangeError, Setting
from evalab.io import read_segments
from evalab.metaeval.human import parse_segment_id, score_value
from evalab.metrics.base import Metric, Refs
from evalab.stats.resampling import compact_stats, resampled_sums

__all__ = [
    "METRIC_SYSTEM_MODES",
    "MetricScores",
    "metric_scores",
    "read_precomputed",
]

METRIC_SYSTEM_MODES = ("corpus", "mean", "rated-mean")
#: the precomputed scores file the refusals name (the CLI: ``--scores``)
SCORES = Setting("scores")

#: counts ``[B, segments]`` -> system scores ``[B, systems]``
Resampler = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class MetricScores:
    """One metric's scores of the systems: ``segment`` ``[S, N]`` (or None), ``system`` ``[S]``."""

    name: str
    signature: str
    system: np.ndarray
    segment: np.ndarray | None
    system_mode: str
    resample: Resampler | None
    #: signature of the segment scores when it differs (sentence BLEU: effective order)
    segment_signature: str = ""
    #: the metric is lower-is-better and its scores here are negated (higher = better, as
    #: every statistic assumes); plots draw them back on the metric's own scale
    negated: bool = False


def _rows(value: object) -> np.ndarray:
    # the stats contract may hand back a value object with the rows in ``.rows``
    return np.asarray(getattr(value, "rows", value), dtype=np.float64)


def _mean_resampler(segment: np.ndarray, mask: np.ndarray | None) -> Resampler:
    weights = np.ones_like(segment, dtype=bool) if mask is None else mask
    masked = np.where(weights, segment, 0.0)

    def resample(counts: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            out: np.ndarray = (counts @ masked.T) / (counts @ weights.T.astype(np.float64))
            return out

    return resample


def _corpus_resampler(metric: Metric, rows: list[np.ndarray]) -> Resampler:
    compact = [compact_stats(r, r.shape[0]) for r in rows]

    def resample(counts: np.ndarray) -> np.ndarray:
        return np.stack(
            [metric.scores_from_sums(resampled_sums(counts, r)) for r in compact], axis=1
        )

    return resample


def system_scores_from_segments(
    name: str, segment: np.ndarray, mode: str, mask: np.ndarray
) -> tuple[np.ndarray, Resampler]:
    """System scores as means of segment scores (``mean`` or ``rated-mean``) and their resampler."""
    resample = _mean_resampler(segment, mask if mode == "rated-mean" else None)
    full = resample(np.ones((1, segment.shape[1])))[0]
    if not np.all(np.isfinite(full)):
        raise InputError(
            f"{name}: a system has no segment to average over for ",
            Setting("metric_system"),
            f" {mode}",
        )
    return full, resample


def metric_scores(
    name: str,
    metric: Metric,
    systems: Sequence[Sequence[str]],
    references: Refs,
    mode: str,
    human_mask: np.ndarray,
) -> MetricScores:
    """Score every system with an evalab metric: system (``mode``) and segment scores."""
    if mode not in METRIC_SYSTEM_MODES:
        raise OutOfRangeError(
            "metric_system", repr(mode), f"one of {', '.join(METRIC_SYSTEM_MODES)}"
        )
    rows = [_rows(r) for r in metric.stats_many(list(systems), references)]
    # segment scores are sentence-level scores (BLEU: effective order), from the same rows
    sentence_metric = metric.sentence_metric()
    segment = np.stack([sentence_metric.scores_from_sums(r) for r in rows])
    signature = metric.signature_for(len(references))
    sentence = sentence_metric.signature_for(len(references))
    sentence = "" if sentence == signature else sentence
    if mode == "corpus":
        resample = _corpus_resampler(metric, rows)
        system = np.array([float(metric.scores_from_sums(r.sum(axis=0))) for r in rows])
    else:
        system, resample = system_scores_from_segments(name, segment, mode, human_mask)
    negated = not metric.higher_is_better
    if negated:
        # every statistic assumes higher = better; a lower-is-better metric is negated
        segment, system = -segment, -system
        signature += "|negated:yes"
        resample = _negated(resample)
    return MetricScores(name, signature, system, segment, mode, resample, sentence, negated)


def _negated(resample: Resampler) -> Resampler:
    return lambda counts: -resample(counts)


def _parse_line(line: str, where: str) -> tuple[str, str, str, float]:
    parts = line.split("\t")
    if len(parts) != 4:
        parts = line.split()
    if len(parts) != 4:
        raise InputError(
            f"{where}: expected 4 columns (METRIC<TAB>SYSTEM<TAB>SEGMENT or -<TAB>SCORE), got {len(parts)}"
        )
    return parts[0], parts[1], parts[2], score_value(parts[3], where)


def read_precomputed(
    path: str, systems: Callable[[str], str | None], n_segments: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Read ``--scores``: ``metric system segment|- score`` lines -> ``{metric: {system: {seg: score}}}``.

    ``systems`` maps a system name of the file to the ``-i`` system it denotes (None for
    a system not evaluated now: its lines are skipped). Segments count from 1 (``-`` =
    the system-level score).
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    lines = read_segments(path)
    lines[0] = lines[0].removeprefix("\ufeff")  # a byte-order mark would stick to the first field
    header = lines[0].split()[:3] == ["metric", "system", "segment"]
    for no, line in enumerate(lines[1:] if header else lines, start=2 if header else 1):
        if not line.strip():
            continue
        where = f"{path}:{no}"
        metric, system, seg, value = _parse_line(line, where)
        target = systems(system)
        if target is None:
            continue  # a system not meta-evaluated now (as in the human file); a missing one is refused later
        if seg != "-":
            # keyed by the id's value: "01" and "1" are one segment, scored twice
            seg = str(
                parse_segment_id(
                    seg, where, n_segments, "segments count from 1; - for a system score"
                )
                + 1
            )
        cell = out.setdefault(metric, {}).setdefault(target, {})
        if seg in cell:
            raise InputError(
                f"{where}: {metric} has a second score for system {system!r}, segment {seg}"
            )
        cell[seg] = value
    if not out:
        raise InputError(f"{path}: no scores found")
    return out


def precomputed_scores(
    name: str,
    table: Mapping[str, Mapping[str, float]],
    systems: Sequence[str],
    n_segments: int,
    mode: str,
    human_mask: np.ndarray,
    source: str = "",
) -> MetricScores:
    """A :class:`MetricScores` from one metric's rows of a ``--scores`` file."""
    missing = [s for s in systems if s not in table]
    if missing:
        raise InputError(
            SCORES, f": metric {name!r} has no scores for system(s) {', '.join(missing)}"
        )
    segs = [str(k) for k in range(1, n_segments + 1)]
    has_segments = [any(k in table[s] for k in segs) for s in systems]
    segment = None
    if any(has_segments):
        for s in systems:
            gap = next((k for k in segs if k not in table[s]), None)
            if gap is not None:
                raise InputError(
                    SCORES, f": metric {name!r} has no score for system {s!r}, segment {gap}"
                )
        segment = np.array([[table[s][k] for k in segs] for s in systems])
    if all("-" in table[s] for s in systems):
        system = np.array([table[s]["-"] for s in systems])
        return MetricScores(name, f"precomputed:{source}", system, segment, "given", None)
    if any("-" in table[s] for s in systems):
        raise InputError(
            SCORES, f": metric {name!r} has a system-level score ('-') for some systems only"
        )
    assert segment is not None  # every system has rows, none is '-'
    sys_mode = "mean" if mode == "corpus" else mode  # a file's scores have no corpus stats
    system, resample = system_scores_from_segments(name, segment, sys_mode, human_mask)
    return MetricScores(name, f"precomputed:{source}", system, segment, sys_mode, resample)
