"""Reading the plain per-item formats: CSV/TSV/JSONL tables and ``evalab score --segments``
output (lm-evaluation-harness and inspect-ai logs: :mod:`evalab.items.harness`).

:func:`evalab.items.read_scores` recognises the format from the path and the first record:

* a folder, or a ``samples_<task>_<date>.jsonl`` file: lm-evaluation-harness
  ``--log_samples`` output (:func:`evalab.items.harness.read_lm_eval`);
* a ``.json`` file with ``version``, ``eval`` and ``samples``: an inspect-ai log;
* JSONL whose records have ``system``, ``metric``, ``segment`` and ``signature``: the
  per-segment file of ``evalab score --segments`` (one model per system);
* otherwise a plain table: ``.csv``/``.tsv`` with a header row, or JSONL objects, with an
  id column, score column(s), and optionally a cluster and a sample column.

Column names in JSON records may be dotted paths (``doc.passage_id``).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalab import numbers
from evalab.errors import InputError
from evalab.io import data_suffix
from evalab.io import read_text as io_read_text
from evalab.items.table import Records, Row, ScoreSet, collect

__all__ = [
    "MISSING",
    "Columns",
    "cluster_of",
    "csv_records",
    "is_segments",
    "jsonl_records",
    "lookup",
    "plain_row",
    "read_jsonl",
    "read_text",
    "segment_sets",
]


@dataclass(frozen=True)
class Columns:
    """Which columns hold what; ``scores`` empty means the format's default."""

    id: str = "id"
    scores: tuple[str, ...] = ()
    cluster: str | None = None
    sample: str | None = None
    #: the column of each sample's answer (``passk --maj``), read as a raw score
    answer: str | None = None


def read_text(path: Path) -> str:
    """A UTF-8 file's text (``-``: stdin; gzip decompressed), read once; refuses a missing,
    unreadable or empty file."""
    text = io_read_text(path, "per-item scores", allow_empty=True)[0].removeprefix("\ufeff")
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    return text


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSON Lines file."""
    return jsonl_records(read_text(path), path)


def jsonl_records(text: str, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of JSON Lines ``text`` (of ``path``)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = numbers.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InputError(
                f"{path}: line {number}: expected a JSON object, got {type(record).__name__}"
            )
        yield number, record


MISSING = object()


def lookup(record: dict[str, Any], key: str) -> Any:
    """``record[key]``, or along a dotted path (``doc.passage``); a missing key gives a sentinel."""
    if key in record:
        return record[key]
    value: Any = record
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


def _required(record: dict[str, Any], key: str, where: str, what: str) -> Any:
    value = lookup(record, key)
    if value is MISSING or value is None:
        raise InputError(
            f"{where}: no {what} column {key!r} (there: {', '.join(map(str, record))}); "
            f"name the column with --{what}-column"
        )
    return value


def cluster_of(record: dict[str, Any], key: str | None, where: str, hint: str) -> str | None:
    """The cluster label of ``record`` (None without a cluster column); refuses a missing one."""
    if key is None:
        return None
    value = lookup(record, key)
    if value is MISSING or value is None or isinstance(value, (dict, list)):
        raise InputError(f"{where}: no cluster {key!r} ({hint})")
    return str(value)


def plain_row(record: dict[str, Any], line: int, where: str, cols: Columns) -> Row:
    """A :class:`Row` from a plain record (a JSON object or a CSV row as a dict)."""
    names = cols.scores or ("score",)
    scores = {name: _required(record, name, where, "score") for name in names}
    if cols.answer is not None:
        scores[cols.answer] = _required(record, cols.answer, where, "answer")
    item = str(_required(record, cols.id, where, "id"))
    cluster = cluster_of(record, cols.cluster, where, "a column of the file")
    sample = None if cols.sample is None else str(_required(record, cols.sample, where, "sample"))
    return Row(item, line, scores, sample, cluster)


def _header_index(header: list[str], name: str, path: Path, what: str) -> int:
    if name not in header:
        raise InputError(
            f"{path}: no {what} column {name!r} (columns: {', '.join(header)}); name it with "
            f"--{what}-column"
        )
    return header.index(name)


def csv_records(path: Path, cols: Columns) -> Records:
    """The columns of a CSV/TSV file with a header row, as :class:`Records`."""
    kind = "TSV" if data_suffix(path) == ".tsv" else "CSV"
    reader = csv.reader(
        io.StringIO(read_text(path), newline=""),
        delimiter="\t" if kind == "TSV" else ",",
        strict=True,
    )
    try:
        header, fields, lines = _csv_rows(path, reader)
    except csv.Error as exc:  # an unterminated quote, a quote inside an unquoted cell
        raise InputError(f"{path}: line {reader.line_num} is not valid {kind} ({exc})") from None
    ix = _header_index(header, cols.id, path, "id")
    scores = [(n, _header_index(header, n, path, "score")) for n in cols.scores or ("score",)]
    if cols.answer is not None:
        scores.append((cols.answer, _header_index(header, cols.answer, path, "answer")))
    cx = None if cols.cluster is None else _header_index(header, cols.cluster, path, "cluster")
    sx = None if cols.sample is None else _header_index(header, cols.sample, path, "sample")
    rec = Records()
    rec.lines = lines
    rec.items = [r[ix] for r in fields]
    rec.clusters = [r[cx] for r in fields] if cx is not None else [None] * len(fields)
    rec.samples = [r[sx] for r in fields] if sx is not None else [None] * len(fields)
    everyone = list(range(len(fields)))
    rec.scores = {n: (everyone, [r[k] for r in fields]) for n, k in scores}
    return rec


def _csv_rows(path: Path, reader: Any) -> tuple[list[str], list[list[str]], list[int]]:
    """The header, the rows and each row's line number; a row of another width is refused."""
    header = next(reader)
    width = len(header)
    lines: list[int] = []
    fields: list[list[str]] = []
    for row in reader:
        if len(row) != width:
            if not row:
                continue
            raise InputError(
                f"{path}: line {reader.line_num}: {len(row)} fields, the header has {width}"
            )
        lines.append(reader.line_num)
        fields.append(row)
    return header, fields, lines


def is_segments(record: dict[str, Any]) -> bool:
    return {"system", "metric", "segment", "score", "signature"} <= set(record)


def segment_sets(path: Path, records: Iterable[tuple[int, dict[str, Any]]]) -> list[ScoreSet]:
    """``evalab score --segments`` output: one score set per system and metric."""
    rows: dict[tuple[str, str], list[Row]] = {}
    for line, record in records:
        if not is_segments(record):
            raise InputError(
                f"{path}: line {line}: not a per-segment record (system, metric, segment, score)"
            )
        metric = str(record["metric"])
        rows.setdefault((str(record["system"]), metric), []).append(
            Row(str(record["segment"]), line, {metric: record["score"]})
        )
    return [s for (system, _), r in rows.items() for s in collect(r, model=system, path=str(path))]
