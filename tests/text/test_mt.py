"""The MT tokenizers against sacrebleu 2.6.0 on real WMT22 lines and on edge cases."""

from __future__ import annotations

import importlib.util
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a as Sacre13a
from sacrebleu.tokenizers.tokenizer_char import TokenizerChar as SacreChar
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International as SacreIntl
from sacrebleu.tokenizers.tokenizer_none import NoneTokenizer as SacreNone
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh as SacreZh
from tests.conftest import WMT22, read_lines, wmt_file, wmt_systems

from evalab import _kernel
from evalab.errors import MissingExtraError
from evalab.text import mt
from evalab.text.tokenizers import get_tokenizer

PAIRS = {
    "13a": (mt.Tokenizer13a, Sacre13a),
    "intl": (mt.TokenizerIntl, SacreIntl),
    "zh": (mt.TokenizerZh, SacreZh),
    "char": (mt.TokenizerChar, SacreChar),
    "none": (mt.TokenizerNone, SacreNone),
}

EDGE_CASES = [
    "",
    " ",
    "a.,b",
    "a..",
    "2022.",
    "The year 2022.",
    "3.50, 1,000.5 and 4-5 or x-y",
    "&amp; &quot;quoted&quot; &lt;tag&gt; &apos;",
    "foo-\nbar\nbaz",
    "<skipped> text",
    "“中文”—测试，Ａ１",
    "tab\there\u00a0nbsp\u3000ideographic\u2009thin",
    "emoji 🙂 and 𠀀 (U+20000)",
    "(parens) [brackets] {braces} ~tilde~ `back` ^caret^ |pipe| @at #hash $5 %p",
    "ends with a dash-",
    "..., ,,, .5 ,5 5. 5,",
    "\u2028line\u2029sep\x85next\x1ctab",
    "&amp;lt; &amp;amp; a<skipped>b <skip x-\ny &quot",
]


@pytest.fixture(scope="module")
def wmt_lines(wmt22) -> list[str]:
    """~1,500 real lines: references and some system outputs of several pairs, incl. zh."""
    rng = random.Random(3)
    lines: list[str] = []
    for pair, ref in [
        ("en-de", "A"),
        ("en-zh", "A"),
        ("en-ru", "A"),
        ("cs-en", "B"),
        ("de-fr", "A"),
    ]:
        lines += rng.sample(read_lines(wmt_file("ref", pair, ref)), 200)
        system = rng.choice(wmt_systems(pair))
        lines += rng.sample(read_lines(wmt_file("hyp", pair, system)), 100)
    return lines + EDGE_CASES


@pytest.fixture(params=[True, False], ids=["kernel", "python"])
def kernel_mode(request, monkeypatch):
    """Run a test with the compiled kernel and with the pure-Python fallback."""
    if request.param:
        if _kernel.mt is None:
            pytest.skip("compiled kernel not built")
    else:
        monkeypatch.setattr(_kernel, "mt", None)
    return request.param


@pytest.mark.parametrize("name", list(PAIRS))
def test_tokenizers_match_sacrebleu(name, wmt_lines, kernel_mode) -> None:
    ours_cls, theirs_cls = PAIRS[name]
    ours, theirs = ours_cls(), theirs_cls()
    for line in wmt_lines:
        expected = theirs(line)
        assert ours.tokenize_str(line) == expected, line
        assert ours(line) == expected.split(), line


def test_zh_ranges_equal_sacrebleu_for_every_bmp_char() -> None:
    # includes sacrebleu's reading of '\u20000' as '\u2000' + '0' (U+2001..U+2A6D)
    theirs = SacreZh._is_chinese_char
    for cp in range(0x10000):
        c = chr(cp)
        assert mt.is_chinese_char(c) == theirs(c), hex(cp)
    for cp in (0x20000, 0x2A6D6, 0x2F800, 0x2FA1D, 0x10FFFF):
        assert mt.is_chinese_char(chr(cp)) == theirs(chr(cp)), hex(cp)


def test_registry_contract_and_signatures() -> None:
    for name in PAIRS:
        tok = get_tokenizer(name)
        assert tok.name == name
        assert tok.signature == name
        out = tok("Hello, world.")
        assert isinstance(out, list) and all(isinstance(t, str) for t in out)
    assert get_tokenizer("13a")("Hello, world.") == ["Hello", ",", "world", "."]


def test_memo_returns_the_same_tokens_and_is_not_pickled() -> None:
    import pickle

    tok = mt.Tokenizer13a()
    first = tok.words("A line, again.")
    assert tok.words("A line, again.") is first
    clone = pickle.loads(pickle.dumps(tok))
    assert clone._cache == {}
    assert clone("A line, again.") == list(first)


@pytest.mark.parametrize(
    "name,module,extra", [("ja-mecab", "MeCab", "ja"), ("ko-mecab", "mecab_ko", "ko")]
)
def test_mecab_tokenizers(name, module, extra) -> None:
    cls = mt.TokenizerJaMecab if name == "ja-mecab" else mt.TokenizerKoMecab
    if importlib.util.find_spec(module) is None:
        with pytest.raises(MissingExtraError, match=rf"evalab\[{extra}\]"):
            cls()
        return
    sacre = pytest.importorskip(f"sacrebleu.tokenizers.tokenizer_{name.replace('-', '_')}")
    theirs = getattr(sacre, "TokenizerJaMecab" if name == "ja-mecab" else "TokenizerKoMecab")()
    ours = cls()
    text = "私は東京に住んでいます。" if name == "ja-mecab" else "나는 서울에 살고 있습니다."
    assert ours.tokenize_str(text) == theirs(text)
    assert ours.signature == theirs.signature()


