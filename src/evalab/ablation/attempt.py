"""One run in a fresh process: prepare its folder, launch, wait (with the timeout), read.

Each attempt is a fresh process in its own process group (an entry-point run is a fresh
Python interpreter running :mod:`evalab.ablation._worker`; a command template runs through
the shell under :mod:`evalab.ablation._guard`), so a run that hangs past the study's
``timeout`` is killed with everything it started, a run cannot leak state (global RNGs,
CUDA context, imported modules) into another, and no run outlives its runner. Everything
here works on plain data (the job dict), so a Ray task runs exactly the same code.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.ablation.codeversion import (
    DigestCache,
    changed_files,
    input_digests,
    observed_files,
    search_roots,
)
from evalab.ablation.curves import LOG_FILE, RUN_DIR_ENV, STOP_ENV, collect_curves
from evalab.ablation.per_example import EXAMPLES_FILE
from evalab.ablation.store import current_version_map, now, version_map

if TYPE_CHECKING:
    from evalab.ablation.plan import PlannedRun
    from evalab.ablation.spec import Study
    from evalab.ablation.template import CommandLine

_LOG_TAIL = 2000
# The worker and guard files are executed by a two-line bootstrap rather than `-m ...`
# (which would import evalab and numpy first) or as a script (which would put this package
# folder first on sys.path). The path is resolved where the attempt runs (a Ray node too).
_BOOTSTRAP = (
    "import sys; p = sys.argv[1]; exec(compile(open(p, encoding='utf-8').read(), p, 'exec'))"
)


def make_job(
    study: Study, run: PlannedRun, out_dir: Path, checkpoint_dir: Path | None = None
) -> dict[str, Any]:
    """The plain-data description of a run (what travels to a process or a Ray task).

    An eval run (``run.stage == "eval"``) calls the study's ``evaluate`` entry point with
    ``checkpoint_dir``, the run folder of the trained run it evaluates; never ``entry``.
    """
    evaluating = run.stage == "eval"
    if evaluating and checkpoint_dir is None:
        raise ValueError(
            f"eval run {run.key} needs the checkpoint folder of its trained run {run.parent_key}"
        )
    return {
        "key": run.key,
        "study_dir": str(study.directory),
        "roots": [str(r.resolve()) for r in search_roots(study.directory)],
        "entry": study.evaluate if evaluating else study.entry,
        "command": None
        if evaluating or study.template is None
        else run_command(study, run, out_dir).text,
        "checkpoint_dir": str(checkpoint_dir) if evaluating else None,
        "config": run.config,
        "seed": run.seed,
        "out_dir": str(out_dir),
        "timeout": study.timeout,
        "retries": study.retries,
        "metrics": list(study.returned),
        "computed": [c.to_job() for c in study.computed.values()],
        "bounds": {m: list(b) for m, b in study.bounds.items()},
        "curves": study.curves.to_job(),
    }


class CodeWatch:
    """The study's code (and declared inputs, and models) hashed again when a run is
    claimed and when it finishes: a run that would execute other code than the version it
    is stored under, or whose code changed while it ran, is failed with that reason (a
    study whose ``code_version`` is pinned is not watched: the pin is the user's word)."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.watched = not (study.code is not None and study.code.pinned)
        self.cache = DigestCache()
        self.loaded = version_map(study)
        self.at_claim: dict[str, dict[str, str]] = {}

    def _now(self) -> dict[str, str]:
        return current_version_map(self.study, self.cache)

    def claimed(self, key: str) -> str:
        """'' when the code is still the loaded version's, else why the run is not run."""
        if not self.watched:
            return ""
        files = self._now()
        self.at_claim[key] = files
        changed = changed_files(self.loaded, files)
        if changed:
            return (
                f"the study's code changed after `ablate run` loaded it (changed: {', '.join(changed)}); not run "
                "under the old code version: run `evalab ablate run` again"
            )
        return ""

    def finished(self, key: str) -> str:
        """'' when the code is what it was at the run's claim, else why its result is refused."""
        before = self.at_claim.pop(key, None)
        if not self.watched or before is None:
            return ""
        changed = changed_files(before, self._now())
        if changed:
            return (
                f"the study's code changed while the run ran (changed: {', '.join(changed)}); its result is not "
                "stored as the code version's: run `evalab ablate run` again"
            )
        return ""

    def close(self) -> None:
        self.cache.save()


def run_command(study: Study, run: PlannedRun, out_dir: Path) -> CommandLine:
    """The shell command of a command-template run whose folder is ``out_dir``."""
    if study.template is None:
        raise ValueError(f"study {study.name!r} has no command template")
    return study.template.render(
        run.config, run.seed, str(out_dir / "config.json"), str(out_dir / "metrics.json")
    )


def check_metrics(raw: Any, expected: list[str]) -> tuple[dict[str, float], str]:
    """Validate what a run returned: every declared metric present and a finite number.

    Returns ``(metrics, error)``; ``error`` is empty when the run is usable.

    >>> check_metrics({"acc": 0.5}, ["acc"])
    ({'acc': 0.5}, '')
    >>> check_metrics({"acc": "high"}, ["acc"])[1]
    "metric 'acc' is 'high' (str), expected a finite number"
    """
    if not isinstance(raw, dict):
        return {}, f"run returned {type(raw).__name__}, expected a dict of metrics"
    out: dict[str, float] = {}
    for name, value in raw.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            return (
                {},
                f"metric {name!r} is {value!r} ({type(value).__name__}), expected a finite number",
            )
        out[str(name)] = float(value)
    missing = [m for m in expected if m not in out]
    if missing:
        return {}, f"run did not return metric(s) {missing}; it returned {sorted(out)}"
    return out, ""


class Live:
    """Process groups of attempts in flight, so Ctrl-C can kill them all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: set[subprocess.Popen[bytes]] = set()
        self.cancelled = threading.Event()

    def kill_all(self) -> None:
        self.cancelled.set()
        with self.lock:
            for proc in list(self.procs):
                kill_group(proc)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


@dataclass(frozen=True)
class Ended:
    """How an attempt's process ended."""

    returncode: int
    timed_out: bool
    duration: float
    started_at: str


def prepare_folder(job: dict[str, Any]) -> Path:
    """The run folder with a fresh ``config.json`` and no result of an earlier attempt:
    not its output files either (``[metrics.NAME] outputs``), which would otherwise be
    scored for an attempt that did not write them."""
    out_dir = Path(job["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = [spec["outputs"] for spec in job.get("computed", [])]
    for stale in ("result.bin", "metrics.json", LOG_FILE, EXAMPLES_FILE, *outputs):
        path = out_dir / stale
        if path.is_file() or path.is_symlink():
            path.unlink()
    (out_dir / "config.json").write_text(
        json.dumps(job["config"], indent=2, sort_keys=True), encoding="utf-8"
    )
    return out_dir


def command_line(job: dict[str, Any], out_dir: Path) -> list[str]:
    """argv of the attempt: the worker for an entry point, the guard around a command."""
    if job["entry"]:
        job_path = out_dir / "job.bin"
        job_path.write_bytes(marshal.dumps({**job, "parent_pid": os.getpid()}))
        return [
            sys.executable,
            "-c",
            _BOOTSTRAP,
            str(Path(__file__).with_name("_worker.py")),
            str(job_path),
        ]
    shell = job["command"]
    guard = str(Path(__file__).with_name("_guard.py"))
    return [sys.executable, "-c", _BOOTSTRAP, guard, str(os.getpid()), shell]


def launch_and_wait(
    job: dict[str, Any], argv: list[str], out_dir: Path, live: Live | None
) -> Ended:
    """Start the attempt in a new session (its own process group), wait up to the timeout,
    and kill the group when it runs over or the runner is cancelled."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (job["study_dir"], env.get("PYTHONPATH", "")) if p
    )
    env[RUN_DIR_ENV] = str(out_dir)  # evalab.ablation.log() writes the run's curves there
    env[STOP_ENV] = (job.get("curves") or {}).get("stop_when", "") if job["entry"] else ""
    started, t0 = now(), time.perf_counter()
    with open(out_dir / "log.txt", "wb") as log:
        proc = subprocess.Popen(
            argv,
            cwd=job["study_dir"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        if live is not None:
            with live.lock:
                live.procs.add(proc)
            if live.cancelled.is_set():
                kill_group(proc)
        timed_out = False
        try:
            proc.wait(timeout=job["timeout"])
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            proc.wait()
        finally:
            if live is not None:
                with live.lock:
                    live.procs.discard(proc)
    return Ended(proc.returncode, timed_out, time.perf_counter() - t0, started)


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-_LOG_TAIL:].strip()


def read_entry_result(out_dir: Path, ended: Ended) -> tuple[Any, Any, str, str]:
    """``(metrics, artifacts, error, traceback)`` from the worker's ``result.bin``."""
    try:
        payload = marshal.loads((out_dir / "result.bin").read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return (
            None,
            None,
            f"worker exited with code {ended.returncode} without a result",
            _tail(out_dir / "log.txt"),
        )
    if not payload.get("ok"):
        return None, None, payload.get("error", "unknown error"), payload.get("traceback", "")
    metrics = payload.get("metrics")
    if payload.get("per_example") is not None and isinstance(metrics, dict):
        metrics = {**metrics, "per_example": payload["per_example"]}
    return metrics, payload.get("artifacts"), "", ""


def read_command_result(out_dir: Path, ended: Ended) -> tuple[Any, Any, str, str]:
    """``(metrics, artifacts, error, traceback)`` from the command's ``{out}`` JSON file."""
    log = out_dir / "log.txt"
    if ended.returncode != 0:
        tail = _tail(log)
        last = next((ln.strip() for ln in reversed(tail.splitlines()) if ln.strip()), "")
        return (
            None,
            None,
            f"command exited with code {ended.returncode}" + (f": {last}" if last else ""),
            tail,
        )
    try:
        raw = json.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))
    except OSError:
        return None, None, "command exited 0 but did not write the metrics file {out}", _tail(log)
    except ValueError as exc:
        return None, None, f"metrics file is not valid JSON: {exc}", ""
    artifacts = raw.pop("artifacts", None) if isinstance(raw, dict) else None
    return raw, artifacts, "", ""


def execute_attempt(job: dict[str, Any], live: Live | None = None) -> dict[str, Any]:
    """Run one attempt of a run in a fresh process; return a plain result dict."""
    try:
        out_dir = prepare_folder(job)
        ended = launch_and_wait(job, command_line(job, out_dir), out_dir, live)
    except OSError as exc:  # the run folder cannot be written (a full disk, a file-size limit)
        return {
            "status": "failed",
            "metrics": {},
            "artifacts": None,
            "traceback": "",
            "duration": 0.0,
            "error": f"cannot prepare the run folder: {exc.filename or job['out_dir']}: {exc.strerror}",
            "host": socket.gethostname(),
            "started_at": now(),
            "finished_at": now(),
        }
    result: dict[str, Any] = {
        "status": "failed",
        "metrics": {},
        "artifacts": None,
        "error": "",
        "traceback": "",
        "duration": ended.duration,
        "host": socket.gethostname(),
        "started_at": ended.started_at,
        "finished_at": now(),
    }
    if ended.timed_out:
        result.update(
            error=f"timed out after {job['timeout']:g} s (process group killed)",
            traceback=_tail(out_dir / "log.txt"),
        )
        return result
    read = read_entry_result if job["entry"] else read_command_result
    raw, artifacts, error, tb = read(out_dir, ended)
    per_example = raw.pop("per_example", None) if isinstance(raw, dict) else None
    curve_entry: dict[str, Any] = {}
    blobs: dict[str, str] = {}
    if not error and isinstance(raw, dict):
        curve_entry, blobs, error = collect_curves(
            job, out_dir / LOG_FILE, raw
        )  # logged values: the selection rule applies
    if not error:
        metrics, error = check_metrics(raw, job["metrics"])
    examples: dict[str, Any] = {}
    if not error:
        examples, error = collect_examples(job, out_dir, metrics, per_example)
    if error:
        result.update(error=error, traceback=tb)
        return result
    where = {"dir": str(out_dir), "files": artifacts}
    if job["command"]:
        where["command"] = job["command"]  # the shell command as run, placeholders filled in
    if examples:
        where["examples"] = examples
    if job.get("checkpoint_dir"):
        where["checkpoint_dir"] = job["checkpoint_dir"]
    if curve_entry:
        where["curves"] = curve_entry
    result.update(
        status="ok",
        metrics=metrics,
        artifacts=where,
        curves=blobs,
        inputs=read_inputs(job, out_dir),
    )
    return result


def read_inputs(job: dict[str, Any], out_dir: Path) -> dict[str, str]:
    """Name -> digest of the study's files the run read (its worker's audit record; a
    command template declares its inputs in ``[study] inputs`` instead)."""
    if not job["entry"]:
        return {}
    try:
        paths = marshal.loads((out_dir / "result.bin").read_bytes()).get("inputs") or []
    except (OSError, ValueError, EOFError, TypeError, AttributeError):
        return {}
    cache = DigestCache()
    roots = [Path(r) for r in job.get("roots") or [job["study_dir"]]]
    digests = input_digests(
        observed_files([p for p in paths if isinstance(p, str)], Path(job["study_dir"]), out_dir),
        roots,
        cache,
    )
    cache.save()
    return digests


def collect_examples(
    job: dict[str, Any], out_dir: Path, metrics: dict[str, float], per_example: Any
) -> tuple[dict[str, Any], str]:
    """Score the run's output files (``[metrics.NAME]``; the scores join ``metrics``) and
    check the per-example values it returned; write every metric's rows to the run's
    examples file. Returns ``(artifacts entry, error)``; the entry is {} without rows."""
    from evalab.ablation.bounds import bounds_error
    from evalab.ablation.computed import score_outputs
    from evalab.ablation.per_example import StoredRows, check_per_example, write_examples
    from evalab.errors import EvalabError

    rows, error = check_per_example(per_example, metrics)
    if error:
        return {}, error
    for spec in job.get("computed", []):
        if spec["name"] in metrics:
            return {}, (
                f"the run returned {spec['name']!r}, which the study computes from its outputs file "
                f"{spec['outputs']!r} ([metrics.{spec['name']}]); return it under another name or not at all"
            )
        try:
            value, table, signature = score_outputs(spec, out_dir)
        except EvalabError as exc:
            return {}, str(exc)
        metrics[spec["name"]] = value
        rows[spec["name"]] = StoredRows(table, "computed", spec["metric"], signature)
    error = bounds_error(
        job.get("bounds", {}),
        metrics,
        {n: r.rows[:, 0] for n, r in rows.items() if r.kind == "mean"},
    )
    if error:
        return {}, error
    return (write_examples(out_dir, rows) if rows else {}), ""


def execute_with_retries(job: dict[str, Any], live: Live | None = None) -> dict[str, Any]:
    """Up to ``1 + retries`` attempts; the first success (or the last failure) with ``attempts``."""
    attempts = 0
    total = 0.0
    while True:
        attempts += 1
        result = execute_attempt(job, live)
        total += result["duration"]
        if (
            result["status"] == "ok"
            or attempts > job["retries"]
            or (live and live.cancelled.is_set())
        ):
            break
    result["attempts"] = attempts
    result["duration_all"] = total
    return result
