"""Inputs as people have them: JSON Lines, CSV or TSV records next to line-aligned text files.

A record file (``.jsonl``; ``.csv``, ``.tsv`` and stdin when a record option is given) holds a
prediction per record (``--field``, a dotted path into nested JSON) and may hold its
references (``--ref-field``: a string or a list of strings). ``--id-field`` aligns the
records of every record file by id, in the order of the first one, instead of by position.
Text files stay positional. Every refusal names the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalab.cli.segment_checks import check_no_nul
from evalab.errors import SettingsError
from evalab.io import (
    STDIN,
    Record,
    align_by_id,
    is_pipe,
    read_records,
    read_segments,
    record_format,
    record_ids,
    text_field,
    texts_field,
)

__all__ = ["RecordOptions", "read_streams"]


@dataclass(frozen=True)
class RecordOptions:
    """``--field``, ``--ref-field`` and ``--id-field`` (None: not given)."""

    field: str | None = None
    ref_field: str | None = None
    id_field: str | None = None

    def given(self) -> bool:
        return any(v is not None for v in (self.field, self.ref_field, self.id_field))

    def is_record_file(self, path: str) -> bool:
        """JSON Lines always (as text it would score its braces); CSV/TSV and stdin when a
        record option is given (a ``.tsv`` of tab-separated references is text to sacrebleu),
        and so is a pipe (``<(zcat a.jsonl.gz)``), known by what it holds."""
        fmt = record_format(path)
        if not self.given():
            return fmt == "jsonl"
        return fmt is not None or path == STDIN or is_pipe(path)


@dataclass(frozen=True)
class Streams:
    """What the files hold, line-aligned: reference streams (with a label each) and systems."""

    refs: list[list[str | None]]
    ref_labels: list[str]
    systems: list[tuple[str, list[str]]]


def read_streams(
    references: list[str], inputs: list[str], options: RecordOptions, *, required: bool = True
) -> Streams:
    """Read text and record files into reference streams and system outputs (not yet checked
    for equal lengths: the caller names every file's count when they differ); no reference
    at all where none is ``required`` (quality estimation)."""
    record_paths = [p for p in [*references, *inputs] if options.is_record_file(p)]
    _check_options(references, inputs, options, record_paths, required)
    records = {p: read_records(p) for p in record_paths}
    if options.id_field is not None:
        records = _aligned(records, options.id_field)
    refs: list[list[str | None]] = []
    labels: list[str] = []
    in_records = [] if options.ref_field is None else [next(q for q in inputs if q in records)]
    for p in references or in_records:
        if p in records:
            streams = _reference_streams(records[p], options.ref_field or "", p)
            refs += streams
            labels += (
                [f"{p} ({options.ref_field} {k})" for k in range(1, len(streams) + 1)]
                if len(streams) > 1
                else [p]
            )
        else:
            refs.append(list(read_segments(p)))
            labels.append(p)
    systems = []
    for p in inputs:
        segments = (
            [text_field(r, options.field or "", p) for r in records[p]]
            if p in records
            else read_segments(p)
        )
        check_no_nul(p, segments)
        systems.append((p, segments))
    for label, stream in zip(labels, refs, strict=True):
        check_no_nul(label, [s or "" for s in stream])
    return Streams(refs, labels, systems)


def _check_options(
    references: list[str],
    inputs: list[str],
    options: RecordOptions,
    record_paths: list[str],
    required: bool,
) -> None:
    """Refuse record options that no file uses, and record files without the fields they need."""
    record_inputs = [p for p in inputs if p in record_paths]
    record_refs = [p for p in references if p in record_paths]
    if options.field is not None and not record_inputs:
        raise SettingsError(
            "--field selects a field of record files (.jsonl, .csv, .tsv), but no -i file is one"
        )
    if record_inputs and options.field is None:
        raise SettingsError(
            f"{record_inputs[0]} is a record file: pass --field NAME for the prediction (a dotted path into nested JSON)"
        )
    if options.ref_field is not None and references and not record_refs:
        raise SettingsError(
            "--ref-field reads references from record files, but every -r file is a text file"
        )
    if options.ref_field is not None and not references and not record_inputs:
        raise SettingsError(
            "--ref-field reads the references of record files, but no -r file is given and "
            "no -i file is one (.jsonl, .csv, .tsv)"
        )
    if record_refs and options.ref_field is None:
        raise SettingsError(
            f"{record_refs[0]} is a record file: pass --ref-field NAME for its references"
        )
    if not references and options.ref_field is None and required:
        records = (
            ", or --ref-field NAME for the references of the -i records" if record_inputs else ""
        )
        raise SettingsError(f"no reference given; pass -r REF (several: -r REF1 REF2){records}")
    if (
        options.id_field is not None
        and len(record_paths) < 2
        and not (len(record_paths) == 1 and not references)
    ):
        raise SettingsError(
            "--id-field aligns record files by id: give at least two record files (-r and -i)"
        )
    if sum(1 for p in [*references, *inputs] if p == STDIN) > 1:
        raise SettingsError("stdin ('-') can be used for only one file")


def _aligned(records: dict[str, list[Record]], id_field: str) -> dict[str, list[Record]]:
    """Every record file's records in the id order of the first record file."""
    first = next(iter(records))
    ids = {p: record_ids(rs, id_field, p) for p, rs in records.items()}
    return {
        p: align_by_id(rs, ids[p], ids[first], p, first) if p != first else rs
        for p, rs in records.items()
    }


def _reference_streams(records: list[Record], ref_field: str, path: str) -> list[list[str | None]]:
    """One stream per reference position; a record with fewer references has None (missing)."""
    per_record = [texts_field(r, ref_field, path) for r in records]
    width = max(len(refs) for refs in per_record)
    return [[refs[k] if k < len(refs) else None for refs in per_record] for k in range(width)]
