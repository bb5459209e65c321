"""Running ``python -m evalab`` in a subprocess and checking a refusal the way a user meets it.

A refusal is: exit code 2, exactly one line on stderr (``evalab: error: ...``, no
traceback), nothing on stdout, and no file changed, created or removed under the watched
folders (the inputs are hashed before and after).

:func:`evalab` starts a fresh interpreter; :func:`forked` forks one that has imported the
CLI already (``forked.py``): the same process boundary, exit path and streams, ~0.3 s of CPU
less a command. :func:`assert_refused` forks unless told ``fresh=True``;
``test_refusals.py`` runs its table of every command's bad input fresh, so what a fresh
start imports (each command's module alone) stays tested.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def _environment() -> dict[str, str]:
    """The caller's environment with this checkout's sources first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_NUM_THREADS", "1")
    # a refusal is checked, not progress: a slow start on a loaded machine prints no load line
    env.setdefault("EVALAB_PROGRESS_INTERVAL", "3600")
    return env


def evalab(
    *args: object,
    cwd: Path | None = None,
    umask: int = 0o022,
    stdin: bytes | None = None,
    timeout: float = 300,
) -> Run:
    """``python -m evalab ARGS`` in a fresh interpreter."""
    env = _environment()
    proc = subprocess.run(
        [sys.executable, "-m", "evalab", *map(str, args)],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        umask=umask,
        check=False,
    )
    return Run(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


@functools.cache
def _fork_server() -> subprocess.Popen[str]:
    """The fork server of this test session (started on first use, stopped at exit)."""
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("forked.py"))],
        env=_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def stop() -> None:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=60)

    atexit.register(stop)
    return server


def forked(
    *args: object,
    cwd: Path | None = None,
    umask: int = 0o022,
    stdin: bytes | None = None,
    timeout: float = 300,
) -> Run:
    """``python -m evalab ARGS`` in a child of the fork server (see ``forked.py``)."""
    server = _fork_server()
    assert server.stdin is not None and server.stdout is not None
    with tempfile.TemporaryDirectory(prefix="evalab-forked-") as tmp:
        streams = {name: Path(tmp) / name for name in ("stdin", "stdout", "stderr")}
        streams["stdin"].write_bytes(stdin or b"")
        for name in ("stdout", "stderr"):
            streams[name].touch()
        request = {
            "args": [str(a) for a in args],
            "cwd": str(cwd or Path.cwd()),
            "env": _environment(),
            "umask": umask,
            "timeout": timeout,
            **{name: str(path) for name, path in streams.items()},
        }
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        answer: dict[str, Any] = {}
        while answer.get("request") != request["stdout"]:  # an interrupted call's is skipped
            line = server.stdout.readline()
            if not line:
                raise RuntimeError(f"the fork server ended (exit code {server.wait()})")
            answer = json.loads(line)
        return Run(
            int(answer["returncode"]),
            streams["stdout"].read_bytes().decode("utf-8", "replace"),
            streams["stderr"].read_bytes().decode("utf-8", "replace"),
        )


def snapshot(*folders: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folders`` (symbolic links by their target path)."""
    digests = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_symlink():
                digests[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                digests[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                digests[str(path)] = "folder"
    return digests


def assert_refused(
    args: tuple[object, ...],
    needle: str,
    *,
    watch: tuple[Path, ...],
    cwd: Path | None = None,
    stdin: bytes | None = None,
    fresh: bool = False,
) -> str:
    """Run ``evalab ARGS`` (forked, or in a fresh interpreter when ``fresh``); assert a
    one-line refusal containing ``needle`` and no file change."""
    before = snapshot(*watch)
    run = (evalab if fresh else forked)(*args, cwd=cwd, stdin=stdin)
    lines = run.stderr.splitlines()
    assert run.returncode == 2, (args, run.returncode, run.stderr)
    assert len(lines) == 1 and lines[0].startswith("evalab: error: "), (args, run.stderr)
    assert "Traceback" not in run.stderr
    assert needle in lines[0], (args, lines[0])
    assert run.stdout == "", (args, run.stdout)
    assert snapshot(*watch) == before, f"{args}: files changed"
    return lines[0]
