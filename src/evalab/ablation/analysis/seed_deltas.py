"""One metric of one row over its seeds: the row's own values (mean, sd, t-based CI), and
its Δ to the row it is taken to, unpaired (Welch CI and t-test, permutation test) or paired
by seed (paired t, sign-flip test), with the seeds a power analysis asks for and ASO.

Seeds are independent samples per row unless the Δ is paired: an eval row and the trained
row whose models it evaluates, or any row and the base when the study pairs seeds.
Where every seed agrees (sd 0) the t-test is 0/0: its p and CI are NaN, not the degenerate
limit (:func:`undefined_t`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from evalab.ablation.analysis.study_analysis import MetricStats
from evalab.stats.seed_stats import (
    WelchResult,
    mean_ci,
    paired_t,
    pairs_needed,
    permutation_test,
    pooled_sd,
    seeds_needed,
    sign_flip_test,
    welch,
)
from evalab.stats.seed_stats import aso as aso_test


@dataclass(frozen=True)
class DeltaTests:
    """How a Δ is tested: the level, the power, ASO, the resampling seed and permutations."""

    alpha: float
    power: float
    confidence: float
    aso: bool
    seed: int
    permutations: int


def seed_stats(metric: str, vals: list[float], confidence: float) -> MetricStats:
    """The row's own values over seeds, with no Δ: n, mean, sd and the mean's t-based CI
    over seeds; the CI is NaN where the seeds all agree (sd 0: see undefined_t)."""
    mc = mean_ci(vals, confidence)
    flat = mc.n >= 2 and mc.std == 0
    return MetricStats(
        metric=metric,
        n=mc.n,
        values=vals,
        mean=mc.mean,
        std=mc.std,
        ci_low=math.nan if flat else mc.low,
        ci_high=math.nan if flat else mc.high,
    )


def undefined_t(w: WelchResult) -> WelchResult:
    """A t-test over seeds that showed no spread: its p and CI are 0/0, not the degenerate
    limit (p 0 or 1, a zero-width CI), which holds only if the runs cannot vary with the seed;
    a coarse metric on a few examples can give equal values by chance."""
    return replace(w, p=math.nan, low=math.nan, high=math.nan)


def power_target(delta: float, min_effect: float | None) -> float:
    """The Δ a seed count is asked for: the observed one, or the smallest effect of interest
    when the observed Δ is below it (detecting a Δ nobody cares about is not the question)."""
    if min_effect is None or not math.isfinite(delta) or abs(delta) >= min_effect:
        return delta
    return math.copysign(min_effect, delta) if delta else min_effect


def unpaired(
    common: MetricStats,
    vals: Sequence[float],
    base: Sequence[float],
    higher_is_better: bool,
    tests: DeltaTests,
    min_effect: float | None = None,
) -> MetricStats:
    """``common`` (the row's own values) with its Δ to ``base``'s seeds, unpaired."""
    if not vals or not base:
        return replace(common, too_few_seeds=True)
    w = welch(list(vals), list(base), tests.confidence)
    p_perm, exact = permutation_test(
        list(vals), list(base), resamples=tests.permutations, seed=tests.seed
    )
    p_perm = p_perm if min(len(vals), len(base)) >= 2 else math.nan  # 1 vs 1: p = 1 whatever Δ is
    flat = bool(len(vals) >= 2 and len(base) >= 2 and np.ptp(vals) == 0 and np.ptp(base) == 0)
    w = undefined_t(w) if flat else w
    needed = None
    flag = True
    if len(vals) >= 2 and len(base) >= 2:
        pooled = pooled_sd(list(vals), list(base))
        target = power_target(w.delta, min_effect)
        needed = seeds_needed(target, pooled, alpha=tests.alpha, power=tests.power)
        # too few seeds: the delta is not separated from seed noise, and a power analysis
        # says more seeds than we have would be needed to detect a delta this large
        # (runs without any seed noise are deterministic: there is nothing to separate)
        flag = (
            pooled > 0
            and not (w.p < tests.alpha)
            and (needed is None or needed > min(len(vals), len(base)))
        )
    eps = _aso(vals, base, higher_is_better, tests)
    return _with_delta(
        replace(common, vs="base"), w, (p_perm, exact), (needed, flag, flat), eps, higher_is_better
    )


def paired(
    common: MetricStats,
    vals: dict[int, float],
    parent: dict[int, float],
    higher_is_better: bool,
    tests: DeltaTests,
    min_effect: float | None = None,
) -> MetricStats:
    """``common`` with its Δ to ``parent`` paired by seed, over the seeds both finished."""
    seeds = [s for s in vals if s in parent]
    if not seeds:
        return replace(common, too_few_seeds=True)
    a, b = np.array([vals[s] for s in seeds]), np.array([parent[s] for s in seeds])
    t = paired_t(a, b, tests.confidence)
    p_perm, exact = sign_flip_test(a, b, resamples=tests.permutations, seed=tests.seed)
    p_perm = p_perm if len(seeds) >= 2 else math.nan  # one pair: p = 1 whatever Δ is
    flat = bool(len(seeds) >= 2 and np.ptp(a - b) == 0)
    t = undefined_t(t) if flat else t
    needed = None
    flag = True
    if len(seeds) >= 2:
        sd_diff = float(np.std(a - b, ddof=1))
        target = power_target(t.delta, min_effect)
        needed = pairs_needed(target, sd_diff, alpha=tests.alpha, power=tests.power)
        # as for unpaired rows: not separated from seed noise, and more seeds would be needed
        flag = sd_diff > 0 and not (t.p < tests.alpha) and (needed is None or needed > len(seeds))
    eps = _aso(list(a), list(b), higher_is_better, tests)
    return _with_delta(common, t, (p_perm, exact), (needed, flag, flat), eps, higher_is_better)


def _aso(
    vals: Sequence[float], base: Sequence[float], higher_is_better: bool, tests: DeltaTests
) -> float | None:
    """ε_min of "the row is better than the row Δ is taken to" (None unless asked for)."""
    if not tests.aso:
        return None
    sign = 1.0 if higher_is_better else -1.0
    return aso_test(
        sign * np.asarray(vals), sign * np.asarray(base), alpha=tests.alpha, seed=tests.seed
    )


def _with_delta(
    common: MetricStats,
    t: WelchResult,
    perm: tuple[float, bool | None],
    flags: tuple[int | None, bool, bool],
    eps: float | None,
    higher_is_better: bool,
) -> MetricStats:
    """``common`` with the Δ of the t-test ``t`` (Welch's or the paired one), the
    permutation test's ``(p, exact)`` and ``(seeds needed, too few seeds, no seed spread)``."""
    needed, too_few, flat = flags
    direction = ""
    if t.delta != 0 and math.isfinite(t.delta):
        direction = "better" if (t.delta > 0) == higher_is_better else "worse"
    return replace(
        common,
        delta=t.delta,
        delta_low=t.low,
        delta_high=t.high,
        p_welch=t.p,
        p_perm=perm[0],
        perm_exact=perm[1],
        seeds_needed=needed,
        too_few_seeds=too_few,
        aso_eps=eps,
        direction=direction,
        no_seed_spread=flat,
    )
