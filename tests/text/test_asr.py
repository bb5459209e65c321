"""jiwer's word rules: the C pass of :func:`word_ids` against :func:`word_tokens` and a
:class:`TokenTable` (the pure-Python path), and WER against jiwer on every WMT22 en-ru system."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import read_lines, wmt_file, wmt_systems

from evalab import _kernel
from evalab._kernel import Packed, TokenTable
from evalab.metrics.wer import WER
from evalab.text.asr import word_ids, word_tokens

needs_kernel = pytest.mark.skipif(_kernel.mt is None, reason="evalab._mtkernel is not built")

# every kind of whitespace str.isspace() knows (ASCII, \x1c-\x1f, NEL, NBSP, ideographic,
# line separator), characters that are not whitespace though they look it (ZWSP, BOM),
# letters changed by lowercase (with length changes: İ, final sigma), punctuation,
# combining marks, astral characters and lone surrogates
ALPHABET = [
    *" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000",
    *"\u200b\ufeff",
    *"aAbB\u0130\u03a3\u03c3\u00df",
    *".,!?-\u00bf\u3001",
    *"\u0301\u0308",
    *"\U0001f600\U00010400",
    *"\ud800\udfff",
]
TEXTS = st.lists(st.text(st.sampled_from(ALPHABET), max_size=12), max_size=8)
SETTINGS = st.tuples(st.booleans(), st.booleans(), st.sampled_from(["default", "any"]))


def python_ids(texts: list[str], lowercase: bool, punct: bool, whitespace: str) -> Packed:
    return TokenTable().pack([word_tokens(t, lowercase, punct, whitespace) for t in texts])


def assert_same(a: Packed, b: Packed) -> None:
    assert a.ids.dtype == b.ids.dtype == np.int32
    assert a.offsets.dtype == b.offsets.dtype == np.int64
    assert a.ids.tolist() == b.ids.tolist()
    assert a.offsets.tolist() == b.offsets.tolist()


@needs_kernel
@settings(max_examples=400, deadline=None)
@given(TEXTS, SETTINGS)
def test_kernel_words_are_word_tokens(texts, options) -> None:
    # ids in order of first sight on both paths, so the arrays themselves are equal
    assert_same(word_ids(texts, *options), python_ids(texts, *options))


@needs_kernel
@pytest.mark.parametrize(
    "text",
    ["", " ", "\t", " \t ", "a", "a\tb", "a \tb", "a\t", "\ta", "a\x1cb", "a\x85\xa0b", "a  b"],
)
@pytest.mark.parametrize("whitespace", ["default", "any"])
def test_kernel_words_of_edge_cases(text, whitespace) -> None:
    assert_same(
        word_ids([text, text], whitespace=whitespace),
        python_ids([text, text], False, False, whitespace),
    )


def test_python_fallback_gives_the_same_ids(monkeypatch) -> None:
    texts = ["The cat  sat", "", "the\tcat", " sat  the ", "x\u3000y"]
    expected = python_ids(texts, True, False, "default")
    monkeypatch.setattr(_kernel, "mt", None)
    assert_same(word_ids(texts, lowercase=True), expected)


@needs_kernel
def test_one_id_space_across_chunks(monkeypatch) -> None:
    monkeypatch.setattr(_kernel, "PACK_CHUNK", 3)
    texts = [f"w{k % 5} x{k % 3}  w{k % 7}" for k in range(20)] + ["", " "]
    assert_same(word_ids(texts), python_ids(texts, False, False, "default"))


def test_packed_split_inverts_concat() -> None:
    parts = [Packed.of([[1, 2], []]), Packed.of([]), Packed.of([[3], [4, 5, 6]])]
    joined = Packed.concat(parts)
    for back, part in zip(joined.split([2, 0, 2]), parts, strict=True):
        assert back.ids.tolist() == part.ids.tolist()
        assert back.offsets.tolist() == part.offsets.tolist()
    with pytest.raises(ValueError, match="segments"):
        joined.split([1, 1])


def test_wmt22_en_ru_every_system_equals_jiwer(wmt22) -> None:
    # en-ru (Cyrillic, the pair of the profile) with every system in one stats_many batch,
    # so the references and all systems share one id space; the English pairs are in
    # tests/metrics/test_wer.py
    jiwer = pytest.importorskip("jiwer")
    ref = read_lines(wmt_file("ref", "en-ru", "A"))
    names = wmt_systems("en-ru")
    systems = [read_lines(wmt_file("hyp", "en-ru", name)) for name in names]
    metric = WER()
    for name, hyps, stats in zip(names, systems, metric.stats_many(systems, [ref]), strict=True):
        assert metric.aggregate(stats).score == jiwer.wer(ref, hyps), name
