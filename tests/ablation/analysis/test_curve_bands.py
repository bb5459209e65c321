"""Bands over seeds: the mean, lowest and highest seed at each step, over the seeds that
logged it (a seed stopped early leaves the band)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.ablation.analysis.curve_bands import band, thinned
from evalab.ablation.contract.curves import Curve


def direct(curves: list[Curve]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for c in curves:
        for step, value in zip(c.steps.tolist(), c.values.tolist(), strict=True):
            out.setdefault(step, []).append(value)
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40), min_size=1, max_size=5),
    st.booleans(),
)
def test_band_is_the_seeds_mean_and_range_at_each_step(runs, same_steps):
    curves = [
        Curve(np.arange(len(v)) * (1 if same_steps else k + 1), np.array(v))
        for k, v in enumerate(runs)
    ]
    b = band(curves)
    expected = direct(curves)
    assert b.steps.tolist() == sorted(expected)
    for i, step in enumerate(b.steps.tolist()):
        vals = expected[step]
        assert b.seeds[i] == len(vals) and b.low[i] == min(vals) and b.high[i] == max(vals)
        assert abs(b.mean[i] - sum(vals) / len(vals)) <= 1e-9 * max(1.0, *map(abs, vals))


def test_an_early_stopped_seed_leaves_the_band():
    b = band([Curve(np.arange(10), np.arange(10.0)), Curve(np.arange(4), np.full(4, 100.0))])
    assert b.seeds.tolist() == [2] * 4 + [1] * 6 and b.high.tolist()[:5] == [100.0] * 4 + [4.0]


def test_thinning_keeps_the_widest_range_and_the_last_step():
    steps = np.arange(10_000)
    b = band([Curve(steps, np.sin(steps / 50.0)), Curve(steps, np.cos(steps / 50.0))])
    t = thinned(b, 400)
    assert len(t.steps) == 400 and t.steps[-1] == 9999
    assert t.low.min() == b.low.min() and t.high.max() == b.high.max()
