"""Test-set intervals of a study's rows, from their runs' per-example data.

For one metric, every row whose finished runs all have per-example data (and whose
comparison row's runs do too) gets its value's interval over test examples, and Δ's
intervals over test examples and over seeds and examples with the two-level p-value
(``stats/two_level.py`` says how each is built). All runs of the metric are scored on the
same bootstrap resamples of the test examples, once: rows are paired across examples.

The result is a :class:`TestSetFields` per row label (``analyze.py`` puts them in the
rows' MetricStats), plus a :class:`~evalab.ablation.store.example_refusals.SizeMismatch` per row that could
not get them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from evalab.ablation.store.example_refusals import SizeMismatch
from evalab.ablation.store.per_example import ExampleStats
from evalab.stats.two_level import (
    Bounds,
    ResampledRuns,
    example_delta,
    example_value,
    resample_runs,
    two_level_delta,
)


@dataclass(frozen=True)
class Comparison:
    """One row's finished runs with per-example data, by seed, and those of the row its Δ is
    taken to (None for the base row). ``paired``: Δ is paired by seed."""

    label: str
    runs: dict[int, ExampleStats]
    vs: dict[int, ExampleStats] | None
    paired: bool


@dataclass(frozen=True)
class TestSetFields:
    """A row's intervals over test examples: its value's (seeds pooled), and Δ's over test
    examples and over seeds and examples with the two-level p (None for the base row, or
    when no seed pairs)."""

    n_examples: int
    mean_examples_low: float
    mean_examples_high: float
    examples_low: float | None = None
    examples_high: float | None = None
    both_low: float | None = None
    both_high: float | None = None
    p_both: float | None = None


def example_fields(
    metric: str,
    comparisons: Sequence[Comparison],
    *,
    confidence: float,
    resamples: int,
    seed: int,
    bounds: Bounds,
) -> tuple[dict[str, TestSetFields], list[SizeMismatch]]:
    """The test-set fields of ``metric`` per row label, and the rows refused."""
    refused: list[SizeMismatch] = []
    usable: list[Comparison] = []
    for c in comparisons:
        sizes = {es.n_examples for es in c.runs.values()} | {
            es.n_examples for es in (c.vs or {}).values()
        }
        if len(sizes) > 1:
            refused.append(SizeMismatch(metric, c.label, tuple(sorted(sizes))))
        else:
            usable.append(c)
    resampled = _resample_all(usable, resamples, seed)
    fields: dict[str, TestSetFields] = {}
    for c in usable:
        fields[c.label] = _row_fields(c, resampled[_key(c)], confidence=confidence, bounds=bounds)
    return fields, refused


def _key(c: Comparison) -> int:
    return next(iter(c.runs.values())).n_examples


def _resample_all(
    comparisons: Sequence[Comparison], resamples: int, seed: int
) -> dict[int, dict[int, ResampledRuns]]:
    """Every distinct run, scored once on the resamples of its test-set size: by size, then
    by ``id`` of the run's ExampleStats (a run shared by two rows is scored once)."""
    by_size: dict[int, dict[int, ExampleStats]] = {}
    for c in comparisons:
        for es in [*c.runs.values(), *(c.vs or {}).values()]:
            by_size.setdefault(es.n_examples, {})[id(es)] = es
    out: dict[int, dict[int, ResampledRuns]] = {}
    for n, runs in by_size.items():
        ids = list(runs)
        all_runs = resample_runs([runs[i] for i in ids], resamples, seed)
        out[n] = {i: all_runs.take([j]) for j, i in enumerate(ids)}
    return out


def _stack(runs: dict[int, ResampledRuns], stats: list[ExampleStats]) -> ResampledRuns:
    parts = [runs[id(es)] for es in stats]
    return ResampledRuns(
        np.concatenate([p.points for p in parts]), np.concatenate([p.values for p in parts])
    )


def _row_fields(
    c: Comparison, runs: dict[int, ResampledRuns], *, confidence: float, bounds: Bounds
) -> TestSetFields:
    row = _stack(runs, list(c.runs.values()))
    value = example_value(row, confidence, bounds)
    out = TestSetFields(_key(c), value.low, value.high)
    if c.vs is None:
        return out
    if c.paired:  # matched pairs: the seeds both rows finished, in the same order
        seeds = [s for s in c.runs if s in c.vs]
        row, base = _stack(runs, [c.runs[s] for s in seeds]), _stack(runs, [c.vs[s] for s in seeds])
    else:
        base = _stack(runs, list(c.vs.values()))
    if not row.points.size or not base.points.size:
        return out
    delta = example_delta(row, base, confidence, bounds)
    out = replace(out, examples_low=delta.low, examples_high=delta.high)
    both = two_level_delta(row, base, paired=c.paired, confidence=confidence, bounds=bounds)
    if both is not None:
        out = replace(out, both_low=both.ci.low, both_high=both.ci.high, p_both=both.p_value)
    return out
