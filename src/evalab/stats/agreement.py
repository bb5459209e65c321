"""Agreement between raters: Krippendorff's α, Cohen's κ and Fleiss' κ, each with a CI over items.

Every coefficient is split the way the Metric contract splits a corpus metric: one row of
sufficient statistics per rated item, and a pure function of the summed rows. A bootstrap
resample of the items is then a row of counts and its coefficient ``coefficient(counts @
rows)``, with the resamples of :func:`~evalab.stats.resampling.bootstrap_counts`.

* **Krippendorff's α** (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"):
  the coincidence matrix ``o`` sums, over items rated at least twice, every ordered pair of
  values within the item weighted by ``1 / (m_u - 1)``; with ``n_v = o.sum(0)``, ``n =
  n_v.sum()`` and a squared distance ``δ²`` between values, ``α = 1 - (n - 1) Σ o·δ² /
  n_vᵀ δ² n_v``. The distances are nominal (``c ≠ k``), ordinal (the ranks' mass between
  ``c`` and ``k``, which depends on ``n_v``), interval (``(c - k)²``) and ratio
  (``((c - k) / (c + k))²``); missing ratings (NaN) are allowed. Equal to the
  ``krippendorff`` package (its value domain: the sorted distinct values that occur).
* **Cohen's κ** of two raters (Cohen 1960; weighted: Cohen 1968): ``κ = 1 - Σ w·C / Σ w·E``
  over the confusion matrix ``C`` of the items both rated and its expectation ``E`` from
  the margins; weights ``none`` (``i ≠ j``), ``linear`` (``|i - j|``) or ``quadratic``
  (``(i - j)²``) on the positions of the labels in sorted order, as scikit-learn's
  ``cohen_kappa_score``.
* **Fleiss' κ** (Fleiss 1971) of a fixed number of ratings per item: ``(P̄ - P_e) / (1 -
  P_e)``, as statsmodels' ``fleiss_kappa(method="fleiss")``.

>>> data = np.array([[1, 1], [2, 2], [3, 3], [1, 2]], dtype=float)
>>> round(krippendorff_alpha(data, "nominal", n_samples=10).value, 4)
0.6667
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalab.errors import InputError, SettingsError
from evalab.stats.bootstrap import ConfidenceInterval, check_resampling, percentile_interval
from evalab.stats.resampling import (
    DEFAULT_SEED,
    bootstrap_counts,
)

__all__ = [
    "LEVELS",
    "WEIGHTS",
    "Agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Weights = Literal["none", "linear", "quadratic"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
WEIGHTS: tuple[Weights, ...] = ("none", "linear", "quadratic")

#: a vectorised coefficient: summed item rows ``[..., k]`` -> coefficient ``[...]``
Coefficient = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Agreement:
    """One agreement coefficient with its bootstrap interval over items."""

    #: ``alpha``, ``cohen_kappa`` or ``fleiss_kappa``
    coefficient: str
    #: the level of measurement (α) or the weighting (Cohen's κ); ``""`` for Fleiss' κ
    variant: str
    value: float
    ci: ConfidenceInterval
    #: items that entered the coefficient (rated by at least two raters)
    n_items: int
    n_raters: int
    #: the distinct values (α), labels (κ) or categories (Fleiss) in the order used
    values: tuple[float, ...]

    @property
    def signature(self) -> str:
        """Everything that changes the number: coefficient, variant, items, resampling."""
        variant = f"|{self.variant}" if self.variant else ""
        return f"{self.coefficient}{variant}|items:{self.n_items}|{self.ci.signature}"


def _as_matrix(ratings: np.ndarray | Sequence[Sequence[float]], what: str) -> np.ndarray:
    """``[items, raters]`` float ratings (NaN missing), checked to be finite elsewhere."""
    try:
        data = np.asarray(ratings, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what}: ratings must be numbers (NaN for missing): {exc}") from None
    if data.ndim != 2:
        raise InputError(f"{what}: ratings must be an items × raters table, got {data.ndim} axes")
    if np.isinf(data).any():
        raise InputError(f"{what}: ratings must be finite numbers or NaN (missing)")
    return data


def _domain(data: np.ndarray, what: str) -> np.ndarray:
    """The sorted distinct values that occur (at least two, as every coefficient needs)."""
    values = np.unique(data[np.isfinite(data)])
    if values.size < 2:
        raise InputError(
            f"{what}: every rating is the same value ({values.size} distinct), so agreement "
            "is undefined: it needs at least two distinct values"
        )
    return values


def _bootstrap(
    coefficient: Coefficient,
    rows: np.ndarray,
    n_samples: int,
    confidence: float,
    seed: int,
) -> ConfidenceInterval:
    """Percentile interval of ``coefficient`` over resamples of the item rows."""
    n_samples, confidence, seed = check_resampling(n_samples, confidence, seed)
    point = float(coefficient(rows.sum(axis=0)))
    parts = [
        coefficient(counts.astype(np.float64) @ rows)
        for counts in bootstrap_counts(rows.shape[0], n_samples, seed)
    ]
    mean, low, high = percentile_interval(np.concatenate(parts), confidence)
    return ConfidenceInterval(point, mean, low, high, confidence, n_samples, seed)


# --- Krippendorff's alpha -----------------------------------------------------------------


def _value_counts(data: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """``[items, V]``: how many raters gave each value to each item."""
    index = np.searchsorted(domain, np.where(np.isfinite(data), data, domain[0]))
    counts = np.zeros((data.shape[0], domain.size))
    items = np.broadcast_to(np.arange(data.shape[0])[:, None], data.shape)
    np.add.at(counts, (items[np.isfinite(data)], index[np.isfinite(data)]), 1.0)
    return counts


def _coincidence_rows(counts: np.ndarray) -> np.ndarray:
    """``[items, V, V]``: each item's ordered value pairs, weighted ``1 / (m_u - 1)``."""
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(counts.shape[1])
    pairs[:, idx, idx] -= counts
    weight = np.where(m > 1, 1.0 / np.maximum(m - 1.0, 1.0), 0.0)
    out: np.ndarray = np.asarray(pairs * weight[:, None, None], dtype=np.float64)
    return out


