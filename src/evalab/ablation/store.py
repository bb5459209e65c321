"""The run store: one SQLite file (default ``.evalab/studies.db``) holding every run.

Why SQLite in WAL mode with one commit per finished run: a run that finished is on disk
before the next one is reported, so Ctrl-C, a killed runner or a crashed worker loses
nothing that finished, and readers (``evalab ablate status`` during a run) never block the
writer. ``synchronous=NORMAL`` is durable against process crashes, which is what matters
here (an OS crash may lose the last commits, never corrupt the file).

Several runners may share one store (``ablate run`` twice, or on several machines): a run is
claimed with a lease before it starts (:mod:`evalab.ablation.leases`), an ``ok`` run is never
overwritten, and every write waits for a busy database (SQLite's busy timeout plus a retry
loop up to ``busy_timeout`` seconds). A result that still cannot be written is left in its
run folder as ``unstored-result.json`` and stored by the next command that opens the store.

Each store has an id (kept in its ``meta`` table); its run folders are
``runs/<store id>/<study>/<run key>/`` beside the database, so two databases in one folder
never share a run folder.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from evalab.ablation.codeversion import changed_files
from evalab.ablation.leases import LEASE_TIMEOUT_S, Owner, lease_alive
from evalab.errors import InputError, StoreBusyError

if TYPE_CHECKING:
    from evalab.ablation.spec import Study

DEFAULT_DB = Path(".evalab") / "studies.db"
SCHEMA_VERSION = 2
#: seconds a write waits for a database another process holds locked
BUSY_TIMEOUT_S = 60.0
UNSTORED = "unstored-result.json"
_T = TypeVar("_T")

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS studies (
        name TEXT PRIMARY KEY, path TEXT NOT NULL, code_version TEXT NOT NULL, spec TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS runs (
        study TEXT NOT NULL, run_key TEXT NOT NULL, rows TEXT NOT NULL, config TEXT NOT NULL,
        seed INTEGER NOT NULL, code_version TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        metrics TEXT, artifacts TEXT, duration REAL, host TEXT, error TEXT, traceback TEXT,
        attempts INTEGER NOT NULL, started_at TEXT, finished_at TEXT,
        git_commit TEXT, git_dirty INTEGER,
        PRIMARY KEY (study, run_key))""",
    """CREATE TABLE IF NOT EXISTS code_versions (
        study TEXT NOT NULL, code_version TEXT NOT NULL, files TEXT NOT NULL,
        git_commit TEXT, git_dirty INTEGER, first_seen TEXT NOT NULL,
        PRIMARY KEY (study, code_version))""",
    """CREATE TABLE IF NOT EXISTS leases (
        study TEXT NOT NULL, run_key TEXT NOT NULL, owner TEXT NOT NULL, host TEXT NOT NULL,
        pid INTEGER NOT NULL, heartbeat REAL NOT NULL, PRIMARY KEY (study, run_key))""",
)
_RUN_COLUMNS = (
    "study", "run_key", "rows", "config", "seed", "code_version", "status", "metrics", "artifacts",
    "duration", "host", "error", "traceback", "attempts", "started_at", "finished_at",
    "git_commit", "git_dirty",
)


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
class Outcome:
    """Everything the store needs to record a finished run, without the study file: it is
    also what ``unstored-result.json`` holds when the database could not be written."""

    study: str
    rows: tuple[str, ...]
    config: dict[str, Any]
    seed: int
    code_version: str
    git_commit: str | None
    git_dirty: bool | None
    result: RunResult

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Outcome:
        d = json.loads(text)
        return Outcome(**{**d, "rows": tuple(d["rows"]), "result": RunResult(**d["result"])})


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
    code_version: str = ""
    git_commit: str | None = None
    git_dirty: bool | None = None


@dataclass(frozen=True)
class Superseded:
    """Stored runs of a study made by an older code version, and the files that changed."""

    code_version: str
    runs: int
    changed: list[str]  # file names (empty when the old file map is unknown)
    git_commit: str | None


