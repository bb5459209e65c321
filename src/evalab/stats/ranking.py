"""Every pair of systems tested on one resampling stream, and rankings with significance clusters.

**All pairs.** :func:`pairwise_test` runs the paired bootstrap or approximate randomization
of :mod:`evalab.stats.paired` for every pair of systems at once. The random streams do not
depend on which systems are compared (a bootstrap resample is a row of counts over
segments, a randomization trial a row of swaps), so one stream serves all
``S (S - 1) / 2`` pairs: one ``counts @ stats`` product per chunk scores every system, and
each pair's p-value is computed from those scores exactly as ``paired_test`` computes it
for that pair alone (same seed, same settings: the same number). The p-value of a pair
does not depend on which of the two is called the baseline.

**Clusters** (:func:`rank_systems`). Systems are sorted by score, best first (lower first
for a metric where lower is better; an undefined score last, in no cluster). The
``S (S - 1) / 2`` p-values are adjusted together (Holm over all pairs by default), and a
cluster boundary is drawn between positions ``k`` and ``k + 1`` exactly when *every*
system above it is significantly better than *every* system below it (adjusted
``p < alpha``). So:

* two systems in different clusters always differ significantly, the higher one better;
  a reader can take any cross-cluster pair as a significant difference;
* a boundary needs at least one rejected hypothesis, so with a family-wise correction
  (Holm) the probability of splitting systems that are all equal is at most ``alpha``
  (``tests/stats/test_ranking.py`` measures it);
* the systems of one cluster need not be tied with each other: a cluster is the smallest
  run of positions not separated by such a boundary (as in the WMT findings, where a
  system is ranked in a higher cluster when it significantly outperforms all systems in
  the lower ones).

The rule is stricter than the greedy one of ``meta-eval``'s metric clusters (a new cluster
where *some* member of the current one beats the next metric), which can put two systems
in different clusters that no test separates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Unpack

import numpy as np

from evalab.errors import OutOfRangeError, SettingsError
from evalab.metrics.base import Metric
from evalab.stats.bootstrap import ConfidenceInterval
from evalab.stats.mcnemar import EXACT_MAX_DISCORDANT, binary_outcomes, mcnemar_test
from evalab.stats.multiple import holm_bonferroni
from evalab.stats.paired import (
    DEFAULT_TRIALS,
    PairedOptions,
    PairedRecord,
    _ar_all,
    _ci_resamples,
    _observed,
    _p_values,
    _Plan,
    _plan,
    bootstrap_null,
    interval,
)

__all__ = [
    "CLUSTER_RULE",
    "CORRECTIONS",
    "RESOLUTION",
    "PairwiseResult",
    "Ranking",
    "UnsettledBoundary",
    "adjust_pairwise",
    "pairwise_mcnemar",
    "pairwise_test",
    "rank_systems",
    "ranking_samples",
    "unsettled_boundaries",
    "win_tie_loss",
]

#: multiple-comparison control over all pairs: Holm-Bonferroni (default) or none
CORRECTIONS = ("holm", "none")
#: the clustering rule's name in signatures (see the module docstring)
CLUSTER_RULE = "separated"


@dataclass(frozen=True, eq=False)
class PairwiseResult(PairedRecord):
    """Every pair of systems of one metric: scores, intervals and a symmetric p-value matrix."""

    systems: tuple[str, ...]
    #: corpus score of every system, in input order
    scores: tuple[float, ...]
    #: interval of every system (``None`` without one: ``ar`` with ``ci_samples=0``)
    cis: tuple[ConfidenceInterval | None, ...]
    #: ``p[i, j]``: p-value of the paired test of systems ``i`` and ``j`` (NaN on the diagonal)
    p_values: np.ndarray
    higher_is_better: bool = True

    @property
    def signature(self) -> str:
        """The test settings, as :attr:`PairedTestResult.signature` (McNemar: its method)."""
        if self.test == "mcnemar":
            return f"test:mcnemar|exact:<={EXACT_MAX_DISCORDANT}|else:mid-p"
        return super().signature


def _pairs(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """``(i, j)`` index arrays of every pair ``i < j``."""
    i, j = np.triu_indices(n_systems, k=1)
    return i.astype(np.intp), j.astype(np.intp)


def _symmetric(n_systems: int, values: np.ndarray) -> np.ndarray:
    """The ``[S, S]`` matrix with ``values`` (one per pair ``i < j``) above and below the diagonal."""
    out = np.full((n_systems, n_systems), np.nan)
    i, j = _pairs(n_systems)
    out[i, j] = values
    out[j, i] = values
    return out


def _bs_pair_p(boot: np.ndarray, point: np.ndarray, method: str) -> np.ndarray:
    """Bootstrap p-value of every pair, each computed as ``paired_test`` does for it alone."""
    first, second = _pairs(point.size)
    out = np.empty(first.size)
    for k, (i, j) in enumerate(zip(first, second, strict=True)):
        # [N, 1] columns, the very shapes of a two-system comparison (numpy's sums depend on them)
        null = bootstrap_null(boot[:, [j]] - boot[:, [i]], method)
        out[k] = _p_values(null, np.abs(point[[j]] - point[i]))[0]
    return out


def pairwise_test(
    test: str,
    metrics: Mapping[str, Any],
    stats: Mapping[str, Mapping[str, Any]],
    **options: Unpack[PairedOptions],
) -> dict[str, PairwiseResult]:
    """Paired test (``"bs"`` or ``"ar"``) of every pair of systems, for several metrics at once.

    Arguments as :func:`evalab.stats.paired.paired_test` (at least two systems); one
    resampling stream serves every metric and pair. ``result[m].p_values[i, j]`` equals the
    p-value ``paired_test`` gives system ``j`` against baseline ``i`` alone.
    """
    plan, obs = _plan(test, options), _observed(metrics, stats)
    points, pairs = obs.points, _pairs(len(obs.names))
    if plan.test == "bs":
        boot, ci_n = _ci_resamples(plan, obs)
        pvals = {m: _bs_pair_p(boot[m], points[m], plan.p_value) for m in stats}
    else:
        null = _ar_all(plan, obs, pairs)
        pvals = {
            m: _p_values(null[m], np.abs(points[m][pairs[1]] - points[m][pairs[0]])) for m in stats
        }
        boot, ci_n = _ci_resamples(plan, obs)
    return {
        m: _result(plan, m, obs.names, points[m], pvals[m], boot.get(m), ci_n, metrics[m])
        for m in stats
    }


def _result(
    plan: _Plan,
    metric: str,
    names: list[str],
    point: np.ndarray,
    pvals: np.ndarray,
    boot: np.ndarray | None,
    ci_n: int,
    metric_or_scorer: Any,
) -> PairwiseResult:
    cis = tuple(
        None
        if boot is None
        else interval(float(point[j]), boot[:, j], plan.confidence, ci_n, plan.seed)
        for j in range(len(names))
    )
    return PairwiseResult.of_plan(
        plan,
        metric,
        ci_n,
        systems=tuple(names),
        scores=tuple(float(x) for x in point),
        cis=cis,
        p_values=_symmetric(len(names), pvals),
        higher_is_better=bool(getattr(metric_or_scorer, "higher_is_better", True)),
    )


def pairwise_mcnemar(metric: Metric, per_system: Mapping[str, Any]) -> PairwiseResult:
    """McNemar's test of every pair of systems on a right/wrong metric (stats rows ``(outcome, 1)``)."""
    names = list(per_system)
    rows = {s: np.asarray(getattr(v, "rows", v), dtype=np.float64) for s, v in per_system.items()}
    outcomes = [binary_outcomes(rows[s], metric.name) for s in names]
    first, second = _pairs(len(names))
    pvals = np.array(
        [mcnemar_test(outcomes[i], outcomes[j]).p_value for i, j in zip(first, second, strict=True)]
    )
    scores = tuple(float(metric.scores_from_sums(rows[s].sum(axis=0))) for s in names)
    return PairwiseResult(
        metric=metric.name,
        test="mcnemar",
        n_samples=0,
        seed=0,
        confidence=float("nan"),
        p_value_method="mcnemar",
        ci_samples=0,
        systems=tuple(names),
        scores=scores,
        cis=(None,) * len(names),
        p_values=_symmetric(len(names), pvals),
        higher_is_better=metric.higher_is_better,
    )


