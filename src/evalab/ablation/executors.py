"""Executing planned runs: a local pool of isolated processes, or Ray tasks.

Both executors call the same :func:`execute_with_retries` for a run, so a run gives the
same stored metrics whichever executor ran it. Each attempt is a fresh process (an
entry-point run is a fresh Python interpreter; a command runs through the shell) in its
own process group, so a run that hangs past the study's ``timeout`` is killed with
everything it started, and one run cannot leak state (global RNGs, CUDA context, imported
modules) into another. The driver is the only writer of the SQLite store and commits each
run the moment it finishes.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import math
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.ablation.store import RunResult, RunStore, now
from evalab.errors import SettingsError

if TYPE_CHECKING:
    from evalab.ablation.plan import PlannedRun
    from evalab.ablation.spec import Study

EXECUTORS = ("local", "ray")
_LOG_TAIL = 2000


@dataclass(frozen=True)
class RunSummary:
    """What one invocation of :func:`run_study` did."""

    study: str
    db_path: Path
    planned: int
    skipped: int  # already finished in the store
    ok: int
    failed: int
    seconds: float

    @property
    def executed(self) -> int:
        return self.ok + self.failed


# --------------------------------------------------------------------------- one run


# The worker file is executed by a two-line bootstrap rather than `-m evalab.ablation._worker`
# (which would import evalab and numpy first) or as a script (which would put this package
# folder first on sys.path). The path is resolved where the attempt runs (a Ray node too).
_BOOTSTRAP = "import sys; p = sys.argv[1]; exec(compile(open(p, encoding='utf-8').read(), p, 'exec'))"


def make_job(study: Study, run: PlannedRun, runs_dir: Path) -> dict[str, Any]:
    """The plain-data description of a run (what travels to a process or a Ray task)."""
    return {
        "key": run.key,
        "study_dir": str(study.directory),
        "entry": study.entry,
        "command": study.command,
        "config": run.config,
        "seed": run.seed,
        "out_dir": str(runs_dir / run.key),
        "timeout": study.timeout,
        "retries": study.retries,
        "metrics": list(study.metrics),
    }


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-_LOG_TAIL:].strip()


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
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return {}, f"metric {name!r} is {value!r} ({type(value).__name__}), expected a finite number"
        out[str(name)] = float(value)
    missing = [m for m in expected if m not in out]
    if missing:
        return {}, f"run did not return metric(s) {missing}; it returned {sorted(out)}"
    return out, ""


class _Live:
    """Process groups of attempts in flight, so Ctrl-C can kill them all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: set[subprocess.Popen[bytes]] = set()
        self.cancelled = threading.Event()

    def kill_all(self) -> None:
        self.cancelled.set()
        with self.lock:
            for proc in list(self.procs):
                _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def execute_attempt(job: dict[str, Any], live: _Live | None = None) -> dict[str, Any]:
    """Run one attempt of a run in a fresh process; return a plain result dict."""
    out_dir = Path(job["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("result.bin", "metrics.json"):
        (out_dir / stale).unlink(missing_ok=True)
    config_path = out_dir / "config.json"
    config_path.write_text(json.dumps(job["config"], indent=2, sort_keys=True), encoding="utf-8")
    log_path = out_dir / "log.txt"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (job["study_dir"], env.get("PYTHONPATH", "")) if p)
    if job["entry"]:
        job_path = out_dir / "job.bin"
        job_path.write_bytes(marshal.dumps({**job, "parent_pid": os.getpid()}))
        worker = str(Path(__file__).with_name("_worker.py"))
        argv: list[str] | str = [sys.executable, "-c", _BOOTSTRAP, worker, str(job_path)]
        shell = False
    else:
        metrics_path = out_dir / "metrics.json"
        argv = job["command"].format(
            config=shlex.quote(str(config_path)), seed=int(job["seed"]), out=shlex.quote(str(metrics_path))
        )
        shell = True
    started, t0 = now(), time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv, shell=shell, cwd=job["study_dir"], env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        if live is not None:
            with live.lock:
                live.procs.add(proc)
            if live.cancelled.is_set():
                _kill_group(proc)
        timed_out = False
        try:
            proc.wait(timeout=job["timeout"])
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            proc.wait()
        finally:
            if live is not None:
                with live.lock:
                    live.procs.discard(proc)
    duration = time.perf_counter() - t0
    result: dict[str, Any] = {
        "status": "failed", "metrics": {}, "artifacts": None, "error": "", "traceback": "",
        "duration": duration, "host": socket.gethostname(), "started_at": started,
        "finished_at": now(),
    }
    if timed_out:
        result["error"] = f"timed out after {job['timeout']:g} s (process group killed)"
        result["traceback"] = _tail(log_path)
        return result
    if job["entry"]:
        try:
            payload = marshal.loads((out_dir / "result.bin").read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            result["error"] = f"worker exited with code {proc.returncode} without a result"
            result["traceback"] = _tail(log_path)
            return result
        if not payload.get("ok"):
            result["error"] = payload.get("error", "unknown error")
            result["traceback"] = payload.get("traceback", "")
            return result
        raw, artifacts = payload.get("metrics"), payload.get("artifacts")
    else:
        if proc.returncode != 0:
            result["error"] = f"command exited with code {proc.returncode}"
            result["traceback"] = _tail(log_path)
            return result
        try:
            raw = json.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))
        except OSError:
            result["error"] = "command exited 0 but did not write the metrics file {out}"
            result["traceback"] = _tail(log_path)
            return result
        except ValueError as exc:
            result["error"] = f"metrics file is not valid JSON: {exc}"
            return result
        artifacts = raw.pop("artifacts", None) if isinstance(raw, dict) else None
    metrics, error = check_metrics(raw, job["metrics"])
    if error:
        result["error"] = error
        return result
    result.update(status="ok", metrics=metrics, artifacts={"dir": str(out_dir), "files": artifacts})
    return result


