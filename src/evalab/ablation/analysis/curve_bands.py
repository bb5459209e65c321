"""Learning curves per row of a study: the runs' stored curves banded over their seeds.

At each step logged by any seed of a row: the mean of the seeds that logged it, the lowest
and the highest of their values, and how many they are (after a seed stopped early, the
band is over the seeds that went on).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.ablation.contract.curves import (
    Curve,
    CurvesEntry,
    CurveSettings,
    has_curves,
    load_curves,
)
from evalab.ablation.plan.runs import plan_runs
from evalab.ablation.store.run_store import RunStore, StoredRun

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Band:
    """A row's curve over its seeds: at each step logged by any seed, the mean of the seeds
    that logged it, their lowest and highest value, and how many seeds those are."""

    steps: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    seeds: np.ndarray


def band(curves: list[Curve]) -> Band:
    """The :class:`Band` of one row's curves (one per seed)."""
    import numpy as np

    first = curves[0].steps
    if all(len(c.steps) == len(first) and np.array_equal(c.steps, first) for c in curves[1:]):
        stacked = np.vstack(
            [c.values for c in curves]
        )  # every seed logged the same steps: the common case
        return Band(
            first,
            stacked.mean(axis=0),
            stacked.min(axis=0),
            stacked.max(axis=0),
            np.full(len(first), len(curves)),
        )
    steps = np.concatenate([c.steps for c in curves])
    values = np.concatenate([c.values for c in curves])
    order = np.argsort(steps, kind="stable")
    steps, values = steps[order], values[order]
    uniq, starts = np.unique(steps, return_index=True)
    counts = np.diff(np.append(starts, len(steps)))
    return Band(
        uniq,
        np.add.reduceat(values, starts) / counts,
        np.minimum.reduceat(values, starts),
        np.maximum.reduceat(values, starts),
        counts,
    )


def thinned(b: Band, points: int = 400) -> Band:
    """At most ``points`` points to draw: consecutive steps in equal bins, each bin its last
    step, the mean of its means and the widest band."""
    import numpy as np

    n = len(b.steps)
    if n <= points:
        return b
    edges = np.linspace(0, n, points + 1).astype(int)
    starts = edges[:-1]
    counts = np.diff(edges)
    return Band(
        b.steps[edges[1:] - 1],
        np.add.reduceat(b.mean, starts) / counts,
        np.minimum.reduceat(b.low, starts),
        np.maximum.reduceat(b.high, starts),
        np.minimum.reduceat(b.seeds, starts),
    )


@dataclass(frozen=True)
class RowCurves:
    """The bands of one set of runs (a row, or rows that share their runs: ``labels``)."""

    labels: tuple[str, ...]
    seeds: int
    bands: dict[str, Band]
    selected_steps: tuple[int, ...]  # the step selected per seed (select = min/max)
    stopped_at: tuple[int | None, ...]  # the step early stopping held per seed (stop_when)


@dataclass(frozen=True)
class StudyCurves:
    """Every row's curves, and the study's rules."""

    settings: CurveSettings
    metrics: tuple[str, ...]
    rows: tuple[RowCurves, ...]
    steps: int  # logged steps in all (every run, every metric)


def study_curves(study: Any, db_path: str | Path | None = None) -> StudyCurves:
    """The curves of every ok run of the study's current code version, per row."""
    with RunStore(db_path, create=False) as store:
        if not has_curves(store.conn, study.name):  # no run logged one: the runs are not read
            return StudyCurves(study.curves, (), (), 0)
        runs = {
            k: r
            for k, r in store.runs(study.name).items()
            if r.status == "ok" and r.code_version in study.code_versions
        }
        stored = load_curves(store.conn, study.name, list(runs))
    groups: dict[tuple[str, ...], list[str]] = {}
    for run in plan_runs(study):
        if run.key in stored:
            groups.setdefault(tuple(run.rows), []).append(run.key)
    rows = []
    for labels, keys in groups.items():
        names = sorted({m for k in keys for m in stored[k]})
        art = [c for k in keys if (c := _curves_entry(runs[k])) is not None]
        rows.append(
            RowCurves(
                labels,
                len(keys),
                {m: band([stored[k][m] for k in keys if m in stored[k]]) for m in names},
                tuple(a.selected_step for a in art if a.selected_step is not None),
                tuple(a.stopped_at for a in art if a.watched),
            )
        )
    metrics = tuple(sorted({m for r in rows for m in r.bands}))
    total = sum(len(c.steps) for k in stored for c in stored[k].values())
    return StudyCurves(study.curves, metrics, tuple(rows), total)


def _curves_entry(run: StoredRun) -> CurvesEntry | None:
    return run.artifacts.curves if run.artifacts is not None else None
