"""Runs exported by other tools, as the records ``ablate import`` checks.

Three layouts besides evalab's own (``row``/``config``, ``seed``, one column per metric):

- **W&B** (a CSV of the runs table, or of ``wandb.Api().runs`` flattened with
  ``pandas.json_normalize``; or JSON Lines of ``{"name", "config", "summary"}``): ``Name``
  (or ``name``), ``State``, the run table's other columns (``Notes``, ``User``, ``Tags``,
  ``Created``, ``Runtime``, ``Sweep`` ...), ``config.KEY`` and ``summary.METRIC`` columns, or
  the runs table's flat columns (a column named like a configuration key is that key, one
  named like a metric is that metric). A ``config``/``summary`` cell holding a whole
  dictionary (``pandas.DataFrame.to_csv`` of the run objects' dicts) is read too.
- **MLflow** (``mlflow.search_runs(...).to_csv()``, the ``mlflow experiments csv`` export):
  ``run_id``, ``status``, ``params.KEY`` (MLflow stores parameters as text: ``"8"``,
  ``"True"``), ``metrics.METRIC``, ``tags.*`` (``tags.mlflow.runName`` names the run).
- **Hydra multirun** folders: ``multirun/<date>/<time>/<n>/.hydra/config.yaml`` (the job's
  whole configuration) and ``overrides.yaml``, and a metrics file the job wrote into its
  folder (``metrics.json`` unless named) and/or its per-step log ``metrics.jsonl`` (its curves).

Each record becomes an evalab record: ``config`` (a flat ``{dotted.key: value}``), ``seed``,
the study's metrics, with the columns that were not used (``ignored``) and, for a run its
tool did not record as finished, the reason it is skipped. ``--map SOURCE=TARGET`` renames
a column first (``TARGET`` empty: drop it).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab import numbers
from evalab.ablation.contract.curves import LOG_FILE
from evalab.errors import InputError, MissingExtraError, Setting, SettingValueError
from evalab.io import decode_utf8

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study

FORMATS = ("auto", "evalab", "wandb", "mlflow", "hydra")
#: columns of W&B's runs table that describe the run, not its configuration or results
WANDB_META = frozenset(
    {
        "Name",
        "name",
        "State",
        "state",
        "Notes",
        "User",
        "Tags",
        "Created",
        "Runtime",
        "Sweep",
        "ID",
        "id",
        "Group",
        "Job Type",
        "Hostname",
        "Updated",
        "End Time",
        "GPU Type",
        "GPU Count",
        "",
    }
)  # "": the index column pandas writes first
MLFLOW_META = frozenset(
    {
        "run_id",
        "experiment_id",
        "status",
        "artifact_uri",
        "start_time",
        "end_time",
        "lifecycle_stage",
        "run_name",
        "",
    }
)
_HYDRA_JOB = re.compile(r"^\d+$")


@dataclass(frozen=True)
class Record:
    """One run of an export, in evalab's terms."""

    where: str  # FILE:LINE, or the job folder
    name: str  # the run's name in its tool ('' when it has none)
    fields: dict[str, Any]  # row / config (flat dict) / seed / metric / per_example / outputs
    extra: dict[str, Any] = field(
        default_factory=dict
    )  # columns of configuration keys the study does not have
    ignored: tuple[str, ...] = ()  # columns that are neither configuration, seed nor a metric
    skip: str = ""  # why the run is not imported ('' for a finished run)


def flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"optim": {"lr": 0.1}}`` as ``{"optim.lr": 0.1}``.

    >>> flatten({"a": 1, "optim": {"lr": 0.1, "betas": [0.9, 0.99]}})
    {'a': 1, 'optim.lr': 0.1, 'optim.betas': [0.9, 0.99]}
    """
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict) and item:
            out.update(flatten(item, name + "."))
        else:
            out[name] = item
    return out


def detect(path: Path, columns: Iterable[str]) -> str:
    """The layout of an export: a folder is Hydra's; MLflow's and W&B's by their columns."""
    if path.is_dir():
        return "hydra"
    cols = set(columns)
    if "run_id" in cols or any(c.startswith(("params.", "metrics.")) for c in cols):
        return "mlflow"
    if cols & {"Name", "State", "summary"} or any(c.startswith("summary.") for c in cols):
        return "wandb"
    return "evalab"


def parse_maps(maps: Iterable[str]) -> dict[str, str]:
    """``--map SOURCE=TARGET`` options as ``{source: target}``."""
    out: dict[str, str] = {}
    for item in maps:
        source, eq, target = item.partition("=")
        if not eq or not source:
            raise SettingValueError(
                "maps",
                repr(item),
                "expected SOURCE=TARGET (a column of the export = seed, row, a metric "
                "or config.KEY; an empty TARGET drops the column)",
            )
        if source in out:
            raise SettingValueError("maps", repr(source), "given twice; map each column once")
        out[source] = target
    return out


