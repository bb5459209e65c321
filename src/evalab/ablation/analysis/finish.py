"""Completing one metric's statistics once every row has its Δ: the test-set intervals,
the declared bounds on every interval, 'negligible' (``min_effect``), the reason each
absent CI or p is absent (a code of ``study_analysis.ABSENT``), and Holm's adjustment over each
family of distinct comparisons.
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from evalab.ablation.analysis.example_intervals import TestSetFields
from evalab.ablation.analysis.findings import HolmFamily, holm_families
from evalab.ablation.analysis.study_analysis import MetricStats
from evalab.ablation.study.bounds import metric_bounds, min_effect
from evalab.stats.two_level import Bounds, clip, delta_bounds

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study


def finish_metric(
    study: Study,
    metric: str,
    stats: dict[str, dict[str, MetricStats]],
    fields: dict[str, TestSetFields],
    *,
    holm: bool,
    stages: dict[str, str],
) -> list[HolmFamily]:
    """Complete one metric's statistics in place: the test-set fields, the bounds on every
    interval, 'negligible', the reasons for what is None, and (``holm``) Holm-adjusted
    p-values over each family of distinct comparisons (trained rows vs the base; eval rows
    vs the trained row they evaluate), which it returns."""
    bounds, eps = metric_bounds(study, metric), min_effect(study, metric)
    for label, by_metric in stats.items():
        found = fields.get(label)
        ms = by_metric[metric] if found is None else replace(by_metric[metric], **asdict(found))
        ms = within_bounds(ms, bounds)
        ms = negligible(ms, eps) if eps is not None else ms
        by_metric[metric] = with_absent(ms)
    if not holm:
        return []
    tested = [
        (label, stages[label], p)
        for label, by_metric in stats.items()
        if by_metric[metric].delta is not None and (p := row_p(by_metric[metric])) is not None
    ]
    families = holm_families(metric, tested)
    for fam in families:
        for label, p in zip(fam.members, fam.adjusted, strict=True):
            stats[label][metric] = replace(stats[label][metric], p_holm=p)
    return families


def _absent_code(ms: MetricStats) -> str:
    """Why a Δ of ``ms`` has no CI or p over seeds."""
    if ms.no_seed_spread:
        return "no_seed_spread"
    if ms.n == 0 or ms.delta is None or not math.isfinite(ms.delta):
        return "no_common_seeds" if ms.paired and ms.n else "no_runs"
    return "one_seed"


def with_absent(ms: MetricStats) -> MetricStats:
    """NaN CIs and p-values become None, each with the reason it is absent (``absent``)."""

    def gone(*xs: float | None) -> bool:
        return any(x is None or not math.isfinite(x) for x in xs)

    absent: dict[str, str] = {}
    changes: dict[str, Any] = {}
    if gone(ms.ci_low, ms.ci_high):
        absent["mean_ci"] = (
            "no_runs" if ms.n == 0 else "one_seed" if ms.n == 1 else "no_seed_spread"
        )
        changes.update(ci_low=None, ci_high=None)
    if ms.delta is not None:
        code = _absent_code(ms)
        if gone(ms.delta_low, ms.delta_high):
            absent["delta_ci"] = code
            changes.update(delta_low=None, delta_high=None)
        if gone(ms.p_welch):
            absent["p_t"] = code
            changes["p_welch"] = None
        if gone(ms.p_perm):
            absent["p_perm"] = "no_runs" if code in ("no_runs", "no_common_seeds") else "one_seed"
            changes["p_perm"] = None
    return replace(ms, absent=absent, **changes) if changes else ms


def row_p(ms: MetricStats) -> float | None:
    """The row's p-value for 'differs from the row Δ is taken to': two-level where present,
    else the t-test's, or the permutation test's where the t-test is undefined (no seed spread)."""
    p = ms.p_both if ms.p_both is not None else ms.p_perm if ms.no_seed_spread else ms.p_welch
    return p if p is not None and math.isfinite(p) else None


def within_bounds(ms: MetricStats, bounds: Bounds) -> MetricStats:
    """t-based intervals clipped to the declared bounds (Δ's to ``[lo - hi, hi - lo]``)."""
    if bounds is None or ms.ci_low is None or ms.ci_high is None:
        return ms
    ci_low, ci_high = clip(ms.ci_low, ms.ci_high, bounds)
    if ms.delta_low is None or ms.delta_high is None:
        return replace(ms, ci_low=ci_low, ci_high=ci_high)
    d_low, d_high = clip(ms.delta_low, ms.delta_high, delta_bounds(bounds))
    return replace(ms, ci_low=ci_low, ci_high=ci_high, delta_low=d_low, delta_high=d_high)


def _finite(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and math.isfinite(low) and math.isfinite(high)


def negligible(ms: MetricStats, eps: float) -> MetricStats:
    """Negligible: |Δ| and every interval shown for it inside ±eps, one of them covering seed
    noise (with one seed nothing bounds the seed noise); then no seed count is asked for."""
    if ms.delta is None or not math.isfinite(ms.delta) or abs(ms.delta) > eps:
        return ms
    pairs = [
        (ms.delta_low, ms.delta_high),
        (ms.both_low, ms.both_high),
        (ms.examples_low, ms.examples_high),
    ]
    shown = [(lo, hi) for lo, hi in pairs if _finite(lo, hi)]
    if not (_finite(ms.delta_low, ms.delta_high) or _finite(ms.both_low, ms.both_high)):
        return ms
    if all(-eps <= lo and hi <= eps for lo, hi in shown):  # type: ignore[operator]
        return replace(ms, negligible=True, too_few_seeds=False, seeds_needed=None)
    return ms
