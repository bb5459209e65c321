"""Style-controlled Bradley–Terry against scikit-learn's logistic regression on FastChat's design
(no penalty) and against scipy's L-BFGS on FastChat's penalised loss (``reg``)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from evalab.errors import InputError
from evalab.stats.bradley_terry import Battles, EloScale
from evalab.stats.style_control import _fit, style_controlled, style_features

linear_model = pytest.importorskip("sklearn.linear_model")
optimize = pytest.importorskip("scipy.optimize")


def _battles(seed: int, models: int = 6, n: int = 3000) -> tuple[Battles, np.ndarray, np.ndarray]:
    """Battles where the longer answer wins more often, whatever the model."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 0.8, models)
    verbosity = rng.normal(0.0, 0.5, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    length_a = np.exp(6 + verbosity[a] + rng.normal(0, 0.3, n))
    length_b = np.exp(6 + verbosity[b] + rng.normal(0, 0.3, n))
    x = style_features(length_a[:, None], length_b[:, None])
    logit = strength[a] - strength[b] + 0.6 * x[:, 0]
    out = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    names = [f"m{i}" for i in range(models)]
    return Battles.from_names([names[i] for i in a], [names[i] for i in b], out), x, strength


def test_unpenalised_fit_equals_logistic_regression() -> None:
    battles, x, _ = _battles(0)
    m, n = len(battles.models), battles.first.size
    params = _fit(battles.first, battles.second, battles.outcome, x, np.ones(n), m, 0.0)
    design = np.zeros((n, m + 1))
    design[np.arange(n), battles.first] = math.log(10)
    design[np.arange(n), battles.second] = -math.log(10)
    design[:, m] = x[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = linear_model.LogisticRegression(
            fit_intercept=False, C=np.inf, tol=1e-12, max_iter=10_000
        )
        lr.fit(design, battles.outcome)
    theta = lr.coef_[0][:m] * math.log(10)
    elo = EloScale()
    np.testing.assert_allclose(
        elo.ratings(params[:m], battles.models),
        elo.ratings(theta - theta.mean(), battles.models),
        atol=0.01,  # rating points: the peers' optimisers stop near, not at, the maximum
    )
    assert params[m] == pytest.approx(lr.coef_[0][m], abs=1e-4)


def test_penalised_fit_equals_fastchat_loss() -> None:
    battles, x, _ = _battles(1, n=1500)
    m, reg = len(battles.models), 0.5
    a, b, y = battles.first, battles.second, battles.outcome

    def loss(p: np.ndarray) -> tuple[float, np.ndarray]:
        z = p[a] - p[b] + x @ p[m:]
        q = 1 / (1 + np.exp(-z))
        value = -np.sum(y * np.log(q) + (1 - y) * np.log(1 - q)) + reg / 2 * p @ p
        r = y - q
        g = reg * p
        np.add.at(g, a, -r)
        np.add.at(g, b, r)
        g[m:] -= x.T @ r
        return value, g

    oracle = optimize.minimize(
        loss,
        np.zeros(m + 1),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "maxiter": 10_000},
    ).x
    ours = _fit(a, b, y, x, np.ones(a.size), m, reg)
    # with a penalty the strengths' mean is part of the optimum: compare the differences
    elo = EloScale()
    np.testing.assert_allclose(
        elo.ratings(ours[:m] - ours[:m].mean(), battles.models),
        elo.ratings(oracle[:m] - oracle[:m].mean(), battles.models),
        atol=0.01,  # rating points
    )
    assert ours[m] == pytest.approx(oracle[m], abs=1e-4)


def test_style_control_removes_a_length_advantage() -> None:
    battles, x, strength = _battles(2, n=4000)
    result = style_controlled(battles, x, ["length"], n_samples=30, seed=1)
    assert result.effects_low[0] < 0.6 < result.effects_high[0]
    truth = EloScale().ratings(strength - strength.mean(), battles.models)
    order = [battles.models.index(f"m{i}") for i in range(len(strength))]
    assert np.abs(result.ratings[order] - truth).max() < 60
    assert result.signature.startswith("bt-style|features:length|l2:0|ties:half|")


def test_refusals() -> None:
    with pytest.raises(InputError, match="same value in every battle"):
        style_features(np.ones((3, 1)), np.ones((3, 1)))
    battles, x, _ = _battles(3, n=100)
    with pytest.raises(InputError, match="style covariates: expected"):
        style_controlled(battles, x[:50], ["length"])