def _fixed_distance(level: Level, domain: np.ndarray) -> np.ndarray:
    """``δ²`` between the domain's values for the levels whose distance ignores ``n_v``."""
    c, k = domain[:, None], domain[None, :]
    out: np.ndarray
    if level == "nominal":
        out = (c != k).astype(np.float64)
    elif level == "interval":
        out = np.asarray((c - k) ** 2, dtype=np.float64)
    else:
        total = c + k
        out = np.asarray(
            np.divide(c - k, total, out=np.zeros_like(total), where=total != 0) ** 2,
            dtype=np.float64,
        )
    return out


def _ordinal_distance(n_v: np.ndarray) -> np.ndarray:
    """``[..., V, V]`` ordinal ``δ²``: the mass of ranks from ``c`` to ``k``, less half the ends."""
    cum = np.cumsum(n_v, axis=-1)
    i = np.arange(n_v.shape[-1])
    lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
    between = cum[..., hi] - cum[..., lo] + n_v[..., lo]
    ends = (n_v[..., :, None] + n_v[..., None, :]) / 2.0
    out: np.ndarray = np.asarray((between - ends) ** 2, dtype=np.float64)
    return out


def _alpha_coefficient(level: Level, domain: np.ndarray) -> tuple[Coefficient, bool]:
    """The α of summed rows, and whether the rows are the full coincidence matrices."""
    size = domain.size
    if level == "ordinal":

        def ordinal(sums: np.ndarray) -> np.ndarray:
            o = sums.reshape(*sums.shape[:-1], size, size)
            n_v = o.sum(axis=-2)
            d = _ordinal_distance(n_v)
            observed = (o * d).sum(axis=(-2, -1))
            expected = np.einsum("...i,...ij,...j->...", n_v, d, n_v)
            return _alpha_of(observed, expected, n_v.sum(axis=-1))

        return ordinal, True
    d = _fixed_distance(level, domain)

    def fixed(sums: np.ndarray) -> np.ndarray:
        observed, n_v = sums[..., 0], sums[..., 1:]
        expected = np.einsum("...i,ij,...j->...", n_v, d, n_v)
        return _alpha_of(observed, expected, n_v.sum(axis=-1))

    return fixed, False


def _alpha_of(observed: np.ndarray, expected: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``1 - (n - 1) D_o / D_e`` (NaN where no disagreement is expected)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1.0) * observed / expected, np.nan)


