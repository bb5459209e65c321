"""Runs made elsewhere (W&B, Hydra, a cluster's own scheduler) into the run store.

One record per finished run, as CSV (a header line) or JSON Lines (one object a line):

- ``row``: the row label (``base``, a variant's label, a grid cell such as ``a=0``), or
  ``config``: the run's configuration (a JSON object; in CSV also ``config.KEY`` columns);
  keys not given take the ``[base]`` (and ``[evaluation]``) values;
- ``seed``: one of the study's seeds;
- one column per metric the runs return (``[study] metrics``), a finite number;
- ``per_example`` (optional): a JSON file ``{metric: [value per test example]}`` (in JSONL
  also the object itself), checked like a local run's;
- ``outputs`` (when the study has ``[metrics.NAME]`` tables): the folder holding the run's
  output files under their declared names; evalab scores them like a local run's.

Paths are relative to the imported file. Everything is checked before anything is written
(one error names the file, the line and what is wrong); then every run is stored in one
transaction, so an import is stored whole or not at all. A run the store already holds as
``ok`` is refused, never duplicated.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.ablation.attempt import collect_examples
from evalab.ablation.per_example import check_counts, stored_counts
from evalab.ablation.plan import PlannedRun, canonical, plan_runs
from evalab.ablation.store import DEFAULT_DB, Outcome, RunResult, RunStore, StoredRun, now
from evalab.errors import InputError
from evalab.io import decode_utf8

if TYPE_CHECKING:
    from evalab.ablation.spec import Study

#: the examples file of an imported run (a local run writes examples.npz)
IMPORTED_EXAMPLES = "imported-examples.npz"
FIXED_COLUMNS = ("row", "config", "seed", "per_example", "outputs")


@dataclass(frozen=True)
class ImportedRun:
    """One checked record: the planned run it is, its metrics and per-example data."""

    run: PlannedRun
    metrics: dict[str, float]
    per_example: Any
    outputs: Path | None
    where: str  # FILE:LINE


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, record)`` pairs of a CSV or JSONL file."""
    if not path.is_file():
        raise InputError(f"{path}: no such file (expected a .csv or .jsonl file of finished runs)")
    text = decode_utf8(path.read_bytes(), str(path), expected="runs to import are UTF-8 CSV or JSON Lines")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
        header = reader.fieldnames or []
        twice = sorted({c for c in header if header.count(c) > 1})
        if twice:
            raise InputError(f"{path}:1: column {twice[0]!r} appears twice in the header; each column once")
        records = []
        for rec in reader:
            if None in rec or None in rec.values():
                cells = len(rec) - (None in rec) + len(rec.get(None) or []) - sum(v is None for v in rec.values())
                raise InputError(f"{path}:{reader.line_num}: has {cells} cells but the header has {len(header)} "
                                 "columns; each line one cell per column (quote a cell that holds a comma)")
            records.append((reader.line_num, dict(rec)))
    elif suffix in (".jsonl", ".ndjson"):
        records = []
        for i, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line, object_pairs_hook=_unique_keys)
            except ValueError as exc:
                raise InputError(f"{path}:{i}: not valid JSON ({exc})") from None
            if not isinstance(rec, dict):
                raise InputError(f"{path}:{i}: expected a JSON object with row or config, seed and metrics")
            records.append((i, rec))
    else:
        raise InputError(f"{path}: unknown format {suffix or '(no extension)'!r}; import a .csv (header line) or "
                         ".jsonl (one JSON object a line) file")
    if not records:
        raise InputError(f"{path}: no runs in the file")
    return records


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: ``{"acc": 0.5, "acc": 0.7}`` has no one value."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object; give each column once")
        out[key] = value
    return out


def check_records(study: Study, path: Path, records: list[tuple[int, dict[str, Any]]]) -> list[ImportedRun]:
    """Every record as an :class:`ImportedRun`; the first problem raises :class:`InputError`."""
    plan = plan_runs(study)
    out: list[ImportedRun] = []
    seen: dict[str, str] = {}
    for line, rec in records:
        where = f"{path}:{line}"
        imported = _check_one(study, plan, path, where, rec)
        if imported.run.key in seen:
            raise InputError(f"{where}: the same run (row {'/'.join(imported.run.rows)}, seed {imported.run.seed}) "
                             f"as {seen[imported.run.key]}; each run is imported once")
        seen[imported.run.key] = where
        out.append(imported)
    return out


