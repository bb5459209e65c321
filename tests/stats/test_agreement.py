"""Krippendorff's α, Cohen's κ and Fleiss' κ against krippendorff, scikit-learn and statsmodels.

Random tables (seeded) of 2-40 items, 2-5 raters, 2-6 values on three scales, 30% of the
ratings missing for α; the coefficients must equal the peers' to 1e-9, and each bootstrap
interval must be the percentile interval of the peer's coefficient on the resampled items
(the same resamples, rebuilt as tables).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.errors import InputError, SettingsError
from evalab.stats.agreement import LEVELS, cohen_kappa, fleiss_kappa, krippendorff_alpha
from evalab.stats.bootstrap import percentile_interval
from evalab.stats.resampling import bootstrap_counts

krippendorff = pytest.importorskip("krippendorff")
sk_metrics = pytest.importorskip("sklearn.metrics")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")


def _table(rng: np.random.Generator, missing: float) -> np.ndarray:
    items, raters, size = rng.integers(2, 41), rng.integers(2, 6), rng.integers(2, 7)
    values = rng.choice(np.arange(1, 20) * rng.choice([1.0, 0.5, 3.0]), size, replace=False)
    data = rng.choice(values, (items, raters)).astype(float)
    data[rng.random((items, raters)) < missing] = np.nan
    return data


def _peer_alpha(data: np.ndarray, level: str) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return float(krippendorff.alpha(reliability_data=data.T, level_of_measurement=level))
        except ValueError:  # fewer than two values, or no item rated twice
            return float("nan")


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_equals_krippendorff(level: str) -> None:
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(150):
        data = _table(rng, 0.3)
        expected = _peer_alpha(data, level)
        if not np.isfinite(expected):
            continue
        assert krippendorff_alpha(data, level, n_samples=32).value == pytest.approx(
            expected, abs=1e-9
        )
        checked += 1
    assert checked > 100


def test_alpha_documented_example() -> None:
    # the example of krippendorff's docstring (Krippendorff 2011, with missing values)
    nan = np.nan
    data = np.array(
        [
            [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
            [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
            [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
        ]
    ).T
    assert round(krippendorff_alpha(data, "nominal", n_samples=10).value, 6) == 0.691358
    assert round(krippendorff_alpha(data, "interval", n_samples=10).value, 6) == 0.810845


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_alpha_interval_is_the_peer_on_resampled_items(level: str) -> None:
    rng = np.random.default_rng(3)
    data = rng.integers(1, 5, (30, 3)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    got = krippendorff_alpha(data, level, n_samples=64, seed=11)
    rated = data[(np.isfinite(data).sum(axis=1) >= 2)]
    counts = next(bootstrap_counts(rated.shape[0], 64, 11)).astype(int)
    peer = [_peer_alpha(np.repeat(rated, row, axis=0), level) for row in counts]
    _, low, high = percentile_interval(np.array(peer), 0.95)
    assert (got.ci.low, got.ci.high) == pytest.approx((low, high), abs=1e-9)
    assert got.signature.startswith(f"alpha|{level}|items:{rated.shape[0]}|bs:64|seed:11")


@pytest.mark.parametrize("weights", ["none", "linear", "quadratic"])
def test_cohen_kappa_equals_scikit_learn(weights: str) -> None:
    rng = np.random.default_rng(5)
    for _ in range(100):
        n, size = rng.integers(5, 60), rng.integers(2, 6)
        a = rng.integers(0, size, n)
        b = np.where(rng.random(n) < 0.6, a, rng.integers(0, size, n))
        if np.unique(np.concatenate([a, b])).size < 2:
            continue
        expected = sk_metrics.cohen_kappa_score(
            a, b, weights=None if weights == "none" else weights
        )
        got = cohen_kappa(a, b, weights, n_samples=16).value  # type: ignore[arg-type]
        assert got == pytest.approx(expected, abs=1e-9)


def test_cohen_kappa_skips_items_one_rater_missed() -> None:
    a = np.array([1, 2, np.nan, 2, 1, 1])
    b = np.array([1, 2, 2, np.nan, 2, 1])
    got = cohen_kappa(a, b, n_samples=10)
    assert got.n_items == 4
    assert got.value == pytest.approx(sk_metrics.cohen_kappa_score([1, 2, 1, 1], [1, 2, 2, 1]))


def test_fleiss_kappa_equals_statsmodels() -> None:
    rng = np.random.default_rng(9)
    for _ in range(100):
        items, raters, size = rng.integers(2, 50), rng.integers(2, 8), rng.integers(2, 6)
        data = rng.integers(0, size, (items, raters)).astype(float)
        if np.unique(data).size < 2:
            continue
        table, _ = inter_rater.aggregate_raters(data)
        expected = inter_rater.fleiss_kappa(table, method="fleiss")
        assert fleiss_kappa(data, n_samples=16).value == pytest.approx(expected, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=2, max_size=30),
    st.sampled_from(LEVELS),
)
def test_perfect_agreement_is_one(labels: list[int], level: str) -> None:
    if len(set(labels)) < 2:
        return
    data = np.array([[x + 1, x + 1, x + 1] for x in labels], dtype=float)
    assert krippendorff_alpha(data, level, n_samples=8).value == pytest.approx(1.0)
    assert fleiss_kappa(data, n_samples=8).value == pytest.approx(1.0)
    assert cohen_kappa(data[:, 0], data[:, 1], n_samples=8).value == pytest.approx(1.0)


def test_refusals_name_what_is_wrong() -> None:
    with pytest.raises(InputError, match="at least two distinct values"):
        krippendorff_alpha([[1, 1], [1, 1]], "nominal")
    with pytest.raises(InputError, match="rated by two raters"):
        krippendorff_alpha([[1, np.nan], [np.nan, 2]], "nominal")
    with pytest.raises(InputError, match="finite"):
        krippendorff_alpha([[1, np.inf], [2, 2]], "interval")
    with pytest.raises(SettingsError, match="level must be one of"):
        krippendorff_alpha([[1, 2], [2, 2]], "cardinal")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="must not be negative"):
        krippendorff_alpha([[-1, 2], [2, 2]], "ratio")
    with pytest.raises(InputError, match="with missing ratings use Krippendorff"):
        fleiss_kappa([[1, np.nan], [2, 2]])
    with pytest.raises(InputError, match="rated 3 and 2 items"):
        cohen_kappa([1, 2, 1], [1, 2])
