"""The Tercom normaliser: sacrebleu's tokenizer vectors and a differential test on WMT22."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import read_lines, wmt_file

from evalab.text.tercom import TercomNormalizer

# sacrebleu's own vectors (mjpost/sacrebleu, test/test_tokenizer_ter.py): settings, input, output
SACREBLEU_VECTORS = [
    ({}, "a b c d", "a b c d"),
    ({}, "", ""),
    ({}, "a b c d.", "a b c d."),
    ({}, "A B C D.", "a b c d."),
    ({"no_punct": True}, "a b c d.", "a b c d"),
    ({"no_punct": True}, "A ; B ) C : D.", "a b c d"),
    ({"normalized": True}, "a b (c) d.", "a b ( c ) d ."),
    ({"normalized": True}, "Jim's car.", "jim 's car ."),
    ({"normalized": True}, "4.2", "4.2"),
    ({"normalized": True, "asian_support": True}, "美众院公布对特", "美 众 院 公 布 对 特"),
    ({"normalized": True, "asian_support": True}, "りの拳銃を持", "りの 拳 銃 を 持"),
]
FLAGS = ("normalized", "no_punct", "asian_support", "case_sensitive")


@pytest.mark.parametrize(("kwargs", "text", "expected"), SACREBLEU_VECTORS)
def test_sacrebleu_vectors(kwargs, text, expected) -> None:
    assert " ".join(TercomNormalizer(**kwargs).tokens(text)) == expected


def test_every_setting_on_wmt22_like_sacrebleu(wmt22) -> None:
    tokenizer_ter = pytest.importorskip("sacrebleu.tokenizers.tokenizer_ter")
    rng = random.Random(7)
    lines = [*read_lines(wmt_file("ref", "en-zh", "A")), *read_lines(wmt_file("ref", "en-de", "A"))]
    lines += ["&quot;x&amp;y&lt;z&gt;\n-a\nb", "5-6 1,000.5 'S it's", "ＡＢ，。「」カタカナ"]
    sample = rng.sample(lines, 300) + lines[-3:]
    for flags in itertools.product([False, True], repeat=4):
        kwargs = dict(zip(FLAGS, flags, strict=True))
        theirs = tokenizer_ter.TercomTokenizer(**kwargs)
        ours = TercomNormalizer(**kwargs)
        for line in sample:
            assert list(ours.tokens(line)) == theirs(line.rstrip()).split(), (kwargs, line)


# kana, kanji, CJK and full-width punctuation, ASCII marks the rules look at, case pairs,
# whitespace, and the control characters that may join the lines of a call
_ALPHABET = "ぁあいカタナ漢字日本語，。、「」（）ＡＢ！？ aAbBsS'.,-&;:\"()0123456789\n\t\x00\x01Σς"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_ALPHABET, max_size=30), max_size=8), st.booleans(), st.booleans())
def test_many_equals_sacrebleu_line_by_line(lines, normalized, asian_support) -> None:
    """The lines of a call are normalised together: each gets sacrebleu's tokens, whatever
    it holds (entities, marks at the line ends, the joining characters themselves)."""
    tokenizer_ter = pytest.importorskip("sacrebleu.tokenizers.tokenizer_ter")
    for no_punct, case_sensitive in itertools.product([False, True], repeat=2):
        kwargs = dict(
            zip(FLAGS, (normalized, no_punct, asian_support, case_sensitive), strict=True)
        )
        theirs = tokenizer_ter.TercomTokenizer(**kwargs)
        expected = [theirs(line.rstrip()).split() for line in lines]
        assert [list(t) for t in TercomNormalizer(**kwargs).many(lines)] == expected, kwargs


def test_every_joining_character_held() -> None:
    """Lines holding every candidate separator are normalised one at a time, alike."""
    from evalab.text.tercom import _SEPARATORS

    tokenizer_ter = pytest.importorskip("sacrebleu.tokenizers.tokenizer_ter")
    lines = [f"A.b{_SEPARATORS}'s x", "Jim's car, 4.2", ""]
    theirs = tokenizer_ter.TercomTokenizer(normalized=True)
    ours = TercomNormalizer(normalized=True).many(lines)
    assert [list(t) for t in ours] == [theirs(line).split() for line in lines]
    assert list(ours[0]) == ["a", ".", f"b{_SEPARATORS}", "'s", "x"]
