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
instructions (the paired t test of their per-instruction ``p - 1``, as ``scipy.stats.ttest_rel``,
Holm over all pairs), with significance clusters from
:func:`evalab.stats.ranking.rank_systems`. Every model's interval is drawn from the same
resamples of its instructions (one resampling matrix per number of verdicts), so 200 models
cost one matrix product.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalab.errors import InputError
from evalab.items.preferences import PreferenceSet
from evalab.stats.bootstrap import check_confidence, percentile_interval
from evalab.stats.items import Interval
from evalab.stats.ranking import Ranking, rank_systems
from evalab.stats.resampling import DEFAULT_SEED, bootstrap_counts, check_n_samples, check_seed
from evalab.stats.seed_stats import t_sf2_many

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


def _intervals(
    columns: Sequence[np.ndarray], n_samples: int, seed: int, confidence: float
) -> list[Interval]:
    """Percentile intervals of each column's mean (percent); one resampling matrix per size,
    so a column's interval is the same alone or among others."""
    check_n_samples(n_samples)
    check_confidence(confidence)
    out: list[Interval | None] = [None] * len(columns)
    for size in sorted({x.size for x in columns}):
        which = [k for k, x in enumerate(columns) if x.size == size]
        counts = np.concatenate(list(bootstrap_counts(size, n_samples, seed))).astype(np.float64)
        means = counts @ np.column_stack([columns[k] for k in which]) / size
        for col, k in enumerate(which):
            _, low, high = percentile_interval(means[:, col], confidence)
            out[k] = Interval(low * 100, high * 100)
    return [iv for iv in out if iv is not None]


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
    return _win_rate(prefs, x, _intervals([x], n_samples, seed, confidence)[0])


def _win_rate(prefs: PreferenceSet, x: np.ndarray, ci: Interval) -> WinRate:
    """AlpacaEval's figures of one set from its counted verdicts ``x`` (``p - 1``)."""
    p = np.where(prefs.preference == 0.0, 1.5, prefs.preference)
    rounded = np.round(np.where(p == 1.5, 0.0, p))
    discrete = _verdicts(rounded[np.isfinite(rounded)])
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
        ci,
    )


@dataclass(frozen=True)
class WinRateTable:
    """Every model's win rate, the paired comparisons on shared instructions, and clusters."""

    rates: tuple[WinRate, ...]
    #: ``[models, models]`` two-sided paired t test p-values (not adjusted) of every pair on
    #: the instructions every model was judged on; NaN on the diagonal
    p_values: np.ndarray
    ranking: Ranking
    shared_items: int
    n_samples: int
    seed: int
    confidence: float


def _shared(sets: Sequence[PreferenceSet]) -> np.ndarray:
    """``[instructions, models]``: each set's ``p - 1`` on the instructions with a counted
    verdict in every set (in the first set's order)."""
    order = {text: i for i, text in enumerate(sets[0].instructions)}
    values = np.full((len(order), len(sets)), np.nan)
    for j, s in enumerate(sets):
        p = np.where(s.preference == 0.0, 1.5, s.preference)
        p = np.where((p >= 1.0) & (p <= 2.0), p - 1.0, np.nan)
        if s.instructions == sets[0].instructions:
            values[:, j] = p
            continue
        for text, v in zip(s.instructions, p, strict=True):
            if text in order:
                values[order[text], j] = v
    common = values[np.isfinite(values).all(axis=1)]
    if common.shape[0] < 2:
        raise InputError(
            f"the models share {common.shape[0]} judged instructions; a paired comparison needs 2"
        )
    out: np.ndarray = common
    return out


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
    counted = [_verdicts(s.preference) for s in sets]
    for s, x in zip(sets, counted, strict=True):
        if x.size < 2:
            raise InputError(f"{s.source}: {x.size} verdicts in [1, 2]; a win rate needs 2")
    intervals = _intervals(counted, n_samples, seed, confidence)
    rates = tuple(_win_rate(s, x, ci) for s, x, ci in zip(sets, counted, intervals, strict=True))
    shared = _shared(sets) if len(sets) > 1 else counted[0][:, None]
    p = _paired_p_values(shared)
    ranking = rank_systems([r.win_rate for r in rates], p, alpha, "holm")
    return WinRateTable(rates, p, ranking, int(shared.shape[0]), n_samples, seed, confidence)


def _paired_p_values(x: np.ndarray) -> np.ndarray:
    """Paired t test p-values of every pair of columns of ``x`` ``[items, models]`` (as
    ``scipy.stats.ttest_rel``); 1 where a difference never varies and is zero."""
    n, m = x.shape
    out = np.full((m, m), np.nan)
    if m < 2:
        return out
    cov = np.cov(x, rowvar=False, ddof=1)
    i, j = np.triu_indices(m, k=1)
    means = x.mean(axis=0)
    diff = means[i] - means[j]
    se = np.sqrt(np.maximum(cov[i, i] + cov[j, j] - 2 * cov[i, j], 0.0) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(
            se > 0,
            diff / np.where(se > 0, se, 1.0),
            np.where(diff == 0, 0.0, np.copysign(np.inf, diff)),
        )
    p = t_sf2_many(t, n - 1)
    out[i, j] = p
    out[j, i] = p
    return out
