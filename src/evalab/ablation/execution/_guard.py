"""The process a command-template run starts in: it runs the command and dies with the runner.

An entry-point run's worker watches its parent itself; a shell command cannot, so the
runner starts ``python -c BOOTSTRAP this_file PARENT_PID ARGV...`` as a new session (its
own process group) and this guard runs ARGV (the command's own program, or ``/bin/sh -c
SCRIPT``) inside that group. When the
runner dies, even by SIGKILL, the guard kills the whole group: on Linux at once through
``prctl(PR_SET_PDEATHSIG)``, everywhere within 0.1 s by watching its parent pid. Only the
standard library is used, and nothing of evalab, so the guard starts fast.
"""

import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1


def _kill_group(*_args: object) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _death_signal() -> None:
    """Ask Linux to send SIGTERM to this process when its parent dies (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the parent-pid watch below still works


def main(parent: int, argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _kill_group)
    _death_signal()
    if os.getppid() != parent:  # the runner died before the watch was in place
        _kill_group()
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:  # as the shell says it: the program cannot be started
        print(f"{argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    while True:
        try:
            code = child.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            if os.getppid() != parent:
                _kill_group()
            continue
        return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[2]), sys.argv[3:]))
