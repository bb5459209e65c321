"""Test-set uncertainty of ablation rows: a bootstrap over test examples, and a two-level
bootstrap over seeds and test examples (Bouthillier et al. 2021, "Accounting for variance
in machine learning benchmarks").

A row's value is the mean, over its seeds, of each seed's run scored on the test set. Every
run of a study is scored on the *same* test examples, so one bootstrap resample of the
examples (a row of counts ``[n_examples]``) is applied to every run of every row:

* **over test examples** (seeds pooled): in resample ``b`` each seed's run is scored on the
  resampled examples and the row's value is the mean over its seeds; Δ*_b is that value
  minus the comparison row's on the *same* resample (a paired bootstrap across rows, as in
  Koehn 2004). The interval is the percentile interval of those resamples. It says how
  much the numbers would move on another test set of the same size, with these trained
  models; it exists with a single seed.
* **over seeds and examples** (two-level bootstrap): in resample ``b`` the seeds of each row
  are also drawn with replacement (the same draw for both rows when seeds are paired), then
  scored on resample ``b`` of the examples. A bootstrap of a handful of seeds understates
  their spread, so the seed level is rescaled: each draw's deviation from the resample's
  seed mean is multiplied by ``sqrt(S / (S - 1))``, which makes its variance the unbiased
  ``s² / S`` (Davison & Hinkley 1997, §3.8). The two-level standard error ``se`` is the
  standard deviation of Δ*; the interval is ``Δ ± t(ν) · se`` and the p-value of Δ ≠ 0 is
  ``P(|T_ν| >= |Δ| / se)``, with ``ν`` the seeds' degrees of freedom (Welch–Satterthwaite
  unpaired, ``S - 1`` paired): the seed level is what a few seeds estimate poorly, and the
  test-set level (thousands of examples) could only raise ν, so ν is the conservative
  choice. A shifted-percentile p of a 3–5-seed bootstrap would be too small for the same
  reason. The interval and the p-value agree: p < α exactly when the (unclipped) interval
  excludes 0. With one seed in a row the seed level is unknown and there is no two-level
  result.

Intervals respect declared bounds: percentile intervals of a bounded value stay inside its
bounds; t-based ones are clipped to them (Δ = row − base to ``[lo - hi, hi - lo]``).

Nothing here knows about studies: a run is a callable mapping example counts ``[B, n]`` to
its values ``[B]`` (``ExampleStats.resampled`` of the ablation layer).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evalab.errors import InputError
from evalab.stats.bootstrap import percentile_interval
from evalab.stats.resampling import bootstrap_counts
from evalab.stats.seed_stats import t_ppf, t_sf2, welch

__all__ = [
    "Bounds",
    "Interval",
    "ResampledRuns",
    "RunScorer",
    "TwoLevel",
    "clip",
    "delta_bounds",
    "example_delta",
    "example_value",
    "resample_runs",
    "two_level_delta",
]

#: one run's values under resamples of the test examples: counts ``[B, n]`` -> ``[B]``
RunScorer = Callable[[np.ndarray], np.ndarray]

#: declared bounds of a metric ``(low, high)``, or None when unbounded
Bounds = tuple[float, float] | None


@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class TwoLevel:
    """Δ over seeds and test examples: interval, bootstrap standard error, t's df, p."""

    delta: Interval
    se: float
    df: float
    p: float


@dataclass(frozen=True)
class ResampledRuns:
    """Runs scored on the full test set (``points [n_runs]``) and on the same ``B``
    bootstrap resamples of it (``values [n_runs, B]``)."""

    points: np.ndarray
    values: np.ndarray

    def take(self, index: Sequence[int]) -> ResampledRuns:
        """The runs at ``index`` (one row's seeds, in the order given)."""
        i = np.asarray(index, dtype=np.int64)
        return ResampledRuns(self.points[i], self.values[i])


def clip(low: float, high: float, bounds: Bounds) -> tuple[float, float]:
    """``(low, high)`` clipped to ``bounds`` (unchanged when unbounded; NaN stays NaN)."""
    if bounds is None:
        return low, high
    lo, hi = bounds
    return (float(min(max(low, lo), hi)) if math.isfinite(low) else low,
            float(min(max(high, lo), hi)) if math.isfinite(high) else high)


