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
* **over seeds and examples** (two levels: seeds, then the examples they are scored on):
  a crossed seeds × examples design (every seed's run scores every example), whose Δ has
  variance ``σ²_seed / S + σ²_examples / n + σ²_interaction / (S n)``. The seed level is
  the spread of the runs' values over seeds on this test set — the variance of the
  bootstrap over seeds rescaled by ``S / (S - 1)`` (Davison & Hinkley 1997, §3.8), taken in
  closed form: ``s² / S`` per row (of the per-seed differences when paired), exactly
  Welch's (paired t's) squared standard error. It already holds the seed × example
  interaction (seeds disagreeing on single examples), and so does the example level, the
  bootstrap variance of the seed-pooled Δ over test examples; the interaction, estimated
  from the same resamples (``I = Σ_s Var_b(V[s,b] − V̄_b) / (S (S − 1))``), is counted once:
  ``se² = max(seeds, I) + max(examples, I) − I`` (each main effect's variance floored at 0,
  so se is never below either level's own). Resampling both levels independently would
  count the interaction two or three times (Owen 2007, "The pigeonhole bootstrap"): honest
  but needlessly wide. The interval is ``Δ ± t(ν) · se`` and the p-value of Δ ≠ 0 is
  ``P(|T_ν| >= |Δ| / se)``, two-sided, with ``ν`` the seeds' degrees of freedom
  (Welch–Satterthwaite unpaired, its lower bound ``min(S) - 1`` where no seed moved either
  row; ``S - 1`` paired): the seed level is what a few seeds
  estimate poorly; the example level, from thousands of examples, could only raise ν.
  The interval is therefore never narrower than the seeds-only one, and it agrees with the
  p-value: p < α exactly when the (unclipped) interval excludes 0. With one seed in a row
  the seed level is unknown and there is no two-level result.

Intervals respect declared bounds: percentile intervals of a bounded value stay inside its
bounds; t-based ones are clipped to them (Δ = row − base to ``[lo - hi, hi - lo]``).

Nothing here knows about studies: a run is its per-example stats rows and the scorer of
their sums (:class:`AdditiveRun`; ``ExampleStats`` of the ablation layer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from evalab.errors import InputError
from evalab.stats.bootstrap import percentile_interval
from evalab.stats.items import Estimate, Interval
from evalab.stats.resampling import Scorer, bootstrap_counts, compact_stats, resampled_sums
from evalab.stats.seed_stats import t_ppf, welch

__all__ = [
    "AdditiveRun",
    "Bounds",
    "ResampledRuns",
    "clip",
    "delta_bounds",
    "example_delta",
    "example_value",
    "resample_runs",
    "two_level_delta",
]


class AdditiveRun(Protocol):
    """One run's metric per test example under the additive stats contract
    (``metrics/base.py``): its value is ``scores_from_sums(rows.sum(0))`` and a resample of
    the examples with counts ``c`` scores ``scores_from_sums(c @ rows)``. The ablation
    layer's ``ExampleStats`` is one."""

    @property
    def rows(self) -> np.ndarray: ...  # [n_examples, k]

    @property
    def scores_from_sums(self) -> Scorer: ...


#: declared bounds of a metric ``(low, high)``, or None when unbounded
Bounds = tuple[float, float] | None


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
    return (
        float(min(max(low, lo), hi)) if math.isfinite(low) else low,
        float(min(max(high, lo), hi)) if math.isfinite(high) else high,
    )


def delta_bounds(bounds: Bounds) -> Bounds:
    """Bounds of a difference of two values within ``bounds``: ``[lo - hi, hi - lo]``."""
    return None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])


def resample_runs(runs: Sequence[AdditiveRun], resamples: int, seed: int) -> ResampledRuns:
    """Score every run on its full test set and on the same ``resamples`` bootstrap
    resamples of the test examples (``stats.resampling.bootstrap_counts``, generated in
    memory-bounded chunks). The runs' stats rows are side by side in one matrix, so a chunk
    is scored for every run by one matrix product (a product per run costs ~25x more)."""
    sizes = {int(np.asarray(r.rows).shape[0]) for r in runs}
    if len(sizes) > 1:
        raise InputError(
            f"runs resampled together must share their test examples; got {sorted(sizes)} examples"
        )
    n = sizes.pop() if sizes else 0
    if n < 1:
        raise InputError("resampling test examples needs at least one example")
    blocks = [np.asarray(r.rows, dtype=np.float64).reshape(n, -1) for r in runs]
    edges = np.cumsum([0] + [b.shape[1] for b in blocks])
    stacked = compact_stats(np.concatenate(blocks, axis=1), n)
    points = np.array(
        [
            float(np.asarray(r.scores_from_sums(b.sum(axis=0))).reshape(-1)[0])
            for r, b in zip(runs, blocks, strict=True)
        ]
    )
    chunks: list[np.ndarray] = []
    for counts in bootstrap_counts(n, resamples, seed):
        sums = resampled_sums(counts, stacked)
        chunks.append(
            np.stack(
                [
                    np.asarray(
                        r.scores_from_sums(sums[:, edges[j] : edges[j + 1]]), dtype=float
                    ).reshape(-1)
                    for j, r in enumerate(runs)
                ]
            )
        )
    return ResampledRuns(points, np.concatenate(chunks, axis=1))


