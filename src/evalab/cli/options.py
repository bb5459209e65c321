"""Options that several commands share, declared once, and turning settings into metrics.

``--set KEY=VALUE`` applies to every selected metric that has setting ``KEY`` (an error if
none has it); ``--set METRIC.KEY=VALUE`` targets one metric. Values are parsed with the
type of the setting, so every setting of every metric is reachable from the command line.

The ``Annotated`` aliases below (:data:`Source`, :data:`OutFile`, :data:`Quiet`,
:data:`Format`, :data:`Layout`, :data:`LatexSplit`, ...) are the options spelled the same
way in several commands: a command declares ``out: OutFile = None`` and the flag, its help
text and its type live here once. Options that go together are a group, one field of a
request (:class:`LatexOptions`, :class:`FigureOptions`). The option factories
(:func:`ci_option`, :func:`n_samples_option`, :func:`seed_option`,
:func:`confidence_option`, :func:`segments_option`, :func:`layout_option`,
:func:`executor_option`, :func:`ray_address_option`, :func:`ray_timeout_option`) give one
spelling of each shared option; a command passes its own help text where what the option
does differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from evalab import numbers
from evalab.cli.output import PAGE_FORMATS, TABLE_FORMATS, TableView, check_format, format_option
from evalab.errors import SettingsError
from evalab.report.latex import LatexLayout

if TYPE_CHECKING:
    from evalab.metrics.base import Metric
    from evalab.metrics.ray_shards import RayCluster

#: the table layouts of a multi-system, multi-metric result (``--layout``)
LAYOUTS = ("wide", "long")


class _StrictNumber(click.ParamType[float | int]):
    """A numeric option's value read by :mod:`evalab.numbers` (click's ``FLOAT``/``INT`` use
    Python's ``float``/``int``, which read ``1_0`` as ten and ``inf`` as a number)."""

    def __init__(self, name: str, parse: Any) -> None:
        self.name = name
        self.parse = parse

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float | int:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value  # a default, not text a user gave
        try:
            parsed: float | int = self.parse(str(value))
        except numbers.NumberError as exc:
            integer = self.name == "integer" and exc.reason in ("syntax", "not-integer")
            why = "digits only, no underscores, point or exponent" if integer else None
            self.fail(
                f"{numbers.shown(exc.text)} is not a valid {self.name}"
                + (f" ({why})" if why else f": {numbers.REASONS[exc.reason]}"),
                param,
                ctx,
            )
        return parsed


#: the types every ``int``/``float`` option gets (:func:`strict_numbers`)
STRICT_TYPES: dict[click.ParamType[Any], click.ParamType[Any]] = {
    click.INT: _StrictNumber("integer", numbers.parse_int),
    click.FLOAT: _StrictNumber("float", numbers.parse_float),
}


def strict_numbers(command: click.Command) -> None:
    """Give every ``int``/``float`` option and argument of ``command`` and its subcommands
    the one number grammar of :mod:`evalab.numbers`."""
    for param in command.params:
        param.type = STRICT_TYPES.get(param.type, param.type)
    for sub in getattr(command, "commands", {}).values():
        strict_numbers(sub)


def ci_option(
    help: str = "Add a bootstrap percentile confidence interval (reported as mean ± half-width).",
) -> Any:
    """``--ci``: add a bootstrap confidence interval."""
    return typer.Option("--ci", help=help)


def n_samples_option(help: str) -> Any:
    """``-n/--n-samples``: resamples (or trials) of a bootstrap or randomization test."""
    return typer.Option("-n", "--n-samples", help=help)


def seed_option(help: str = "Seed of the --ci resampling (0 is a seed too).") -> Any:
    """``--seed``: the seed of the resampling."""
    return typer.Option("--seed", help=help)


def confidence_option(help: str = "Confidence level for --ci.") -> Any:
    """``--confidence``: the confidence level of the intervals."""
    return typer.Option("--confidence", help=help)


def segments_option(help: str) -> Any:
    """``--segments FILE``: per-segment values as JSON Lines."""
    return typer.Option("--segments", help=help)


