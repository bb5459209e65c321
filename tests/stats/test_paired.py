"""Paired bootstrap and approximate randomization: brute force, edge cases, calibration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.errors import InputError, SettingsError
from evalab.stats import (
    paired_approximate_randomization,
    paired_bootstrap,
    paired_test,
)

from .toy_metric import MeanMetric, mean_rows, mean_scorer


def ratio(sums):
    """A non-linear metric: a ratio of summed counts (like a corpus precision)."""
    return 100 * sums[..., 0] / np.maximum(sums[..., 1], 1)


def brute_bootstrap(scorer, base, system, n_samples, seed, method):
    """sacrebleu's _paired_bs_test written as a loop over the index matrix."""
    n = len(base)
    idx = np.random.default_rng(seed).choice(n, size=(n_samples, n), replace=True)
    sb = np.array([scorer(base[i].sum(0)) for i in idx])
    ss = np.array([scorer(system[i].sum(0)) for i in idx])
    observed = abs(scorer(system.sum(0)) - scorer(base.sum(0)))
    if method == "sacrebleu":
        d = np.abs(ss - sb)
        stat = d - d.mean()
    else:
        d = ss - sb
        stat = np.abs(d - d.mean())
    return (np.sum(stat >= observed) + 1) / (n_samples + 1), ss


def brute_ar(scorer, base, system, n_trials, seed):
    """sacrebleu's _paired_ar_test written as a loop over the swap matrix."""
    n = len(base)
    pos = np.random.default_rng(seed).integers(2, size=(n_trials, n), dtype=bool)
    observed = abs(scorer(system.sum(0)) - scorer(base.sum(0)))
    stat = []
    for p in pos:
        a = base[p].sum(0) + system[~p].sum(0)
        b = base[~p].sum(0) + system[p].sum(0)
        stat.append(abs(scorer(a) - scorer(b)))
    return (np.sum(np.array(stat) >= observed) + 1) / (n_trials + 1)


def count_rows(seed, n=80, shift=0):
    rng = np.random.default_rng(seed)
    total = rng.integers(1, 30, n)
    correct = rng.binomial(total, 0.5 + shift)
    return np.column_stack([correct, total]).astype(float)


@pytest.mark.parametrize("method", ["centered", "sacrebleu"])
def test_bootstrap_matches_brute_force(method):
    base, s1, s2 = count_rows(0), count_rows(1, shift=0.03), count_rows(2, shift=0.1)
    res = paired_bootstrap(ratio, {"b": base, "s1": s1, "s2": s2}, 300, seed=5, p_value=method)
    assert [r.system for r in res.systems] == ["b", "s1", "s2"]
    assert res.baseline.p_value is None and res.baseline.baseline and res.baseline.delta == 0
    for r, sys in zip(res.systems[1:], (s1, s2), strict=True):
        p, scores = brute_bootstrap(ratio, base, sys, 300, 5, method)
        assert r.p_value == pytest.approx(p, abs=1e-15)
        assert r.ci.mean == pytest.approx(scores.mean(), abs=1e-10)
        srt = np.sort(scores)
        assert (r.ci.low, r.ci.high) == pytest.approx((srt[7], srt[292]), abs=1e-10)
        assert r.delta == pytest.approx(ratio(sys.sum(0)) - ratio(base.sum(0)), abs=1e-12)
    assert 0.0 < res.systems[2].p_value < 0.01 < res.systems[1].p_value


def test_ar_matches_brute_force():
    base, s1, s2 = count_rows(0), count_rows(1, shift=0.03), count_rows(2, shift=0.1)
    res = paired_approximate_randomization(ratio, [base, s1, s2], 500, seed=9, chunk_rows=64)
    for r, sys in zip(res.systems[1:], (s1, s2), strict=True):
        assert r.p_value == pytest.approx(brute_ar(ratio, base, sys, 500, 9), abs=1e-15)
    # the CI comes from a separate bootstrap with the same seed: that of bootstrap_ci
    from evalab.stats import bootstrap_ci

    assert res.systems[1].ci == bootstrap_ci(ratio, s1, 1000, seed=9)
    assert res.signature == "test:ar|n:500|seed:9|bs:1000|conf:0.95"


def test_several_metrics_share_one_stream():
    base, sys = count_rows(3), count_rows(4, shift=0.05)
    both = paired_test(
        "bs",
        {"ratio": ratio, "mean": MeanMetric()},
        {
            "ratio": {"b": base, "s": sys},
            "mean": {"b": mean_rows(base[:, 0]), "s": mean_rows(sys[:, 0])},
        },
        n_samples=200,
        seed=1,
    )
    alone = paired_bootstrap(ratio, {"b": base, "s": sys}, 200, seed=1)
    assert both["ratio"] == alone
    assert both["mean"].metric == "mean" and both["mean"].signature.startswith(
        "test:bs|n:200|seed:1"
    )


