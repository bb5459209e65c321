"""Factorial effects with their arithmetic; the 2x2 example of seed 004."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalab.stats.effects import arithmetic, contrast, factorial_effects

SEED_004 = {(False, False): 70.0, (True, False): 80.0, (False, True): 80.0, (True, True): 80.0}


def _values(noise_sd=0.0, n=1, seed=0):
    rng = np.random.default_rng(seed)

    def values(levels):
        mean = SEED_004[(levels["A"], levels["B"])]
        return mean + rng.normal(0, noise_sd, n) if noise_sd else np.full(n, mean)

    return values


def test_seed_004_removal_addition_interaction():
    cs = factorial_effects(
        {"A": [False, True], "B": [False, True]}, {"A": True, "B": True}, _values()
    )
    got = {
        (c.kind, c.name.split(" ")[2])
        if c.kind in ("removal", "addition")
        else (c.kind, c.name.split(" ")[3]): c
        for c in cs
    }
    assert got[("removal", "A=true")].arithmetic == "80 - 80 = 0"
    assert got[("removal", "B=true")].arithmetic == "80 - 80 = 0"
    assert got[("addition", "A=true")].arithmetic == "80 - 70 = +10"
    assert got[("addition", "B=true")].arithmetic == "80 - 70 = +10"
    inter = next(c for c in cs if c.kind == "interaction")
    assert inter.value == -10 and inter.arithmetic == "80 - 80 - 80 + 70 = -10"
    main_a = next(c for c in cs if c.kind == "main" and "of A=" in c.name)
    assert main_a.value == pytest.approx(-5.0)  # (70 + 80)/2 - (80 + 80)/2
    assert main_a.arithmetic == "0.5*70 + 0.5*80 - 0.5*80 - 0.5*80 = -5"


def test_contrast_ci_over_seeds_covers_the_truth():
    cs = factorial_effects(
        {"A": [False, True], "B": [False, True]}, {"A": True, "B": True}, _values(0.5, 8, seed=1)
    )
    inter = next(c for c in cs if c.kind == "interaction")
    assert inter.low < -10 < inter.high and inter.p < 0.001
    # Welch-Satterthwaite SE of the contrast = sqrt(sum s_i^2 / n_i)
    assert (inter.high - inter.low) / 2 > 0


def test_missing_cell_is_marked_not_guessed():
    c = contrast("interaction", "x", [("full", 1, np.array([80.0])), ("none", -1, np.array([]))])
    assert math.isnan(c.value) and c.missing == ("none",) and c.arithmetic.startswith("n/a")


def test_arithmetic_formats():
    assert arithmetic([1, -1], [-1.5, 2.0], -3.5) == "(-1.50) - 2.00 = -3.50"
    assert arithmetic([1, -1], [0.25, 0.25], 0.0) == "0.25 - 0.25 = 0.00"


def test_three_level_factor():
    def values(levels):
        return np.array([{1: 60.0, 4: 75.0, 8: 80.0}[levels["heads"]]] * 2)

    cs = factorial_effects({"heads": [1, 4, 8]}, {"heads": 8}, values)
    removals = [c for c in cs if c.kind == "removal"]
    assert [c.arithmetic for c in removals] == ["60 - 80 = -20", "75 - 80 = -5"]
