"""Bradley–Terry ratings against choix and FastChat's logistic-regression MLE; the bootstrap's
resamples, clusters and refusals; coverage of known strengths (slow).

FastChat's ``compute_mle_elo`` fits ``LogisticRegression(fit_intercept=False)`` on every battle
written twice (a tie once as a win of each side) with ``±ln 10`` in the two models' columns;
``compute_bt`` minimises the same likelihood over distinct outcomes with L-BFGS. Both reach
the one maximum; here it is reached with scikit-learn at a tight tolerance (FastChat's
``rating_systems`` is not on PyPI; its L-BFGS stops at ``gtol=1e-6``) and with choix's
I-LSR, and evalab's ratings must agree within 0.01 points.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from evalab.errors import InputError, SettingsError
from evalab.stats.bradley_terry import Battles, EloScale, bradley_terry, fit_strengths

choix = pytest.importorskip("choix")
linear_model = pytest.importorskip("sklearn.linear_model")


def _battles(seed: int, models: int, n: int, tie_share: float = 0.1) -> tuple[Battles, np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    u = rng.random(n)
    outcome = np.where(
        u < p * (1 - tie_share), 1.0, np.where(u < p * (1 - tie_share) + tie_share, 0.5, 0.0)
    )
    names = [f"model-{i}" for i in range(models)]
    items = [f"prompt-{i}" for i in rng.integers(0, max(2, n // 4), n)]
    battles = Battles.from_names([names[i] for i in a], [names[i] for i in b], outcome, items)
    return battles, strength


def _sklearn_elo(b: Battles) -> np.ndarray:
    """FastChat's compute_mle_elo design, fitted without a penalty to a tight tolerance."""
    n, m = b.first.size, len(b.models)
    x = np.zeros((2 * n, m))
    rows = np.arange(2 * n)
    x[rows, np.r_[b.first, b.first]] = math.log(10)
    x[rows, np.r_[b.second, b.second]] = -math.log(10)
    y = np.r_[b.outcome >= 0.5, b.outcome == 1.0].astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = linear_model.LogisticRegression(
            fit_intercept=False, C=np.inf, tol=1e-12, max_iter=100_000
        ).fit(x, y)
    elo = 400 * lr.coef_[0] + 1000
    return elo - elo.mean() + 1000


def _choix_elo(b: Battles) -> np.ndarray:
    data = []
    for first, second, outcome in zip(b.first, b.second, b.outcome, strict=True):
        if outcome == 1.0:
            data += [(first, second)] * 2
        elif outcome == 0.0:
            data += [(second, first)] * 2
        else:
            data += [(first, second), (second, first)]
    # I-LSR (Maystre & Grossglauser 2015) converges to the maximum-likelihood estimate
    theta = choix.ilsr_pairwise(len(b.models), data, alpha=0.0, tol=1e-12, max_iter=1000)
    return EloScale().ratings(theta - theta.mean(), b.models)


@pytest.mark.parametrize(("seed", "models", "n"), [(0, 5, 400), (1, 12, 1500), (2, 20, 2500)])
def test_mle_equals_fastchat_and_choix(seed: int, models: int, n: int) -> None:
    battles, _ = _battles(seed, models, n)
    ours = EloScale().ratings(fit_strengths(battles), battles.models)
    np.testing.assert_allclose(ours, _sklearn_elo(battles), atol=0.01)
    np.testing.assert_allclose(ours, _choix_elo(battles), atol=0.01)


def test_dropped_ties_equal_the_peer_without_ties() -> None:
    battles, _ = _battles(3, 6, 1500, tie_share=0.3)
    decided = battles.outcome != 0.5
    only = Battles(
        battles.models, battles.first[decided], battles.second[decided], battles.outcome[decided]
    )
    ours = EloScale().ratings(fit_strengths(battles, "drop"), battles.models)
    np.testing.assert_allclose(ours, _choix_elo(only), atol=0.01)


def test_anchor_and_scale_are_a_shift_and_a_stretch() -> None:
    battles, _ = _battles(4, 5, 800)
    theta = fit_strengths(battles)
    anchored = EloScale(anchor="model-2", anchor_rating=1114).ratings(theta, battles.models)
    assert anchored[battles.models.index("model-2")] == pytest.approx(1114)
    plain = EloScale().ratings(theta, battles.models)
    np.testing.assert_allclose(anchored - plain, anchored[0] - plain[0])
    assert plain.mean() == pytest.approx(1000)