def test_identical_systems_have_p_one():
    rows = count_rows(5)
    for res in (
        paired_bootstrap(ratio, [rows, rows.copy(), rows.copy()], 200),
        paired_bootstrap(ratio, [rows, rows.copy()], 200, p_value="sacrebleu"),
        paired_approximate_randomization(ratio, [rows, rows.copy()], 300),
    ):
        assert [r.p_value for r in res.systems[1:]] == [1.0] * (len(res.systems) - 1)
        assert all(r.delta == 0.0 for r in res.systems)


def test_progress_reports_every_resample():
    seen = []
    paired_test(
        "ar",
        {"r": ratio},
        {"r": {"a": count_rows(0), "b": count_rows(1)}},
        n_samples=100,
        ci_samples=70,
        chunk_rows=32,
        progress=seen.append,
    )
    assert sum(seen) == 170 and max(seen) == 32


def test_one_segment():
    a, b = mean_rows([0.2]), mean_rows([0.9])
    with pytest.warns(UserWarning, match="only one segment"):
        ar = paired_approximate_randomization(mean_scorer, [a, b], 100)
    # swapping the only segment only flips the sign of the difference: no evidence
    assert ar.systems[1].p_value == 1.0
    with pytest.warns(UserWarning, match="only one segment"):
        bs = paired_bootstrap(mean_scorer, [a, b], 100)
    assert bs.systems[1].ci.low == bs.systems[1].ci.high == pytest.approx(0.9)
    assert bs.systems[1].delta == pytest.approx(0.7)


def test_errors_name_the_systems():
    a, b = count_rows(0, n=10), count_rows(1, n=9)
    with pytest.raises(InputError, match=r"base: 10 segments, other: 9 segments"):
        paired_bootstrap(ratio, {"base": a, "other": b})
    with pytest.raises(InputError, match="at least one other system"):
        paired_bootstrap(ratio, {"base": a})
    with pytest.raises(InputError, match="no segments"):
        paired_bootstrap(ratio, {"a": np.zeros((0, 2)), "b": np.zeros((0, 2))})
    with pytest.raises(SettingsError, match="at least 1"):
        paired_bootstrap(ratio, [a, a], n_samples=0)
    with pytest.raises(SettingsError, match="at least 1"):
        paired_approximate_randomization(ratio, [a, a], n_trials=-3)
    with pytest.raises(SettingsError, match="unknown test"):
        paired_test("t", {"r": ratio}, {"r": {"a": a, "b": a}})
    with pytest.raises(SettingsError, match="p_value"):
        paired_bootstrap(ratio, [a, a], p_value="greater")
    with pytest.raises(SettingsError, match="vectorised"):
        paired_bootstrap(lambda s: 1.0, [a, a])


# -- calibration ----------------------------------------------------------------------------
# 600 seeded null comparisons (two systems drawn from the same distribution, paired by
# segment difficulty); at level 0.05 the number of rejections is Binomial(600, 0.05)
# (mean 30, sd 5.3) for a calibrated test. The band [12, 50] holds it with probability
# 0.9997 (scipy.stats.binom); a test that never rejects (0) or rejects twice as often
# (mean 60-70, like sacrebleu's bootstrap statistic, below) falls outside it.
TRIALS, SEGMENTS, RESAMPLES = 600, 50, 200


def null_rejections(run) -> int:
    rejected = 0
    for t in range(TRIALS):
        rng = np.random.default_rng(10_000 + t)
        difficulty = rng.normal(0, 2, SEGMENTS)
        a = difficulty + rng.normal(size=SEGMENTS)
        b = difficulty + rng.normal(size=SEGMENTS)
        p = run([mean_rows(a), mean_rows(b)], t).systems[1].p_value
        rejected += p < 0.05
    return rejected


def test_bootstrap_is_calibrated():
    k = null_rejections(lambda s, t: paired_bootstrap(mean_scorer, s, RESAMPLES, seed=t))
    assert 12 <= k <= 50, f"{k} of {TRIALS} null comparisons rejected at 0.05"


def test_ar_is_calibrated():
    k = null_rejections(
        lambda s, t: paired_approximate_randomization(
            mean_scorer, s, RESAMPLES, seed=t, ci_samples=0
        )
    )
    assert 12 <= k <= 50, f"{k} of {TRIALS} null comparisons rejected at 0.05"


def test_sacrebleu_bootstrap_statistic_is_anticonservative():
    # why p_value="centered" is the default: centring |δ*| instead of δ* rejects a true
    # null about 12% of the time at level 0.05 (binomial band for 12%: about [50, 95])
    k = null_rejections(
        lambda s, t: paired_bootstrap(mean_scorer, s, RESAMPLES, seed=t, p_value="sacrebleu")
    )
    assert k > 50, f"{k} of {TRIALS}"