def _check_one(study: Study, plan: list[PlannedRun], base: Path, where: str, rec: dict[str, Any]) -> ImportedRun:
    known = {*FIXED_COLUMNS, *study.returned}
    for col in rec:
        if col not in known and not col.startswith("config."):
            raise InputError(f"{where}: unknown column {col!r}; known: row or config (or config.KEY), seed, "
                             f"{', '.join(study.returned) or '(no returned metrics)'}, per_example, outputs")
    seed = _seed(rec.get("seed"), study, where)
    run = _find_run(study, plan, rec, seed, where)
    metrics = {m: _number(rec.get(m), m, where) for m in study.returned}
    outputs = None
    if study.computed:
        raw = rec.get("outputs")
        if not isinstance(raw, str) or not raw:
            raise InputError(f"{where}: outputs is missing: the study computes {', '.join(study.computed)} from each "
                             "run's output files, so give the folder that holds them")
        outputs = (base.parent / raw).resolve()
        if not outputs.is_dir():
            raise InputError(f"{where}: outputs {outputs} is not a folder (it holds the run's output files)")
    elif rec.get("outputs") not in (None, ""):
        raise InputError(f"{where}: outputs is given but the study declares no [metrics.NAME] tables to score them")
    return ImportedRun(run, metrics, _per_example(rec.get("per_example"), base, where), outputs, where)


def _seed(raw: Any, study: Study, where: str) -> int:
    try:
        seed = int(raw) if isinstance(raw, str) and raw.strip().lstrip("-").isdigit() else raw
    except ValueError:
        seed = raw
    if isinstance(seed, bool) or not isinstance(seed, int) or seed not in study.seeds:
        raise InputError(f"{where}: seed {raw!r} is not one of the study's seeds {list(study.seeds)}")
    return seed


def _number(raw: Any, name: str, where: str) -> float:
    if raw is None:
        raise InputError(f"{where}: metric {name} is missing; every run needs a value of each metric the runs "
                         "return (a column, or a key in JSON Lines)")
    value = raw
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            value = None
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: metric {name} is {raw!r}; every metric the runs return needs a finite number")
    return float(value)


def _find_run(study: Study, plan: list[PlannedRun], rec: dict[str, Any], seed: int, where: str) -> PlannedRun:
    label = rec.get("row")
    config = _config(rec, where)
    if (label in (None, "")) == (config is None):
        raise InputError(f"{where}: give exactly one of row (a row label) or config (the run's configuration)")
    if config is None:
        found = [r for r in plan if label in r.rows and r.seed == seed]
        if not found:
            labels = sorted({lab for r in plan for lab in r.rows})
            raise InputError(f"{where}: row {label!r} is not a row of this study; rows: {', '.join(labels)}")
        return found[0]
    unknown = [k for k in config if k not in study.base and k not in study.evaluation]
    if unknown:
        raise InputError(f"{where}: config key {unknown[0]!r} is not a key of [base] or [evaluation]")
    evaluating = any(k in study.evaluation for k in config)
    merged = canonical({**study.base, **(study.evaluation if evaluating else {}), **config})
    found = [r for r in plan if r.seed == seed and canonical(r.config) == merged]
    if not found:
        raise InputError(f"{where}: config {json.dumps(config, sort_keys=True)} is no row of this study (compared with "
                         "[base] and [evaluation] filled in); name the row with a row column instead")
    return found[0]


def _config(rec: dict[str, Any], where: str) -> dict[str, Any] | None:
    raw = rec.get("config")
    dotted = {k[len("config."):]: _cell(v) for k, v in rec.items() if k.startswith("config.") and v not in (None, "")}
    if raw in (None, "") and not dotted:
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
        if raw is None:
            raise InputError(f"{where}: config must be a JSON object such as {{\"heads\": 1}}")
    if raw is not None and not isinstance(raw, dict):
        raise InputError(f"{where}: config must be a JSON object such as {{\"heads\": 1}}")
    return {**(raw or {}), **dotted}


