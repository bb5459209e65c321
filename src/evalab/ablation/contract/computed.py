"""Metrics evalab computes from a file each run writes: the ``[metrics.NAME]`` tables.

::

    [metrics.bleu]
    metric = "bleu"                    # any evalab metric (`evalab metrics` lists them)
    settings = { tokenize = "13a" }    # its settings, typed as in `evalab metrics`
    outputs = "hyp.txt"                # the file the run writes in its run folder, one segment a line
    references = ["data/dev.ref"]      # relative to the study file; several = several streams
    source = "data/dev.src"            # only for metrics that read sources (comet)

Everything is checked when the study is loaded (the metric exists, its settings are known
and of the right type, every reference file is readable and line-aligned with the others);
after a run, :func:`score_outputs` reads the run's output file, refuses one whose line
count differs from the references, and returns the corpus score (what ``evalab score``
prints for the same file) with the per-segment statistics rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import types
import typing
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from evalab.ablation.contract import keys
from evalab.ablation.contract.codeversion import DigestCache, artifact_digest
from evalab.errors import EvalabError, InputError
from evalab.io import check_same_length, read_segments

if TYPE_CHECKING:
    import numpy as np

    from evalab.metrics.base import Metric

#: [metrics.NAME] key -> what it means (declared in :mod:`evalab.ablation.contract.keys`)
TABLE_KEYS = keys.helps("metrics.NAME")
#: files of a run folder that belong to evalab, never a run's output
RESERVED_FILES = frozenset(
    {
        "config.json",
        "result.bin",
        "result.bin.tmp",
        "metrics.json",
        "log.txt",
        "job.bin",
        "examples.npz",
        "imported-examples.npz",
        "unstored-result.json",
    }
)


@dataclass(frozen=True)
class ComputedMetric:
    """One ``[metrics.NAME]`` table, validated. Paths are absolute."""

    name: str
    metric: str
    settings: dict[str, Any]
    outputs: str
    references: tuple[Path, ...]
    source: Path | None = None
    digest: str = ""  # of the metric, its settings, the reference/source contents and the models
    texts: str = ""  # of the reference/source contents alone: checked again when a run is scored
    #: (setting, path, digest) of each setting naming a local file or folder (a model checkpoint,
    #: an encoder folder): the weights a score depends on, not only their path
    artifacts: tuple[tuple[str, str, str], ...] = ()

    def build(self) -> Metric:
        """The registry metric with its settings."""
        from evalab.metrics.registry import metric_class

        return metric_class(self.metric)(**self.settings)


def parse_tables(
    raw: Any, directory: Path, error: Any, cache: DigestCache | None = None
) -> dict[str, ComputedMetric]:
    """Validate the ``[metrics]`` section; ``error(where, message, key, section)`` builds
    the located :class:`SettingsError` of the study file."""
    if not isinstance(raw, dict):
        raise error(
            "[metrics]",
            "must hold one table per computed metric: [metrics.bleu] with metric, outputs, references",
        )
    cache = cache or DigestCache()
    return {name: _parse_one(name, table, directory, error, cache) for name, table in raw.items()}


def model_artifacts(
    settings: dict[str, Any], cache: DigestCache
) -> tuple[tuple[str, str, str], ...]:
    """``(setting, path, digest)`` of every setting that names a local file or folder (as
    the metric resolves it: relative to the working folder), e.g. a COMET checkpoint."""
    out = []
    for key, value in sorted(settings.items()):
        if isinstance(value, str) and value and "\0" not in value and Path(value).exists():
            out.append((key, str(Path(value).resolve()), artifact_digest(Path(value), cache)))
    return tuple(out)


def _checked_table(name: str, table: Any, error: Any) -> None:
    """The keys of ``[metrics.NAME]``: a table, no unknown key, every required one."""
    where = f"[metrics.{name}]"
    if not isinstance(table, dict):
        raise error(where, "must be a table with metric, outputs and references", name)
    for key in table:
        if key not in TABLE_KEYS:
            raise error(
                f"{where} key {key!r}",
                f"unknown; known keys: {', '.join(TABLE_KEYS)}",
                key,
                f"metrics.{name}",
            )
    for key in (k.name for k in keys.keys_of("metrics.NAME").values() if k.required):
        if key not in table:
            raise error(f"{where} {key}", f"missing ({TABLE_KEYS[key]})", None)


def _built_metric(name: str, table: dict[str, Any], error: Any) -> tuple[Any, dict[str, Any]]:
    """The metric ``[metrics.NAME]`` names, built with its settings (checked), and the settings."""
    where, section = f"[metrics.{name}]", f"metrics.{name}"
    metric_name = table["metric"]
    from evalab.metrics.loss import LossMetric
    from evalab.metrics.registry import METRICS, available_metrics, metric_class

    if not isinstance(metric_name, str) or metric_name not in METRICS:
        raise error(
            f"{where} metric",
            f"{metric_name!r} is not an evalab metric; known: {', '.join(available_metrics())}",
            "metric",
            section,
        )
    cls = metric_class(metric_name)
    settings = _settings(table.get("settings", {}), cls, where, section, error)
    try:
        built = cls(**settings)
    except EvalabError as exc:
        raise error(f"{where} settings", str(exc), "settings", section) from None
    if isinstance(built, LossMetric) and built.settings.model is None:
        # without a model it scores no text: every run would be trained, then failed
        raise error(
            f"{where} settings",
            f"{metric_name} scores a run's outputs with a causal LM: give settings = "
            '{ model = "PATH" } (a local Hugging Face model directory), or have the run return the value',
            "settings" if "settings" in table else "metric",
            section,
        )
    return built, settings


def _parse_one(
    name: str, table: Any, directory: Path, error: Any, cache: DigestCache
) -> ComputedMetric:
    where = f"[metrics.{name}]"
    section = f"metrics.{name}"
    _checked_table(name, table, error)
    built, settings = _built_metric(name, table, error)
    metric_name = table["metric"]
    cls = type(built)
    outputs = _outputs(table["outputs"], where, section, error)
    refs, texts = _references(table["references"], directory, where, section, error)
    limit = getattr(cls, "max_reference_streams", None)
    if limit is not None and len(refs) > limit:
        raise error(
            f"{where} references",
            f"{metric_name} reads at most {limit} reference file(s), got {len(refs)}",
            "references",
            section,
        )
    source = _source(
        table.get("source"),
        bool(getattr(built, "uses_source", False)),
        directory,
        refs,
        texts,
        where,
        section,
        error,
    )
    artifacts = model_artifacts(settings, cache)
    h = hashlib.sha256(repr((metric_name, sorted(settings.items()), outputs)).encode())
    for text in texts:
        h.update(b"\x00".join(s.encode("utf-8", "surrogatepass") for s in text) + b"\x01")
    if artifacts:  # (a study without models keeps the digest it had)
        h.update(repr([(key, digest) for key, _, digest in artifacts]).encode())
    return ComputedMetric(
        name=name,
        metric=metric_name,
        settings=settings,
        outputs=outputs,
        references=tuple(refs),
        source=source,
        digest=h.hexdigest()[:12],
        texts=texts_digest(texts),
        artifacts=artifacts,
    )


def texts_digest(texts: list[list[str]]) -> str:
    """A digest of the reference (and source) segments a computed metric scores against."""
    h = hashlib.sha256()
    for text in texts:
        h.update(b"\x00".join(s.encode("utf-8", "surrogatepass") for s in text) + b"\x01")
    return h.hexdigest()[:16]


def _settings(raw: Any, cls: Any, where: str, section: str, error: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise error(
            f"{where} settings", 'must be a table such as { tokenize = "13a" }', "settings", section
        )
    fields = {f.name: f for f in dataclasses.fields(cls.settings_class)}
    hints = typing.get_type_hints(cls.settings_class)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in fields:
            raise error(
                f"{where} settings.{key}",
                f"{cls.name} has no setting {key!r}; known: {', '.join(sorted(fields))}",
                key,
                section,
            )
        typed = _typed(value, hints[key])
        if typed is _WRONG:
            raise error(
                f"{where} settings.{key}",
                f"is {value!r}; {cls.name}.{key} takes {_hint_name(hints[key])} "
                "(see `evalab metrics`)",
                key,
                section,
            )
        out[key] = typed
    return out


_WRONG = object()


def _typed(value: Any, hint: Any) -> Any:
    """``value`` converted to ``hint`` when TOML gave a compatible type, else ``_WRONG``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if arg is not type(None):
                out = _typed(value, arg)
                if out is not _WRONG:
                    return out
        return _WRONG
    if origin is tuple:
        inner = typing.get_args(hint)[0]
        if not isinstance(value, list):
            return _WRONG
        items = [_typed(v, inner) for v in value]
        return _WRONG if any(i is _WRONG for i in items) else tuple(items)
    if hint is bool:
        return value if isinstance(value, bool) else _WRONG
    if hint is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _WRONG
    if hint is float:
        return (
            float(value)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else _WRONG
        )
    if hint is str:
        return value if isinstance(value, str) else _WRONG
    return value


