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
- ``curves`` (optional): the run's per-step log (``metrics.jsonl``), stored as its curves;
  the study's ``[curves] select`` rule picks values from it as for a local run.

W&B, MLflow and Hydra exports are read by :mod:`evalab.ablation.importing.sources` into these records.

Paths are relative to the imported file. Everything is checked before anything is written
(one error names the file, the line and what is wrong); then every run is stored in one
transaction, so an import is stored whole or not at all. A run the store already holds as
``ok`` is refused, never duplicated.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab import numbers
from evalab.ablation.contract.curves import LOG_FILE, CurvesEntry, Logged, collect_curves
from evalab.ablation.execution.attempt import collect_examples
from evalab.ablation.importing.sources import (
    FORMATS,
    Record,
    apply_maps,
    check_extra,
    detect,
    flatten,
    foreign_record,
    hydra_records,
    parse_maps,
    study_keys,
)
from evalab.ablation.plan.jobs import Artifacts, ExamplesEntry
from evalab.ablation.plan.runs import PlannedRun, plan_runs
from evalab.ablation.store.per_example import check_counts, stored_counts
from evalab.ablation.store.run_store import DEFAULT_DB, Outcome, RunResult, RunStore, StoredRun, now
from evalab.errors import InputError, RunError, Setting, SettingValueError
from evalab.io import data_suffix, decode_utf8, read_bytes

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study

#: the examples file of an imported run (a local run writes examples.npz)
IMPORTED_EXAMPLES = "imported-examples.npz"
FIXED_COLUMNS = ("row", "config", "seed", "per_example", "outputs", "curves")


