"""Planning an evaluation: items needed to detect a difference, and the smallest detectable one.

Two designs, as statsmodels' ``TTestPower`` (paired: one t-test on the per-item
differences, ``n - 1`` degrees of freedom) and ``TTestIndPower`` (unpaired: two models on
two independent item sets of ``n`` each, ``2n - 2`` degrees of freedom), two-sided at level
``alpha``; the power is the exact noncentral-t probability
(:func:`evalab.stats.seed_stats.power_paired` / ``power_two_sample``).

* paired: the differences have ``sd_d = sqrt(sd_a^2 + sd_b^2 - 2 rho sd_a sd_b)``;
* unpaired: the pooled ``sd = sqrt((sd_a^2 + sd_b^2) / 2)``.

With items in clusters of ``m`` (several questions on one passage) and an intra-cluster
correlation ``icc``, the design effect ``deff = 1 + (m - 1) icc`` inflates the variance of
a mean and the clustered test has ``G - 1`` degrees of freedom for ``G`` clusters: the
power with ``G`` clusters is that of a t-test with ``G`` units of standard deviation
``sd * sqrt(deff / m)``. ``n`` counts items (``G * m``) in every result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalab.errors import OutOfRangeError, SettingsError
from evalab.stats.seed_stats import pairs_needed, power_paired, power_two_sample, seeds_needed

__all__ = ["DESIGNS", "Design", "detectable_delta", "items_needed", "power_of"]

DESIGNS = ("paired", "unpaired")

#: the most items a plan may ask for (beyond it: "no feasible size")
_LIMIT = 10**9


@dataclass(frozen=True)
class Design:
    """What a power computation assumes about the two models' item scores."""

    design: str
    sd_a: float
    sd_b: float
    #: correlation of the two models' scores on the same item (paired design only)
    correlation: float = 0.0
    cluster_size: int = 1
    icc: float = 0.0

    def __post_init__(self) -> None:
        if self.design not in DESIGNS:
            raise SettingsError(f"design must be paired or unpaired, got {self.design!r}")
        for name, sd in (("sd_a", self.sd_a), ("sd_b", self.sd_b)):
            if not (math.isfinite(sd) and sd > 0):
                raise SettingsError(f"{name} must be a positive standard deviation, got {sd}")
        if not -1.0 <= self.correlation <= 1.0:
            raise SettingsError(f"correlation must lie in [-1, 1], got {self.correlation}")
        if self.cluster_size < 1:
            raise SettingsError(f"cluster size must be at least 1, got {self.cluster_size}")
        if not 0.0 <= self.icc <= 1.0:
            raise SettingsError(f"intra-cluster correlation must lie in [0, 1], got {self.icc}")

    @property
    def sd(self) -> float:
        """The standard deviation the t-test sees per item (differences, or pooled)."""
        if self.design == "paired":
            var = self.sd_a**2 + self.sd_b**2 - 2 * self.correlation * self.sd_a * self.sd_b
            return math.sqrt(max(var, 0.0))
        return math.sqrt((self.sd_a**2 + self.sd_b**2) / 2)

    @property
    def design_effect(self) -> float:
        """``1 + (m - 1) icc``."""
        return 1.0 + (self.cluster_size - 1) * self.icc

    @property
    def unit_sd(self) -> float:
        """Standard deviation of one cluster's mean, scaled so a cluster is one t-test unit."""
        return self.sd * math.sqrt(self.design_effect / self.cluster_size)


def _check(alpha: float, power: float | None = None) -> None:
    if not 0.0 < alpha < 1.0:
        raise OutOfRangeError("alpha", alpha, "strictly between 0 and 1")
    if power is not None and not alpha < power < 1.0:
        raise SettingsError(f"power must lie strictly between alpha ({alpha:g}) and 1, got {power}")


def _check_spread(design: Design) -> None:
    """Refuse a design whose test sees no spread: every size would detect every difference."""
    if design.unit_sd == 0:
        raise SettingsError(
            f"{design.design} design: the per-item differences have no variance (sd 0: "
            f"correlation {design.correlation:g} of two equal spreads), so any difference would "
            "look detectable with 2 items; assume a correlation below 1 or unequal spreads"
        )


def power_of(design: Design, delta: float, n_items: int, alpha: float = 0.05) -> float:
    """Power of the two-sided test to detect ``delta`` with ``n_items`` items (per model
    in the unpaired design), rounded down to whole clusters."""
    _check(alpha)
    units = n_items // design.cluster_size
    if design.design == "paired":
        return power_paired(delta, design.unit_sd, units, alpha)
    return power_two_sample(delta, design.unit_sd, units, alpha)


def items_needed(
    design: Design, delta: float, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Smallest number of items (per model when unpaired; a multiple of the cluster size)
    giving ``power`` to detect ``delta``; None when no size up to 10^9 items does."""
    _check(alpha, power)
    if not math.isfinite(delta) or delta == 0:
        raise SettingsError(f"delta must be a non-zero difference, got {delta}")
    limit = _LIMIT // design.cluster_size
    _check_spread(design)
    find = pairs_needed if design.design == "paired" else seeds_needed
    units = find(abs(delta), design.unit_sd, alpha=alpha, power=power, limit=limit)
    return None if units is None else units * design.cluster_size


def detectable_delta(
    design: Design, n_items: int, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest ``delta`` the test detects with ``power`` given ``n_items`` items
    (per model when unpaired): the root of ``power_of(delta) = power``, by bisection."""
    _check(alpha, power)
    if n_items // design.cluster_size < 2:
        raise SettingsError(
            f"need at least 2 clusters of {design.cluster_size} items, got {n_items} items"
        )
    _check_spread(design)
    lo, hi = 0.0, design.unit_sd
    while power_of(design, hi, n_items, alpha) < power:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if power_of(design, mid, n_items, alpha) < power:
            lo = mid
        else:
            hi = mid
    return hi
