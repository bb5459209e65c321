"""A Ray cluster of real nodes on this machine, bound to 127.0.0.1, for the Ray tests.

Each node is one ``ray start --block`` process in its own session (so killing its process
group takes its raylet, object store and workers with it) with its own temporary folder
(short, under /tmp: Ray's socket paths have a length limit), its own ports (free ones:
other Ray clusters may run on the machine) and its own environment: a node's tasks see
the ``env`` it was started with, e.g. ``EVALAB_NODE_RUNS`` (its private run folders).
Token authentication is off unless a test asks for it (``RAY_AUTH_MODE``): a token file in
``~/.ray`` would otherwise turn it on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
_RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _port_args() -> list[str]:
    return [
        f"--node-manager-port={free_port()}",
        f"--object-manager-port={free_port()}",
        f"--dashboard-agent-listen-port={free_port()}",
        f"--dashboard-agent-grpc-port={free_port()}",
        f"--metrics-export-port={free_port()}",
        f"--runtime-env-agent-port={free_port()}",
        f"--worker-port-list={','.join(str(free_port()) for _ in range(12))}",
    ]


@dataclass
class Node:
    """One started node: its ``ray start --block`` process and its temporary folder."""

    proc: subprocess.Popen[bytes]
    temp: Path
    env: dict[str, str]

    def kill(self) -> None:
        """Kill the node and everything it started (a lost machine)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=30)
        # raylet workers start sessions of their own: find them by the node's folder
        for pid in _pids_using(self.temp):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _pids_using(temp: Path) -> list[int]:
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if str(temp) in cmdline:
            out.append(int(proc.name))
    return out


@dataclass
class Cluster:
    """A head and its worker nodes; ``address`` is the head's ``host:port``."""

    address: str
    env: dict[str, str]
    nodes: list[Node] = field(default_factory=list)

    def start_node(
        self, *, cpus: int, resources: str = "{}", env: dict[str, str] | None = None
    ) -> Node:
        node_env = {**self.env, **(env or {})}
        temp = Path(tempfile.mkdtemp(prefix="ewk", dir="/tmp"))
        argv = [
            _RAY,
            "start",
            f"--address={self.address}",
            f"--node-ip-address={HOST}",
            f"--num-cpus={cpus}",
            "--num-gpus=0",
            f"--resources={resources}",
            f"--temp-dir={temp}",
            "--disable-usage-stats",
            "--block",
            *_port_args(),
        ]
        node = _start(argv, temp, node_env)
        self.nodes.append(node)
        return node

    def wait_for_nodes(self, n: int, timeout: float = 120) -> None:
        """Until ``n`` nodes are alive (``ray status`` through the CLI's own process)."""
        code = (
            "import ray, sys; ray.init(address=sys.argv[1], _node_ip_address='127.0.0.1', "
            "log_to_driver=False); print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run(
                [sys.executable, "-c", code, self.address],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            lines = out.stdout.strip().splitlines()
            if lines and lines[-1].isdigit() and int(lines[-1]) >= n:
                return
            time.sleep(1)
        raise TimeoutError(f"{n} Ray nodes were not alive within {timeout} s")

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.kill()
            shutil.rmtree(node.temp, ignore_errors=True)
        self.nodes.clear()


def _start(argv: list[str], temp: Path, env: dict[str, str]) -> Node:
    log = open(temp / "start.log", "wb")  # noqa: SIM115 - the node's process keeps it
    proc = subprocess.Popen(
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    return Node(proc, temp, env)


def ray_env(auth_mode: str = "disabled", **extra: str) -> dict[str, str]:
    """The environment of the cluster's nodes and drivers."""
    env = dict(os.environ)
    env.update(
        RAY_AUTH_MODE=auth_mode,
        RAY_USAGE_STATS_ENABLED="0",
        RAY_DEDUP_LOGS="0",
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p.endswith("src")),
    )
    env.update(extra)
    return env


@contextlib.contextmanager
def cluster(
    *, head_cpus: int = 0, head_env: dict[str, str] | None = None, env: dict[str, str] | None = None
) -> Iterator[Cluster]:
    """A running head bound to 127.0.0.1 (``head_cpus`` CPUs for tasks); stopped after."""
    base = env or ray_env()
    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="ehd", dir="/tmp"))
    argv = [
        _RAY,
        "start",
        "--head",
        f"--node-ip-address={HOST}",
        f"--port={port}",
        f"--num-cpus={head_cpus}",
        "--num-gpus=0",
        f"--temp-dir={temp}",
        "--include-dashboard=false",
        f"--ray-client-server-port={free_port()}",
        "--disable-usage-stats",
        "--block",
        *_port_args(),
    ]
    c = Cluster(f"{HOST}:{port}", base)
    c.nodes.append(_start(argv, temp, {**base, **(head_env or {})}))
    try:
        yield c
    finally:
        c.stop()
