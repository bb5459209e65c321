"""What ``evalab ablate status`` and ``gc`` report: run counts per row, superseded runs.

A run is *superseded* when the store holds it for an older code version of the study: it is
no longer used (its key differs from the current plan's) but it is kept until the user asks
for it to be removed (:func:`gc_study`); nothing is deleted silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evalab.ablation.codeversion import GitState
from evalab.ablation.plan import plan_runs, study_rows
from evalab.ablation.spec import Study
from evalab.ablation.store import RunStore, Superseded, stale_runs


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
    errors: list[tuple[str, int, str]]  # (row labels, seed, error)
    code_version: str = ""
    git: GitState | None = None
    superseded: list[Superseded] | None = None
    stale: dict[str, list[str]] = field(default_factory=dict)  # ok runs whose input files changed -> the files
    read_only: bool = False  # the store could only be read

    @property
    def pending(self) -> int:
        return self.planned - self.ok - self.failed


def study_status(study: Study, db_path: str | Path | None = None) -> StudyStatus:
    """Count ok / failed / pending runs per row from the store (runs of the current plan)."""
    plan = plan_runs(study)
    with RunStore(db_path, create=False) as store:
        store.check_study_file(study)
        stored = store.runs(study.name)
        superseded = store.superseded(study)
        path, read_only = store.path, store.read_only
    stale = stale_runs(study, stored.values())
    by_row: dict[str, list[int]] = {r.label: [0, 0, 0] for r in study_rows(study)}
    errors = []
    ok = failed = 0
    for run in plan:
        s = stored.get(run.key)
        status = s.status if s and run.key not in stale else None
        ok += status == "ok"
        failed += status == "failed"
        if s and status == "failed":
            errors.append((", ".join(run.rows), run.seed, s.error))
        for label in run.rows:
            by_row[label][0] += 1
            by_row[label][1] += status == "ok"
            by_row[label][2] += status == "failed"
    rows = [RowStatus(label, *counts) for label, counts in by_row.items()]
    return StudyStatus(study.name, path, rows, len(plan), ok, failed, errors, study.code_version,
                       study.code.git if study.code else None, superseded, stale, read_only)


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


def stale_lines(stale: dict[str, list[str]]) -> list[str]:
    """One line for the ok runs that read files changed since, naming the files.

    >>> stale_lines({"k1": ["data/train.src"], "k2": ["data/train.src"]})
    ['2 stored runs read files that changed since they ran (data/train.src): not used; `evalab ablate run` runs them again']
    """
    if not stale:
        return []
    files = sorted({f for names in stale.values() for f in names})
    n = len(stale)
    return [f"{n} stored run{'s' * (n != 1)} read files that changed since {'they' if n != 1 else 'it'} ran "
            f"({', '.join(files)}): not used; `evalab ablate run` runs {'them' if n != 1 else 'it'} again"]


def gc_study(study: Study, db_path: str | Path | None = None, *, dry_run: bool = False) -> list[Superseded]:
    """Remove the superseded runs of ``study`` (rows and run folders); return what was (or,
    with ``dry_run``, would be) removed."""
    with RunStore(db_path, create=False) as store:
        store.check_study_file(study)
        found = store.superseded(study)
        if found and not dry_run:
            store.delete_superseded(study)
    return found
