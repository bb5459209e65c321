"""Per-segment statistics computed by the workers of a Ray cluster (``--executor ray``).

:func:`evalab.metrics.parallel.stats_table` cuts the corpus into shards; here each shard
is computed by one of ``-j N`` Ray actors. What travels to an actor is the metric's class
and its settings (and, for a metric that reads sources, the shard's sources), never a
metric object: an actor builds each metric once, so a model is loaded once per worker,
and scores every system of a shard in one :meth:`Metric.stats_many` call. The driver joins
the shards in order, so the rows are those of one process.

Ray is imported only here, and only when a cluster is asked for.
"""

from __future__ import annotations

import importlib.util
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType

from evalab.errors import EvalabError, MissingExtraError, SettingsError
from evalab.metrics.base import Metric, MetricSettings, Stats


@dataclass(frozen=True)
class RayCluster:
    """Where ``--executor ray`` computes: the cluster at ``address`` (``None``: a Ray
    instance on this machine, started for the call, or the one this process has already
    joined), joined within ``timeout`` seconds."""

    address: str | None = None
    timeout: float = 30.0


@dataclass(frozen=True)
class ShardWork:
    """One shard of one metric: the rows of every system's segments ``[a, b)``.

    ``key`` names the metric among those of the call (an actor builds it once);
    ``sources`` are the shard's source segments for a metric that reads them.
    """

    key: str
    metric_class: type[Metric]
    settings: MetricSettings
    systems: list[list[str]]
    references: list[list[str | None]]
    sources: list[str] | None = None


def check_ray_installed() -> None:
    """Refuse ``--executor ray`` before any work where Ray is not installed."""
    if importlib.util.find_spec("ray") is None:
        raise MissingExtraError("--executor ray", "ray", "ray")


class _Worker:
    """A Ray actor's state: the metrics it has built, by key (a model loads once)."""

    def __init__(self) -> None:
        self.built: dict[str, Metric] = {}

    def rows(self, work: ShardWork) -> list[Stats]:
        metric = self.built.get(work.key)
        if metric is None:
            metric = self.built[work.key] = work.metric_class(work.settings)
        if work.sources is not None:
            metric = metric.with_sources(work.sources)  # type: ignore[attr-defined]
        return metric.stats_many(work.systems, work.references)


def run_shards(cluster: RayCluster, workers: int, works: Sequence[ShardWork]) -> list[list[Stats]]:
    """Every shard's ``stats_many`` result, in the order of ``works``, on ``workers`` actors."""
    with ray_session(cluster, workers) as ray:
        gpus = _gpus_per_worker(ray, works, workers)
        actor = ray.remote(num_cpus=1, num_gpus=gpus)(_Worker)
        pool = ray.util.ActorPool([actor.remote() for _ in range(workers)])
        try:
            return list(pool.map(lambda a, w: a.rows.remote(w), list(works)))
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, EvalabError):  # bad input, named by the metric: one line
                raise cause from None
            raise


def _gpus_per_worker(ray: ModuleType, works: Sequence[ShardWork], workers: int) -> int:
    """1 where a metric runs on ``cuda`` (one GPU per worker), else 0; refused where the
    cluster has too few CPUs or GPUs for ``workers`` actors (they would wait forever)."""
    have = ray.cluster_resources()
    if have.get("CPU", 0) < workers:
        raise SettingsError(
            f"-j {workers}: the Ray cluster has {int(have.get('CPU', 0))} CPU(s); give -j "
            f"{max(1, int(have.get('CPU', 0)))} or fewer, or add nodes"
        )
    cuda = any(str(getattr(w.settings, "device", "cpu")).startswith("cuda") for w in works)
    if cuda and have.get("GPU", 0) < workers:
        raise SettingsError(
            f"-j {workers} workers on device cuda need one GPU each; the Ray cluster has "
            f"{int(have.get('GPU', 0))}: give -j {max(1, int(have.get('GPU', 0)))} or fewer"
        )
    return 1 if cuda else 0


@contextmanager
def ray_session(cluster: RayCluster, workers: int) -> Iterator[ModuleType]:
    """Ray, joined to ``cluster`` (left again afterwards where it was joined here)."""
    check_ray_installed()
    import ray

    if ray.is_initialized():
        yield ray
        return
    if cluster.address is None:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    else:
        _join(ray, cluster)
    try:
        yield ray
    finally:
        ray.shutdown()


def _join(ray: ModuleType, cluster: RayCluster) -> None:
    """``ray.init(address)`` within ``cluster.timeout`` seconds, else one clear error."""
    address = str(cluster.address)
    unreachable = SettingsError(
        f"--ray-address {address}: no Ray cluster answered within {cluster.timeout:g} s "
        "(--ray-timeout); start one with `ray start --head` or check the address"
    )
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if host and port.isdigit():
        try:  # a closed port or an unknown host is known at once, before Ray retries it
            socket.create_connection((host, int(port)), timeout=cluster.timeout).close()
        except OSError:
            raise unreachable from None
    failed: list[BaseException] = []

    def init() -> None:
        try:
            ray.init(address=address, log_to_driver=False)
        except Exception as exc:  # re-raised on the calling thread
            failed.append(exc)

    thread = threading.Thread(target=init, daemon=True)
    thread.start()
    thread.join(cluster.timeout)
    if thread.is_alive() or failed:
        raise unreachable
