"""Corrections for testing several hypotheses at once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalab.errors import InputError

__all__ = ["holm_bonferroni"]


def holm_bonferroni(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (Holm 1979), in the input order.

    With the ``m`` p-values sorted ascending, ``p_(i)`` becomes
    ``max_{j <= i} min(1, (m - j + 1) * p_(j))``. Rejecting where the adjusted value is
    below ``alpha`` controls the family-wise error rate at ``alpha`` under any dependence
    between the tests, and is never less powerful than plain Bonferroni.

    >>> holm_bonferroni([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64).ravel()
    if p.size and (not np.all(np.isfinite(p)) or p.min() < 0.0 or p.max() > 1.0):
        raise InputError(f"p-values must lie in [0, 1], got {p.tolist()}")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.maximum.accumulate(scaled)
    out = np.empty(m)
    out[order] = adjusted
    return out
