"""A row's Δ over seeds against scipy: Welch unpaired, paired t over the seeds both rows
finished, and the 0/0 case where every seed agrees."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from evalab.ablation.analysis.seed_deltas import DeltaTests, paired, seed_stats, unpaired

TESTS = DeltaTests(alpha=0.05, power=0.8, confidence=0.95, aso=False, seed=0, permutations=2000)


def test_unpaired_delta_is_welchs():
    row, base = [71.2, 69.8, 70.5, 72.0], [74.1, 73.0, 75.2]
    ms = unpaired(seed_stats("acc", row, 0.95), row, base, True, TESTS)
    want = sps.ttest_ind(row, base, equal_var=False)
    assert math.isclose(ms.delta, np.mean(row) - np.mean(base))
    assert math.isclose(ms.p_welch, want.pvalue, rel_tol=1e-9)
    assert ms.vs == "base" and not ms.paired and ms.direction == "worse"
    assert ms.perm_exact and 0 < ms.p_perm <= 1


def test_paired_delta_uses_the_seeds_both_rows_finished():
    row = {0: 70.0, 1: 71.5, 2: 69.0, 3: 72.5}
    parent = {0: 72.0, 1: 72.0, 3: 75.0}  # seed 2 of the trained row is missing
    common = seed_stats("acc", list(row.values()), 0.95)
    ms = paired(common, row, parent, True, TESTS)
    a, b = [70.0, 71.5, 72.5], [72.0, 72.0, 75.0]
    assert math.isclose(ms.delta, float(np.mean(np.subtract(a, b))))
    assert math.isclose(ms.p_welch, sps.ttest_rel(a, b).pvalue, rel_tol=1e-9)
    assert ms.n == 4  # the row's own values keep every seed


def test_no_seed_spread_leaves_the_t_test_undefined():
    ms = unpaired(seed_stats("acc", [70.0, 70.0], 0.95), [70.0, 70.0], [71.0, 71.0], True, TESTS)
    assert ms.no_seed_spread and math.isnan(ms.p_welch) and math.isnan(ms.delta_low)
    assert ms.delta == -1.0 and not ms.too_few_seeds  # no seed noise: nothing to separate
