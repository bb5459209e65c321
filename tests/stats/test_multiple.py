"""Holm–Bonferroni adjusted p-values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.errors import InputError
from evalab.stats import holm_bonferroni


def holm_reject(p, alpha):
    """Holm's step-down procedure as stated in Holm (1979): reject until the first failure."""
    order = np.argsort(p, kind="stable")
    reject = np.zeros(len(p), dtype=bool)
    for rank, i in enumerate(order):
        if p[i] > alpha / (len(p) - rank):
            break
        reject[i] = True
    return reject


def test_worked_example():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    assert holm_bonferroni([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm_bonferroni([0.5, 0.6]).tolist() == [1.0, 1.0]
    assert holm_bonferroni([0.02]).tolist() == [0.02]
    assert holm_bonferroni([]).tolist() == []


@pytest.mark.parametrize("bad", [[0.1, 1.2], [-0.1], [np.nan]])
def test_bad_p_values(bad):
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        holm_bonferroni(bad)


@settings(max_examples=100, deadline=None)
@given(
    p=st.lists(st.floats(0, 1), min_size=1, max_size=12), alpha=st.sampled_from([0.01, 0.05, 0.1])
)
def test_adjusted_values_reproduce_the_step_down_procedure(p, alpha):
    p = np.array(p)
    adj = holm_bonferroni(p)
    assert np.all(adj >= p) and np.all(adj <= 1.0)
    # adjusted p < alpha  <=>  Holm rejects at alpha (away from exact boundary ties)
    if not np.any(np.isclose(p[:, None] * np.arange(1, len(p) + 1), alpha)):
        assert np.array_equal(adj <= alpha, holm_reject(p, alpha))
    # order of the input does not matter
    for perm in itertools.islice(itertools.permutations(range(len(p))), 5):
        assert np.allclose(holm_bonferroni(p[list(perm)]), adj[list(perm)])
