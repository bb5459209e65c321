"""The run store: one SQLite file (default ``.evalab/studies.db``) holding every run.

Why SQLite in WAL mode with one commit per finished run: a run that finished is on disk
before the next one is reported, so Ctrl-C, a killed runner or a crashed worker loses
nothing that finished, and readers (``evalab ablate status`` during a run) never block the
writer. ``synchronous=NORMAL`` is durable against process crashes, which is what matters
here (an OS crash may lose the last commits, never corrupt the file).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.errors import InputError

if TYPE_CHECKING:
    from evalab.ablation.plan import PlannedRun
    from evalab.ablation.spec import Study

DEFAULT_DB = Path(".evalab") / "studies.db"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS studies (
    name TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    code_version TEXT NOT NULL,
    spec TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    study TEXT NOT NULL,
    run_key TEXT NOT NULL,
    rows TEXT NOT NULL,
    config TEXT NOT NULL,
    seed INTEGER NOT NULL,
    code_version TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    metrics TEXT,
    artifacts TEXT,
    duration REAL,
    host TEXT,
    error TEXT,
    traceback TEXT,
    attempts INTEGER NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    PRIMARY KEY (study, run_key)
);
"""


def now() -> str:
    """UTC timestamp in ISO 8601 (what the store records)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class RunResult:
    """The outcome of one run (all attempts), as the executors hand it to the store."""

    key: str
    status: str  # "ok" | "failed"
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: Any = None
    duration: float = 0.0
    host: str = ""
    error: str = ""
    traceback: str = ""
    attempts: int = 1
    started_at: str = ""
    finished_at: str = ""


@dataclass(frozen=True)
class StoredRun:
    """A run as read back from the store."""

    key: str
    rows: tuple[str, ...]
    config: dict[str, Any]
    seed: int
    status: str
    metrics: dict[str, float]
    artifacts: Any
    duration: float | None
    host: str
    error: str
    traceback: str
    attempts: int
    started_at: str
    finished_at: str


class RunStore:
    """A connection to the run database (created on first use, WAL mode).

    >>> import tempfile, os
    >>> with RunStore(os.path.join(tempfile.mkdtemp(), "s.db")) as db:
    ...     db.integrity_check()
    'ok'
    """

    def __init__(self, path: str | Path | None = None, *, create: bool = True) -> None:
        self.path = Path(path) if path is not None else DEFAULT_DB
        if self.path.is_dir():
            raise InputError(f"{self.path}: is a directory, expected a database file path")
        if not create and not self.path.exists():
            raise InputError(f"{self.path}: no run database here; run `evalab ablate run STUDY.toml` first (or pass --db)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(_SCHEMA)
            self.conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a usable evalab run database ({exc})") from exc

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed by SQLite)."""
        self.conn.close()

    def register_study(self, study: Study) -> None:
        """Record the study (name, file, code version, parsed spec)."""
        from evalab.ablation.plan import canonical

        spec = canonical({
            "seeds": list(study.seeds), "metrics": list(study.metrics), "primary": study.primary,
            "base": study.base, "variants": [[v.label, v.settings] for v in study.variants],
            "grid": study.grid, "entry": study.entry, "command": study.command,
        })
        t = now()
        self.conn.execute(
            "INSERT INTO studies(name, path, code_version, spec, created_at, updated_at) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET path=excluded.path, code_version=excluded.code_version, "
            "spec=excluded.spec, updated_at=excluded.updated_at",
            (study.name, str(study.path), study.code_version, spec, t, t),
        )

    def record(self, study: Study, run: PlannedRun, result: RunResult) -> None:
        """Insert or replace one run and commit at once (autocommit mode)."""
        from evalab.ablation.plan import canonical

        self.conn.execute(
            "INSERT OR REPLACE INTO runs(study, run_key, rows, config, seed, code_version, status, "
            "metrics, artifacts, duration, host, error, traceback, attempts, started_at, finished_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                study.name, run.key, json.dumps(list(run.rows)), canonical(run.config), run.seed,
                study.code_version, result.status, json.dumps(result.metrics),
                json.dumps(result.artifacts) if result.artifacts is not None else None,
                result.duration, result.host, result.error or None, result.traceback or None,
                result.attempts, result.started_at, result.finished_at,
            ),
        )

    def previous_attempts(self, study: str, key: str) -> int:
        """Attempts already spent on a run in earlier invocations (0 when never run)."""
        row = self.conn.execute("SELECT attempts FROM runs WHERE study=? AND run_key=?", (study, key)).fetchone()
        return int(row[0]) if row else 0

    def finished_keys(self, study: str) -> set[str]:
        """Keys of runs that finished successfully (skipped when the study is rerun)."""
        cur = self.conn.execute("SELECT run_key FROM runs WHERE study=? AND status='ok'", (study,))
        return {r[0] for r in cur}

    def runs(self, study: str) -> dict[str, StoredRun]:
        """Every stored run of ``study`` by key."""
        return {r.key: r for r in self._iter(study)}

    def _iter(self, study: str) -> Iterator[StoredRun]:
        cur = self.conn.execute(
            "SELECT run_key, rows, config, seed, status, metrics, artifacts, duration, host, error, "
            "traceback, attempts, started_at, finished_at FROM runs WHERE study=? ORDER BY finished_at",
            (study,),
        )
        for (key, rows, config, seed, status, metrics, artifacts, duration, host, error, tb,
             attempts, started, finished) in cur:
            yield StoredRun(
                key=key, rows=tuple(json.loads(rows)), config=json.loads(config), seed=seed,
                status=status, metrics=json.loads(metrics) if metrics else {},
                artifacts=json.loads(artifacts) if artifacts else None, duration=duration,
                host=host or "", error=error or "", traceback=tb or "", attempts=attempts,
                started_at=started or "", finished_at=finished or "",
            )

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``'ok'`` for a sound file."""
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])


@dataclass(frozen=True)
class RowStatus:
    """Run counts of one row."""

    label: str
    planned: int
    ok: int
    failed: int

    @property
    def pending(self) -> int:
        return self.planned - self.ok - self.failed


@dataclass(frozen=True)
class StudyStatus:
    """What ``evalab ablate status`` shows: counts per row and the stored errors."""

    study: str
    db_path: Path
    rows: list[RowStatus]
    planned: int
    ok: int
    failed: int
    errors: list[tuple[str, int, str]]  # (row labels, seed, error)

    @property
    def pending(self) -> int:
        return self.planned - self.ok - self.failed


def study_status(study: Study, db_path: str | Path | None = None) -> StudyStatus:
    """Count ok / failed / pending runs per row from the store (runs of the current plan)."""
    from evalab.ablation.plan import plan_runs, study_rows

    plan = plan_runs(study)
    with RunStore(db_path, create=False) as store:
        stored = store.runs(study.name)
        path = store.path
    by_row: dict[str, list[int]] = {r.label: [0, 0, 0] for r in study_rows(study)}
    errors = []
    ok = failed = 0
    for run in plan:
        s = stored.get(run.key)
        status = s.status if s else None
        ok += status == "ok"
        failed += status == "failed"
        if s and status == "failed":
            errors.append((", ".join(run.rows), run.seed, s.error))
        for label in run.rows:
            by_row[label][0] += 1
            by_row[label][1] += status == "ok"
            by_row[label][2] += status == "failed"
    rows = [RowStatus(label, *counts) for label, counts in by_row.items()]
    return StudyStatus(study.name, path, rows, len(plan), ok, failed, errors)
