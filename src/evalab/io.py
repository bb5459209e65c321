"""Reading segment files and writing output files atomically.

A segment file is UTF-8 text with one segment per line. Lines are split on ``\\n`` only
(``str.splitlines`` would also split on U+2028, U+0085, form feeds... which occur inside
real MT segments), and a trailing ``\\r`` is dropped so CRLF files score like LF files.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
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
    text = decode_utf8(data, label)
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
        line_no = data[: exc.start].count(b"\n") + 1
        kind = f"{expected}: " if expected else ""
        raise InputError(
            f"{label}: not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line_no}); "
            f"{kind}convert it with e.g. `iconv -f LATIN1 -t UTF-8`"
        ) from exc


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
