"""The ``[study]`` keys about metrics: ``metrics`` and ``[metrics.NAME]``, ``primary``'s
companions ``higher_is_better``, ``bounds``, ``min_effect`` and ``definitions``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evalab.ablation.contract.codeversion import (
    DigestCache,
)
from evalab.ablation.contract.computed import ComputedMetric, parse_tables
from evalab.ablation.contract.keys import is_number
from evalab.ablation.study.where import Where

#: keys of a run's result (artifacts, per_example) and columns of `ablate import` (row,
#: config, seed, outputs): a metric under one of these names would be taken for them
RESERVED_METRIC_NAMES = frozenset({"artifacts", "per_example", "row", "config", "seed", "outputs"})


def parse_metrics(
    st: dict[str, Any], tables: Any, directory: Path, w: Where, cache: DigestCache
) -> tuple[list[str], dict[str, ComputedMetric]]:
    """The study's metrics: those runs return (``[study] metrics``), then those evalab
    computes from the runs' output files (``[metrics.NAME]`` tables)."""
    computed = parse_tables(tables, directory, w.error, cache)
    returned = st.get("metrics", [] if computed else None)
    if returned is None:
        raise w.error(
            "[study] metrics",
            "missing (list of metric names the run returns; or declare [metrics.NAME] "
            "tables that evalab computes from each run's output file)",
        )
    if (
        not isinstance(returned, list)
        or not all(isinstance(m, str) and m for m in returned)
        or not (returned or computed)
    ):
        raise w.error(
            "[study] metrics", "must be a non-empty list of metric names", "metrics", "study"
        )
    if len(set(returned)) != len(returned):
        raise w.error("[study] metrics", f"has duplicates: {returned!r}", "metrics", "study")
    for m in [*returned, *computed]:
        where, key = ("[study] metrics", "metrics") if m in returned else (f"[metrics.{m!r}]", None)
        if not m.strip() or m != m.strip() or not m.isprintable():
            # it names a column of every report and a field of status lines and CSV headers
            raise w.error(
                where,
                f"{m!r} is no metric name: give printable text without leading or trailing spaces "
                "(e.g. bleu)",
                key,
                "study",
            )
        if m in RESERVED_METRIC_NAMES or m.startswith("config."):
            raise w.error(
                where,
                f"{m!r} cannot name a metric: a run's result and an imported record use it for "
                f"something else ({', '.join(sorted(RESERVED_METRIC_NAMES))}, config.KEY); rename it",
                key,
                "study",
            )
    both = [m for m in returned if m in computed]
    if both:
        raise w.error(
            "[study] metrics",
            f"{both[0]!r} is also a [metrics.{both[0]}] table; a metric is either returned "
            "by the run (listed here) or computed by evalab from its outputs (the table), not both",
            "metrics",
            "study",
        )
    return [*returned, *computed], computed


def parse_directions(
    hib: Any, metrics: list[str], computed: dict[str, ComputedMetric], w: Where
) -> dict[str, bool]:
    """``higher_is_better`` per metric: as given, else the registry metric's own direction
    for a computed metric (TER, WER: lower is better), else True."""
    if isinstance(hib, bool):
        hib = dict.fromkeys(metrics, hib)
    hib = w.study_table(hib, "higher_is_better", "{ acc = true, loss = false }")
    for m, v in hib.items():
        _metric_name(m, metrics, "higher_is_better", w)
        if not isinstance(v, bool):
            raise w.error(
                "[study] higher_is_better",
                f"{m} must be true or false, got {v!r}",
                "higher_is_better",
                "study",
            )
    out = {}
    for m in metrics:
        default = (
            bool(getattr(computed[m].build(), "higher_is_better", True)) if m in computed else True
        )
        out[m] = bool(hib.get(m, default))
        if m in computed and out[m] != default:
            # a computed metric's direction is its registry metric's: the other one would
            # call every worse row better
            raise w.error(
                "[study] higher_is_better",
                f"makes {m} ({computed[m].metric}) "
                f"{'higher' if out[m] else 'lower'}-is-better, but {computed[m].metric} is "
                f"{'higher' if default else 'lower'}-is-better; leave computed metrics out of it (a table "
                "such as { acc = true } names the returned ones)",
                "higher_is_better",
                "study",
            )
    return out


