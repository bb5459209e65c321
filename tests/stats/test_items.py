"""Per-item standard errors against statsmodels and scipy, and their coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evalab.stats.items import NoSpread, compare_items, estimate, item_means, wilson_interval

sm = pytest.importorskip("statsmodels.api")
proportion = pytest.importorskip("statsmodels.stats.proportion")


def _clustered_data(
    rng: np.random.Generator, g: int, m: int, icc: float
) -> tuple[np.ndarray, np.ndarray]:
    clusters = np.repeat(np.arange(g), m)
    x = np.sqrt(icc) * rng.normal(size=g)[clusters] + np.sqrt(1 - icc) * rng.normal(size=g * m)
    return x, clusters


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clustered_se_and_ci_equal_statsmodels_cluster_robust_ols(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, clusters = _clustered_data(rng, 37, 4, 0.3)
    # statsmodels' default correction: use_correction=True, i.e. G/(G-1) * (N-1)/(N-K), K = 1
    fit = sm.OLS(x, np.ones_like(x)).fit(
        cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True
    )
    e = estimate(x, clusters, 0.9)
    assert e.se == pytest.approx(fit.bse[0], rel=1e-12)
    assert (e.ci.low, e.ci.high) == pytest.approx(tuple(fit.conf_int(alpha=0.1)[0]), rel=1e-9)
    assert e.p_value == pytest.approx(fit.pvalues[0], rel=1e-8)
    plain = sm.OLS(x, np.ones_like(x)).fit()
    n = estimate(x)
    assert n.se == pytest.approx(plain.bse[0], rel=1e-12)
    assert (n.ci.low, n.ci.high) == pytest.approx(tuple(plain.conf_int()[0]), rel=1e-9)


def test_paired_difference_equals_scipy_ttest_rel() -> None:
    rng = np.random.default_rng(3)
    a = (rng.random(300) < 0.6).astype(float)
    b = np.where(rng.random(300) < 0.8, a, 1 - a)
    res = compare_items(
        ["a", "b"], [item_means(a, np.arange(300), 300), item_means(b, np.arange(300), 300)]
    )
    pair = res.pairs[0]
    ref = scipy.stats.ttest_rel(b, a)
    assert pair.paired.t == pytest.approx(ref.statistic, rel=1e-10)
    assert pair.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    ci = ref.confidence_interval(0.95)
    assert (pair.paired.ci.low, pair.paired.ci.high) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert pair.correlation == pytest.approx(np.corrcoef(a, b)[0, 1])


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 40), (39, 40), (500, 1000)])
def test_wilson_equals_statsmodels(k: int, n: int) -> None:
    iv = wilson_interval(k, n, 0.95)
    assert (iv.low, iv.high) == pytest.approx(
        proportion.proportion_confint(k, n, method="wilson"), abs=1e-12
    )


def test_within_item_variance_and_effective_items() -> None:
    rng = np.random.default_rng(4)
    n, k = 400, 5
    p = rng.random(n)
    values = (rng.random((n, k)) < p[:, None]).astype(float).ravel()
    im = item_means(values, np.repeat(np.arange(n), k), n)
    expected = np.mean(values.reshape(n, k).var(axis=1, ddof=1))
    assert im.within_var == pytest.approx(expected)
    summary = compare_items(["m", "m2"], [im, im]).models[0]
    s2 = im.means.var(ddof=1)
    assert summary.n_eff == pytest.approx(n * (s2 + expected * (1 - 1 / k)) / s2)
    assert summary.n_eff > n


def test_holm_across_pairs() -> None:
    rng = np.random.default_rng(5)
    cols = [rng.normal(mu, 1, 200) for mu in (0.0, 0.1, 0.3, 0.0)]
    ims = [item_means(c, np.arange(200), 200) for c in cols]
    res = compare_items(list("abcd"), ims, correction="holm")
    raw = np.array([p.p_value for p in res.pairs])
    from evalab.stats.multiple import holm_bonferroni

    assert [p.p_adjusted for p in res.pairs] == pytest.approx(holm_bonferroni(raw).tolist())
    assert len(compare_items(list("abcd"), ims, baseline=None).pairs) == 6


def _coverage(se: np.ndarray, est: np.ndarray, df: float, truth: float) -> float:
    q = scipy.stats.t.ppf(0.975, df)
    return float(np.mean(np.abs(est - truth) <= q * se))


def test_naive_se_undercovers_and_clustered_covers_on_clustered_data() -> None:
    # 2000 evaluations of 100 passages x 5 questions, vectorised; ICC 0.3 (deff 2.2)
    rng = np.random.default_rng(6)
    reps, g, m, icc = 2000, 100, 5, 0.3
    x = np.sqrt(icc) * np.repeat(rng.normal(size=(reps, g)), m, axis=1) + np.sqrt(
        1 - icc
    ) * rng.normal(size=(reps, g * m))
    clusters = np.repeat(np.arange(g), m)
    naive = np.array([estimate(row).se for row in x])
    clustered = np.array([estimate(row, clusters).se for row in x])
    mean = x.mean(axis=1)
    mc = 3 * np.sqrt(0.95 * 0.05 / reps)  # three Monte Carlo standard errors
    assert _coverage(naive, mean, g * m - 1, 0.0) < 0.95 - 0.1
    assert abs(_coverage(clustered, mean, g - 1, 0.0) - 0.95) < mc


def test_paired_ci_covers_under_the_null() -> None:
    rng = np.random.default_rng(7)
    reps, n = 2000, 300
    skill = rng.normal(size=(reps, n))  # item difficulty shared by both models: correlated scores
    a = (skill + rng.normal(size=(reps, n)) > 0).astype(float)
    b = (skill + rng.normal(size=(reps, n)) > 0).astype(float)
    covered = 0
    for ra, rb in zip(a, b, strict=True):
        e = estimate(rb - ra)
        covered += e.ci.low <= 0.0 <= e.ci.high
    assert abs(covered / reps - 0.95) < 3 * np.sqrt(0.95 * 0.05 / reps)


def test_clustered_bootstrap_resamples_whole_clusters() -> None:
    rng = np.random.default_rng(8)
    x, clusters = _clustered_data(rng, 60, 5, 0.5)
    y = x + rng.normal(0, 0.5, x.size)
    ims = [item_means(v, np.arange(v.size), v.size) for v in (x, y)]
    res = compare_items(["x", "y"], ims, clusters, n_samples=2000, seed=1)
    boot = res.bootstrap[0]
    clustered = res.models[0].clustered
    assert clustered is not None
    # the percentile interval's width is about the clustered one (not the naive, far smaller)
    assert (boot.high - boot.low) == pytest.approx(clustered.ci.high - clustered.ci.low, rel=0.2)


scores = arrays(
    np.float64, st.integers(3, 60), elements=st.floats(-100, 100, allow_nan=False, width=32)
)


@settings(max_examples=60, deadline=None)
@given(scores, st.floats(-50, 50), st.floats(0.1, 10))
def test_one_item_clusters_give_the_naive_se_and_shifts_do_not_matter(
    x, shift: float, scale: float
) -> None:
    singletons = np.arange(x.size)
    naive = estimate(x)
    assert estimate(x, singletons).se == pytest.approx(naive.se, rel=1e-9, abs=1e-12)
    moved = estimate(x * scale + shift)
    assert moved.se == pytest.approx(naive.se * scale, rel=1e-7, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(scores)
def test_a_model_against_itself_differs_by_nothing(x) -> None:
    im = item_means(x, np.arange(x.size), x.size)
    res = compare_items(["a", "b"], [im, im])
    pair = res.pairs[0]
    # no spread in the differences: the t test is 0/0, not p = 1 (the note says so)
    assert pair.delta == 0.0 and math.isnan(pair.p_value) and math.isnan(pair.paired.ci.low)
    assert res.notes == (NoSpread((("b", "a", 0.0),)),)
