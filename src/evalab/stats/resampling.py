"""Resampling matrices over per-segment statistics rows, generated in bounded chunks.

Every resampling method in :mod:`evalab.stats` works on the additive stats rows of the
Metric contract: a bootstrap resample is a row of *counts* (how often each segment was
drawn) and its corpus statistics are ``counts @ stats``; an approximate-randomization
trial is a row of 0/1 *swap* indicators applied the same way. No metric is recomputed from
text, and one ``[chunk, n_segments] @ [n_segments, columns]`` matrix product scores a chunk
of resamples for every system and metric at once.

The random streams are those of sacrebleu 2.x (``sacrebleu/significance.py``), so that
the same seed draws the same resamples:

* bootstrap: ``np.random.default_rng(seed).choice(n, size=(n_samples, n), replace=True)``
* approximate randomization: ``np.random.default_rng(seed).integers(2, size=(n_trials, n),
  dtype=bool)``

Chunks hold a multiple of 32 rows: numpy fills these arrays from 32/64-bit draws whose
unused bits are dropped at the end of a call, and with whole multiples of 32 nothing is
dropped, so the chunked stream is bit-for-bit the stream of one big call.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from evalab.errors import InputError, OutOfRangeError, SettingsError
from evalab.metrics.base import Metric
from evalab.metrics.stats_value import Stats

__all__ = [
    "DEFAULT_SEED",
    "Scorer",
    "ar_swaps",
    "as_scorer",
    "bootstrap_counts",
    "check_n_samples",
    "check_seed",
    "chunk_rows_for",
    "compact_stats",
    "resampled_sums",
    "stats_matrix",
]

#: sacrebleu's default seed (``SACREBLEU_SEED`` unset), so defaults reproduce its numbers
DEFAULT_SEED = 12345

#: a vectorised scorer: summed stats ``[..., k]`` -> scores ``[...]``
Scorer = Callable[[np.ndarray], np.ndarray]

#: memory budget of one chunk of the resampling matrix (float64 counts)
_CHUNK_BYTES = 32 * 1024 * 1024
_ROW_MULTIPLE = 32


#: the most resamples or trials accepted: far above what a CI or p-value needs
MAX_SAMPLES = 10_000_000


def check_n_samples(n_samples: Any, what: str = "n_samples") -> int:
    """Validate a number of resamples or trials (an int >= 1)."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral):
        raise OutOfRangeError(what, repr(n_samples), "an integer >= 1")
    n = int(n_samples)
    if n < 1:
        raise OutOfRangeError(what, n_samples, "at least 1")
    if n > MAX_SAMPLES:
        # a typo such as 100000000000 would otherwise run for days (or exhaust memory)
        raise SettingsError(
            f"{what} must be at most {MAX_SAMPLES:,}, got {n_samples:,} (1,000-10,000 is usual)"
        )
    return n