def execute_with_retries(job: dict[str, Any], live: _Live | None = None) -> dict[str, Any]:
    """Up to ``1 + retries`` attempts; the first success (or the last failure) with ``attempts``."""
    attempts = 0
    total = 0.0
    while True:
        attempts += 1
        result = execute_attempt(job, live)
        total += result["duration"]
        if result["status"] == "ok" or attempts > job["retries"] or (live and live.cancelled.is_set()):
            break
    result["attempts"] = attempts
    result["duration_all"] = total
    return result


def _to_result(key: str, raw: dict[str, Any], previous_attempts: int) -> RunResult:
    return RunResult(
        key=key, status=raw["status"], metrics=raw["metrics"], artifacts=raw["artifacts"],
        duration=raw["duration"], host=raw["host"], error=raw["error"], traceback=raw["traceback"],
        attempts=previous_attempts + raw["attempts"], started_at=raw["started_at"],
        finished_at=raw["finished_at"],
    )


# --------------------------------------------------------------------------- progress


class _Progress:
    """A live bar on stderr: done / failed / running / ETA (off when not a terminal)."""

    def __init__(self, total: int, name: str, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.failed = 0
        self.running = 0
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("done · [red]{task.fields[failed]} failed[/] · {task.fields[running]} running"),
            TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(),
            console=Console(stderr=True), transient=False,
        )
        self.task = self.bar.add_task(name, total=total, failed=0, running=0)
        self.bar.start()

    def update(self, *, advance: int = 0, failed: int = 0, running: int | None = None) -> None:
        self.failed += failed
        if running is not None:
            self.running = running
        if self.enabled:
            self.bar.update(self.task, advance=advance, failed=self.failed, running=self.running)

    def close(self) -> None:
        if self.enabled:
            self.bar.stop()


# --------------------------------------------------------------------------- executors


