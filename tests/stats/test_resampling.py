"""Resampling streams (sacrebleu's index matrices, chunked) and input validation."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.errors import InputError, SettingsError
from evalab.stats.resampling import (
    ar_swaps,
    as_scorer,
    bootstrap_counts,
    check_n_samples,
    check_seed,
    chunk_rows_for,
    resampled_sums,
    stats_matrix,
)

from .toy_metric import MeanMetric, mean_scorer


def sacrebleu_counts(n: int, n_samples: int, seed: int) -> np.ndarray:
    """Counts of sacrebleu's bootstrap index matrix (significance._paired_bs_test)."""
    idx = np.random.default_rng(seed).choice(n, size=(n_samples, n), replace=True)
    out = np.zeros((n_samples, n))
    for b in range(n_samples):
        out[b] = np.bincount(idx[b], minlength=n)
    return out


@pytest.mark.parametrize("chunk_rows", [None, 32, 64, 96])
@pytest.mark.parametrize("n", [1, 2, 37, 500])
def test_bootstrap_counts_are_sacrebleus_index_matrix(n, chunk_rows):
    got = np.concatenate(list(bootstrap_counts(n, 203, seed=7, chunk_rows=chunk_rows)))
    np.testing.assert_array_equal(got, sacrebleu_counts(n, 203, 7))
    assert np.all(got.sum(axis=1) == n)


@pytest.mark.parametrize("chunk_rows", [None, 32, 160])
@pytest.mark.parametrize("n", [1, 3, 2037])
def test_ar_swaps_are_sacrebleus_selector(n, chunk_rows):
    got = np.concatenate(list(ar_swaps(n, 333, seed=12345, chunk_rows=chunk_rows)))
    want = np.random.default_rng(12345).integers(2, size=(333, n), dtype=bool)
    np.testing.assert_array_equal(got, want.astype(np.float64))


def test_chunks_are_memory_bounded_and_cover_all_rows():
    n = 60_000
    rows = chunk_rows_for(n, 1000)
    assert rows % 32 == 0 and rows * n * 8 <= 32 * 1024 * 1024
    sizes = [c.shape for c in bootstrap_counts(n, 100, seed=0)]
    assert len(sizes) == 2
    assert sum(s[0] for s in sizes) == 100 and all(s[1] == n for s in sizes)
    assert max(s[0] for s in sizes) <= rows
    # a small corpus takes all resamples in one chunk
    assert chunk_rows_for(100, 1000) == 1024


@pytest.mark.parametrize("bad", [0, 31, 33, -32, 1.5, True])
def test_chunk_rows_must_be_a_multiple_of_32(bad):
    with pytest.raises(SettingsError, match="multiple of 32"):
        chunk_rows_for(10, 100, bad)


def test_seed_zero_is_a_seed():
    a = np.concatenate(list(bootstrap_counts(50, 10, seed=0)))
    b = np.concatenate(list(bootstrap_counts(50, 10, seed=0)))
    c = np.concatenate(list(bootstrap_counts(50, 10, seed=1)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(a, sacrebleu_counts(50, 10, 0))


@pytest.mark.parametrize("bad", [None, -1, 1.0, "1", True])
def test_bad_seeds_are_refused(bad):
    with pytest.raises(SettingsError, match="seed"):
        check_seed(bad)


@pytest.mark.parametrize("bad", [0, -5, 2.5, None, False])
def test_bad_sample_counts_are_refused(bad):
    with pytest.raises(SettingsError, match="n_samples"):
        check_n_samples(bad)


def test_stats_matrix_validation():
    assert stats_matrix([1.0, 2.0]).shape == (2, 1)
    with pytest.raises(InputError, match="no segments"):
        stats_matrix(np.zeros((0, 3)))
    with pytest.raises(InputError, match="NaN"):
        stats_matrix([[1.0, np.nan]])
    with pytest.raises(InputError, match="shape"):
        stats_matrix(np.zeros((2, 2, 2)))


def test_as_scorer_accepts_metrics_and_callables():
    fn, name = as_scorer(MeanMetric())
    assert name == "mean" and fn(np.array([6.0, 3.0])) == 2.0
    fn, name = as_scorer(mean_scorer)
    assert name == "mean_scorer"
    with pytest.raises(SettingsError, match="vectorised scorer"):
        as_scorer(3)


def test_resampled_sums_is_a_weighted_row_sum():
    stats = np.arange(24.0).reshape(4, 3, 2)
    w = np.array([[1.0, 0, 2, 1], [0, 0, 0, 4]])
    got = resampled_sums(w, stats)
    assert got.shape == (2, 3, 2)
    np.testing.assert_array_equal(got[0], stats[0] + 2 * stats[2] + stats[3])
    np.testing.assert_array_equal(got[1], 4 * stats[3])


def test_float32_products_only_when_exact():
    from evalab.stats.resampling import compact_stats

    counts = np.random.default_rng(0).integers(0, 50, size=(300, 6)).astype(float)
    assert compact_stats(counts, 300).dtype == np.float32
    # exact: the float32 product equals the float64 one for every resample
    w = np.concatenate(list(bootstrap_counts(300, 64, seed=3)))
    np.testing.assert_array_equal(resampled_sums(w, compact_stats(counts, 300)), w @ counts)
    # fractional values, or sums that could reach 2**24, stay float64
    assert compact_stats(counts + 0.5, 300).dtype == np.float64
    assert compact_stats(np.full((10, 1), 2.0**21), 10).dtype == np.float64
    assert compact_stats(np.full((10, 1), 2.0**20), 10).dtype == np.float32
