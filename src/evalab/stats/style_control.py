"""Bradley–Terry with style control: ratings net of per-battle covariates (Chatbot Arena).

A battle's log-odds for its first model are ``θ_a - θ_b + xᵀβ``, where ``x`` holds the
battle's style covariates and ``β`` their effects, fitted together with the strengths
(Chatbot Arena's "style control", FastChat's ``compute_style_control``). A covariate is given
as a value for each side (the two answers' lengths, their numbers of headers, lists, bold
spans); as in FastChat, each enters as ``(x_a - x_b) / (x_a + x_b + 1)``, standardised over
the battles. The ratings are then what each model would score if the two answers did not
differ in style.

The fit is the maximum-likelihood estimate by Newton's method (the strengths' mean held at
zero), optionally with an L2 penalty ``l2/2 · ‖(θ, β)‖²`` on every parameter (FastChat's
``reg`` is 0.5); the penalty is part of the signature. Intervals come from bootstrap
resamples of the battles (or, with ``resample="items"``, of whole prompts), each refitted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from evalab.errors import InputError, SettingsError
from evalab.stats.bootstrap import check_resampling, percentile_interval
from evalab.stats.bradley_terry import Battles, EloScale, Ratings, Resample, Ties, _kept
from evalab.stats.resampling import DEFAULT_SEED, bootstrap_counts

__all__ = ["StyleControlled", "style_controlled", "style_features"]

_TOL = 1e-10
_MAX_STEPS = 100


def style_features(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``[battles, k]`` covariates from each side's ``[battles, k]`` values (FastChat's form).

    >>> style_features(np.array([[10.0], [30.0], [20.0]]), np.array([[20.0], [10.0], [20.0]])).round(3).T
    array([[-1.134,  1.299, -0.165]])
    """
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    diff = (a - b) / (a + b + 1.0)
    sd = diff.std(axis=0)
    if np.any(sd == 0):
        raise InputError(
            "a style covariate takes the same value in every battle: it has no effect to fit"
        )
    out: np.ndarray = (diff - diff.mean(axis=0)) / sd
    return out


def _fit(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, x: np.ndarray, w: np.ndarray, m: int, l2: float
) -> np.ndarray:
    """``(θ, β)`` maximising the weighted (penalised) likelihood; θ has mean zero."""
    k = x.shape[1]
    params = np.zeros(m + k)
    cells, cells_t = a * m + b, b * m + a
    tol = _TOL * max(float(w.sum()), 1.0)
    for _ in range(_MAX_STEPS):
        theta, beta = params[:m], params[m:]
        p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + x @ beta)))
        r, c = w * (y - p), w * p * (1.0 - p)
        grad = np.concatenate([np.bincount(a, r, m) - np.bincount(b, r, m), x.T @ r]) - l2 * params
        if np.abs(grad).max() <= tol:
            break
        hess = np.zeros((m + k, m + k))
        pair = np.bincount(cells, c, m * m) + np.bincount(cells_t, c, m * m)
        hess[:m, :m] = np.diag(np.bincount(a, c, m) + np.bincount(b, c, m)) - pair.reshape(m, m)
        cross = np.stack(
            [np.bincount(a, c * x[:, j], m) - np.bincount(b, c * x[:, j], m) for j in range(k)],
            axis=1,
        )
        hess[:m, m:], hess[m:, :m] = cross, cross.T
        hess[m:, m:] = x.T @ (c[:, None] * x)
        hess += l2 * np.eye(m + k)
        hess[:m, :m] += 1.0 / m  # the strengths' shift: fixed by their mean
        step = np.linalg.solve(hess, grad)
        step[:m] -= step[:m].mean()
        params += step
    params[:m] -= params[:m].mean()
    return params


@dataclass(frozen=True)
class StyleControlled(Ratings):
    """Style-controlled ratings with intervals, and the covariates' effects."""

    features: tuple[str, ...]
    #: each covariate's effect (log-odds per standard deviation) and its interval
    effects: np.ndarray
    effects_low: np.ndarray
    effects_high: np.ndarray
    scale: EloScale
    ties: Ties
    resample: Resample
    l2: float
    n_samples: int
    seed: int
    confidence: float

    @property
    def signature(self) -> str:
        return (
            f"bt-style|features:{','.join(self.features)}|l2:{self.l2:g}|ties:{self.ties}"
            f"|{self.scale.signature}|resample:{self.resample}|bs:{self.n_samples}"
            f"|seed:{self.seed}|conf:{self.confidence:g}"
        )


def _round_weights(
    battles: Battles, keep: np.ndarray, resample: Resample, n_samples: int, seed: int
) -> Iterator[np.ndarray]:
    """Each kept battle's count in one bootstrap round after another."""
    if resample == "battles":
        for chunk in bootstrap_counts(int(keep.sum()), n_samples, seed):
            yield from chunk
        return
    if battles.items is None:
        raise SettingsError("resampling items needs the item (prompt) of every battle")
    items = battles.items[keep]
    for chunk in bootstrap_counts(int(battles.items.max()) + 1, n_samples, seed):
        for row in chunk:
            yield row[items]


def style_controlled(
    battles: Battles,
    features: np.ndarray,
    names: Sequence[str],
    *,
    ties: Ties = "half",
    l2: float = 0.0,
    scale: EloScale | None = None,
    resample: Resample = "battles",
    n_samples: int = 200,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> StyleControlled:
    """Ratings net of the battles' style covariates ``features`` ``[battles, k]``."""
    scale = scale or EloScale()
    if not (math.isfinite(l2) and l2 >= 0):
        raise SettingsError(f"the L2 penalty must be a number >= 0, got {l2}")
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != battles.first.size or x.shape[1] != len(names):
        raise InputError(
            f"style covariates: expected [{battles.first.size}, {len(names)}], got {x.shape}"
        )
    n_samples, confidence, seed = check_resampling(n_samples, confidence, seed)
    keep = _kept(battles, ties)
    a, b, y, x = battles.first[keep], battles.second[keep], battles.outcome[keep], x[keep]
    m = len(battles.models)
    point = _fit(a, b, y, x, np.ones(a.size), m, l2)
    weights = _round_weights(battles, keep, resample, n_samples, seed)
    rounds = np.array([_fit(a, b, y, x, w.astype(np.float64), m, l2) for w in weights])
    ratings = scale.ratings(point[:m], battles.models)
    boot = scale.ratings(rounds[:, :m], battles.models)
    bounds = [percentile_interval(boot[:, j], confidence)[1:] for j in range(m)]
    effects = [percentile_interval(rounds[:, m + j], confidence)[1:] for j in range(x.shape[1])]
    return StyleControlled(
        battles.models,
        ratings,
        np.array([lo for lo, _ in bounds]),
        np.array([hi for _, hi in bounds]),
        tuple(names),
        point[m:],
        np.array([lo for lo, _ in effects]),
        np.array([hi for _, hi in effects]),
        scale,
        ties,
        resample,
        l2,
        n_samples,
        seed,
        confidence,
    )
