"""acc_eq with no grouping on resamples and its paired test, against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tests.metaeval.test_ties import _acc_at, brute_flat

from evalab import _kernel
from evalab.metaeval.flat_ties import (
    acc_eq_flat,
    acc_eq_flat_resampled,
    flat_pairs,
    pairwise_permutation_p,
)


@pytest.fixture(params=["kernel", "numpy"])
def implementation(request, monkeypatch):
    """Run a test with the compiled prefix-sum kernel and with its numpy fallback."""
    if request.param == "numpy":
        monkeypatch.setattr(_kernel, "ties", None)
    elif _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    return request.param


def _cells(rng, n_seg, per_seg):
    """Cells of ``n_seg`` segments (some unrated), with ties in both scores."""
    seg = np.repeat(np.arange(n_seg), per_seg)
    keep = rng.random(len(seg)) < 0.85
    seg = seg[keep]
    x = rng.integers(0, 7, len(seg)) / 2.0
    y = rng.choice([0.0, 0.0, -1.0, -5.0, -25.0], len(seg))
    return x, y, seg


def _assert_kernel_equals_numpy(pairs, counts, monkeypatch):
    """acc_eq on ``counts`` from the compiled kernel equals its numpy fallback's, exactly."""
    compiled = acc_eq_flat_resampled(pairs, counts)
    monkeypatch.setattr(_kernel, "ties", None)
    assert np.array_equal(compiled, acc_eq_flat_resampled(pairs, counts))


@pytest.mark.parametrize("seed", range(10))
def test_resampled_equals_the_definition_on_the_expanded_sample(seed, implementation):
    rng = np.random.default_rng(seed)
    n_seg = int(rng.integers(2, 7))
    x, y, seg = _cells(rng, n_seg, int(rng.integers(1, 4)))
    if len(x) < 2:
        return
    counts = rng.multinomial(n_seg, np.ones(n_seg) / n_seg, size=4).astype(np.float64)
    got = acc_eq_flat_resampled(flat_pairs(x, y, seg), counts)
    for b, row in enumerate(counts):
        idx = np.concatenate(
            [np.flatnonzero(seg == s).repeat(int(row[s])) for s in range(n_seg)]
        ).astype(int)
        if len(idx) < 2:
            assert np.isnan(got[b])
            continue
        assert got[b] == pytest.approx(brute_flat(x[idx], y[idx])[0], abs=1e-12)


def test_unit_counts_give_the_full_data_value(implementation):
    rng = np.random.default_rng(7)
    x, y, seg = _cells(rng, 30, 4)
    full = acc_eq_flat(x, y)
    assert full.accuracy == pytest.approx(brute_flat(x, y)[0], abs=1e-12)
    one = acc_eq_flat_resampled(flat_pairs(x, y, seg), np.ones((1, 30)))
    assert one[0] == pytest.approx(full.accuracy, abs=1e-12)


def test_kernel_equals_numpy_on_many_resamples(monkeypatch):
    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    rng = np.random.default_rng(11)
    x, y, seg = _cells(rng, 40, 6)
    pairs = flat_pairs(x, y, seg)
    # 8 passes of 128 resamples, the last one padded with zero counts
    counts = rng.multinomial(40, np.ones(40) / 40, size=1100).astype(np.float64)
    _assert_kernel_equals_numpy(pairs, counts, monkeypatch)


def test_kernel_equals_numpy_across_chunks_of_pairs(monkeypatch):
    """More pair entries than one of the kernel's cached chunks: sums and maxima carry over."""
    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    rng = np.random.default_rng(17)
    seg = np.repeat(np.arange(300), 2)
    x, y = rng.normal(size=len(seg)), rng.choice([0.0, -1.0, -5.0], len(seg))
    pairs = flat_pairs(x, y, seg)
    assert len(pairs.change) > 65536  # the kernel's CHUNK
    counts = rng.multinomial(300, np.ones(300) / 300, size=130).astype(np.float64)
    _assert_kernel_equals_numpy(pairs, counts, monkeypatch)


def test_kernel_equals_numpy_with_counts_near_a_byte(monkeypatch):
    """Counts up to 255 on 64 resamples and more: the widest products, summed exactly."""
    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    rng = np.random.default_rng(13)
    x, y, seg = _cells(rng, 40, 6)
    pairs = flat_pairs(x, y, seg)
    counts = rng.integers(0, 256, size=(70, 40)).astype(np.float64)
    counts[:, 0] = 255.0
    _assert_kernel_equals_numpy(pairs, counts, monkeypatch)


