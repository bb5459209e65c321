"""Rendering result tables in every format (terminal, JSON, Markdown, LaTeX, CSV, TSV), to
stdout or a file.

The one definition of the CLI's ``-f/--format`` option lives here: every command that
prints a table takes :data:`TABLE_FORMATS` (plus ``html`` where a page exists,
:data:`PAGE_FORMATS`) through :func:`format_option`, and renders through :func:`emit_table`.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from evalab.errors import SettingsError
from evalab.io import STDIN, same_file, write_text_atomic
from evalab.report.delimited import DELIMITERS, delimited_tables
from evalab.report.latex import WHOLE, LatexLayout, fits_page, latex_tables
from evalab.report.markdown import markdown_table
from evalab.report.table import Table, cell_text, flat_header
from evalab.report.terminal import print_tables

__all__ = [
    "FORMATS",
    "PAGE_FORMATS",
    "TABLE_FORMATS",
    "TableView",
    "check_format",
    "check_out",
    "emit",
    "emit_table",
    "emit_tables",
    "emit_view",
    "format_option",
    "json_safe",
    "ordered_row",
    "to_json",
]

#: every command that prints a table offers these
TABLE_FORMATS = ("table", "json", "markdown", "latex", "csv", "tsv")
#: commands that can also write a self-contained page
PAGE_FORMATS = (*TABLE_FORMATS, "html")
FORMATS = TABLE_FORMATS

#: keys that lead every JSON result object, in this order (``score`` and ``compare`` alike)
LEADING_KEYS = ("system", "metric", "score")


def format_option(formats: Sequence[str] = TABLE_FORMATS) -> Any:
    """The ``-f/--format`` option: one spelling, one help text and one metavar everywhere."""
    listed = f"{', '.join(formats[:-1])} or {formats[-1]}"
    return typer.Option(
        "-f", "--format", metavar="[" + "|".join(formats) + "]", help=f"Output format: {listed}."
    )


def check_format(fmt: str, allowed: Sequence[str] = TABLE_FORMATS) -> str:
    """Validate an output format name."""
    if fmt not in allowed:
        raise SettingsError(
            f"--format: unknown format {fmt!r}; expected one of {', '.join(allowed)}"
        )
    return fmt


def ordered_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with :data:`LEADING_KEYS` first (those present), the rest in their order."""
    return {
        **{k: row[k] for k in LEADING_KEYS if k in row},
        **{k: v for k, v in row.items() if k not in LEADING_KEYS},
    }


