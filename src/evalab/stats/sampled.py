"""pass@k and maj@k over problems with several sampled answers each, with CIs over problems.

* **pass@k** (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1):
  with ``n`` samples of a problem of which ``c`` are correct, the unbiased estimate of the
  chance that at least one of ``k`` samples drawn without replacement is correct is
  ``1 - C(n - c, k) / C(n, k)``, computed as ``1 - Π_{i=n-c+1}^{n} (1 - k / i)`` (the
  numerically stable product of human-eval's ``estimate_pass_at_k``; equal to it). A
  problem with fewer than ``k`` samples has no such estimate and is refused.
* **maj@k**: a problem counts as solved when the most frequent answer among its first ``k``
  samples is correct; among answers tied for most frequent the one seen first wins (the
  order of ``collections.Counter.most_common``, as lm-eval's majority-vote filter).

The per-problem values are item scores: :func:`sampled_item_means` hands them to
:func:`evalab.stats.items.compare_items`, which gives each model's mean with its CLT,
clustered and bootstrap intervals over problems, and the paired comparison of two models
on the same problems (the right test, since they share the problems).

>>> pass_at_k(np.array([10, 10]), np.array([0, 3]), 1).round(6).tolist()
[0.0, 0.3]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from evalab.errors import InputError, SettingsError
from evalab.items.answers import SampledAnswers
from evalab.items.table import ScoreSet
from evalab.stats.items import ItemMeans

__all__ = ["majority_at_k", "majority_scores", "pass_at_k", "sampled_item_means"]


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or int(k) < 1:
        raise SettingsError(f"k must be a whole number >= 1, got {k!r}")
    return int(k)


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per-problem unbiased pass@k from ``n`` samples with ``c`` correct (arrays, one per problem).

    >>> round(float(pass_at_k(np.array([5]), np.array([2]), 2)[0]), 6)
    0.7
    """
    k = _check_k(k)
    n = np.asarray(n)
    c = np.asarray(c)
    if n.shape != c.shape or n.ndim != 1:
        raise InputError(
            f"pass@k: samples and correct counts differ in shape: {n.shape}, {c.shape}"
        )
    if np.any(c < 0) or np.any(c > n):
        bad = int(np.flatnonzero((c < 0) | (c > n))[0])
        raise InputError(
            f"pass@k: problem {bad + 1} has {int(c[bad])} correct of {int(n[bad])} samples"
        )
    if np.any(n < k):
        bad = int(np.flatnonzero(n < k)[0])
        raise InputError(
            f"pass@{k} needs at least {k} samples per problem; problem {bad + 1} has "
            f"{int(n[bad])} (use a k no larger than the fewest samples)"
        )
    out = np.ones(n.size)
    for j, (nj, cj) in enumerate(zip(n.tolist(), c.tolist(), strict=True)):
        if nj - cj >= k:
            out[j] = 1.0 - float(np.prod(1.0 - k / np.arange(nj - cj + 1, nj + 1)))
    return out


def majority_at_k(
    answers: Sequence[Sequence[str]], correct: Sequence[Sequence[bool]], k: int
) -> np.ndarray:
    """Per-problem maj@k (1.0 or 0.0): is the most frequent of the first ``k`` answers correct?

    ``answers[i][s]`` is the extracted answer of sample ``s`` of problem ``i`` and
    ``correct[i][s]`` whether that answer is right.

    >>> majority_at_k([["4", "5", "4"], ["1", "2", "2"]], [[1, 0, 1], [1, 0, 0]], 3).tolist()
    [1.0, 0.0]
    """
    k = _check_k(k)
    if len(answers) != len(correct):
        raise InputError(f"maj@k: {len(answers)} problems of answers, {len(correct)} of marks")
    out = np.empty(len(answers))
    for i, (ans, ok) in enumerate(zip(answers, correct, strict=True)):
        if len(ans) != len(ok):
            raise InputError(f"maj@k: problem {i + 1} has {len(ans)} answers, {len(ok)} marks")
        if len(ans) < k:
            raise InputError(
                f"maj@{k} needs at least {k} samples per problem; problem {i + 1} has {len(ans)}"
            )
        first = list(ans[:k])
        winner = Counter(first).most_common(1)[0][0]
        out[i] = float(bool(ok[first.index(winner)]))
    return out


def majority_scores(answers: SampledAnswers, k: int) -> ScoreSet:
    """One model's maj@k on each problem of its sampled ``answers``, as a score set (0/1)."""
    try:
        values = majority_at_k(*answers.in_order(), k)
    except InputError as exc:
        raise InputError(f"{answers.path}: {exc}") from None
    return answers.problem_scores(k, values.tolist())


def sampled_item_means(values: np.ndarray) -> ItemMeans:
    """Per-problem pass@k or maj@k values as the item means of one model (one value each).

    The estimate already averages over a problem's samples, so no within-problem variance
    is added: the interval is over problems, as the estimator's uncertainty is.
    """
    values = np.asarray(values, dtype=np.float64)
    return ItemMeans(values, np.ones(values.size), None)
