"""Per-segment statistics computed by the workers of a Ray cluster (``--executor ray``).

:func:`evalab.metrics.parallel.stats_table` cuts the corpus into shards; here each shard
is computed by one of ``-j N`` Ray actors. What travels to an actor is the metric's class
and its settings (and, for a metric that reads sources, the shard's sources), never a
metric object: an actor builds each metric once, so a model is loaded once per worker,
and scores every system of a shard in one :meth:`Metric.stats_many` call. The driver joins
the shards in order, so the rows are those of one process.

Ray is started or joined only here (:func:`ray_session`, for the ablation executor too),
and imported only when a cluster is asked for.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import logging
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from evalab.errors import EvalabError, MissingExtraError, Part, Setting, SettingsError, first_line

if TYPE_CHECKING:
    from evalab.metrics.base import Metric, MetricSettings, Stats


#: seconds ``--ray-timeout`` waits for the cluster at ``--ray-address`` by default
RAY_TIMEOUT_S = 30.0

#: what Ray's core logs while a cluster refuses a driver's token (or its lack of one)
_REFUSED = "Unauthenticated"
#: the settings the refusals name (the CLI: ``-j``, ``--ray-address``)
WORKERS, RAY_ADDRESS = Setting("workers"), Setting("ray_address")
_NO_TOKEN = "no authentication token was found"
_TOKEN_SOURCES = (
    "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH to a file holding it, or ~/.ray/auth_token)"
)


@dataclass(frozen=True)
class RayCluster:
    """Where Ray work runs: the cluster at ``address`` (``None``: the Ray instance this
    process has already joined, else one started on this machine for the call), joined
    within ``timeout`` seconds."""

    address: str | None = None
    timeout: float = RAY_TIMEOUT_S


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
        raise MissingExtraError((Setting("executor"), " ray"), "ray", "ray")


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
    with ray_session(cluster, cpus=workers) as ray:
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
            WORKERS,
            f" {workers}: the Ray cluster has {int(have.get('CPU', 0))} CPU(s); give ",
            WORKERS,
            f" {max(1, int(have.get('CPU', 0)))} or fewer, or add nodes",
        )
    cuda = any(str(getattr(w.settings, "device", "cpu")).startswith("cuda") for w in works)
    if cuda and have.get("GPU", 0) < workers:
        raise SettingsError(
            WORKERS,
            f" {workers} workers on device cuda need one GPU each; the Ray cluster has "
            f"{int(have.get('GPU', 0))}: give ",
            WORKERS,
            f" {max(1, int(have.get('GPU', 0)))} or fewer",
        )
    return 1 if cuda else 0


@contextmanager
def ray_session(cluster: RayCluster, *, cpus: int | None = None) -> Iterator[ModuleType]:
    """Ray, joined to ``cluster``: the instance this process has already joined, else a
    fresh one on this machine (``cpus`` CPUs; all of them for ``None``) when
    ``cluster.address`` is ``None``, else the cluster there within ``cluster.timeout``
    seconds; left again afterwards where it was joined here. The one way evalab starts
    Ray (scoring shards and ablation runs alike). An address not reached in time, a closed
    port and a refused token are each one line (:class:`SettingsError`)."""
    check_ray_installed()
    import ray

    if ray.is_initialized():
        yield ray
        return
    if cluster.address is None:
        try:
            ray.init(**_init_options(None, cpus))
        except Exception as exc:  # a local start that failed: its reason in one line
            raise SettingsError(*_init_error(None, exc)) from None
    else:
        _join(ray, cluster)
    try:
        yield ray
    finally:
        ray.shutdown()


def _init_options(address: str | None, cpus: int | None = None) -> dict[str, Any]:
    """``ray.init`` options: quiet; an instance started here has no dashboard and serves the
    loopback address only; a driver of a cluster on a loopback address registers on that
    address (Ray would otherwise put the machine's own address in its place, which a node
    bound to 127.0.0.1 does not serve)."""
    quiet = {"log_to_driver": False, "logging_level": logging.ERROR}
    if address is None:  # for this command only: no dashboard, nothing beyond the loopback
        here = {"include_dashboard": False, "_node_ip_address": "127.0.0.1", **quiet}
        return here if cpus is None else {**here, "num_cpus": cpus}
    options: dict[str, Any] = {"address": address, **quiet}
    host = _host_port(address)[0]
    try:
        if ipaddress.ip_address(host).is_loopback:
            options["_node_ip_address"] = host
    except ValueError:  # a name (auto, localhost, a host name): Ray resolves it
        pass
    return options


def _host_port(address: str) -> tuple[str, int | None]:
    host, _, port = address.rpartition("://")[2].rpartition(":")
    return (host, int(port)) if host and port.isdigit() else (address, None)


def _join(ray: ModuleType, cluster: RayCluster) -> None:
    """``ray.init(address)`` within ``cluster.timeout`` seconds, else one clear error.

    ``ray.init`` waits for an unreachable address without a limit, so it runs in a thread
    that can be left behind; while it runs, what Ray's core writes to the process's
    standard error (its retries, a cluster's refusal of the driver's token) is caught, so
    the error is one line and a refused token is known at once."""
    address = str(cluster.address)
    unreachable = SettingsError(
        RAY_ADDRESS,
        f" {address}: no Ray cluster answered within {cluster.timeout:g} s (",
        Setting("ray_timeout"),
        "); start one with `ray start --head`, or give the head's address as "
        "`ray status` on the head prints it (host:port, auto or ray://host:10001)",
    )
    host, port = _host_port(address)
    if port is not None:
        try:  # a closed port or an unknown host is known at once, before Ray retries it
            socket.create_connection((host, port), timeout=cluster.timeout).close()
        except OSError:
            raise unreachable from None
    failed: list[BaseException] = []
    done = threading.Event()

    def init() -> None:
        try:
            ray.init(**_init_options(address))
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)
        done.set()

    deadline = time.monotonic() + cluster.timeout
    with _native_stderr_caught() as caught:
        threading.Thread(target=init, name="evalab-ray-init", daemon=True).start()
        while not done.wait(0.2):
            if _REFUSED in caught():
                raise SettingsError(*_refused_error(address))
            if time.monotonic() > deadline:
                raise unreachable
    if failed:
        raise SettingsError(*_init_error(address, failed[0])) from None


@contextmanager
def _native_stderr_caught() -> Iterator[Callable[[], str]]:
    """File descriptor 2 pointed at a temporary file for the block (Ray's core logs there,
    past Python's ``sys.stderr``); yields a function reading what was written so far.

    A block that raises leaves its ``ray.init`` behind, still logging its retries on
    descriptor 2 every few seconds: they would follow the one-line error. So where
    ``sys.stderr`` is descriptor 2, descriptor 2 then points at the null device for the
    rest of the process and ``sys.stderr`` writes to the real standard error."""
    sys.stderr.flush()
    saved = os.dup(2)
    moved = False
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            # pread: the writers share the file's offset, which a read must not move
            yield lambda: os.pread(log.fileno(), 1 << 16, 0).decode("utf-8", "replace")
        except BaseException:
            moved = _stderr_moved_to(saved)
            raise
        finally:
            if not moved:
                os.dup2(saved, 2)
                os.close(saved)


def _stderr_moved_to(real: int) -> bool:
    """``sys.stderr`` on descriptor ``real`` and descriptor 2 on the null device, where
    ``sys.stderr`` is descriptor 2 (not where a caller redirected it, e.g. a test's
    capture); whether it was done."""
    try:
        if sys.stderr is None or sys.stderr.fileno() != 2:
            return False
    except (AttributeError, OSError, ValueError):  # not a file: Ray's core cannot reach it
        return False
    encoding, errors = sys.stderr.encoding, sys.stderr.errors
    sys.stderr = open(real, "w", encoding=encoding, errors=errors, buffering=1)  # noqa: SIM115
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    return True


def _token_mode() -> bool:
    """Whether this driver sends a token (``RAY_AUTH_MODE=token``, or Ray's default with
    a token file in ``~/.ray``), as Ray decides it."""
    raylet = importlib.import_module("ray._raylet")
    mode, modes = (
        getattr(raylet, "get_authentication_mode", None),
        getattr(raylet, "AuthenticationMode", None),
    )
    return mode is not None and modes is not None and bool(mode() == modes.TOKEN)


def _refused_error(address: str) -> tuple[Part, ...]:
    where = (RAY_ADDRESS, f" {address}")
    if _token_mode():
        return (
            *where,
            f": the cluster refused this driver's token; set {_TOKEN_SOURCES} to the "
            "token the cluster was started with",
        )
    return (
        *where,
        ": the cluster requires token authentication and this driver has it off; set "
        f"RAY_AUTH_MODE=token and {_TOKEN_SOURCES} to the cluster's token",
    )


def _init_error(address: str | None, exc: BaseException) -> tuple[Part, ...]:
    where = (RAY_ADDRESS, f" {address}") if address is not None else ("a local Ray instance",)
    if type(exc).__name__ == "AuthenticationError" and _NO_TOKEN in str(exc):
        return (
            *where,
            ": token authentication is on (RAY_AUTH_MODE=token) and this driver has no "
            f"token; set {_TOKEN_SOURCES} to the cluster's token",
        )
    if type(exc).__name__ == "AuthenticationError" and address is not None:
        return _refused_error(address)
    return (*where, f": Ray could not connect: {type(exc).__name__}: {first_line(exc)}")