def layout_option(
    help: str = "Table layout: wide (a row per system, a column per metric, the best in bold) or "
    "long (a row per system and metric). Default: wide for -f latex and -f markdown with "
    "several systems and metrics where it fits the page, else long.",
) -> Any:
    """``--layout wide|long`` of a multi-system, multi-metric result."""
    return typer.Option("--layout", metavar="[wide|long]", help=help, show_default=False)


#: where ``--executor`` computes: local processes, or Ray workers
EXECUTORS = ("local", "ray")


def executor_option(
    help: str = "Where -j N shards the per-segment statistics: local (processes on this machine) "
    "or ray (N Ray workers, one GPU each when the cluster has them; needs the ray extra).",
) -> Any:
    """``--executor local|ray``: processes on this machine, or workers of a Ray cluster."""
    return typer.Option("--executor", metavar="[local|ray]", help=help)


def ray_address_option(
    help: str = "With --executor ray: the cluster to join (host:port of its head, auto or "
    "ray://host:10001); "
    "default: a Ray instance on this machine, started for the command.",
) -> Any:
    """``--ray-address ADDRESS``: the Ray cluster to join."""
    return typer.Option("--ray-address", metavar="ADDRESS", help=help)


def ray_timeout_option(
    help: str = "With --executor ray: seconds to wait for the cluster at --ray-address before "
    "giving up with one line (default 30).",
) -> Any:
    """``--ray-timeout SECONDS``: how long joining the cluster may take."""
    return typer.Option("--ray-timeout", metavar="SECONDS", help=help)


# ---- the options several commands share, each declared once ------------------------------

