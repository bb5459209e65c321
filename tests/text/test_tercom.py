"""The Tercom normaliser: sacrebleu's tokenizer vectors and a differential test on WMT22."""

from __future__ import annotations

import itertools
import random

import pytest
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
