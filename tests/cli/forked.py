"""A fork server for ``python -m evalab``: an interpreter that has imported evalab's CLI once
and forks a child per command, so a test meets a real process (its own exit code, file
descriptors, working folder, environment, umask, stdin and interpreter exit) without paying
the interpreter's start and evalab's imports each time (~0.3 s of CPU a command).

Run as a script by :mod:`tests.cli.refusal`; it reads one JSON request a line on stdin and
answers each with one JSON line on stdout (the child's exit status as ``subprocess`` gives
it: negative for a signal). Importing this module does nothing.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import traceback
from typing import Any

#: what every command's process imports before it reads its arguments (the app, typer and
#: rich), and the helpers most commands load (their input checks, the metric registry,
#: numpy). No command module: importing one registers its command, and a fresh process
#: registers only the command it runs. torch only when needed (below)
PRELOAD = ("evalab.cli", "evalab.cli.app", "evalab.cli.inputs", "numpy")
#: imported (once, before the fork) when a command may load a model: torch and transformers
#: cost ~3 s of CPU a start. Only imported, never run: a fork must not inherit torch's threads
MODEL_PRELOAD = ("torch", "transformers")
MODEL_COMMANDS = frozenset({"ppl", "semsim"})
MODEL_WORDS = ("comet", "bertscore", "model")


def _may_load_a_model(args: list[str]) -> bool:
    """Whether ``evalab ARGS`` may load a model (a guess: a wrong one costs time only)."""
    return bool(MODEL_COMMANDS & set(args)) or any(w in a for a in args for w in MODEL_WORDS)


def _preload_models() -> None:
    for name in MODEL_PRELOAD:
        try:
            __import__(name)
        except ImportError:
            return


def _reopen_standard_streams() -> None:
    """sys.stdin/stdout/stderr over the child's descriptors 0, 1 and 2, configured as a fresh
    interpreter configures them for files and pipes."""
    streams = {
        "stdin": open(0, encoding="utf-8", closefd=False),  # noqa: SIM115
        "stdout": open(1, "w", encoding="utf-8", closefd=False),  # noqa: SIM115
        "stderr": open(2, "w", 1, "utf-8", "backslashreplace", closefd=False),  # noqa: SIM115
    }
    for name, stream in streams.items():
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _exit_code(exc: SystemExit) -> int:
    """The status a fresh interpreter exits with for ``exc`` (printing a non-int code)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _child(request: dict[str, Any]) -> None:
    """Become ``python -m evalab ARGS`` for ``request``; never returns."""
    code = 1
    try:
        for fd, (path, flags) in enumerate(
            [
                (request["stdin"], os.O_RDONLY),
                (request["stdout"], os.O_WRONLY | os.O_TRUNC),
                (request["stderr"], os.O_WRONLY | os.O_TRUNC),
            ]
        ):
            os.dup2(os.open(path, flags), fd)
        _reopen_standard_streams()
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        signal.alarm(max(1, int(request["timeout"])))  # SIGALRM ends a command that hangs
        sys.argv = ["evalab", *request["args"]]
        try:
            runpy.run_module("evalab", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:
            traceback.print_exc()
            code = 1
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # the fork server's own failure: shown where the test reads stderr
        traceback.print_exc()
    finally:
        os._exit(code)


def _status(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return -os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def serve() -> None:
    """Answer requests until stdin closes."""
    for name in PRELOAD:
        __import__(name)
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    for line in requests:
        request = json.loads(line)
        if _may_load_a_model(request["args"]):
            _preload_models()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            answers.close()
            _child(request)
        _, wait_status, usage = os.wait4(pid, 0)
        cpu = usage.ru_utime + usage.ru_stime
        # the stdout path names the request: a caller interrupted mid-request (a test's
        # timeout) leaves an answer the next caller must skip
        answer = {"request": request["stdout"], "returncode": _status(wait_status), "cpu": cpu}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
