"""McNemar's test: exact p-values against scipy, the mid-p formula, calibration under H0."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.errors import InputError
from evalab.stats.mcnemar import EXACT_MAX_DISCORDANT, binary_outcomes, mcnemar_test

scipy_stats = pytest.importorskip("scipy.stats")


def outcomes(b: int, c: int, both: int = 3, neither: int = 2) -> tuple[np.ndarray, np.ndarray]:
    base = [1] * b + [0] * c + [1] * both + [0] * neither
    other = [0] * b + [1] * c + [1] * both + [0] * neither
    return np.array(base), np.array(other)


@pytest.mark.parametrize(("b", "c"), [(0, 1), (1, 2), (0, 7), (5, 5), (3, 12), (25, 0), (10, 15)])
def test_exact_p_value_matches_scipy_binomtest(b, c) -> None:
    res = mcnemar_test(*outcomes(b, c))
    assert (res.baseline_only, res.system_only, res.method) == (b, c, "exact")
    assert res.p_value == pytest.approx(scipy_stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-12)


@pytest.mark.parametrize(("b", "c"), [(10, 16), (40, 60), (300, 250), (5000, 5200)])
def test_mid_p_above_the_exact_range(b, c) -> None:
    res = mcnemar_test(*outcomes(b, c))
    n, k = b + c, min(b, c)
    expected = 2 * (scipy_stats.binom.cdf(k, n, 0.5) - scipy_stats.binom.pmf(k, n, 0.5) / 2)
    assert res.method == "mid-p"
    assert b + c > EXACT_MAX_DISCORDANT
    assert res.p_value == pytest.approx(min(1.0, expected), rel=1e-9)


def test_no_discordant_pairs_and_symmetry() -> None:
    assert mcnemar_test(*outcomes(0, 0)).p_value == 1.0
    assert mcnemar_test(*outcomes(30, 30)).p_value == pytest.approx(1.0)
    a, b = outcomes(4, 9)
    assert mcnemar_test(a, b).p_value == mcnemar_test(b, a).p_value


def test_binary_outcomes_refuses_graded_rows() -> None:
    assert binary_outcomes(np.array([[1.0, 1.0], [0.0, 1.0]]), "exact_match").tolist() == [
        True,
        False,
    ]
    with pytest.raises(InputError, match="bleu has graded"):
        binary_outcomes(np.array([[0.5, 1.0]]), "bleu")
    with pytest.raises(InputError, match="right/wrong"):
        binary_outcomes(np.zeros((3, 4)), "bleu")


# -- calibration ------------------------------------------------------------------------------
# Two systems with the same accuracy on segments of varying difficulty (outcomes paired by
# segment, as in a real comparison). At level 0.05 a calibrated test rejects
# Binomial(600, 0.05) times (mean 30); the band [12, 50] holds it with probability 0.9997.
# With 200 segments the discordant counts (about 67) use the mid-p test.
TRIALS = 600


def null_rejections(segments: int) -> tuple[int, list[float]]:
    rejected, pvals = 0, []
    for t in range(TRIALS):
        rng = np.random.default_rng(50_000 + t)
        difficulty = rng.uniform(0, 1, segments)
        a = rng.uniform(size=segments) < difficulty
        b = rng.uniform(size=segments) < difficulty
        p = mcnemar_test(a, b).p_value
        pvals.append(p)
        rejected += p < 0.05
    return rejected, pvals


def test_mid_p_is_calibrated() -> None:
    k, pvals = null_rejections(200)
    assert 12 <= k <= 50, f"{k} of {TRIALS} null comparisons rejected at 0.05"
    # roughly uniform: about a tenth of the p-values in each tenth of [0, 1]
    hist, _ = np.histogram(pvals, bins=10, range=(0, 1))
    assert hist.min() >= 25 and hist.max() <= 110, hist


def test_exact_is_never_anticonservative() -> None:
    # 24 segments: at most 24 discordant pairs, so every test is the exact one
    k, _ = null_rejections(24)
    assert k <= 50, f"{k} of {TRIALS} null comparisons rejected at 0.05"
