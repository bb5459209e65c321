"""acc_eq with tie calibration against the definition of Deutsch et al. (2023), by brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.metaeval.flat_ties import acc_eq_flat
from evalab.metaeval.ties import acc_eq_grouped, group_pairs


def _acc_at(x, y, eps):
    pairs = list(itertools.combinations(range(len(x)), 2))
    good = 0
    for i, j in pairs:
        dm, dh = x[i] - x[j], y[i] - y[j]
        metric_tie = abs(dm) <= eps
        good += (metric_tie and dh == 0) or (
            not metric_tie and np.sign(dm) == np.sign(dh) and dh != 0
        )
    return good / len(pairs)


def _candidates(xs):
    return sorted({0.0} | {abs(a - b) for x in xs for a, b in itertools.combinations(x, 2)})


def brute_flat(x, y):
    """The paper's search: every pair difference is a candidate ε; the first best is kept."""
    best = max(_candidates([x]), key=lambda e: (_acc_at(x, y, e), -e))
    return _acc_at(x, y, best), best


def brute_grouped(xm, ym, mask):
    groups = [
        (xm[mask[:, g], g], ym[mask[:, g], g]) for g in range(xm.shape[1]) if mask[:, g].sum() >= 2
    ]

    def acc(eps):
        return np.mean([_acc_at(x, y, eps) for x, y in groups])

    best = max(_candidates([x for x, _ in groups]), key=lambda e: (acc(e), -e))
    return acc(best), best


@pytest.mark.parametrize("seed", range(12))
def test_flat_equals_the_definition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    x = rng.integers(0, 6, n) / 2.0
    y = rng.choice([0.0, 0.0, -1.0, -5.0, -25.0], n)
    got = acc_eq_flat(x, y)
    acc, eps = brute_flat(x, y)
    assert got.accuracy == pytest.approx(acc, abs=1e-12)
    assert got.threshold == pytest.approx(eps, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_grouped_equals_the_definition(seed):
    rng = np.random.default_rng(100 + seed)
    shape = (int(rng.integers(2, 6)), int(rng.integers(1, 12)))
    x = rng.integers(0, 5, shape) / 4.0
    y = rng.choice([0.0, -1.0, -2.0], shape)
    mask = rng.random(shape) < 0.8
    got = acc_eq_grouped(group_pairs(x, y, mask))
    if (mask.sum(axis=0) < 2).all():
        assert np.isnan(got.accuracy)
        return
    acc, eps = brute_grouped(x, y, mask)
    assert got.accuracy == pytest.approx(acc, abs=1e-12)
    assert got.threshold == pytest.approx(eps, abs=1e-12)


def test_resample_weights_equal_duplicated_groups():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, (4, 6)) / 4.0
    y = rng.choice([0.0, -1.0, -2.0], (4, 6))
    mask = np.ones_like(x, dtype=bool)
    counts = np.array([[2.0, 0, 1, 1, 0, 3]])
    idx = np.repeat(np.arange(6), counts[0].astype(int))
    expanded = acc_eq_grouped(group_pairs(x[:, idx], y[:, idx], mask[:, idx]))
    weighted = acc_eq_grouped(group_pairs(x, y, mask), counts)
    assert weighted.accuracy[0] == pytest.approx(expanded.accuracy, abs=1e-12)
    assert weighted.threshold[0] == pytest.approx(expanded.threshold, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.sampled_from([0.0, -1.0, -5.0])), min_size=2, max_size=15
    )
)
def test_flat_properties(cells):
    x = np.array([c[0] for c in cells], dtype=float)
    y = np.array([c[1] for c in cells])
    res = acc_eq_flat(x, y)
    assert 0.0 <= res.accuracy <= 1.0
    # calibration can only help: acc_eq is at least the accuracy without new ties
    assert res.accuracy >= _acc_at(x, y, 0.0) - 1e-12
    # a positive affine change of the metric scales ε and keeps the accuracy
    scaled = acc_eq_flat(3 * x + 1, y)
    assert scaled.accuracy == pytest.approx(res.accuracy, abs=1e-12)
    assert scaled.threshold == pytest.approx(3 * res.threshold, abs=1e-9)


