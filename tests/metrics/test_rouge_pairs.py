"""ROUGE's per-pair counts: the C kernel, the pure-Python fallback, the old single-vector
LCS, a plain DP table and rouge-score's own LCS table all agree; a long line finishes."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

import evalab
from evalab import _kernel
from evalab._kernel import Packed
from evalab.cli.app import option_of
from evalab.metrics import _rouge_pairs
from evalab.metrics._rouge_pairs import (
    lcs_from_masks,
    lcs_lengths,
    lcs_of_ids,
    match_masks,
    ngram_overlaps,
    token_ids,
)

needs_kernel = pytest.mark.skipif(_kernel.rouge is None, reason="C kernel not built")

# small alphabets make many matches; lengths up to 150 cross several 64-bit column blocks
segment = st.lists(st.sampled_from("abcdef"), max_size=150)
pairs = st.lists(st.tuples(segment, segment), min_size=1, max_size=6)


def _packed(pair_list):
    hyp = Packed.of([token_ids(a) for a, _ in pair_list])
    ref = Packed.of([token_ids(b) for _, b in pair_list])
    return hyp, ref


def _both_paths(fn, *args, monkeypatch):
    compiled = fn(*args)
    with monkeypatch.context() as m:
        m.setattr(_kernel, "rouge", None)
        fallback = fn(*args)
    return compiled, fallback


@settings(max_examples=150, deadline=None)
@given(pairs)
def test_lcs_kernel_fallback_old_algorithm_and_rouge_score_agree(pair_list):
    hyp, ref = _packed(pair_list)
    with pytest.MonkeyPatch.context() as mp:
        compiled, fallback = _both_paths(lcs_lengths, hyp, ref, monkeypatch=mp)
    for (a, b), c, f in zip(pair_list, compiled, fallback, strict=True):
        old = lcs_from_masks(match_masks(b), len(b), a) if b else 0  # the previous algorithm
        peer = rouge_scorer._lcs_table(b, a)[-1][-1]
        assert c == f == old == peer == lcs_of_ids(b, a)


@settings(max_examples=150, deadline=None)
@given(pairs, st.sampled_from([1, 2, 3]))
def test_ngram_overlaps_kernel_and_fallback_equal_counter_intersection(pair_list, n):
    hyp, ref = _packed(pair_list)
    with pytest.MonkeyPatch.context() as mp:
        compiled, fallback = _both_paths(ngram_overlaps, hyp, ref, n, monkeypatch=mp)
    for (a, b), c, f in zip(pair_list, compiled, fallback, strict=True):
        grams = lambda t: Counter(tuple(t[i : i + n]) for i in range(len(t) - n + 1))  # noqa: E731
        assert c == f == sum((grams(a) & grams(b)).values())


def test_token_ids_equal_for_equal_tokens_across_calls():
    first, second = token_ids(["x-tok", "y-tok", "x-tok"]), token_ids(["y-tok", "x-tok"])
    assert first[0] == first[2] == second[1] and first[1] == second[0] != first[0]
    assert first.dtype == np.int32


@needs_kernel
def test_kernel_refuses_ids_outside_the_vocabulary():
    hyp = Packed(np.array([0, 10**6], dtype=np.int32), np.array([0, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="vocab_size"):
        _kernel.rouge.lcs_lengths(
            hyp.ids, hyp.offsets, hyp.ids, hyp.offsets, 10, np.zeros(1, dtype=np.int64)
        )


def _long_pair(words: int, seed: int = 7) -> tuple[list[str], list[str], int]:
    """A reference of ``words`` words and a hypothesis made of every word of it but each
    tenth, with words the reference never uses put in between: the hypothesis's words that
    occur in the reference are a subsequence of it, so that subsequence is the LCS."""
    rng = random.Random(seed)
    ref = [f"w{rng.randrange(100, 600)}" for _ in range(words)]
    kept = [w for i, w in enumerate(ref) if i % 10]
    hyp = ["unseen"]
    for w in kept:
        hyp.append(w)
        if rng.random() < 0.05:
            hyp.append(f"new{rng.randrange(50)}")
    hyp.append("unseen")
    return hyp, ref, len(kept)


def test_one_megabyte_line_gives_its_exact_rouge_l():
    hyp, ref, lcs = _long_pair(200_000)  # ~1 MB per line, ~6e8 word steps in C
    hyp_line, ref_line = " ".join(hyp), " ".join(ref)
    assert len(ref_line) >= 999_999
    if _kernel.rouge is None:  # the pure fallback is quadratic in Python digits
        hyp_line, ref_line = " ".join(hyp[:5000]), " ".join(ref[:5000])
        lcs = lcs_of_ids(hyp[:5000], ref[:5000])
    rows = evalab.metric("rougeL").stats([hyp_line], [[ref_line]])
    n_hyp, n_ref = len(hyp_line.split()), len(ref_line.split())
    assert rows.rows[0, 0] == lcs / n_hyp and rows.rows[0, 1] == lcs / n_ref


def test_long_line_fallback_matches_kernel(monkeypatch):
    hyp, ref, lcs = _long_pair(3000, seed=3)
    packed = _packed([(hyp, ref)])
    compiled, fallback = _both_paths(lcs_lengths, *packed, monkeypatch=monkeypatch)
    assert compiled[0] == fallback[0] == lcs


@pytest.mark.parametrize("name", ["rougeL", "rougeLsum"])
def test_long_lcs_is_refused_until_the_bound_is_lifted(name):
    from evalab.metrics import rouge
    from evalab.metrics.base import PairTooLarge

    hyp, ref = " ".join(["a", "b"] * 50), " ".join(["b", "c", "a"] * 40)
    with pytest.raises(
        PairTooLarge,
        match=rf"{name}: segment 1 has 100 tokens against a reference of 120: {name}'s LCS would "
        rf"fill 12,000 cells \(at most 11,999\); .* lift the bound with {name}.max_lcs_cells=N",
    ) as err:
        evalab.metric(name, max_lcs_cells=11_999).stats([hyp], [[ref]])
    assert f"lift the bound with --set {name}.max_lcs_cells=N" in err.value.worded(option_of)
    lifted = evalab.metric(name, max_lcs_cells=12_000).stats([hyp], [[ref]])
    assert lifted.signature == evalab.metric(name).stats([hyp], [[ref]]).signature
    # the bound is the cells of LONG_LCS_SECONDS: two 1M-word lines are refused by default
    assert (
        _rouge_pairs.lcs_seconds(10**6, 10**6) > rouge.LONG_LCS_SECONDS
        and rouge.LONG_LCS.limit < 10**12
    )
    assert rouge.LONG_LCS.refuse and evalab.metric("rouge1").pair_work is None


def test_a_long_one_line_input_is_refused_in_seconds_through_the_cli(run_cli, tmp_path):
    import time

    words = [f"w{i % 5000}" for i in range(700_000)]  # 4.5 MB a line; 700k x 700k cells
    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    ref.write_text(" ".join(words) + "\n")
    hyp.write_text(" ".join(reversed(words)) + "\n")
    start = time.perf_counter()
    res = run_cli("score", "-r", ref, "-i", hyp, "-m", "bleu,rougeL")
    assert time.perf_counter() - start < 30 and res.exit_code == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1
    assert "hyp: line 1 has 700,000 tokens" in res.stderr
    assert "--set rougeL.max_lcs_cells=N" in res.stderr
