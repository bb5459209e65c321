"""McNemar's test for paired binary outcomes (exact match, accuracy) of two systems.

Only the discordant segments carry information: ``b`` = baseline right and system wrong,
``c`` = baseline wrong and system right. Under ``H0`` (both systems are right equally
often) ``b`` given ``b + c`` is Binomial(``b + c``, 1/2) (McNemar 1947). The p-value is
two-sided, from that distribution, without a normal approximation:

* ``b + c <= 25``: the **exact** conditional test, ``p = min(1, 2 P(X <= min(b, c)))``
  (never rejects more often than its level, conservative because ``X`` is discrete);
* ``b + c > 25``: the **mid-p** test, ``p = 2 [P(X <= min(b, c)) - P(X = min(b, c)) / 2]``,
  which Fagerland, Lydersen & Laake (2013, "The McNemar test for binary matched-pairs
  data: mid-p and asymptotic are better than exact conditional", BMC Medical Research
  Methodology 13:91) found to keep the nominal level in all the settings they examined
  while being less conservative than the exact test. The asymptotic chi-square with
  continuity correction (Edwards 1948) is not used: it is conservative like the exact
  test and only approximates it.

The method used is recorded with each result (``exact`` / ``mid-p``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evalab.errors import InputError, Setting

__all__ = ["EXACT_MAX_DISCORDANT", "McNemarResult", "binary_outcomes", "mcnemar_test"]

#: the exact conditional test up to this many discordant pairs, the mid-p test above
EXACT_MAX_DISCORDANT = 25


@dataclass(frozen=True)
class McNemarResult:
    """Discordant counts and the two-sided p-value of one system against the baseline."""

    #: segments the baseline got right and the system wrong
    baseline_only: int
    #: segments the system got right and the baseline wrong
    system_only: int
    p_value: float
    #: ``exact`` or ``mid-p``
    method: str


def _binomial_half_cdf_and_pmf(k: int, n: int) -> tuple[float, float]:
    """``P(X <= k)`` and ``P(X = k)`` for ``X ~ Binomial(n, 1/2)``, summed in log space."""
    j = np.arange(k + 1, dtype=np.float64)
    log_pmf = (
        math.lgamma(n + 1) - np.array([math.lgamma(x + 1) + math.lgamma(n - x + 1) for x in j])
    ) - n * math.log(2)
    top = log_pmf.max()
    return float(math.exp(top) * np.exp(log_pmf - top).sum()), float(math.exp(log_pmf[-1]))


def mcnemar_test(baseline: np.ndarray, system: np.ndarray) -> McNemarResult:
    """McNemar's test of two 0/1 outcome vectors over the same segments."""
    base = np.asarray(baseline, dtype=bool)
    other = np.asarray(system, dtype=bool)
    if base.shape != other.shape or base.ndim != 1:
        raise InputError(
            f"mcnemar: outcome vectors must be 1-D and equally long, got {base.shape} and {other.shape}"
        )
    b = int(np.count_nonzero(base & ~other))
    c = int(np.count_nonzero(~base & other))
    n = b + c
    if n == 0:
        return McNemarResult(b, c, 1.0, "exact")
    cdf, pmf = _binomial_half_cdf_and_pmf(min(b, c), n)
    if n <= EXACT_MAX_DISCORDANT:
        return McNemarResult(b, c, min(1.0, 2 * cdf), "exact")
    return McNemarResult(b, c, min(1.0, 2 * (cdf - pmf / 2)), "mid-p")


def binary_outcomes(rows: np.ndarray, metric: str) -> np.ndarray:
    """The 0/1 outcome per segment from stats rows ``(outcome, count=1)``; refuses others."""
    rows = np.asarray(rows, dtype=np.float64)
    if (
        rows.ndim != 2
        or rows.shape[1] != 2
        or not np.all(rows[:, 1] == 1)
        or not np.all(np.isin(rows[:, 0], (0.0, 1.0)))
    ):
        raise InputError(
            Setting("test"),
            " mcnemar needs a right/wrong outcome per segment (exact_match, accuracy); "
            f"{metric} has graded per-segment statistics; use ",
            Setting("test"),
            " bs or ar",
        )
    right: np.ndarray = rows[:, 0] == 1.0
    return right