#: ``--source SRC``: the source segments of the metrics that read them (COMET)
Source = Annotated[
    str | None,
    typer.Option(
        "--source", help="Source file, one segment a line, for metrics that read sources (comet)."
    ),
]
#: ``-i SYS1 SYS2 ...``: the system outputs of the commands that name them (``NAME=PATH``)
Inputs = Annotated[
    list[str],
    typer.Option(
        "-i", "--input", help="System output file(s): -i SYS1 SYS2 ... (NAME=PATH names a system)."
    ),
]
#: ``-r REF`` once per reference file (greedy where :data:`evalab.cli.app.GREEDY_OPTIONS` says)
RepeatedReferences = Annotated[
    list[str],
    typer.Option(
        "-r",
        "--reference",
        help="Reference file(s), one segment a line ('-' = stdin); several references: -r once per file. Not needed where every metric reads none (quality estimation from --source).",
    ),
]
#: ``--missing-ref none|empty-line``
MissingRef = Annotated[
    str,
    typer.Option(
        "--missing-ref",
        help="none: an empty reference line is an empty reference (as sacrebleu); empty-line: "
        "beyond the first -r file it means no reference for that segment.",
    ),
]
#: ``-m/--metrics`` of the commands that score texts
Metrics = Annotated[
    list[str],
    typer.Option(
        "-m",
        "--metrics",
        help="Metric name(s), any case: -m bleu chrf ... or -m BLEU,chrF (see `evalab metrics`).",
    ),
]
#: ``-s/--set`` metric settings
MetricSettings = Annotated[
    list[str],
    typer.Option(
        "-s",
        "--set",
        help="Metric setting KEY=VALUE (all metrics with KEY) or METRIC.KEY=VALUE. Repeatable.",
    ),
]
#: ``-j/--jobs``: processes computing per-segment statistics
ShardJobs = Annotated[
    int,
    typer.Option(
        "-j",
        "--jobs",
        help="Processes computing per-segment statistics (shards are summed: same numbers).",
    ),
]
#: ``--device`` of a torch model
Device = Annotated[str, typer.Option("--device", help="Torch device: cpu, cuda, cuda:1 ...")]
#: ``--scores FILE ...``: per-item score files (:func:`evalab.items.read_scores`)
ScoreFiles = Annotated[
    list[str],
    typer.Option(
        "--scores",
        help="Per-item score files, the first the baseline: --scores BASELINE A ... (lm-eval sample logs or run folders, inspect-ai logs, CSV/JSONL, `score --segments` output).",
    ),
]
#: ``--id-column``, ``--score-column``, ``--cluster-column`` of per-item score files
IdColumn = Annotated[
    str, typer.Option("--id-column", help="With --scores: the item id column of CSV/JSONL files.")
]
ScoreColumns = Annotated[
    list[str],
    typer.Option(
        "--score-column",
        help="With --scores: the score column(s) (default: score; for harness logs their per-item metrics).",
    ),
]
ClusterColumn = Annotated[
    str | None,
    typer.Option(
        "--cluster-column",
        help="With --scores: the column (or doc.FIELD, metadata.FIELD) grouping items into clusters, for clustered standard errors.",
    ),
]
#: ``-o/--out FILE``: the command's output, written atomically
OutFile = Annotated[
    str | None,
    typer.Option(
        "-o", "--out", help="Write the output to this file (atomically) instead of stdout."
    ),
]
#: ``-q/--quiet``: no progress bar
Quiet = Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")]
#: ``-w/--width N``: decimals shown
Width = Annotated[
    int | None,
    typer.Option("-w", "--width", help="Decimals shown (default 1 for 0-100 metrics, 4 for 0-1)."),
]
#: ``-f/--format`` of a table, and of a table or an HTML page
Format = Annotated[str, format_option()]
PageFormat = Annotated[str, format_option(PAGE_FORMATS)]
#: ``--layout``, ``--latex-split``, ``--latex-fragment``: how a table is laid out
Layout = Annotated[str | None, layout_option()]
LatexSplit = Annotated[
    bool | None,
    typer.Option(
        "--latex-split/--no-latex-split",
        help="With -f latex: --latex-split splits a table wider than one column of a two-column "
        "paper by columns into one-column 'part i of k' tables; --no-latex-split never splits "
        "(a table wider than both columns is shrunk to the text width). Default: one column, "
        "else both columns (table*), else split into parts as wide as both columns; never "
        "smaller than \\footnotesize. The choice is named in a % comment above each table.",
        show_default=False,
    ),
]
LatexFragment = Annotated[
    bool,
    typer.Option(
        "--latex-fragment",
        help="With -f latex: write each tabular alone (to \\input in a table float of your own), "
        "not a complete table float.",
    ),
]
LatexCaption = Annotated[
    str | None,
    typer.Option(
        "--latex-caption",
        metavar="TEXT",
        help="With -f latex: the caption of the (first) table; what its notation means follows it.",
    ),
]
LatexLabel = Annotated[
    str | None,
    typer.Option(
        "--latex-label",
        metavar="KEY",
        help="With -f latex: the \\label of the (first) table (the next ones: KEY-2, KEY-3, "
        "...; default tab:evalab-1, tab:evalab-2, ...).",
    ),
]
#: ``--executor``, ``--ray-address``, ``--ray-timeout``: where ``-j N`` shards run
Executor = Annotated[str, executor_option()]
RayAddress = Annotated[str | None, ray_address_option()]
RayTimeout = Annotated[float | None, ray_timeout_option()]


@dataclasses.dataclass(frozen=True)
class ShardOptions:
    """``-j/--jobs``, ``--executor``, ``--ray-address`` and ``--ray-timeout``: where the
    per-segment statistics are computed (an option group, as :class:`LatexOptions`)."""

    jobs: ShardJobs = 1
    executor: Executor = "local"
    ray_address: RayAddress = None
    ray_timeout: RayTimeout = None

    def cluster(self) -> RayCluster | None:
        """The Ray cluster of ``--executor ray`` (``None``: local processes), checked
        before any work (:func:`ray_cluster`)."""
        return ray_cluster(self.executor, self.ray_address, self.ray_timeout, shards=self.jobs)


#: ``--ci``, ``--seed``, ``--confidence`` with their common help texts
WithCI = Annotated[bool, ci_option()]
Seed = Annotated[int, seed_option()]
Confidence = Annotated[float, confidence_option()]
IntervalConfidence = Annotated[float, confidence_option("Confidence level of the intervals.")]
CISamples = Annotated[int, n_samples_option("Bootstrap resamples for --ci.")]
#: ``-n`` and ``--seed`` of a command whose intervals are always bootstrapped
BootstrapSamples = Annotated[int, n_samples_option("Bootstrap resamples.")]
BootstrapSeed = Annotated[int, seed_option("Seed of the bootstrap (0 is a seed too).")]


