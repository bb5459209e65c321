"""Test-set intervals: simulations with known test-set and seed noise, reference
computations from explicit resampled indices, bounds, the single-seed case."""

from __future__ import annotations

import math
from statistics import NormalDist
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.errors import InputError
from evalab.stats.bootstrap import percentile_interval
from evalab.stats.seed_stats import paired_t, welch
from evalab.stats.two_level import (
    ResampledRuns,
    clip,
    delta_bounds,
    example_delta,
    example_value,
    resample_runs,
    two_level_delta,
)

PHI = NormalDist().cdf


def mean_run(values: np.ndarray) -> SimpleNamespace:
    """A mean-type run (e.g. accuracy in %): stats rows [value, 1], scored as their mean."""
    v = np.asarray(values, dtype=float)
    return SimpleNamespace(
        rows=np.column_stack([v, np.ones_like(v)]), scores_from_sums=lambda s: s[..., 0] / s[..., 1]
    )


def simulate_row(rng, z, theta: float, seed_shifts: np.ndarray) -> list[np.ndarray]:
    """Per-example correctness (0/100) of each seed's model: example difficulty ``z`` is shared
    by every run; a model's own per-example luck is fresh. Model s of the row is right on
    example i when z_i + theta + shift_s + u_si > 0, so its accuracy over the example
    population is 100 Φ((theta + shift_s) / √2)."""
    return [100.0 * (z + theta + a + rng.standard_normal(z.size) > 0) for a in seed_shifts]


def truth(theta: float, seed_shifts: np.ndarray) -> float:
    """The row's value with these trained models on the whole example population."""
    return float(np.mean([100.0 * PHI((theta + a) / math.sqrt(2.0)) for a in seed_shifts]))


def scored(runs: list[np.ndarray], resamples: int, seed: int) -> ResampledRuns:
    return resample_runs([mean_run(v) for v in runs], resamples, seed)


def test_resampled_runs_are_the_runs_on_explicitly_drawn_examples():
    rng = np.random.default_rng(1)
    runs = [rng.random(50) * 100 for _ in range(3)]
    rr = resample_runs([mean_run(v) for v in runs], 64, seed=7)
    # bootstrap_counts draws sacrebleu's index matrix: default_rng(seed).choice(n, (B, n))
    idx = np.random.default_rng(7).choice(50, size=(64, 50))
    expected = np.stack([v[idx].mean(axis=1) for v in runs])
    np.testing.assert_allclose(rr.values, expected, rtol=1e-12)
    np.testing.assert_allclose(rr.points, [v.mean() for v in runs])
    # the Δ interval is the percentile interval of the per-resample differences of seed means
    row, base = rr.take([0, 1]), rr.take([2])
    d = example_delta(row, base, 0.9)
    _, lo, hi = percentile_interval(expected[:2].mean(axis=0) - expected[2], 0.9)
    assert (d.low, d.high) == pytest.approx((lo, hi), rel=1e-12)


def test_example_interval_covers_the_truth_at_its_nominal_rate():
    """400 simulated studies with known test-set noise (two rows, 3 seeds, 300 examples):
    the 95% intervals of the value and of Δ cover the truth 95% ± 3% of the time."""
    rng = np.random.default_rng(2026)
    hits_value = hits_delta = 0
    studies = 400
    for k in range(studies):
        z = rng.standard_normal(300)
        base_shift, row_shift = rng.normal(0, 0.1, 3), rng.normal(0, 0.1, 3)
        base = simulate_row(rng, z, 0.5, base_shift)
        row = simulate_row(rng, z, 0.3, row_shift)
        rr = scored(base + row, 400, seed=k)
        b, r = rr.take([0, 1, 2]), rr.take([3, 4, 5])
        v = example_value(r, 0.95, (0.0, 100.0))
        d = example_delta(r, b, 0.95, (0.0, 100.0))
        hits_value += v.low <= truth(0.3, row_shift) <= v.high
        hits_delta += d.low <= truth(0.3, row_shift) - truth(0.5, base_shift) <= d.high
    assert abs(hits_value / studies - 0.95) <= 0.03, hits_value
    assert abs(hits_delta / studies - 0.95) <= 0.03, hits_delta


