"""One way to name a metric of a per-item file, whatever wrote it.

A score set's metric is named ``task:metric,filter`` for lm-evaluation-harness (the
harness's own ``metric,filter``, after the task; no ``,filter`` for the filter ``none``),
``task:scorer`` for inspect-ai, the metric for ``evalab score --segments`` output, and the
column for a plain table. ``--score-column`` takes any of the names a user has seen:

* the name evalab prints: ``gsm8k:exact_match,strict-match``;
* the harness's name, without the task: ``exact_match,strict-match`` (``acc,none`` is
  ``acc``);
* the bare metric: ``exact_match``, every filter of it (each compared on its own).

Case does not matter (``chrF`` names ``chrf``).

>>> metric_matches("gsm8k:exact_match,strict-match", "exact_match,strict-match")
True
>>> metric_matches("gsm8k:exact_match,strict-match", "exact_match")
True
>>> metric_matches("gsm8k:exact_match,strict-match", "exact_match,flexible-extract")
False
>>> metric_matches("arc_easy:acc", "acc,none")
True
>>> metric_matches("chrf", "chrF")
True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from evalab.errors import InputError, Setting
from evalab.items.table import ScoreSet

__all__ = ["metric_matches", "select_metrics", "unknown_metric"]

_NO_FILTER = ",none"


def metric_matches(metric: str, name: str) -> bool:
    """Whether ``name`` (as ``--score-column`` gives it) names the score set ``metric``
    (in any case, as evalab's metric names are given)."""
    metric, name = metric.casefold(), name.casefold().removesuffix(_NO_FILTER)
    if name == metric:
        return True
    task, colon, rest = metric.partition(":")
    if not colon:
        return False
    if ":" in name:  # a task named: the task must be this one
        wanted_task, _, name = name.partition(":")
        if wanted_task != task:
            return False
    return name in (rest, rest.split(",", 1)[0])


def unknown_metric(path: str, name: str, have: Sequence[str]) -> InputError:
    """The refusal of a ``--score-column`` name that names none of ``have``."""
    return InputError(
        f"{path}: no metric {name!r}; its metrics are {', '.join(have)} (",
        Setting("Columns.scores"),
        " takes these names, the part after 'task:', or the metric without ',filter')",
    )


def _task(metric: str) -> str | None:
    task, colon, _ = metric.partition(":")
    return task if colon else None


def select_metrics(sets: list[ScoreSet], names: Sequence[str], path: str) -> list[ScoreSet]:
    """The score sets of ``path`` that ``names`` name (all of them without names).

    A name that names none is an :class:`InputError` listing the names that exist; a task
    (of a multi-task run) without any named metric is left out with a warning.
    """
    if not names:
        return sets
    chosen = [s for s in sets if any(metric_matches(s.metric, n) for n in names)]
    have = list(dict.fromkeys(s.metric for s in sets))
    for name in names:
        if not any(metric_matches(m, name) for m in have):
            raise unknown_metric(path, name, have)
    tasks = dict.fromkeys(t for t in map(_task, have) if t is not None)
    left_out = [t for t in tasks if all(_task(s.metric) != t for s in chosen)]
    if left_out:
        warnings.warn(
            f"{path}: task(s) {', '.join(left_out)} have no {' or '.join(names)}; compared on "
            "the other tasks",
            UserWarning,
            stacklevel=2,
        )
    return chosen
