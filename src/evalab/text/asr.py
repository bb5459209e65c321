"""Text normalisation of WER/CER as jiwer 4 applies it, plus its common options.

jiwer's defaults: for words, runs of two or more whitespace characters become one space,
the ends are stripped and the text is split at single spaces (so a lone tab stays inside
a word); for characters, the ends are stripped and every remaining character, spaces
included, is a token. The options are jiwer's transforms applied first, in this order:
``lowercase`` (``ToLowerCase``), ``remove_punctuation`` (``RemovePunctuation``: every
character whose Unicode category starts with P) and the whitespace handling.

:func:`word_ids` gives the words of many texts as ids straight away: with the ``mt``
kernel built, the words are split and interned in C (no str object per word).
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from collections.abc import Sequence
from functools import cache

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, TokenTable, chunks

__all__ = ["CHAR_WHITESPACE", "WORD_WHITESPACE", "char_tokens", "word_ids", "word_tokens"]

#: ``whitespace`` choices for words: jiwer's default, or any whitespace separates words
WORD_WHITESPACE = ("default", "any")
#: ``whitespace`` choices for characters: kept (jiwer's default), runs collapsed, removed
CHAR_WHITESPACE = ("keep", "collapse", "remove")

_RUNS = re.compile(r"\s\s+")
_ASCII_WHITESPACE = {ord(c): " " for c in string.whitespace}
_NO_ASCII_WHITESPACE = dict.fromkeys(map(ord, string.whitespace))


@cache
def _punctuation_table() -> dict[int, None]:
    """Every code point of Unicode category P* (the table jiwer's RemovePunctuation uses)."""
    return {
        i: None for i in range(sys.maxunicode + 1) if unicodedata.category(chr(i)).startswith("P")
    }


def _prepare(text: str, lowercase: bool, remove_punctuation: bool) -> str:
    if lowercase:
        text = text.lower()
    if remove_punctuation:
        text = text.translate(_punctuation_table())
    return text


def word_tokens(
    text: str,
    lowercase: bool = False,
    remove_punctuation: bool = False,
    whitespace: str = "default",
) -> list[str]:
    """Words of ``text`` as jiwer's ``wer_default`` (after the options).

    >>> word_tokens("  Hello,\\tworld  again ")
    ['Hello,\\tworld', 'again']
    >>> word_tokens("  Hello,\\tworld  again ", lowercase=True, remove_punctuation=True, whitespace="any")
    ['hello', 'world', 'again']
    """
    text = _prepare(text, lowercase, remove_punctuation)
    if whitespace == "any":
        text = text.translate(_ASCII_WHITESPACE)
    # after the runs are squeezed and the ends stripped, only an empty text gives an empty word
    text = _RUNS.sub(" ", text).strip()
    return text.split(" ") if text else []


def word_ids(
    texts: Sequence[str],
    lowercase: bool = False,
    remove_punctuation: bool = False,
    whitespace: str = "default",
) -> Packed:
    """The :func:`word_tokens` of every text as ids (0, 1, 2, ... in order of first sight,
    equal words equal ids), packed; the texts are split :data:`~evalab._kernel.PACK_CHUNK`
    at a time, so only one chunk's words are ever held as str objects (none with the kernel).

    >>> packed = word_ids(["a  b", "b\\ta A"], lowercase=True)
    >>> packed.ids.tolist(), packed.offsets.tolist()
    ([0, 1, 2, 0], [0, 2, 4])
    """
    if _kernel.mt is None:
        return TokenTable().pack_chunked(
            lambda part: [word_tokens(t, lowercase, remove_punctuation, whitespace) for t in part],
            texts,
        )
    vocab, parts = _kernel.mt.Vocab(), []
    prepared = lowercase or remove_punctuation
    for part in chunks(texts):
        lines = (
            [_prepare(t, lowercase, remove_punctuation) for t in part] if prepared else list(part)
        )
        ids, offsets = _kernel.mt.encode_words(lines, vocab, whitespace == "any")
        parts.append(
            Packed(np.frombuffer(ids, np.int64).astype(np.int32), np.frombuffer(offsets, np.int64))
        )
    return Packed.concat(parts)


def char_tokens(
    text: str, lowercase: bool = False, remove_punctuation: bool = False, whitespace: str = "keep"
) -> str:
    """Characters of ``text`` as jiwer's ``cer_default`` (after the options).

    >>> char_tokens(" a  b ")
    'a  b'
    >>> char_tokens(" a  b ", whitespace="collapse"), char_tokens(" a  b ", whitespace="remove")
    ('a b', 'ab')
    """
    text = _prepare(text, lowercase, remove_punctuation)
    if whitespace == "collapse":
        text = _RUNS.sub(" ", text)
    elif whitespace == "remove":
        text = text.translate(_NO_ASCII_WHITESPACE)
    return text.strip()
