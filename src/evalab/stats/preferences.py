"""Win rates against a baseline from judge preferences, as AlpacaEval reports them, with CIs.

A verdict ``p`` in [1, 2] is the judge's preference for the model over the baseline, plus 1.
AlpacaEval 2.0 (``alpaca_eval.metrics.get_winrate``) reports, and this module reproduces to
the last digit on its own annotation files:

* ``win_rate``: the mean of ``p - 1`` over the verdicts in [1, 2], times 100 (a verdict of
  0, the old draw code, counts as 1.5; NaN or a missing verdict is left out);
* ``standard_error``: the standard error of that mean (``ddof = 1``), times 100;
* ``n_wins`` / ``n_wins_base``: verdicts above / below 1.5; ``n_draws``: verdicts equal to 1.5
  (or 0); ``n_total``: the verdicts counted;
* ``discrete_win_rate``: the same mean after rounding each verdict to 1 or 2 (exact draws stay
  ½), times 100;
* ``avg_length``: the mean length in characters of the model's answers, truncated to an
  integer (over the answers in the file: AlpacaEval takes every output, judged or not).

Beyond AlpacaEval: a percentile bootstrap interval of the win rate over instructions, and
the paired comparison of any two models judged against the same baseline on the same
instructions (their per-instruction ``p - 1`` are item scores: the paired t test of
:func:`evalab.stats.items.compare_items`, Holm over all pairs), with significance clusters
from :func:`evalab.stats.ranking.rank_systems`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalab.errors import InputError
from evalab.items.preferences import PreferenceSet
from evalab.stats.bootstrap import check_confidence, percentile_interval
from evalab.stats.items import Interval, ItemComparison, ItemMeans, compare_items
from evalab.stats.ranking import Ranking, rank_systems
from evalab.stats.resampling import DEFAULT_SEED, bootstrap_counts, check_n_samples, check_seed

__all__ = ["WinRate", "WinRateTable", "win_rate", "win_rates"]


@dataclass(frozen=True)
class WinRate:
    """One model's win rate against the baseline (percentages, AlpacaEval's fields)."""

    model: str
    baseline: str
    win_rate: float
    standard_error: float
    n_wins: int
    n_wins_base: int
    n_draws: int
    n_total: int
    discrete_win_rate: float
    avg_length: int
    #: percentile bootstrap interval of ``win_rate`` over instructions
    ci: Interval


def _verdicts(preference: np.ndarray) -> np.ndarray:
    """``p - 1`` of the verdicts AlpacaEval counts (0 read as a draw; outside [1, 2] dropped)."""
    p = np.where(preference == 0.0, 1.5, preference)
    keep = (p >= 1.0) & (p <= 2.0)
    return p[keep] - 1.0


def win_rate(
    prefs: PreferenceSet,
    *,
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> WinRate:
    """AlpacaEval's figures of one annotation set, with a bootstrap interval."""
    x = _verdicts(prefs.preference)
    if x.size < 2:
        raise InputError(f"{prefs.source}: {x.size} verdicts in [1, 2]; a win rate needs 2")
    p = np.where(prefs.preference == 0.0, 1.5, prefs.preference)
    rounded = np.round(np.where(p == 1.5, 0.0, p))
    discrete = _verdicts(rounded[np.isfinite(rounded)])
    means = [
        counts @ x / x.size for counts in bootstrap_counts(x.size, check_n_samples(n_samples), seed)
    ]
    _, low, high = percentile_interval(np.concatenate(means), check_confidence(confidence))
    return WinRate(
        prefs.model,
        prefs.baseline,
        float(x.mean() * 100),
        float(x.std(ddof=1) / math.sqrt(x.size) * 100),
        int(np.count_nonzero(x > 0.5)),
        int(np.count_nonzero(x < 0.5)),
        int(np.count_nonzero(p == 1.5)),
        int(x.size),
        float(discrete.mean() * 100),
        int(prefs.lengths.mean()),
        Interval(low * 100, high * 100),
    )


@dataclass(frozen=True)
class WinRateTable:
    """Every model's win rate, the paired comparisons on shared instructions, and clusters."""

    rates: tuple[WinRate, ...]
    #: the paired comparisons (all pairs) on the instructions every model was judged on
    comparison: ItemComparison
    ranking: Ranking
    shared_items: int
    n_samples: int
    seed: int
    confidence: float


def _shared(sets: Sequence[PreferenceSet]) -> list[np.ndarray]:
    """Each set's ``p - 1`` on the instructions with a counted verdict in every set."""
    counted = []
    for s in sets:
        p = np.where(s.preference == 0.0, 1.5, s.preference)
        ok = (p >= 1.0) & (p <= 2.0)
        counted.append(
            {text: v - 1.0 for text, v, k in zip(s.instructions, p, ok, strict=True) if k}
        )
    common = sorted(set.intersection(*(set(c) for c in counted)))
    if len(common) < 2:
        raise InputError(
            f"the models share {len(common)} judged instructions; a paired comparison needs 2"
        )
    return [np.array([c[t] for t in common]) for c in counted]


def win_rates(
    sets: Sequence[PreferenceSet],
    *,
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
) -> WinRateTable:
    """Win rates of several models against one baseline, compared pairwise on shared items."""
    if not sets:
        raise InputError("no annotation sets")
    baselines = {s.baseline for s in sets}
    if len(baselines) > 1:
        raise InputError(
            f"the models were judged against different baselines ({', '.join(sorted(baselines))}); "
            "win rates compare only against one"
        )
    names = [s.model for s in sets]
    if len(set(names)) != len(names):
        raise InputError("two annotation sets name the same model; name them NAME=PATH")
    seed = check_seed(seed)
    rates = tuple(win_rate(s, n_samples=n_samples, confidence=confidence, seed=seed) for s in sets)
    shared = _shared(sets) if len(sets) > 1 else [_verdicts(sets[0].preference)]
    means = [ItemMeans(v, np.ones(v.size), None) for v in shared]
    comparison = compare_items(
        names, means, baseline=None, confidence=confidence, n_samples=0, seed=seed
    )
    p = np.full((len(sets), len(sets)), np.nan)
    for pair in comparison.pairs:
        i, j = names.index(pair.model), names.index(pair.baseline)
        p[i, j] = p[j, i] = pair.p_value
    ranking = rank_systems([r.win_rate for r in rates], p, alpha, "holm")
    return WinRateTable(
        rates, comparison, ranking, int(shared[0].size), n_samples, seed, confidence
    )