def adjust_pairwise(p_values: np.ndarray, correction: str) -> np.ndarray:
    """The symmetric p-value matrix adjusted over all its pairs (undefined ones left out)."""
    if correction not in CORRECTIONS:
        raise SettingsError(
            f"unknown correction {correction!r}; expected one of {', '.join(CORRECTIONS)}"
        )
    p = np.asarray(p_values, dtype=np.float64)
    i, j = _pairs(p.shape[0])
    upper = p[i, j]
    adjusted = upper.copy()
    defined = np.isfinite(upper)
    if correction == "holm":
        adjusted[defined] = holm_bonferroni(upper[defined])
    return _symmetric(p.shape[0], adjusted)


@dataclass(frozen=True, eq=False)
class Ranking:
    """Systems sorted best first with their significance clusters."""

    #: system indices (input order) best first; undefined scores last
    order: tuple[int, ...]
    #: cluster number (from 1) of every system in input order; ``None`` for an undefined score
    clusters: tuple[int | None, ...]
    #: the adjusted p-value matrix the clusters were drawn from
    p_adjusted: np.ndarray
    correction: str
    alpha: float

    @property
    def rule(self) -> str:
        """The ranking's settings for a signature, e.g. ``correct:holm|alpha:0.05|cluster:separated``."""
        return f"correct:{self.correction}|alpha:{self.alpha:g}|cluster:{CLUSTER_RULE}"


