"""One run in a fresh process: prepare its folder, launch, wait (with the timeout), read.

Each attempt is a fresh process in its own process group (an entry-point run is a fresh
Python interpreter running :mod:`evalab.ablation.execution._worker`; a command template runs through
its argv, or ``/bin/sh`` when it needs a shell, under :mod:`evalab.ablation.execution._guard`), so a run that hangs past the study's
``timeout`` is killed with everything it started, a run cannot leak state (global RNGs,
CUDA context, imported modules) into another, and no run outlives its runner. An attempt
takes a :class:`~evalab.ablation.plan.jobs.Job` and gives an
:class:`~evalab.ablation.plan.jobs.AttemptResult`; a Ray task runs exactly the same code.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab import numbers
from evalab.ablation.contract.codeversion import (
    DigestCache,
    changed_files,
    input_digests,
    observed_files,
    search_roots,
)
from evalab.ablation.contract.curves import LOG_FILE, RUN_DIR_ENV, STOP_ENV, collect_curves
from evalab.ablation.plan.jobs import (
    Artifacts,
    AttemptResult,
    Evaluated,
    ExamplesEntry,
    Job,
    Timing,
)
from evalab.ablation.store.per_example import EXAMPLES_FILE
from evalab.ablation.store.run_store import current_version_map, now, version_map
from evalab.errors import RunError

if TYPE_CHECKING:
    from evalab.ablation.contract.computed import ComputedMetric
    from evalab.ablation.contract.template import CommandLine
    from evalab.ablation.plan.runs import PlannedRun
    from evalab.ablation.study.spec import Study

_LOG_TAIL = 2000
# The worker and guard files are executed by a two-line bootstrap rather than `-m ...`
# (which would import evalab and numpy first) or as a script (which would put this package
# folder first on sys.path). The path is resolved where the attempt runs (a Ray node too).
_BOOTSTRAP = (
    "import sys; p = sys.argv[1]; exec(compile(open(p, encoding='utf-8').read(), p, 'exec'))"
)


def make_job(
    study: Study,
    run: PlannedRun,
    out_dir: Path,
    checkpoint_dir: Path | None = None,
    evaluated: Evaluated | None = None,
) -> Job:
    """The description of a run that travels to a process or a Ray task.

    An eval run (``run.stage == "eval"``) calls the study's ``evaluate`` entry point with
    ``checkpoint_dir``, the run folder of the trained run it evaluates (``evaluated``: which
    finish of that run, recorded with the result); never ``entry``.
    """
    evaluating = run.stage == "eval"
    if evaluating and checkpoint_dir is None:
        raise ValueError(
            f"eval run {run.key} needs the checkpoint folder of its trained run {run.parent_key}"
        )
    line = None if evaluating or study.template is None else run_command(study, run, out_dir)
    return Job(
        key=run.key,
        study_dir=str(study.directory),
        roots=tuple(str(r.resolve()) for r in search_roots(study.directory)),
        entry=study.evaluate if evaluating else study.entry,
        command=line.text if line else None,
        argv=line.argv if line else (),
        env=line.env if line else (),
        checkpoint_dir=str(checkpoint_dir) if evaluating else None,
        evaluated=evaluated if evaluating else None,
        config=run.config,
        seed=run.seed,
        out_dir=str(out_dir),
        timeout=study.timeout,
        retries=study.retries,
        metrics=study.returned,
        computed=tuple(study.computed.values()),
        bounds=dict(study.bounds),
        curves=study.curves,
    )


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

    def claimed(self, key: str) -> None:
        """Refuse (:class:`~evalab.errors.RunError`) to run under code that is no longer the
        loaded version's."""
        if not self.watched:
            return
        files = self._now()
        self.at_claim[key] = files
        changed = changed_files(self.loaded, files)
        if changed:
            raise RunError(
                f"the study's code changed after `ablate run` loaded it (changed: {', '.join(changed)}); not run "
                "under the old code version: run `evalab ablate run` again"
            )

    def finished(self, key: str) -> None:
        """Refuse (:class:`~evalab.errors.RunError`) a result when the code changed since
        the run's claim."""
        before = self.at_claim.pop(key, None)
        if not self.watched or before is None:
            return
        changed = changed_files(before, self._now())
        if changed:
            raise RunError(
                f"the study's code changed while the run ran (changed: {', '.join(changed)}); its result is not "
                "stored as the code version's: run `evalab ablate run` again"
            )

    def close(self) -> None:
        self.cache.save()


