"""Who is running a run: lease owners, whether they are still alive, and their heartbeat.

A runner claims a run in the store before starting it (a lease row naming the owner's host,
pid and a heartbeat time). Another runner skips a run with a live lease and reclaims one
whose owner died: on the same host the pid is checked, on any host a heartbeat older than
the lease timeout means the owner is gone (a runner that cannot reach the store stops
heartbeating, but then it cannot store results or claim runs either).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

#: seconds between heartbeats, and the age after which a lease counts as abandoned
HEARTBEAT_S = 5.0
LEASE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Owner:
    """A runner process: a unique id plus where it runs."""

    id: str
    host: str
    pid: int

    @staticmethod
    def here() -> Owner:
        return Owner(id=uuid.uuid4().hex[:16], host=socket.gethostname(), pid=os.getpid())


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def lease_alive(
    host: str,
    pid: int,
    heartbeat: float,
    *,
    timeout: float = LEASE_TIMEOUT_S,
    now: float | None = None,
) -> bool:
    """Whether a lease's owner is still running its run.

    >>> lease_alive("elsewhere", 1, heartbeat=100.0, timeout=60.0, now=130.0)
    True
    >>> lease_alive("elsewhere", 1, heartbeat=100.0, timeout=60.0, now=200.0)
    False
    """
    t = time.time() if now is None else now
    if t - heartbeat > timeout:
        return False
    if host == socket.gethostname():
        return pid_alive(pid)
    return True


class Heartbeat:
    """A daemon thread calling ``beat()`` every ``interval`` seconds until stopped.

    A beat that fails (a busy database) is skipped: the next one tries again.
    """

    def __init__(self, beat: Callable[[], None], interval: float = HEARTBEAT_S) -> None:
        self._beat = beat
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="evalab-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            with contextlib.suppress(Exception):
                self._beat()
