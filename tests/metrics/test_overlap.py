"""Exact match, token F1 and accuracy: seed 002 vectors, edge cases, SQuAD parity, properties.

Seed 002 gives the definitions (EM on stripped strings; F1 on the multisets of
``re.findall(r"\\w+", text.lower())`` tokens, best over targets; accuracy as exact match on a
normalised label) but no numbers, so the expected values below are worked by hand from
those definitions (the arithmetic is in the comments). SQuAD mode is checked against the
official v1.1 evaluate functions, written inline as the oracle.
"""

from __future__ import annotations

import collections
import random
import re
import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import read_lines, wmt_file, wmt_systems

import evalab
from evalab.errors import SettingsError
from evalab.metrics.overlap import Accuracy, ExactMatch, TokenF1, token_f1

# (prediction, targets, expected) -- worked by hand
EM_VECTORS = [
    ("Paris", ["Paris"], 1.0),
    ("  Paris\n", ["Paris "], 1.0),  # seed: pred.strip() == t.strip()
    ("paris", ["Paris"], 0.0),  # case matters in the seed's exact match
    ("Paris", ["London", "Paris"], 1.0),  # any target
    ("", [""], 1.0),
    ("", ["Paris"], 0.0),
]

F1_VECTORS = [
    # 3 pred tokens, 4 target tokens, 3 shared: P = 1, R = 3/4, F1 = 2*.75/1.75 = 6/7
    ("The cat sat", ["the cat sat down"], 6 / 7),
    # no shared token
    ("dog", ["cat"], 0.0),
    # exact match
    ("The cat, sat!", ["the cat sat"], 1.0),
    # repeated-phrase clipping: "the" x4 vs "the cat": overlap min(4, 1) = 1,
    # P = 1/4, R = 1/2, F1 = 2 * 1/8 / (3/4) = 1/3
    ("the the the the", ["the cat"], 1 / 3),
    # best over targets: vs "c": 0; vs "a b c": P = 1, R = 2/3, F1 = 0.8
    ("a b", ["c", "a b c"], 0.8),
    # empty prediction / empty target / both empty (convention documented in overlap.py)
    ("", ["cat"], 0.0),
    ("cat", [""], 0.0),
    ("", [""], 1.0),
    ("!!!", ["  "], 1.0),  # both have no tokens
]


@pytest.mark.parametrize(("pred", "targets", "expected"), EM_VECTORS)
def test_exact_match_vectors(pred, targets, expected):
    assert evalab.score("exact_match", pred, targets) == expected
    assert ExactMatch().sentence_score(pred, targets).score == expected


@pytest.mark.parametrize(("pred", "targets", "expected"), F1_VECTORS)
def test_f1_vectors(pred, targets, expected):
    assert evalab.score("f1", pred, targets) == pytest.approx(expected, abs=1e-12)
    assert TokenF1().sentence_score(pred, targets).fmeasure == pytest.approx(expected, abs=1e-12)


def test_f1_components():
    s = TokenF1().sentence_score("The cat sat", ["the cat sat down"])
    assert (s.precision, s.recall) == (1.0, 0.75)
    assert token_f1(["a", "cat", "a"], ["a", "cat", "sat"]) == (2 / 3, 2 / 3, 2 / 3)


@pytest.mark.parametrize(
    ("pred", "targets", "expected"),
    [
        (" Positive ", ["positive"], 1.0),  # labels are stripped and lowercased
        ("negative", ["positive"], 0.0),
        ("B", ["b"], 1.0),
    ],
)
def test_accuracy_vectors(pred, targets, expected):
    assert evalab.score("accuracy", pred, targets) == expected


def test_corpus_is_mean_of_segments():
    hyps = ["the cat sat", "dog", "a b"]
    refs = [["the cat sat down", "cat", "a b c"]]
    m = TokenF1()
    rows = m.stats(hyps, refs).rows
    assert m.stat_names == ("f1", "precision", "recall", "count")
    assert rows[:, 3].tolist() == [1.0, 1.0, 1.0]
    assert m.corpus_score(hyps, refs).score == pytest.approx((6 / 7 + 0 + 0.8) / 3)
    em = ExactMatch().corpus_score(["a", "b", "c", "d"], [["a", "x", "c", "y"]])
    assert em.score == 0.5
    assert (em.matches, em.count) == (2.0, 4.0)