def test_bootstrap_rounds_are_the_mle_of_their_resampled_battles() -> None:
    from evalab.stats.bradley_terry import _Design, _kept

    battles, _ = _battles(5, 5, 500)
    keep = _kept(battles, "half")
    design = _Design.of(battles, keep)
    tables = design.resampled_battles(np.random.default_rng(0), 2)
    assert (tables.sum(axis=(1, 2)) == battles.first.size).all()
    fitted = design.fit_table(tables)
    for table, theta in zip(tables, fitted, strict=True):
        a, b, out = [], [], []
        for k, (lo, hi) in enumerate(zip(design.lo, design.hi, strict=True)):
            for code, y in enumerate((0.0, 0.5, 1.0)):
                reps = int(table[k, code])
                a += [lo] * reps
                b += [hi] * reps
                out += [y] * reps
        again = Battles(battles.models, np.array(a), np.array(b), np.array(out))
        np.testing.assert_allclose(theta, fit_strengths(again), atol=1e-9)
        np.testing.assert_allclose(
            EloScale().ratings(theta, battles.models), _choix_elo(again), atol=0.01
        )


def test_intervals_clusters_and_signature() -> None:
    battles, _ = _battles(6, 6, 4000)
    result = bradley_terry(battles, n_samples=200, seed=3)
    assert (result.low <= result.ratings).all() and (result.ratings <= result.high).all()
    order = np.argsort(-result.ratings)
    assert list(result.ranking.order) == order.tolist()
    assert result.ranking.clusters[order[0]] == 1
    assert result.signature == (
        "bt|ties:half|scale:400|base:10|init:1000|anchor:mean|resample:battles"
        "|bs:200|seed:3|conf:0.95|correct:holm|alpha:0.05|cluster:separated"
    )
    again = bradley_terry(battles, n_samples=200, seed=3)
    np.testing.assert_array_equal(result.low, again.low)
    by_items = bradley_terry(battles, n_samples=200, seed=3, resample="items")
    assert by_items.resample == "items"
    assert (by_items.high - by_items.low).mean() > 0


def test_refusals() -> None:
    with pytest.raises(InputError, match="model-a won \\(or lost\\) every battle"):
        fit_strengths(Battles.from_names(["model-a", "model-a"], ["b", "c"], [1.0, 1.0]))
    with pytest.raises(InputError, match="every outcome must be"):
        Battles.from_names(["a"], ["b"], [0.7])
    with pytest.raises(InputError, match="a against itself"):
        Battles.from_names(["a"], ["a"], [1.0])
    with pytest.raises(SettingsError, match="ties must be one of"):
        fit_strengths(Battles.from_names(["a", "b"], ["b", "a"], [1.0, 1.0]), "coin")  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match="anchor model 'x' is in no battle"):
        bradley_terry(
            Battles.from_names(["a", "b"], ["b", "a"], [1.0, 1.0]), scale=EloScale(anchor="x")
        )
    with pytest.raises(SettingsError, match="needs the item"):
        bradley_terry(Battles.from_names(["a", "b"], ["b", "a"], [1.0, 1.0]), resample="items")


@pytest.mark.slow
def test_intervals_cover_known_strengths_at_the_nominal_rate() -> None:
    hits = total = 0
    for seed in range(60):
        battles, strength = _battles(100 + seed, 5, 600, tie_share=0.0)
        result = bradley_terry(battles, n_samples=300, seed=seed)
        truth = EloScale().ratings(strength - strength.mean(), [f"model-{i}" for i in range(5)])
        names = [f"model-{i}" for i in range(5)]
        for j, name in enumerate(result.models):
            t = truth[names.index(name)]
            hits += int(result.low[j] <= t <= result.high[j])
            total += 1
    assert 0.90 <= hits / total <= 0.99


def test_a_large_leaderboard_separates_at_few_rounds() -> None:
    """40 models (780 pairs): a resample count could never reach Holm's level at 200 rounds
    (1/201 * 780 > 1); the Wald test with the bootstrap standard error can."""
    rng = np.random.default_rng(8)
    strength = np.linspace(-4.0, 4.0, 40)
    a = rng.integers(0, 40, 40_000)
    b = (a + rng.integers(1, 40, 40_000)) % 40
    out = (rng.random(a.size) < 1 / (1 + np.exp(strength[b] - strength[a]))).astype(float)
    names = [f"m{i:02d}" for i in range(40)]
    battles = Battles.from_names([names[i] for i in a], [names[i] for i in b], out)
    result = bradley_terry(battles, n_samples=200, seed=0)
    assert max(c for c in result.ranking.clusters if c is not None) >= 3
