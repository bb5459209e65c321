"""What the scoring commands read, and how: loading references, system outputs and sources
(line-aligned, text or record files), binding sources to the metrics that read them,
loading models and warning of a language misfit; and every path a command reads, as
``(option, path)`` pairs for :func:`evalab.cli.output.check_out`.

Beyond the files given as options, a command reads the models, encoders, baselines and
word lists its metrics' settings name (``--set comet.model=...``), and ``ablate`` reads the
study file, the modules its entry imports, the ``[metrics.NAME]`` references and sources,
the store and every file in the store's run folders. An output may replace none of them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.cli.language_checks import warn_encoder_misfit, warn_tokenizer_misfit
from evalab.cli.names import system_name
from evalab.cli.options import MetricSelection, settings_paths
from evalab.cli.output import check_out
from evalab.cli.record_inputs import RecordOptions, read_streams
from evalab.cli.segment_checks import check_no_nul
from evalab.errors import SettingsError
from evalab.io import check_same_length, read_segments
from evalab.metrics.registry import metric_class
from evalab.progress import model_loading

if TYPE_CHECKING:
    from evalab.metrics.base import Metric

__all__ = [
    "aligned_stream",
    "bind_source",
    "check_model_inputs",
    "check_segments_path",
    "check_source_option",
    "input_options",
    "load_models",
    "load_streams",
    "metric_inputs",
    "needs_references",
    "settings_inputs",
    "show_progress",
    "study_inputs",
    "warn_language_misfits",
]

#: files SQLite keeps beside a database while it writes
_DB_COMPANIONS = ("-wal", "-shm", "-journal")


def settings_inputs(metric: str, settings: Mapping[str, Any], label: str) -> list[tuple[str, str]]:
    """``(label.setting, path)`` of every file or folder ``settings`` make ``metric`` read."""
    return settings_paths(metric_class(metric), settings, label)


def metric_inputs(names: Sequence[str], set_items: Sequence[str]) -> list[tuple[str, str]]:
    """The paths the ``--set`` settings of the selected metrics name (models, baselines...);
    ``names`` as given on the command line (any case, comma-separated lists)."""
    return MetricSelection.parse(names, set_items).read_paths()


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


#: no record options: every file is read as text unless its name says JSON Lines/CSV/TSV
NO_RECORDS = RecordOptions()


def needs_references(built: Mapping[str, Metric]) -> bool:
    """Whether ``-r`` is required: a selected metric cannot score without references (every
    metric but quality estimation, as each one's ``needs_references`` says). The one place
    the scoring commands decide it."""
    return any(metric.needs_references for metric in built.values())


def load_streams(
    references: list[str],
    inputs: list[str],
    names: dict[str, str] | None = None,
    records: RecordOptions = NO_RECORDS,
    *,
    required: bool = True,
) -> tuple[list[list[str | None]], dict[str, list[str]], list[str]]:
    """Read reference streams and system outputs (text or record files), check they are all
    line-aligned, and label each reference stream (its file, and its position in a record
    file's list of references). No reference is refused when ``required``
    (:func:`needs_references`).

    Systems are keyed by ``names[path]`` (:class:`~evalab.cli.names.NamedInputs`), else by
    their file names (their paths where two share a file name).
    """
    if not inputs:
        raise SettingsError("no system output given; pass -i HYP [HYP2 ...]")
    streams = read_streams(references, inputs, records, required=required)
    check_same_length([*zip(streams.ref_labels, streams.refs, strict=True), *streams.systems])
    systems: dict[str, list[str]] = {}
    for p, segments in streams.systems:
        # two systems with the same file name in different folders keep their full paths
        name = system_name(p) if sum(system_name(q) == system_name(p) for q in inputs) == 1 else p
        systems[names[p] if names else name] = segments
    return streams.refs, systems, streams.ref_labels


def input_options(
    references: list[str], inputs: list[str], source: str | None = None
) -> list[tuple[str, str | None]]:
    """``(option, path)`` of every file a scoring command reads, for :func:`check_out`."""
    return [*(("-r", p) for p in references), *(("-i", p) for p in inputs), ("--source", source)]


def check_source_option(built: dict[str, Metric], source: str | None, others: list[str]) -> None:
    """``--source`` is given exactly when a selected metric reads sources (COMET), and
    required when one cannot score without them (``needs_source``)."""
    readers = [n for n, m in built.items() if getattr(m, "uses_source", False)]
    needing = [n for n in readers if getattr(built[n], "needs_source", True)]
    if needing and source is None:
        raise SettingsError(
            f"{', '.join(needing)} reads the source segments: pass --source SRC (one segment a line)"
        )
    if source is not None and not readers:
        raise SettingsError("--source is given but no selected metric reads sources (comet does)")
    if source == "-" and "-" in others:
        raise SettingsError("stdin ('-') can be used for only one file")


def check_model_inputs(
    built: dict[str, Metric],
    source: str | None,
    has_references: bool,
    *,
    source_shown: bool = False,
) -> None:
    """Refuse, before any file is read, inputs a metric's model cannot score from (a COMET
    checkpoint's ``check_inputs``: CometKiwi without ``--source``, a source or no
    reference where its ``input_segments`` say otherwise); ``source_shown``: the source
    is also shown (``compare -f html``), so one the model does not read is no mistake."""
    for metric in built.values():
        check = getattr(metric, "check_inputs", None)
        if check is not None:
            check(source is not None, has_references, unread_source_ok=source_shown)


def aligned_stream(
    labels: Sequence[str],
    refs: Sequence[Sequence[str | None]],
    paths: Sequence[str],
    systems: Mapping[str, Sequence[str]],
) -> tuple[str, Sequence[str | None]]:
    """The stream the other inputs are line-aligned with, and its label: the first reference,
    else (no ``-r``: quality estimation) the first system's output."""
    if refs:
        return labels[0], refs[0]
    return paths[0], next(iter(systems.values()))


def bind_source(
    built: dict[str, Metric], source: str | None, aligned: tuple[str, Sequence[str | None]]
) -> dict[str, Metric]:
    """The metrics with the ``--source`` segments bound, checked line-aligned with ``aligned``
    (:func:`aligned_stream`)."""
    if source is None:
        return built
    segments = read_segments(source)
    check_no_nul(source, segments)
    check_same_length([(source, segments), aligned])
    return {
        # only the metrics that use a source (COMET) define with_sources, as uses_source says
        n: m.with_sources(segments) if getattr(m, "uses_source", False) else m  # type: ignore[attr-defined]
        for n, m in built.items()
    }


def warn_language_misfits(
    built: dict[str, Metric], refs: list[list[str | None]], *, langpair_option: bool = False
) -> None:
    """Say (once) when a metric's tokenizer or encoder does not fit the references' language."""
    warn_tokenizer_misfit(built, refs, langpair_option=langpair_option)
    if "bertscore" in built:
        warn_encoder_misfit(built["bertscore"], refs, "pass --set bertscore.model=FOLDER")


def load_models(built: dict[str, Metric], enabled: bool) -> None:
    """Load the model metrics' models now, each between a 'loading' and a 'ready' line
    (``-q``: silent), so a long load is not a silent pause before the first bar."""
    loaders = {
        "bertscore": lambda m: m.embedder,
        "comet": lambda m: m.model(),
        "metricx": lambda m: m.model(),
        "perplexity": lambda m: m.scorer,
        "cross_entropy": lambda m: m.scorer,
    }
    for name, metric in built.items():
        if name in loaders:
            model = getattr(metric.settings, "model", None)
            with model_loading(f"{name} model ({model or 'default'})", enabled):
                loaders[name](metric)


def show_progress(built: dict[str, Metric], enabled: bool) -> dict[str, Metric]:
    """The metrics with their progress bars on (stderr, terminal only) or off (``-q``).

    Model metrics spend seconds to minutes per system: bertscore and perplexity show a bar
    when the CLI asks for one, comet has a ``progress`` setting (on by default, so ``-q``
    turns it off). String metrics finish in a blink and have no bar.
    """
    shown = {}
    for name, metric in built.items():
        if hasattr(metric, "progress"):
            metric.progress = enabled
        if hasattr(metric.settings, "progress") and not enabled:
            metric = type(metric)(dataclasses.replace(metric.settings, progress=False))  # type: ignore[call-arg]
        shown[name] = metric
    return shown


def check_segments_path(
    segments: str | None, out: str | None, inputs: list[tuple[str, str | None]]
) -> None:
    """Refuse a ``--segments`` file that would overwrite an input or the ``--out`` file."""
    check_out(segments, inputs, option="--segments", outputs=[("--out", out)])