# -- properties -----------------------------------------------------------------------------
rows_st = st.integers(2, 25).flatmap(
    lambda n: st.tuples(
        st.lists(st.tuples(st.integers(0, 20), st.integers(1, 20)), min_size=n, max_size=n),
        st.lists(st.tuples(st.integers(0, 20), st.integers(1, 20)), min_size=n, max_size=n),
    )
)


@settings(max_examples=40, deadline=None)
@given(pair=rows_st, seed=st.integers(0, 2**31))
def test_self_comparison_p_is_one(pair, seed):
    rows = np.array(pair[0], dtype=float)
    assert paired_bootstrap(ratio, [rows, rows], 50, seed=seed).systems[1].p_value == 1.0
    assert (
        paired_approximate_randomization(ratio, [rows, rows], 50, seed=seed, ci_samples=0)
        .systems[1]
        .p_value
        == 1.0
    )


@settings(max_examples=40, deadline=None)
@given(pair=rows_st, seed=st.integers(0, 2**31))
def test_swapping_baseline_and_system_keeps_the_p_value(pair, seed):
    a, b = (np.array(x, dtype=float) for x in pair)
    ab = paired_approximate_randomization(ratio, [a, b], 64, seed=seed, ci_samples=0)
    ba = paired_approximate_randomization(ratio, [b, a], 64, seed=seed, ci_samples=0)
    assert ab.systems[1].p_value == ba.systems[1].p_value
    assert ab.systems[1].delta == -ba.systems[1].delta
    bab = paired_bootstrap(ratio, [a, b], 64, seed=seed)
    bba = paired_bootstrap(ratio, [b, a], 64, seed=seed)
    assert abs(bab.systems[1].p_value - bba.systems[1].p_value) <= 2 / 65  # float ties only


@settings(max_examples=30, deadline=None)
@given(pair=rows_st, seed=st.integers(0, 2**31))
def test_results_lie_in_range(pair, seed):
    a, b = (np.array(x, dtype=float) for x in pair)
    for res in (
        paired_bootstrap(ratio, [a, b], 40, seed=seed),
        paired_approximate_randomization(ratio, [a, b], 40, seed=seed, ci_samples=40),
    ):
        p = res.systems[1].p_value
        assert 1 / 41 <= p <= 1.0
        for r in res.systems:
            assert r.ci.low <= r.ci.high


def test_undefined_resamples_are_left_out():
    # a ratio with a zero denominator on most segments: some resamples draw none of the
    # others and score NaN; they must not count as "at least as extreme" or as spread
    def raw_ratio(sums):
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums[..., 0] / sums[..., 1]

    base = np.array([[0.0, 0.0]] * 6 + [[1.0, 2.0], [2.0, 2.0]])
    sys = np.array([[0.0, 0.0]] * 6 + [[2.0, 2.0], [2.0, 2.0]])
    res = paired_bootstrap(raw_ratio, [base, sys], 400, seed=0)
    boot = np.random.default_rng(0).choice(8, size=(400, 8))
    defined = int(np.sum((boot >= 6).any(axis=1)))
    assert defined < 400  # the case is exercised
    p = res.systems[1].p_value
    assert np.isfinite(p) and p >= 1 / (defined + 1)
    assert np.isfinite(res.systems[1].ci.low) and res.systems[1].ci.low <= res.systems[1].ci.high
    undefined = paired_bootstrap(raw_ratio, [base[:6], sys[:6]], 50, seed=0)
    assert np.isnan(undefined.systems[1].p_value)


def test_a_setting_the_test_would_ignore_is_refused():
    # the shared option set must not turn a setting that does nothing into a silent no-op
    acc = lambda s: s[..., 0] / s[..., 1]  # noqa: E731
    base = np.array([[1.0, 1], [0, 1], [1, 1], [0, 1]])
    with pytest.raises(TypeError, match="'ci_samples'"):
        paired_bootstrap(acc, [base, base], ci_samples=5)
    with pytest.raises(TypeError, match="'p_value'"):
        paired_approximate_randomization(acc, [base, base], p_value="centered")


def test_a_one_metric_test_refuses_the_option_it_would_ignore():
    rows = np.array([[1.0, 1], [0, 1], [1, 1]])
    with pytest.raises(TypeError, match="'ci_samples': the bootstrap's own resamples"):
        paired_bootstrap(ratio, [rows, rows], n_samples=10, ci_samples=10)
    with pytest.raises(TypeError, match="'p_value': randomization has one p-value"):
        paired_approximate_randomization(ratio, [rows, rows], n_trials=10, p_value="sacrebleu")