def _cell(value: Any) -> Any:
    """A CSV cell as the JSON value it spells (1, 0.1, true), else as text."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _per_example(raw: Any, base: Path, where: str) -> Any:
    if raw in (None, ""):
        return None
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise InputError(f"{where}: per_example must be the path of a JSON file {{metric: [values]}}")
    path = (base.parent / raw).resolve()
    try:
        return json.loads(decode_utf8(path.read_bytes(), str(path)))
    except OSError as exc:
        raise InputError(f"{where}: per_example file {path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise InputError(f"{where}: per_example file {path}: not valid JSON ({exc})") from None


def import_runs(study: Study, path: str | Path, db_path: str | Path | None = None) -> int:
    """Check every record of ``path``, then store them all (one transaction); return how
    many runs were stored. Any problem raises :class:`InputError` before anything is
    written (no store is created for a refused import)."""
    path = Path(path)
    imported = check_records(study, path, read_records(path))
    db = Path(db_path) if db_path is not None else DEFAULT_DB
    existing: dict[str, StoredRun] = {}
    held: dict[str, str] = {}
    if db.exists():
        with RunStore(db, create=False) as store:
            existing = store.runs(study.name)
            held = {r.run.key: who for r in imported if (who := store.live_lease(study.name, r.run.key))}
    for r in imported:
        old = existing.get(r.run.key)
        if old is not None and old.status == "ok":
            raise InputError(f"{r.where}: row {'/'.join(r.run.rows)} seed {r.run.seed} is already stored as ok in {db}; "
                             "a finished run is never imported twice")
        if r.run.key in held:
            raise InputError(f"{r.where}: row {'/'.join(r.run.rows)} seed {r.run.seed} is being run by {held[r.run.key]} "
                             f"on {db}; import it once that runner has finished (a run it stores as ok is never "
                             "imported again)")
    known = stored_counts(x for x in existing.values() if x.code_version in study.code_versions)
    with tempfile.TemporaryDirectory(prefix="evalab-import-") as tmp:
        prepared = [_prepare(study, r, Path(tmp) / r.run.key, known) for r in imported]
        with RunStore(db) as store:
            placed: list[Path] = []
            try:
                outcomes = [_outcome(study, store, r, metrics, examples, placed) for r, metrics, examples in prepared]
                store.register_study(study)
                store.record_all(outcomes)
            except BaseException:
                for file in placed:  # the runs were not stored: their files go too
                    file.unlink(missing_ok=True)
                raise
    return len(prepared)


def _prepare(study: Study, r: ImportedRun, scratch: Path,
             known: dict[str, tuple[int, str]]) -> tuple[ImportedRun, dict[str, float], dict[str, Any]]:
    """Score the run's outputs and check its per-example values, exactly as for a local
    run, writing its examples file to ``scratch``; returns the run, its metrics and its
    examples entry."""
    job = {"computed": [{**c.to_job(), "outputs": str(r.outputs / c.outputs)} for c in study.computed.values()]
           if r.outputs is not None else [], "bounds": {m: list(b) for m, b in study.bounds.items()}}
    metrics = dict(r.metrics)
    scratch.mkdir(parents=True)
    examples, error = collect_examples(job, scratch, metrics, r.per_example)
    if not error and examples:
        error = check_counts(examples["n"], known)
    if error:
        raise InputError(f"{r.where}: {error}")
    for name, n in examples.get("n", {}).items():
        known.setdefault(name, (n, r.where))
    return r, metrics, {**examples, "scratch": str(scratch)} if examples else {}


def _outcome(study: Study, store: RunStore, r: ImportedRun, metrics: dict[str, float], examples: dict[str, Any],
             placed: list[Path]) -> Outcome:
    """The run's outcome; its examples file moved into its run folder (under a name no local
    run writes, so an import never replaces a local run's file)."""
    folder = store.run_dir(study.name, r.run.key)
    if examples:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / IMPORTED_EXAMPLES
        shutil.move(str(Path(examples.pop("scratch")) / examples["file"]), target)
        placed.append(target)
        examples = {**examples, "file": IMPORTED_EXAMPLES}
    artifacts = {"dir": str(folder), "files": None, "imported_from": r.where, **({"examples": examples} if examples else {})}
    result = RunResult(key=r.run.key, status="ok", metrics=metrics, artifacts=artifacts, host="imported",
                       attempts=1, finished_at=now())
    return Outcome(study=study.name, rows=r.run.rows, config=r.run.config, seed=r.run.seed,
                   code_version=study.stage_version("train"), git_commit=None, git_dirty=None, result=result)
