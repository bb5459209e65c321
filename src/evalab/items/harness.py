"""Per-item scores from lm-evaluation-harness sample logs and inspect-ai JSON logs.

**lm-evaluation-harness** (0.4.x, ``lm_eval --log_samples --output_path OUT``) writes, per
model, a folder ``OUT/<model>/`` (the name with ``/`` and the like made ``__``) with
``results_<date>.json`` (``results``, ``versions`` per task, ``lm_eval_version``, ...) and
one ``samples_<task>_<date>.jsonl`` per task, each run adding its own date; with
``--output_path NAME.json`` the results are ``NAME_<date>.json`` beside the samples. It
writes plain JSON (a gzipped copy, ``.json.gz``/``.jsonl.gz``, reads the same). Each sample
line is one document and one filter: ``doc_id``, ``doc``, ``target``, ``arguments``,
``resps``, ``filtered_resps``, ``filter`` (``none`` unless the task defines filters, e.g.
``strict-match``), ``metrics`` (the per-item metric names) and the hashes ``doc_hash``,
``prompt_hash``, ``target_hash``; then one key per metric with the item's value (``acc``,
``acc_norm``, ``exact_match``, ...). A metric is named ``task:metric`` (``task:metric,filter``
for a filter other than ``none``), as the harness's results name it ``metric,filter``; the
item id is ``doc_id``. A corpus-level metric (BLEU's per-item ``[reference, prediction]``
pair) is no per-item score and is refused when asked for. The task's version from the
results file must agree across models; a results file of a harness version other than
0.4 is refused (its sample layout is not known here).

**inspect-ai** logs (log ``version`` 2), JSON or ``.eval`` archives (a zip of
``header.json``, the log without its samples, written when the run ends, and one
``samples/<id>_epoch_<epoch>.json`` per sample and epoch; "sample k" in messages is the
k-th of those files in name order): ``status``, ``eval`` (``task``, ``model``, ...), and
``samples``, each with ``id``, ``epoch`` (the sample index when a task runs several
epochs), ``scores`` (scorer name -> ``{"value": ...}``) and ``metadata``. Values map to
numbers as inspect's ``value_to_float`` does: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0, booleans
and numbers as they are, ``yes``/``true`` 1, ``no``/``false`` 0 (any case), numeric
strings; where inspect maps any other value to 0 with a warning, it is refused here, and a
dict value gives one metric per key (``scorer.key``) instead. An unscored sample (value
NaN) is refused like any NaN. Only a finished log (status ``success``) is read, and the
task's ``task_version`` must agree across models.
"""

from __future__ import annotations

import glob
import io
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalab import numbers
from evalab.errors import InputError
from evalab.io import read_bytes
from evalab.items.names import metric_matches, unknown_metric
from evalab.items.readers import Columns, cluster_of, read_jsonl, read_text
from evalab.items.table import Row, ScoreSet, collect

__all__ = [
    "INSPECT_VERSIONS",
    "LM_EVAL_VERSIONS",
    "check_inspect",
    "inspect_archive",
    "inspect_value",
    "is_inspect_log",
    "is_lm_eval",
    "read_inspect",
    "read_inspect_archive",
    "read_lm_eval",
]

#: harness versions whose sample layout this reader knows (major.minor)
LM_EVAL_VERSIONS = ("0.4",)
#: inspect-ai log format versions read here
INSPECT_VERSIONS = (2,)

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9\-.]+)\.jsonl(\.gz)?$")
_BOOKKEEPING = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
    }
)


def is_lm_eval(record: dict[str, Any]) -> bool:
    """A record of an lm-evaluation-harness samples file."""
    return "doc_id" in record and ("filtered_resps" in record or "resps" in record)


