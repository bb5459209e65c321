"""The run store: one SQLite file (default ``.evalab/studies.db``) holding every run.

Why SQLite in WAL mode with one commit per finished run: a run that finished is on disk
before the next one is reported, so Ctrl-C, a killed runner or a crashed worker loses
nothing that finished, and readers (``evalab ablate status`` during a run) never block the
writer. ``synchronous=NORMAL`` is durable against process crashes, which is what matters
here (an OS crash may lose the last commits, never corrupt the file).

Several runners may share one store (``ablate run`` twice, or on several machines): a run is
claimed with a lease before it starts (:mod:`evalab.ablation.store.leases`), an ``ok`` run is never
overwritten, and every write waits for a busy database (SQLite's busy timeout plus a retry
loop up to ``busy_timeout`` seconds). A result that still cannot be written is left in its
run folder as ``unstored-result.json`` and stored by the next command that opens the store.

Each store has an id (kept in its ``meta`` table); its run folders are
``runs/<store id>/<study>/<run key>/`` beside the database, so two databases in one folder
never share a run folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from evalab._version import __version__
from evalab.ablation.contract.codeversion import (
    DigestCache,
    changed_files,
    changed_inputs,
    code_files,
)
from evalab.ablation.contract.computed import model_artifacts
from evalab.ablation.contract.curves import CURVES_DDL, insert_curves
from evalab.ablation.plan.jobs import Artifacts, Status
from evalab.ablation.store.leases import LEASE_TIMEOUT_S, Owner, lease_alive
from evalab.errors import EvalabError, InputError, Setting, SettingValueError, StoreBusyError

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study

DEFAULT_DB = Path(".evalab") / "studies.db"
SCHEMA_VERSION = 3
#: what a run key looks like (a run folder's name): anything else in a store was not written by evalab
RUN_KEY_RE = re.compile(r"^[0-9a-f]{20}$")
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
        git_commit TEXT, git_dirty INTEGER, inputs TEXT,
        PRIMARY KEY (study, run_key))""",
    """CREATE TABLE IF NOT EXISTS code_versions (
        study TEXT NOT NULL, code_version TEXT NOT NULL, files TEXT NOT NULL,
        git_commit TEXT, git_dirty INTEGER, first_seen TEXT NOT NULL,
        PRIMARY KEY (study, code_version))""",
    """CREATE TABLE IF NOT EXISTS leases (
        study TEXT NOT NULL, run_key TEXT NOT NULL, owner TEXT NOT NULL, host TEXT NOT NULL,
        pid INTEGER NOT NULL, heartbeat REAL NOT NULL, PRIMARY KEY (study, run_key))""",
    CURVES_DDL,  # per-step values of ok runs (evalab.ablation.contract.curves); no schema change for older stores
)
_TABLE_NAMES = frozenset(re.search(r"EXISTS (\w+)", stmt).group(1) for stmt in _TABLES)  # type: ignore[union-attr]
_RUN_COLUMNS = (
    "study",
    "run_key",
    "rows",
    "config",
    "seed",
    "code_version",
    "status",
    "metrics",
    "artifacts",
    "duration",
    "host",
    "error",
    "traceback",
    "attempts",
    "started_at",
    "finished_at",
    "git_commit",
    "git_dirty",
    "inputs",
)
#: columns added since schema 1 (a store of an older schema gets them when it is opened)
_ADDED_COLUMNS = (("git_commit", "TEXT"), ("git_dirty", "INTEGER"), ("inputs", "TEXT"))


#: what :meth:`RunStore.claim` found: the run is now ours, already finished, or another's
Claim = Literal["claimed", "done", "held"]