def test_squad_mode():
    assert (
        evalab.metric("exact_match", tokenize="squad")
        .sentence_score("The Eiffel Tower", ["Eiffel tower!"])
        .score
        == 1.0
    )
    assert evalab.metric("f1", tokenize="squad").sentence_score(
        "the Eiffel Tower in Paris", ["an Eiffel tower"]
    ).score == pytest.approx(2 * 0.5 / 1.5)


def test_signatures():
    assert TokenF1().signature_for(2).startswith("f1|nrefs:2|tok:words|version:")
    assert (
        ExactMatch(tokenize="squad").signature_for(1).startswith("exact_match|nrefs:1|norm:squad|")
    )
    assert Accuracy().signature_for(1).startswith("accuracy|nrefs:1|norm:lower|")


def test_bad_settings():
    with pytest.raises(SettingsError, match="unknown tokenizer 'nope'"):
        TokenF1(tokenize="nope")
    with pytest.raises(SettingsError, match=r"unknown normalisation 'nope'.*strip"):
        ExactMatch(tokenize="nope")


# -- SQuAD v1.1 parity ----------------------------------------------------------------------
def _squad_normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _squad_f1(prediction, ground_truth):
    p, g = _squad_normalize(prediction).split(), _squad_normalize(ground_truth).split()
    num_same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if num_same == 0:
        return 0
    precision, recall = num_same / len(p), num_same / len(g)
    return (2 * precision * recall) / (precision + recall)


def test_squad_parity_on_wmt22(wmt22):
    refs_a = read_lines(wmt_file("ref", "de-en", "A"))
    refs_b = read_lines(wmt_file("ref", "de-en", "B"))
    hyps = read_lines(wmt_file("hyp", "de-en", wmt_systems("de-en")[0]))
    idx = sorted(random.Random(5).sample(range(len(hyps)), 300))
    h = [hyps[i] for i in idx]
    a, b = [refs_a[i] for i in idx], [refs_b[i] for i in idx]
    ours = evalab.metric("f1", tokenize="squad").stats(h, [a, b]).rows[:, 0]
    expected = [max(_squad_f1(x, y), _squad_f1(x, z)) for x, y, z in zip(h, a, b, strict=True)]
    assert np.max(np.abs(ours - expected)) < 1e-12
    em = (
        evalab.metric("exact_match", tokenize="squad").stats(h + a[:5], [a + a[:5], b + b[:5]]).rows
    )
    assert em[-5:, 0].tolist() == [1.0] * 5


# -- properties -----------------------------------------------------------------------------
texts = st.text(max_size=40)


@settings(max_examples=60, deadline=None)
@given(texts, texts)
def test_f1_bounded_and_symmetric(a, b):
    for tok in ("words", "squad", "whitespace"):
        m = TokenF1(tokenize=tok)
        f_ab = m.sentence_score(a, [b]).score
        assert 0.0 <= f_ab <= 1.0
        assert f_ab == pytest.approx(m.sentence_score(b, [a]).score, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(texts)
def test_identical_inputs_score_one(a):
    for name in ("exact_match", "f1", "accuracy"):
        assert evalab.score(name, a, [a]) == 1.0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(texts, texts), min_size=1, max_size=8), st.randoms())
def test_segment_order_and_sharding_do_not_change_corpus(pairs, rnd):
    hyps = [h for h, _ in pairs]
    refs = [[r for _, r in pairs]]
    m = TokenF1()
    full = m.corpus_score(hyps, refs).score
    order = list(range(len(pairs)))
    rnd.shuffle(order)
    shuffled = m.corpus_score([hyps[i] for i in order], [[refs[0][i] for i in order]]).score
    assert shuffled == pytest.approx(full, abs=1e-12)
    k = len(pairs) // 2
    rows = np.concatenate(
        [m.stats(hyps[:k], [refs[0][:k]]).rows, m.stats(hyps[k:], [refs[0][k:]]).rows]
    )
    assert m.aggregate(rows, 1).score == pytest.approx(full, abs=1e-12)


@given(st.text(alphabet=" \t\u00a0\u3000\u2028"))
def test_whitespace_only_never_crashes(ws):
    assert evalab.score("f1", ws, ["cat"]) == 0.0
    assert evalab.score("f1", ws, [ws]) == 1.0
    assert evalab.score("exact_match", ws, [""]) == 1.0