def _hint_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _outputs(raw: Any, where: str, section: str, error: Any) -> str:
    path = PurePosixPath(raw) if isinstance(raw, str) and raw.strip() else None
    if (
        path is None
        or path.is_absolute()
        or ".." in path.parts
        or "\\" in raw
        or str(path) == "."
        or "\0" in raw
    ):
        raise error(
            f"{where} outputs",
            f'{raw!r} is not a file name inside the run folder (e.g. "hyp.txt"; no '
            "absolute path, no ..)",
            "outputs",
            section,
        )
    if str(path) in RESERVED_FILES:
        raise error(
            f"{where} outputs",
            f"{raw!r} is a file evalab writes in every run folder; name the output "
            'another way (e.g. "hyp.txt")',
            "outputs",
            section,
        )
    return str(path)


def _read(path: Path, where: str, key: str, section: str, error: Any) -> list[str]:
    try:
        return read_segments(path)
    except InputError as exc:
        raise error(f"{where} {key}", str(exc), key, section) from None


def _references(
    raw: Any, directory: Path, where: str, section: str, error: Any
) -> tuple[list[Path], list[list[str]]]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(r, str) and r for r in raw):
        raise error(
            f"{where} references",
            "must be a non-empty list of reference file paths (relative to the study "
            'file), e.g. ["data/dev.ref"]',
            "references",
            section,
        )
    paths = [(directory / r).resolve() for r in raw]
    texts = [_read(p, where, "references", section, error) for p in paths]
    try:
        check_same_length([(str(p), t) for p, t in zip(paths, texts, strict=True)])
    except InputError as exc:
        raise error(
            f"{where} references",
            f"reference streams of unequal length: {exc}",
            "references",
            section,
        ) from None
    return paths, texts