def rank_systems(
    scores: Any,
    p_values: np.ndarray,
    alpha: float = 0.05,
    correction: str = "holm",
    higher_is_better: bool = True,
) -> Ranking:
    """Sort systems by score and cluster them (the rule of the module docstring).

    ``p_values[i, j]`` is the paired test's p-value of systems ``i`` and ``j`` (symmetric).

    >>> p = np.array([[np.nan, .5, .001], [.5, np.nan, .002], [.001, .002, np.nan]])
    >>> rank_systems([30.0, 29.5, 20.0], p).clusters
    (1, 1, 2)
    >>> rank_systems([30.0, 29.5, 20.0], p, correction="none", alpha=0.001).clusters
    (1, 1, 1)
    """
    if not 0.0 < alpha < 1.0:
        raise OutOfRangeError("alpha", alpha, "strictly between 0 and 1")
    values = np.asarray(scores, dtype=np.float64)
    adjusted = adjust_pairwise(p_values, correction)
    defined = [i for i in range(values.size) if np.isfinite(values[i])]
    sign = -1.0 if higher_is_better else 1.0
    ranked = sorted(defined, key=lambda i: (sign * values[i], i))
    significant = np.nan_to_num(adjusted, nan=1.0) < alpha
    clusters: list[int | None] = [None] * values.size
    cluster = 1
    for k, i in enumerate(ranked):
        if k and significant[np.ix_(ranked[:k], ranked[k:])].all():
            cluster += 1
        clusters[i] = cluster
    undefined = [i for i in range(values.size) if i not in defined]
    return Ranking(tuple(ranked + undefined), tuple(clusters), adjusted, correction, float(alpha))


#: the default resamples of a ranking let the smallest reachable adjusted p-value be this many
#: times below alpha (so that the resampling's floor, not the data, does not decide a cluster)
RESOLUTION = 10