def own_bounds(spec: ComputedMetric | None) -> tuple[float, float] | None:
    """The interval every score of a computed metric lies in (its registry metric's)."""
    if spec is None:
        return None
    from evalab.metrics.registry import metric_class

    cls = metric_class(spec.metric)
    return cls.bounds if cls.bounds is not None else (0.0, float(cls.scale))


def parse_study_options(
    st: dict[str, Any],
    metrics: list[str],
    primary: str,
    computed: dict[str, ComputedMetric],
    w: Where,
) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """``bounds`` and ``min_effect`` (a bare number is the primary's) of the [study] values."""
    return _bounds(st["bounds"], metrics, computed, w), _min_effect(
        st["min_effect"], metrics, primary, w
    )


def _metric_name(m: str, metrics: list[str], key: str, w: Where) -> None:
    if m not in metrics:
        raise w.error(
            f"[study] {key}", f"names {m!r}, which is not in metrics {metrics!r}", key, "study"
        )


def _bounds(
    raw: Any, metrics: list[str], computed: dict[str, ComputedMetric], w: Where
) -> dict[str, tuple[float, float]]:
    raw = w.study_table(raw, "bounds", "{ acc = [0, 100] }")
    bounds: dict[str, tuple[float, float]] = {}
    for m, b in raw.items():
        _metric_name(m, metrics, "bounds", w)
        ok = (
            isinstance(b, list)
            and len(b) == 2
            and all(is_number(x) and math.isfinite(x) for x in b)
        )
        if not ok or not b[0] < b[1]:
            raise w.error(
                "[study] bounds",
                f"{m} must be [low, high] with finite numbers low < high, got {b!r}",
                "bounds",
                "study",
            )
        bounds[m] = (float(b[0]), float(b[1]))
        own = own_bounds(computed.get(m))
        if own is not None and not (b[0] <= own[0] and own[1] <= b[1]):
            # every run would be trained, then fail the bounds check with its real score
            raise w.error(
                "[study] bounds",
                f"{m} must contain [{own[0]:g}, {own[1]:g}], where every "
                f"{computed[m].metric} score lies; got {b!r} (leave it out: its intervals stay there anyway)",
                "bounds",
                "study",
            )
    return bounds


def _min_effect(raw: Any, metrics: list[str], primary: str, w: Where) -> dict[str, float]:
    if is_number(raw):
        raw = {primary: raw}
    if not isinstance(raw, dict):
        raise w.error(
            "[study] min_effect",
            "must be a number (for the primary metric) or a table such as { acc = 0.5 }",
            "min_effect",
            "study",
        )
    min_effect: dict[str, float] = {}
    for m, x in raw.items():
        _metric_name(m, metrics, "min_effect", w)
        if not is_number(x) or not math.isfinite(x) or x <= 0:
            raise w.error(
                "[study] min_effect",
                f"{m} must be a positive number (on the metric's scale), got {x!r}",
                "min_effect",
                "study",
            )
        min_effect[m] = float(x)
    return min_effect


def parse_definitions(
    raw: Any, metrics: list[str], computed: dict[str, ComputedMetric], w: Where
) -> dict[str, str]:
    """``[study] definitions``: metric -> what it measures (a computed metric has its signature)."""
    if not isinstance(raw, dict) or not all(isinstance(v, str) and v.strip() for v in raw.values()):
        raise w.error(
            "[study] definitions",
            'must be a table such as { acc = "share of exact matches, in %" }',
            "definitions",
            "study",
        )
    for m in raw:
        if m not in metrics or m in computed:
            why = (
                "is computed by evalab: its signature defines it"
                if m in computed
                else f"is not in metrics {metrics!r}"
            )
            raise w.error(
                "[study] definitions", f"names {m!r}, which {why}", "definitions", "study"
            )
    return dict(raw)