def delta_bounds(bounds: Bounds) -> Bounds:
    """Bounds of a difference of two values within ``bounds``: ``[lo - hi, hi - lo]``."""
    return None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])


def resample_runs(runs: Sequence[RunScorer], n_examples: int, resamples: int, seed: int) -> ResampledRuns:
    """Score every run on the full test set and on the same ``resamples`` bootstrap
    resamples of its ``n_examples`` examples (``stats.resampling.bootstrap_counts``,
    generated in memory-bounded chunks, each scored for every run: a matrix product per run)."""
    if n_examples < 1:
        raise InputError("resampling test examples needs at least one example")
    full = np.ones((1, n_examples))
    points = np.array([float(np.asarray(run(full)).reshape(-1)[0]) for run in runs])
    chunks: list[np.ndarray] = []
    for counts in bootstrap_counts(n_examples, resamples, seed):
        chunks.append(np.stack([np.asarray(run(counts), dtype=float).reshape(-1) for run in runs]))
    values = np.concatenate(chunks, axis=1) if runs else np.empty((0, resamples))
    return ResampledRuns(points, values)


def example_value(row: ResampledRuns, confidence: float, bounds: Bounds = None) -> Interval:
    """The row's value (mean over seeds) with its percentile interval over test examples."""
    _, low, high = percentile_interval(row.values.mean(axis=0), confidence)
    return Interval(float(row.points.mean()), *clip(low, high, bounds))


def example_delta(row: ResampledRuns, base: ResampledRuns, confidence: float, bounds: Bounds = None) -> Interval:
    """Δ = row − base (means over each row's seeds) with its paired percentile interval over
    test examples: both rows on the same resamples."""
    draws = row.values.mean(axis=0) - base.values.mean(axis=0)
    _, low, high = percentile_interval(draws, confidence)
    return Interval(float(row.points.mean() - base.points.mean()), *clip(low, high, delta_bounds(bounds)))


def _seed_draws(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per resample, the mean over seeds drawn by ``index [B, S]``, its deviation from the
    resample's seed mean rescaled by ``sqrt(S / (S - 1))`` (see the module docstring)."""
    s = values.shape[0]
    mean = values.mean(axis=0)
    drawn = np.take_along_axis(values, index.T, axis=0).mean(axis=0)
    return mean + math.sqrt(s / (s - 1)) * (drawn - mean)


def two_level_delta(
    row: ResampledRuns, base: ResampledRuns, *, paired: bool, confidence: float, seed: int,
    bounds: Bounds = None,
) -> TwoLevel | None:
    """Δ = row − base over seeds and test examples (module docstring); None when a row has
    fewer than two seeds (the seed level's spread is unknown).

    ``paired``: the rows' seeds are matched pairs in the order given (the same seed draw for
    both rows, ``ν = S - 1``); else each row's seeds are drawn independently (Welch's ν).
    """
    s_row, s_base = row.values.shape[0], base.values.shape[0]
    if paired and s_row != s_base:
        raise InputError(f"paired seeds need as many runs in both rows, got {s_row} and {s_base}")
    if min(s_row, s_base) < 2:
        return None
    b = row.values.shape[1]
    rng = np.random.default_rng(seed)
    i_row = rng.integers(0, s_row, size=(b, s_row))
    i_base = i_row if paired else rng.integers(0, s_base, size=(b, s_base))
    draws = _seed_draws(row.values, i_row) - _seed_draws(base.values, i_base)
    draws = draws[np.isfinite(draws)]
    delta = float(row.points.mean() - base.points.mean())
    se = float(draws.std(ddof=1)) if draws.size > 1 else math.nan
    df = float(s_row - 1) if paired else welch(row.points, base.points).df
    if not math.isfinite(df):  # no spread over seeds: only the test-set level varies
        df = math.inf
    if not math.isfinite(se):
        return TwoLevel(Interval(delta, math.nan, math.nan), se, df, math.nan)
    if se == 0.0:
        return TwoLevel(Interval(delta, *clip(delta, delta, delta_bounds(bounds))), se, df, 1.0 if delta == 0 else 0.0)
    half = t_ppf(0.5 + confidence / 2.0, df) * se
    low, high = clip(delta - half, delta + half, delta_bounds(bounds))
    return TwoLevel(Interval(delta, low, high), se, df, t_sf2(delta / se, df))