def ranking_samples(test: str, n_systems: int, alpha: float, correction: str) -> int:
    """The default resamples (``bs``) or trials (``ar``) of a test of all pairs: the smallest
    multiple of 1000, and at least the test's own default, with which the smallest p-value,
    ``1 / (n + 1)``, adjusted over the ``m`` pairs (Holm multiplies it by ``m``) is at most
    ``alpha / RESOLUTION``.

    >>> ranking_samples("bs", 10, 0.05, "holm"), ranking_samples("bs", 3, 0.05, "holm")
    (9000, 1000)
    >>> ranking_samples("bs", 20, 0.05, "holm"), ranking_samples("ar", 10, 0.05, "none")
    (38000, 10000)
    """
    pairs = n_systems * (n_systems - 1) // 2 if correction == "holm" else 1
    need = math.ceil(RESOLUTION * pairs / alpha) - 1
    return max(DEFAULT_TRIALS[test], -(-need // 1000) * 1000)


@dataclass(frozen=True)
class UnsettledBoundary:
    """A cluster that more resamples could split: no boundary is drawn between the systems
    ``above`` and ``below`` (indices, input order; neighbours in the ranking), but every pair
    across that line that is not significant has an adjusted p-value within ``z`` Monte Carlo
    standard errors of ``alpha``; ``p_adjusted`` and ``mc_error`` are those of the pair
    furthest from it, at ``n_samples`` resamples."""

    cluster: int
    above: int
    below: int
    p_adjusted: float
    mc_error: float
    n_samples: int


def unsettled_boundaries(
    ranking: Ranking, p_values: np.ndarray, n_samples: int, z: float = 2.0
) -> list[UnsettledBoundary]:
    """Where, inside a cluster, more resamples could draw a boundary: every pair across the
    line that blocks it (adjusted p >= alpha) is within ``z`` Monte Carlo standard errors of
    significance. A raw p-value ``p`` from ``n`` resamples has the standard error
    ``sqrt(p (1 - p) / n)`` (``p`` at least the floor ``1 / (n + 1)``); the adjustment scales
    it by the pair's factor ``p_adjusted / p`` (a pair whose adjusted p is capped at 1 is out
    of reach). None for an exact test (``n_samples`` 0).

    >>> p = np.array([[np.nan, .004, .001], [.004, np.nan, .5], [.001, .5, np.nan]])
    >>> rk = rank_systems([30.0, 29.0, 28.0], p, alpha=0.01)
    >>> rk.clusters, [(u.above, u.below) for u in unsettled_boundaries(rk, p, 1000)]
    ((1, 2, 2), [])
    >>> rk = rank_systems([30.0, 29.0, 28.0], p, alpha=0.005)
    >>> [(u.cluster, u.above, u.below) for u in unsettled_boundaries(rk, p, 1000)]
    [(1, 0, 1)]
    """
    if n_samples <= 0:
        return []
    raw, adjusted, alpha = np.asarray(p_values, dtype=np.float64), ranking.p_adjusted, ranking.alpha
    ranked = [i for i in ranking.order if ranking.clusters[i] is not None]
    out = []
    for k in range(1, len(ranked)):
        above, below = ranked[k - 1], ranked[k]
        if ranking.clusters[above] != ranking.clusters[below]:
            continue
        blocking = [
            (float(adjusted[i, j]), float(raw[i, j]))
            for i in ranked[:k]
            for j in ranked[k:]
            if not adjusted[i, j] < alpha
        ]
        errors = [_mc_error(p_adj, p, n_samples) for p_adj, p in blocking]
        if blocking and all(
            p_adj - z * e < alpha for (p_adj, _), e in zip(blocking, errors, strict=True)
        ):
            (p_adj, _), e = max(zip(blocking, errors, strict=True), key=lambda b: b[0][0] - alpha)
            cluster = ranking.clusters[above]
            assert cluster is not None
            out.append(UnsettledBoundary(cluster, above, below, p_adj, e, n_samples))
    return out


def _mc_error(p_adjusted: float, p: float, n_samples: int) -> float:
    """The Monte Carlo standard error of an adjusted p-value (see :func:`unsettled_boundaries`)."""
    if not math.isfinite(p) or p_adjusted >= 1.0:
        return 0.0  # capped at 1: the factor is at least 1 / p, out of reach whatever the error
    floor = max(p, 1.0 / (n_samples + 1))
    return p_adjusted / floor * math.sqrt(floor * (1.0 - floor) / n_samples)


def win_tie_loss(
    first: np.ndarray, second: np.ndarray, higher_is_better: bool = True
) -> tuple[int, int, int]:
    """Segments where ``first`` scores better, the same, or worse than ``second``.

    Segments where either score is undefined (NaN) count in none of the three.

    >>> win_tie_loss(np.array([1.0, 0.5, 0.2]), np.array([0.5, 0.5, 0.3]))
    (1, 1, 1)
    """
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    diff = (a - b)[ok] * (1.0 if higher_is_better else -1.0)
    return (
        int(np.count_nonzero(diff > 0)),
        int(np.count_nonzero(diff == 0)),
        int(np.count_nonzero(diff < 0)),
    )


def segment_scores_from_stats(metric: Metric, rows: np.ndarray) -> np.ndarray:
    """Every segment's sentence-level score from its stats row (the metric's sentence settings)."""
    return np.asarray(
        metric.sentence_metric().scores_from_sums(np.asarray(rows, dtype=np.float64)),
        dtype=np.float64,
    )