@dataclasses.dataclass(frozen=True)
class LatexOptions:
    """``--latex-split``, ``--latex-fragment``, ``--latex-caption`` and ``--latex-label``:
    how a LaTeX table is set (an option group: a command's request has it as one field,
    :func:`evalab.cli.app.command` puts its options in that field's place)."""

    latex_split: LatexSplit = None
    latex_fragment: LatexFragment = False
    latex_caption: LatexCaption = None
    latex_label: LatexLabel = None

    def layout(self, fmt: str) -> LatexLayout:
        """The LaTeX layout, each option refused with another ``-f`` (:func:`latex_layout`)."""
        return latex_layout(
            fmt, self.latex_split, self.latex_fragment, self.latex_caption, self.latex_label
        )


def table_view(
    fmt: str, layout: str | None, latex: LatexOptions, formats: Sequence[str] = TABLE_FORMATS
) -> TableView:
    """The :class:`TableView` of ``-f`` (one of ``formats``), ``--layout`` and the
    ``--latex-*`` options, each refused where ``-f`` has no use for it."""
    check_format(fmt, formats)
    check_layout(layout, fmt)
    return TableView(layout, latex.layout(fmt))


def given_options(request: Any, options: Sequence[tuple[str, str]]) -> list[str]:
    """The flags among ``(flag, field)`` whose value in ``request`` (a command's request
    dataclass) is not the field's default: the options the command line gave. A field of
    an option group is named with a dot (``figure_files.figures``)."""
    return [flag for flag, name in options if not _is_default(request, name)]


def _is_default(value: Any, name: str) -> bool:
    """Whether the field ``name`` (dotted: a field of a group) of ``value`` has its default."""
    head, _, rest = name.partition(".")
    if rest:
        return _is_default(getattr(value, head), rest)
    f = next(f for f in dataclasses.fields(value) if f.name == head)
    default = f.default_factory() if callable(f.default_factory) else f.default
    return bool(getattr(value, head) == default)


def check_width(width: int | None) -> None:
    """``-w/--width``: 0 to 16 decimals."""
    if width is not None and not 0 <= width <= 16:
        raise SettingsError(f"--width must be between 0 and 16, got {width}")


def ray_cluster(
    executor: str, address: str | None, timeout: float | None, *, shards: int | None = None
) -> RayCluster | None:
    """The Ray cluster of ``--executor ray`` (``None``: local processes), refused before any
    work where it cannot be used: Ray missing, a Ray option without it, or (for ``shards``,
    the ``-j N`` of per-segment statistics) fewer than two shards."""
    if executor not in EXECUTORS:
        raise SettingsError(f"--executor must be local or ray, got {executor!r}")
    if executor == "local":
        given = [
            o for o, v in (("--ray-address", address), ("--ray-timeout", timeout)) if v is not None
        ]
        if given:
            raise SettingsError(f"{given[0]} applies to --executor ray only")
        return None
    if timeout is not None and not timeout > 0:
        raise SettingsError(f"--ray-timeout must be a positive number of seconds, got {timeout:g}")
    if shards is not None and shards < 2:
        raise SettingsError(
            f"--executor ray shards over -j N Ray workers; -j {shards} is one process: give -j 2 or more"
        )
    from evalab.metrics.ray_shards import RayCluster, check_ray_installed

    check_ray_installed()
    return RayCluster(address) if timeout is None else RayCluster(address, timeout)


def latex_layout(
    fmt: str,
    split: bool | None,
    fragment: bool,
    caption: str | None = None,
    label: str | None = None,
) -> LatexLayout:
    """The LaTeX layout of ``--latex-split``/``--latex-fragment``/``--latex-caption``/
    ``--latex-label``, refused with another format (they would be dropped in silence)."""
    options = (
        ("--latex-split" if split else "--no-latex-split", split is not None),
        ("--latex-fragment", fragment),
        ("--latex-caption", caption is not None),
        ("--latex-label", label is not None),
    )
    given = [o for o, on in options if on]
    if given and fmt != "latex":
        raise SettingsError(f"{given[0]} applies to -f latex only, not -f {fmt}")
    return LatexLayout(split=split, fragment=fragment, caption=caption, label=label)


