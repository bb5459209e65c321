"""Pairs of cells in bands of difference: every pair once, bands in order, same acc_eq."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.metaeval import cell_pairs
from evalab.metaeval.cell_pairs import pair_batches
from evalab.metaeval.flat_ties import acc_eq_flat_resampled, acc_eq_of_pairs, flat_pairs


@pytest.mark.parametrize("batch", [1, 7, 100, 10_000])
def test_every_pair_once_and_bands_in_order_of_difference(batch):
    rng = np.random.default_rng(batch)
    xs = np.sort(np.r_[rng.integers(0, 9, 60) / 3.0, rng.random(40) * 3])  # ties and not
    seen, last_max = [], -np.inf
    for i, j in pair_batches(xs, batch):
        assert np.all(i < j)
        d = xs[j] - xs[i]
        assert d.min() > last_max or (last_max == -np.inf)
        last_max = d.max()
        seen.extend(zip(i.tolist(), j.tolist(), strict=True))
    n = len(xs)
    assert sorted(seen) == [(a, b) for a in range(n) for b in range(a + 1, n)]


def test_small_batches_give_the_same_acc_eq_and_resamples(monkeypatch):
    rng = np.random.default_rng(3)
    seg = np.repeat(np.arange(30), 5)
    x = rng.integers(0, 12, len(seg)) / 4.0
    y = rng.choice([0.0, 0.0, -1.0, -5.0], len(seg))
    counts = rng.multinomial(30, np.ones(30) / 30, size=8).astype(np.float64)
    whole = flat_pairs(x, y, seg)
    monkeypatch.setattr(cell_pairs, "BATCH_PAIRS", 50)
    monkeypatch.setattr(cell_pairs.pair_batches, "__defaults__", (50,))
    banded = flat_pairs(x, y, seg)
    assert acc_eq_of_pairs(banded) == acc_eq_of_pairs(whole)
    assert np.array_equal(
        acc_eq_flat_resampled(banded, counts), acc_eq_flat_resampled(whole, counts)
    )
    assert np.array_equal(banded.agree, whole.agree)


@pytest.mark.parametrize("seed", range(4))
def test_the_kernel_sweep_finds_the_bisections_partners(seed, monkeypatch):
    """The compiled sweep and the numpy bisection give the same first partner per cell."""
    from evalab import _kernel

    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    rng = np.random.default_rng(seed)
    # ties, and differences that round differently than the sums: 0.1 steps
    xs = np.sort(np.r_[rng.integers(0, 40, 300) / 10.0, rng.random(100) * 4])
    edges = [0.1, 0.3, 1.0, *rng.random(5) * 4, 5.0]
    compiled = [cell_pairs._first_at_least(xs, t) for t in edges]
    monkeypatch.setattr(_kernel, "ties", None)
    for t, got in zip(edges, compiled, strict=True):
        assert np.array_equal(got, cell_pairs._first_at_least(xs, t)), t