def now() -> str:
    """UTC timestamp in ISO 8601 (what the store records)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run (all attempts), as the executors hand it to the store."""

    key: str
    status: Status
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: Artifacts | None = None
    duration: float = 0.0
    host: str = ""
    error: str = ""
    traceback: str = ""
    attempts: int = 1
    started_at: str = ""
    finished_at: str = ""
    curves: dict[str, str] = field(
        default_factory=dict
    )  # metric -> encoded curve (base64), ok runs


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
    #: files the run read, observed in its process (data, local modules): name -> digest
    inputs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        d = asdict(self)
        art = self.result.artifacts
        d["result"]["artifacts"] = art.to_json() if art is not None else None
        return json.dumps(d, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Outcome:
        d = json.loads(text)
        r = d["result"]
        art = Artifacts.from_json(r["artifacts"]) if r.get("artifacts") is not None else None
        result = RunResult(**{**r, "artifacts": art})
        return Outcome(**{**d, "rows": tuple(d["rows"]), "result": result})


@dataclass(frozen=True)
class StoredRun:
    """A run as read back from the store."""

    key: str
    rows: tuple[str, ...]
    config: dict[str, Any]
    seed: int
    status: str
    metrics: dict[str, float]
    artifacts: Artifacts | None
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
    inputs: dict[str, str] = field(default_factory=dict)  # files the run read: name -> digest


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

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        create: bool = True,
        busy_timeout: float = BUSY_TIMEOUT_S,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path) if path is not None else DEFAULT_DB
        self.busy_timeout = busy_timeout
        self._lock = threading.RLock()  # the heartbeat thread shares the connection
        _check_path(self.path, create and not read_only)
        #: opened for reading only: asked for (``ablate run --dry-run``), or the file or its
        #: folder cannot be written (a read-only store is still reported)
        self.read_only = read_only or (self.path.exists() and not _writable(self.path))
        if not self.read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(
                    f"{self.path}: cannot create the folder of the run database ({exc.strerror})"
                ) from None
        try:
            self.conn = _connect(self.path, self.read_only, busy_timeout)
        except sqlite3.Error as exc:
            raise store_fault(self.path, exc) from None
        try:
            self.id = self._open()
        except BaseException as exc:
            self.conn.close()
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            raise _db_error(self.path, exc, busy_timeout, "; try again when it is free") from exc
        self.runs_root = self.path.resolve().parent / "runs" / self.id
        if not self.read_only:
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
        tables = {
            r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if not tables and self.read_only:
            raise InputError(f"{self.path}: an empty file, not an evalab run store")
        version = self._schema_version(tables) if tables else None
        if self.read_only:
            if version != SCHEMA_VERSION:
                raise InputError(
                    f"{self.path}: a run store of schema {version}; this evalab reads schema "
                    f"{SCHEMA_VERSION} after migrating it in place, which a store opened for reading "
                    "only is not: run `evalab ablate status` once with write access to migrate it"
                )
            return str(
                self.conn.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()[0]
            )
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        if (
            version == SCHEMA_VERSION and tables >= _TABLE_NAMES
        ):  # up to date: opening writes nothing
            row = self.conn.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()
            if row is not None:
                return str(row[0])
        return self.write(self._create_or_migrate)

    def _schema_version(self, tables: set[str]) -> int:
        """The schema of an evalab store; :class:`InputError` for any other SQLite file and
        for a store of a newer schema than this evalab reads."""
        row = None
        if {"meta", "runs", "studies"} <= tables:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise InputError(
                f"{self.path}: an SQLite database but not an evalab run store (it has tables "
                f"{', '.join(sorted(tables))}); give a new file or an evalab run store"
            )
        version = int(row[0])
        if version > SCHEMA_VERSION:
            writer = self.conn.execute(
                "SELECT value FROM meta WHERE key='evalab_version'"
            ).fetchone()
            by = f"evalab {writer[0]}" if writer else "a newer evalab"
            raise InputError(
                f"{self.path}: a run store of schema {version}, written by {by}; this evalab "
                f"({__version__}) reads schema {SCHEMA_VERSION} and older: open it with {by} or later "
                "(nothing was changed)"
            )
        return version

    def _create_or_migrate(self) -> str:
        for stmt in _TABLES:
            self.conn.execute(stmt)
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}
        for col, kind in _ADDED_COLUMNS:
            if (
                col not in columns
            ):  # a store of an older schema: the columns are added, nothing is lost
                self.conn.execute(f"ALTER TABLE runs ADD COLUMN {col} {kind}")
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('evalab_version', ?)", (__version__,)
        )
        self.conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', ?)",
            (uuid.uuid4().hex[:12],),
        )
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
        if self.read_only:
            raise InputError(
                f"{self.path}: the run database is read-only (this user cannot write the file or its "
                "folder); `ablate status` and `ablate report` read it, writing needs write access"
            )
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
                        raise _db_error(self.path, exc, self.busy_timeout) from exc
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 1.0)

    def register_study(self, study: Study) -> None:
        """Record the study (name, file, code version, parsed spec) and its code's file map."""
        from evalab.ablation.plan.runs import canonical

        spec = canonical(
            {
                "seeds": list(study.seeds),
                "metrics": list(study.metrics),
                "primary": study.primary,
                "base": study.base,
                "variants": [[v.label, v.settings, v.stage, v.parent] for v in study.variants],
                "grid": study.grid,
                "entry": study.entry,
                "command": study.command,
                "evaluate": study.evaluate,
                "evaluation": study.evaluation,
            }
        )
        git = study.code.git if study.code else None
        files = json.dumps(version_map(study), sort_keys=True)
        t = now()

        def upsert() -> None:
            self.check_study_file(study)
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
                (
                    study.name,
                    study.code_version,
                    files,
                    git.commit if git else None,
                    None if git is None else int(git.dirty),
                    t,
                ),
            )

        self.write(upsert)

    def record_all(self, outcomes: list[Outcome]) -> None:
        """Store finished runs made elsewhere (``ablate import``) in one transaction: all
        or none. :class:`InputError` (nothing stored) when the store already holds one of
        them as ``ok``."""

        def insert() -> None:
            for outcome in outcomes:
                r = outcome.result
                if self.conn.execute(
                    "SELECT 1 FROM runs WHERE study=? AND run_key=? AND status='ok'",
                    (outcome.study, r.key),
                ).fetchone():
                    raise InputError(
                        f"{self.path}: row {'/'.join(outcome.rows)} seed {outcome.seed} was stored as ok "
                        "while importing; nothing was imported (run the import again to see what is left)"
                    )
                held = self.live_lease(outcome.study, r.key)
                if held:
                    raise InputError(
                        f"{self.path}: row {'/'.join(outcome.rows)} seed {outcome.seed} is being run by "
                        f"{held}; nothing was imported: import once that runner has finished (a run it "
                        "stores as ok is then refused, never duplicated)"
                    )
                self._insert(outcome)

        self.write(insert)

    def live_lease(self, study: str, key: str) -> str:
        """Who holds a live lease on the run ('' when nobody does)."""
        row = self.conn.execute(
            "SELECT host, pid, heartbeat FROM leases WHERE study=? AND run_key=?", (study, key)
        ).fetchone()
        if row is None or not lease_alive(row[0], row[1], row[2]):
            return ""
        return f"a runner on {row[0]} (pid {row[1]})"

    def _insert(self, outcome: Outcome) -> int:
        """Insert or replace (unless ok) one run's row; the number of rows changed."""
        from evalab.ablation.plan.runs import canonical

        r = outcome.result
        values = (
            outcome.study,
            r.key,
            json.dumps(list(outcome.rows)),
            canonical(outcome.config),
            outcome.seed,
            outcome.code_version,
            r.status,
            json.dumps(r.metrics),
            json.dumps(r.artifacts.to_json()) if r.artifacts is not None else None,
            r.duration,
            r.host,
            r.error or None,
            r.traceback or None,
            r.attempts,
            r.started_at,
            r.finished_at,
            outcome.git_commit,
            None if outcome.git_dirty is None else int(outcome.git_dirty),
            json.dumps(outcome.inputs, sort_keys=True) if outcome.inputs else None,
        )
        updates = ", ".join(f"{c}=excluded.{c}" for c in _RUN_COLUMNS[2:])
        cur = self.conn.execute(
            f"INSERT INTO runs({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_RUN_COLUMNS))}) "
            f"ON CONFLICT(study, run_key) DO UPDATE SET {updates} WHERE runs.status != 'ok'",
            values,
        )
        if cur.rowcount and r.status == "ok" and r.curves:
            insert_curves(self.conn, outcome.study, r.key, r.curves)
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
                self.conn.execute(
                    "DELETE FROM leases WHERE study=? AND run_key=? AND owner=?",
                    (outcome.study, r.key, owner.id),
                )
            return changed > 0

        return self.write(insert)

    # ------------------------------------------------------------------ leases

    def claim(
        self,
        study: str,
        key: str,
        owner: Owner,
        *,
        lease_timeout: float = LEASE_TIMEOUT_S,
        stale: str = "",
    ) -> Claim:
        """Try to take a run: ``'claimed'``, ``'done'`` (already ok) or ``'held'`` (a live
        runner has it). A lease whose owner died is taken over. ``stale`` (the reason an ok
        run is superseded: a file it read changed) lets an ok run be taken: it is marked
        failed with that reason in the same transaction, so its result can be replaced."""

        def take() -> Claim:
            if self.conn.execute(
                "SELECT 1 FROM runs WHERE study=? AND run_key=? AND status='ok'", (study, key)
            ).fetchone():
                if not stale:
                    return "done"
                if self.live_lease(study, key):
                    return "held"
                self.conn.execute(
                    "UPDATE runs SET status='failed', error=? WHERE study=? AND run_key=?",
                    (stale, study, key),
                )
            row = self.conn.execute(
                "SELECT owner, host, pid, heartbeat FROM leases WHERE study=? AND run_key=?",
                (study, key),
            ).fetchone()
            if (
                row is not None
                and row[0] != owner.id
                and lease_alive(row[1], row[2], row[3], timeout=lease_timeout)
            ):
                return "held"
            self.conn.execute(
                "INSERT OR REPLACE INTO leases(study, run_key, owner, host, pid, heartbeat) VALUES (?,?,?,?,?,?)",
                (study, key, owner.id, owner.host, owner.pid, time.time()),
            )
            return "claimed"

        return self.write(take)

    def release(self, study: str, key: str, owner: Owner) -> None:
        """Give a claimed run back (it was not run to the end: Ctrl-C)."""
        self.write(
            lambda: self.conn.execute(
                "DELETE FROM leases WHERE study=? AND run_key=? AND owner=?", (study, key, owner.id)
            )
        )

    def heartbeat(self, owner: Owner) -> None:
        """Refresh every lease of ``owner``."""
        self.write(
            lambda: self.conn.execute(
                "UPDATE leases SET heartbeat=? WHERE owner=?", (time.time(), owner.id)
            )
        )

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
        row = self.conn.execute(
            "SELECT attempts FROM runs WHERE study=? AND run_key=?", (study, key)
        ).fetchone()
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
            f"SELECT {', '.join(_RUN_COLUMNS[1:])} FROM runs WHERE study=? ORDER BY finished_at",
            (study,),
        )
        for (
            key,
            rows,
            config,
            seed,
            code_version,
            status,
            metrics,
            artifacts,
            duration,
            host,
            error,
            tb,
            attempts,
            started,
            finished,
            git_commit,
            git_dirty,
            inputs,
        ) in cur:
            yield StoredRun(
                key=key,
                rows=tuple(json.loads(rows)),
                config=json.loads(config),
                seed=seed,
                status=status,
                metrics=json.loads(metrics) if metrics else {},
                artifacts=Artifacts.from_json(json.loads(artifacts)) if artifacts else None,
                duration=duration,
                host=host or "",
                error=error or "",
                traceback=tb or "",
                attempts=attempts,
                started_at=started or "",
                finished_at=finished or "",
                code_version=code_version,
                git_commit=git_commit,
                git_dirty=None if git_dirty is None else bool(git_dirty),
                inputs=json.loads(inputs) if inputs else {},
            )

    def superseded(self, study: Study) -> list[Superseded]:
        """Stored runs of ``study`` from other code versions, newest first, with the files
        that differ from the current version's file map."""
        current = version_map(study)
        out = []
        for version, count in self.conn.execute(
            f"SELECT code_version, COUNT(*) FROM runs WHERE study=? AND code_version NOT IN ({_marks(study)}) "
            "GROUP BY code_version ORDER BY MAX(finished_at) DESC",
            (study.name, *study.code_versions),
        ):
            row = self.conn.execute(
                "SELECT files, git_commit FROM code_versions WHERE study=? AND code_version=?",
                (study.name, version),
            ).fetchone()
            changed = changed_files(json.loads(row[0]), current) if row else []
            out.append(Superseded(version, int(count), changed, row[1] if row else None))
        return out

    def delete_superseded(self, study: Study) -> list[str]:
        """Delete the stored runs of ``study`` from other code versions; return their keys.

        Only runs of this study file (:meth:`check_study_file`) and never a run of the
        current plan; a key that is not a run key (an edited store) refuses the whole
        deletion, so nothing outside the store's run folder can be named. Their run folders
        are removed after the rows (a folder without a row is harmless; a row without its
        folder would point nowhere), each only when it lies inside ``runs/<store id>/<study>/``.
        """
        from evalab.ablation.plan.runs import plan_runs

        self.check_study_file(study)
        planned = {r.key for r in plan_runs(study)}

        def delete() -> list[str]:
            current, marks = (study.name, *study.code_versions), _marks(study)
            keys = [
                r[0]
                for r in self.conn.execute(
                    f"SELECT run_key FROM runs WHERE study=? AND code_version NOT IN ({marks})",
                    current,
                )
            ]
            bad = next((k for k in keys if not RUN_KEY_RE.match(k) or k in planned), None)
            if bad is not None:
                raise InputError(
                    f"{self.path}: a superseded run of study {study.name!r} has key {bad!r}, which is "
                    f"{'a run of the current plan' if bad in planned else 'no run key'}: the store was "
                    "edited by hand; nothing was removed"
                )
            self.conn.execute(
                f"DELETE FROM runs WHERE study=? AND code_version NOT IN ({marks})", current
            )
            # the file map recorded under the study's code version stays (it names both stages' files)
            self.conn.execute(
                f"DELETE FROM code_versions WHERE study=? AND code_version NOT IN ({_marks(study, 1)})",
                (*current, study.code_version),
            )
            self.conn.execute(
                "DELETE FROM curves WHERE study=? AND run_key NOT IN (SELECT run_key FROM runs WHERE study=?)",
                (study.name, study.name),
            )
            return keys

        keys = self.write(delete)
        parent = (self.runs_root / study.name).resolve()
        for key in keys:
            folder = self.run_dir(study.name, key)
            if folder.is_symlink():
                folder.unlink()  # a link is removed, never what it points to
            elif folder.resolve().parent == parent:
                shutil.rmtree(folder, ignore_errors=True)
        return keys

    def check_study_file(self, study: Study) -> None:
        """Refuse a study file whose name the store already holds for another study file
        that still exists: two files of one name would share (and ``gc`` delete) each
        other's runs. A file that moved (its old path is gone) takes the name over."""
        row = self.conn.execute("SELECT path FROM studies WHERE name=?", (study.name,)).fetchone()
        if row is None:
            return
        other = Path(row[0])
        try:
            same = other == study.path or not other.is_file() or other.samefile(study.path)
        except OSError:
            same = True
        if not same:
            raise InputError(
                f"{study.path}: the run database {self.path} holds study {study.name!r} of another study "
                f"file ({other}); give this study another [study] name or use another database"
            )

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``'ok'`` for a sound file."""
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])


def _marks(study: Study, extra: int = 0) -> str:
    """SQL placeholders for the study's current code versions (one per stage), plus ``extra``."""
    return ", ".join("?" * (len(study.code_versions) + extra))


