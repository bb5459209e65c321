"""Running ``python -m evalab`` in a subprocess and checking a refusal the way a user meets it.

A refusal is: exit code 2, exactly one line on stderr (``evalab: error: ...``, no
traceback), nothing on stdout, and no file changed, created or removed under the watched
folders (the inputs are hashed before and after).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def evalab(
    *args: object,
    cwd: Path | None = None,
    umask: int = 0o022,
    stdin: bytes | None = None,
    timeout: float = 300,
) -> Run:
    """``python -m evalab ARGS`` with this checkout's sources first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_NUM_THREADS", "1")
    # a refusal is checked, not progress: a slow start on a loaded machine prints no load line
    env.setdefault("EVALAB_PROGRESS_INTERVAL", "3600")
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
) -> str:
    """Run ``evalab ARGS``; assert a one-line refusal containing ``needle`` and no file change."""
    before = snapshot(*watch)
    run = evalab(*args, cwd=cwd, stdin=stdin)
    lines = run.stderr.splitlines()
    assert run.returncode == 2, (args, run.returncode, run.stderr)
    assert len(lines) == 1 and lines[0].startswith("evalab: error: "), (args, run.stderr)
    assert "Traceback" not in run.stderr
    assert needle in lines[0], (args, lines[0])
    assert run.stdout == "", (args, run.stdout)
    assert snapshot(*watch) == before, f"{args}: files changed"
    return lines[0]
