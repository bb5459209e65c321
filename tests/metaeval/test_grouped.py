"""Group-by-item correlations against scipy, segment by segment."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.metaeval.grouped import item_kendall, item_pearson, weighted_mean

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("seed", range(6))
def test_per_segment_values_equal_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, (6, 30)).astype(float)
    y = rng.choice([0.0, -1.0, -2.0, -5.0], (6, 30))
    mask = rng.random((6, 30)) < 0.75
    taus, rs = item_kendall(x, y, mask), item_pearson(x, y, mask)
    for g in range(30):
        a, b = x[mask[:, g], g], y[mask[:, g], g]
        if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
            assert np.isnan(taus[g]) and np.isnan(rs[g])
            continue
        assert taus[g] == pytest.approx(scipy_stats.kendalltau(a, b).statistic, abs=1e-12)
        assert rs[g] == pytest.approx(scipy_stats.pearsonr(a, b)[0], abs=1e-12)


def test_weighted_mean_skips_undefined_and_counts_resamples():
    values = np.array([0.2, np.nan, 0.8])
    assert weighted_mean(values) == pytest.approx(0.5)
    assert weighted_mean(values, np.array([[3.0, 5.0, 1.0]]))[0] == pytest.approx((0.6 + 0.8) / 4)
    assert np.isnan(weighted_mean(values, np.array([[0.0, 2.0, 0.0]]))[0])


def test_several_metrics_at_once_equal_each_alone():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 4, (5, 6, 30)) / 2.0  # 5 metrics, ties within segments
    y = rng.choice([0.0, -1.0, -5.0], (6, 30))
    mask = rng.random((6, 30)) < 0.8
    together = item_kendall(x, y, mask)
    for metric, got in zip(x, together, strict=True):
        assert np.array_equal(got, item_kendall(metric, y, mask), equal_nan=True)


def test_a_nan_score_leaves_its_segment_undefined_as_before():
    x = np.array([[1.0, np.nan, 2.0], [2.0, 1.0, 1.0], [3.0, 0.0, 0.0]])
    y = np.array([[1.0, 1.0, 3.0], [2.0, 2.0, 2.0], [3.0, 3.0, 1.0]])
    got = item_kendall(x, y, np.ones_like(x, dtype=bool))
    assert got[0] == pytest.approx(1.0) and np.isnan(got[1]) and got[2] == pytest.approx(1.0)