def json_safe(value: Any) -> Any:
    """``value`` with NaN/inf floats (at any depth) replaced by ``None`` (JSON null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def to_json(rows: Sequence[dict[str, Any]] | dict[str, Any]) -> str:
    """JSON text (NaN/inf become null so the output is valid JSON)."""
    data = json_safe(rows) if isinstance(rows, dict) else [json_safe(r) for r in rows]
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_json_lines(rows: Sequence[dict[str, Any]]) -> str:
    """JSON Lines, one row a line (NaN/inf become null so every line is valid JSON)."""
    return "".join(json.dumps(json_safe(r), ensure_ascii=False) + "\n" for r in rows)


def emit_table(
    fmt: str,
    table: Table,
    out: str | None,
    *,
    data: Any = None,
    latex: LatexLayout = WHOLE,
) -> None:
    """Print or write one table in ``fmt``: ``data`` is what ``json`` writes."""
    emit_tables(fmt, [table], out, data, latex=latex)


def emit_tables(
    fmt: str,
    tables: Sequence[Table],
    out: str | None,
    data: Any = None,
    *,
    latex: LatexLayout = WHOLE,
    after: str = "",
) -> None:
    """Print or write several tables in ``fmt`` (one write to ``out``, a blank line between
    them); ``data`` is what ``json`` writes, ``latex`` how ``latex`` is laid out. ``table``
    to a file is tab-separated as the cells show (no box drawing to parse), the footer lines
    after it; ``after`` is text that follows the tables in ``table`` (``score --align``)."""
    if fmt == "json":
        emit(to_json(data), out)
    elif fmt == "markdown":
        emit("\n".join(markdown_table(t) for t in tables), out)
    elif fmt == "latex":
        emit(latex_tables(tables, latex), out)
    elif fmt in DELIMITERS:
        emit(delimited_tables(tables, fmt), out)
    elif out and stream_of(out) != "stdout":
        emit("\n".join(_tab_text(t) for t in tables) + after, out)
    else:
        print_tables(tables)
        if after:
            emit(after, out)


def _tab_text(t: Table) -> str:
    rows = [flat_header(t), *([cell_text(c) for c in row] for row in t.body)]
    return "".join("\t".join(r) + "\n" for r in rows) + "".join(f"{f}\n" for f in t.footer)


@dataclass(frozen=True)
class TableView:
    """How a command's result table is laid out: ``layout`` as ``--layout`` gives it (wide,
    long, or None for the default) and ``latex`` as ``--latex-split``/``--latex-fragment``."""

    layout: str | None = None
    latex: LatexLayout = WHOLE


#: the default view: wide or long by :func:`wide_wanted`, one LaTeX float per table
DEFAULT_VIEW = TableView()
#: the formats whose default layout is wide where the wide table fits the page
PAPER_FORMATS = ("latex", "markdown")


def wide_wanted(fmt: str, wide: Table, layout: str | None) -> bool:
    """Whether to write the ``wide`` table (systems x metrics): as ``--layout`` says, else by
    default for the paper formats with several systems and metrics where it fits the page."""
    if layout is not None:
        return layout == "wide"
    several = len(wide.body) > 1 and len(wide.header) > 2
    return fmt in PAPER_FORMATS and several and fits_page(wide)


def emit_view(
    fmt: str,
    long: Table,
    wide: Table,
    out: str | None,
    view: TableView = DEFAULT_VIEW,
    *,
    data: Any = None,
    more: Sequence[Table] = (),
    after: str = "",
) -> None:
    """Print or write a result in its ``long`` or ``wide`` layout (:func:`wide_wanted`), then
    the ``more`` tables; ``data`` is what ``json`` writes."""
    if fmt == "json" or not wide_wanted(fmt, wide, view.layout):
        emit_tables(fmt, [long, *more], out, data, latex=view.latex, after=after)
        return
    emit_tables(fmt, [wide, *more], out, data, latex=view.latex, after=after)


#: output paths that name a stream, not a file: written to that stream as it is
STREAMS = {"-": "stdout", "/dev/stdout": "stdout", "/dev/stderr": "stderr"}

#: kinds of file an output may not replace (the node would become a regular file)
_SPECIAL = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def stream_of(out: str | None) -> str | None:
    """``"stdout"`` or ``"stderr"`` when ``out`` names that stream (``-``, ``/dev/stdout``...)."""
    return STREAMS.get(out) if out is not None else None


def _inside(path: str, folder: str) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, root]) == root


def _in_folder(out: str, folder: str) -> bool:
    """Whether ``out`` (which exists) is a file inside ``folder``, or one of its files by a
    link: a hard link elsewhere, or the target of a symbolic link inside the folder."""
    if _inside(out, folder):
        return True
    try:
        target = os.stat(out)
    except OSError:
        return False
    for root, dirs, files in os.walk(folder):
        for name in [*files, *dirs]:
            try:
                entry = os.stat(os.path.join(root, name))  # through links: the file it reads
            except OSError:
                continue
            if (entry.st_dev, entry.st_ino) == (target.st_dev, target.st_ino):
                return True
    return False


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (the folder a write would create from)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path("/")  # pragma: no cover - "/" always exists


def check_out(
    out: str | None,
    inputs: Iterable[tuple[str, str | None]],
    *,
    option: str = "--out",
    folder: bool = False,
    outputs: Iterable[tuple[str, str | None]] = (),
) -> None:
    """Refuse an output path that would destroy an input or cannot be written, before any work.

    ``inputs`` are ``(option, path)`` pairs of everything the command reads (None and ``-``
    are skipped): the output may not be one of them (resolved paths, so symbolic links and
    ``a/../b`` count; :func:`os.path.samefile`, so hard links count), nor an existing file
    inside an input folder (a model directory) or linked to one. ``-``, ``/dev/stdout`` and
    ``/dev/stderr`` name a stream, refused where one of the command's other ``outputs`` (an
    ``(option, path)`` pair whose path None means stdout) writes the same stream; those
    outputs are inputs for this check otherwise (two outputs never share a file).
    Then the output must be writable: a regular file (not a device, FIFO or socket), not a
    folder (nor a path ending in ``/``) unless ``folder``, not under a file, not in a
    read-only folder. Writing is still guarded by :func:`evalab.io.atomic_path`; this check
    only moves the refusal ahead of minutes of scoring.
    """
    if out is None:
        return
    if not out.strip():
        raise SettingsError(f"{option} is empty; give a file name")
    outputs = list(outputs)
    if stream_of(out):
        _check_stream(out, outputs, option=option, folder=folder)
        return
    for name, path in [*inputs, *outputs]:
        if path is None or path == STDIN or stream_of(path):
            continue
        if same_file(out, path):
            raise SettingsError(
                f"{option} {out} is the same file as {name} {path}; writing the output there "
                "would replace it, choose another file"
            )
        if os.path.isdir(path) and os.path.lexists(out) and _in_folder(out, path):
            raise SettingsError(
                f"{option} {out} is a file inside {name} {path}; writing the output there "
                "would replace it, choose another file"
            )
    _check_writable(out, option=option, folder=folder)


def _check_stream(
    out: str, outputs: list[tuple[str, str | None]], *, option: str, folder: bool
) -> None:
    if folder:
        raise SettingsError(f"{option} {out} names the {stream_of(out)} stream; give a folder")
    for name, path in outputs:
        if stream_of(path or "-") == stream_of(out):
            given = f"{name} {path}" if path else f"the output of {name} (stdout when not given)"
            raise SettingsError(
                f"{option} {out} writes to {stream_of(out)}, and so does {given}; give one a file name"
            )


def _check_writable(out: str, *, option: str, folder: bool) -> None:
    # the path as the user wrote it, so the message names what they typed
    target = Path(out)
    if not folder and out.endswith(("/", os.sep)):
        raise SettingsError(f"{option} {out} ends in '/', which names a folder; give a file name")
    kind = _special_kind(out)
    if kind:
        raise SettingsError(
            f"{option} {out} is {kind}, not a regular file; give a file name (or - for stdout)"
        )
    if target.is_dir() and not folder:
        raise SettingsError(f"{option} {out} is a folder; give a file name")
    if target.exists() and not target.is_dir() and folder:
        raise SettingsError(f"{option} {out} exists and is not a folder")
    base = _nearest_existing(target if not target.exists() or folder else target.parent)
    if not base.is_dir():
        raise SettingsError(f"{option} {out}: {base} is a file, not a folder")
    # /proc and /sys accept no new files whatever their permission bits say (even for root)
    if str(base).split(os.sep)[1:2] in (["proc"], ["sys"]) or not os.access(
        base, os.W_OK | os.X_OK
    ):
        raise SettingsError(f"{option} {out}: the folder {base} is not writable")


def _special_kind(out: str) -> str | None:
    try:
        mode = os.stat(out).st_mode
    except OSError:  # no such file yet (or a dangling link): a new file
        return None
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


def emit(text: str, out: str | None) -> None:
    """Write ``text`` to the file ``out`` atomically, or to stdout (no ``out``, ``-``,
    ``/dev/stdout``) or stderr (``/dev/stderr``)."""
    if out and not stream_of(out):
        write_text_atomic(out, text)
        return
    import sys

    stream = sys.stderr if stream_of(out) == "stderr" else sys.stdout
    stream.write(text)
    stream.flush()
