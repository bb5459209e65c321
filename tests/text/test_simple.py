"""The simple tokenizers: seed 002's ``words``, ``whitespace`` and SQuAD v1.1 normalisation."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalab.errors import SettingsError
from evalab.text import get_tokenizer
from evalab.text.simple import SquadTokenizer, WhitespaceTokenizer, WordsTokenizer, normalize_squad


def squad_v11_normalize(s: str) -> str:
    """normalize_answer from the official SQuAD v1.1 evaluate script (the oracle)."""

    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # seed 002: re.findall(r"\w+", text.lower())
        ("The cat sat on the mat.", ["the", "cat", "sat", "on", "the", "mat"]),
        ("Hello, World! x_1 2.5", ["hello", "world", "x_1", "2", "5"]),
        ("Café NAÏVE", ["café", "naïve"]),
        ("東京 Привет", ["東京", "привет"]),
        ("", []),
        ("  \t ", []),
        ("!!!", []),
    ],
)
def test_words(text, expected):
    assert WordsTokenizer()(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hello,  World! ", ["Hello,", "World!"]),
        ("a\tb\nc", ["a", "b", "c"]),
        ("", []),
    ],
)
def test_whitespace(text, expected):
    assert WhitespaceTokenizer()(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("a  an the", ""),
        ("Theory of an apple", "theory of apple"),  # articles as whole words only
        ("U.S.-born", "usborn"),  # ASCII punctuation is deleted, not replaced by space
        ("  «quoted»  text ", "«quoted» text"),  # non-ASCII punctuation is kept
        ("", ""),
    ],
)
def test_normalize_squad(text, expected):
    assert normalize_squad(text) == expected
    assert SquadTokenizer()(text) == expected.split()


@given(st.text())
def test_squad_matches_official_normalisation(text):
    assert normalize_squad(text) == squad_v11_normalize(text)


@given(st.text())
def test_tokenizers_never_crash_and_return_strings(text):
    for tok in (WordsTokenizer(), WhitespaceTokenizer(), SquadTokenizer()):
        tokens = tok(text)
        assert all(isinstance(t, str) and t for t in tokens)


@given(st.text(alphabet=" \t\n\r\u00a0\u2028\u3000"))
def test_whitespace_only_gives_no_tokens(text):
    for tok in (WordsTokenizer(), WhitespaceTokenizer(), SquadTokenizer()):
        assert tok(text) == []


def test_registry_names_and_instances():
    for name, cls in (
        ("words", WordsTokenizer),
        ("whitespace", WhitespaceTokenizer),
        ("squad", SquadTokenizer),
    ):
        tok = get_tokenizer(name)
        assert isinstance(tok, cls)
        assert tok.name == name
        assert get_tokenizer(name) is tok  # cached, stateless


def test_unknown_tokenizer_lists_names():
    with pytest.raises(SettingsError, match=r"unknown tokenizer 'nope'.*words.*squad"):
        get_tokenizer("nope")
