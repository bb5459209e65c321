"""Reading segment files and writing output files atomically.

A segment file is UTF-8 text with one segment per line. Lines are split on ``\\n`` only
(``str.splitlines`` would also split on U+2028, U+0085, form feeds... which occur inside
real MT segments), and a trailing ``\\r`` is dropped so CRLF files score like LF files.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from evalab import numbers
from evalab.errors import InputError

STDIN = "-"


def split_segments(text: str) -> list[str]:
    """Split file content into segments: one per ``\\n``, CR of CRLF removed."""
    if text.endswith("\n"):
        text = text[:-1]
    lines = text.split("\n")
    if "\r" not in text:  # the common case: no per-line pass
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


#: bytes of a segment file decoded and split at a time: the whole file's bytes and text are
#: never held beside its lines (at 2M segments they were 860 MB above the lines' 410 MB)
READ_BLOCK = 1 << 20
_UTF8_BOM = b"\xef\xbb\xbf"


def read_segments(path: str | os.PathLike[str], *, allow_empty: bool = False) -> list[str]:
    """Read a UTF-8 segment file (``-`` for stdin) and return its lines.

    Raises :class:`InputError` naming the file when it is missing, not UTF-8 (with the
    line number of the first bad byte) or empty. The file is read :data:`READ_BLOCK`
    bytes at a time, each block decoded and split up to its last line end, so the lines
    are the only copy of the text held.
    """
    with _opened(path, "one segment per line") as (stream, label):
        lines, size = _block_lines(stream, label)
    if size == 0 or (size == len(_UTF8_BOM) and lines == ["\ufeff"]):
        if allow_empty:
            return []
        raise InputError(f"{label}: file is empty, expected one segment per line")
    if lines[0].startswith("\ufeff"):
        # Kept, as sacrebleu keeps it: the WMT22 organisers' scores of uk-en PROMT (whose
        # file starts with a BOM) are only reproduced with U+FEFF left in segment 1.
        warnings.warn(
            f"{label}: starts with a UTF-8 byte-order mark (U+FEFF); it is kept as part of "
            "the first segment, as sacrebleu does",
            stacklevel=2,
        )
    return lines


def _block_lines(stream: BinaryIO, label: str) -> tuple[list[str], int]:
    """The lines of a binary stream (:func:`split_segments` of its UTF-8 text), read block
    by block, and its size in bytes."""
    lines: list[str] = []
    rest = b""
    size = 0
    while block := stream.read(READ_BLOCK):
        if size == 0:
            check_not_utf16_or_32(block, label)
        size += len(block)
        data = rest + block
        end = data.rfind(b"\n") + 1  # a line end is never inside a UTF-8 sequence
        if end:
            lines += split_segments(_decoded(data[:end], label, len(lines)))
        rest = data[end:]
    if rest:
        lines += split_segments(_decoded(rest, label, len(lines)))
    return lines, size


def _decoded(data: bytes, label: str, lines_before: int) -> str:
    """``data`` (whole lines after ``lines_before`` lines of a file) decoded as UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(data, exc, label, lines_before) from exc


@contextlib.contextmanager
def _opened(path: str | os.PathLike[str], expected: str) -> Iterator[tuple[BinaryIO, str]]:
    """The binary stream of a file (``-``: stdin) and its label, refusing what cannot be read.

    The stream is read once, front to back, so a FIFO, a pipe (``<(zcat a.gz)``) and stdin
    read like a file; gzip data (by its magic bytes, whatever the name) is decompressed.
    """
    name = str(path)
    if name == STDIN:
        with _gunzipped(sys.stdin.buffer, "<stdin>") as stream:
            yield stream, "<stdin>"
        return
    p = Path(name)
    if not p.exists():
        raise InputError(f"{name}: no such file")
    if p.is_dir():
        raise InputError(f"{name}: is a directory, expected a text file with {expected}")
    try:
        with p.open("rb") as raw, _gunzipped(raw, name) as stream:
            yield stream, name
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror})") from exc


#: the first two bytes of gzip data (RFC 1952); no UTF-8 text starts with them
GZIP_MAGIC = b"\x1f\x8b"