def test_swapped_pseudo_metrics_equal_one_at_a_time():
    from evalab.metaeval.ties import acc_eq_grouped_swapped

    rng = np.random.default_rng(9)
    better, worse = rng.integers(0, 5, (2, 4, 15)) / 4.0  # ties in both, and across them
    y = np.where(rng.random((4, 15)) < 0.8, rng.choice([0.0, -1.0, -2.0], (4, 15)), np.nan)
    mask = np.isfinite(y)
    swap = rng.integers(2, size=(40, 4, 15), dtype=bool)  # 40 trials: more than one block
    first, second = acc_eq_grouped_swapped(better, worse, swap, np.where(mask, y, 0.0), mask)
    for t in range(len(swap)):
        for got, x in (
            (first[t], np.where(swap[t], worse, better)),
            (second[t], np.where(swap[t], better, worse)),
        ):
            one = acc_eq_grouped(group_pairs(x, np.where(mask, y, 0.0), mask)).accuracy
            assert got == pytest.approx(one, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_swapped_kernel_equals_numpy(seed, monkeypatch):
    """The compiled swapped curves give the numpy fallback's numbers, bit for bit."""
    from evalab import _kernel
    from evalab.metaeval.ties import acc_eq_grouped_swapped

    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    rng = np.random.default_rng(seed)
    n_sys, n_seg = int(rng.integers(2, 7)), int(rng.integers(1, 40))
    # coarse scores: ties within and across the metrics; some segments unrated
    better, worse = rng.integers(0, int(rng.integers(2, 9)), (2, n_sys, n_seg)) / 4.0
    y = np.where(
        rng.random((n_sys, n_seg)) < 0.8, rng.choice([0.0, -1.0, -5.0], (n_sys, n_seg)), np.nan
    )
    mask = np.isfinite(y)
    swap = rng.integers(2, size=(int(rng.integers(1, 60)), n_sys, n_seg), dtype=bool)
    args = (better, worse, swap, np.where(mask, y, 0.0), mask)
    compiled = acc_eq_grouped_swapped(*args)
    monkeypatch.setattr(_kernel, "ties", None)
    fallback = acc_eq_grouped_swapped(*args)
    for got, want in zip(compiled, fallback, strict=True):
        assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("seed", range(6))
def test_grouped_resamples_kernel_equals_numpy(seed, monkeypatch):
    """The compiled curves of acc_eq by item on resamples give numpy's numbers, bit for bit."""
    from evalab import _kernel

    if _kernel.ties is None:
        pytest.skip("evalab._tieskernel is not built")
    rng = np.random.default_rng(seed)
    n_sys, n_seg = int(rng.integers(2, 7)), int(rng.integers(1, 40))
    # coarse scores tie often; fine ones make sums equal only up to rounding
    x = rng.integers(0, int(rng.integers(2, 9)), (n_sys, n_seg)) / 3.0
    if seed % 2:
        x = x + rng.normal(0, 1e-3, x.shape)
    y = rng.choice([0.0, -1.0, -5.0], (n_sys, n_seg))
    mask = rng.random((n_sys, n_seg)) < 0.8
    pairs = group_pairs(x, y, mask)
    counts = rng.multinomial(n_seg, np.ones(n_seg) / n_seg, size=50).astype(np.float64)
    for weights in (None, counts):
        compiled = acc_eq_grouped(pairs, weights)
        monkeypatch.setattr(_kernel, "ties", None)
        fallback = acc_eq_grouped(pairs, weights)
        monkeypatch.undo()
        assert np.array_equal(compiled.accuracy, fallback.accuracy, equal_nan=True)
        assert np.array_equal(compiled.threshold, fallback.threshold, equal_nan=True)
