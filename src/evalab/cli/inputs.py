"""Every path a command reads, as ``(option, path)`` pairs for :func:`evalab.cli.output.check_out`.

Beyond the files given as options, a command reads the models, encoders, baselines and
word lists its metrics' settings name (``--set comet.model=...``), and ``ablate`` reads the
study file, the modules its entry imports, the ``[metrics.NAME]`` references and sources,
the store and every file in the store's run folders. An output may replace none of them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalab.cli.options import canonical_metric_names, parse_set_options
from evalab.metrics.registry import metric_class

__all__ = ["metric_inputs", "settings_inputs", "study_inputs"]

#: files SQLite keeps beside a database while it writes
_DB_COMPANIONS = ("-wal", "-shm", "-journal")


def settings_inputs(metric: str, settings: Mapping[str, Any], label: str) -> list[tuple[str, str]]:
    """``(label.setting, path)`` of every file or folder ``settings`` make ``metric`` read."""
    cls = metric_class(metric).settings_class
    known = {k: v for k, v in settings.items() if k in cls.__dataclass_fields__}
    return [(f"{label}.{key}", path) for key, path in cls(**known).read_paths()]


def metric_inputs(names: Sequence[str], set_items: Sequence[str]) -> list[tuple[str, str]]:
    """The paths the ``--set`` settings of the selected metrics name (models, baselines...);
    ``names`` as given on the command line (any case, comma-separated lists)."""
    names = canonical_metric_names(names)
    per_metric = parse_set_options(set_items, names)
    return [
        pair for name in names for pair in settings_inputs(name, per_metric[name], f"--set {name}")
    ]


def study_inputs(study: Any, db: str) -> list[tuple[str, str | None]]:
    """Every file a study's status or report depends on: the study file, its code (the entry's
    import closure, as the code version walks it), the ``[metrics]`` references, sources
    and models, the store with its companions, and the store's run folders."""
    from evalab.ablation.contract.codeversion import command_files, local_imports, search_roots
    from evalab.ablation.study.entry import find_module_file

    directory = study.directory
    start = [
        Path(f)
        for f in (find_module_file(e, directory) for e in (study.entry, study.evaluate) if e)
        if f
    ]
    if study.command:
        start += command_files(study.command, directory)
    read: list[tuple[str, str | None]] = [("STUDY_FILE", _shown(study.path))]
    read += [("the study's code", _shown(p)) for p in local_imports(start, search_roots(directory))]
    for name, spec in study.computed.items():
        read += [(f"[metrics.{name}] references", _shown(p)) for p in spec.references]
        read += [(f"[metrics.{name}] source", _shown(spec.source) if spec.source else None)]
        read += settings_inputs(spec.metric, spec.settings, f"[metrics.{name}]")
    read += [("--db", db + suffix) for suffix in ("", *_DB_COMPANIONS)]
    read.append(("the store's run folders", _shown(Path(db).resolve().parent / "runs")))
    return read


def _shown(path: Path) -> str:
    """``path`` as a message names it: relative to the working folder when inside it."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else relative