def check_layout(layout: str | None, fmt: str) -> None:
    """Refuse an unknown ``--layout``, or one given with ``-f json`` (which has no layout)."""
    if layout is None:
        return
    if layout not in LAYOUTS:
        raise SettingsError(f"--layout must be wide or long, got {layout!r}")
    if fmt in ("json", "html"):
        raise SettingsError(f"--layout applies to tables (table, markdown, latex), not -f {fmt}")


def canonical_metric_names(items: Sequence[str]) -> list[str]:
    """The registry names of ``-m`` items: case-insensitive, commas split (``-m BLEU,chrF``).

    An unknown name is left as given, for :func:`metric_class` to refuse with the known names.
    """
    from evalab.metrics.registry import METRICS

    by_lower = {name.lower(): name for name in METRICS}
    names = [part.strip() for item in items for part in item.split(",")]
    if any(not n for n in names):
        raise SettingsError(
            f"-m/--metrics {' '.join(items)!r}: an empty metric name (a stray comma?)"
        )
    return [by_lower.get(n.lower(), n) for n in names]


@dataclasses.dataclass(frozen=True)
class MetricSelection:
    """The ``-m`` metrics resolved once: each registry name (in the order given), its class
    and its ``--set`` settings. An unknown name, setting or value is refused as it is
    resolved; a name given twice when the metrics are built."""

    names: tuple[str, ...]
    classes: dict[str, type[Metric]]
    settings: dict[str, dict[str, Any]]

    @classmethod
    def parse(cls, items: Sequence[str], set_items: Sequence[str]) -> MetricSelection:
        """The metrics of ``-m`` items (any case, comma-separated lists) with ``--set`` items."""
        from evalab.metrics.registry import metric_class

        names = canonical_metric_names(items)
        classes = {name: metric_class(name) for name in names}
        return cls(tuple(names), classes, parse_set_options(set_items, classes))

    def build(self) -> dict[str, Metric]:
        """Every metric, built with its settings (a hub id in a model setting is resolved by
        the metric itself, models.hub)."""
        if len(set(self.names)) != len(self.names):
            raise SettingsError(f"metric listed twice in {list(self.names)}")
        return {name: self.classes[name](**self.settings[name]) for name in self.names}

    def read_paths(self) -> list[tuple[str, str]]:
        """``(--set METRIC.setting, path)`` of every file or folder the settings name."""
        return [
            pair
            for name in self.names
            for pair in settings_paths(self.classes[name], self.settings[name], f"--set {name}")
        ]


def settings_paths(
    cls: type[Metric], settings: Mapping[str, Any], label: str
) -> list[tuple[str, str]]:
    """``(label.setting, path)`` of every file or folder ``settings`` make a metric of ``cls`` read."""
    settings_class = cls.settings_class
    known = {k: v for k, v in settings.items() if k in settings_class.__dataclass_fields__}
    return [(f"{label}.{key}", path) for key, path in settings_class(**known).read_paths()]


def parse_set_options(
    items: Sequence[str], classes: Mapping[str, type[Metric]]
) -> dict[str, dict[str, Any]]:
    """Map each selected metric (name -> class) to its settings from ``--set`` items."""
    metric_names = list(classes)
    per_metric: dict[str, dict[str, Any]] = {name: {} for name in metric_names}
    given: dict[tuple[str, str], str] = {}  # (metric, key) -> the --set item that set it
    for item in items:
        if "=" not in item:
            raise SettingsError(f"--set {item!r}: expected KEY=VALUE or METRIC.KEY=VALUE")
        key, raw = item.split("=", 1)
        key = key.strip().replace("-", "_")
        targets: list[str]
        if "." in key:
            metric_name, key = key.rsplit(".", 1)
            metric_name = canonical_metric_names([metric_name])[0]
            if metric_name not in classes:
                raise SettingsError(
                    f"--set {item!r}: metric {metric_name!r} is not among the selected metrics "
                    f"({', '.join(metric_names)})"
                )
            targets = [metric_name]
        else:
            targets = [n for n, cls in classes.items() if key in cls.settings_class.setting_names()]
            if not targets:
                raise SettingsError(
                    f"--set {item!r}: no selected metric has a setting {key!r}; "
                    "see `evalab metrics` for each metric's settings"
                )
        for name in targets:
            value = classes[name].settings_class.parse_value(key, raw)
            earlier = given.setdefault((name, key), item)
            if earlier != item and per_metric[name][key] != value:
                # the last one silently winning would report a setting the user also overrode
                raise SettingsError(
                    f"--set {item!r}: {name}.{key} is already set by --set {earlier!r}; give it once"
                )
            per_metric[name][key] = value
    return per_metric


