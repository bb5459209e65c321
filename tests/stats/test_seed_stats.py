"""Seed statistics against scipy (a test-only dependency): t distribution, Welch's t-test,
the permutation test, power and the seed count; plus ASO properties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evalab.stats.seed_stats import (
    aso,
    betainc,
    mean_ci,
    permutation_test,
    power_two_sample,
    seeds_needed,
    t_cdf,
    t_ppf,
    violation_ratio,
    welch,
)

stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize("a,b", [(0.5, 0.5), (2.0, 3.0), (10.0, 0.5), (0.3, 40.0), (150.0, 200.0)])
def test_betainc_matches_scipy(a, b):
    for x in np.linspace(0.0, 1.0, 41):
        assert betainc(a, b, x) == pytest.approx(special.betainc(a, b, x), abs=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 7, 12.3, 30, 200, 5000])
def test_t_cdf_and_ppf_match_scipy(df):
    for t in [-40.0, -6.0, -2.2, -1.0, -0.1, 0.0, 0.3, 1.7, 2.5, 9.0, 80.0]:
        assert t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), abs=1e-12)
    for p in [1e-6, 0.01, 0.025, 0.2, 0.5, 0.8, 0.975, 0.99, 1 - 1e-6]:
        assert t_ppf(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-8, abs=1e-9)


def test_mean_ci_matches_scipy():
    x = np.array([25.8, 25.3, 26.1, 25.5, 25.9])
    r = mean_ci(x)
    low, high = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert (r.low, r.high) == (pytest.approx(low, abs=1e-10), pytest.approx(high, abs=1e-10))
    assert r.std == pytest.approx(x.std(ddof=1))


@pytest.mark.parametrize("seed", range(8))
def test_welch_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1 + seed, 3 + seed)
    b = rng.normal(0.5, 1, 4 + 2 * seed)
    r = welch(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert r.t == pytest.approx(ref.statistic, rel=1e-10)
    assert r.p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-14)
    ci = ref.confidence_interval(0.95)
    assert (r.low, r.high) == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))


def test_welch_degenerate_cases():
    assert welch([1.0, 1.0], [1.0, 1.0]).p == 1.0
    assert welch([2.0, 2.0], [1.0, 1.0]).p == 0.0
    assert math.isnan(welch([1.0], [1.0, 2.0]).p)


def _abs_mean_diff(x, y, axis=-1):
    return np.abs(np.mean(x, axis=axis) - np.mean(y, axis=axis))


@pytest.mark.parametrize("na,nb", [(3, 3), (4, 5), (6, 6), (2, 7)])
def test_exact_permutation_matches_scipy(na, nb):
    rng = np.random.default_rng(na * 10 + nb)
    a, b = rng.normal(0, 1, na), rng.normal(0.8, 1, nb)
    p, exact = permutation_test(a, b)
    ref = stats.permutation_test(
        (a, b),
        _abs_mean_diff,
        permutation_type="independent",
        alternative="greater",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert exact and p == pytest.approx(ref.pvalue, abs=1e-12)


def test_monte_carlo_permutation_is_close_to_exact_and_seeded():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 10), rng.normal(0.7, 1, 10)
    exact, was_exact = permutation_test(a, b)
    mc, mc_exact = permutation_test(a, b, max_exact=10, resamples=20000, seed=1)
    assert was_exact and not mc_exact
    assert mc == pytest.approx(exact, abs=0.01)
    assert mc == permutation_test(a, b, max_exact=10, resamples=20000, seed=1)[0]


@pytest.mark.parametrize(
    "delta,sd,n", [(1.0, 1.0, 5), (0.5, 1.0, 20), (2.0, 3.0, 10), (0.2, 0.1, 3)]
)
def test_power_matches_scipy_noncentral_t(delta, sd, n):
    df = 2 * n - 2
    nc = delta / sd * math.sqrt(n / 2)
    tc = stats.t.ppf(0.975, df)
    ref = 1 - stats.nct.cdf(tc, df, nc) + stats.nct.cdf(-tc, df, nc)
    assert power_two_sample(delta, sd, n) == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("delta,sd", [(1.0, 1.0), (0.5, 1.0), (3.0, 1.0), (0.1, 0.5)])
def test_seeds_needed_is_the_smallest_sufficient_n(delta, sd):
    n = seeds_needed(delta, sd, alpha=0.05, power=0.8)

    def exact_power(k):
        df, nc = 2 * k - 2, delta / sd * math.sqrt(k / 2)
        tc = stats.t.ppf(0.975, df)
        return 1 - stats.nct.cdf(tc, df, nc) + stats.nct.cdf(-tc, df, nc)

    assert exact_power(n) >= 0.8
    assert n == 2 or exact_power(n - 1) < 0.8


def test_seeds_needed_without_an_effect():
    assert seeds_needed(0.0, 1.0) is None
    assert seeds_needed(1.0, float("nan")) is None


def test_aso_properties():
    rng = np.random.default_rng(0)
    good, bad = rng.normal(10, 1, 20), rng.normal(5, 1, 20)
    assert aso(good, bad, seed=0) < 0.05  # A clearly better: almost no violation
    assert aso(bad, good, seed=0) > 0.95
    same = rng.normal(0, 1, 20)
    mid = aso(same, same + rng.normal(0, 1e-3, 20), seed=0)
    assert 0.0 <= mid <= 1.0
    assert aso(good, bad, seed=4) == aso(good, bad, seed=4)  # seeded
    assert violation_ratio(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.5


@pytest.mark.parametrize("seed", range(6))
def test_paired_t_matches_scipy_ttest_rel(seed):
    from evalab.stats.seed_stats import paired_t

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    a = rng.normal(5.0, 2.0, n)
    b = a - rng.normal(0.7, 1.0, n)  # correlated with a, as a model evaluated twice is
    r = paired_t(a, b, confidence=0.9)
    ref = stats.ttest_rel(a, b)
    ci = ref.confidence_interval(confidence_level=0.9)
    assert r.delta == pytest.approx(float(np.mean(a - b)), abs=1e-12)
    assert r.t == pytest.approx(ref.statistic, rel=1e-10)
    assert r.df == ref.df
    assert r.p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-14)
    assert (r.low, r.high) == pytest.approx((ci.low, ci.high), rel=1e-8)


def test_paired_t_degenerate_and_unmatched():
    from evalab.stats.seed_stats import paired_t

    same = paired_t([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])  # every difference is exactly 1
    assert (same.delta, same.p, same.low, same.high) == (1.0, 0.0, 1.0, 1.0)
    assert paired_t([1.0, 2.0], [1.0, 2.0]).p == 1.0
    assert math.isnan(paired_t([1.0], [0.0]).p)
    with pytest.raises(ValueError, match="matched pairs"):
        paired_t([1.0, 2.0], [1.0])


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_exact_sign_flip_matches_scipy_permutation_test(n):
    from evalab.stats.seed_stats import sign_flip_test

    rng = np.random.default_rng(n)
    a, b = rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)
    p, exact = sign_flip_test(a, b)
    ref = stats.permutation_test(
        (a, b),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=np.inf,
    )
    assert exact
    assert p == pytest.approx(min(1.0, ref.pvalue), rel=1e-12)


def test_sign_flip_by_hand_and_monte_carlo():
    from evalab.stats.seed_stats import sign_flip_test

    # differences 1, 2, 3: of the 8 sign patterns only +++ and --- reach |mean| 2
    assert sign_flip_test([2.0, 3.0, 5.0], [1.0, 1.0, 2.0]) == (0.25, True)
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.3, 1.0, 20), rng.normal(0.0, 1.0, 20)
    exact, _ = sign_flip_test(a, b, max_exact=2**20)
    mc, is_exact = sign_flip_test(a, b, max_exact=100, resamples=20_000, seed=1)
    assert not is_exact and abs(mc - exact) < 0.02
    assert sign_flip_test(a, b, max_exact=100, seed=1) == sign_flip_test(
        a, b, max_exact=100, seed=1
    )


@pytest.mark.parametrize(("delta", "sd", "n"), [(1.0, 1.0, 5), (0.5, 2.0, 20), (2.0, 0.5, 3)])
def test_paired_power_matches_scipy_noncentral_t(delta, sd, n):
    from evalab.stats.seed_stats import power_paired

    df, nc = n - 1, delta / sd * math.sqrt(n)
    tc = stats.t.ppf(0.975, df)
    ref = stats.nct.sf(tc, df, nc) + stats.nct.cdf(-tc, df, nc)
    assert power_paired(delta, sd, n) == pytest.approx(ref, abs=1e-6)


def test_pairs_needed_is_the_smallest_sufficient_n():
    from evalab.stats.seed_stats import pairs_needed, power_paired

    n = pairs_needed(0.8, 1.0)
    assert power_paired(0.8, 1.0, n) >= 0.8 > power_paired(0.8, 1.0, n - 1)
    assert pairs_needed(0.0, 1.0) is None and pairs_needed(1.0, 0.0) == 2


def test_welch_with_spreads_near_the_smallest_float_keeps_its_degrees_of_freedom():
    # squared variances of ~1e-216 underflow to 0: the textbook df formula divided by zero
    e = 2e-108
    r = welch([0.0, e, -e], [50 * e, 51 * e, 49 * e])
    assert r.delta == pytest.approx(-50 * e) and r.df == pytest.approx(4.0) and r.p < 1e-4


@settings(max_examples=60, deadline=None)
@given(
    st.floats(min_value=1e300, max_value=1.7976931348623157e308),
    st.booleans(),
    st.integers(min_value=2, max_value=5),
    st.integers(min_value=2, max_value=5),
)
def test_identical_rows_near_the_float_limit_are_never_significant(magnitude, negative, na, nb):
    value = -magnitude if negative else magnitude
    from evalab.stats.seed_stats import mean_ci, paired_t, permutation_test, sign_flip_test, welch

    a, b = [value] * na, [value] * nb
    assert permutation_test(a, b)[0] == 1.0
    assert welch(a, b).p == 1.0 and welch(a, b).delta == 0.0
    assert paired_t(a, a).p == 1.0 and sign_flip_test(a, a)[0] == 1.0
    assert mean_ci(a).mean == value


# values of two decimals: tiny ones would underflow in the unscaled reference itself
_CENTS = st.integers(min_value=-10_000, max_value=10_000).map(lambda k: k / 100)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_CENTS, min_size=2, max_size=5),
    st.lists(_CENTS, min_size=2, max_size=5),
    st.integers(min_value=1000, max_value=1015),
)
def test_rescaled_statistics_match_the_unscaled_ones(a, b, exp):
    # values times 2**exp (near the float limit): p and t are those of the values themselves
    from evalab.stats.seed_stats import permutation_test, welch

    big_a, big_b = [math.ldexp(v, exp - 7) for v in a], [math.ldexp(v, exp - 7) for v in b]
    assume(all(math.isfinite(v) for v in big_a + big_b))
    assert permutation_test(big_a, big_b)[0] == pytest.approx(permutation_test(a, b)[0])
    small, big = welch(a, b), welch(big_a, big_b)
    assert (math.isnan(small.p) and math.isnan(big.p)) or big.p == pytest.approx(
        small.p, rel=1e-9, abs=1e-12
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=7),
    st.lists(st.integers(0, 4), min_size=1, max_size=7),
    st.floats(0.01, 10.0),
)
def test_exact_permutation_p_counts_every_relabeling(a, b, scale):
    """The half-sum count (relabelings built once per (n1, n2)) equals enumerating every
    relabeling, ties included (integer values make many)."""
    x, y = np.array(a) * scale, np.array(b) * scale
    pooled, observed = np.concatenate([x, y]), abs(x.mean() - y.mean())
    tol = 1e-9 * max(1.0, float(np.abs(pooled).max()))
    hits = [
        abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()) >= observed - tol
        for i in itertools.combinations(range(pooled.size), x.size)
    ]
    assert permutation_test(x, y) == (pytest.approx(float(np.mean(hits)), abs=1e-12), True)


def test_t_sf2_many_equals_the_scalar_function():
    from evalab.stats.seed_stats import t_sf2, t_sf2_many

    t = np.random.default_rng(0).normal(0, 3, 400)
    t[:3] = [0.0, np.inf, -np.inf]
    for df in (1, 3, 9.5, 804, 5000):
        expected = [t_sf2(float(v), df) for v in t]
        np.testing.assert_allclose(t_sf2_many(t, df), expected, rtol=1e-13, atol=1e-15)