def version_map(study: Study) -> dict[str, str]:
    """What the code version is made of: the code's file map, and each computed metric's
    definition with its reference contents (``[metrics.NAME]``), so a superseded version
    says which of them changed."""
    files = dict(study.code.files) if study.code else {}
    models = {
        f"[metrics.{name}] {key} ({path})": digest
        for name, c in study.computed.items()
        for key, path, digest in c.artifacts
    }
    return {
        **files,
        **{f"[metrics.{name}]": c.digest for name, c in study.computed.items()},
        **models,
    }


#: how :func:`stale_runs` names an eval run's retrained (or superseded) checkpoint
CHECKPOINT = "the checkpoint of trained run"


def stale_runs(
    study: Study, runs: Iterable[StoredRun], *, save_cache: bool = True
) -> dict[str, list[str]]:
    """The ok runs of the study's current code version that read a file (observed in
    their process) whose content changed since, or that is gone: key -> those files.
    Such a run is superseded like a run of an older code version: not used, run again.
    An ok eval run whose trained run finished again since it ran (a new checkpoint), or is
    itself stale or not ok now, is stale too: it evaluated another model. A pinned
    ``code_version`` overrides this too (the pin is the user's word). ``save_cache=False``
    (a dry run) leaves the file-digest cache unwritten."""
    if study.code is not None and study.code.pinned:
        return {}
    cache = DigestCache()
    out = {}
    current = {r.key: r for r in runs if r.code_version in study.code_versions}
    for run in current.values():
        if run.status == "ok" and run.inputs:
            changed = changed_inputs(run.inputs, study.directory, cache)
            if changed:
                out[run.key] = changed
    if save_cache:
        cache.save()
    for run in current.values():
        reason = _stale_checkpoint(run, current, out) if run.key not in out else None
        if reason:
            out[run.key] = [reason]
    return out