@dataclass(frozen=True)
class ImportedRun:
    """One checked record: the planned run it is, its metrics and per-example data."""

    run: PlannedRun
    metrics: dict[str, float]
    per_example: Any
    outputs: Path | None
    where: str  # FILE:LINE
    curves: CurvesEntry | None = None  # its log, when the record names one
    blobs: dict[str, str] = field(default_factory=dict)  # metric -> encoded curve (base64)


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, record)`` pairs of a CSV or JSONL file."""
    if not path.exists():
        raise InputError(f"{path}: no such file (expected a .csv or .jsonl file of finished runs)")
    data, _ = read_bytes(path, "finished runs (CSV or JSON Lines)")  # once: a FIFO, a pipe; gzip
    text = decode_utf8(data, str(path), expected="runs to import are UTF-8 CSV or JSON Lines")
    suffix = data_suffix(path)
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
        header = reader.fieldnames or []
        twice = sorted({c for c in header if header.count(c) > 1})
        if twice:
            raise InputError(
                f"{path}:1: column {twice[0]!r} appears twice in the header; each column once"
            )
        records = []
        for rec in reader:
            if None in rec or None in rec.values():
                cells = (
                    len(rec)
                    - (None in rec)
                    + len(rec.get(None) or [])
                    - sum(v is None for v in rec.values())
                )
                raise InputError(
                    f"{path}:{reader.line_num}: has {cells} cells but the header has {len(header)} "
                    "columns; each line one cell per column (quote a cell that holds a comma)"
                )
            records.append((reader.line_num, dict(rec)))
    elif suffix in (".jsonl", ".ndjson"):
        records = []
        for i, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
            if not line.strip():
                continue
            try:
                rec = numbers.loads(line, object_pairs_hook=_unique_keys)
            except ValueError as exc:
                raise InputError(f"{path}:{i}: not valid JSON ({exc})") from None
            _refuse_numbers(rec, f"{path}:{i}")
            if not isinstance(rec, dict):
                raise InputError(
                    f"{path}:{i}: expected a JSON object with row or config, seed and metrics"
                )
            records.append((i, rec))
    else:
        raise InputError(
            f"{path}: unknown format {suffix or '(no extension)'!r}; import a .csv (header line) or "
            ".jsonl (one JSON object a line) file"
        )
    if not records:
        raise InputError(f"{path}: no runs in the file")
    return records


def _refuse_numbers(value: Any, where: str) -> None:
    """Refuse a JSON number :mod:`~evalab.numbers` does not accept, naming its key."""
    found = numbers.first_refused(value)
    if found is not None:
        key, refused = found
        raise InputError(f"{where}: {'column ' + key + ': ' if key else ''}{refused.error}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: ``{"acc": 0.5, "acc": 0.7}`` has no one value."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object; give each column once")
        out[key] = value
    return out


@dataclass(frozen=True)
class Skipped:
    """A record that was not imported: ``reason`` is ``"unfinished"`` (its tool did not record
    the run as finished; ``detail`` is the tool's state) or ``"no-row"`` (its configuration is
    no row of the study; ``detail`` the configuration as JSON)."""

    where: str
    name: str
    reason: str
    detail: str


@dataclass(frozen=True)
class ImportSummary:
    """What an import stored and what it did not use."""

    stored: int
    layout: str  # evalab | wandb | mlflow | hydra
    skipped: tuple[Skipped, ...] = ()
    ignored: tuple[str, ...] = ()  # columns (or configuration keys) that were not used


class _NoRow(InputError):
    """A record whose configuration is no row of the study."""

    def __init__(self, message: str, where: str, detail: str) -> None:
        super().__init__(message)
        self.where = where
        self.detail = detail


def load_records(
    study: Study,
    path: Path,
    *,
    layout: str = "auto",
    maps: tuple[str, ...] = (),
    seed_column: str | None = None,
    metrics_file: str = "metrics.json",
) -> tuple[str, list[Record], list[str]]:
    """The export at ``path`` (a file, or a Hydra multirun folder) as records in evalab's
    terms: ``(layout, records, ignored columns)``."""
    if layout not in FORMATS:
        raise SettingValueError("layout", repr(layout), f"expected one of {', '.join(FORMATS)}")
    if path.is_dir():
        if layout not in ("auto", "hydra"):
            raise SettingValueError(
                "layout",
                repr(layout),
                f"{path} is a folder; only a Hydra multirun folder is imported as a folder (hydra)",
            )
        raw = hydra_records(path, metrics_file)
        layout = "hydra"
    else:
        if layout == "hydra":
            raise SettingValueError(
                "layout",
                "hydra",
                f"reads a multirun folder (with <n>/.hydra/config.yaml); {path} is a file",
            )
        raw = [(f"{path}:{line}", rec) for line, rec in read_records(path)]
        if layout == "auto":
            layout = detect(path, {c for _, rec in raw for c in rec})
    raw = apply_maps(raw, parse_maps(maps))
    if seed_column is not None and not any(seed_column in rec for _, rec in raw):
        raise SettingValueError(
            "seed_column", seed_column, f"the export has no column {seed_column!r}"
        )
    if layout == "evalab":
        records = [Record(where, "", _seed_from(rec, seed_column)) for where, rec in raw]
        return layout, records, []
    records = [foreign_record(layout, study, where, rec, seed_column) for where, rec in raw]
    ignored = {col for r in records for col in r.ignored} | set(check_extra(records))
    return layout, records, sorted(ignored)


def _seed_from(rec: dict[str, Any], column: str | None) -> dict[str, Any]:
    if column is None or column == "seed":
        return rec
    rec = dict(rec)
    if "seed" in rec:
        raise SettingValueError(
            "seed_column", column, "the export has a seed column too; name one source of seeds"
        )
    rec["seed"] = rec.pop(column, None)
    return rec


def check_records(
    study: Study, records: list[Record], *, skip_unmatched: bool = False
) -> tuple[list[ImportedRun], list[Skipped]]:
    """Every finished record as an :class:`ImportedRun`, and the records not imported; the
    first problem raises :class:`InputError`, and so does a record that matches no row
    unless ``skip_unmatched``."""
    plan = plan_runs(study)
    out: list[ImportedRun] = []
    skipped = [Skipped(r.where, r.name, "unfinished", r.skip) for r in records if r.skip]
    unmatched: list[_NoRow] = []
    seen: dict[str, str] = {}
    for rec in records:
        if rec.skip:
            continue
        try:
            imported = _check_one(
                study, plan, rec.where.rpartition(":")[0] or rec.where, rec.where, rec.fields
            )
        except _NoRow as exc:
            unmatched.append(exc)
            skipped.append(Skipped(rec.where, rec.name, "no-row", exc.detail))
            continue
        if imported.run.key in seen:
            raise InputError(
                f"{rec.where}: the same run (row {'/'.join(imported.run.rows)}, seed {imported.run.seed}) "
                f"as {seen[imported.run.key]}; each run is imported once"
            )
        seen[imported.run.key] = rec.where
        out.append(imported)
    if unmatched and not skip_unmatched:
        more = (
            (
                f", nor do {len(unmatched) - 1} more records ({', '.join(u.where for u in unmatched[1:4])}"
                f"{', ...' if len(unmatched) > 4 else ''})"
            )
            if len(unmatched) > 1
            else ""
        )
        raise InputError(
            f"{unmatched[0]}{more}; name the row with a row column, or import the other records with ",
            Setting("skip_unmatched"),
            " (the unmatched ones are listed)",
        )
    if not out:
        raise InputError(
            f"{records[0].where.rpartition(':')[0] or records[0].where}: no finished run of the export "
            f"matches a row of the study ({len(skipped)} records skipped)"
        )
    return out, skipped


def _check_one(
    study: Study, plan: list[PlannedRun], source: str, where: str, rec: dict[str, Any]
) -> ImportedRun:
    known = {*FIXED_COLUMNS, *study.returned}
    for col in rec:
        if col not in known and not col.startswith("config."):
            raise InputError(
                f"{where}: unknown column {col!r}; known: row or config (or config.KEY), seed, "
                f"{', '.join(study.returned) or '(no returned metrics)'}, per_example, outputs"
            )
    seed = _seed(rec.get("seed"), study, where)
    run = _find_run(study, plan, rec, seed, where)
    base = Path(source)
    logged = _metrics_and_curves(study, rec, _folder(base), where)
    outputs = None
    if study.computed:
        raw = rec.get("outputs")
        if not isinstance(raw, str) or not raw:
            raise InputError(
                f"{where}: outputs is missing: the study computes {', '.join(study.computed)} from each "
                "run's output files, so give the folder that holds them"
            )
        outputs = (_folder(base) / raw).resolve()
        if not outputs.is_dir():
            raise InputError(
                f"{where}: outputs {outputs} is not a folder (it holds the run's output files)"
            )
    elif rec.get("outputs") not in (None, ""):
        raise InputError(
            f"{where}: outputs is given but the study declares no [metrics.NAME] tables to score them"
        )
    return ImportedRun(
        run,
        logged.metrics,
        _per_example(rec.get("per_example"), _folder(base), where),
        outputs,
        where,
        logged.entry,
        logged.blobs,
    )


def _metrics_and_curves(study: Study, rec: dict[str, Any], folder: Path, where: str) -> Logged:
    """The run's metrics (its columns, and its curves by the study's ``select`` rule where it
    has a ``curves`` log, as for a local run) and its curves."""
    metrics = {m: _number(rec[m], m, where) for m in study.returned if rec.get(m) not in (None, "")}
    logged = Logged(metrics)
    if rec.get("curves") not in (None, ""):
        if not isinstance(rec["curves"], str):
            raise InputError(f"{where}: curves must be the path of a JSON Lines log ({LOG_FILE})")
        path = (folder / rec["curves"]).resolve()
        if not path.is_file():
            raise InputError(
                f'{where}: curves {path}: no such file (a JSON Lines log, one {{"step": ...}} a line)'
            )
        try:
            logged = collect_curves(study.curves, study.returned, path, metrics)
        except RunError as exc:
            raise InputError(f"{where}: curves {path}: {exc.error}") from None
        if logged.entry is not None:
            logged = replace(logged, entry=replace(logged.entry, file=str(path)))
    for m in study.returned:
        if m not in logged.metrics:
            _number(None, m, where)  # refuses: the metric is missing
    return logged


def _folder(source: Path) -> Path:
    """Where an export's relative paths start: the file's folder, or a Hydra job folder."""
    return source if source.is_dir() else source.parent


def _seed(raw: Any, study: Study, where: str) -> int:
    seed = raw
    if isinstance(raw, str):
        try:
            seed = numbers.parse_number(raw)
        except numbers.NumberError:
            seed = raw
    if isinstance(seed, float) and seed.is_integer():
        seed = int(seed)  # an export that writes every number as a float (0.0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed not in study.seeds:
        raise InputError(
            f"{where}: seed {raw!r} is not one of the study's seeds {list(study.seeds)}"
        )
    return seed


def _number(raw: Any, name: str, where: str) -> float:
    if raw is None or raw == "":
        raise InputError(
            f"{where}: metric {name} is missing; every run needs a value of each metric the runs "
            "return (a column, or a key in JSON Lines)"
        )
    needs = "every metric the runs return needs a finite number"
    try:
        return float(numbers.read_value(raw))
    except TypeError:
        raise InputError(f"{where}: metric {name} is {raw!r:.60}; {needs}") from None
    except numbers.NumberError as exc:
        if exc.reason == "syntax":
            raise InputError(
                f"{where}: metric {name} is {numbers.shown(exc.text)}, {numbers.REASONS['syntax']}; {needs}"
            ) from None
        raise InputError(f"{where}: column {name}: {exc}; {needs}") from None


def _find_run(
    study: Study, plan: list[PlannedRun], rec: dict[str, Any], seed: int, where: str
) -> PlannedRun:
    label = rec.get("row")
    config = _config(rec, where)
    if (label in (None, "")) == (config is None):
        raise InputError(
            f"{where}: give exactly one of row (a row label) or config (the run's configuration)"
        )
    if config is None:
        found = [r for r in plan if label in r.rows and r.seed == seed]
        if not found:
            labels = sorted({lab for r in plan for lab in r.rows})
            raise InputError(
                f"{where}: row {label!r} is not a row of this study; rows: {', '.join(labels)}"
            )
        return found[0]
    base, evaluation = study_keys(study)
    config = flatten(config)
    unknown = [k for k in config if k not in base and k not in evaluation]
    if unknown:
        raise InputError(
            f"{where}: config key {unknown[0]!r} is not a key of [base] or [evaluation]"
        )
    evaluating = any(k in evaluation for k in config)
    defaults = {**base, **(evaluation if evaluating else {})}
    for r in plan:
        if r.seed == seed and _same_config(config, defaults, flatten(r.config), where):
            return r
    shown = json.dumps(config, sort_keys=True, default=repr)
    raise _NoRow(
        f"{where}: config {shown} is no row of this study (compared with [base] and [evaluation] "
        "filled in)",
        where,
        shown,
    )


def _same_config(
    given: dict[str, Any], defaults: dict[str, Any], row: dict[str, Any], where: str
) -> bool:
    """Whether a run's configuration (keys not given: ``defaults``) is the row's, each value
    read as the type of the row's value (:func:`coerce`)."""
    if set(row) != set(defaults):
        return False
    for key, target in row.items():
        value = given.get(key, defaults[key])
        try:
            if coerce(value, target) != target:
                return False
        except numbers.NumberError as exc:
            raise InputError(f"{where}: config key {key}: {exc}") from None
        except _Mismatch:
            return False
    return True