def krippendorff_alpha(
    ratings: np.ndarray | Sequence[Sequence[float]],
    level: Level = "interval",
    *,
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Agreement:
    """Krippendorff's α of an ``[items, raters]`` table (NaN for a missing rating).

    >>> a = krippendorff_alpha([[1, 1], [2, 2], [3, 3], [4, 3]], "interval", n_samples=10)
    >>> round(a.value, 4), a.n_items
    (0.8889, 4)
    """
    if level not in LEVELS:
        raise SettingsError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    data = _as_matrix(ratings, "Krippendorff's alpha")
    domain = _domain(data, "Krippendorff's alpha")
    if level == "ratio" and domain.min() < 0:
        raise InputError("Krippendorff's alpha (ratio): ratings must not be negative")
    counts = _value_counts(data, domain)
    pairable = counts.sum(axis=1) >= 2
    if not pairable.any():
        raise InputError("Krippendorff's alpha needs at least one item rated by two raters")
    counts = counts[pairable]
    o = _coincidence_rows(counts)
    coefficient, full = _alpha_coefficient(level, domain)
    if full:
        rows = o.reshape(o.shape[0], -1)
    else:
        observed = (o * _fixed_distance(level, domain)).sum(axis=(1, 2))
        rows = np.column_stack([observed, o.sum(axis=1)])
    ci = _bootstrap(coefficient, rows, n_samples, confidence, seed)
    return Agreement(
        "alpha", level, ci.score, ci, int(counts.shape[0]), data.shape[1], tuple(domain.tolist())
    )


# --- Cohen's kappa ------------------------------------------------------------------------


def _kappa_weights(weights: Weights, size: int) -> np.ndarray:
    i = np.arange(size, dtype=np.float64)
    if weights == "none":
        return 1.0 - np.eye(size)
    if weights == "linear":
        return np.abs(i[:, None] - i[None, :])
    return (i[:, None] - i[None, :]) ** 2


def cohen_kappa(
    first: np.ndarray | Sequence[float],
    second: np.ndarray | Sequence[float],
    weights: Weights = "none",
    *,
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Agreement:
    """Cohen's κ of two raters over the items both rated (NaN for a missing rating).

    >>> k = cohen_kappa([0, 1, 1, 0, 1], [0, 1, 0, 0, 1], n_samples=10)
    >>> round(k.value, 4)
    0.6154
    """
    if weights not in WEIGHTS:
        raise SettingsError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    a = _as_matrix(np.asarray(first, dtype=np.float64)[:, None], "Cohen's kappa")[:, 0]
    b = _as_matrix(np.asarray(second, dtype=np.float64)[:, None], "Cohen's kappa")[:, 0]
    if a.size != b.size:
        raise InputError(f"Cohen's kappa: the raters rated {a.size} and {b.size} items")
    both = np.isfinite(a) & np.isfinite(b)
    if both.sum() < 2:
        raise InputError("Cohen's kappa needs at least 2 items rated by both raters")
    a, b = a[both], b[both]
    labels = _domain(np.concatenate([a, b]), "Cohen's kappa")
    size = labels.size
    rows = np.zeros((a.size, size * size))
    rows[np.arange(a.size), np.searchsorted(labels, a) * size + np.searchsorted(labels, b)] = 1.0
    w = _kappa_weights(weights, size)

    def kappa(sums: np.ndarray) -> np.ndarray:
        c = sums.reshape(*sums.shape[:-1], size, size)
        expected = c.sum(axis=-1)[..., :, None] * c.sum(axis=-2)[..., None, :]
        expected = expected / c.sum(axis=(-2, -1))[..., None, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            out: np.ndarray = np.asarray(
                1.0 - (w * c).sum(axis=(-2, -1)) / (w * expected).sum(axis=(-2, -1)),
                dtype=np.float64,
            )
            return out

    ci = _bootstrap(kappa, rows, n_samples, confidence, seed)
    return Agreement("cohen_kappa", weights, ci.score, ci, int(a.size), 2, tuple(labels.tolist()))


# --- Fleiss' kappa ------------------------------------------------------------------------


def _fleiss(sums: np.ndarray) -> np.ndarray:
    """Fleiss' κ of summed rows ``[items, raters, Σ n_ij², n_j...]``."""
    items, raters, squares, n_j = sums[..., 0], sums[..., 1], sums[..., 2], sums[..., 3:]
    per_item = raters / items
    p_j = n_j / raters[..., None]
    p_bar = (squares - raters) / (per_item * (per_item - 1.0) * items)
    p_e = (p_j**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = np.asarray((p_bar - p_e) / (1.0 - p_e), dtype=np.float64)
        return out


def fleiss_kappa(
    ratings: np.ndarray | Sequence[Sequence[float]],
    *,
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Agreement:
    """Fleiss' κ of an ``[items, raters]`` table with the same number of ratings per item.

    Raters need not be the same people across items (Fleiss' design), but every item must
    have the same number of ratings: a missing rating (NaN) is refused.

    >>> k = fleiss_kappa([[1, 1, 1], [1, 2, 2], [2, 2, 2], [1, 1, 2]], n_samples=10)
    >>> round(k.value, 4)
    0.3333
    """
    data = _as_matrix(ratings, "Fleiss' kappa")
    if np.isnan(data).any():
        raise InputError(
            "Fleiss' kappa needs every item rated the same number of times; with missing "
            "ratings use Krippendorff's alpha (nominal)"
        )
    if data.shape[1] < 2 or data.shape[0] < 1:
        raise InputError("Fleiss' kappa needs at least 2 ratings per item")
    categories = _domain(data, "Fleiss' kappa")
    counts = _value_counts(data, categories)
    rows = np.column_stack(
        [
            np.ones(counts.shape[0]),
            counts.sum(axis=1),
            (counts**2).sum(axis=1),
            counts,
        ]
    )
    ci = _bootstrap(_fleiss, rows, n_samples, confidence, seed)
    return Agreement(
        "fleiss_kappa",
        "",
        ci.score,
        ci,
        int(data.shape[0]),
        int(data.shape[1]),
        tuple(categories.tolist()),
    )
