"""Error bars for per-item evaluation scores: CLT, Wilson, clustered and paired.

The input is one score per item and model (items aligned across models), optionally a
cluster label per item (several questions on one passage) and several samples per item
(several generations; the item's score is then the mean over its samples).

* **CLT** (naive): ``se = sd(x) / sqrt(n)`` with ``ddof = 1``, a Student-t interval with
  ``n - 1`` degrees of freedom; the standard error of the constant in an OLS fit of the
  scores on a constant (statsmodels ``OLS(x, 1).fit()``).
* **Wilson** interval for 0/1 scores (one sample per item), which stays inside [0, 1]
  and keeps its coverage near 0 and 1.
* **Clustered** (CR1, Liang & Zeger 1986): with residuals ``e_i = x_i - mean``, cluster sums
  ``S_g`` and ``G`` clusters, ``se^2 = G / (G - 1) * sum_g S_g^2 / n^2``; the interval uses
  Student t with ``G - 1`` degrees of freedom. This is statsmodels'
  ``OLS(x, 1).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)`` with its
  default small-sample correction (``use_correction=True``: ``G / (G - 1) * (n - 1) /
  (n - k)``, ``k = 1`` regressor here, so only ``G / (G - 1)`` remains).
* **Paired** differences: the per-item difference ``d_i = x_i - y_i`` (model minus
  baseline) gets the same treatment (paired t, as ``scipy.stats.ttest_rel``; clustered
  when clusters are given, the p-value then from t with ``G - 1`` degrees of freedom).

With several samples per item, ``within_var`` is the pooled variance across samples of one
item, and ``n_eff`` the number of single-sample items that would give the same standard
error: ``n * (s_m^2 + within_var * (1 - 1/k)) / s_m^2`` with ``s_m^2`` the variance of the
item means and ``k`` the harmonic mean of the samples per item.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from evalab.errors import InputError, SettingsError
from evalab.stats.bootstrap import check_confidence, percentile_interval
from evalab.stats.multiple import holm_bonferroni
from evalab.stats.resampling import (
    bootstrap_counts,
    check_n_samples,
    check_seed,
    compact_stats,
    resampled_sums,
)
from evalab.stats.seed_stats import t_ppf, t_sf2

__all__ = [
    "FEW_CLUSTERS",
    "Estimate",
    "FewClusters",
    "Interval",
    "ItemComparison",
    "ItemMeans",
    "ItemNote",
    "ModelSummary",
    "NoSpread",
    "PairSummary",
    "cluster_codes",
    "compare_items",
    "estimate",
    "item_means",
    "summarize_model",
    "wilson_interval",
]


#: fewer clusters than this: a CR1 standard error is biased down and its t interval too
#: narrow (Cameron & Miller 2015, "A Practitioner's Guide to Cluster-Robust Inference", §VI)
FEW_CLUSTERS = 30


@dataclass(frozen=True)
class FewClusters:
    """Clustered standard errors from ``clusters`` clusters, fewer than ``minimum``."""

    clusters: int
    minimum: int = FEW_CLUSTERS


@dataclass(frozen=True)
class NoSpread:
    """Pairs whose per-item differences are one value on every item (or every cluster sum
    is zero): their standard error is 0, so the t test and t interval are 0/0 or c/0 and not
    given. ``pairs``: ``(model, baseline, delta)``."""

    pairs: tuple[tuple[str, str, float], ...]


#: what a comparison of per-item scores qualifies (the report layer words it)
ItemNote = FewClusters | NoSpread


@dataclass(frozen=True)
class Interval:
    """A confidence interval ``[low, high]``."""

    low: float
    high: float


@dataclass(frozen=True)
class Estimate:
    """A mean with one kind of standard error and its t interval."""

    mean: float
    se: float
    #: degrees of freedom of the t interval and test (``n - 1`` or ``G - 1``)
    df: float
    ci: Interval

    @property
    def t(self) -> float:
        """``mean / se`` (the test statistic of ``mean = 0``)."""
        if self.se == 0.0:
            return 0.0 if self.mean == 0.0 else math.copysign(math.inf, self.mean)
        return self.mean / self.se

    @property
    def p_value(self) -> float:
        """Two-sided p-value of ``mean = 0`` from Student t with :attr:`df` degrees."""
        return t_sf2(self.t, self.df)


@dataclass(frozen=True)
class ItemMeans:
    """Per-item means of the samples of one model, with the within-item variance."""

    means: np.ndarray
    counts: np.ndarray
    #: pooled variance across the samples of one item (None with one sample per item)
    within_var: float | None

    @property
    def samples_per_item(self) -> float:
        """Harmonic mean of the samples per item."""
        return float(self.counts.size / np.sum(1.0 / self.counts))


def item_means(values: np.ndarray, item: np.ndarray, n_items: int) -> ItemMeans:
    """Means of ``values`` per item (``item[j]`` is the item of ``values[j]``, 0-based).

    >>> im = item_means(np.array([1.0, 0, 1, 1]), np.array([0, 0, 1, 1]), 2)
    >>> im.means.tolist(), im.within_var
    ([0.5, 1.0], 0.25)
    """
    counts = np.bincount(item, minlength=n_items).astype(np.float64)
    if np.any(counts == 0):
        raise InputError(f"item {int(np.argmin(counts))} has no score")
    means = np.bincount(item, weights=values, minlength=n_items) / counts
    if np.all(counts == 1):
        return ItemMeans(means, counts, None)
    resid = values - means[item]
    ss = np.bincount(item, weights=resid * resid, minlength=n_items)
    dof = float(np.sum(counts - 1))
    return ItemMeans(means, counts, float(ss.sum() / dof))


def cluster_codes(labels: Sequence[str]) -> np.ndarray:
    """Integer codes ``0..G-1`` of cluster labels, in order of first appearance."""
    index: dict[str, int] = {}
    return np.array([index.setdefault(lab, len(index)) for lab in labels], dtype=np.int64)


@functools.lru_cache(maxsize=256)
def _t_quantile(p: float, df: float) -> float:
    # a pure function of (p, df); every model and pair of one comparison shares them
    return t_ppf(p, df)


def _t_interval(mean: float, se: float, df: float, confidence: float) -> Interval:
    half = _t_quantile(0.5 + confidence / 2.0, df) * se if se > 0 else 0.0
    return Interval(mean - half, mean + half)


def estimate(
    x: np.ndarray, clusters: np.ndarray | None = None, confidence: float = 0.95
) -> Estimate:
    """Mean of ``x`` with its CLT (``clusters`` None) or CR1 clustered standard error.

    >>> e = estimate(np.array([1.0, 0, 1, 1]))
    >>> round(e.mean, 2), round(e.se, 4), e.df
    (0.75, 0.25, 3.0)
    """
    n = x.size
    mean = float(x.mean())
    if clusters is None:
        se = float(x.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
        df = float(n - 1)
    else:
        g = int(clusters.max()) + 1 if n else 0
        if g < 2:
            raise InputError(
                f"a clustered standard error needs at least 2 clusters, got {g}: with every item in "
                "one cluster there is no spread between clusters to estimate it from; group the "
                f"items into several clusters (at least {FEW_CLUSTERS} for a t interval to be "
                "trusted), or compare without clusters"
            )
        sums = np.bincount(clusters, weights=x - mean, minlength=g)
        se = math.sqrt(g / (g - 1) * float(sums @ sums)) / n
        df = float(g - 1)
    if not math.isfinite(se):
        raise InputError(f"a standard error needs at least 2 items, got {n}")
    return Estimate(mean, se, df, _t_interval(mean, se, df, confidence))


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval of a proportion (statsmodels ``proportion_confint(method="wilson")``).

    >>> w = wilson_interval(0, 10); round(w.low, 6), round(w.high, 4)
    (0.0, 0.2775)
    """
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class ModelSummary:
    """One model's mean with its naive, Wilson and clustered intervals."""

    model: str
    n_items: int
    naive: Estimate
    #: Wilson interval, for 0/1 scores with one sample per item only
    wilson: Interval | None
    #: CR1 clustered estimate, when clusters are given
    clustered: Estimate | None
    n_clusters: int | None
    #: ``(clustered se / naive se)^2``: how many items one independent item is worth
    design_effect: float | None
    samples_per_item: float | None
    within_var: float | None
    n_eff: float | None

    @property
    def mean(self) -> float:
        """The mean score over items."""
        return self.naive.mean


