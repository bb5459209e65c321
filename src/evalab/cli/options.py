"""Options that several commands share, declared once, and turning settings into metrics.

``--set KEY=VALUE`` applies to every selected metric that has setting ``KEY`` (an error if
none has it); ``--set METRIC.KEY=VALUE`` targets one metric. Values are parsed with the
type of the setting, so every setting of every metric is reachable from the command line.

The option factories (:func:`ci_option`, :func:`n_samples_option`, :func:`seed_option`,
:func:`confidence_option`, :func:`segments_option`; :func:`layout_option`,
:func:`latex_split_option`, :func:`latex_fragment_option`, :func:`latex_caption_option`,
:func:`latex_label_option`; :func:`executor_option`,
:func:`ray_address_option`, :func:`ray_timeout_option`) give one spelling of each shared
option; a command passes its own help text where what the option does differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click
import typer

from evalab import numbers
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


def latex_split_option() -> Any:
    """``--latex-split/--no-latex-split``: how a LaTeX table wider than a column is set."""
    return typer.Option(
        "--latex-split/--no-latex-split",
        help="With -f latex: --latex-split splits a table wider than one column of a two-column "
        "paper by columns into one-column 'part i of k' tables; --no-latex-split never splits "
        "(a table wider than both columns is shrunk to the text width). Default: one column, "
        "else both columns (table*), else split into parts as wide as both columns; never "
        "smaller than \\footnotesize. The choice is named in a % comment above each table.",
        show_default=False,
    )


def latex_caption_option() -> Any:
    """``--latex-caption TEXT``: the caption of the (first) LaTeX table."""
    return typer.Option(
        "--latex-caption",
        metavar="TEXT",
        help="With -f latex: the caption of the (first) table; what its notation means follows it.",
    )


def latex_label_option() -> Any:
    """``--latex-label KEY``: the ``\\label`` of the (first) LaTeX table."""
    return typer.Option(
        "--latex-label",
        metavar="KEY",
        help="With -f latex: the \\label of the (first) table (the next ones: KEY-2, KEY-3, "
        "...; default tab:evalab-1, tab:evalab-2, ...).",
    )


def latex_fragment_option() -> Any:
    """``--latex-fragment``: the ``tabular`` alone, to ``\\input`` in a float of one's own."""
    return typer.Option(
        "--latex-fragment",
        help="With -f latex: write each tabular alone (to \\input in a table float of your own), "
        "not a complete table float.",
    )


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


def parse_set_options(
    items: Sequence[str], metric_names: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Map each metric name to its settings from ``--set`` items."""
    per_metric: dict[str, dict[str, Any]] = {name: {} for name in metric_names}
    given: dict[tuple[str, str], str] = {}  # (metric, key) -> the --set item that set it
    from evalab.metrics.registry import metric_class

    classes = {name: metric_class(name) for name in metric_names}
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


def build_metrics(names: Sequence[str], set_items: Sequence[str]) -> dict[str, Metric]:
    """Instantiate the named metrics with the ``--set`` settings (unknown names fail early)."""
    names = canonical_metric_names(names)
    if len(set(names)) != len(names):
        raise SettingsError(f"metric listed twice in {list(names)}")
    settings = parse_set_options(set_items, names)
    # a hub id in a model setting is resolved by the metric itself (models.hub)
    from evalab.metrics.registry import metric_class

    return {name: metric_class(name)(**settings[name]) for name in names}


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


# ---- --figures DIR: every figure of a report as PDF and SVG ---------------------------------


def figures_option() -> Any:
    """The ``--figures DIR`` option (one spelling and help text in every command that has it)."""
    import typer

    return typer.Option(
        "--figures",
        metavar="DIR",
        help="Also write every figure of the report into this folder (created if missing) as PDF and SVG: "
        "vector, fonts embedded, the same figures as the HTML page. Needs the report extra (matplotlib).",
    )


def check_figures(folder: str | None, inputs: Sequence[tuple[str, str | None]]) -> None:
    """Refuse ``--figures DIR`` before any work: matplotlib missing, or a folder that cannot
    be written (:func:`evalab.cli.output.check_out` rules)."""
    if folder is None:
        return
    from evalab.cli.output import check_out
    from evalab.report.figure_files import require_matplotlib

    require_matplotlib()
    check_out(folder, inputs, option="--figures", folder=True)


def write_figures_checked(
    figures: Sequence[Any], folder: str | None, inputs: Sequence[tuple[str, str | None]]
) -> None:
    """Write ``figures`` into ``folder`` once no file they go to is an input (``inputs``, the
    report's ``-o`` among them): every file is checked before the first is written."""
    if folder is None:
        return
    from evalab.cli.output import check_out
    from evalab.report.figure_files import figure_paths, write_figures

    for paths in figure_paths(figures, folder):
        for path in paths:
            check_out(str(path), inputs, option="--figures")
    write_figures(figures, folder)