class _Replay(io.RawIOBase):
    """A stream's bytes with the ``head`` already read from it put back in front, so the
    stream itself is read once (a FIFO or a pipe cannot be rewound)."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        super().__init__()
        self._head, self._stream = head, stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._stream.read(len(view))
        view[: len(data)] = data
        return len(data)


def _head(stream: BinaryIO, size: int) -> bytes:
    """The first ``size`` bytes of ``stream`` (fewer only at its end)."""
    head = b""
    while len(head) < size and (more := stream.read(size - len(head))):
        head += more
    return head


def _with_head(stream: BinaryIO) -> tuple[bytes, BinaryIO]:
    """The first bytes of ``stream`` (enough to tell gzip data) and a stream that still
    starts with them: ``stream`` itself where it can peek, else the bytes put back in front."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        head = peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)]
        if len(head) == len(GZIP_MAGIC) or not head or not GZIP_MAGIC.startswith(head):
            return head, stream
    head = _head(stream, len(GZIP_MAGIC))
    return head, io.BufferedReader(_Replay(head, stream), READ_BLOCK)


#: the most bytes gzip data may decompress to: inputs are read into memory, and a small
#: file that inflates past this (a "gzip bomb") is refused before it exhausts it
GUNZIPPED_MAX = 2 * 1024**3


class _Capped(io.RawIOBase):
    """A decompressed stream that refuses to yield more than :data:`GUNZIPPED_MAX` bytes."""

    def __init__(self, stream: io.BufferedIOBase, label: str) -> None:
        super().__init__()
        self._stream, self._label, self._total = stream, label, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._stream.read(len(view))
        self._total += len(data)
        if self._total > GUNZIPPED_MAX:
            raise InputError(
                f"{self._label}: gzip data that decompresses to more than "
                f"{GUNZIPPED_MAX / 1024**3:g} GiB; inputs are read into memory, so split it"
            )
        view[: len(data)] = data
        return len(data)


@contextlib.contextmanager
def _gunzipped(stream: BinaryIO, label: str) -> Iterator[BinaryIO]:
    """``stream``, decompressed when it holds gzip data; corrupt or truncated gzip data is
    one :class:`InputError` naming ``label``."""
    head, source = _with_head(stream)
    if head != GZIP_MAGIC:
        yield source
        return
    import gzip
    import zlib

    try:
        with gzip.GzipFile(fileobj=source, mode="rb") as unzipped:
            yield io.BufferedReader(_Capped(unzipped, label), READ_BLOCK)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise InputError(
            f"{label}: gzip data that cannot be decompressed ({exc}); check it with `gzip -t`"
        ) from None


def data_suffix(path: str | os.PathLike[str]) -> str:
    """The ending that names a file's format, lower case, ``.gz`` looked through
    (``scores.csv.gz``: ``.csv``)."""
    return Path(Path(path).name.lower().removesuffix(".gz")).suffix


def is_pipe(path: str | os.PathLike[str]) -> bool:
    """A FIFO or a pipe (``<(...)``, ``/dev/fd/N``): read once, with no name ending to go by."""
    import stat

    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def read_bytes(path: str | os.PathLike[str], expected: str) -> tuple[bytes, str]:
    """The bytes of a file (``-``: stdin; gzip decompressed), read once, and its label."""
    with _opened(path, expected) as (stream, label):
        return stream.read(), label


def read_text(
    path: str | os.PathLike[str], expected: str, *, allow_empty: bool = False
) -> tuple[str, str]:
    """The UTF-8 text of a file (``-``: stdin) and its label for messages (``<stdin>``).

    ``expected`` says what the file should hold ("one segment per line"), for the messages
    on a folder or an empty file; an empty file is ``""`` with ``allow_empty``.
    """
    data, label = read_bytes(path, expected)
    text = decode_utf8(data, label)
    if not text or text == "\ufeff":
        if allow_empty:
            return "", label
        raise InputError(f"{label}: file is empty, expected {expected}")
    return text, label


#: byte-order marks of the encodings a UTF-8 reader must not guess as LATIN1; UTF-32 LE
#: starts with the UTF-16 LE mark, so the longer marks are tried first
_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)", "UTF-32"),
    (b"\xfe\xff", "UTF-16 (big-endian)", "UTF-16"),
    (b"\xff\xfe", "UTF-16 (little-endian)", "UTF-16"),
)


def decode_utf8(data: bytes, label: str, expected: str = "") -> str:
    """``data`` decoded as UTF-8, or one :class:`InputError` naming the byte, its line and a fix.

    ``expected`` names the kind of file in the message ("a study file is UTF-8 TOML").
    """
    check_not_utf16_or_32(data, label)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(data, exc, label, 0, expected) from exc


