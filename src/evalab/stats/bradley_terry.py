"""Bradley–Terry ratings from pairwise battles, on the Elo scale, with bootstrap intervals.

**Model.** Model ``i`` has strength ``θ_i`` and beats ``j`` with probability
``σ(θ_i - θ_j)``. A battle's outcome for its first model is 1 (win), 0 (loss) or, for a
tie, either ½ (``ties="half"``: half a win and half a loss, as FastChat's ``compute_bt``
and ``compute_mle_elo`` count it) or nothing (``ties="drop"``: the battle is left out).
The ratings are the maximum-likelihood estimate; it exists exactly when every model can be
reached from every other through wins (a model that never lost, or never won, has no finite
rating, and is refused with its name rather than given the large number an optimiser stops
at).

**Elo scale.** ``rating = init + scale · θ / ln(base)`` (defaults 1000, 400, 10: FastChat's),
so 400 points are 10:1 odds. The strengths are identified up to a shift; the anchor fixes
it: the mean rating is ``init`` (no anchor; FastChat's optimiser reaches the same point from
its zero start), or a named model gets a given rating (FastChat anchors
``mixtral-8x7b-instruct-v0.1`` at 1114 when present; say ``anchor=`` to do the same).

**Fit.** The battles reduce to one ``(wins, battles)`` pair per pair of models, and Newton's
method runs on those, for every bootstrap round at once (``[rounds, pairs]`` arrays, one
``[models, models]`` solve per round and step), to a gradient below ``1e-10`` per battle: the
MLE to far better than 0.01 rating points.

**Intervals.** Percentile intervals over bootstrap resamples of

* the battles (``resample="battles"``): each round draws as many battles as there are, with
  replacement; drawn as FastChat's ``compute_bootstrap_bt`` draws them (a multinomial over
  the distinct ``(model_a, model_b, outcome)`` rows, ordered as its ``preprocess_for_bt``
  orders them), so the same seed gives the same resampled battles;
* the items (``resample="items"``, where battles name their prompt): whole prompts are
  drawn, so battles on one prompt stay together (they are not independent).

Pairs of models are tested from the same rounds and ranked into significance clusters by
:func:`evalab.stats.ranking.rank_systems`. The test of a pair is the Wald test of its rating
difference with the bootstrap's own standard error (``z = Δ / sd(Δ*)``, two-sided normal
p-value): a count of resamples (the percentile p-value) cannot go below ``1 / (rounds + 1)``,
and with Holm over the ``m (m - 1) / 2`` pairs of a 100-model leaderboard no pair could
ever separate at a thousand rounds; the Wald p-value has no such floor.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from evalab.errors import InputError, SettingsError
from evalab.stats.bootstrap import check_resampling, percentile_interval
from evalab.stats.ranking import Ranking, rank_systems
from evalab.stats.resampling import DEFAULT_SEED, bootstrap_counts

__all__ = [
    "RESAMPLES",
    "TIES",
    "Battles",
    "BradleyTerry",
    "EloScale",
    "Ratings",
    "bradley_terry",
    "fit_strengths",
]

Ties = Literal["half", "drop"]
Resample = Literal["battles", "items"]
TIES: tuple[Ties, ...] = ("half", "drop")
RESAMPLES: tuple[Resample, ...] = ("battles", "items")

_NORMAL = NormalDist()
#: Newton stops when every model's gradient is below this, per battle
_TOL = 1e-10
_MAX_STEPS = 200
#: the largest step of one strength in one Newton step (natural units); keeps early steps sane
_MAX_STEP = 2.0
#: a strength this far from the mean (natural units, ~6 000 Elo points) is taken as infinite
_DIVERGED = 35.0


def _factorized(names: Iterable[str], count: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each name's number, in order of first appearance (``pandas.factorize``), and the names."""
    seen: dict[str, int] = {}
    codes = np.fromiter((seen.setdefault(x, len(seen)) for x in names), np.intp, count=count)
    return codes, tuple(seen)