def _stale_checkpoint(
    run: StoredRun, runs: dict[str, StoredRun], stale: dict[str, list[str]]
) -> str | None:
    """Why an ok eval run evaluated another checkpoint than its trained run's now (None:
    the same one, or not an eval run). A run stored before the finish was recorded is
    compared by time: its trained run finished after it started."""
    art = run.artifacts
    if run.status != "ok" or art is None or not art.checkpoint_dir:
        return None
    key = art.evaluated.key if art.evaluated else Path(art.checkpoint_dir).name
    parent = runs.get(key)
    if parent is None:
        return None
    name = f"{CHECKPOINT} {key[:12]}"
    if parent.status != "ok" or key in stale:
        return f"{name} (superseded)"
    if art.evaluated is not None:
        retrained = art.evaluated.finished_at != parent.finished_at
    else:
        retrained = parent.finished_at > run.started_at
    return f"{name} (trained again)" if retrained else None


def current_version_map(study: Study, cache: DigestCache) -> dict[str, str]:
    """:func:`version_map` computed from the files as they are now (no git): what a run
    claimed now would execute."""
    code = study.code
    files = code_files(study.directory, code.start, code.inputs, cache) if code else {}
    models = {
        f"[metrics.{name}] {key} ({path})": digest
        for name, c in study.computed.items()
        for key, path, digest in model_artifacts(c.settings, cache)
    }
    return {
        **files,
        **{f"[metrics.{name}]": c.digest for name, c in study.computed.items()},
        **models,
    }