@dataclass(frozen=True)
class PairSummary:
    """A model against another on the same items: the paired difference and its test."""

    model: str
    baseline: str
    #: ``mean(model) - mean(baseline)``, with the paired (item-level) standard error
    paired: Estimate
    clustered: Estimate | None
    #: ``sqrt(se_model^2 + se_baseline^2)``: the error of the difference if unpaired
    unpaired_se: float
    #: the same from the clustered standard errors (when clusters are given)
    unpaired_clustered_se: float | None
    #: Pearson correlation of the two models' item scores (NaN when one is constant)
    correlation: float
    p_value: float
    p_adjusted: float
    #: percentile bootstrap interval of the difference (when a bootstrap was asked for)
    bootstrap: Interval | None

    @property
    def delta(self) -> float:
        """The difference of the means."""
        return self.paired.mean

    @property
    def test(self) -> Estimate:
        """The estimate the p-value comes from: clustered when clusters are given."""
        return self.clustered or self.paired


@dataclass(frozen=True)
class ItemComparison:
    """Every model's summary and every compared pair, with the settings used."""

    models: tuple[ModelSummary, ...]
    pairs: tuple[PairSummary, ...]
    confidence: float
    correction: str
    #: percentile bootstrap interval of each model's mean (same order as ``models``)
    bootstrap: tuple[Interval, ...] | None
    n_samples: int
    seed: int
    notes: tuple[ItemNote, ...] = ()


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = a.std(), b.std()
    if sa == 0 or sb == 0:
        return math.nan
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def summarize_model(
    model: str, im: ItemMeans, clusters: np.ndarray | None, confidence: float, binary: bool
) -> ModelSummary:
    """One model's :class:`ModelSummary` from its item means."""
    x = im.means
    naive = estimate(x, None, confidence)
    clustered = estimate(x, clusters, confidence) if clusters is not None else None
    deff = (clustered.se / naive.se) ** 2 if clustered is not None and naive.se > 0 else None
    wilson = (
        wilson_interval(float(x.sum()), x.size, confidence)
        if binary and im.within_var is None
        else None
    )
    k = n_eff = None
    if im.within_var is not None:  # several samples per item
        k = im.samples_per_item
        s2 = float(x.var(ddof=1))
        n_eff = x.size * (s2 + im.within_var * (1 - 1 / k)) / s2 if s2 > 0 else math.nan
    return ModelSummary(
        model,
        x.size,
        naive,
        wilson,
        clustered,
        None if clusters is None else int(clusters.max()) + 1,
        deff,
        k,
        im.within_var,
        n_eff,
    )


