"""Executing planned runs: a local pool of isolated processes, or Ray tasks
(:mod:`evalab.ablation.execution.ray_executor`).

Both executors call the same :func:`~evalab.ablation.execution.attempt.execute_with_retries` for a
run, so a run gives the same stored metrics whichever executor ran it. The driver (the
process running :func:`run_study`) claims each run in the store before starting it, so
several drivers on one store execute each run once, and stores each result the moment it
arrives: first as ``unstored-result.json`` in the run folder, then in the database (the file
is removed once the database has it, and stored by the next command if the database stays
busy). A finished run is therefore never lost and never run twice.

Training runs go first; then the eval runs (``stage = "eval"`` rows) whose trained run is
finished in the store, each given that run's folder as its checkpoint; an eval run whose
trained run failed or is held by another runner is counted as ``blocked`` and left for a
later invocation.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalab.ablation.execution.attempt import (
    CodeWatch,
    Live,
    execute_with_retries,
    make_job,
    run_command,
)
from evalab.ablation.execution.ray_executor import run_ray
from evalab.ablation.execution.status import RunFailure, run_failure
from evalab.ablation.execution.study_progress import Progress
from evalab.ablation.plan.jobs import AttemptResult, Evaluated, Job, Status, Timing
from evalab.ablation.plan.runs import PlannedRun, Subset, plan_runs
from evalab.ablation.store.leases import LEASE_TIMEOUT_S, Heartbeat, Owner
from evalab.ablation.store.per_example import check_counts, stored_counts
from evalab.ablation.store.run_store import (
    BUSY_TIMEOUT_S,
    UNSTORED,
    Outcome,
    RunResult,
    RunStore,
    Superseded,
    now,
    stale_runs,
)
from evalab.errors import InputError, OutOfRangeError, RunError, StoreBusyError
from evalab.io import write_text_atomic
from evalab.metrics.ray_shards import RAY_TIMEOUT_S, RayCluster, ray_session

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study

__all__ = ["EXECUTORS", "RunInterrupted", "RunSummary", "run_study"]

EXECUTORS = ("local", "ray")


@dataclass
class Counts:
    """What happened to the runs one invocation claimed or found claimed."""

    ok: int = 0
    failed: int = 0
    held: int = 0  # claimed by another live runner: left to it
    done: int = 0  # finished by another runner since the plan was read
    unstored: int = 0  # finished, kept in the run folder: the store stayed busy

    def finished(self, status: Status) -> None:
        if status == "ok":
            self.ok += 1
        else:
            self.failed += 1


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
    held: int = 0  # claimed by another live runner: left to it
    blocked: int = 0  # eval runs not started: their trained run failed or is another runner's
    unstored: int = 0  # finished, kept in their run folders: the database stayed busy
    superseded: list[Superseded] = field(default_factory=list)
    failures: list[RunFailure] = field(
        default_factory=list
    )  # the runs that failed in this invocation
    whole_plan: int = (
        0  # runs of the whole study when a subset was run (``planned`` counts the subset)
    )
    moved: int = 0  # bytes of run folders that travelled through Ray (no shared folder)

    @property
    def executed(self) -> int:
        return self.ok + self.failed


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_study`; ``summary`` says what was stored before it."""

    def __init__(self, summary: RunSummary) -> None:
        super().__init__()
        self.summary = summary


