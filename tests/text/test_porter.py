"""Our Porter stemmer against nltk's ``PorterStemmer()`` (the mode rouge-score uses)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nltk.stem.porter import PorterStemmer as NltkPorter
from rouge_score.tokenizers import DefaultTokenizer
from tests.conftest import WMT22

from evalab.text.porter import PorterStemmer, porter_stem

NLTK = NltkPorter()
EN_PAIRS = ("cs-en", "de-en", "ru-en", "uk-en")


def english_vocabulary(max_systems: int | None = None) -> list[str]:
    """Every distinct token of the English WMT22 references and outputs (three tokenizers)."""
    words: set[str] = set()
    systems = sorted((WMT22 / "system-outputs").glob("*.en"))
    files = sorted((WMT22 / "references").glob("*.en")) + systems[:max_systems]
    for path in files:
        text = path.read_text(encoding="utf-8")
        words.update(text.split())
        words.update(re.findall(r"[a-z0-9]+", text.lower()))
        words.update(re.findall(r"\w+", text))
    return sorted(words)


def test_rouge_score_uses_nltk_default_mode():
    stemmer = DefaultTokenizer(use_stemmer=True)._stemmer
    assert stemmer.mode == NltkPorter.NLTK_EXTENSIONS


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        # Porter (1980) examples, and the NLTK_EXTENSIONS departures
        ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"), ("feed", "feed"),
        ("agreed", "agre"), ("plastered", "plaster"), ("motoring", "motor"), ("sing", "sing"),
        ("conflated", "conflat"), ("hopping", "hop"), ("falling", "fall"), ("filing", "file"),
        ("happy", "happi"), ("enjoy", "enjoy"), ("relational", "relat"), ("generalization", "gener"),
        ("dies", "die"), ("flies", "fli"), ("died", "die"), ("spied", "spi"), ("dying", "die"),
        ("skies", "sky"), ("news", "news"), ("controll", "control"), ("geology", "geolog"),
        ("by", "by"), ("Running", "run"), ("yyyy", "yyyi"),
    ],
)  # fmt: skip
def test_known_stems(word, stem):
    assert NLTK.stem(word) == stem  # the vector is nltk's
    assert porter_stem(word) == stem
    assert PorterStemmer().stem(word) == stem


@given(st.text(alphabet="abcdeilnorstuyz", max_size=14))
def test_random_ascii_words_match_nltk(word):
    assert porter_stem(word) == NLTK.stem(word)


def test_wmt22_vocabulary_sample_matches_nltk(wmt22):
    vocab = english_vocabulary(max_systems=4)
    sample = random.Random(22).sample(vocab, 4000)
    bad = [(w, NLTK.stem(w), porter_stem(w)) for w in sample if porter_stem(w) != NLTK.stem(w)]
    assert not bad, bad[:10]


@pytest.mark.slow
def test_wmt22_full_vocabulary_matches_nltk(wmt22):
    vocab = english_vocabulary()
    assert len(vocab) > 40000
    bad = [(w, NLTK.stem(w), porter_stem(w)) for w in vocab if porter_stem(w) != NLTK.stem(w)]
    assert not bad, bad[:10]
