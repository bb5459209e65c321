"""Bootstrap confidence intervals: brute force, sacrebleu's estimate_ci, edge cases, properties."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.errors import InputError, SettingsError
from evalab.stats import ConfidenceInterval, bootstrap_ci, percentile_interval

from .toy_metric import MeanMetric, mean_rows, mean_scorer


def brute_force_ci(values, n_samples, seed, confidence):
    """Resample the values themselves in a loop and take percentile indices by hand."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    idx = np.random.default_rng(seed).choice(n, size=(n_samples, n), replace=True)
    scores = np.sort([values[row].mean() for row in idx])
    lower = math.floor(n_samples * (1 - confidence) / 2 + 1e-9)
    return scores.mean(), scores[lower], scores[n_samples - lower - 1]


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.5, 0.99])
@pytest.mark.parametrize("n_samples", [1, 40, 1000, 1001])
def test_matches_brute_force(n_samples, confidence):
    values = np.random.default_rng(3).gamma(2.0, size=57)
    ci = bootstrap_ci(MeanMetric(), mean_rows(values), n_samples, confidence, seed=11)
    mean, low, high = brute_force_ci(values, n_samples, 11, confidence)
    assert ci.score == pytest.approx(values.mean(), abs=1e-12)
    assert (ci.mean, ci.low, ci.high) == pytest.approx((mean, low, high), abs=1e-12)
    assert ci.half_width == pytest.approx((high - low) / 2, abs=1e-12)
    assert (ci.n_samples, ci.seed, ci.confidence) == (n_samples, 11, confidence)


def test_percentile_interval_is_sacrebleus_estimate_ci():
    from sacrebleu.significance import estimate_ci

    for n in (1, 39, 40, 41, 1000, 2000, 12345):
        scores = np.random.default_rng(n).normal(30, 2, size=n)
        mean, low, high = percentile_interval(scores, 0.95)
        sb_mean, sb_half = estimate_ci(scores)
        assert mean == pytest.approx(sb_mean, abs=1e-12)
        assert (high - low) / 2 == pytest.approx(sb_half, abs=1e-12)


def test_metric_and_scorer_give_the_same_interval_and_chunking_does_not_matter():
    rows = mean_rows(np.random.default_rng(0).random(300))
    a = bootstrap_ci(MeanMetric(), rows, 500, seed=4)
    b = bootstrap_ci(mean_scorer, rows, 500, seed=4, chunk_rows=32)
    assert a == b


def test_default_seed_is_fixed_and_seed_zero_differs():
    rows = mean_rows(np.random.default_rng(1).random(100))
    assert bootstrap_ci(mean_scorer, rows) == bootstrap_ci(mean_scorer, rows, seed=12345)
    assert bootstrap_ci(mean_scorer, rows, seed=0) == bootstrap_ci(mean_scorer, rows, seed=0)
    assert bootstrap_ci(mean_scorer, rows, seed=0) != bootstrap_ci(mean_scorer, rows, seed=1)


def test_one_segment_gives_a_point_and_warns():
    with pytest.warns(UserWarning, match="only one segment"):
        ci = bootstrap_ci(mean_scorer, mean_rows([0.7]), n_samples=50)
    assert ci.low == ci.high == ci.score == 0.7
    assert ci.mean == pytest.approx(0.7, abs=1e-12)
    assert ci.half_width == 0.0


def test_errors():
    rows = mean_rows([1.0, 2.0])
    with pytest.raises(SettingsError, match="at least 1"):
        bootstrap_ci(mean_scorer, rows, n_samples=0)
    with pytest.raises(SettingsError, match="confidence"):
        bootstrap_ci(mean_scorer, rows, confidence=95)
    with pytest.raises(InputError, match="no segments"):
        bootstrap_ci(mean_scorer, np.zeros((0, 2)))
    with pytest.raises(SettingsError, match="seed"):
        bootstrap_ci(mean_scorer, rows, seed=None)


def test_format_and_dict():
    ci = ConfidenceInterval(28.41, 28.43, 27.7, 29.1, 0.95, 1000, 12345)
    assert ci.format(1) == "28.4 (28.4 ± 0.7)"
    d = ci.to_dict()
    assert d["ci_low"] == 27.7 and d["ci_high"] == 29.1 and d["half_width"] == pytest.approx(0.7)
    assert ci.signature == "bs:1000|seed:12345|conf:0.95"


values_st = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40)


@settings(max_examples=60, deadline=None)
@given(values=values_st, seed=st.integers(0, 2**32), conf=st.floats(0.05, 0.999))
def test_interval_properties(values, seed, conf):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for >= 2 segments
        ci = bootstrap_ci(mean_scorer, mean_rows(values), 64, conf, seed)
    tol = 1e-9 * (1 + max(abs(v) for v in values))
    # bounds are resampled means: ordered, and inside the range of the data
    assert ci.low <= ci.high
    assert min(values) - tol <= ci.low and ci.high <= max(values) + tol
    # a narrower level never gives a wider interval on the same resamples
    narrow = bootstrap_ci(mean_scorer, mean_rows(values), 64, conf / 2, seed)
    assert ci.low <= narrow.low <= narrow.high <= ci.high


@settings(max_examples=30, deadline=None)
@given(value=st.floats(-1e6, 1e6, allow_nan=False), n=st.integers(2, 30))
def test_constant_data_has_a_zero_width_interval(value, n):
    ci = bootstrap_ci(mean_scorer, mean_rows([value] * n), 50, seed=0)
    assert ci.low == pytest.approx(value, rel=1e-12, abs=1e-12)
    assert ci.half_width == pytest.approx(0.0, abs=1e-9 * (1 + abs(value)))
