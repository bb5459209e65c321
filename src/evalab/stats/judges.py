"""Judges checked, not trusted: position bias, length bias, and agreement with people.

* **Position consistency** (Zheng et al. 2023, "Judging LLM-as-a-Judge", §3.3): a pair of
  answers judged in both orders is *consistent* when the judge names the same winner (or a
  tie) both times, *biased to the first position* when the answer shown first wins both
  times, *to the second* when the one shown second does, and *inconsistent* otherwise (a
  tie one way, a winner the other).
* **First-position win rate**: of the decisive games, the share won by the answer shown
  first, with its Wilson interval and the exact two-sided binomial test of ½ (no bias).
* **Length–preference association** (AlpacaEval's length bias, Dubois et al. 2024): the
  Pearson correlation of the log length ratio of the two answers with the preference, with
  a percentile bootstrap interval over instructions, and the win rate when the model's
  answer is the longer and when it is the shorter.
* **Agreement with people** (MT-Bench's ``compute_agreement``): on the games both judged
  (same item, same order), the share of equal verdicts with ties and among the games both
  called decisively, and Cohen's κ of the three-way verdicts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from evalab.errors import InputError
from evalab.items.preferences import PreferenceSet
from evalab.items.verdicts import Verdicts
from evalab.stats.agreement import Agreement, cohen_kappa
from evalab.stats.bootstrap import percentile_interval
from evalab.stats.items import Interval, wilson_interval
from evalab.stats.mcnemar import _binomial_half_cdf_and_pmf
from evalab.stats.resampling import DEFAULT_SEED, bootstrap_counts, check_n_samples

__all__ = [
    "JudgeAgreement",
    "LengthBias",
    "PositionBias",
    "judge_agreement",
    "length_bias",
    "position_bias",
]


@dataclass(frozen=True)
class PositionBias:
    """How a judge's verdicts depend on the order the answers were shown in."""

    #: pairs judged in both orders, and how their two verdicts relate
    pairs: int
    consistent: int
    first_both: int
    second_both: int
    inconsistent: int
    #: decisive games, those won by the answer shown first, its Wilson interval and test
    decisive: int
    first_wins: int
    first_interval: Interval
    p_value: float

    @property
    def consistency(self) -> float:
        return self.consistent / self.pairs if self.pairs else math.nan


def _binomial_p(k: int, n: int) -> float:
    """Exact two-sided binomial test of ``k`` successes in ``n`` against ½."""
    if n == 0:
        return 1.0
    cdf, _ = _binomial_half_cdf_and_pmf(min(k, n - k), n)
    return min(1.0, 2.0 * cdf)


def position_bias(verdicts: Verdicts, confidence: float = 0.95) -> PositionBias:
    """Position consistency and the first position's win rate of one judge's games."""
    games: dict[tuple[str, frozenset[str]], list[tuple[str, float]]] = defaultdict(list)
    for item, a, b, y in zip(
        verdicts.item, verdicts.first, verdicts.second, verdicts.outcome, strict=True
    ):
        games[(item, frozenset((a, b)))].append((a, float(y)))
    counts = {"consistent": 0, "first": 0, "second": 0, "other": 0}
    for pair in games.values():
        if len(pair) != 2 or pair[0][0] == pair[1][0]:
            continue  # not the same pair shown in both orders
        (a, first), (_, second) = pair
        model_a_both = (first, 1.0 - second)  # outcomes for model a in each game
        if model_a_both[0] == model_a_both[1]:
            counts["consistent"] += 1
        elif first == 1.0 and second == 1.0:
            counts["first"] += 1
        elif first == 0.0 and second == 0.0:
            counts["second"] += 1
        else:
            counts["other"] += 1
    decisive = verdicts.outcome != 0.5
    n, k = int(decisive.sum()), int((verdicts.outcome == 1.0).sum())
    if n == 0:
        raise InputError(f"{verdicts.source}: every verdict is a tie; no position can win")
    return PositionBias(
        sum(counts.values()),
        counts["consistent"],
        counts["first"],
        counts["second"],
        counts["other"],
        n,
        k,
        wilson_interval(k, n, confidence),
        _binomial_p(k, n),
    )


@dataclass(frozen=True)
class LengthBias:
    """How a judge's preference for the model follows the length of its answer."""

    model: str
    #: Pearson correlation of log(length of the model's / the baseline's answer) with p - 1
    correlation: float
    interval: Interval
    #: win rate (percent) where the model's answer is longer / shorter than the baseline's
    longer_win_rate: float
    shorter_win_rate: float
    longer: int
    shorter: int


def _pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted Pearson correlation of ``x`` and ``y`` for each row of ``weights``."""
    w = weights / weights.sum(axis=-1, keepdims=True)
    mx, my = w @ x, w @ y
    cov = w @ (x * y) - mx * my
    vx, vy = w @ (x * x) - mx * mx, w @ (y * y) - my * my
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = cov / np.sqrt(vx * vy)
    return out


def length_bias(
    prefs: PreferenceSet,
    baseline_lengths: np.ndarray,
    *,
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> LengthBias:
    """The association of the preference with the answers' relative length."""
    p = np.where(prefs.preference == 0.0, 1.5, prefs.preference)
    keep = (p >= 1.0) & (p <= 2.0) & (prefs.lengths > 0) & (baseline_lengths > 0)
    if keep.sum() < 3:
        raise InputError(f"{prefs.source}: fewer than 3 judged answers of non-zero length")
    x = np.log(prefs.lengths[keep] / baseline_lengths[keep])
    y = p[keep] - 1.0
    point = float(_pearson(x, y, np.ones((1, x.size)))[0])
    boot = [
        _pearson(x, y, c.astype(np.float64))
        for c in bootstrap_counts(x.size, check_n_samples(n_samples), seed)
    ]
    _, low, high = percentile_interval(np.concatenate(boot), confidence)
    longer, shorter = x > 0, x < 0
    return LengthBias(
        prefs.model,
        point,
        Interval(low, high),
        float(y[longer].mean() * 100) if longer.any() else math.nan,
        float(y[shorter].mean() * 100) if shorter.any() else math.nan,
        int(longer.sum()),
        int(shorter.sum()),
    )


@dataclass(frozen=True)
class JudgeAgreement:
    """A judge against people (or another judge) on the games both judged."""

    games: int
    #: share of equal three-way verdicts, and of equal verdicts among games both called
    with_ties: float
    without_ties: float
    decisive_both: int
    kappa: Agreement


def judge_agreement(
    judge: Verdicts, humans: Verdicts, *, n_samples: int = 1000, seed: int = DEFAULT_SEED
) -> JudgeAgreement:
    """Agreement of two sets of verdicts on the games (item, first, second) both judged."""
    theirs: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for key in zip(humans.item, humans.first, humans.second, humans.outcome, strict=True):
        theirs[key[:3]].append(float(key[3]))
    a, b = [], []
    for item, first, second, y in zip(
        judge.item, judge.first, judge.second, judge.outcome, strict=True
    ):
        for h in theirs.get((item, first, second), []):
            a.append(float(y))
            b.append(h)
    if len(a) < 2:
        raise InputError(
            f"{judge.source} and {humans.source} share {len(a)} judged games (same item, "
            "same order); agreement needs 2"
        )
    x, z = np.array(a), np.array(b)
    both = (x != 0.5) & (z != 0.5)
    return JudgeAgreement(
        x.size,
        float((x == z).mean()),
        float((x[both] == z[both]).mean()) if both.any() else math.nan,
        int(both.sum()),
        cohen_kappa(x, z, n_samples=n_samples, seed=seed),
    )
