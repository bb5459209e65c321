"""Scoring shards of a corpus in parallel processes.

The Metric contract makes this exact: per-segment stats rows of contiguous shards,
concatenated in order, are the rows of the whole corpus, so the corpus score is the same
number whatever the number of jobs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from evalab.errors import SettingsError
from evalab.metrics.base import Metric, check_references


def _shard_stats(args: tuple[Metric, list[str], list[list[str]]]) -> np.ndarray:
    metric, hyps, refs = args
    return metric.stats(hyps, refs)


def shard_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into at most ``parts`` contiguous, nearly equal ranges."""
    parts = max(1, min(parts, n))
    edges = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges) if b > a]


def parallel_stats(
    metric: Metric,
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    jobs: int,
) -> np.ndarray:
    """``metric.stats(hypotheses, references)`` computed on ``jobs`` processes."""
    if jobs < 1:
        raise SettingsError(f"--jobs must be at least 1, got {jobs}")
    hyps, refs = check_references(hypotheses, references, metric=metric.name)
    if jobs == 1 or len(hyps) < 2 or not getattr(metric, "parallel_safe", True):
        return metric.stats(hyps, refs)
    bounds = shard_bounds(len(hyps), jobs)
    # imported here: process pools are only needed with --jobs > 1, and every CLI call
    # pays for module imports in its start-up time
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    tasks = [(metric, hyps[a:b], [s[a:b] for s in refs]) for a, b in bounds]
    # fork is cheap and safe here: shards only read their own inputs and return arrays
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=len(tasks), mp_context=ctx) as pool:
        parts = list(pool.map(_shard_stats, tasks))
    return np.concatenate(parts, axis=0)
