"""The code a fresh interpreter runs for one entry-point run.

The runner starts ``python -c BOOTSTRAP this_file job.bin``; the bootstrap executes this
file as ``__main__`` rather than ``-m evalab.ablation.execution._worker`` so a run does not pay for
importing evalab (and numpy) before the user's code: the runner's own
overhead per run stays small next to the run. It only uses the standard library, and
``marshal`` (built in) rather than ``json`` for the job and result files, since importing
json (and the ``re`` it pulls in) is a measurable part of a no-op run.

The job file names the study folder (put first on ``sys.path`` and used as the cwd), the
entry point, the configuration, the seed and the output folder; for an eval run also the
checkpoint folder (the trained run's folder), passed as the third argument:
``evaluate(config, seed, checkpoint_dir)``. The result is written
with marshal to ``result.bin`` in that folder: ``{"ok": true, "metrics": ..., "artifacts": ...,
"per_example": ...}`` (``per_example``: the run's ``{metric: [value per test example]}`` or None)
or ``{"ok": false, "error": ..., "traceback": ...}``; both with ``"inputs"``, the files under
the study's folders (``job["roots"]``) the run opened for reading or imported a module
from, as an audit hook (:func:`sys.addaudithook`) in this process observed them: ``open()``,
``io.open_code`` (every import from source or bytecode), ``os.open`` and whatever builds on
them (numpy, pandas, ``importlib``) cannot read a file unseen.
"""

import importlib
import marshal
import os
import sys
import threading
import time

# mypy reads the names below; at run time nothing is imported (the ``typing`` import would
# cost every run: see the module docstring), so annotations naming them are strings
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _watch_parent(parent: int) -> None:
    # If the runner is killed (SIGKILL, OOM), end the run's whole process group (the run
    # may have started data loaders) instead of finishing an orphaned run nobody stores.
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            try:
                os.killpg(os.getpgrp(), 9)
            finally:
                os._exit(3)


def _plain(value: object, depth: int = 0) -> object:
    """Only types marshal can write and JSON can store; anything else becomes its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy arrays and scalars
        return _plain(value.tolist(), depth + 1)
    if depth < 20 and isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if depth < 20 and isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return repr(value) if not hasattr(value, "__fspath__") else os.fspath(value)


def _watch_reads(roots: list[str]) -> tuple[dict[str, None], dict[str, None]]:
    """Install the audit hook; it fills two dicts (used as ordered sets): the files under
    ``roots`` opened for reading, and those opened for writing (a file the run writes
    itself, a cache, is its output, not an input)."""
    seen: dict[str, None] = {}
    written: dict[str, None] = {}
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)
    abspath = os.path.abspath

    def hook(event: str, args: "tuple[Any, ...]") -> None:
        if event != "open":
            return
        path, mode, flags = args
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return  # a file descriptor: the file was opened (and seen) before
        full = path if path.startswith(prefixes) else abspath(path)
        if not full.startswith(prefixes):
            return
        if (
            (flags & 3)
            if mode is None
            else ("w" in mode or "a" in mode or "x" in mode or "+" in mode)
        ):
            written[full] = None  # O_WRONLY / O_RDWR, or a writing mode
        else:
            seen[full] = None

    sys.addaudithook(hook)
    return seen, written


def _inputs(seen: dict[str, None], written: dict[str, None], roots: list[str]) -> list[str]:
    return [p for p in [*seen, *_module_files(roots)] if p not in written]


def _module_files(roots: list[str]) -> list[str]:
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)
    files = (getattr(m, "__file__", None) for m in list(sys.modules.values()))
    return [f for f in files if isinstance(f, str) and f.startswith(prefixes)]


def _write(path: str, payload: dict[str, object]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        marshal.dump(payload, fh)
    os.replace(tmp, path)


def _metrics(out: dict[object, object]) -> dict[str, object]:
    """The values an entry point returned, as plain data: a numpy scalar (anything with
    ``item()`` that is not a str) as its Python number, anything else unknown as its repr."""
    metrics: dict[str, object] = {}
    for k, v in out.items():
        if hasattr(v, "item") and not isinstance(v, (str, bytes)):
            try:  # noqa: SIM105 - contextlib costs an import in every run
                v = v.item()
            except (TypeError, ValueError):
                pass
        metrics[str(k)] = v if isinstance(v, (int, float, bool, str, type(None))) else repr(v)
    return metrics


def main(job_path: str) -> None:
    with open(job_path, "rb") as fh:
        job = marshal.load(fh)
    result_path = os.path.join(job["out_dir"], "result.bin")
    threading.Thread(target=_watch_parent, args=(job["parent_pid"],), daemon=True).start()
    sys.path.insert(0, job["study_dir"])
    roots = job.get("roots") or [job["study_dir"]]
    seen, written = _watch_reads(roots)
    try:
        mod_name, fn_name = job["entry"].split(":")
        fn = getattr(importlib.import_module(mod_name), fn_name)
        kwargs: dict[str, object] = {}
        # read the parameter names from the code object: `inspect` alone costs ~0.1 s to import
        code = getattr(fn, "__code__", None)
        if (
            code is not None
            and "out_dir" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        ):
            kwargs["out_dir"] = job["out_dir"]
        args: tuple[object, ...] = (dict(job["config"]), int(job["seed"]))
        if job.get("checkpoint_dir"):
            args += (job["checkpoint_dir"],)
        out = fn(*args, **kwargs)
        if not isinstance(out, dict):
            raise TypeError(
                f"entry point returned {type(out).__name__}, expected a dict of metrics"
            )
        out = dict(out)
        artifacts = out.pop("artifacts", None)
        per_example = out.pop("per_example", None)
        metrics = _metrics(out)
        _write(
            result_path,
            {
                "ok": True,
                "metrics": metrics,
                "artifacts": _plain(artifacts),
                "per_example": _plain(per_example),
                "inputs": _inputs(seen, written, roots),
            },
        )
    except BaseException as exc:
        import traceback

        _write(
            result_path,
            {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
                "inputs": _inputs(seen, written, roots),
            },
        )
        sys.stdout.flush()
        os._exit(1)


if __name__ == "__main__":
    main(sys.argv[-1])
