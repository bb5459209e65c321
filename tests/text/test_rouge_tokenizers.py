"""ROUGE tokenizers: ``rouge`` is rouge-score's tokenizer exactly; ``unicode`` keeps every script."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rouge_score import tokenize as rs_tokenize
from rouge_score.tokenizers import DefaultTokenizer
from tests.conftest import read_lines, wmt_file

from evalab import _kernel
from evalab.text import get_tokenizer
from evalab.text.rouge_tokenizers import RougeTokenizer, UnicodeRougeTokenizer, distinct_tokens

STEMMER = DefaultTokenizer(use_stemmer=True)._stemmer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The café's 2 Cats!", ["the", "caf", "s", "2", "cats"]),
        ("สวัสดีครับ", []),  # rouge-score erases Thai ...
        ("東京 Москва", []),  # ... Chinese and Cyrillic
        ("x_y-z", ["x", "y", "z"]),
        ("", []),
    ],
)
def test_rouge_tokenizer_examples(text, expected):
    assert RougeTokenizer()(text) == expected
    assert rs_tokenize.tokenize(text, None) == expected  # the vector is rouge-score's


def test_rouge_stemming_only_long_tokens():
    # rouge-score stems tokens of more than three characters: nltk's 'ies' rule for
    # four-letter words gives 'tie', but 'was' stays (nltk alone would give 'wa')
    expected = ["tie", "die", "was", "run", "fli"]
    assert RougeTokenizer(stem=True)("ties dies was running flies") == expected
    assert rs_tokenize.tokenize("ties dies was running flies", STEMMER) == expected


@given(st.text())
def test_rouge_tokenizer_equals_rouge_score_on_any_text(text):
    assert RougeTokenizer()(text) == rs_tokenize.tokenize(text, None)
    assert RougeTokenizer(stem=True)(text) == rs_tokenize.tokenize(text, STEMMER)


@pytest.mark.parametrize("pair", ["de-en", "cs-en", "en-de"])
def test_rouge_tokenizer_equals_rouge_score_on_wmt22(wmt22, pair):
    ref_id = "B" if pair == "cs-en" else "A"
    lines = read_lines(wmt_file("ref", pair, ref_id))
    sample = random.Random(2).sample(lines, 150)
    for line in sample:
        assert RougeTokenizer()(line) == rs_tokenize.tokenize(line, None)
        assert RougeTokenizer(stem=True)(line) == rs_tokenize.tokenize(line, STEMMER)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Le café, 東京!", ["le", "café", "東", "京"]),
        ("สวัสดีครับ ภาษาไทย", ["สวัสดีครับ", "ภาษาไทย"]),  # combining vowel signs stay inside
        ("Привет, МИР", ["привет", "мир"]),
        ("こんにちは", ["こ", "ん", "に", "ち", "は"]),
        ("한국어 문장", ["한국어", "문장"]),
        ("x_y 3.5", ["x", "y", "3", "5"]),  # underscore and dot separate, as in rouge
        ("   ", []),
    ],
)
def test_unicode_tokenizer_keeps_every_script(text, expected):
    assert UnicodeRougeTokenizer()(text) == expected


def test_unicode_equals_rouge_on_ascii_text():
    text = "The quick brown fox jumps over the lazy dog's 2 tails; running & flying!"
    assert UnicodeRougeTokenizer()(text) == RougeTokenizer()(text)
    assert UnicodeRougeTokenizer(stem=True)(text) == RougeTokenizer(stem=True)(text)


def test_unicode_stems_only_ascii_words():
    assert UnicodeRougeTokenizer(stem=True)("running cafés états") == ["run", "cafés", "états"]


@given(st.text())
def test_unicode_never_crashes(text):
    tokens = UnicodeRougeTokenizer(stem=True)(text)
    assert all(isinstance(t, str) and t for t in tokens)
    assert all(not t.isspace() for t in tokens)


def test_registry():
    assert isinstance(get_tokenizer("rouge"), RougeTokenizer)
    assert isinstance(get_tokenizer("unicode"), UnicodeRougeTokenizer)
    assert get_tokenizer("rouge").name == "rouge"
    assert get_tokenizer("unicode").name == "unicode"


# texts mixing ASCII with the characters whose lowercase is (or holds) ASCII: İ, K (Kelvin)
_MIXED = st.lists(
    st.text() | st.text(alphabet="aZ9 -\u0130\u212a\u0131\u017f\u00e9\u4e2d\u0416\n"), max_size=6
)


@given(_MIXED)
def test_rouge_batch_tokens_equal_rouge_score_on_any_texts(texts):
    assert RougeTokenizer().many(texts) == [rs_tokenize.tokenize(t, None) for t in texts]
    assert RougeTokenizer(stem=True).many(texts) == [
        rs_tokenize.tokenize(t, STEMMER) for t in texts
    ]


@pytest.mark.parametrize("pair", ["en-ru", "en-uk", "en-zh", "de-fr"])
def test_rouge_batch_tokens_equal_rouge_score_on_wmt22(wmt22, pair):
    lines = read_lines(wmt_file("ref", pair, "A"))
    assert RougeTokenizer().many(lines) == [rs_tokenize.tokenize(t, None) for t in lines]


def _flat(tokens):
    return [
        [tokens.distinct[i] for i in tokens.indices[a:b]]
        for a, b in itertools.pairwise(tokens.offsets)
    ]


@given(_MIXED)
def test_distinct_tokens_of_the_kernel_and_the_fallback_equal_rouge_score(texts):
    expected = [rs_tokenize.tokenize(t, None) for t in texts]
    emptied = sum(1 for t, e in zip(texts, expected, strict=True) if not e and t.strip())
    compiled = RougeTokenizer().distinct(texts)
    fallback = distinct_tokens(RougeTokenizer().many, texts)
    for tokens in (compiled, fallback):
        assert _flat(tokens) == expected
        assert len(set(tokens.distinct)) == len(tokens.distinct)
        assert tokens.indices.dtype == np.int32 and tokens.offsets.dtype == np.int64
        assert tokens.emptied == emptied
    assert compiled.distinct == fallback.distinct  # both in order of first sight


def test_distinct_tokens_without_the_kernel(monkeypatch):
    monkeypatch.setattr(_kernel, "rouge", None)
    tokens = RougeTokenizer().distinct(["A cat, a dog", " \u3000", "東京"])
    assert (tokens.distinct, tokens.indices.tolist(), tokens.offsets.tolist()) == (
        ["a", "cat", "dog"],
        [0, 1, 0, 2],
        [0, 4, 4, 4],
    )
    assert tokens.emptied == 1  # the blank text is not counted, the Chinese one is


@pytest.mark.parametrize("pair", ["en-uk", "en-zh", "de-en"])
def test_distinct_tokens_equal_rouge_score_on_wmt22(wmt22, pair):
    lines = read_lines(wmt_file("ref", pair, "A"))
    assert _flat(RougeTokenizer().distinct(lines)) == [rs_tokenize.tokenize(t, None) for t in lines]
