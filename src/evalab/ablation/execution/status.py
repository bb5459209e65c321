"""What ``evalab ablate status`` and ``gc`` report: run counts per row, superseded runs.

A run is *superseded* when the store holds it for an older code version of the study: it is
no longer used (its key differs from the current plan's) but it is kept until the user asks
for it to be removed (:func:`gc_study`); nothing is deleted silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalab.ablation.contract.codeversion import GitState
from evalab.ablation.contract.template import CommandLine
from evalab.ablation.execution.attempt import run_command
from evalab.ablation.plan.runs import PlannedRun, Subset, plan_runs, study_rows
from evalab.ablation.store.example_refusals import UnreadableExamples
from evalab.ablation.store.per_example import check_rows, examples_of, read_examples
from evalab.ablation.store.run_store import (
    CHECKPOINT,
    DEFAULT_DB,
    RunStore,
    StoredRun,
    Superseded,
    stale_runs,
)
from evalab.ablation.study.spec import Study
from evalab.errors import InputError

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


def run_failure(
    rows: tuple[str, ...], seed: int, key: str, error: str, traceback: str, folder: Path
) -> RunFailure:
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
    stale: dict[str, list[str]] = field(
        default_factory=dict
    )  # ok runs whose input files changed -> the files
    read_only: bool = False  # the store could only be read
    examples: list[UnreadableExamples] = field(
        default_factory=list
    )  # ok runs whose per-example file cannot be used (cut, damaged, not theirs)

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
        folder = store.run_dir
    stale = stale_runs(study, stored.values())
    examples = unusable_examples(plan, stored, stale, lambda key: folder(study.name, key))
    by_row: dict[str, list[int]] = {r.label: [0, 0, 0] for r in study_rows(study)}
    failures = []
    ok = failed = 0
    for run in plan:
        s = stored.get(run.key)
        status = s.status if s and run.key not in stale else None
        ok += status == "ok"
        failed += status == "failed"
        if s and status == "failed":
            failures.append(
                run_failure(
                    run.rows, run.seed, run.key, s.error, s.traceback, folder(study.name, run.key)
                )
            )
        for label in run.rows:
            by_row[label][0] += 1
            by_row[label][1] += status == "ok"
            by_row[label][2] += status == "failed"
    rows = [RowStatus(label, *counts) for label, counts in by_row.items()]
    return StudyStatus(
        study.name,
        path,
        rows,
        len(plan),
        ok,
        failed,
        failures,
        study.code_version,
        study.code.git if study.code else None,
        superseded,
        stale,
        read_only,
        examples,
    )


def unusable_examples(
    plan: list[PlannedRun],
    stored: dict[str, StoredRun],
    stale: dict[str, list[str]],
    folder: Callable[[str], Path],
) -> list[UnreadableExamples]:
    """The ok runs of the plan whose examples file is missing, cut, damaged or holds other
    rows than the run recorded (the report gives them no test-set interval)."""
    out = []
    for run in plan:
        s = stored.get(run.key)
        info = examples_of(s) if s is not None and run.key not in stale else None
        if s is None or info is None:
            continue
        path = folder(run.key) / info.file
        try:
            check_rows(path, read_examples(path), info.n)
        except InputError as exc:
            out.append(UnreadableExamples(run.rows[0], run.seed, str(exc)))
    return out


def example_lines(problems: list[UnreadableExamples]) -> list[str]:
    """One line per ok run whose per-example data cannot be used."""
    return [
        f"per-example data of {p.row} seed {p.seed} not used (no test-set interval): {p.error}"
        for p in problems
    ]


def superseded_lines(superseded: list[Superseded]) -> list[str]:
    """One line per older code version: how many runs it holds and which files changed.

    >>> superseded_lines([Superseded("abc", 24, ["model.py"], None)])
    ['24 stored runs belong to an older code version (abc; changed: model.py): not used; `evalab ablate gc` removes them']
    """
    lines = []
    for s in superseded:
        what = f"changed: {', '.join(s.changed)}" if s.changed else "file map not recorded"
        git = f", git {s.git_commit[:10]}" if s.git_commit else ""
        lines.append(
            f"{s.runs} stored run{'s' * (s.runs != 1)} belong{'s' * (s.runs == 1)} to an older code version "
            f"({s.code_version}{git}; {what}): not used; `evalab ablate gc` removes them"
        )
    return lines


def stale_lines(stale: dict[str, list[str]]) -> list[str]:
    """One line for the ok runs that read files changed since, naming the files, and one
    for the eval runs whose trained run has a new checkpoint since they evaluated it.

    >>> stale_lines({"k1": ["data/train.src"], "k2": ["data/train.src"]})
    ['2 stored runs read files that changed since they ran (data/train.src): not used; `evalab ablate run` runs them again']
    >>> stale_lines({"k3": [CHECKPOINT + " 0123abcd (trained again)"]})
    ['1 stored eval run evaluated a checkpoint its trained run has replaced (trained again or superseded) since: not used; `evalab ablate run` runs it again']
    """
    evals = [k for k, names in stale.items() if any(n.startswith(CHECKPOINT) for n in names)]
    files = sorted({f for names in stale.values() for f in names if not f.startswith(CHECKPOINT)})
    lines = []
    n = len(stale) - len(evals)
    if n:
        lines.append(
            f"{n} stored run{'s' * (n != 1)} read files that changed since {'they' if n != 1 else 'it'} ran "
            f"({', '.join(files)}): not used; `evalab ablate run` runs {'them' if n != 1 else 'it'} again"
        )
    if evals:
        m = len(evals)
        lines.append(
            f"{m} stored eval run{'s' * (m != 1)} evaluated a checkpoint {'their' if m != 1 else 'its'} "
            "trained run has replaced (trained again or superseded) since: not used; "
            f"`evalab ablate run` runs {'them' if m != 1 else 'it'} again"
        )
    return lines


def gc_study(
    study: Study, db_path: str | Path | None = None, *, dry_run: bool = False
) -> list[Superseded]:
    """Remove the superseded runs of ``study`` (rows and run folders); return what was (or,
    with ``dry_run``, would be) removed."""
    with RunStore(db_path, create=False) as store:
        store.check_study_file(study)
        found = store.superseded(study)
        if found and not dry_run:
            store.delete_superseded(study)
    return found


@dataclass(frozen=True)
class PlannedStep:
    """What ``ablate run`` would do with one planned run (``--dry-run``).

    ``state``: ``"stored"`` (finished: skipped), ``"stale"`` (finished, but a file it read
    changed since, or its trained run's checkpoint did: run again), ``"failed"`` (stored as
    failed: run again), ``"held"`` (another live runner has it) or ``"new"``.
    """

    run: PlannedRun
    state: str
    folder: Path | None  # None while the database does not exist (its id names the folders)
    command: CommandLine | None  # a command study's trained runs; else the run gets run.config
    error: str = ""  # the stored error of a failed run
    holder: str = ""  # who holds a held run
    changed: tuple[str, ...] = ()  # a stale run: the files (or checkpoint) that changed


@dataclass(frozen=True)
class DryRun:
    """The plan of ``ablate run`` against the store, found without running or writing anything."""

    study: str
    db_path: Path
    db_exists: bool
    steps: list[PlannedStep]
    superseded: list[Superseded]
    whole_plan: int = 0  # runs of the whole study when a subset was asked for

    def count(self, state: str) -> int:
        return sum(s.state == state for s in self.steps)


#: the run folder's stand-in in a dry run's commands while the database does not exist
NEW_FOLDER = Path("runs") / "(new store)"


def dry_run(
    study: Study, db_path: str | Path | None = None, subset: Subset | None = None
) -> DryRun:
    """Each planned run (of ``subset``), with what the store holds for it and its command,
    read from a store opened read-only: no file is created or changed."""
    whole = plan_runs(study)
    if subset:
        subset.check(study)
    plan = subset.select(whole) if subset else whole
    path = Path(db_path) if db_path is not None else DEFAULT_DB
    if not path.exists():
        stand_in = path.resolve().parent / NEW_FOLDER / study.name
        steps = [_step(study, run, "new", None, stand_in / run.key) for run in plan]
        return DryRun(study.name, path, False, steps, [], len(whole) if subset else 0)
    with RunStore(path, read_only=True) as store:
        stored = store.runs(study.name)
        stale = stale_runs(study, stored.values(), save_cache=False)
        steps = []
        for run in plan:
            s = stored.get(run.key)
            done = s is not None and s.status == "ok" and run.key not in stale
            holder = "" if done else store.live_lease(study.name, run.key)
            folder = store.run_dir(study.name, run.key)
            if run.key in stale and not holder:
                step = _step(study, run, "stale", folder, folder, changed=stale[run.key])
            else:
                state = "stored" if done else "held" if holder else "failed" if s else "new"
                step = _step(study, run, state, folder, folder, s.error if s else "", holder)
            steps.append(step)
        superseded = store.superseded(study)
    return DryRun(study.name, path, True, steps, superseded, len(whole) if subset else 0)


def _step(
    study: Study,
    run: PlannedRun,
    state: str,
    folder: Path | None,
    shown: Path,
    error: str = "",
    holder: str = "",
    changed: Sequence[str] = (),
) -> PlannedStep:
    """One step; its command names the run folder ``shown`` (the folder, or its stand-in)."""
    command = (
        run_command(study, run, shown)
        if study.template is not None and run.stage == "train"
        else None
    )
    return PlannedStep(run, state, folder, command, error, holder, tuple(changed))
