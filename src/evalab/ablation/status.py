"""What ``evalab ablate status`` and ``gc`` report: run counts per row, superseded runs.

A run is *superseded* when the store holds it for an older code version of the study: it is
no longer used (its key differs from the current plan's) but it is kept until the user asks
for it to be removed (:func:`gc_study`); nothing is deleted silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalab.ablation.codeversion import GitState
from evalab.ablation.plan import plan_runs, study_rows
from evalab.ablation.spec import Study
from evalab.ablation.store import RunStore, Superseded

#: lines of a failed run's traceback (or of its log) that ``run``, ``status`` and ``-f json`` show
TAIL_LINES = 8


@dataclass(frozen=True)
class RunFailure:
    """A failed run: its rows, its error, the last lines of its traceback (of its log when
    it left none) and the log file itself."""

    rows: tuple[str, ...]
    seed: int
    key: str
    error: str
    tail: tuple[str, ...]
    log: Path


def last_lines(text: str, n: int = TAIL_LINES) -> tuple[str, ...]:
    """The last ``n`` non-blank lines of ``text``, trailing spaces removed.

    >>> last_lines("a\\n\\n  b  \\nc\\n", 2)
    ('  b', 'c')
    """
    return tuple(ln.rstrip() for ln in text.splitlines() if ln.strip())[-n:]


def run_failure(rows: tuple[str, ...], seed: int, key: str, error: str, traceback: str, folder: Path) -> RunFailure:
    """The failure of one run whose run folder is ``folder`` (``traceback`` as stored)."""
    log = folder / "log.txt"
    text = traceback
    if not text.strip():
        try:
            text = log.read_text(encoding="utf-8", errors="replace")[-20_000:]
        except OSError:
            text = ""
    return RunFailure(tuple(rows), seed, key, error, last_lines(text), log)


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
    """What ``evalab ablate status`` shows: counts per row, stored errors, superseded runs."""

    study: str
    db_path: Path
    rows: list[RowStatus]
    planned: int
    ok: int
    failed: int
    failures: list[RunFailure]
    code_version: str = ""
    git: GitState | None = None
    superseded: list[Superseded] | None = None

    @property
    def pending(self) -> int:
        return self.planned - self.ok - self.failed


def study_status(study: Study, db_path: str | Path | None = None) -> StudyStatus:
    """Count ok / failed / pending runs per row from the store (runs of the current plan)."""
    plan = plan_runs(study)
    with RunStore(db_path, create=False) as store:
        stored = store.runs(study.name)
        superseded = store.superseded(study)
        path = store.path
        folder = store.run_dir
    by_row: dict[str, list[int]] = {r.label: [0, 0, 0] for r in study_rows(study)}
    failures = []
    ok = failed = 0
    for run in plan:
        s = stored.get(run.key)
        status = s.status if s else None
        ok += status == "ok"
        failed += status == "failed"
        if s and status == "failed":
            failures.append(run_failure(run.rows, run.seed, run.key, s.error, s.traceback, folder(study.name, run.key)))
        for label in run.rows:
            by_row[label][0] += 1
            by_row[label][1] += status == "ok"
            by_row[label][2] += status == "failed"
    rows = [RowStatus(label, *counts) for label, counts in by_row.items()]
    return StudyStatus(study.name, path, rows, len(plan), ok, failed, failures, study.code_version,
                       study.code.git if study.code else None, superseded)


def superseded_lines(superseded: list[Superseded]) -> list[str]:
    """One line per older code version: how many runs it holds and which files changed.

    >>> superseded_lines([Superseded("abc", 24, ["model.py"], None)])
    ['24 stored runs belong to an older code version (abc; changed: model.py): not used; `evalab ablate gc` removes them']
    """
    lines = []
    for s in superseded:
        what = f"changed: {', '.join(s.changed)}" if s.changed else "file map not recorded"
        git = f", git {s.git_commit[:10]}" if s.git_commit else ""
        lines.append(f"{s.runs} stored run{'s' * (s.runs != 1)} belong{'s' * (s.runs == 1)} to an older code version "
                     f"({s.code_version}{git}; {what}): not used; `evalab ablate gc` removes them")
    return lines


def gc_study(study: Study, db_path: str | Path | None = None, *, dry_run: bool = False) -> list[Superseded]:
    """Remove the superseded runs of ``study`` (rows and run folders); return what was (or,
    with ``dry_run``, would be) removed."""
    with RunStore(db_path, create=False) as store:
        found = store.superseded(study)
        if found and not dry_run:
            store.delete_superseded(study)
    return found
