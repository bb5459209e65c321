"""Rank clusters, bootstrap p-values and the PERM-BOTH permutation test."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.metaeval.significance import bootstrap_p, clusters, permutation_p
from evalab.metaeval.statistics import SegmentData


def test_clusters_start_where_a_member_wins_significantly():
    p = np.full((4, 4), 1.0)
    p[0, 2] = 0.01  # the best beats the third
    assert clusters([0.9, 0.8, 0.7, 0.69], p, 0.05) == [1, 1, 2, 2]
    assert clusters([0.9, 0.8, 0.7], np.ones((3, 3)), 0.05) == [1, 1, 1]
    assert clusters([np.nan, 0.5], np.ones((2, 2)), 0.05) == [1, 1]


def test_bootstrap_p_counts_resamples_where_the_worse_catches_up():
    assert bootstrap_p(np.array([0.9, 0.8, 0.7, 0.6]), np.array([0.5, 0.85, 0.1, 0.6])) == 0.5


def _data(noise, seed):
    rng = np.random.default_rng(seed)
    human = rng.normal(size=(4, 60))
    mask = rng.random((4, 60)) < 0.9
    return SegmentData(human + rng.normal(0, noise, human.shape), human, mask)


@pytest.mark.parametrize(
    "stat", ["pearson", "kendall", "pearson_item", "kendall_item", "acc_eq_item"]
)
def test_permutation_separates_a_good_metric_from_noise(stat):
    good, bad = _data(0.3, 1), _data(30.0, 2)
    bad = SegmentData(bad.metric, good.human, good.mask)
    assert permutation_p(stat, good, bad, 200, np.random.default_rng(0)) < 0.05


def test_permutation_of_a_metric_against_itself_is_not_significant():
    d = _data(1.0, 3)
    assert permutation_p("pearson", d, d, 200, np.random.default_rng(0)) == 1.0
