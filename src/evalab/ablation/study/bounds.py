"""Declared bounds (``[study] bounds``) checked against the values they bound.

The report clips t-based intervals to a metric's bounds and relies on percentile intervals
of per-example values staying inside them. A value outside its bounds (an accuracy returned
in percent while the study declares ``[0, 1]``) would then sit outside its own interval: the
run is refused when it is stored (``ablate run``, ``ablate import``), and a stored run that
breaks bounds declared later makes ``ablate report`` refuse, instead of printing intervals
around a number on another scale.

:func:`metric_bounds`, :func:`bounds_source` and :func:`min_effect` read a metric's bounds
and smallest effect of interest from a study, for the analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evalab.ablation.study.metric_keys import own_bounds
from evalab.stats.two_level import Bounds

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study

FIX = "return it on the scale of the bounds or correct [study] bounds"


def bounds_error(
    bounds: Mapping[str, Sequence[float]],
    metrics: Mapping[str, float],
    per_example: Mapping[str, Any],
) -> str:
    """The first value outside its bounds, as one sentence ('' when all are inside).

    ``per_example`` maps a metric to its per-example values (a mean-type metric: each value
    must be inside too, or the mean's percentile interval could leave the bounds).

    >>> bounds_error({"acc": [0, 1]}, {"acc": 75.0}, {})
    'acc = 75.0 is outside its declared bounds [0, 1]; return it on the scale of the bounds or correct [study] bounds'
    """
    for name, (low, high) in bounds.items():
        value = metrics.get(name)
        if value is not None and not low <= value <= high:
            return f"{name} = {value!r} is outside its declared bounds [{low:g}, {high:g}]; {FIX}"
        values = per_example.get(name)
        if values is not None and len(values):
            v = np.asarray(values, dtype=float)
            bad = np.flatnonzero((v < low) | (v > high))
            if bad.size:
                return (
                    f"per_example {name!r} value {int(bad[0]) + 1} is {float(v[bad[0]])!r}, outside the declared "
                    f"bounds [{low:g}, {high:g}] of {name}; {FIX}"
                )
    return ""


def stored_bounds_error(
    bounds: Mapping[str, Sequence[float]], runs: Iterable[Any], code_versions: Sequence[str]
) -> str:
    """The first ok run of one of ``code_versions`` whose stored value breaks the bounds ('' if none)."""
    for run in runs:
        if run.status != "ok" or run.code_version not in code_versions:
            continue
        error = bounds_error(bounds, run.metrics, {})
        if error:
            return f"run {'/'.join(run.rows)} seed {run.seed}: {error}"
    return ""


def metric_bounds(study: Study, metric: str) -> Bounds:
    """The metric's bounds: the study's ``bounds``, else a computed metric's own (chrF,
    BLEU: [0, 100]), else None."""
    b = study.bounds.get(metric) or own_bounds(study.computed.get(metric))
    return None if b is None else (float(b[0]), float(b[1]))


def bounds_source(study: Study, metric: str) -> str:
    """Where the metric's bounds come from: "study", "metric" (a computed metric's own) or ""."""
    if metric in study.bounds:
        return "study"
    return "metric" if metric_bounds(study, metric) is not None else ""


def min_effect(study: Study, metric: str) -> float | None:
    """The metric's smallest effect of interest (study key ``min_effect``), or None."""
    e = study.min_effect.get(metric)
    return None if e is None else float(e)