class _Driver:
    """Claims runs, stores their results, and counts what happened, for one invocation."""

    def __init__(self, study: Study, store: RunStore, bar: Progress, lease_timeout: float) -> None:
        self.study, self.store, self.bar = study, store, bar
        self.owner = Owner.here()
        self.lease_timeout = lease_timeout
        self.counts = Counts()
        self.claimed: set[str] = set()
        self.busy: StoreBusyError | None = None  # set once the store stayed locked too long
        self.interrupted = threading.Event()  # Ctrl-C, acted on between two results
        self.example_counts: dict[str, tuple[int, str]] | None = None  # metric -> (n, which run)
        self.watch = CodeWatch(study)
        self.stale: dict[str, str] = {}  # ok runs to run again (a file they read changed) -> why
        self.failures: list[RunFailure] = []
        self.moved = 0  # bytes of run folders moved through Ray
        self.trained: dict[str, str] = {}  # ok trained runs' keys -> when they finished

    def check_interrupt(self) -> None:
        """Raise KeyboardInterrupt at a safe point: never between storing a result and
        counting it, so the count told to the user is what the store holds."""
        if self.interrupted.is_set():
            raise KeyboardInterrupt

    def claim(self, run: PlannedRun) -> bool:
        if self.busy is not None:
            return False
        try:
            state = self.store.claim(
                self.study.name,
                run.key,
                self.owner,
                lease_timeout=self.lease_timeout,
                stale=self.stale.get(run.key, ""),
            )
        except StoreBusyError as exc:
            self.busy = exc
            return False
        if state == "claimed":
            self.claimed.add(run.key)
            try:
                self.watch.claimed(run.key)
            except (
                RunError
            ) as exc:  # recorded as failed, never run under a version it does not execute
                self.finish(run, _failed(exc))
                return False
            return True
        if state == "held":
            self.counts.held += 1
        else:  # another runner finished it since we looked
            self.counts.done += 1
            self.bar.skipped(1)
        return False

    def job(self, run: PlannedRun) -> Job:
        if not run.parent_key:
            return make_job(self.study, run, self.store.run_dir(self.study.name, run.key))
        parent = self.store.run_dir(self.study.name, run.parent_key)
        evaluated = Evaluated(run.parent_key, self.trained.get(run.parent_key, ""))
        return make_job(
            self.study, run, self.store.run_dir(self.study.name, run.key), parent, evaluated
        )

    def check_examples(self, run: PlannedRun, result: AttemptResult) -> AttemptResult:
        """The result, failed when its per-example count differs from the study's other runs."""
        info = result.artifacts.examples if result.artifacts and result.status == "ok" else None
        if not info:
            return result
        if self.example_counts is None:
            same_code = [
                r
                for r in self.store.runs(self.study.name).values()
                if r.code_version in self.study.code_versions
            ]
            self.example_counts = stored_counts(same_code)
        try:
            check_counts(info.n, self.example_counts)
        except RunError as exc:
            return result.refused(exc.error)
        for name, n in info.n.items():
            self.example_counts.setdefault(name, (n, f"run {'/'.join(run.rows)} seed {run.seed}"))
        return result

    def finish(self, run: PlannedRun, raw: AttemptResult) -> None:
        """Keep the result in its run folder, then store it; the file goes once it is stored."""
        try:
            self.watch.finished(run.key)
        except RunError as exc:
            if raw.status == "ok":
                raw = raw.refused(exc.error)
        raw = self.check_examples(run, raw)
        previous = self.store.previous_attempts(self.study.name, run.key)
        git = self.study.code.git if self.study.code else None
        outcome = Outcome(
            study=self.study.name,
            rows=run.rows,
            config=run.config,
            seed=run.seed,
            code_version=self.study.stage_version(run.stage),
            git_commit=git.commit if git else None,
            git_dirty=git.dirty if git else None,
            result=_to_result(run.key, raw, previous),
            inputs=raw.inputs if raw.status == "ok" else {},
        )
        folder = self.store.run_dir(self.study.name, run.key)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_text_atomic(folder / UNSTORED, outcome.to_json())
        except OSError as exc:  # a full disk: the database is tried all the same
            kept: OSError | None = exc
        else:
            kept = None
        try:
            self.store.record(outcome, self.owner)
        except StoreBusyError as exc:
            if kept is not None:
                raise InputError(
                    f"{folder / UNSTORED}: cannot keep a finished run's result ({kept.strerror}) and "
                    f"{exc}"
                ) from None
            self.counts.unstored += 1
            self.busy = exc  # no new runs: their results could not be stored either
        else:
            (folder / UNSTORED).unlink(missing_ok=True)
        self.claimed.discard(run.key)
        self.counts.finished(raw.status)
        if raw.status == "failed":
            self.failures.append(
                run_failure(run.rows, run.seed, run.key, raw.error, raw.traceback, folder)
            )
        self.bar.finished(run, raw)

    def release_unfinished(self) -> None:
        for key in list(self.claimed):
            try:
                self.store.release(self.study.name, key, self.owner)
            except StoreBusyError:
                break  # the lease's owner is gone once this process ends: it is reclaimed
            self.claimed.discard(key)


