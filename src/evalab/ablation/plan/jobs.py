"""The typed values of one run on its way from the planner to the store.

A :class:`Job` is a planned run as it travels to the process (or Ray task) that executes
it; an attempt ends as an :class:`AttemptResult` (status, metrics, :class:`Artifacts` with the
per-example rows' :class:`ExamplesEntry` and the curves' :class:`CurvesEntry`, timings and the
traceback tail). A run whose result is not usable raises :class:`RunError` inside the
engine; the attempt turns it into a failed result, which is stored like any other.

Plain data appears only at the edges, each with its one pair of functions: the worker
subprocess (:meth:`Job.to_worker`, read back by ``attempt.read_entry_result``), a Ray task
(:meth:`Job.to_json` / :meth:`AttemptResult.to_json` and their ``from_json``) and the run
database (:meth:`Artifacts.to_json` / :meth:`Artifacts.from_json`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from evalab.ablation.contract.computed import ComputedMetric
from evalab.ablation.contract.curves import CurvesEntry, CurveSettings
from evalab.errors import RunError

Status = Literal["ok", "failed"]


@dataclass(frozen=True)
class ExamplesEntry:
    """Where a run's per-example rows are (``file`` in its folder) and how many per metric."""

    file: str
    n: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "n": dict(self.n)}

    @staticmethod
    def from_json(d: dict[str, Any]) -> ExamplesEntry:
        return ExamplesEntry(str(d["file"]), {str(k): int(v) for k, v in d.get("n", {}).items()})


@dataclass(frozen=True)
class Evaluated:
    """The trained run an eval run evaluated: its key, and when it had finished (the
    checkpoint's identity: a trained run run again finishes again, with a new checkpoint)."""

    key: str
    finished_at: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "finished_at": self.finished_at}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Evaluated:
        return Evaluated(str(d["key"]), str(d["finished_at"]))


@dataclass(frozen=True)
class Artifacts:
    """Where a run's files are: its folder, what it returned under ``"artifacts"`` (any
    JSON), the command as run, its per-example rows, the checkpoint it evaluated, its
    curves, and for an imported run the record it came from."""

    dir: str
    files: Any = None
    command: str | None = None
    examples: ExamplesEntry | None = None
    checkpoint_dir: str | None = None
    curves: CurvesEntry | None = None
    imported_from: str | None = None
    evaluated: Evaluated | None = None  # eval runs: the trained run whose checkpoint they read

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"dir": self.dir, "files": self.files}
        if self.imported_from is not None:
            d["imported_from"] = self.imported_from
        if self.command:
            d["command"] = self.command
        if self.examples is not None:
            d["examples"] = self.examples.to_json()
        if self.checkpoint_dir:
            d["checkpoint_dir"] = self.checkpoint_dir
        if self.curves is not None:
            d["curves"] = self.curves.to_json()
        if self.evaluated is not None:
            d["evaluated"] = self.evaluated.to_json()
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Artifacts:
        return Artifacts(
            dir=str(d.get("dir", "")),
            files=d.get("files"),
            command=d.get("command"),
            examples=ExamplesEntry.from_json(d["examples"]) if d.get("examples") else None,
            checkpoint_dir=d.get("checkpoint_dir"),
            curves=CurvesEntry.from_json(d["curves"]) if d.get("curves") else None,
            evaluated=Evaluated.from_json(d["evaluated"]) if d.get("evaluated") else None,
            imported_from=d.get("imported_from"),
        )


@dataclass(frozen=True)
class Timing:
    """When an attempt ran (UTC, ISO 8601) and for how many seconds."""

    started_at: str
    finished_at: str
    duration: float = 0.0


