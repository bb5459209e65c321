"""Per-item evaluation results from any harness: reading, checking and aligning them.

:func:`read_scores` recognises the format from the path and the first record (see
:mod:`evalab.items.readers` for the plain formats, :mod:`evalab.items.harness` for
lm-evaluation-harness and inspect-ai); :func:`~evalab.items.table.align` puts several
models on the same items.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from evalab import numbers
from evalab.errors import InputError
from evalab.io import data_suffix
from evalab.items.harness import (
    is_inspect_log,
    is_lm_eval,
    read_inspect,
    read_inspect_archive,
    read_lm_eval,
)
from evalab.items.names import select_metrics
from evalab.items.readers import (
    Columns,
    csv_records,
    is_segments,
    jsonl_records,
    plain_row,
    read_text,
    segment_sets,
)
from evalab.items.table import Aligned, ScoreSet, align, collect

__all__ = ["Aligned", "Columns", "ScoreSet", "align", "read_scores"]


def read_scores(path: str, cols: Columns = Columns()) -> list[ScoreSet]:  # noqa: B008 - frozen
    """Every score set of one per-item file (or lm-eval run folder) that ``cols.scores``
    names (see :mod:`evalab.items.names`); each file is read once (a FIFO, a pipe, ``-``
    for stdin), gzip decompressed."""
    return select_metrics(_read(path, cols), cols.scores, path)


def _read(path: str, cols: Columns) -> list[ScoreSet]:
    p = Path(path)
    if p.is_dir() or p.name.startswith("samples_"):
        return read_lm_eval(p, cols)
    suffix = data_suffix(p)
    if suffix in (".csv", ".tsv"):
        return collect(csv_records(p, cols), model=path, path=path)
    if suffix == ".eval":
        return read_inspect_archive(p, cols)
    text = read_text(p)
    if suffix == ".json":
        try:
            data = numbers.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if is_inspect_log(data):
            return read_inspect(p, data, cols)
        raise InputError(
            f"{path}: not an inspect-ai log (no version, eval and samples); per-item "
            "tables are .csv, .tsv or .jsonl"
        )
    records = list(jsonl_records(text, p))
    if not records:
        raise InputError(f"{path}: file is empty")
    first = records[0][1]
    if is_segments(first):
        return segment_sets(p, records)
    if is_lm_eval(first):
        raise InputError(
            f"{path}: lm-evaluation-harness samples; give the file under its own name "
            "(samples_<task>_<date>.jsonl) or its run folder, which name the task"
        )
    plain_cols = cols if cols.scores else replace(cols, scores=("score",))
    rows = (plain_row(rec, line, f"{path}: line {line}", plain_cols) for line, rec in records)
    return collect(rows, model=path, path=path)