def _pairs_of(n_models: int, baseline: int | None) -> list[tuple[int, int]]:
    """``(model, baseline)`` index pairs: each against ``baseline``, or all pairs (None)."""
    if baseline is None:
        return [(j, i) for i in range(n_models) for j in range(i + 1, n_models)]
    return [(j, baseline) for j in range(n_models) if j != baseline]


def _bootstrap(
    matrix: np.ndarray,
    clusters: np.ndarray | None,
    n_samples: int,
    seed: int,
    pairs: list[tuple[int, int]],
    confidence: float,
) -> tuple[list[Interval], list[Interval]]:
    """Percentile intervals of every mean and pair difference; items (or whole clusters,
    when given) are resampled with replacement, one index stream for every model."""
    if clusters is None:
        sums, sizes = matrix, np.ones(matrix.shape[0])
    else:
        g = int(clusters.max()) + 1
        sums = np.stack(
            [np.bincount(clusters, weights=col, minlength=g) for col in matrix.T], axis=1
        )
        sizes = np.bincount(clusters, minlength=g).astype(np.float64)
    # 0/1 scores and sizes are integers: their weighted sums are exact in float32 (2x faster)
    table = np.column_stack([sums, sizes])
    table = compact_stats(table, table.shape[0])  # a resample's counts sum to the units drawn
    means = []
    for counts in bootstrap_counts(table.shape[0], n_samples, seed):
        drawn = resampled_sums(counts, table)
        means.append(drawn[:, :-1] / drawn[:, -1:])
    boot = np.concatenate(means, axis=0)
    model_ci = [
        Interval(*percentile_interval(boot[:, j], confidence)[1:]) for j in range(matrix.shape[1])
    ]
    pair_ci = [
        Interval(*percentile_interval(boot[:, a] - boot[:, b], confidence)[1:]) for a, b in pairs
    ]
    return model_ci, pair_ci