@dataclass(frozen=True)
class AttemptResult:
    """How a run ended: ``ok`` with its metrics, artifacts, encoded curves and the inputs
    it read, or ``failed`` with its error and the tail of its traceback or log.
    ``attempts`` counts the attempts of this invocation (retries included)."""

    status: Status
    timing: Timing
    host: str
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: Artifacts | None = None
    error: str = ""
    traceback: str = ""
    curves: dict[str, str] = field(default_factory=dict)  # metric -> encoded curve (base64)
    inputs: dict[str, str] = field(default_factory=dict)  # files the run read -> digest
    attempts: int = 1

    @staticmethod
    def failure(exc: RunError, timing: Timing, host: str) -> AttemptResult:
        return AttemptResult("failed", timing, host, error=exc.error, traceback=exc.traceback)

    def refused(self, error: str) -> AttemptResult:
        """This result failed with ``error`` (a check after the attempt): no metrics."""
        return replace(self, status="failed", metrics={}, error=error)

    def to_json(self) -> str:
        d = asdict(self)
        d["artifacts"] = self.artifacts.to_json() if self.artifacts is not None else None
        return json.dumps(d)

    @staticmethod
    def from_json(text: str) -> AttemptResult:
        d = json.loads(text)
        art = d.pop("artifacts")
        return AttemptResult(
            **{**d, "timing": Timing(**d["timing"])},
            artifacts=Artifacts.from_json(art) if art is not None else None,
        )


@dataclass(frozen=True)
class Job:
    """A planned run as it travels to the process or Ray task that executes it.

    ``entry`` is the entry point called (``evaluate`` for an eval run, which gets
    ``checkpoint_dir``); for a command-template run, ``argv`` is what is executed, with
    ``env`` added to its environment (the values a shell script names), and ``command``
    the same as one shell line, as shown and stored.
    """

    key: str
    study_dir: str
    roots: tuple[str, ...]
    config: dict[str, Any]
    seed: int
    out_dir: str
    entry: str | None = None
    command: str | None = None
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    checkpoint_dir: str | None = None
    evaluated: Evaluated | None = None
    timeout: float | None = None
    retries: int = 0
    metrics: tuple[str, ...] = ()
    computed: tuple[ComputedMetric, ...] = ()
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    curves: CurveSettings = field(default_factory=CurveSettings)

    def to_worker(self, parent_pid: int) -> dict[str, Any]:
        """What the worker subprocess reads (marshal data: it imports nothing of evalab)."""
        return {
            "key": self.key,
            "study_dir": self.study_dir,
            "roots": list(self.roots),
            "entry": self.entry,
            "checkpoint_dir": self.checkpoint_dir,
            "config": self.config,
            "seed": self.seed,
            "out_dir": self.out_dir,
            "parent_pid": parent_pid,
        }

    def to_json(self) -> str:
        d = asdict(self)
        d["computed"] = [_computed_json(c) for c in self.computed]
        return json.dumps(d)

    @staticmethod
    def from_json(text: str) -> Job:
        d = json.loads(text)
        return Job(
            **{
                **d,
                "roots": tuple(d["roots"]),
                "argv": tuple(d["argv"]),
                "env": tuple((k, v) for k, v in d["env"]),
                "evaluated": Evaluated.from_json(d["evaluated"]) if d["evaluated"] else None,
                "metrics": tuple(d["metrics"]),
                "computed": tuple(_computed_from_json(c) for c in d["computed"]),
                "bounds": {m: (float(b[0]), float(b[1])) for m, b in d["bounds"].items()},
                "curves": CurveSettings(**d["curves"]),
            }
        )


def _computed_json(c: ComputedMetric) -> dict[str, Any]:
    d = asdict(c)
    d["references"] = [str(p) for p in c.references]
    d["source"] = str(c.source) if c.source is not None else None
    d["settings"] = {k: list(v) if isinstance(v, tuple) else v for k, v in c.settings.items()}
    return d


def _computed_from_json(d: dict[str, Any]) -> ComputedMetric:
    return ComputedMetric(
        **{
            **d,
            "settings": {
                k: tuple(v) if isinstance(v, list) else v for k, v in d["settings"].items()
            },
            "references": tuple(Path(p) for p in d["references"]),
            "source": Path(d["source"]) if d["source"] is not None else None,
            "artifacts": tuple(tuple(a) for a in d["artifacts"]),
        }
    )