def test_two_level_interval_is_never_narrower_than_the_seed_only_one():
    """Both sources vary (seed shifts and test examples): in every simulated study the
    two-level interval of Δ is at least as wide as Welch's over seeds, and wider than the
    test-set one. (A plain percentile interval of seeds-then-examples draws is narrower
    than Welch's in about 40% of these studies: a bootstrap of 2-6 seeds understates them.)"""
    rng = np.random.default_rng(5)
    for k in range(60):
        seeds = int(rng.integers(2, 7))
        z = rng.standard_normal(400)
        base_shift, row_shift = rng.normal(0, 0.08, seeds), rng.normal(0, 0.08, seeds)
        rr = scored(
            simulate_row(rng, z, 0.5, base_shift) + simulate_row(rng, z, 0.4, row_shift),
            500,
            seed=k,
        )
        b, r = rr.take(range(seeds)), rr.take(range(seeds, 2 * seeds))
        both = two_level_delta(r, b, paired=False, confidence=0.95)
        w = welch(r.points, b.points)
        ex = example_delta(r, b, 0.95)
        assert both is not None
        assert both.ci.high - both.ci.low >= w.high - w.low
        assert both.ci.high - both.ci.low > ex.high - ex.low
        assert both.mean == pytest.approx(w.delta)


def test_paired_by_seed_recovers_a_paired_effect_welch_misses():
    """Seeds share a large effect across rows (data order, initialization); the row adds a
    known +1 point. Unpaired (Welch, or two-level with independent seed draws) sees only the
    seed noise; paired (paired t, two-level with the same seed draw) finds the effect."""
    rng = np.random.default_rng(11)
    seeds = 6
    shared = rng.normal(0.0, 4.0, seeds)  # the seed effect, in points
    per_example = rng.random(1000) * 100
    noise = [rng.normal(0, 2.0, 1000) for _ in range(2 * seeds)]
    base = [per_example + shared[s] + noise[s] for s in range(seeds)]
    row = [per_example + shared[s] + 1.0 + noise[seeds + s] for s in range(seeds)]
    rr = scored(base + row, 1000, seed=3)
    b, r = rr.take(range(seeds)), rr.take(range(seeds, 2 * seeds))
    assert welch(r.points, b.points).p > 0.3
    assert paired_t(r.points, b.points).p < 0.01
    unpaired = two_level_delta(r, b, paired=False, confidence=0.95)
    paired = two_level_delta(r, b, paired=True, confidence=0.95)
    assert unpaired is not None and paired is not None
    assert unpaired.p_value > 0.3 and unpaired.ci.low < 0 < unpaired.ci.high
    assert paired.p_value < 0.01 and paired.ci.low < 1.0 < paired.ci.high and paired.ci.low > 0
    assert paired.df == seeds - 1


def test_two_level_p_agrees_with_its_interval():
    rng = np.random.default_rng(3)
    for k in range(30):
        z = rng.standard_normal(200)
        rr = scored(
            simulate_row(rng, z, 0.5, rng.normal(0, 0.1, 3))
            + simulate_row(rng, z, 0.5 + rng.normal(0, 0.3), rng.normal(0, 0.1, 4)),
            300,
            seed=k,
        )
        t = two_level_delta(
            rr.take([3, 4, 5, 6]), rr.take([0, 1, 2]), paired=False, confidence=0.95
        )
        assert t is not None
        assert (t.p_value < 0.05) == (not t.ci.low <= 0.0 <= t.ci.high)


def test_one_seed_has_a_test_set_interval_and_no_two_level_one():
    rng = np.random.default_rng(0)
    z = rng.standard_normal(500)
    rr = scored(
        simulate_row(rng, z, 0.5, np.zeros(1)) + simulate_row(rng, z, 0.2, np.zeros(1)), 500, seed=0
    )
    b, r = rr.take([0]), rr.take([1])
    v, d = example_value(r, 0.95), example_delta(r, b, 0.95)
    value, delta = r.points.mean(), r.points.mean() - b.points.mean()
    assert v.low < value < v.high and d.low < delta < d.high
    assert d.high - d.low > 0
    assert two_level_delta(r, b, paired=False, confidence=0.95) is None
    assert two_level_delta(r, b, paired=True, confidence=0.95) is None


def test_paired_two_level_needs_matched_runs():
    rr = scored([np.ones(10) * 100, np.zeros(10), np.ones(10) * 50], 32, seed=0)
    with pytest.raises(InputError, match="paired seeds"):
        two_level_delta(rr.take([0, 1]), rr.take([2]), paired=True, confidence=0.95)
    with pytest.raises(InputError, match="at least one example"):
        resample_runs([mean_run(np.ones(0))], 10, 0)
    with pytest.raises(InputError, match=r"share their test examples; got \[3, 4\]"):
        resample_runs([mean_run(np.ones(3)), mean_run(np.ones(4))], 10, 0)


