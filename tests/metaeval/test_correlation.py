"""Pearson, Kendall τ_b and pairwise accuracy against scipy and the direct definitions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.metaeval.correlation import kendall_tau_b, pairwise_accuracy, pearson

scipy_stats = pytest.importorskip("scipy.stats")


def _data(seed: int, n: int, distinct: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, distinct, n).astype(float)
    y = (x + rng.normal(0, 3, n)).round(1)
    return x, y


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("n", "distinct"), [(2, 5), (7, 3), (50, 4), (400, 1000), (3000, 30)])
def test_equal_to_scipy_with_ties(seed, n, distinct):
    x, y = _data(seed, n, distinct)
    ref_tau = scipy_stats.kendalltau(x, y).statistic
    ref_r = scipy_stats.pearsonr(x, y)[0] if np.ptp(x) and np.ptp(y) else np.nan
    assert kendall_tau_b(x, y) == pytest.approx(ref_tau, abs=1e-12, nan_ok=True)
    assert pearson(x, y) == pytest.approx(ref_r, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("seed", range(5))
def test_weights_equal_the_expanded_sample(seed):
    x, y = _data(seed, 300, 20)
    counts = np.random.default_rng(seed).integers(0, 4, (6, 300)).astype(float)
    taus, rs = kendall_tau_b(x, y, counts), pearson(x, y, counts)
    for row, tau, r in zip(counts, taus, rs, strict=True):
        idx = np.repeat(np.arange(300), row.astype(int))
        assert tau == pytest.approx(scipy_stats.kendalltau(x[idx], y[idx]).statistic, abs=1e-12)
        assert r == pytest.approx(scipy_stats.pearsonr(x[idx], y[idx])[0], abs=1e-12)


def test_constant_input_is_undefined():
    assert np.isnan(kendall_tau_b(np.ones(5), np.arange(5.0)))
    assert np.isnan(pearson(np.arange(5.0), np.ones(5)))


def _accuracy_by_pairs(x, y):
    pairs = list(itertools.combinations(range(len(x)), 2))
    return sum(np.sign(x[i] - x[j]) == np.sign(y[i] - y[j]) for i, j in pairs) / len(pairs)


@pytest.mark.parametrize("seed", range(10))
def test_pairwise_accuracy_by_definition(seed):
    x, y = _data(seed, 9, 4)
    assert pairwise_accuracy(x, y) == pytest.approx(_accuracy_by_pairs(x, y), abs=1e-12)
    batch = np.stack([x, x[::-1]]), np.stack([y, y])
    assert pairwise_accuracy(*batch)[1] == pytest.approx(_accuracy_by_pairs(x[::-1], y), abs=1e-12)


def test_known_correlation_of_a_bivariate_normal():
    rho = 0.6
    rng = np.random.default_rng(7)
    z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=20000)
    assert pearson(z[:, 0], z[:, 1]) == pytest.approx(rho, abs=0.02)
    # Greiner's relation for a bivariate normal: tau = 2/pi * arcsin(rho)
    assert kendall_tau_b(z[:, 0], z[:, 1]) == pytest.approx(2 / np.pi * np.arcsin(rho), abs=0.02)


values = st.lists(st.integers(-5, 5), min_size=3, max_size=40)


@settings(max_examples=60, deadline=None)
@given(values, st.randoms(use_true_random=False))
def test_properties(xs, rnd):
    x = np.array(xs, dtype=float)
    y = np.array([v + rnd.randint(-3, 3) for v in xs], dtype=float)
    tau = kendall_tau_b(x, y)
    ref = scipy_stats.kendalltau(x, y).statistic
    assert tau == pytest.approx(ref, abs=1e-12, nan_ok=True)
    # symmetric, sign-flipping, invariant under a strictly increasing transform
    assert kendall_tau_b(y, x) == pytest.approx(tau, abs=1e-12, nan_ok=True)
    assert kendall_tau_b(-x, y) == pytest.approx(-tau, abs=1e-12, nan_ok=True)
    assert kendall_tau_b(np.exp(x), y) == pytest.approx(tau, abs=1e-12, nan_ok=True)
    if np.isfinite(tau):
        assert -1.0 <= tau <= 1.0


@pytest.mark.parametrize("n_classes", [1, 3, 34, 200])
def test_kendall_rows_equal_scipy_row_by_row(n_classes):
    from evalab.metaeval.correlation import kendall_tau_b_rows

    rng = np.random.default_rng(n_classes)
    y = rng.integers(0, n_classes, 300) / 3.0
    x = rng.integers(0, 40, (70, 300)) / 7.0  # ties in x too; 70 rows: more than one batch
    x[3] = 1.0  # a constant row: undefined
    got = kendall_tau_b_rows(x, y)
    for row, tau in zip(x, got, strict=True):
        assert tau == pytest.approx(
            scipy_stats.kendalltau(row, y).statistic, abs=1e-12, nan_ok=True
        )


@pytest.mark.parametrize("n_classes", [1, 3, 34, 200])
@pytest.mark.parametrize("distinct", [3, 40, 10**6])
def test_swapped_kendall_kernel_equals_the_rows(n_classes, distinct, monkeypatch):
    """The merged pseudo-metrics of the kernel give kendall_tau_b_rows' numbers, bit for bit."""
    from evalab import _kernel
    from evalab.metaeval.correlation import kendall_tau_b_rows, kendall_tau_b_swapped

    rng = np.random.default_rng(n_classes * 7 + distinct)
    y = rng.integers(0, n_classes, 250) / 3.0
    # coarse scores: ties within each metric and across the two
    better, worse = rng.integers(0, distinct, (2, 250)) / 7.0
    swap = rng.integers(2, size=(30, 250), dtype=bool)
    swap[0] = False
    swap[1] = True
    got = kendall_tau_b_swapped(better, worse, swap, y)
    assert np.array_equal(
        got[0], kendall_tau_b_rows(np.where(swap, worse, better), y), equal_nan=True
    )
    assert np.array_equal(
        got[1], kendall_tau_b_rows(np.where(swap, better, worse), y), equal_nan=True
    )
    monkeypatch.setattr(_kernel, "ties", None)
    fallback = kendall_tau_b_swapped(better, worse, swap, y)
    for a, b in zip(got, fallback, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("seed", range(4))
def test_weighted_kendall_kernel_equals_numpy(seed, monkeypatch):
    """Bootstrap weights: the kernel's inversion counts give numpy's τ_b, bit for bit."""
    from evalab import _kernel

    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    x, y = _data(seed, 300, 12)
    weights = np.random.default_rng(seed).multinomial(300, np.ones(300) / 300, size=40)
    compiled = kendall_tau_b(x, y, weights.astype(np.float64))
    monkeypatch.setattr(_kernel, "ties", None)
    assert np.array_equal(compiled, kendall_tau_b(x, y, weights.astype(np.float64)))


def test_pearson_rows_equal_pearson_row_by_row():
    from evalab.metaeval.correlation import pearson_rows

    rng = np.random.default_rng(4)
    y = rng.normal(size=500).round(1)
    x = rng.normal(size=(20, 500)) * rng.uniform(0.1, 100, (20, 1))
    x[3] = 2.5  # constant: undefined
    got = pearson_rows(x, y)
    assert np.array_equal(got, [pearson(row, y) for row in x], equal_nan=True)