def _check_settings(
    matrix: np.ndarray,
    names: Sequence[str],
    confidence: float,
    correction: str,
    n_samples: int,
    seed: int,
) -> None:
    check_confidence(confidence)
    if correction not in ("none", "holm"):
        raise SettingsError(f"correction must be none or holm, got {correction!r}")
    if n_samples:
        check_n_samples(n_samples)
    check_seed(seed)
    if matrix.ndim != 2 or matrix.shape[1] != len(names):
        raise SettingsError(
            f"expected item scores [n_items, {len(names)}], got shape {matrix.shape}"
        )
    if not np.all(np.isfinite(matrix)):
        raise InputError("item scores contain NaN or infinite values")


def compare_items(
    names: Sequence[str],
    means: Sequence[ItemMeans],
    clusters: np.ndarray | None = None,
    *,
    baseline: int | None = 0,
    confidence: float = 0.95,
    correction: str = "holm",
    binary: Sequence[bool] | None = None,
    n_samples: int = 0,
    seed: int = 12345,
) -> ItemComparison:
    """Summaries of every model and paired tests of each against ``baseline`` (an index;
    None: every pair). ``means[j]`` are model ``j``'s :class:`ItemMeans` on the same items
    in the same order; ``clusters`` integer codes per item (see :func:`cluster_codes`).
    ``n_samples > 0`` adds percentile bootstrap intervals (clusters resampled whole)."""
    matrix = np.column_stack([m.means for m in means])
    _check_settings(matrix, names, confidence, correction, n_samples, seed)
    binary = binary or [False] * len(names)
    models = tuple(
        summarize_model(n, m, clusters, confidence, b)
        for n, m, b in zip(names, means, binary, strict=True)
    )
    pairs = _pairs_of(len(names), baseline)
    boot_models, boot_pairs = (
        _bootstrap(matrix, clusters, n_samples, seed, pairs, confidence)
        if n_samples
        else (None, None)
    )
    out = _pair_summaries(
        matrix, names, models, clusters, pairs, boot_pairs, confidence, correction
    )
    notes: list[ItemNote] = []
    if clusters is not None and int(clusters.max()) + 1 < FEW_CLUSTERS:
        notes.append(FewClusters(int(clusters.max()) + 1))
    flat = tuple((p.model, p.baseline, p.delta) for p in out if p.test.se == 0.0)
    if flat:
        notes.append(NoSpread(flat))
    return ItemComparison(
        models,
        tuple(out),
        confidence,
        correction,
        tuple(boot_models) if boot_models else None,
        n_samples,
        seed,
        tuple(notes),
    )


def _pair_summaries(
    matrix: np.ndarray,
    names: Sequence[str],
    models: tuple[ModelSummary, ...],
    clusters: np.ndarray | None,
    pairs: list[tuple[int, int]],
    boot_pairs: list[Interval] | None,
    confidence: float,
    correction: str,
) -> list[PairSummary]:
    """The paired test of every pair; a pair with no spread in its differences has no
    p-value (NaN) and no t interval, and is left out of the Holm adjustment."""
    partial = []
    for a, b in pairs:
        d = matrix[:, a] - matrix[:, b]
        paired = _spread_or_none(estimate(d, None, confidence))
        clustered = estimate(d, clusters, confidence) if clusters is not None else None
        partial.append((a, b, paired, None if clustered is None else _spread_or_none(clustered)))
    raw = np.array([(c or p).p_value if (c or p).se > 0 else math.nan for _, _, p, c in partial])
    adjusted = raw.copy()
    defined = np.isfinite(raw)
    if correction == "holm" and defined.any():
        adjusted[defined] = holm_bonferroni(raw[defined])
    out = []
    for k, (a, b, paired, clustered) in enumerate(partial):
        ma, mb = models[a], models[b]
        unpaired_c = (
            math.hypot(ma.clustered.se, mb.clustered.se) if ma.clustered and mb.clustered else None
        )
        out.append(
            PairSummary(
                names[a],
                names[b],
                paired,
                clustered,
                math.hypot(ma.naive.se, mb.naive.se),
                unpaired_c,
                _correlation(matrix[:, a], matrix[:, b]),
                float(raw[k]),
                float(adjusted[k]),
                boot_pairs[k] if boot_pairs else None,
            )
        )
    return out


def _spread_or_none(e: Estimate) -> Estimate:
    """``e``, its t interval undefined (NaN) when its standard error is 0."""
    return e if e.se > 0 else dataclasses.replace(e, ci=Interval(math.nan, math.nan))