def model_items(model: str | None, names: Sequence[str]) -> list[str]:
    """``--set`` items for ``--model`` (one spelling in every command): every selected model metric."""
    from evalab.metrics.registry import METRICS, metric_class

    if model is None:
        return []
    readers = [
        n
        for n in canonical_metric_names(names)
        if n in METRICS
        and "model" in {f.name for f in dataclasses.fields(metric_class(n).settings_class)}
    ]
    if not readers:
        raise SettingsError(
            f"--model names the model of a model metric (bertscore, comet, perplexity, cross_entropy); "
            f"none is among -m {' '.join(names)}"
        )
    return [f"{n}.model={model}" for n in readers]


# ---- --figures DIR: every figure of a report as PDF, SVG and PNG -----------------------------


#: ``--figures DIR`` and ``--figure-width``
Figures = Annotated[
    str | None,
    typer.Option(
        "--figures",
        metavar="DIR",
        help="Also write every figure of the report into this folder (created if missing) as PDF, SVG "
        "and PNG at a paper width (--figure-width): vector, fonts embedded, the same figures as the "
        "HTML page. Needs the report extra (matplotlib).",
    ),
]
FigureWidth = Annotated[
    str,
    typer.Option(
        "--figure-width",
        metavar="WIDTH",
        help="The width of the --figures files: single (one column of a two-column paper, 3.3 in), "
        "double (the full text width, 6.9 in) or inches; text is 8 pt, so include them unscaled.",
    ),
]


@dataclasses.dataclass(frozen=True)
class FigureOptions:
    """``--figures DIR`` and ``--figure-width``: the report's figures as files (an option
    group, as :class:`LatexOptions`)."""

    figures: Figures = None
    figure_width: FigureWidth = "double"

    def check(self, inputs: Sequence[tuple[str, str | None]]) -> None:
        """Refuse the options before any work (:func:`check_figures`)."""
        check_figures(self.figures, inputs, self.figure_width)

    def write(self, figures: Sequence[Any], inputs: Sequence[tuple[str, str | None]]) -> None:
        """Write ``figures`` with ``--figures`` (:func:`write_figures_checked`)."""
        write_figures_checked(figures, self.figures, inputs, self.figure_width)


def check_figures(
    folder: str | None, inputs: Sequence[tuple[str, str | None]], width: str = "double"
) -> None:
    """Refuse ``--figures DIR`` before any work: matplotlib missing, a ``--figure-width``
    that is no width, or a folder that cannot be written (:func:`evalab.cli.output.check_out`
    rules)."""
    from evalab.report.figure_files import paper_width

    paper_width(width)
    if folder is None:
        return
    from evalab.cli.output import check_out
    from evalab.report.figure_files import require_matplotlib

    require_matplotlib()
    check_out(folder, inputs, option="--figures", folder=True)


def write_figures_checked(
    figures: Sequence[Any],
    folder: str | None,
    inputs: Sequence[tuple[str, str | None]],
    width: str = "double",
) -> None:
    """Write ``figures`` ``width`` wide (``--figure-width``) into ``folder`` once no file they
    go to is an input (``inputs``, the report's ``-o`` among them): every file is checked
    before the first is written."""
    if folder is None:
        return
    from evalab.cli.output import check_out
    from evalab.report.figure_files import figure_paths, paper_width, write_figures

    for paths in figure_paths(figures, folder):
        for path in paths:
            check_out(str(path), inputs, option="--figures")
    write_figures(figures, folder, paper_width(width))
