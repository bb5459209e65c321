"""The Ray executor: each claimed run is one Ray task running the local executor's attempt.

Without ``shared_folder = true`` a task runs in a folder private to its node and its run
folder travels back through Ray (:mod:`evalab.ablation.execution.transfer`); an eval run receives its
trained run's folder the same way. A task lost with its node (or its worker process) is
submitted again, up to the study's ``retries`` in all, in the same invocation; Ray places
it on a node that is alive. Only a task that returned can give an ``ok`` result, so a run
whose node died is never stored as a success. Ray is joined by
:func:`evalab.metrics.ray_shards.ray_session` (one line after ``--ray-timeout`` seconds for
an address that does not answer, or a refused token), before the store is opened.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalab.ablation.execution.attempt import execute_with_retries
from evalab.ablation.execution.transfer import Packed, node_folder, pack, unpack
from evalab.ablation.plan.jobs import AttemptResult, Job, Timing
from evalab.ablation.store.run_store import now
from evalab.errors import RunError, first_line
from evalab.metrics.ray_shards import RayCluster, ray_session

if TYPE_CHECKING:
    from types import ModuleType

    from evalab.ablation.contract.template import CommandTemplate
    from evalab.ablation.execution.study_progress import Progress
    from evalab.ablation.plan.runs import PlannedRun
    from evalab.ablation.store.run_store import RunStore
    from evalab.ablation.study.spec import Study

__all__ = ["node_attempt", "run_ray"]


class Driver(Protocol):
    """What the executor needs of the invocation's driver (``executors.Driver``): claim a
    run, describe it, store its result, count what moved, and stop on Ctrl-C."""

    study: Study
    store: RunStore
    bar: Progress
    moved: int

    def claim(self, run: PlannedRun) -> bool: ...
    def job(self, run: PlannedRun) -> Job: ...
    def finish(self, run: PlannedRun, raw: AttemptResult) -> None: ...
    def check_interrupt(self) -> None: ...


def _failed(error: RunError, attempts: int = 1) -> AttemptResult:
    return replace(AttemptResult.failure(error, Timing("", now()), ""), attempts=attempts)


def node_attempt(
    job_text: str,
    place: str | None,
    template: CommandTemplate | None,
    parent: Packed | None,
    limit_mb: float,
) -> tuple[str, Packed | None]:
    """The body of the Ray task: the attempts of one run, and its packed folder.

    ``place`` None: the run folder is shared, the job runs where it says. Otherwise the run
    uses this node's folder of ``place``, the trained run's folder ``parent`` is unpacked
    beside it (an eval run), a command template is filled in with the node's paths, and
    both folders are removed once the run's folder is packed.
    """
    job = Job.from_json(job_text)
    if place is None:
        return execute_with_retries(job).to_json(), None
    out = node_folder(place)
    checkpoint = out.with_name(out.name + ".checkpoint")
    try:
        return _attempt_here(job, out, checkpoint, template, parent, limit_mb)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(checkpoint, ignore_errors=True)


def _attempt_here(
    job: Job,
    out: Path,
    checkpoint: Path,
    template: CommandTemplate | None,
    parent: Packed | None,
    limit_mb: float,
) -> tuple[str, Packed | None]:
    shutil.rmtree(out, ignore_errors=True)  # an earlier task's folder of this run on this node
    if parent is not None:
        try:
            unpack(parent, checkpoint, "the trained run's folder on this node")
        except RunError as exc:
            return _failed(exc).to_json(), None
    if template is not None and job.command is not None:
        paths = (str(out / "config.json"), str(out / "metrics.json"))
        line = template.render(job.config, job.seed, *paths)
        job = replace(job, command=line.text, argv=line.argv, env=line.env)
    local = replace(
        job,
        out_dir=str(out),
        checkpoint_dir=str(checkpoint) if parent is not None else job.checkpoint_dir,
    )
    result = execute_with_retries(local)
    if not out.is_dir():
        return result.to_json(), None
    try:
        packed = pack(out, limit_mb)
    except RunError as exc:
        return (result.refused(exc.error) if result.status == "ok" else result).to_json(), None
    return result.to_json(), packed


@dataclass(frozen=True)
class _Sent:
    """A submitted task: its run, and how many earlier tasks of it were lost."""

    run: PlannedRun
    lost: int = 0


class _Dispatch:
    """The tasks of one invocation: submitting, and turning what comes back into results."""

    def __init__(self, ray: ModuleType, driver: Driver) -> None:
        self.ray, self.driver = ray, driver
        study = driver.study
        res = study.resources
        self.moving = not study.shared_folder
        self.limit = study.transfer_limit_mb
        # max_retries=0: attempts are the study's (inside the task, and after a lost node here)
        self.task = ray.remote(num_cpus=res.cpus, num_gpus=res.gpus, max_retries=0)(node_attempt)
        self.parents: dict[
            str, Any
        ] = {}  # trained run key -> its packed folder in the object store
        self.pending: dict[Any, _Sent] = {}

    def place(self, run: PlannedRun) -> str:
        store = self.driver.store
        return f"{store.runs_root.name}/{self.driver.study.name}/{run.key}"

    def parent_of(self, run: PlannedRun) -> Any:
        key = run.parent_key
        if not self.moving or run.stage != "eval" or not key:
            return None
        if key not in self.parents:
            folder = self.driver.store.run_dir(self.driver.study.name, key)
            packed = pack(folder, self.limit)  # RunError: the eval run fails with it
            self.driver.moved += packed.size
            self.parents[key] = self.ray.put(packed)
        return self.parents[key]

    def submit(self, sent: _Sent) -> None:
        run = sent.run
        job = self.driver.job(run)
        job = replace(job, retries=job.retries - sent.lost)
        try:
            parent = self.parent_of(run)
        except RunError as exc:
            self.driver.finish(run, _failed(exc, sent.lost + 1))
            return
        template = self.driver.study.template if self.moving else None
        place = self.place(run) if self.moving else None
        ref = self.task.remote(job.to_json(), place, template, parent, self.limit)
        self.pending[ref] = sent

    def returned(self, ref: Any) -> None:
        sent = self.pending.pop(ref)
        exceptions = self.ray.exceptions
        try:
            text, packed = self.ray.get(ref)
        except exceptions.RayTaskError as exc:  # the task itself raised: not the node's fault
            self.driver.finish(
                sent.run, _failed(RunError(f"Ray task failed: {first_line(exc)}"), sent.lost + 1)
            )
            return
        except exceptions.RayError as exc:  # its node or worker process was lost
            if sent.lost < self.driver.study.retries:
                self.submit(_Sent(sent.run, sent.lost + 1))
                return
            error = RunError(
                f"the Ray node running it was lost ({type(exc).__name__}: {first_line(exc)})"
            )
            self.driver.finish(sent.run, _failed(error, sent.lost + 1))
            return
        result = AttemptResult.from_json(text)
        result = replace(result, attempts=result.attempts + sent.lost)
        self.driver.finish(sent.run, self.arrived(sent.run, result, packed))

    def arrived(
        self, run: PlannedRun, result: AttemptResult, packed: Packed | None
    ) -> AttemptResult:
        """The result with its folder unpacked into the store's run folder, its paths the
        driver's; failed when a file it names did not arrive."""
        if not self.moving:
            return result
        store, name = self.driver.store, self.driver.study.name
        folder = store.run_dir(name, run.key)
        if packed is not None:
            try:
                unpack(packed, folder, "the run folder on the driver")
            except RunError as exc:
                return result.refused(exc.error) if result.status == "ok" else result
            self.driver.moved += packed.size
        art = result.artifacts
        if art is None:
            return result
        parent = store.run_dir(name, run.parent_key) if run.parent_key else None
        art = replace(
            art,
            dir=str(folder),
            checkpoint_dir=str(parent) if art.checkpoint_dir and parent else None,
        )
        result = replace(result, artifacts=art)
        if result.status == "ok" and art.examples and not (folder / art.examples.file).is_file():
            missing = RunError(
                f"the run's per-example file {art.examples.file} did not arrive in {folder}"
            )
            return result.refused(missing.error)
        return result


def run_ray(driver: Driver, todo: list[PlannedRun], cluster: RayCluster) -> None:
    """Execute the claimed runs of ``todo`` as Ray tasks and store each result as it comes
    (on the Ray instance this process has joined, else on ``cluster``)."""
    with ray_session(cluster) as ray:
        tasks = _Dispatch(ray, driver)
        try:
            for run in todo:
                if driver.claim(run):
                    tasks.submit(_Sent(run))
            while tasks.pending:
                driver.check_interrupt()
                driver.bar.set_running(len(tasks.pending))
                done, _ = ray.wait(list(tasks.pending), num_returns=1, timeout=0.5)
                for ref in done:
                    tasks.returned(ref)
        except BaseException:
            for ref in tasks.pending:
                ray.cancel(ref, force=True)
            raise