def _utf8_error(
    data: bytes, exc: UnicodeDecodeError, label: str, lines_before: int, expected: str = ""
) -> InputError:
    """The refusal of text that is not UTF-8: the bad byte, its line and the fix."""
    line_no = lines_before + data[: exc.start].count(b"\n") + 1
    kind = f"{expected}: " if expected else ""
    return InputError(
        f"{label}: not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line_no}); "
        f"{kind}convert it with e.g. `iconv -f LATIN1 -t UTF-8`"
    )


def check_not_utf16_or_32(data: bytes, label: str) -> None:
    """Refuse UTF-16/UTF-32 text (recognised by its byte-order mark) with the right iconv hint.

    Such a file fails UTF-8 decoding on its first byte, and a LATIN1 hint would turn it
    into text full of NUL characters that scores as garbage.
    """
    for bom, encoding, iconv_name in _WIDE_BOMS:
        if data.startswith(bom):
            raise InputError(
                f"{label}: {encoding} text (byte-order mark {bom.hex(' ')}), expected UTF-8; "
                f"convert it with e.g. `iconv -f {iconv_name} -t UTF-8`"
            )


def check_same_length(named: Sequence[tuple[str, Sequence[object]]]) -> int:
    """Check that every named sequence has the same length; return that length.

    The error names every input and its count, so the user sees which file is off.
    """
    if not named:
        return 0
    lengths = {name: len(seq) for name, seq in named}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{n}: {c} lines" for n, c in lengths.items())
        raise InputError(f"inputs differ in line count ({detail}); every file must be line-aligned")
    return next(iter(lengths.values()))


def _mode_for(target: Path) -> int | None:
    """The permission bits the written file must end with: those of the file it replaces.

    None for a new file, whose temporary file was created with 0o666 minus the umask, as
    ``open(path, "w")`` would have.
    """
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        return None