def run_command(study: Study, run: PlannedRun, out_dir: Path) -> CommandLine:
    """The shell command of a command-template run whose folder is ``out_dir``."""
    if study.template is None:
        raise ValueError(f"study {study.name!r} has no command template")
    return study.template.render(
        run.config, run.seed, str(out_dir / "config.json"), str(out_dir / "metrics.json")
    )


def check_metrics(raw: Any, expected: tuple[str, ...]) -> dict[str, float]:
    """What a run returned, validated: every declared metric present and a number under
    :mod:`evalab.numbers`'s rules (:class:`~evalab.errors.RunError` otherwise).

    >>> check_metrics({"acc": 0.5}, ("acc",))
    {'acc': 0.5}
    >>> check_metrics({"acc": "high"}, ("acc",))
    Traceback (most recent call last):
    evalab.errors.RunError: metric 'acc' is 'high' (str), expected a finite number
    >>> check_metrics({"acc": 10**400}, ("acc",))
    Traceback (most recent call last):
    evalab.errors.RunError: metric 'acc' is '100000000000000000000000'... (401 characters): an integer beyond 2**53 = 9007199254740992, which a float cannot hold exactly
    """
    if not isinstance(raw, dict):
        raise RunError(f"run returned {type(raw).__name__}, expected a dict of metrics")
    out: dict[str, float] = {}
    for name, value in raw.items():
        try:
            if isinstance(value, numbers.Refused):
                raise value.error
            out[str(name)] = float(numbers.number_value(value))
        except TypeError:
            raise RunError(
                f"metric {name!r} is {value!r:.60} ({type(value).__name__}), expected a finite number"
            ) from None
        except numbers.NumberError as exc:
            raise RunError(f"metric {name!r} is {exc}") from None
    missing = [m for m in expected if m not in out]
    if missing:
        raise RunError(f"run did not return metric(s) {missing}; it returned {sorted(out)}")
    return out


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


@dataclass(frozen=True)
class Returned:
    """What a run handed back before any check: its metrics as returned (any value), its
    ``"artifacts"`` and its ``"per_example"`` values."""

    metrics: Any
    files: Any = None
    per_example: Any = None


@dataclass(frozen=True)
class Scored:
    """A run's metrics with the computed ones added, and its examples file (None: no rows)."""

    metrics: dict[str, float]
    examples: ExamplesEntry | None