@settings(max_examples=60, deadline=None)
@given(
    spread=st.floats(0.0, 60.0),
    level=st.floats(0.0, 100.0),
    seeds=st.integers(2, 5),
    n=st.integers(1, 40),
    seed=st.integers(0, 2**31),
)
def test_intervals_never_leave_declared_bounds(spread, level, seeds, n, seed):
    """Accuracy in [0, 100], anywhere near a bound, with any seed spread: every interval
    stays inside [0, 100] (the value) or [-100, 100] (Δ)."""
    rng = np.random.default_rng(seed)
    runs = [np.clip(level + spread * rng.standard_normal(n), 0, 100) for _ in range(2 * seeds)]
    rr = scored(runs, 64, seed=seed)
    b, r = rr.take(range(seeds)), rr.take(range(seeds, 2 * seeds))
    v = example_value(r, 0.99, (0.0, 100.0))
    d = example_delta(r, b, 0.99, (0.0, 100.0))
    assert 0.0 <= v.low <= v.high <= 100.0 and -100.0 <= d.low <= d.high <= 100.0
    for paired in (False, True):
        t = two_level_delta(r, b, paired=paired, confidence=0.99, bounds=(0.0, 100.0))
        assert t is not None
        if math.isfinite(t.ci.low):
            assert -100.0 <= t.ci.low <= t.ci.high <= 100.0


def test_a_t_interval_past_the_bounds_is_clipped():
    # two seeds far apart: Δ ± t(1)·se runs far past ±100 unless clipped
    rr = scored(
        [np.full(20, 0.0), np.full(20, 100.0), np.full(20, 100.0), np.full(20, 0.0)], 64, seed=0
    )
    b, r = rr.take([0, 1]), rr.take([2, 3])
    free = two_level_delta(r, b, paired=True, confidence=0.95)
    bounded = two_level_delta(r, b, paired=True, confidence=0.95, bounds=(0.0, 100.0))
    assert free is not None and bounded is not None
    assert free.ci.low < -100 and free.ci.high > 100
    assert (bounded.ci.low, bounded.ci.high) == (-100.0, 100.0) and bounded.p_value == free.p_value


def test_clip_and_delta_bounds():
    assert clip(-3.0, 104.0, (0.0, 100.0)) == (0.0, 100.0)
    assert clip(5.0, 6.0, None) == (5.0, 6.0)
    assert math.isnan(clip(math.nan, 1.0, (0.0, 1.0))[0])
    assert delta_bounds((0.0, 100.0)) == (-100.0, 100.0) and delta_bounds(None) is None


@pytest.mark.slow
def test_two_level_interval_covers_the_truth_over_seeds_and_examples():
    """Seeds drawn from a population of trained models and examples from a population of
    examples: the two-level 95% interval of Δ covers the population Δ at least ~95% of the
    time. With seed noise small beside the seed × example interaction it is conservative
    (about 98% here): t takes the seeds' few degrees of freedom, never more, which is what
    keeps it at least as wide as the seeds-only interval."""
    rng = np.random.default_rng(99)
    grid = np.linspace(-8, 8, 4001)
    weight = np.exp(-(grid**2) / 2)

    def population(theta: float, sd: float) -> float:
        return float(
            np.sum(weight * 100 * np.vectorize(PHI)((theta + sd * grid) / math.sqrt(2)))
            / weight.sum()
        )

    true_delta = population(0.3, 0.1) - population(0.5, 0.1)
    hits, studies = 0, 300
    for k in range(studies):
        z = rng.standard_normal(300)
        rr = scored(
            simulate_row(rng, z, 0.5, rng.normal(0, 0.1, 4))
            + simulate_row(rng, z, 0.3, rng.normal(0, 0.1, 4)),
            500,
            seed=k,
        )
        t = two_level_delta(
            rr.take([4, 5, 6, 7]), rr.take([0, 1, 2, 3]), paired=False, confidence=0.95
        )
        assert t is not None
        hits += t.ci.low <= true_delta <= t.ci.high
    assert hits / studies >= 0.92, hits


def test_rows_without_seed_spread_get_the_welch_lower_bound_df_not_a_normal_quantile():
    # every seed's run of a row scores the same per-example values: Welch's ν is 0/0; with
    # ∞ (before) the interval was Δ ± 1.96·se, as if many seeds had shown the seed noise is 0
    rng = np.random.default_rng(3)
    base, row = 100.0 * (rng.random(300) < 0.8), 100.0 * (rng.random(300) < 0.7)
    res = two_level_delta(
        scored([row] * 3, 200, 0).take([0, 1, 2]),
        scored([base] * 4, 200, 0).take([0, 1, 2, 3]),
        paired=False,
        confidence=0.95,
    )
    assert res.df == 2.0  # min(3, 4) - 1
    assert res.ci.high - res.mean == pytest.approx(4.302652729911275 * res.se)  # t(0.975, 2)
