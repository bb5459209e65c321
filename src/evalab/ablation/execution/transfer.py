"""Run folders that travel through Ray instead of a shared disk.

On a cluster without a shared folder a Ray task runs in a folder private to its node
(``$EVALAB_NODE_RUNS/<store id>/<study>/<key>``, by default under the node's temporary
folder); when the attempt ends, the whole folder (checkpoint, per-example file, outputs a
computed metric scored, log) is packed as one uncompressed tar and returned with the
result through Ray's object store, and the driver unpacks it into the run folder of its
store. An eval run gets its trained run's folder the same way, unpacked beside its own
folder on its node. A folder larger than the study's ``transfer_limit_mb`` is not packed:
the run fails with that reason, so nothing about a row changes silently.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from evalab.errors import RunError

__all__ = ["NODE_RUNS_ENV", "Packed", "node_folder", "pack", "unpack"]

#: the environment variable naming a node's private run root (set where ``ray start`` runs)
NODE_RUNS_ENV = "EVALAB_NODE_RUNS"
_MB = 1024 * 1024


@dataclass(frozen=True)
class Packed:
    """A run folder as a tar: ``size`` bytes of ``files`` regular files."""

    data: bytes
    size: int
    files: int


def node_folder(place: str) -> Path:
    """The folder of ``place`` (``<store id>/<study>/<key>``) under this node's run root."""
    root = os.environ.get(NODE_RUNS_ENV) or str(Path(tempfile.gettempdir()) / "evalab-runs")
    return Path(root) / place


def _members(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def pack(folder: Path, limit_mb: float) -> Packed:
    """The regular files of ``folder`` (links are not followed) as a tar;
    :class:`~evalab.errors.RunError` when they hold more than ``limit_mb`` MB."""
    files = _members(folder)
    size = sum(p.stat().st_size for p in files)
    if size > limit_mb * _MB:
        raise RunError(
            f"the run folder {folder} holds {size / _MB:.1f} MB, more than transfer_limit_mb = "
            f"{limit_mb:g}, so it cannot travel to the driver; raise [study] transfer_limit_mb or "
            "declare shared_folder = true (a folder every node sees at the same path)"
        )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in files:
            tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return Packed(buf.getvalue(), size, len(files))


def unpack(packed: Packed, folder: Path, what: str) -> None:
    """Make ``folder`` hold exactly the packed files: unpacked beside it, then swapped in
    (a failure leaves the folder as it was); :class:`~evalab.errors.RunError` naming
    ``what`` (the folder, as the run's error says it) and the file the disk refused."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError as exc:
        raise _unpack_error(what, folder, exc) from exc
    try:
        with tarfile.open(fileobj=io.BytesIO(packed.data), mode="r") as tar:
            tar.extractall(fresh, filter="data")
        old = folder.with_name(fresh.name + ".old")
        if folder.exists():
            folder.rename(old)
        fresh.rename(folder)
    except BaseException as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _unpack_error(what, folder, exc) from exc
        raise
    shutil.rmtree(old, ignore_errors=True)


def _unpack_error(what: str, folder: Path, exc: OSError) -> RunError:
    return RunError(f"cannot unpack {what}: {exc.filename or folder}: {exc.strerror}")
