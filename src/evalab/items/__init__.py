"""Per-item evaluation results from any harness: reading, checking and aligning them.

:func:`read_scores` recognises the format from the path and the first record (see
:mod:`evalab.items.readers` for the plain formats, :mod:`evalab.items.harness` for
lm-evaluation-harness and inspect-ai); :func:`~evalab.items.table.align` puts several
models on the same items.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalab import numbers
from evalab.errors import InputError
from evalab.items.harness import (
    is_inspect_log,
    is_lm_eval,
    read_inspect,
    read_inspect_archive,
    read_lm_eval,
)
from evalab.items.readers import (
    Columns,
    csv_records,
    is_segments,
    plain_row,
    read_jsonl,
    read_text,
    segment_sets,
)
from evalab.items.table import Aligned, ScoreSet, align, collect

__all__ = ["Aligned", "Columns", "ScoreSet", "align", "read_scores"]


def read_scores(path: str, cols: Columns = Columns()) -> list[ScoreSet]:  # noqa: B008 - frozen
    """Every score set of one per-item file (or lm-eval run folder)."""
    p = Path(path)
    if p.is_dir() or p.name.startswith("samples_"):
        return read_lm_eval(p, cols)
    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return collect(csv_records(p, cols), model=path, path=path)
    if suffix == ".eval":
        return read_inspect_archive(p, cols)
    if suffix == ".json":
        text = read_text(p)
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
    records = read_jsonl(p)
    first = next(records, None)
    if first is None:
        raise InputError(f"{path}: file is empty")
    if is_segments(first[1]):
        return segment_sets(p)
    if is_lm_eval(first[1]):
        return read_lm_eval(p, cols)
    rows = (plain_row(rec, line, f"{path}: line {line}", cols) for line, rec in read_jsonl(p))
    return collect(rows, model=path, path=path)