@dataclass(frozen=True)
class Battles:
    """Pairwise battles: ``first[b]`` met ``second[b]`` with ``outcome[b]`` for ``first[b]``.

    ``outcome`` is 1.0 (first won), 0.0 (second won) or 0.5 (tie); ``items`` optional
    integer codes of the prompt each battle was on.
    """

    models: tuple[str, ...]
    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    items: np.ndarray | None = None

    @classmethod
    def from_names(
        cls,
        model_a: Sequence[str],
        model_b: Sequence[str],
        outcome: Sequence[float] | np.ndarray,
        items: Sequence[str] | None = None,
    ) -> Battles:
        """Battles from model names; models numbered in order of first appearance in
        ``model_a + model_b`` (as ``pandas.factorize`` of FastChat's ``get_matchups_models``)."""
        if not len(model_a) == len(model_b) == len(outcome):
            raise InputError(
                f"battles: {len(model_a)} model_a, {len(model_b)} model_b, {len(outcome)} outcomes"
            )
        index, models = _factorized(itertools.chain(model_a, model_b), 2 * len(model_a))
        codes = None if items is None else _factorized(items, len(items))[0]
        n = len(model_a)
        return cls(
            models,
            index[:n].astype(np.intp),
            index[n:].astype(np.intp),
            np.asarray(outcome, dtype=np.float64),
            None if codes is None else codes.astype(np.intp),
        )

    def __post_init__(self) -> None:
        out = self.outcome
        if not np.isin(out, (0.0, 0.5, 1.0)).all():
            raise InputError("battles: every outcome must be 1 (first won), 0 (second won) or 0.5")
        if np.any(self.first == self.second):
            b = int(np.flatnonzero(self.first == self.second)[0])
            raise InputError(f"battle {b + 1}: {self.models[self.first[b]]} against itself")
        if self.first.size == 0:
            raise InputError("no battles")


@dataclass(frozen=True)
class EloScale:
    """How strengths become ratings: ``init + scale · θ / ln(base)``, shifted to the anchor."""

    scale: float = 400.0
    base: float = 10.0
    init: float = 1000.0
    #: a model whose rating is fixed at ``anchor_rating`` (None: the mean rating is ``init``)
    anchor: str | None = None
    anchor_rating: float = 1000.0

    @property
    def signature(self) -> str:
        """``scale:400|base:10|init:1000|anchor:mean`` (or ``anchor:NAME=RATING``)."""
        anchor = "mean" if self.anchor is None else f"{self.anchor}={self.anchor_rating:g}"
        return f"scale:{self.scale:g}|base:{self.base:g}|init:{self.init:g}|anchor:{anchor}"

    def ratings(self, theta: np.ndarray, models: Sequence[str]) -> np.ndarray:
        """Ratings of strengths ``[..., models]``."""
        out = self.init + self.scale * theta / math.log(self.base)
        if self.anchor is not None:
            k = list(models).index(self.anchor)
            out = out + (self.anchor_rating - out[..., [k]])
        return np.asarray(out, dtype=np.float64)


#: bootstrap rounds fitted at once (bounds the ``[rounds, models, models]`` Hessians)
_ROUNDS_AT_ONCE = 64