def test_counts_past_a_byte_give_the_numpy_numbers(monkeypatch):
    """A segment drawn 256 times or more is beyond the kernel's bytes: the numbers stay."""
    rng = np.random.default_rng(12)
    x, y, seg = _cells(rng, 40, 6)
    pairs = flat_pairs(x, y, seg)
    counts = rng.multinomial(40, np.ones(40) / 40, size=5).astype(np.float64)
    counts[2, 3] = 300.0
    _assert_kernel_equals_numpy(pairs, counts, monkeypatch)


def _exact_pairwise_p(xb, eb, xw, ew, y):
    """Every one of the 2^pairs swap patterns of PairwisePermutationSigDiff, enumerated."""
    pairs = list(itertools.combinations(range(len(y)), 2))

    def agree(x, e, i, j):
        return _acc_at(np.array([x[i], x[j]]), np.array([y[i], y[j]]), e) == 1.0

    a = np.array([[agree(xb, eb, i, j), agree(xw, ew, i, j)] for i, j in pairs], dtype=int)
    delta = a[:, 0].sum() - a[:, 1].sum()
    reached = 0
    for swap in itertools.product([0, 1], repeat=len(pairs)):
        s = np.array(swap)
        better = np.where(s, a[:, 1], a[:, 0]).sum()
        worse = np.where(s, a[:, 0], a[:, 1]).sum()
        reached += better - worse >= delta
    return reached / 2 ** len(pairs)


@pytest.mark.parametrize("seed", range(4))
def test_pairwise_permutation_equals_swapping_every_pair(seed):
    rng = np.random.default_rng(seed)
    y = rng.choice([0.0, -1.0, -5.0], 5)  # 10 pairs: 1024 swap patterns
    xb, xw = rng.integers(0, 5, 5) / 2.0, rng.integers(0, 5, 5) / 2.0
    eb, ew = acc_eq_flat(xb, y).threshold, acc_eq_flat(xw, y).threshold
    exact = _exact_pairwise_p(xb, eb, xw, ew, y)
    drawn = pairwise_permutation_p((xb, eb), (xw, ew), y, 200_000, np.random.default_rng(1))
    assert drawn == pytest.approx(exact, abs=0.005)


def test_identical_metrics_are_never_significantly_different():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=50), rng.choice([0.0, -1.0], 50)
    e = acc_eq_flat(x, y).threshold
    assert pairwise_permutation_p((x, e), (x, e), y, 100, rng) == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_pairs_built_by_the_kernel_equal_numpy(seed, monkeypatch):
    """The compiled band loop gives the numpy fallback's pairs, in the same order."""
    from evalab.metaeval import cell_pairs

    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    rng = np.random.default_rng(seed)
    x, y, seg = _cells(rng, int(rng.integers(5, 60)), int(rng.integers(1, 9)))
    monkeypatch.setattr(cell_pairs.pair_bands, "__defaults__", (int(rng.integers(20, 400)),))
    compiled = flat_pairs(x, y, seg)
    monkeypatch.setattr(_kernel, "ties", None)
    fallback = flat_pairs(x, y, seg)
    for name in ("first", "second", "change", "ends", "agree", "cells", "segments"):
        assert np.array_equal(getattr(compiled, name), getattr(fallback, name)), name
    assert compiled.point == fallback.point


def test_a_run_merged_past_a_byte_keeps_its_sum(monkeypatch):
    """400 pairs of one run join the same two segments: entries of 127, 127, 127 and 19."""
    x = np.r_[np.zeros(20), np.ones(20), [0.5, 2.0]]
    y = np.r_[np.zeros(40), [-1.0, 1.0]]
    seg = np.r_[np.zeros(20, int), np.ones(20, int), [2, 3]]
    pairs = flat_pairs(x, y, seg)
    at = (pairs.first == 0) & (pairs.second == 1)
    assert sorted(pairs.change[at].tolist()) == [19, 127, 127, 127]
    counts = np.random.default_rng(5).multinomial(4, np.ones(4) / 4, size=40).astype(float)
    got = acc_eq_flat_resampled(pairs, counts)
    for row, value in zip(counts, got, strict=True):
        idx = np.repeat(np.arange(len(x)), row[seg].astype(int))
        if len(idx) >= 2:
            want = brute_flat(x[idx], y[idx])[0]
            assert value == pytest.approx(want, abs=1e-12)
    monkeypatch.setattr(_kernel, "ties", None)
    fallback = flat_pairs(x, y, seg)
    for name in ("first", "second", "change", "ends"):
        assert np.array_equal(getattr(pairs, name), getattr(fallback, name)), name
    assert np.array_equal(got, acc_eq_flat_resampled(fallback, counts), equal_nan=True)