@contextlib.contextmanager
def _deferred_sigint(flag: threading.Event) -> Iterator[None]:
    """While running, Ctrl-C sets ``flag`` instead of raising wherever the main thread is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # a background job: Ctrl-C is not ours to take
        yield
        return
    signal.signal(signal.SIGINT, lambda *_: flag.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _to_result(key: str, raw: AttemptResult, previous_attempts: int) -> RunResult:
    return RunResult(
        key=key,
        status=raw.status,
        metrics=raw.metrics,
        artifacts=raw.artifacts,
        duration=raw.timing.duration,
        host=raw.host,
        error=raw.error,
        traceback=raw.traceback,
        attempts=previous_attempts + raw.attempts,
        started_at=raw.timing.started_at,
        finished_at=raw.timing.finished_at,
        curves=raw.curves,
    )


def run_study(
    study: Study,
    db_path: str | Path | None = None,
    *,
    jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    ray_timeout: float = RAY_TIMEOUT_S,
    progress: bool = True,
    busy_timeout: float = BUSY_TIMEOUT_S,
    lease_timeout: float = LEASE_TIMEOUT_S,
    subset: Subset | None = None,
) -> RunSummary:
    """Run every planned run of ``study`` that is not finished in the store.

    Returns a :class:`RunSummary`. Raises :class:`OutOfRangeError` for a bad ``jobs``,
    ``executor`` or ``ray_timeout``, :class:`RunInterrupted` on Ctrl-C (runs in flight are
    killed, every finished run is stored) and :class:`StoreBusyError` when the store stayed
    locked so long that no further run could be claimed (finished results are kept in their
    run folders). ``subset`` runs only the runs of some rows and seeds. ``ray_timeout``
    bounds the wait for the cluster at ``ray_address`` (:class:`SettingsError` after it);
    Ray is joined before the store is opened, so a cluster that cannot be used leaves no
    database behind.
    """
    _check_settings(executor, jobs, ray_timeout)
    t0 = time.perf_counter()
    plan, whole = _planned(study, subset)
    cluster = RayCluster(ray_address, ray_timeout)
    with (
        ray_session(cluster) if executor == "ray" else contextlib.nullcontext(),
        RunStore(db_path, busy_timeout=busy_timeout) as store,
    ):
        this = _Invocation(store.path, plan, whole, t0)
        driver = _start(study, store, this, progress, lease_timeout)

        def execute(runs: list[PlannedRun]) -> None:
            if executor == "local":
                _run_local(driver, runs, jobs)
            elif runs:
                run_ray(driver, runs, cluster)

        try:
            with (
                _deferred_sigint(driver.interrupted),
                Heartbeat(lambda: store.heartbeat(driver.owner)),
            ):
                _in_two_phases(driver, this.todo, execute, this)
        except KeyboardInterrupt as exc:
            driver.release_unfinished()
            raise RunInterrupted(this.summary(driver)) from exc
        finally:
            driver.bar.close()
            driver.watch.close()
        _check_stored(driver)
        return this.summary(driver)


def _check_settings(executor: str, jobs: int, ray_timeout: float) -> None:
    if executor not in EXECUTORS:
        raise OutOfRangeError("executor", repr(executor), f"one of {', '.join(EXECUTORS)}")
    if jobs < 1:
        raise OutOfRangeError("jobs", jobs, ">= 1")
    if not ray_timeout > 0:
        raise OutOfRangeError("ray_timeout", f"{ray_timeout:g}", "a positive number of seconds")


@dataclass
class _Invocation:
    """What :func:`run_study` knows before its runs start, and the eval runs it left."""

    db_path: Path
    plan: list[PlannedRun]
    whole_plan: int
    started: float  # time.perf_counter() at the start
    superseded: list[Superseded] = field(default_factory=list)
    todo: list[PlannedRun] = field(default_factory=list)  # not finished (or stale) in the store
    blocked: int = 0  # eval runs whose trained run is not finished

    @property
    def planned(self) -> int:
        return len(self.plan)

    @property
    def skipped(self) -> int:
        """Runs finished in the store before this invocation."""
        return len(self.plan) - len(self.todo)

    def summary(self, driver: _Driver) -> RunSummary:
        c = driver.counts
        return RunSummary(
            study=driver.study.name,
            db_path=self.db_path,
            planned=self.planned,
            skipped=self.skipped + c.done,
            ok=c.ok,
            failed=c.failed,
            seconds=time.perf_counter() - self.started,
            held=c.held,
            unstored=c.unstored,
            superseded=self.superseded,
            blocked=self.blocked,
            failures=list(driver.failures),
            whole_plan=self.whole_plan,
            moved=driver.moved,
        )


def _start(
    study: Study, store: RunStore, this: _Invocation, progress: bool, lease_timeout: float
) -> _Driver:
    """The superseded runs and the runs to do (``this.todo``: not finished, or finished but
    stale), their commands checked, and the driver that runs them, its progress bar started."""
    store.register_study(study)
    this.superseded = store.superseded(study)
    stale = stale_runs(study, store.runs(study.name).values())
    finished = store.finished_keys(study.name) - set(stale)
    this.todo = [r for r in this.plan if r.key not in finished]
    _check_commands(study, store, this.todo)
    bar = Progress(this.planned, study.name, progress)
    bar.skipped(this.skipped)
    driver = _Driver(study, store, bar, lease_timeout)
    driver.stale = {
        key: f"superseded: a file it read changed since it ran ({', '.join(files)})"
        for key, files in stale.items()
    }
    return driver


def _in_two_phases(
    driver: _Driver,
    todo: list[PlannedRun],
    execute: Callable[[list[PlannedRun]], None],
    this: _Invocation,
) -> None:
    """The training runs, then the eval runs whose trained run is finished (an eval run
    needs the checkpoint of a finished trained run); the others are counted as blocked."""
    execute([r for r in todo if r.stage == "train"])
    evals = [r for r in todo if r.stage == "eval"]
    if evals and driver.busy is None:
        driver.trained = {
            k: r.finished_at
            for k, r in driver.store.runs(driver.study.name).items()
            if r.status == "ok"
        }
        ready = [r for r in evals if r.parent_key in driver.trained]
        this.blocked = len(evals) - len(ready)
        execute(ready)


def _check_stored(driver: _Driver) -> None:
    """:class:`StoreBusyError` when the store stayed locked: some results wait in their folders."""
    if driver.busy is None:
        return
    c = driver.counts
    raise StoreBusyError(
        f"{driver.busy}; {c.ok + c.failed} runs finished in this invocation "
        f"({c.unstored} kept in their run folders as {UNSTORED}, stored the next time the "
        "store is opened); run the study again to continue"
    )


def _planned(study: Study, subset: Subset | None) -> tuple[list[PlannedRun], int]:
    """The runs to consider, and the size of the whole plan when they are a subset (else 0)."""
    whole = plan_runs(study)
    if not subset:
        return whole, 0
    subset.check(study)
    return subset.select(whole), len(whole)


def _check_commands(study: Study, store: RunStore, todo: list[PlannedRun]) -> None:
    """Every command can be written, its run folder's path included, before one runs."""
    if study.template is None:
        return
    for run in todo:
        if run.stage == "train":
            run_command(study, run, store.run_dir(study.name, run.key))


def _run_local(driver: _Driver, todo: list[PlannedRun], jobs: int) -> None:
    live = Live()
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="evalab-run")
    pending: dict[Future[AttemptResult], PlannedRun] = {}
    queue = list(reversed(todo))
    try:
        while queue or pending:
            driver.check_interrupt()
            while queue and len(pending) < jobs and driver.busy is None:
                run = queue.pop()
                if driver.claim(run):
                    pending[pool.submit(execute_with_retries, driver.job(run), live)] = run
            if not pending:
                break
            driver.bar.set_running(len(pending))
            done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                driver.finish(pending.pop(fut), fut.result())
            driver.bar.set_running(len(pending))
    except BaseException:
        # Ctrl-C (or any error): kill the runs in flight; every finished run is already stored
        live.kill_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _failed(error: RunError, started_at: str | None = None) -> AttemptResult:
    """The result of a run that failed before (or without) an attempt."""
    started = now() if started_at is None else started_at
    return AttemptResult.failure(error, Timing(started, now()), "")