def apply_maps(
    records: list[tuple[str, dict[str, Any]]], maps: dict[str, str]
) -> list[tuple[str, dict[str, Any]]]:
    """Each record with the mapped columns renamed (or dropped); a map naming no column of any
    record is refused (a misspelt column would otherwise be ignored)."""
    seen = {col for _, rec in records for col in rec}
    for source in maps:
        if source not in seen:
            raise SettingValueError(
                "maps", f"{source}={maps[source]}", f"the export has no column {source!r}"
            )
    out = []
    for where, rec in records:
        renamed: dict[str, Any] = {}
        for col, value in rec.items():
            target = maps.get(col, col)
            if not target:
                continue
            if target in renamed:
                raise SettingValueError(
                    "maps",
                    "",
                    f"{where}: gives column {target!r} twice (from {col!r} and another column)",
                )
            renamed[target] = value
        out.append((where, renamed))
    return out


def study_keys(study: Study) -> tuple[dict[str, Any], dict[str, Any]]:
    """The flat ``[base]`` and ``[evaluation]`` configurations."""
    return flatten(study.base), flatten(study.evaluation)


def foreign_record(
    kind: str, study: Study, where: str, rec: dict[str, Any], seed_col: str | None
) -> Record:
    """One W&B, MLflow or Hydra record (its columns already mapped) as a :class:`Record`."""
    base, evaluation = study_keys(study)
    rec = _expand_dicts(kind, where, rec)
    if kind == "wandb":
        name = str(rec.get("Name", rec.get("name", "")) or "")
        state = str(rec.get("State", rec.get("state", "finished")) or "finished")
        skip = "" if state.lower() == "finished" else f"W&B state {state!r}"
        meta, config_prefix, metric_prefix = WANDB_META, "config.", "summary."
    elif kind == "mlflow":
        name = str(rec.get("tags.mlflow.runName") or rec.get("run_id") or "")
        status = str(rec.get("status", "FINISHED") or "FINISHED")
        skip = "" if status.upper() == "FINISHED" else f"MLflow status {status!r}"
        meta, config_prefix, metric_prefix = MLFLOW_META, "params.", "metrics."
    else:  # hydra
        name, skip = where, ""
        meta, config_prefix, metric_prefix = frozenset({"overrides"}), "config.", "metrics."
    fields: dict[str, Any] = {}
    config: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    ignored: list[str] = []
    for col, value in rec.items():
        if (
            col in ("row", "seed", "per_example", "outputs", "curves", *study.returned)
            and col not in meta
        ):
            fields[col] = value
        elif col in meta or col.startswith(
            ("tags.", "_", f"{config_prefix}_", f"{metric_prefix}_")
        ):
            continue
        elif col.startswith(config_prefix):
            key = col[len(config_prefix) :]
            if value in (None, ""):
                continue  # not logged by this run: the study's value
            if key in base or key in evaluation:
                config[key] = value
            elif key == "seed" or col == seed_col:
                fields.setdefault("seed", value)
            else:
                extra[col] = value
        elif col.startswith(metric_prefix) and col[len(metric_prefix) :] in study.returned:
            fields[col[len(metric_prefix) :]] = value
        elif kind == "wandb" and "." not in col and (col in base or col in evaluation):
            if value not in (None, ""):
                config[col] = value  # the runs table's flat configuration columns
        else:
            ignored.append(col)
    if seed_col and seed_col in rec:
        fields["seed"] = rec[seed_col]
        extra.pop(seed_col, None)
    fields["config"] = config
    return Record(where, name, fields, extra, tuple(ignored), skip)


def _expand_dicts(kind: str, where: str, rec: dict[str, Any]) -> dict[str, Any]:
    """A ``config``/``summary``/``params``/``metrics`` column holding a whole dictionary (JSON
    Lines, or a CSV cell with a Python dict's repr) as one column per key."""
    out: dict[str, Any] = {}
    for col, value in rec.items():
        if col in ("config", "summary", "params", "metrics") and value not in (None, ""):
            if isinstance(value, str):
                value = _literal(value, f"{where}: column {col!r}")
                if not isinstance(value, dict):
                    raise InputError(
                        f"{where}: column {col!r} of a {kind} export must hold a dictionary of values"
                    )
            if isinstance(value, dict):
                for key, item in flatten(value).items():
                    out[f"{col}.{key}"] = item
                continue
        out[col] = value
    return out