def example_value(row: ResampledRuns, confidence: float, bounds: Bounds = None) -> Interval:
    """The percentile interval over test examples of the row's value (mean over seeds)."""
    _, low, high = percentile_interval(row.values.mean(axis=0), confidence)
    return Interval(*clip(low, high, bounds))


def example_delta(
    row: ResampledRuns, base: ResampledRuns, confidence: float, bounds: Bounds = None
) -> Interval:
    """The paired percentile interval over test examples of Δ = row − base (means over each
    row's seeds): both rows on the same resamples."""
    draws = row.values.mean(axis=0) - base.values.mean(axis=0)
    _, low, high = percentile_interval(draws, confidence)
    return Interval(*clip(low, high, delta_bounds(bounds)))


def _interaction(values: np.ndarray) -> float:
    """The seed × example interaction's share of the resampled variance of the mean over
    seeds: ``Σ_s Var_b(V[s, b] − V̄_b) / (S (S − 1))`` (the ANOVA estimate of ``σ²_int / (S n)``
    of a crossed seeds × examples design)."""
    s: int = values.shape[0]
    deviations = values - values.mean(axis=0)
    return float(deviations.var(axis=1, ddof=1).sum()) / (s * (s - 1))


def _components(
    row: ResampledRuns, base: ResampledRuns, paired: bool
) -> tuple[float, float, float, float]:
    """Δ's variance over seeds (``s² / S``, interaction included), over test examples (the
    seed-pooled bootstrap, interaction included), the interaction, and the seeds' df."""
    if paired:
        d = ResampledRuns(row.points - base.points, row.values - base.values)
        seeds = float(d.points.var(ddof=1)) / d.points.size
        return (
            seeds,
            float(d.values.mean(axis=0).var(ddof=1)),
            _interaction(d.values),
            float(d.points.size - 1),
        )
    seeds = (
        float(row.points.var(ddof=1)) / row.points.size
        + float(base.points.var(ddof=1)) / base.points.size
    )
    examples = float((row.values.mean(axis=0) - base.values.mean(axis=0)).var(ddof=1))
    df = welch(row.points, base.points).df
    # no spread over seeds in either row: Welch's ν is 0/0; its lower bound min(S) - 1, not
    # ∞ (a normal quantile), since two or three equal values bound the seed noise poorly
    low_df = float(min(row.points.size, base.points.size) - 1)
    return (
        seeds,
        examples,
        _interaction(row.values) + _interaction(base.values),
        df if math.isfinite(df) else low_df,
    )


def two_level_delta(
    row: ResampledRuns,
    base: ResampledRuns,
    *,
    paired: bool,
    confidence: float,
    bounds: Bounds = None,
) -> Estimate | None:
    """Δ = row − base over seeds and test examples (module docstring): its mean, standard
    error, t's degrees of freedom and interval, whose p-value is Δ ≠ 0's; None when a row
    has fewer than two seeds (the seed level's spread is unknown).

    ``paired``: the rows' seeds are matched pairs in the order given (``ν = S - 1``); else
    each row's seeds are independent (Welch's ν).
    """
    s_row, s_base = row.values.shape[0], base.values.shape[0]
    if paired and s_row != s_base:
        raise InputError(f"paired seeds need as many runs in both rows, got {s_row} and {s_base}")
    if min(s_row, s_base) < 2:
        return None
    ok = np.isfinite(row.values).all(axis=0) & np.isfinite(base.values).all(axis=0)
    row, base = (
        ResampledRuns(row.points, row.values[:, ok]),
        ResampledRuns(base.points, base.values[:, ok]),
    )
    delta = float(row.points.mean() - base.points.mean())
    if row.values.shape[1] < 2:
        return Estimate(delta, math.nan, math.nan, Interval(math.nan, math.nan))
    seeds, examples, interaction, df = _components(row, base, paired)
    # seed main effect + example main effect + interaction, each main effect floored at 0:
    # the total is never below either single level's variance
    se = math.sqrt(max(seeds, interaction) + max(examples, interaction) - interaction)
    half = 0.0 if se == 0.0 else t_ppf(0.5 + confidence / 2.0, df) * se
    return Estimate(
        delta, se, df, Interval(*clip(delta - half, delta + half, delta_bounds(bounds)))
    )
