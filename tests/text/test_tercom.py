"""The Tercom normaliser: sacrebleu's tokenizer vectors and a differential test on WMT22, for
the compiled kernel and the pure-Python fallback, and the two against each other."""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import WMT22, kernel_or_fallback, read_lines, wmt_file

from evalab import _kernel
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
#: every combination of the four switches, as keyword arguments
EVERY_SETTING = [
    dict(zip(FLAGS, flags, strict=True)) for flags in itertools.product([False, True], repeat=4)
]


@pytest.fixture(params=["kernel", "python"])
def backend(request, monkeypatch) -> str:
    """Run a test with the compiled normaliser and with its pure-Python fallback."""
    return kernel_or_fallback(request, monkeypatch, "mt")


@contextmanager
def _fallback() -> Iterator[None]:
    saved, _kernel.mt = _kernel.mt, None
    try:
        yield
    finally:
        _kernel.mt = saved


def kernel_and_fallback(kwargs: dict, lines: Sequence[str]) -> tuple[list, list]:
    """The tokens of every line from the kernel and from the fallback, as lists; their
    packed ids (``packer``: the lines normalised twice, then once, in one table) agree too."""
    normalizer = TercomNormalizer(**kwargs)
    compiled = [list(t) for t in normalizer.many(lines)]
    packed = _packed_twice_then_once(normalizer, lines)
    with _fallback():
        fallback = [list(t) for t in normalizer.many(lines)]
        assert _packed_twice_then_once(normalizer, lines) == packed, kwargs
    return compiled, fallback


def _packed_twice_then_once(normalizer: TercomNormalizer, lines: Sequence[str]) -> list:
    """Ids and offsets of the lines packed twice-normalised then once (both paths number
    tokens in order of first sight, so equal tokens give equal arrays)."""
    pack = normalizer.packer()
    return [(p.ids.tolist(), p.offsets.tolist()) for p in (pack(lines, True), pack(lines, False))]


@pytest.mark.parametrize(("kwargs", "text", "expected"), SACREBLEU_VECTORS)
def test_sacrebleu_vectors(kwargs, text, expected, backend) -> None:
    assert " ".join(TercomNormalizer(**kwargs).tokens(text)) == expected


def test_every_setting_on_wmt22_like_sacrebleu(wmt22, backend) -> None:
    tokenizer_ter = pytest.importorskip("sacrebleu.tokenizers.tokenizer_ter")
    rng = random.Random(7)
    lines = [*read_lines(wmt_file("ref", "en-zh", "A")), *read_lines(wmt_file("ref", "en-de", "A"))]
    lines += ["&quot;x&amp;y&lt;z&gt;\n-a\nb", "5-6 1,000.5 'S it's", "ＡＢ，。「」カタカナ"]
    sample = rng.sample(lines, 300) + lines[-3:]
    for kwargs in EVERY_SETTING:
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
        compiled, fallback = kernel_and_fallback(kwargs, lines)
        assert compiled == fallback == expected, kwargs


def test_twice_splits_what_the_first_pass_joined(backend) -> None:
    """References are normalised twice, as sacrebleu does: the second pass sees the first's
    tokens joined by spaces (``it's,`` loses its comma, then ``'s`` splits off)."""
    normalizer = TercomNormalizer(normalized=True, no_punct=True)
    assert list(normalizer.many(["It's, fine"])[0]) == ["it's", "fine"]
    assert list(normalizer.twice(["It's, fine"])[0]) == ["it", "'s", "fine"]
    pack = normalizer.packer()
    refs, hyps = pack(["It's, fine", ""], True), pack(["it 's fine fine"], False)
    assert refs.ids.tolist() == [0, 1, 2] and refs.offsets.tolist() == [0, 3, 3]
    assert hyps.ids.tolist() == [0, 1, 2, 2]


def test_every_joining_character_held(backend) -> None:
    """Lines holding every candidate separator are normalised one at a time, alike."""
    from evalab.text.tercom import _SEPARATORS

    tokenizer_ter = pytest.importorskip("sacrebleu.tokenizers.tokenizer_ter")
    lines = [f"A.b{_SEPARATORS}'s x", "Jim's car, 4.2", ""]
    theirs = tokenizer_ter.TercomTokenizer(normalized=True)
    ours = TercomNormalizer(normalized=True).many(lines)
    assert [list(t) for t in ours] == [theirs(line).split() for line in lines]
    assert list(ours[0]) == ["a", ".", f"b{_SEPARATORS}", "'s", "x"]


needs_kernel = pytest.mark.skipif(_kernel.mt is None, reason="evalab._mtkernel is not built")


@needs_kernel
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(st.characters(codec=None), max_size=40) | st.text(_ALPHABET), max_size=6),
    st.sampled_from(EVERY_SETTING),
)
def test_kernel_equals_fallback_on_any_text(lines, kwargs) -> None:
    """Any code points (surrogates, astral planes, whitespace of every kind): the kernel's
    tokens are the fallback's."""
    compiled, fallback = kernel_and_fallback(kwargs, lines)
    assert compiled == fallback


@needs_kernel
def test_every_cased_code_point() -> None:
    """The kernel lowercases ASCII itself and leaves a line with any other changing code
    point to str.lower() (İ becomes two, Σ depends on its neighbours): every code point
    whose lowercase differs, alone and inside a word, gives the fallback's tokens."""
    cased = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).lower() != chr(c)]
    lines = cased + [f"xa{c}b." for c in cased] + ["ΑΣ ΑΣΑ Σ", "İSTANBUL'S", "ＡＢ。Ｃ"]
    for normalized in (False, True):
        compiled, fallback = kernel_and_fallback({"normalized": normalized}, lines)
        assert compiled == fallback


def wmt22_lines(pair: str) -> list[str]:
    """Every distinct line of a WMT22 pair (source, references, system outputs), sorted."""
    paths = [p for p in WMT22.glob(f"*/generaltest2022.{pair}.*") if p.is_file()]
    if not paths:
        pytest.skip(f"no {pair} files in {WMT22}")
    return sorted({line for path in paths for line in read_lines(path)})


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("pair", ["en-ja", "en-zh", "en-de", "cs-en"])
def test_every_wmt22_line_every_setting(pair) -> None:
    """Every distinct line of the pair in every setting: kernel, fallback and sacrebleu
    alike (en-ja is not in ../shared/wmt22: $EVALAB_WMT22 names a folder holding it)."""
    tokenizer_ter = pytest.importorskip("sacrebleu.tokenizers.tokenizer_ter")
    lines = wmt22_lines(pair)
    for kwargs in EVERY_SETTING:
        theirs = tokenizer_ter.TercomTokenizer(**kwargs)
        compiled, fallback = kernel_and_fallback(kwargs, lines)
        assert compiled == fallback, kwargs
        for line, tokens in zip(lines, compiled, strict=True):
            assert tokens == theirs(line.rstrip()).split(), (kwargs, line)