def _source(
    raw: Any,
    reads_source: bool,
    directory: Path,
    refs: list[Path],
    texts: list[list[str]],
    where: str,
    section: str,
    error: Any,
) -> Path | None:
    if raw is None:
        if reads_source:
            raise error(
                f"{where} source",
                'missing: this metric reads the source segments; give source = "SRC file"',
            )
        return None
    if not reads_source:
        raise error(
            f"{where} source",
            "is given but this metric does not read sources (comet does)",
            "source",
            section,
        )
    if not isinstance(raw, str) or not raw:
        raise error(
            f"{where} source",
            f"must be a file path relative to the study file, got {raw!r}",
            "source",
            section,
        )
    path = (directory / raw).resolve()
    segments = _read(path, where, "source", section, error)
    if len(segments) != len(texts[0]):
        raise error(
            f"{where} source",
            f"{path} has {len(segments)} lines but {refs[0]} has {len(texts[0])}; the "
            "source must be line-aligned with the references",
            "source",
            section,
        )
    texts.append(segments)
    return path


# ---------------------------------------------------------------------------- after a run


def score_outputs(spec: ComputedMetric, out_dir: Path) -> tuple[float, np.ndarray, str]:
    """``(corpus score, per-segment rows, signature)`` of one computed metric.

    Raises :class:`InputError` naming the run's output file when it is missing, unreadable
    or not line-aligned with the references: a run is never given a score of a file that
    does not match its test set.
    """
    import numpy as np

    metric = spec.build()
    path = out_dir / spec.outputs
    if not path.exists():
        raise InputError(
            f"{spec.name}: the run did not write its outputs file {path} (declared as "
            f"outputs = {spec.outputs!r}, one output segment per line)"
        )
    try:
        hyps = read_segments(path, allow_empty=True)
    except InputError as exc:
        raise InputError(f"{spec.name}: the run's outputs file {exc}") from None
    refs = [read_segments(p) for p in spec.references]
    sources = read_segments(spec.source) if spec.source else None
    if spec.texts and texts_digest([*refs, *([sources] if sources else [])]) != spec.texts:
        raise InputError(
            f"{spec.name}: the reference{' or source' if sources else ''} files "
            f"({', '.join(str(p) for p in spec.references)}) changed since the study was loaded; the run "
            "is not scored against other references than its code version's: run `evalab ablate run` again"
        )
    if len(hyps) != len(refs[0]):
        raise InputError(
            f"{spec.name}: {path} has {len(hyps)} lines but the references ({spec.references[0]}) "
            f"have {len(refs[0])}; the run must write one output segment per reference line"
        )
    if sources is not None:
        metric = metric.with_sources(sources)  # type: ignore[attr-defined]
    stats = metric.stats(hyps, refs)
    score = metric.aggregate(stats)
    return float(score.score), np.asarray(stats.rows, dtype=float), score.signature