class RunStore:
    """A connection to the run database (created on first use, WAL mode).

    Opening a store checks that the file is an evalab store (an unrelated SQLite file is
    refused, never written), and stores results left unstored by an earlier command.

    >>> import tempfile, os
    >>> with RunStore(os.path.join(tempfile.mkdtemp(), "s.db")) as db:
    ...     db.integrity_check()
    'ok'
    """

    def __init__(self, path: str | Path | None = None, *, create: bool = True,
                 busy_timeout: float = BUSY_TIMEOUT_S, read_only: bool = False) -> None:
        self.path = Path(path) if path is not None else DEFAULT_DB
        self.busy_timeout = busy_timeout
        self._lock = threading.RLock()  # the heartbeat thread shares the connection
        if self.path.is_dir():
            raise InputError(f"{self.path}: is a directory, expected a database file path")
        if (read_only or not create) and not self.path.exists():
            raise InputError(f"{self.path}: no run database here; run `evalab ablate run STUDY.toml` first (or pass --db)")
        if read_only:
            self._open_read_only()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=min(busy_timeout, 5.0), isolation_level=None,
                                    check_same_thread=False)
        try:
            self.id = self._open()
        except BaseException as exc:
            self.conn.close()
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            if _is_busy(exc):
                raise StoreBusyError(f"{self.path}: the run database stayed locked by another process for "
                                     f"{busy_timeout:g} s; try again when it is free") from exc
            raise InputError(f"{self.path}: not an SQLite database ({exc}); --db takes an evalab run "
                             "database (created by `evalab ablate run`)") from exc
        self.runs_root = self.path.resolve().parent / "runs" / self.id
        self.ingest_unstored()

    # ------------------------------------------------------------------ opening

    def _open(self) -> str:
        # Opening races with other runners: SQLite answers SQLITE_BUSY at once, without
        # waiting, while another connection switches a new file to WAL or recovers its WAL
        # (the busy handler is not consulted there), so the whole open is retried until the
        # deadline, like a write.
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.02
        while True:
            try:
                return self._open_once()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 0.5)

    def _open_once(self) -> str:
        self._check_evalab()
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        return self.write(self._create_or_migrate)

    def _check_evalab(self) -> set[str]:
        """The database's tables; :class:`InputError` when it has tables but is no evalab store."""
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and not self._is_evalab(tables):
            raise InputError(
                f"{self.path}: an SQLite database but not an evalab run store (it has tables "
                f"{', '.join(sorted(tables))}); pass --db a new file or one `evalab ablate run` created"
            )
        return tables

    def _open_read_only(self) -> None:
        """Open for reading only (``ablate run --dry-run``): nothing is written, neither the
        database nor its ``-wal``/``-shm`` files nor a run folder, and no unstored result
        is stored. Without a ``-wal`` file no connection has the database open (SQLite's
        read-only mode would create one there), so it is read as an immutable file."""
        wal = self.path.with_name(self.path.name + "-wal")
        mode = "ro" if wal.exists() else "ro&immutable=1"
        self.conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode={mode}", uri=True, isolation_level=None,
                                    timeout=min(self.busy_timeout, 5.0), check_same_thread=False)
        try:
            tables = self._check_evalab()
            if not tables:
                raise InputError(f"{self.path}: an empty file, not an evalab run store")
            row = self.conn.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise InputError(f"{self.path}: not an SQLite database ({exc}); --db takes an evalab run database "
                             "(created by `evalab ablate run`)") from exc
        except BaseException:
            self.conn.close()
            raise
        self.id = str(row[0]) if row else ""
        self.runs_root = self.path.resolve().parent / "runs" / self.id

    def _is_evalab(self, tables: set[str]) -> bool:
        if not {"meta", "runs", "studies"} <= tables:
            return False
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return row is not None and row[0].isdigit() and int(row[0]) <= SCHEMA_VERSION

    def _create_or_migrate(self) -> str:
        for stmt in _TABLES:
            self.conn.execute(stmt)
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}
        for col, kind in (("git_commit", "TEXT"), ("git_dirty", "INTEGER")):
            if col not in columns:  # a schema-1 store: the columns are added, nothing is lost
                self.conn.execute(f"ALTER TABLE runs ADD COLUMN {col} {kind}")
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        self.conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', ?)", (uuid.uuid4().hex[:12],))
        return str(self.conn.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()[0])

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed by SQLite)."""
        with self._lock:
            self.conn.close()

    # ------------------------------------------------------------------ writing

    def write(self, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` in one write transaction, retrying while the database is busy.

        Raises :class:`StoreBusyError` after ``busy_timeout`` seconds of trying.
        """
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.05
        while True:
            with self._lock:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    try:
                        out = fn()
                    except BaseException:
                        self.conn.execute("ROLLBACK")
                        raise
                    self.conn.execute("COMMIT")
                    return out
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or time.monotonic() >= deadline:
                        if _is_busy(exc):
                            raise StoreBusyError(f"{self.path}: the run database stayed locked by another "
                                                 f"process for {self.busy_timeout:g} s") from exc
                        raise
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 1.0)

    def register_study(self, study: Study) -> None:
        """Record the study (name, file, code version, parsed spec) and its code's file map."""
        from evalab.ablation.plan import canonical

        spec = canonical({
            "seeds": list(study.seeds), "metrics": list(study.metrics), "primary": study.primary,
            "base": study.base, "variants": [[v.label, v.settings, v.stage, v.parent] for v in study.variants],
            "grid": study.grid, "entry": study.entry, "command": study.command,
            "evaluate": study.evaluate, "evaluation": study.evaluation,
        })
        git = study.code.git if study.code else None
        files = json.dumps(_version_map(study), sort_keys=True)
        t = now()

        def upsert() -> None:
            self.conn.execute(
                "INSERT INTO studies(name, path, code_version, spec, created_at, updated_at) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(name) DO UPDATE SET path=excluded.path, code_version=excluded.code_version, "
                "spec=excluded.spec, updated_at=excluded.updated_at",
                (study.name, str(study.path), study.code_version, spec, t, t),
            )
            self.conn.execute(
                "INSERT INTO code_versions(study, code_version, files, git_commit, git_dirty, first_seen) "
                "VALUES (?,?,?,?,?,?) ON CONFLICT(study, code_version) DO UPDATE SET files=excluded.files, "
                "git_commit=excluded.git_commit, git_dirty=excluded.git_dirty",
                (study.name, study.code_version, files, git.commit if git else None,
                 None if git is None else int(git.dirty), t),
            )

        self.write(upsert)

    def record_all(self, outcomes: list[Outcome]) -> None:
        """Store finished runs made elsewhere (``ablate import``) in one transaction: all
        or none. :class:`InputError` (nothing stored) when the store already holds one of
        them as ``ok``."""

        def insert() -> None:
            for outcome in outcomes:
                r = outcome.result
                if self.conn.execute("SELECT 1 FROM runs WHERE study=? AND run_key=? AND status='ok'",
                                     (outcome.study, r.key)).fetchone():
                    raise InputError(f"{self.path}: row {'/'.join(outcome.rows)} seed {outcome.seed} was stored as ok "
                                     "while importing; nothing was imported (run the import again to see what is left)")
                held = self.live_lease(outcome.study, r.key)
                if held:
                    raise InputError(f"{self.path}: row {'/'.join(outcome.rows)} seed {outcome.seed} is being run by "
                                     f"{held}; nothing was imported: import once that runner has finished (a run it "
                                     "stores as ok is then refused, never duplicated)")
                self._insert(outcome)

        self.write(insert)

    def live_lease(self, study: str, key: str) -> str:
        """Who holds a live lease on the run ('' when nobody does)."""
        row = self.conn.execute("SELECT host, pid, heartbeat FROM leases WHERE study=? AND run_key=?",
                                (study, key)).fetchone()
        if row is None or not lease_alive(row[0], row[1], row[2]):
            return ""
        return f"a runner on {row[0]} (pid {row[1]})"

    def _insert(self, outcome: Outcome) -> int:
        """Insert or replace (unless ok) one run's row; the number of rows changed."""
        from evalab.ablation.plan import canonical

        r = outcome.result
        values = (
            outcome.study, r.key, json.dumps(list(outcome.rows)), canonical(outcome.config), outcome.seed,
            outcome.code_version, r.status, json.dumps(r.metrics),
            json.dumps(r.artifacts) if r.artifacts is not None else None, r.duration, r.host,
            r.error or None, r.traceback or None, r.attempts, r.started_at, r.finished_at,
            outcome.git_commit, None if outcome.git_dirty is None else int(outcome.git_dirty),
        )
        updates = ", ".join(f"{c}=excluded.{c}" for c in _RUN_COLUMNS[2:])
        cur = self.conn.execute(
            f"INSERT INTO runs({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_RUN_COLUMNS))}) "
            f"ON CONFLICT(study, run_key) DO UPDATE SET {updates} WHERE runs.status != 'ok'",
            values,
        )
        return cur.rowcount

    def record(self, outcome: Outcome, owner: Owner | None = None) -> bool:
        """Store one finished run and release its lease, in one transaction.

        Returns False (and changes nothing) when the store already holds an ``ok`` result
        for the run: a finished run is never overwritten.
        """
        r = outcome.result

        def insert() -> bool:
            changed = self._insert(outcome)
            if owner is not None:
                self.conn.execute("DELETE FROM leases WHERE study=? AND run_key=? AND owner=?",
                                  (outcome.study, r.key, owner.id))
            return changed > 0

        return self.write(insert)

    # ------------------------------------------------------------------ leases

    def claim(self, study: str, key: str, owner: Owner, *, lease_timeout: float = LEASE_TIMEOUT_S) -> str:
        """Try to take a run: ``'claimed'``, ``'done'`` (already ok) or ``'held'`` (a live
        runner has it). A lease whose owner died is taken over."""

        def take() -> str:
            if self.conn.execute("SELECT 1 FROM runs WHERE study=? AND run_key=? AND status='ok'", (study, key)).fetchone():
                return "done"
            row = self.conn.execute("SELECT owner, host, pid, heartbeat FROM leases WHERE study=? AND run_key=?",
                                    (study, key)).fetchone()
            if row is not None and row[0] != owner.id and lease_alive(row[1], row[2], row[3], timeout=lease_timeout):
                return "held"
            self.conn.execute(
                "INSERT OR REPLACE INTO leases(study, run_key, owner, host, pid, heartbeat) VALUES (?,?,?,?,?,?)",
                (study, key, owner.id, owner.host, owner.pid, time.time()),
            )
            return "claimed"

        return self.write(take)

    def release(self, study: str, key: str, owner: Owner) -> None:
        """Give a claimed run back (it was not run to the end: Ctrl-C)."""
        self.write(lambda: self.conn.execute("DELETE FROM leases WHERE study=? AND run_key=? AND owner=?",
                                             (study, key, owner.id)))

    def heartbeat(self, owner: Owner) -> None:
        """Refresh every lease of ``owner``."""
        self.write(lambda: self.conn.execute("UPDATE leases SET heartbeat=? WHERE owner=?", (time.time(), owner.id)))

    # ------------------------------------------------------------------ unstored results

    def run_dir(self, study: str, key: str) -> Path:
        """The run folder of one run of this store."""
        return self.runs_root / study / key

    def ingest_unstored(self) -> int:
        """Store results an earlier command could not write; return how many were stored.

        A result that is still not writable (the database is busy) stays where it is.
        """
        stored = 0
        for path in sorted(self.runs_root.glob(f"*/*/{UNSTORED}")):
            try:
                outcome = Outcome.from_json(path.read_text(encoding="utf-8"))
                self.record(outcome)
            except StoreBusyError:
                break
            except (OSError, ValueError, TypeError, KeyError):
                continue  # half-written or foreign: left for a person to look at
            path.unlink(missing_ok=True)
            stored += 1
        return stored

    # ------------------------------------------------------------------ reading

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
        cur = self.conn.execute(f"SELECT {', '.join(_RUN_COLUMNS[1:])} FROM runs WHERE study=? ORDER BY finished_at", (study,))
        for (key, rows, config, seed, code_version, status, metrics, artifacts, duration, host, error, tb,
             attempts, started, finished, git_commit, git_dirty) in cur:
            yield StoredRun(
                key=key, rows=tuple(json.loads(rows)), config=json.loads(config), seed=seed,
                status=status, metrics=json.loads(metrics) if metrics else {},
                artifacts=json.loads(artifacts) if artifacts else None, duration=duration,
                host=host or "", error=error or "", traceback=tb or "", attempts=attempts,
                started_at=started or "", finished_at=finished or "", code_version=code_version,
                git_commit=git_commit, git_dirty=None if git_dirty is None else bool(git_dirty),
            )

    def superseded(self, study: Study) -> list[Superseded]:
        """Stored runs of ``study`` from other code versions, newest first, with the files
        that differ from the current version's file map."""
        current = _version_map(study)
        out = []
        for version, count in self.conn.execute(
            f"SELECT code_version, COUNT(*) FROM runs WHERE study=? AND code_version NOT IN ({_marks(study)}) "
            "GROUP BY code_version ORDER BY MAX(finished_at) DESC", (study.name, *study.code_versions),
        ):
            row = self.conn.execute("SELECT files, git_commit FROM code_versions WHERE study=? AND code_version=?",
                                    (study.name, version)).fetchone()
            changed = changed_files(json.loads(row[0]), current) if row else []
            out.append(Superseded(version, int(count), changed, row[1] if row else None))
        return out

    def delete_superseded(self, study: Study) -> list[str]:
        """Delete the stored runs of ``study`` from other code versions; return their keys.

        Their run folders are removed after the rows (a folder without a row is harmless; a
        row without its folder would point nowhere).
        """

        def delete() -> list[str]:
            current, marks = (study.name, *study.code_versions), _marks(study)
            keys = [r[0] for r in self.conn.execute(f"SELECT run_key FROM runs WHERE study=? AND code_version NOT IN ({marks})", current)]
            self.conn.execute(f"DELETE FROM runs WHERE study=? AND code_version NOT IN ({marks})", current)
            # the file map recorded under the study's code version stays (it names both stages' files)
            self.conn.execute(f"DELETE FROM code_versions WHERE study=? AND code_version NOT IN ({_marks(study, 1)})",
                              (*current, study.code_version))
            return keys

        keys = self.write(delete)
        for key in keys:
            shutil.rmtree(self.run_dir(study.name, key), ignore_errors=True)
        return keys

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``'ok'`` for a sound file."""
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])


def _marks(study: Study, extra: int = 0) -> str:
    """SQL placeholders for the study's current code versions (one per stage), plus ``extra``."""
    return ", ".join("?" * (len(study.code_versions) + extra))


def _version_map(study: Study) -> dict[str, str]:
    """What the code version is made of: the code's file map, and each computed metric's
    definition with its reference contents (``[metrics.NAME]``), so a superseded version
    says which of them changed."""
    files = dict(study.code.files) if study.code else {}
    return {**files, **{f"[metrics.{name}]": c.digest for name, c in study.computed.items()}}


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text