def run_study(
    study: Study,
    db_path: str | Path | None = None,
    *,
    jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    progress: bool = True,
) -> RunSummary:
    """Run every planned run of ``study`` that is not finished in the store.

    Each finished run (ok or failed after its retries) is committed before the next is
    awaited. Returns a :class:`RunSummary`; raises :class:`SettingsError` for a bad
    ``jobs`` or ``executor``.
    """
    from evalab.ablation.plan import plan_runs

    if executor not in EXECUTORS:
        raise SettingsError(f"unknown executor {executor!r}; expected one of {', '.join(EXECUTORS)}")
    if jobs < 1:
        raise SettingsError(f"--jobs must be >= 1, got {jobs}")
    t0 = time.perf_counter()
    plan = plan_runs(study)
    with RunStore(db_path) as store:
        store.register_study(study)
        finished = store.finished_keys(study.name)
        todo = [r for r in plan if r.key not in finished]
        runs_dir = store.path.resolve().parent / "runs" / study.name
        bar = _Progress(len(plan), study.name, progress)
        bar.update(advance=len(plan) - len(todo))
        counts = {"ok": 0, "failed": 0}

        def store_result(run: PlannedRun, raw: dict[str, Any]) -> None:
            result = _to_result(run.key, raw, store.previous_attempts(study.name, run.key))
            store.record(study, run, result)
            counts[result.status] += 1
            bar.update(advance=1, failed=int(result.status == "failed"))

        try:
            if executor == "local":
                _run_local(study, todo, runs_dir, jobs, store_result, bar)
            else:
                _run_ray(study, todo, runs_dir, ray_address, store_result, bar)
        finally:
            bar.close()
        return RunSummary(
            study=study.name, db_path=store.path, planned=len(plan), skipped=len(plan) - len(todo),
            ok=counts["ok"], failed=counts["failed"], seconds=time.perf_counter() - t0,
        )


def _run_local(study: Study, todo: list[PlannedRun], runs_dir: Path, jobs: int, store_result: Any, bar: _Progress) -> None:
    live = _Live()
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="evalab-run")
    pending: dict[Future[dict[str, Any]], PlannedRun] = {}
    queue = list(reversed(todo))
    try:
        while queue or pending:
            while queue and len(pending) < jobs:
                run = queue.pop()
                pending[pool.submit(execute_with_retries, make_job(study, run, runs_dir), live)] = run
            bar.update(running=len(pending))
            done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                run = pending.pop(fut)
                store_result(run, fut.result())
            bar.update(running=len(pending))
    except BaseException:
        # Ctrl-C (or any error): kill the runs in flight; every finished run is already stored
        live.kill_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _run_ray(study: Study, todo: list[PlannedRun], runs_dir: Path, address: str | None, store_result: Any, bar: _Progress) -> None:
    from evalab.errors import require

    ray = require("ray", what="the Ray executor (--executor ray)", extra="ray")
    started_here = False
    if not ray.is_initialized():
        # a local cluster started here needs no dashboard; a given address (host:port, auto,
        # ray://...) is connected to as it is configured
        extra = {"include_dashboard": False, "log_to_driver": False} if address is None else {}
        ray.init(address=address, **extra)
        started_here = True
    pending: dict[Any, PlannedRun] = {}
    try:
        # max_retries=0: retries are the study's, inside the task (same as the local executor)
        task = ray.remote(
            num_cpus=study.resources.cpus, num_gpus=study.resources.gpus, max_retries=0
        )(execute_with_retries)
        pending = {task.remote(make_job(study, run, runs_dir)): run for run in todo}
        while pending:
            bar.update(running=len(pending))
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in done:
                run = pending.pop(ref)
                try:
                    raw = ray.get(ref)
                except Exception as exc:  # a task that died (node lost, worker killed)
                    raw = {
                        "status": "failed", "metrics": {}, "artifacts": None,
                        "error": f"Ray task failed: {type(exc).__name__}: {exc}", "traceback": "",
                        "duration": 0.0, "host": "", "started_at": "", "finished_at": now(),
                        "attempts": 1,
                    }
                store_result(run, raw)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()