def check_seed(seed: Any) -> int:
    """Validate a seed: a non-negative int. ``0`` is a seed like any other; ``None`` is refused."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise SettingsError(
            f"seed must be a non-negative integer, got {seed!r}; results are always seeded "
            f"(default {DEFAULT_SEED})"
        )
    if seed < 0:
        raise SettingsError(f"seed must be a non-negative integer, got {seed}")
    return int(seed)


def as_scorer(metric_or_scorer: Any) -> tuple[Scorer, str]:
    """Return ``(scores_from_sums, name)`` for a :class:`~evalab.metrics.base.Metric` or a callable.

    A plain callable must be vectorised: it maps summed stats ``[..., k]`` to ``[...]``.
    """
    fn = getattr(metric_or_scorer, "scores_from_sums", None)
    if callable(fn):
        return fn, str(getattr(metric_or_scorer, "name", type(metric_or_scorer).__name__))
    if callable(metric_or_scorer):
        return metric_or_scorer, str(getattr(metric_or_scorer, "__name__", "scorer"))
    raise SettingsError(
        "expected a Metric or a vectorised scorer (summed stats [..., k] -> scores [...]), "
        f"got {type(metric_or_scorer).__name__}"
    )


def stats_matrix(stats: Any, what: str = "stats", metric: Any = None) -> np.ndarray:
    """Per-segment stats as a float64 ``[n_segments, k]`` array (a 1-D array is ``k = 1``).

    ``stats`` is a :class:`~evalab.metrics.stats_value.Stats` value or an array of rows. A
    Stats value scored by a :class:`~evalab.metrics.base.Metric` must come from that
    metric under the same settings (``metric.check_stats``).
    """
    if isinstance(stats, Stats):
        if isinstance(metric, Metric):
            metric.check_stats(stats)
        stats = stats.rows
    arr = np.asarray(stats, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InputError(
            f"{what}: expected per-segment stats rows [n_segments, k], got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise InputError(f"{what}: no segments; resampling needs at least one stats row")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what}: stats contain NaN or infinite values")
    return arr


def chunk_rows_for(n_segments: int, n_samples: int, chunk_rows: int | None = None) -> int:
    """Rows of the resampling matrix generated at once (a multiple of 32, memory-bounded)."""
    if chunk_rows is not None:
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, numbers.Integral):
            raise SettingsError(f"chunk_rows must be a positive multiple of 32, got {chunk_rows!r}")
        if chunk_rows < 1 or chunk_rows % _ROW_MULTIPLE:
            # other sizes would drop random bits between chunks and change the resamples
            raise SettingsError(f"chunk_rows must be a positive multiple of 32, got {chunk_rows}")
        return int(chunk_rows)
    rows = _CHUNK_BYTES // (8 * max(n_segments, 1))
    rows = max(_ROW_MULTIPLE, rows // _ROW_MULTIPLE * _ROW_MULTIPLE)
    needed = -(-n_samples // _ROW_MULTIPLE) * _ROW_MULTIPLE
    return min(rows, needed)


def bootstrap_counts(
    n_segments: int, n_samples: int, seed: int, chunk_rows: int | None = None
) -> Iterator[np.ndarray]:
    """Yield ``[chunk, n_segments]`` count matrices of bootstrap resamples.

    Counts are at most ``n_segments``, exact in float32 below 2**24 segments, so they are
    yielded as float32 (half the memory traffic of the matrix product), else float64.

    Row ``b`` counts how often each segment is drawn in resample ``b`` of
    ``default_rng(seed).choice(n_segments, size=(n_samples, n_segments))`` (sacrebleu's
    index matrix), so ``counts @ stats`` are the resampled corpus statistics.

    >>> next(bootstrap_counts(3, 2, seed=0)).sum(axis=1)
    array([3., 3.], dtype=float32)
    """
    rng = np.random.default_rng(check_seed(seed))
    step = chunk_rows_for(n_segments, n_samples, chunk_rows)
    dtype = np.float32 if n_segments < 2**24 else np.float64
    # indices are drawn and counted _ROW_MULTIPLE rows at a time: the temporaries stay in
    # cache instead of three chunk-sized arrays being faulted in (2-4x faster), and
    # integers(0, n) is the stream of choice(n) (sacrebleu's call) draw for draw
    block = _ROW_MULTIPLE
    shift = (np.arange(block, dtype=np.int64) * n_segments)[:, None]
    done = 0
    while done < n_samples:
        # every chunk but the last has `step` rows, a multiple of 32 (see module docstring)
        rows = min(step, n_samples - done)
        counts = np.empty((rows, n_segments), dtype=dtype)
        for a in range(0, rows, block):
            b = min(a + block, rows)
            idx = rng.integers(0, n_segments, size=(b - a, n_segments))
            idx += shift[: b - a]
            counts[a:b] = np.bincount(idx.ravel(), minlength=(b - a) * n_segments).reshape(
                b - a, n_segments
            )
        yield counts
        done += rows


def ar_swaps(
    n_segments: int, n_trials: int, seed: int, chunk_rows: int | None = None
) -> Iterator[np.ndarray]:
    """Yield float32 0/1 ``[chunk, n_segments]`` swap matrices of approximate randomization.

    Row ``t`` is trial ``t`` of ``default_rng(seed).integers(2, size=(n_trials, n), dtype=bool)``
    (sacrebleu's ``pos_sel``): where it is 1 the baseline keeps its own segment in
    pseudo-system A, where it is 0 the two systems' segments are exchanged.

    >>> next(ar_swaps(4, 2, seed=0)).shape
    (2, 4)
    """
    rng = np.random.default_rng(check_seed(seed))
    step = chunk_rows_for(n_segments, n_trials, chunk_rows)
    done = 0
    while done < n_trials:
        rows = min(step, n_trials - done)
        mask = rng.integers(2, size=(rows, n_segments), dtype=bool)
        yield mask.astype(np.float32)
        done += rows


def compact_stats(stats: np.ndarray, max_weight_sum: float) -> np.ndarray:
    """``stats`` as float32 when every weighted sum is exact in float32, else unchanged.

    Count statistics (BLEU, chrF, exact match) are integers; with non-negative integer
    weights summing to at most ``max_weight_sum`` per resample, every partial sum of
    ``weights @ stats`` is an integer below ``max_weight_sum * max|stats|``. Below 2**24
    float32 represents all of them exactly, and the matrix product runs about twice as fast.
    Fractional statistics (mean-of-scores metrics) stay float64.

    >>> compact_stats(np.array([[1.0, 2.0], [3.0, 0.0]]), 2).dtype
    dtype('float32')
    >>> compact_stats(np.array([[0.5], [1.0]]), 2).dtype
    dtype('float64')
    """
    if stats.size == 0 or not np.all(np.floor(stats) == stats):
        return stats
    if max_weight_sum * float(np.abs(stats).max()) >= 2.0**24:
        return stats
    return stats.astype(np.float32)


def resampled_sums(weights: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """Weighted row sums ``weights @ stats`` for stats ``[n, ...]``: float64 ``[chunk, ...]``.

    The product runs in the dtype of ``stats`` (see :func:`compact_stats`).
    """
    n = stats.shape[0]
    flat = stats.reshape(n, -1)
    sums = weights.astype(flat.dtype, copy=False) @ flat
    out: np.ndarray = sums.astype(np.float64, copy=False).reshape(
        (weights.shape[0], *stats.shape[1:])
    )
    return out