def test_wmt_data_present() -> None:
    # guards against silently skipping everything above when the data moved
    if not (WMT22 / "official-scores.tsv").exists():
        pytest.skip("no WMT22 data")
    assert len(wmt_systems("en-zh")) > 10


@pytest.mark.parametrize("name", ["13a", "zh"])
def test_kernel_encode_lines_matches_sacrebleu(name, wmt_lines) -> None:
    """The C path BLEU uses: tokenize every line and map tokens to ids in one call."""
    if _kernel.mt is None:
        pytest.skip("compiled kernel not built")
    import numpy as np

    theirs = PAIRS[name][1]()
    vocab = _kernel.mt.Vocab()
    ids, offsets = _kernel.mt.encode_lines(wmt_lines, vocab, name == "zh")
    ids, offsets = np.frombuffer(ids, dtype=np.int64), np.frombuffer(offsets, dtype=np.int64)
    words = dict(enumerate(vocab.tokens()))
    assert len(set(words.values())) == len(vocab) == len(words)
    for k, line in enumerate(wmt_lines):
        got = [words[i] for i in ids[offsets[k] : offsets[k + 1]]]
        assert got == theirs(line).split(), line


# Random strings over an alphabet that exercises every rule: entities, <skipped>, "-\n",
# digits next to . , -, CJK and Unicode whitespace.
TRICKY = st.lists(
    st.sampled_from(
        [
            "&quot;",
            "&amp;",
            "&lt;",
            "&gt;",
            "&",
            ";",
            "<skipped>",
            "<",
            "-\n",
            "\n",
            "-",
            ".",
            ",",
            "1",
            "9",
            "a",
            "Z",
            " ",
            "\u3000",
            "\u00a0",
            "中",
            "“",
            "—",
            "🙂",
            "'",
            "/",
            "$",
            "x",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TRICKY)
def test_random_strings_match_sacrebleu(line) -> None:
    for name in ("13a", "zh", "intl"):
        ours_cls, theirs_cls = PAIRS[name]
        expected = theirs_cls()(line)
        assert ours_cls().tokenize_str(line) == expected
        saved, _kernel.mt = _kernel.mt, None  # the pure-Python fallback too
        try:
            assert ours_cls().tokenize_str(line) == expected
        finally:
            _kernel.mt = saved
        if _kernel.mt is not None and name != "intl":
            vocab = _kernel.mt.Vocab()
            ids, _ = _kernel.mt.encode_lines([line], vocab, name == "zh")
            words = dict(enumerate(vocab.tokens()))
            import numpy as np

            assert [words[i] for i in np.frombuffer(ids, dtype=np.int64)] == expected.split()


# --- the kernel's token table ---------------------------------------------------------------
def _kernel_or_skip():
    if _kernel.mt is None:
        pytest.skip("compiled kernel not built")
    return _kernel.mt


def test_vocab_lookup_only_leaves_unknown_tokens_out() -> None:
    import numpy as np

    k = _kernel_or_skip()
    vocab = k.Vocab()
    ids, _ = k.encode_lines(["a b c", "c d"], vocab, False)
    assert np.frombuffer(ids, dtype=np.int64).tolist() == [0, 1, 2, 2, 3]
    ids, offsets = k.encode_lines(["d x a", "", "y y b"], vocab, False, False)
    assert np.frombuffer(ids, dtype=np.int64).tolist() == [3, -1, 0, -1, -1, 1]
    assert np.frombuffer(offsets, dtype=np.int64).tolist() == [0, 3, 3, 6]
    assert vocab.tokens() == ["a", "b", "c", "d"] and len(vocab) == 4


def test_vocab_keeps_ids_while_growing() -> None:
    import numpy as np

    k = _kernel_or_skip()
    rng = random.Random(5)
    # 20,000 distinct tokens (the table is resized several times), incl. non-BMP and CJK
    words = (
        [f"w{i}" for i in range(19_000)] + [chr(0x4E00 + i) for i in range(990)] + ["🙂", "𠀀"] * 5
    )
    lines = [" ".join(rng.sample(words, 25)) for _ in range(2_000)]
    vocab = k.Vocab()
    first, off = k.encode_lines(lines, vocab, False)
    again, _ = k.encode_lines(lines, vocab, False, False)
    assert first == again
    tokens = vocab.tokens()
    assert len(set(tokens)) == len(tokens) == len(vocab)
    ids, off = np.frombuffer(first, dtype=np.int64), np.frombuffer(off, dtype=np.int64)
    for i in (0, 999, 1_999):
        assert [tokens[t] for t in ids[off[i] : off[i + 1]]] == mt.Tokenizer13a().tokenize_str(
            lines[i]
        ).split()


def test_encode_lines_rejects_bad_arguments() -> None:
    k = _kernel_or_skip()
    with pytest.raises(TypeError):
        k.encode_lines(["a"], {}, False)  # a dict is not a Vocab
    with pytest.raises(TypeError, match="line 1 is not a str"):
        k.encode_lines(["a", 3], k.Vocab(), False)
