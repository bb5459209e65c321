"""Items needed and detectable differences against statsmodels' power classes, and a simulation."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.errors import SettingsError
from evalab.stats.items import estimate
from evalab.stats.power import Design, detectable_delta, items_needed, power_of

smp = pytest.importorskip("statsmodels.stats.power")


@pytest.mark.parametrize(
    ("sd_a", "sd_b", "rho", "delta"),
    [(0.48, 0.49, 0.5, 0.02), (0.3, 0.3, 0.0, 0.05), (1.0, 2.0, 0.8, 0.3)],
)
def test_paired_equals_ttestpower(sd_a: float, sd_b: float, rho: float, delta: float) -> None:
    d = Design("paired", sd_a, sd_b, rho)
    n = items_needed(d, delta)
    exact = smp.TTestPower().solve_power(effect_size=delta / d.sd, alpha=0.05, power=0.8)
    assert n == int(np.ceil(exact))
    assert power_of(d, delta, 500) == pytest.approx(
        smp.TTestPower().power(delta / d.sd, 500, 0.05), rel=1e-9
    )
    mdd = detectable_delta(d, 1000)
    assert smp.TTestPower().power(mdd / d.sd, 1000, 0.05) == pytest.approx(0.8, abs=1e-7)


@pytest.mark.parametrize(("sd_a", "sd_b", "delta"), [(0.48, 0.49, 0.02), (1.0, 1.5, 0.2)])
def test_unpaired_equals_ttestindpower(sd_a: float, sd_b: float, delta: float) -> None:
    d = Design("unpaired", sd_a, sd_b)
    n = items_needed(d, delta)
    exact = smp.TTestIndPower().solve_power(effect_size=delta / d.sd, alpha=0.05, power=0.8)
    assert n == int(np.ceil(exact))
    mdd = detectable_delta(d, 1000, alpha=0.01, power=0.9)
    assert smp.TTestIndPower().power(mdd / d.sd, 1000, 0.01) == pytest.approx(0.9, abs=1e-7)


def test_clustered_design_power_matches_a_simulation() -> None:
    # paired differences in clusters of 5 with ICC 0.3: the plan's power is what a
    # clustered test on simulated evaluations of that size achieves
    d = Design("paired", 1.0, 1.0, 0.5, cluster_size=5, icc=0.3)
    n = items_needed(d, 0.15)
    assert n is not None and n % 5 == 0
    assert n > items_needed(Design("paired", 1.0, 1.0, 0.5), 0.15)
    rng = np.random.default_rng(0)
    g, m, reps = n // 5, 5, 2000
    clusters = np.repeat(np.arange(g), m)
    sd, icc = d.sd, d.icc
    diffs = 0.15 + sd * (
        np.sqrt(icc) * np.repeat(rng.normal(size=(reps, g)), m, axis=1)
        + np.sqrt(1 - icc) * rng.normal(size=(reps, g * m))
    )
    rejected = np.mean([estimate(row, clusters).p_value < 0.05 for row in diffs])
    achieved = power_of(d, 0.15, n)
    assert achieved >= 0.8
    assert abs(rejected - achieved) < 3 * np.sqrt(0.8 * 0.2 / reps)


def test_bad_designs_are_refused() -> None:
    with pytest.raises(SettingsError, match="correlation"):
        Design("paired", 1.0, 1.0, 1.5)
    with pytest.raises(SettingsError, match="positive"):
        Design("paired", 0.0, 1.0)
    with pytest.raises(SettingsError, match="non-zero"):
        items_needed(Design("paired", 1.0, 1.0), 0.0)