def _create_temp(folder: Path, name: str) -> Path:
    """A new empty file in ``folder``, created 0o666 minus the umask (``mkstemp`` uses 0o600)."""
    import secrets  # here: its random and hashlib are start-up that reading files need not pay

    for _ in range(100):
        tmp = folder / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name for {name} in {folder}")  # pragma: no cover


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: equal once links and ``..`` are resolved, or one
    inode (hard links). A path that does not exist yet is only equal to itself.
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it over ``path`` only on success.

    A failure (or Ctrl-C) leaves no partial file behind and any old file untouched. A new
    file gets the umask's mode, a replaced file keeps its mode, and a symbolic link is
    written through (the link stays, its target gets the new content). An OS error (a
    read-only folder, a parent that is a file, a folder where the file should be) is an
    :class:`InputError` naming the path.
    """
    # the link's target is the file the user means; replacing the link would detach it
    target = Path(os.path.realpath(path))
    try:
        if target.is_dir():
            raise IsADirectoryError(21, "is a folder, expected a file name")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp_path = _create_temp(target.parent, target.name)
    except OSError as exc:
        raise InputError(f"{os.fspath(path)}: cannot write ({exc.strerror or exc})") from exc
    try:
        yield tmp_path
        mode = _mode_for(target)
        if mode is not None:
            os.chmod(tmp_path, mode)
        os.replace(tmp_path, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        if isinstance(exc, OSError):
            raise InputError(f"{os.fspath(path)}: cannot write ({exc.strerror or exc})") from exc
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


# -- record files: JSON Lines, CSV, TSV ---------------------------------------------------

#: file name endings read as records (one prediction and its references per record)
RECORD_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv"}


@dataclass(frozen=True)
class Record:
    """One record of a record file: its line number (from 1) and its parsed fields."""

    line: int
    fields: Mapping[str, Any]


def record_format(path: str, text: str | None = None) -> str | None:
    """``jsonl``, ``csv`` or ``tsv`` for a record file (by its ending, ``.gz`` looked
    through), else None.

    A file without such an ending (stdin ``-``, a pipe ``<(zcat a.jsonl.gz)``) is known by
    its ``text``: JSON Lines when it starts with ``{``, TSV when its first line has a tab,
    CSV otherwise.
    """
    fmt = None if path == STDIN else RECORD_FORMATS.get(data_suffix(path))
    if fmt is not None or text is None:
        return fmt
    body = text.lstrip("\ufeff \t\r\n")
    return "jsonl" if body.startswith("{") else "tsv" if "\t" in body.split("\n", 1)[0] else "csv"


def read_records(path: str, fmt: str | None = None) -> list[Record]:
    """The records of a JSON Lines / CSV / TSV file (``-``: stdin), each with its line number.

    A JSON line that is not an object, a blank line between records, a CSV row with more
    or fewer cells than the header, or a header naming one column twice is an
    :class:`InputError` naming the file and the line.
    """
    text, label = read_text(path, "one record per line (JSON Lines, CSV or TSV)")
    text = text.removeprefix("\ufeff")  # a spreadsheet's BOM is not part of the first column's name
    fmt = fmt or record_format(path, text)
    if fmt == "jsonl":
        return _jsonl_records(text, label)
    return _table_records(text, label, "\t" if fmt == "tsv" else ",")


def _jsonl_records(text: str, label: str) -> list[Record]:
    lines = split_segments(text)
    records = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            raise InputError(f"{label}: line {no} is blank, expected one JSON object per line")
        try:
            value = numbers.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{label}: line {no} is not valid JSON ({exc.msg} at column {exc.colno})"
            ) from exc
        if not isinstance(value, dict):
            raise InputError(
                f"{label}: line {no} is a JSON {type(value).__name__}, expected an object with fields"
            )
        records.append(Record(no, value))
    return records


def _table_records(text: str, label: str, delimiter: str) -> list[Record]:
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(rows)
        if len(set(header)) != len(header):
            twice = sorted({h for h in header if header.count(h) > 1})
            raise InputError(f"{label}: line 1 (the header) names column {twice[0]!r} twice")
        records = []
        start = rows.line_num + 1
        for row in rows:
            if len(row) != len(header):
                raise InputError(
                    f"{label}: line {start} has {len(row)} cell(s), the header {len(header)}"
                )
            records.append(Record(start, dict(zip(header, row, strict=True))))
            start = rows.line_num + 1
    except csv.Error as exc:
        raise InputError(
            f"{label}: line {rows.line_num} is not valid {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})"
        ) from exc
    if not records:
        raise InputError(f"{label}: has a header but no records")
    return records


def field_value(record: Record, path: str, label: str) -> Any:
    """The value at a dotted ``path`` (``output.text``, ``refs.0``) of a record.

    A missing key is an :class:`InputError` naming the line and the keys that are there.
    """
    value: Any = record.fields
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            keys = ", ".join(map(str, value)) if isinstance(value, dict) else type(value).__name__
            raise InputError(f"{label}: line {record.line} has no field {path!r} (there: {keys})")
    return value


def text_field(record: Record, path: str, label: str) -> str:
    """A field that must hold one segment (a string)."""
    value = field_value(record, path, label)
    if not isinstance(value, str):
        raise InputError(
            f"{label}: line {record.line}: field {path!r} is {_json_kind(value)}, expected a string"
        )
    return value


def texts_field(record: Record, path: str, label: str) -> list[str]:
    """A field holding one reference (a string) or several (a non-empty list of strings)."""
    value = field_value(record, path, label)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    raise InputError(
        f"{label}: line {record.line}: field {path!r} is {_json_kind(value)}, expected a string or a "
        "non-empty list of strings"
    )


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words for a message (``a number``, ``an empty list``)."""
    if isinstance(value, list):
        return "an empty list" if not value else "a list with a non-string"
    kinds = {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        dict: "an object",
        numbers.Refused: "a number",
    }
    return kinds.get(type(value), f"a {type(value).__name__}")


def record_ids(records: Sequence[Record], path: str, label: str) -> list[str]:
    """The id of every record (numbers as their JSON text), refusing a repeated id."""
    seen: dict[str, int] = {}
    ids = []
    for record in records:
        value = field_value(record, path, label)
        if isinstance(value, numbers.Refused):  # an id needs no float: its JSON text is the id
            value = value.error.text
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise InputError(
                f"{label}: line {record.line}: id field {path!r} is {_json_kind(value)}, expected a string or an integer"
            )
        key = str(value)
        if key in seen:
            raise InputError(f"{label}: line {record.line} repeats id {key!r} of line {seen[key]}")
        seen[key] = record.line
        ids.append(key)
    return ids


def align_by_id(
    records: Sequence[Record], ids: Sequence[str], order: Sequence[str], label: str, first: str
) -> list[Record]:
    """``records`` in the order of ``order`` (the first file's ids), refusing a missing or extra id."""
    by_id = dict(zip(ids, records, strict=True))
    missing = [k for k in order if k not in by_id]
    if missing:
        raise InputError(
            f"{label}: no record with id {missing[0]!r} ({len(missing)} id(s) of {first} missing)"
        )
    wanted = set(order)
    extra = [r for k, r in by_id.items() if k not in wanted]
    if extra:
        raise InputError(
            f"{label}: line {extra[0].line} has an id that {first} does not have ({len(extra)} such record(s))"
        )
    return [by_id[k] for k in order]
