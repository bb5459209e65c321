"""Per-segment statistics of many systems and metrics, in parallel where it pays.

Shards of a corpus go to processes (``--jobs``): the Metric contract makes this exact, as
per-segment stats rows of contiguous shards, concatenated in order
(:meth:`Stats.concat <evalab.metrics.stats_value.Stats.concat>`), are the rows of the
whole corpus, so the corpus score is the same number whatever the number of jobs. A
metric that declares its rows not additive (IDF-weighted BERTScore) is never sharded.
Metrics whose statistics come mostly from the compiled kernel (``Metric.releases_gil``)
run on a thread each beside the others, one metric object per thread.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from evalab.errors import OutOfRangeError, Setting, SettingsError
from evalab.metrics.base import Metric, Refs, Stats, check_references
from evalab.metrics.missing_refs import reference_count

if TYPE_CHECKING:
    from evalab.metrics.ray_shards import RayCluster, ShardWork


def _shard_stats(args: tuple[Metric, list[str], list[list[str]]]) -> Stats:
    metric, hyps, refs = args
    return metric.stats(hyps, refs)


def shard_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into at most ``parts`` contiguous, nearly equal ranges.

    >>> shard_bounds(5, 2)
    [(0, 2), (2, 5)]
    """
    parts = max(1, min(parts, n))
    edges = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges) if b > a]


def shardable(metric: Metric) -> bool:
    """Whether ``metric``'s rows may be computed on contiguous parts of the corpus and joined:
    they are additive, and it holds no state a forked process must not share (a torch model,
    ``parallel_safe``) and no segments bound to the whole corpus (COMET's ``--source``)."""
    return (
        metric.additive
        and getattr(metric, "parallel_safe", True)
        and not getattr(metric, "uses_source", False)
    )


def parallel_stats(
    metric: Metric,
    hypotheses: Sequence[str],
    references: Refs,
    jobs: int,
) -> Stats:
    """``metric.stats(hypotheses, references)`` computed on ``jobs`` processes."""
    if jobs < 1:
        raise OutOfRangeError("jobs", jobs, "at least 1")
    hyps, refs = check_references(
        hypotheses, references, metric=metric.name, optional=not metric.needs_references
    )
    if jobs == 1 or len(hyps) < 2 or not shardable(metric):
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
    return joined(metric, parts, refs)


def joined(metric: Metric, parts: Sequence[Stats], refs: Refs) -> Stats:
    """The shards' rows in order, as one value labelled with the whole corpus's references."""
    # with None references a shard may count its references differently from the whole
    # corpus (2 here, 'var' there); the rows do not depend on the count, the label does
    nrefs = reference_count(refs)
    return Stats.concat(
        [p if p.nrefs == nrefs else metric.make_stats(p.rows, nrefs, p.context) for p in parts]
    )


def stats_table(
    metrics: Mapping[str, Metric],
    systems: Mapping[str, Sequence[str]],
    references: Refs,
    jobs: int = 1,
    cluster: RayCluster | None = None,
) -> dict[str, dict[str, Stats]]:
    """``{metric: {system: Stats}}`` for every metric and system.

    With ``jobs == 1`` every metric scores all systems in one :meth:`Metric.stats_many`
    call, and with several metrics each one that ``releases_gil`` runs on a thread of its
    own while the main thread does the others (a metric object is only ever used by one
    thread). With ``jobs > 1`` every
    ``(metric, system)`` is sharded over processes instead. The rows are the same either
    way; if computations fail, the error of the first metric (in the given order) is raised.
    With a ``cluster``, ``jobs`` Ray workers compute the shards (:func:`cluster_table`).
    """
    if jobs < 1:
        raise OutOfRangeError("jobs", jobs, "at least 1")
    if cluster is not None:
        return cluster_table(metrics, systems, references, jobs, cluster)
    table: dict[str, dict[str, Stats]] = {name: {} for name in metrics}
    errors: dict[str, BaseException] = {}

    def fill(name: str) -> None:
        try:
            metric = metrics[name]
            if jobs == 1:
                # all systems in one call: BLEU and chrF share the reference-side work
                rows = metric.stats_many(list(systems.values()), references)
                table[name] = dict(zip(systems, rows, strict=True))
            else:
                for system, hyps in systems.items():
                    table[name][system] = parallel_stats(metric, hyps, references, jobs)
        except Exception as exc:  # re-raised in the calling thread, in metric order
            errors[name] = exc

    threaded = (
        [n for n, m in metrics.items() if m.releases_gil] if jobs == 1 and len(metrics) > 1 else []
    )
    if len(threaded) == len(metrics):
        threaded = threaded[1:]  # the main thread takes one of them instead of waiting
    workers = [threading.Thread(target=fill, args=(n,), daemon=True) for n in threaded]
    for worker in workers:
        worker.start()
    for name in metrics:
        if name not in threaded:
            fill(name)
    for worker in workers:
        worker.join()
    for name in metrics:
        if name in errors:
            raise errors[name]
    return table


def cluster_table(
    metrics: Mapping[str, Metric],
    systems: Mapping[str, Sequence[str]],
    references: Refs,
    workers: int,
    cluster: RayCluster,
) -> dict[str, dict[str, Stats]]:
    """:func:`stats_table` on ``workers`` Ray workers (:mod:`evalab.metrics.ray_shards`).

    Every metric is cut into ``workers`` contiguous shards, each scoring all systems in one
    :meth:`Metric.stats_many` call; a metric whose rows are not additive (IDF BERTScore) is
    one shard, the whole corpus, as in one process. Shards join in order: the same rows.
    """
    if workers < 2:
        raise SettingsError(
            Setting("executor"),
            " ray shards over ",
            Setting("workers"),
            " N Ray workers; ",
            Setting("workers"),
            f" {workers} is one process: give ",
            Setting("workers"),
            " 2 or more",
        )
    from evalab.metrics.ray_shards import run_shards

    optional = not any(m.needs_references for m in metrics.values())
    checked = {
        s: check_references(h, references, metric=next(iter(metrics), "score"), optional=optional)
        for s, h in systems.items()
    }
    refs = next(iter(checked.values()))[1] if checked else [list(r) for r in references]
    n = len(next(iter(checked.values()))[0]) if checked else 0
    works, index = [], []
    for name, metric in metrics.items():
        bounds = shard_bounds(n, workers) if metric.additive else [(0, n)]
        for a, b in bounds or [(0, 0)]:
            works.append(
                _shard_work(name, metric, [h[a:b] for h, _ in checked.values()], refs, a, b)
            )
            index.append(name)
    results = run_shards(cluster, workers, works)
    table: dict[str, dict[str, Stats]] = {}
    for name, metric in metrics.items():
        parts = [r for key, r in zip(index, results, strict=True) if key == name]
        table[name] = {
            system: joined(metric, [part[k] for part in parts], refs)
            for k, system in enumerate(checked)
        }
    return table


def _shard_work(
    key: str, metric: Metric, hyps: list[list[str]], refs: list[list[str | None]], a: int, b: int
) -> ShardWork:
    """What a Ray worker needs for rows ``[a, b)`` of ``metric``: its class and settings."""
    from evalab.metrics.ray_shards import ShardWork

    sources = getattr(metric, "sources", None) if getattr(metric, "uses_source", False) else None
    return ShardWork(
        key,
        type(metric),
        metric.settings,
        hyps,
        [s[a:b] for s in refs],
        None if sources is None else sources[a:b],
    )