def _check_path(path: Path, create: bool) -> None:
    """Refuse a ``--db`` that is no regular file (a folder, a FIFO, a device) or is missing
    where a store must exist, before SQLite opens it (a FIFO would block the open)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if not create:
            raise InputError(
                f"{path}: no run database here; run the study first (or name another database)"
            ) from None
        return
    except OSError as exc:
        raise InputError(f"{path}: cannot use as a run database ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, expected a database file path")
    if not stat.S_ISREG(mode):
        kind = {
            stat.S_ISFIFO: "a FIFO (named pipe)",
            stat.S_ISCHR: "a character device",
            stat.S_ISBLK: "a block device",
            stat.S_ISSOCK: "a socket",
        }
        what = next((name for test, name in kind.items() if test(mode)), "not a regular file")
        raise SettingValueError(
            "db_path",
            str(path),
            f"is {what}; expected a run database file (a new path or a run store)",
        )


def _writable(path: Path) -> bool:
    """Whether this process may write the database and create its ``-wal``/``-shm`` files."""
    return os.access(path, os.W_OK) and os.access(path.resolve().parent, os.W_OK | os.X_OK)


def _connect(path: Path, read_only: bool, busy_timeout: float) -> sqlite3.Connection:
    """The connection; a store opened for reading only is read as an immutable file when
    no connection has it open (no ``-wal`` file: nothing is created beside it), else with
    ``mode=ro`` (or immutable when its ``-wal`` file is empty and cannot be shared)."""

    def connect(database: str | Path, uri: bool = False) -> sqlite3.Connection:
        return sqlite3.connect(
            database,
            timeout=min(busy_timeout, 5.0),
            isolation_level=None,
            check_same_thread=False,
            uri=uri,
        )

    if not read_only:
        return connect(path)
    uri = path.resolve().as_uri()
    wal = Path(f"{path}-wal")
    if not wal.exists():  # no connection has it open (SQLite's read-only mode would create one)
        return connect(f"{uri}?mode=ro&immutable=1", uri=True)
    conn = connect(f"{uri}?mode=ro", uri=True)
    try:
        conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    if wal.stat().st_size > 0:
        raise InputError(
            f"{path}: the run database cannot be written here and another process is writing it "
            f"({wal.name} is not empty); read it once that process has finished"
        )
    return connect(f"{uri}?mode=ro&immutable=1", uri=True)


def store_fault(path: Path, exc: sqlite3.Error) -> EvalabError:
    """One line naming the database and what went wrong (what SQLite said, in words).

    >>> str(store_fault(Path("s.db"), sqlite3.OperationalError("database or disk is full")))
    's.db: cannot write the run database: the disk is full or a file-size limit (ulimit -f) was reached (database or disk is full); nothing was changed'
    """
    text = str(exc)
    low = text.lower()
    if "full" in low:
        why = "the disk is full or a file-size limit (ulimit -f) was reached"
    elif "i/o" in low:
        why = "a disk I/O error (a full disk, a file-size limit (ulimit -f) or a failing device)"
    elif "readonly" in low or "read-only" in low:
        why = "the database (or its folder) is read-only"
    elif "not a database" in low or "malformed" in low or "encrypted" in low:
        return InputError(
            f"{path}: not an SQLite database ({text}); ",
            Setting("db_path"),
            " takes an evalab run database (created by `evalab ablate run`)",
        )
    elif "unable to open" in low:
        return InputError(f"{path}: cannot open the run database ({text})")
    elif _is_busy(exc):
        return StoreBusyError(
            f"{path}: the run database stayed locked by another process; try again when it is free"
        )
    else:
        why = "SQLite refused the write"
    return InputError(f"{path}: cannot write the run database: {why} ({text}); nothing was changed")


def _db_error(path: Path, exc: sqlite3.Error, busy_timeout: float, hint: str = "") -> EvalabError:
    """What a failed statement raises: :class:`StoreBusyError` when the database stayed
    locked for ``busy_timeout`` seconds (with ``hint``), else :func:`store_fault`."""
    if _is_busy(exc):
        return StoreBusyError(
            f"{path}: the run database stayed locked by another process for "
            f"{busy_timeout:g} s{hint}"
        )
    return store_fault(path, exc)


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
