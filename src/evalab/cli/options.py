"""Turning command-line settings into metrics.

``--set KEY=VALUE`` applies to every selected metric that has setting ``KEY`` (an error if
none has it); ``--set METRIC.KEY=VALUE`` targets one metric. Values are parsed with the
type of the setting, so every setting of every metric is reachable from the command line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from evalab.errors import SettingsError
from evalab.metrics.base import Metric
from evalab.metrics.registry import METRICS, metric_class


def canonical_metric_names(items: Sequence[str]) -> list[str]:
    """The registry names of ``-m`` items: case-insensitive, commas split (``-m BLEU,chrF``).

    An unknown name is left as given, for :func:`metric_class` to refuse with the known names.
    """
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
    return {name: metric_class(name)(**settings[name]) for name in names}


def model_items(model: str | None, names: Sequence[str]) -> list[str]:
    """``--set`` items for ``--model`` (one spelling in every command): every selected model metric."""
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