def _literal(text: str, where: str) -> Any:
    """A Python literal (a W&B cell holding a dict's repr), its numbers held to
    :mod:`evalab.numbers` (``ast.literal_eval`` reads ``1_0`` as ten and any digits as an int);
    None when it is no literal."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, tokenize.TokenError, RecursionError, MemoryError):
        return None
    for tok in tokens:
        if tok.type == tokenize.NUMBER:
            try:
                numbers.parse_number(tok.string)
            except numbers.NumberError as exc:
                raise InputError(f"{where}: {exc}") from None
    return value


def _strict_yaml(yaml: Any) -> Any:
    """PyYAML's safe loader with its numbers read by :mod:`evalab.numbers` (YAML 1.1 reads
    ``1_0`` as ten, ``0x10`` as 16, ``.inf`` as a number): a refused one is a
    :class:`~evalab.numbers.Refused`."""

    def number(loader: Any, node: Any) -> Any:
        text = loader.construct_scalar(node)
        try:
            return numbers.parse_number(text)
        except numbers.NumberError as exc:
            return numbers.Refused(exc)

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    Loader.add_constructor("tag:yaml.org,2002:int", number)
    Loader.add_constructor("tag:yaml.org,2002:float", number)
    return Loader


def _load_yaml(yaml: Any, path: Path) -> Any:
    """A Hydra YAML file, a number it holds refused with the file and the key."""
    try:
        value = yaml.load(decode_utf8(path.read_bytes(), str(path)), Loader=_strict_yaml(yaml))
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    found = numbers.first_refused(value)
    if found is not None:
        raise InputError(f"{path}: {found[0] or 'the value'}: {found[1].error}")
    return value


def hydra_records(folder: Path, metrics_file: str) -> list[tuple[str, dict[str, Any]]]:
    """``(job folder, record)`` per job of a Hydra multirun folder (the ``multirun/`` root, a
    date or a time folder): ``config.KEY`` from ``.hydra/config.yaml``, ``metrics.NAME`` from
    the job's ``metrics_file`` (a JSON object), ``overrides`` from ``overrides.yaml``."""
    try:
        import yaml
    except ImportError:
        raise MissingExtraError("reading Hydra's .hydra/config.yaml", "hydra", "pyyaml") from None
    jobs = sorted(
        (
            p.parent.parent
            for p in folder.rglob(".hydra/config.yaml")
            if _HYDRA_JOB.match(p.parent.parent.name)
        ),
        key=lambda p: (str(p.parent), int(p.name)),
    )
    if not jobs:
        raise InputError(
            f"{folder}: no Hydra jobs here (expected <n>/.hydra/config.yaml under a multirun folder "
            "such as multirun/2024-05-01/12-00-00)"
        )
    out = []
    for job in jobs:
        rec = _hydra_job(job, yaml)
        metrics_path = job / metrics_file
        if not metrics_path.is_file():
            if "curves" in rec:
                out.append((str(job), rec))
                continue
            raise SettingValueError(
                "metrics_file",
                metrics_file,
                f"{metrics_path}: no such file; the job folder needs the file its run wrote "
                f"(name it here), or a {LOG_FILE} of its values per step",
            )
        try:
            values = numbers.loads(decode_utf8(metrics_path.read_bytes(), str(metrics_path)))
        except ValueError as exc:
            raise InputError(f"{metrics_path}: not valid JSON ({exc})") from None
        if not isinstance(values, dict):
            raise InputError(
                f'{metrics_path}: expected a JSON object of metrics, such as {{"acc": 0.91}}'
            )
        rec.update({f"metrics.{k}": v for k, v in values.items()})
        out.append((str(job), rec))
    return out


def _hydra_job(job: Path, yaml: Any) -> dict[str, Any]:
    """A Hydra job's record without its metrics: ``config.KEY`` from ``.hydra/config.yaml``,
    ``overrides`` and the path of its per-step log (``curves``) when it has one."""
    config_path = job / ".hydra" / "config.yaml"
    config = _load_yaml(yaml, config_path)
    if not isinstance(config, dict):
        raise InputError(f"{config_path}: expected the job's configuration (a mapping)")
    rec: dict[str, Any] = {f"config.{k}": v for k, v in flatten(config).items()}
    overrides = job / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        listed = _load_yaml(yaml, overrides)
        rec["overrides"] = " ".join(map(str, listed)) if isinstance(listed, list) else ""
    if (job / LOG_FILE).is_file():
        rec["curves"] = str(job / LOG_FILE)  # its curves (and values, by select)
    return rec


def check_extra(records: list[Record]) -> list[str]:
    """Columns of configuration keys the study does not have: one with the same value in every
    record is ignored (and named); one whose value differs between records is refused, since
    the runs then differ in more than the study's rows say."""
    values: dict[str, dict[str, str]] = {}
    for rec in records:
        if rec.skip:
            continue
        for key, value in rec.extra.items():
            values.setdefault(key, {}).setdefault(repr(value), rec.where)
    for col, seen in values.items():
        if len(seen) > 1:
            (v1, w1), (v2, w2) = list(seen.items())[:2]
            raise InputError(
                f"{w2}: column {col!r} is {v2} here but {v1} at {w1}, and the study has no such "
                f"configuration key: the runs differ in more than the study's rows; read it as a key "
                "of [base] with ",
                Setting("maps"),
                f" {col}=config.KEY, or ignore it with ",
                Setting("maps"),
                f" {col}=",
            )
    return sorted(values)
