"""Reading segment files and writing output files atomically.

A segment file is UTF-8 text with one segment per line. Lines are split on ``\\n`` only
(``str.splitlines`` would also split on U+2028, U+0085, form feeds... which occur inside
real MT segments), and a trailing ``\\r`` is dropped so CRLF files score like LF files.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

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


def read_segments(path: str | os.PathLike[str], *, allow_empty: bool = False) -> list[str]:
    """Read a UTF-8 segment file (``-`` for stdin) and return its lines.

    Raises :class:`InputError` naming the file when it is missing, not UTF-8 (with the
    line number of the first bad byte) or empty.
    """
    name = str(path)
    if name == STDIN:
        data = sys.stdin.buffer.read()
        label = "<stdin>"
    else:
        p = Path(name)
        if not p.exists():
            raise InputError(f"{name}: no such file")
        if p.is_dir():
            raise InputError(f"{name}: is a directory, expected a text file with one segment per line")
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise InputError(f"{name}: cannot read ({exc.strerror})") from exc
        label = name
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{label}: not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line_no}); "
            "convert it with e.g. `iconv -f LATIN1 -t UTF-8`"
        ) from exc
    if not text or text == "\ufeff":
        if allow_empty:
            return []
        raise InputError(f"{label}: file is empty, expected one segment per line")
    if text.startswith("\ufeff"):
        # Kept, as sacrebleu keeps it: the WMT22 organisers' scores of uk-en PROMT (whose
        # file starts with a BOM) are only reproduced with U+FEFF left in segment 1.
        warnings.warn(
            f"{label}: starts with a UTF-8 byte-order mark (U+FEFF); it is kept as part of "
            "the first segment, as sacrebleu does",
            stacklevel=2,
        )
    return split_segments(text)


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


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it over ``path`` only on success.

    A failure (or Ctrl-C) leaves no partial file behind and any old file untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