@dataclass(frozen=True)
class _Design:
    """The battles grouped by unordered model pair ``lo < hi``, with the ``lo`` side's outcome."""

    models: int
    lo: np.ndarray
    hi: np.ndarray
    #: ``[battles]``: each kept battle's pair number and ``lo``'s outcome (0 lost, 1 tie, 2 won)
    pair: np.ndarray
    outcome: np.ndarray
    #: ``[pairs, 3]``: battles of each pair by ``lo``'s outcome
    table: np.ndarray

    @classmethod
    def of(cls, battles: Battles, keep: np.ndarray) -> _Design:
        m = len(battles.models)
        a, b = battles.first[keep], battles.second[keep]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        code = np.rint(battles.outcome[keep] * 2).astype(np.intp)
        code = np.where(a == lo, code, 2 - code)
        keys, pair = np.unique(lo * m + hi, return_inverse=True)
        table = np.bincount(pair * 3 + code, minlength=keys.size * 3).reshape(-1, 3)
        return cls(m, keys // m, keys % m, pair, code, table.astype(np.float64))

    def fit_table(self, table: np.ndarray) -> np.ndarray:
        """Strengths ``[rounds, models]`` of ``[rounds, pairs, 3]`` outcome counts."""
        n, wins = table.sum(axis=2), table[..., 2] + 0.5 * table[..., 1]
        return np.concatenate(
            [
                self._newton(n[r : r + _ROUNDS_AT_ONCE], wins[r : r + _ROUNDS_AT_ONCE])
                for r in range(0, n.shape[0], _ROUNDS_AT_ONCE)
            ]
        )

    def _newton(self, n: np.ndarray, wins: np.ndarray) -> np.ndarray:
        """Mean-zero MLE strengths of a few rounds (``±inf`` where a round has none)."""
        m, rounds = self.models, n.shape[0]
        theta = np.zeros((rounds, m))
        tol = _TOL * np.maximum(n.sum(axis=1), 1.0)
        # flat indices of every round's (pair, lower model), (pair, higher model), and the
        # Hessian's cells: sums by bincount, not BLAS (threaded BLAS on these shapes is slow)
        base = np.arange(rounds)[:, None]
        at_lo, at_hi = (base * m + self.lo).ravel(), (base * m + self.hi).ravel()
        cells = (base * m * m + self.lo * m + self.hi).ravel()
        cells_t = (base * m * m + self.hi * m + self.lo).ravel()
        diag = np.arange(m)
        for _ in range(_MAX_STEPS):
            p = 1.0 / (1.0 + np.exp(theta[:, self.hi] - theta[:, self.lo]))
            r = (wins - n * p).ravel()
            grad = (_sums(at_lo, r, rounds * m) - _sums(at_hi, r, rounds * m)).reshape(rounds, m)
            if (np.abs(grad).max(axis=1) <= tol).all():
                break
            c = (n * p * (1.0 - p)).ravel()
            hess = np.full((rounds, m, m), 1.0 / m)
            flat = hess.reshape(-1)
            flat[cells] -= c
            flat[cells_t] -= c
            hess[:, diag, diag] += (
                _sums(at_lo, c, rounds * m) + _sums(at_hi, c, rounds * m)
            ).reshape(rounds, m)
            step = _spd_solve(hess, grad)
            theta += np.clip(step - step.mean(axis=1, keepdims=True), -_MAX_STEP, _MAX_STEP)
        theta -= theta.mean(axis=1, keepdims=True)
        return np.where(np.abs(theta) > _DIVERGED, np.copysign(np.inf, theta), theta)

    def resampled_battles(self, rng: np.random.Generator, rounds: int) -> np.ndarray:
        """``[rounds, pairs, 3]`` tables of ``rounds`` bootstrap resamples of the battles.

        Drawing N battles with replacement is a multinomial over the pairs' shares, then,
        within each pair, a multinomial over its outcomes' shares: both drawn as sequential
        binomials, vectorised over the rounds (numpy's multinomial loops over categories
        for one round at a time, 20× slower here).
        """
        per_pair = self.table.sum(axis=1)
        counts = _multinomial(rng, per_pair, rounds)
        lost = rng.binomial(counts, self.table[:, 0] / per_pair)
        rest = counts - lost
        share_tie = self.table[:, 1] / np.maximum(self.table[:, 1] + self.table[:, 2], 1.0)
        tie = rng.binomial(rest, share_tie)
        return np.stack([lost, tie, rest - tie], axis=2).astype(np.float64)

    def resampled_items(self, items: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``[rounds, pairs, 3]`` tables of the battles on items drawn ``counts`` times."""
        cell = self.pair * 3 + self.outcome
        size = self.table.size
        return np.stack(
            [np.bincount(cell, weights=c[items], minlength=size) for c in counts]
        ).reshape(counts.shape[0], -1, 3)


def _multinomial(rng: np.random.Generator, counts: np.ndarray, rounds: int) -> np.ndarray:
    """``[rounds, k]`` draws of ``counts.sum()`` items over ``k`` cells with ``counts``' shares."""
    total = int(counts.sum())
    out = np.empty((rounds, counts.size), dtype=np.int64)
    left = np.full(rounds, total, dtype=np.int64)
    rest = float(total)
    for j in range(counts.size - 1):
        share = min(1.0, counts[j] / rest) if rest > 0 else 0.0
        out[:, j] = rng.binomial(left, share)
        left -= out[:, j]
        rest -= counts[j]
    out[:, -1] = left
    return out


def _sums(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(index, weights=values, minlength=size)


def _spd_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a⁻¹ b`` for a batch of symmetric positive-definite ``a`` ``[rounds, m, m]``.

    Through the Cholesky factor and two substitutions: LAPACK's general batched solve is
    10-50× slower here (OpenBLAS threads on small matrices), the factorisation is not.
    """
    low = np.linalg.cholesky(a)
    m = b.shape[1]
    y = np.empty_like(b)
    for i in range(m):
        y[:, i] = (b[:, i] - np.einsum("rj,rj->r", low[:, i, :i], y[:, :i])) / low[:, i, i]
    x = np.empty_like(b)
    for i in range(m - 1, -1, -1):
        x[:, i] = (y[:, i] - np.einsum("rj,rj->r", low[:, i + 1 :, i], x[:, i + 1 :])) / low[
            :, i, i
        ]
    return x


def _unbeaten(battles: Battles, keep: np.ndarray) -> str | None:
    """A model that cannot be reached through wins from every other (no finite MLE)."""
    m = len(battles.models)
    beats = np.zeros((m, m), dtype=bool)
    a, b, y = battles.first[keep], battles.second[keep], battles.outcome[keep]
    beats[a[y > 0], b[y > 0]] = True
    beats[b[y < 1], a[y < 1]] = True
    reach = beats | np.eye(m, dtype=bool)
    for _ in range(max(1, math.ceil(math.log2(m)))):
        reach = reach | ((reach.astype(np.int32) @ reach.astype(np.int32)) > 0)
    cut = ~reach.all(axis=0) | ~reach.all(axis=1)
    return battles.models[int(np.flatnonzero(cut)[0])] if cut.any() else None


def fit_strengths(battles: Battles, ties: Ties = "half") -> np.ndarray:
    """Mean-zero MLE strengths (natural units) of every model; refuses when none exists.

    >>> b = Battles.from_names(["x", "y", "x"], ["y", "x", "y"], [1.0, 1.0, 1.0])
    >>> fit_strengths(b).round(4).tolist()
    [0.3466, -0.3466]
    """
    keep = _kept(battles, ties)
    name = _unbeaten(battles, keep)
    if name is not None:
        raise InputError(
            f"Bradley–Terry: {name} won (or lost) every battle that links it to the others, "
            "so its rating has no finite maximum-likelihood value; add battles it lost (won) "
            "or leave it out"
        )
    design = _Design.of(battles, keep)
    theta: np.ndarray = design.fit_table(design.table[None])[0]
    return theta


def _kept(battles: Battles, ties: Ties) -> np.ndarray:
    if ties not in TIES:
        raise SettingsError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    keep = np.ones(battles.outcome.size, dtype=bool) if ties == "half" else battles.outcome != 0.5
    if not keep.any():
        raise InputError("Bradley–Terry: every battle is a tie and ties='drop' leaves none")
    return keep


@dataclass(frozen=True)
class Ratings:
    """Ratings of every model (input order) with their percentile intervals."""

    models: tuple[str, ...]
    ratings: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class BradleyTerry(Ratings):
    """Ratings of every model (input order) with percentile intervals and clusters."""

    #: battles each model took part in (after ``ties``)
    battles: np.ndarray
    ranking: Ranking
    scale: EloScale
    ties: Ties
    resample: Resample
    n_samples: int
    seed: int
    confidence: float
    #: rounds in which some model had no finite rating (its interval end is infinite)
    unbounded_rounds: int

    @property
    def signature(self) -> str:
        """Everything that changes the numbers."""
        return (
            f"bt|ties:{self.ties}|{self.scale.signature}|resample:{self.resample}"
            f"|bs:{self.n_samples}|seed:{self.seed}|conf:{self.confidence:g}|{self.ranking.rule}"
        )


def _round_tables(
    design: _Design,
    battles: Battles,
    keep: np.ndarray,
    resample: Resample,
    n_samples: int,
    seed: int,
) -> Iterator[Callable[[], np.ndarray]]:
    """Makers of the ``[rounds, pairs, 3]`` outcome tables of the bootstrap rounds, a few
    rounds each (called in worker threads: numpy draws and sums without the GIL)."""
    if resample == "battles":
        # each block of rounds draws from its own stream of the seed: the same rounds
        # whichever thread draws them, and however many threads there are
        streams = np.random.SeedSequence(seed).spawn(-(-n_samples // _ROUNDS_AT_ONCE))
        for k, done in enumerate(range(0, n_samples, _ROUNDS_AT_ONCE)):
            rng = np.random.default_rng(streams[k])
            size = min(_ROUNDS_AT_ONCE, n_samples - done)
            yield functools.partial(design.resampled_battles, rng, size)
        return
    if battles.items is None:
        raise SettingsError("resampling items needs the item (prompt) of every battle")
    items = battles.items[keep]
    for chunk in bootstrap_counts(int(battles.items.max()) + 1, n_samples, seed):
        for r in range(0, chunk.shape[0], _ROUNDS_AT_ONCE):
            yield functools.partial(design.resampled_items, items, chunk[r : r + _ROUNDS_AT_ONCE])


def bradley_terry(
    battles: Battles,
    *,
    ties: Ties = "half",
    scale: EloScale | None = None,
    resample: Resample = "battles",
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
    correction: str = "holm",
) -> BradleyTerry:
    """Bradley–Terry ratings with bootstrap intervals and significance clusters."""
    scale = scale or EloScale()
    if scale.anchor is not None and scale.anchor not in battles.models:
        raise SettingsError(f"anchor model {scale.anchor!r} is in no battle")
    n_samples, confidence, seed = check_resampling(n_samples, confidence, seed)
    keep = _kept(battles, ties)
    point = scale.ratings(fit_strengths(battles, ties), battles.models)
    m = len(battles.models)
    design = _Design.of(battles, keep)
    tables = _round_tables(design, battles, keep, resample, n_samples, seed)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        theta = np.concatenate(list(pool.map(lambda make: design.fit_table(make()), tables)))
    unbounded = int((~np.isfinite(theta)).any(axis=1).sum())
    boot = scale.ratings(np.where(np.isfinite(theta), theta, 0.0), battles.models)
    boot = np.where(np.isfinite(theta), boot, theta)
    bounds = [percentile_interval(boot[:, j], confidence)[1:] for j in range(m)]
    ranking = rank_systems(point, _pair_p_values(boot, point), alpha, correction)
    played = np.bincount(battles.first[keep], minlength=m) + np.bincount(
        battles.second[keep], minlength=m
    )
    return BradleyTerry(
        battles.models,
        point,
        np.array([b[0] for b in bounds]),
        np.array([b[1] for b in bounds]),
        played,
        ranking,
        scale,
        ties,
        resample,
        n_samples,
        seed,
        confidence,
        unbounded,
    )


def _pair_p_values(boot: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Wald p-value of every pair's rating difference, its standard error from the rounds
    (symmetric, NaN diagonal; rounds with an infinite rating are left out)."""
    m = point.size
    out = np.full((m, m), np.nan)
    finite = boot[np.isfinite(boot).all(axis=1)]
    if finite.shape[0] < 2:
        return out
    cov = np.cov(finite, rowvar=False, ddof=1)
    i, j = np.triu_indices(m, k=1)
    se = np.sqrt(np.maximum(cov[i, i] + cov[j, j] - 2.0 * cov[i, j], 0.0))
    diff = np.abs(point[i] - point[j])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.where(diff > 0, np.inf, 0.0))
    p = np.array([2.0 * _NORMAL.cdf(-float(v)) for v in z])
    out[i, j] = p
    out[j, i] = p
    return out