def _metric_names(record: dict[str, Any], cols: Columns) -> list[str]:
    """The per-item metrics of a sample: those it lists (or its numeric keys), and the keys
    ``cols.scores`` names."""
    listed = record.get("metrics")
    names = (
        [str(m) for m in listed]
        if isinstance(listed, list)
        else [
            k
            for k, v in record.items()
            if k not in _BOOKKEEPING and isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
    )
    named = [n.partition(":")[2] or n for n in cols.scores]
    named = [n.split(",", 1)[0] for n in named if n.split(",", 1)[0] in record]
    return list(dict.fromkeys([*names, *named]))


def _lm_scores(
    record: dict[str, Any], task: str, suffix: str, where: str, cols: Columns
) -> dict[str, Any]:
    """The sample's per-item scores by metric name; a corpus-level metric's input (BLEU's
    ``[reference, prediction]``) is refused when named or when nothing is named."""
    scores = {}
    for name in _metric_names(record, cols):
        if name not in record:
            raise InputError(f"{where}: no metric {name!r} in the sample")
        value, metric = record[name], f"{task}:{name}{suffix}"
        if isinstance(value, (list, dict)):
            if cols.scores and not any(metric_matches(metric, n) for n in cols.scores):
                continue
            raise InputError(
                f"{where}: {name} is {json.dumps(value, default=repr)[:40]}..., a corpus-level "
                "metric's input, not a per-item score"
            )
        scores[metric] = value
    return scores


def _lm_rows(path: Path, task: str, cols: Columns) -> Iterator[Row]:
    unnamed: dict[object, int] = {}  # doc_id -> line, for records without a "filter" key
    for line, record in read_jsonl(path):
        where = f"{path}: line {line}"
        if not is_lm_eval(record):
            raise InputError(f"{where}: not an lm-evaluation-harness sample (no doc_id and resps)")
        if "filter" not in record and unnamed.setdefault(record["doc_id"], line) != line:
            raise InputError(
                f"{where}: doc_id {record['doc_id']} again (first at line {unnamed[record['doc_id']]}) and no "
                "'filter' key: a task with several filters written by a harness version that does not name "
                "them; the records cannot be told apart"
            )
        filt = record.get("filter", "none")
        suffix = "" if filt in (None, "none") else f",{filt}"
        scores = _lm_scores(record, task, suffix, where, cols)
        cluster = cluster_of(record, cols.cluster, where, "a key of the sample, or doc.FIELD")
        # several records per doc_id are the task's filters: the filter is the sample key
        yield Row(
            str(record["doc_id"]), line, scores, None if filt in (None, "none") else filt, cluster
        )


@dataclass(frozen=True)
class _RunInfo:
    """What a run's results file says of a task: its version and the model."""

    version: str | None = None
    model: str | None = None


def _model_of(data: dict[str, Any]) -> str | None:
    """The model a results file names: ``model_name``, else ``pretrained=``/``model=`` of
    ``config.model_args``."""
    name = data.get("model_name")
    if isinstance(name, str) and name:
        return name
    config = data.get("config")
    args = config.get("model_args") if isinstance(config, dict) else None
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    if isinstance(args, str):
        pairs = dict(part.partition("=")[::2] for part in args.split(",") if "=" in part)
        for key in ("pretrained", "model", "model_name", "path"):
            if pairs.get(key):
                return pairs[key]
    return None


def _results_file(folder: Path, date: str) -> Path | None:
    """The results file of the run of ``date``: ``results_<date>.json`` (``.gz`` if one
    compressed it); with ``--output_path NAME.json`` lm-eval names it ``NAME_<date>.json``."""
    for name in (f"results_{date}.json", f"results_{date}.json.gz"):
        if (folder / name).is_file():
            return folder / name
    named = sorted(folder.glob(f"*_{glob.escape(date)}.json"))
    return named[0] if len(named) == 1 else None


def _results_for(path: Path, date: str, task: str) -> _RunInfo:
    """The task version and the model from the run's ``results_<date>.json`` (nothing
    without one); refuses a harness version whose layout is unknown."""
    results = _results_file(path.parent, date)
    if results is None:
        return _RunInfo()
    try:
        data = numbers.loads(read_text(results))
    except json.JSONDecodeError as exc:
        raise InputError(f"{results}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or "results" not in data:
        raise InputError(f"{results}: not an lm-evaluation-harness results file (no 'results')")
    harness = data.get("lm_eval_version")
    if harness is not None and not any(str(harness).startswith(v + ".") for v in LM_EVAL_VERSIONS):
        raise InputError(
            f"{results}: written by lm-evaluation-harness {harness}; this reader knows the "
            f"sample layout of {', '.join(LM_EVAL_VERSIONS)}.x only"
        )
    version = (data.get("versions") or {}).get(task)
    return _RunInfo(None if version is None else str(version), _model_of(data))


def _run_folders(folder: Path) -> dict[Path, list[Path]]:
    """The samples files under ``folder`` by run folder: lm-eval writes each model's files to
    ``OUTPUT/<model>/`` (the name sanitized), so ``folder`` is one model's folder or the
    output folder of several; a task run twice in one folder is refused (which run is meant?)."""
    files = sorted(p for p in folder.rglob("samples_*.jsonl*") if _SAMPLES.match(p.name))
    if not files:
        raise InputError(
            f"{folder}: no lm-evaluation-harness samples_<task>_<date>.jsonl file in it"
        )
    runs: dict[Path, dict[str, Path]] = {}
    for f in files:
        task = _SAMPLES.match(f.name)["task"]  # type: ignore[index]
        tasks = runs.setdefault(f.parent, {})
        if task in tasks:
            raise InputError(
                f"{f.parent}: task {task} has two sample files ({tasks[task].name}, {f.name}), "
                "of two runs: give the samples file of the run you mean"
            )
        tasks[task] = f
    return {run: list(tasks.values()) for run, tasks in runs.items()}


def _read_run(files: list[Path], label: str, cols: Columns) -> list[ScoreSet]:
    """Score sets of the samples files of one run folder (model: as the results file beside
    them names it, else ``label``)."""
    out = []
    for f in files:
        m = _SAMPLES.match(f.name)
        if m is None:
            raise InputError(
                f"{f}: an lm-evaluation-harness samples file is named samples_<task>_<date>.jsonl"
            )
        info = _results_for(f, m["date"], m["task"])
        out += collect(
            _lm_rows(f, m["task"], cols),
            model=info.model or label,
            path=str(f),
            version=info.version,
        )
    models = dict.fromkeys(s.model for s in out)
    if len(models) > 1:  # tasks of one folder run by differently named models: one model here
        out = [replace(s, model=label) for s in out]
    return out


def read_lm_eval(path: Path, cols: Columns) -> list[ScoreSet]:
    """Score sets of one samples file, of every task in a model's folder, or of every model
    in an output folder (``OUTPUT/<model>/samples_<task>_<date>.jsonl``, each model as the
    results file beside its samples names it, else its folder)."""
    if not path.is_dir():
        return _read_run([path], str(path), cols)
    runs = _run_folders(path)
    if len(runs) == 1:
        return _read_run(next(iter(runs.values())), str(path), cols)
    return [s for run, files in runs.items() for s in _read_run(files, str(run), cols)]


def is_inspect_log(data: Any) -> bool:
    """An inspect-ai JSON log (any version)."""
    return isinstance(data, dict) and {"version", "eval", "samples"} <= set(data)


_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def inspect_value(value: Any) -> Any:
    """inspect's ``value_to_float``: letters and words to numbers, the rest as given."""
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value]
        return _WORDS.get(value.lower(), value)
    return value


def _inspect_scores(sample: dict[str, Any], where: str, task: str) -> dict[str, Any]:
    scores = sample.get("scores")
    if not isinstance(scores, dict) or not scores:
        raise InputError(f"{where}: the sample has no scores")
    out: dict[str, Any] = {}
    for scorer, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else None
        if isinstance(value, dict):
            out.update({f"{task}:{scorer}.{k}": inspect_value(v) for k, v in value.items()})
        else:
            out[f"{task}:{scorer}"] = inspect_value(value)
    return out


def _named_scores(scores: dict[str, Any], names: tuple[str, ...], path: Path) -> dict[str, Any]:
    """The scores ``names`` name (see :mod:`evalab.items.names`), refusing a name that
    names none of them."""
    for name in names:
        if not any(metric_matches(m, name) for m in scores):
            raise unknown_metric(str(path), name, list(scores))
    return {m: v for m, v in scores.items() if any(metric_matches(m, n) for n in names)}


def check_inspect(path: Path, data: dict[str, Any]) -> None:
    """Refuse an inspect-ai log of an unknown format version or of an unfinished run."""
    if data.get("version") not in INSPECT_VERSIONS:
        raise InputError(
            f"{path}: inspect-ai log version {data.get('version')!r}; this reader knows "
            f"version {', '.join(map(str, INSPECT_VERSIONS))}"
        )
    if data.get("status") != "success":
        raise InputError(
            f"{path}: the log's status is {data.get('status')!r}; only a finished run "
            "(success) has every sample scored"
        )


def read_inspect(path: Path, data: dict[str, Any], cols: Columns) -> list[ScoreSet]:
    """Score sets of an inspect-ai JSON log: one per scorer (and key of a dict score)."""
    check_inspect(path, data)
    spec = data.get("eval") or {}
    task = str(spec.get("task", "task"))
    version = spec.get("task_version")
    samples = data.get("samples") or []

    def rows() -> Iterator[Row]:
        for k, sample in enumerate(samples, start=1):
            where = f"{path}: sample {k}"
            if not isinstance(sample, dict) or "id" not in sample:
                raise InputError(f"{where}: no sample id")
            scores = _inspect_scores(sample, where, task)
            if cols.scores:
                scores = _named_scores(scores, cols.scores, path)
            cluster = cluster_of(
                sample, cols.cluster, where, "a key of the sample, e.g. metadata.FIELD"
            )
            yield Row(str(sample["id"]), k, scores, str(sample.get("epoch", 1)), cluster)

    model = spec.get("model")
    return collect(
        rows(),
        model=model if isinstance(model, str) and model else str(path),
        path=str(path),
        unit="sample",
        version=None if version is None else str(version),
    )


def read_inspect_archive(path: Path, cols: Columns) -> list[ScoreSet]:
    """Score sets of an inspect-ai ``.eval`` archive (its header and sample files)."""
    return read_inspect(path, inspect_archive(path), cols)


def inspect_archive(path: Path) -> dict[str, Any]:
    """An inspect-ai ``.eval`` archive as the JSON log it stands for (header and samples)."""
    data, _ = read_bytes(path, "an inspect-ai .eval archive")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            if "header.json" not in names:
                raise InputError(f"{path}: no header.json in the archive; the run has not finished")
            data = numbers.loads(archive.read("header.json"))
            members = sorted(n for n in names if n.startswith("samples/") and n.endswith(".json"))
            samples = [numbers.loads(archive.read(n)) for n in members]
    except zipfile.BadZipFile:
        raise InputError(f"{path}: not a zip archive (an inspect-ai .eval log is one)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: a member of the archive is not JSON ({exc})") from None
    if not isinstance(data, dict) or not {"version", "eval"} <= set(data):
        raise InputError(
            f"{path}: header.json is not an inspect-ai log header (no version and eval)"
        )
    return {**data, "samples": samples}