def prepare_folder(job: Job) -> Path:
    """The run folder with a fresh ``config.json`` and no result of an earlier attempt:
    not its output files either (``[metrics.NAME] outputs``), which would otherwise be
    scored for an attempt that did not write them."""
    out_dir = Path(job.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = [spec.outputs for spec in job.computed]
    for stale in ("result.bin", "metrics.json", LOG_FILE, EXAMPLES_FILE, *outputs):
        path = out_dir / stale
        if path.is_file() or path.is_symlink():
            path.unlink()
    (out_dir / "config.json").write_text(
        json.dumps(job.config, indent=2, sort_keys=True), encoding="utf-8"
    )
    return out_dir


def command_line(job: Job, out_dir: Path) -> list[str]:
    """argv of the attempt: the worker for an entry point, the guard around a command."""
    if job.entry:
        job_path = out_dir / "job.bin"
        job_path.write_bytes(marshal.dumps(job.to_worker(os.getpid())))
        return [
            sys.executable,
            "-c",
            _BOOTSTRAP,
            str(Path(__file__).with_name("_worker.py")),
            str(job_path),
        ]
    if not job.argv:
        raise ValueError(f"run {job.key} has neither an entry point nor a command")
    guard = str(Path(__file__).with_name("_guard.py"))
    return [sys.executable, "-c", _BOOTSTRAP, guard, str(os.getpid()), *job.argv]


def launch_and_wait(job: Job, argv: list[str], out_dir: Path, live: Live | None) -> Ended:
    """Start the attempt in a new session (its own process group), wait up to the timeout,
    and kill the group when it runs over or the runner is cancelled."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (job.study_dir, env.get("PYTHONPATH", "")) if p)
    env[RUN_DIR_ENV] = str(out_dir)  # evalab.ablation.log() writes the run's curves there
    env[STOP_ENV] = job.curves.stop_when if job.entry else ""
    env.update(job.env)  # the values a command's shell script names (never in its text)
    started, t0 = now(), time.perf_counter()
    with open(out_dir / "log.txt", "wb") as log:
        proc = subprocess.Popen(
            argv,
            cwd=job.study_dir,
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
            proc.wait(timeout=job.timeout)
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


def read_entry_result(out_dir: Path, ended: Ended) -> Returned:
    """What the worker wrote to ``result.bin`` (the worker subprocess's edge: marshal data);
    :class:`~evalab.errors.RunError` with the run's error and traceback when it failed."""
    try:
        payload = marshal.loads((out_dir / "result.bin").read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        raise RunError(
            f"worker exited with code {ended.returncode} without a result",
            _tail(out_dir / "log.txt"),
        ) from None
    if not payload.get("ok"):
        raise RunError(payload.get("error", "unknown error"), payload.get("traceback", ""))
    metrics = payload.get("metrics")
    per_example = payload.get("per_example") if isinstance(metrics, dict) else None
    return Returned(metrics, payload.get("artifacts"), per_example)


def read_command_result(out_dir: Path, ended: Ended) -> Returned:
    """What the command wrote to its ``{out}`` JSON file; :class:`~evalab.errors.RunError`
    with the log's tail when it exited non-zero or wrote no readable file."""
    log = out_dir / "log.txt"
    if ended.returncode != 0:
        tail = _tail(log)
        last = next((ln.strip() for ln in reversed(tail.splitlines()) if ln.strip()), "")
        raise RunError(
            f"command exited with code {ended.returncode}" + (f": {last}" if last else ""), tail
        )
    try:
        raw = numbers.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))
    except OSError:
        raise RunError(
            "command exited 0 but did not write the metrics file {out}", _tail(log)
        ) from None
    except ValueError as exc:  # not UTF-8, not JSON
        raise RunError(f"metrics file is not valid JSON: {exc}") from None
    refused = numbers.first_refused(raw)
    if refused is not None:
        key, number = refused  # a metric's own value is named by check_metrics
        if not (isinstance(raw, dict) and key in raw and key not in ("artifacts", "per_example")):
            raise RunError(f"metrics file: {key or 'the value'}: {number.error}")
    if not isinstance(raw, dict):
        return Returned(raw)
    return Returned(raw, raw.pop("artifacts", None), raw.pop("per_example", None))


def execute_attempt(job: Job, live: Live | None = None) -> AttemptResult:
    """Run one attempt of a run in a fresh process; a failure is a failed result."""
    host = socket.gethostname()
    try:
        out_dir = prepare_folder(job)
        ended = launch_and_wait(job, command_line(job, out_dir), out_dir, live)
    except OSError as exc:  # the run folder cannot be written (a full disk, a file-size limit)
        unprepared = RunError(
            f"cannot prepare the run folder: {exc.filename or job.out_dir}: {exc.strerror}"
        )
        return AttemptResult.failure(unprepared, Timing(now(), now()), host)
    timing = Timing(ended.started_at, now(), ended.duration)
    try:
        return _result(job, out_dir, ended, timing, host)
    except RunError as exc:
        return AttemptResult.failure(exc, timing, host)
    except Exception as exc:  # a run's output, however bad, fails that run only
        unread = RunError(
            f"its output could not be read ({type(exc).__name__}: {str(exc)[:200]})",
            traceback.format_exc(),
        )
        return AttemptResult.failure(unread, timing, host)


def _result(job: Job, out_dir: Path, ended: Ended, timing: Timing, host: str) -> AttemptResult:
    """The ok result of a finished attempt; :class:`~evalab.errors.RunError` when unusable."""
    if ended.timed_out:
        raise RunError(
            f"timed out after {job.timeout:g} s (process group killed)", _tail(out_dir / "log.txt")
        )
    returned = (read_entry_result if job.entry else read_command_result)(out_dir, ended)
    raw, logged = returned.metrics, None
    if isinstance(raw, dict):  # logged values: the selection rule applies
        logged = collect_curves(job.curves, job.metrics, out_dir / LOG_FILE, raw)
        raw = logged.metrics
    scored = collect_examples(
        job.computed, job.bounds, out_dir, check_metrics(raw, job.metrics), returned.per_example
    )
    artifacts = Artifacts(
        dir=str(out_dir),
        files=returned.files,
        command=job.command,  # the shell command as run, placeholders filled in
        examples=scored.examples,
        checkpoint_dir=job.checkpoint_dir,
        curves=logged.entry if logged else None,
        evaluated=job.evaluated,
    )
    return AttemptResult(
        "ok",
        timing,
        host,
        metrics=scored.metrics,
        artifacts=artifacts,
        curves=logged.blobs if logged else {},
        inputs=read_inputs(job, out_dir),
    )


def read_inputs(job: Job, out_dir: Path) -> dict[str, str]:
    """Name -> digest of the study's files the run read (its worker's audit record; a
    command template declares its inputs in ``[study] inputs`` instead)."""
    if not job.entry:
        return {}
    try:
        paths = marshal.loads((out_dir / "result.bin").read_bytes()).get("inputs") or []
    except (OSError, ValueError, EOFError, TypeError, AttributeError):
        return {}
    cache = DigestCache()
    roots = [Path(r) for r in job.roots or [job.study_dir]]
    digests = input_digests(
        observed_files([p for p in paths if isinstance(p, str)], Path(job.study_dir), out_dir),
        roots,
        cache,
    )
    cache.save()
    return digests


def collect_examples(
    computed: tuple[ComputedMetric, ...],
    bounds: Mapping[str, Sequence[float]],
    out_dir: Path,
    metrics: dict[str, float],
    per_example: Any,
) -> Scored:
    """Score the run's output files (``[metrics.NAME]``; the scores join the metrics) and
    check the per-example values it returned; write every metric's rows to the run's
    examples file. :class:`~evalab.errors.RunError` names what is wrong."""
    from evalab.ablation.contract.computed import score_outputs
    from evalab.ablation.store.per_example import StoredRows, check_per_example, write_examples
    from evalab.ablation.study.bounds import bounds_error
    from evalab.errors import EvalabError

    rows = check_per_example(per_example, metrics)
    out = dict(metrics)
    for spec in computed:
        if spec.name in out:
            raise RunError(
                f"the run returned {spec.name!r}, which the study computes from its outputs file "
                f"{spec.outputs!r} ([metrics.{spec.name}]); return it under another name or not at all"
            )
        try:
            value, table, signature = score_outputs(spec, out_dir)
        except EvalabError as exc:
            raise RunError(str(exc)) from None
        out[spec.name] = value
        rows[spec.name] = StoredRows(table, "computed", spec.metric, signature)
    error = bounds_error(
        bounds, out, {n: r.rows[:, 0] for n, r in rows.items() if r.kind == "mean"}
    )
    if error:
        raise RunError(error)
    return Scored(out, write_examples(out_dir, rows) if rows else None)


def execute_with_retries(job: Job, live: Live | None = None) -> AttemptResult:
    """Up to ``1 + retries`` attempts; the first success (or the last failure), with the
    number of attempts made."""
    attempts = 0
    while True:
        attempts += 1
        result = execute_attempt(job, live)
        if result.status == "ok" or attempts > job.retries or (live and live.cancelled.is_set()):
            return replace(result, attempts=attempts)


def execute_json(job: str) -> str:
    """:func:`execute_with_retries` across a process boundary (a Ray task): the job and the
    result travel as JSON."""
    return execute_with_retries(Job.from_json(job)).to_json()