class _Mismatch(Exception):
    """A value that cannot be read as the type of the study's value."""


def coerce(value: Any, target: Any) -> Any:
    """``value`` as the type of the study's value ``target``, where an export writes it
    differently: an integer as ``8.0`` or text ``"8"``, a boolean as ``"True"``/``"true"``,
    a list as JSON text. Raises :class:`_Mismatch` when it is not one, and
    :class:`~evalab.numbers.NumberError` for text that is no strict number.

    >>> coerce("8.0", 8), coerce(8.0, 8), coerce("True", True), coerce("[1, 2.0]", [1, 2])
    (8, 8, True, [1, 2])
    """
    if isinstance(target, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip() in ("true", "True", "false", "False"):
            return value.strip() in ("true", "True")
        raise _Mismatch
    if isinstance(target, int | float):
        if isinstance(value, str):
            value = numbers.parse_number(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Mismatch
        value = numbers.number_value(value)  # a YAML or Python literal's value: the same rules
        if isinstance(target, int):
            if isinstance(value, float) and not value.is_integer():
                raise _Mismatch
            return int(value)
        return float(value)
    if isinstance(target, list):
        if isinstance(value, str):
            try:
                value = numbers.loads(value)
            except ValueError:
                raise _Mismatch from None
        if not isinstance(value, list) or len(value) != len(target):
            raise _Mismatch
        return [coerce(v, t) for v, t in zip(value, target, strict=True)]
    if isinstance(target, str):
        if isinstance(value, str):
            return value
        raise _Mismatch
    return value


def _config(rec: dict[str, Any], where: str) -> dict[str, Any] | None:
    raw = rec.get("config")
    dotted = {
        k[len("config.") :]: v
        for k, v in rec.items()
        if k.startswith("config.") and v not in (None, "")
    }
    if raw in (None, "") and not dotted:
        return None
    if isinstance(raw, str):
        try:
            raw = numbers.loads(raw)
        except ValueError:
            raw = None
        if raw is None:
            raise InputError(f'{where}: config must be a JSON object such as {{"heads": 1}}')
        _refuse_numbers(raw, f"{where}: config")
    if raw is not None and not isinstance(raw, dict):
        raise InputError(f'{where}: config must be a JSON object such as {{"heads": 1}}')
    return {**(raw or {}), **dotted}


def _per_example(raw: Any, base: Path, where: str) -> Any:
    if raw in (None, ""):
        return None
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise InputError(
            f"{where}: per_example must be the path of a JSON file {{metric: [values]}}"
        )
    path = (base / raw).resolve()
    try:
        values = numbers.loads(decode_utf8(path.read_bytes(), str(path)))
    except OSError as exc:
        raise InputError(
            f"{where}: per_example file {path}: cannot read ({exc.strerror})"
        ) from None
    except ValueError as exc:
        raise InputError(f"{where}: per_example file {path}: not valid JSON ({exc})") from None
    _refuse_numbers(values, f"{where}: per_example file {path}")
    return values


def _check_not_stored(study: Study, imported: list[ImportedRun], db: Path) -> dict[str, StoredRun]:
    """The study's stored runs in ``db``; an error names the first record that is already
    stored as ok, or that another runner holds now."""
    existing: dict[str, StoredRun] = {}
    held: dict[str, str] = {}
    if db.exists():
        with RunStore(db, create=False) as store:
            existing = store.runs(study.name)
            held = {
                r.run.key: who for r in imported if (who := store.live_lease(study.name, r.run.key))
            }
    for r in imported:
        old = existing.get(r.run.key)
        if old is not None and old.status == "ok":
            raise InputError(
                f"{r.where}: row {'/'.join(r.run.rows)} seed {r.run.seed} is already stored as ok in {db}; "
                "a finished run is never imported twice"
            )
        if r.run.key in held:
            raise InputError(
                f"{r.where}: row {'/'.join(r.run.rows)} seed {r.run.seed} is being run by {held[r.run.key]} "
                f"on {db}; import it once that runner has finished (a run it stores as ok is never "
                "imported again)"
            )
    return existing


def import_runs(
    study: Study,
    path: str | Path,
    db_path: str | Path | None = None,
    *,
    layout: str = "auto",
    maps: tuple[str, ...] = (),
    seed_column: str | None = None,
    metrics_file: str = "metrics.json",
    skip_unmatched: bool = False,
) -> ImportSummary:
    """Check every record of ``path`` (a file, or a Hydra multirun folder; ``layout`` one of
    :data:`~evalab.ablation.importing.sources.FORMATS`), then store them all (one transaction). Any
    problem raises :class:`InputError` before anything is written (no store is created for
    a refused import)."""
    path = Path(path)
    if not path.exists():
        raise InputError(
            f"{path}: no such file (expected a .csv or .jsonl file of finished runs, or a Hydra "
            "multirun folder)"
        )
    layout, records, ignored = load_records(
        study, path, layout=layout, maps=maps, seed_column=seed_column, metrics_file=metrics_file
    )
    imported, skipped = check_records(study, records, skip_unmatched=skip_unmatched)
    db = Path(db_path) if db_path is not None else DEFAULT_DB
    existing = _check_not_stored(study, imported, db)
    known = stored_counts(x for x in existing.values() if x.code_version in study.code_versions)
    with tempfile.TemporaryDirectory(prefix="evalab-import-") as tmp:
        prepared = [_prepare(study, r, Path(tmp) / r.run.key, known) for r in imported]
        with RunStore(db) as store:
            placed: list[Path] = []
            try:
                outcomes = [_outcome(study, store, p, placed) for p in prepared]
                store.register_study(study)
                store.record_all(outcomes)
            except BaseException:
                for file in placed:  # the runs were not stored: their files go too
                    file.unlink(missing_ok=True)
                raise
    return ImportSummary(len(prepared), layout, tuple(skipped), tuple(ignored))


@dataclass(frozen=True)
class _Prepared:
    """An imported run scored as a local run: its metrics, and its examples file (written
    to ``scratch``; None without per-example data)."""

    run: ImportedRun
    metrics: dict[str, float]
    examples: ExamplesEntry | None
    scratch: Path


def _prepare(
    study: Study, r: ImportedRun, scratch: Path, known: dict[str, tuple[int, str]]
) -> _Prepared:
    """Score the run's outputs and check its per-example values, exactly as for a local
    run, writing its examples file to ``scratch``."""
    computed = (
        tuple(replace(c, outputs=str(r.outputs / c.outputs)) for c in study.computed.values())
        if r.outputs is not None
        else ()
    )
    scratch.mkdir(parents=True)
    try:
        scored = collect_examples(computed, study.bounds, scratch, dict(r.metrics), r.per_example)
        if scored.examples is not None:
            check_counts(scored.examples.n, known)
    except RunError as exc:
        raise InputError(f"{r.where}: {exc.error}") from None
    for name, n in scored.examples.n.items() if scored.examples else ():
        known.setdefault(name, (n, r.where))
    return _Prepared(r, scored.metrics, scored.examples, scratch)


def _outcome(study: Study, store: RunStore, p: _Prepared, placed: list[Path]) -> Outcome:
    """The run's outcome; its examples file moved into its run folder (under a name no local
    run writes, so an import never replaces a local run's file)."""
    r = p.run
    folder = store.run_dir(study.name, r.run.key)
    examples = p.examples
    if examples is not None:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / IMPORTED_EXAMPLES
        shutil.move(str(p.scratch / examples.file), target)
        placed.append(target)
        examples = replace(examples, file=IMPORTED_EXAMPLES)
    artifacts = Artifacts(
        dir=str(folder), imported_from=r.where, examples=examples, curves=r.curves
    )
    result = RunResult(
        key=r.run.key,
        status="ok",
        metrics=p.metrics,
        artifacts=artifacts,
        host="imported",
        attempts=1,
        finished_at=now(),
        curves=r.blobs,
    )
    return Outcome(
        study=study.name,
        rows=r.run.rows,
        config=r.run.config,
        seed=r.run.seed,
        code_version=study.stage_version(r.run.stage),
        git_commit=None,
        git_dirty=None,
        result=result,
    )
