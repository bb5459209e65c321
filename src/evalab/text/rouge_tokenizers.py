"""ROUGE tokenizers: rouge-score's default (``rouge``) and a Unicode-aware one (``unicode``).

``rouge`` reproduces ``rouge_score.tokenize.tokenize`` (the tokenizer of
``RougeScorer``, modelled on ROUGE-1.5.5): lowercase, every character outside
``[a-z0-9]`` becomes a separator, and with a stemmer only tokens of more than three
characters are stemmed (Porter, as nltk's default mode). It is ASCII only: "café" becomes
"caf" and Thai, Chinese or Cyrillic text disappears. ``unicode`` applies the same rules to
every script: a token is a run of letters, combining marks and digits of any script; Han,
Hiragana and Katakana characters, written without spaces, are one token each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import numpy as np

from evalab import _kernel
from evalab._kernel import TokenTable
from evalab.text.porter import porter_stem

__all__ = ["DistinctTokens", "RougeTokenizer", "UnicodeRougeTokenizer", "distinct_tokens"]

# rouge-score: re.sub(r"[^a-z0-9]+", " ", text.lower()), split on whitespace, keep tokens
# matching ^[a-z0-9]+$. Finding the runs of [a-z0-9] directly gives the same tokens.
_ROUGE_TOKEN_RE = re.compile(r"[a-z0-9]+")
# rouge-score stems only tokens longer than three characters ("Only stem words more than 3
# characters long", rouge_score/tokenize.py).
_MIN_STEM_LEN = 4
# The only characters outside ASCII whose lowercase holds an ASCII letter or digit:
# "İ" (U+0130, lowercase "i" + U+0307) and the Kelvin sign (U+212A, lowercase "k").
_LOWERS_TO_ASCII = ("\u0130", "\u212a")
# On ASCII bytes: A-Z to a-z, every other byte but a-z and 0-9 to a space.
_ASCII_TOKEN_BYTES = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 else 32 for c in range(256)
)


def _ascii_token_lists(texts: Sequence[str]) -> list[list[str]]:
    """``_ROUGE_TOKEN_RE.findall(text.lower())`` of every text, by byte-table translation.

    Every character outside ASCII becomes ``?`` (a separator: its lowercase has no ASCII
    letter or digit, except in :data:`_LOWERS_TO_ASCII`, whose texts take the regex), the
    ASCII bytes are lowercased and the rest turned to spaces by one table, and the
    result is split on the spaces: the same tokens, in C loops over bytes.
    """
    if any(c in text for text in texts for c in _LOWERS_TO_ASCII):
        return [
            _ROUGE_TOKEN_RE.findall(text.lower())
            if any(c in text for c in _LOWERS_TO_ASCII)
            else _ascii_token_lists([text])[0]
            for text in texts
        ]
    table = _ASCII_TOKEN_BYTES
    return [
        text.encode("ascii", "replace").translate(table).decode("ascii").split() for text in texts
    ]


@dataclass(frozen=True)
class DistinctTokens:
    """The tokens of a list of texts, each one an index into the texts' distinct tokens."""

    #: every distinct token once, in order of first sight
    distinct: list[str]
    #: every token of every text, end to end, as an index into :attr:`distinct` (int32)
    indices: np.ndarray
    #: ``nseg + 1`` token offsets (int64)
    offsets: np.ndarray
    #: how many texts have no token but are not blank (``text.strip()`` is not empty)
    emptied: int


def emptied_count(texts: Sequence[str], lengths: np.ndarray) -> int:
    """How many texts have no token (``lengths == 0``) but are not blank."""
    return sum(1 for i in np.flatnonzero(lengths == 0).tolist() if texts[i].strip())


def distinct_tokens(
    tokens: Callable[[Sequence[str]], Sequence[Sequence[str]]], texts: Sequence[str]
) -> DistinctTokens:
    """:class:`DistinctTokens` of ``tokens(texts)``, tokenising
    :data:`~evalab._kernel.PACK_CHUNK` texts at a time (only their ids stay alive)."""
    table = TokenTable()
    packed = table.pack_chunked(tokens, texts)
    distinct = cast(list[str], table.tokens())
    return DistinctTokens(
        distinct, packed.ids, packed.offsets, emptied_count(texts, packed.lengths)
    )


def _stemmed(tokens: list[str]) -> list[str]:
    tokens = [porter_stem(t) if len(t) >= _MIN_STEM_LEN else t for t in tokens]
    # rouge-score drops tokens that are no longer [a-z0-9]+ after stemming (none in
    # practice: a stem of an ASCII alphanumeric word is non-empty ASCII alphanumeric)
    return [t for t in tokens if t]


def _rouge_tokens(text: str, stem: bool) -> list[str]:
    tokens = _ROUGE_TOKEN_RE.findall(text.lower())
    return _stemmed(tokens) if stem else tokens


class RougeTokenizer:
    """rouge-score's default tokenizer (ASCII ``[a-z0-9]+`` after lowercasing).

    ``stem=True`` applies the Porter stemmer to tokens of four or more characters, as
    ``RougeScorer(use_stemmer=True)`` does.

    >>> RougeTokenizer()("The café's 2 Cats!")
    ['the', 'caf', 's', '2', 'cats']
    >>> RougeTokenizer(stem=True)("running cats ran")
    ['run', 'cat', 'ran']
    """

    name = "rouge"

    def __init__(self, stem: bool = False) -> None:
        self.stem = stem

    def __call__(self, text: str) -> list[str]:
        return _rouge_tokens(text, self.stem)

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of every text (found by byte-table translation, then stemmed)."""
        lists = _ascii_token_lists(texts)
        return [_stemmed(t) for t in lists] if self.stem else lists

    def distinct(self, texts: Sequence[str]) -> DistinctTokens:
        """The unstemmed tokens of every text as :class:`DistinctTokens` (one pass of the
        compiled kernel over the characters when it is there).

        >>> tokens = RougeTokenizer().distinct(["A cat, a dog", "!?"])
        >>> tokens.distinct, tokens.indices.tolist(), tokens.offsets.tolist(), tokens.emptied
        (['a', 'cat', 'dog'], [0, 1, 0, 2], [0, 4, 4], 1)
        """
        kernel = _kernel.rouge
        if kernel is None:
            return distinct_tokens(_ascii_token_lists, texts)
        distinct, indices, offsets, emptied = kernel.ascii_tokens(list(texts))
        return DistinctTokens(
            distinct,
            np.frombuffer(indices, dtype=np.int32),
            np.frombuffer(offsets, dtype=np.int64),
            emptied,
        )

    def __repr__(self) -> str:
        return f"RougeTokenizer(stem={self.stem})"


@lru_cache(maxsize=1)
def _unicode_token_re() -> Any:
    # ``regex`` knows Unicode properties; stdlib ``re`` has no \p{M}, and its \w splits
    # Thai and Devanagari words at their combining vowel signs.
    import regex

    return regex.compile(
        r"[\p{Han}\p{Hiragana}\p{Katakana}]|[\p{L}\p{M}\p{N}--\p{Han}\p{Hiragana}\p{Katakana}]+",
        flags=regex.V1,
    )


_ASCII_WORD_RE = re.compile(r"[a-z0-9]+\Z")


class UnicodeRougeTokenizer:
    """ROUGE tokenization for every script: lowercase, tokens are runs of letters, marks
    and digits (``[\\p{L}\\p{M}\\p{N}]+``); each Han, Hiragana or Katakana character is one
    token. With ``stem=True`` the Porter stemmer (an English stemmer) is applied to ASCII
    tokens of four or more characters only, as the ``rouge`` tokenizer does.

    >>> UnicodeRougeTokenizer()("Le café, 東京!")
    ['le', 'café', '東', '京']
    """

    name = "unicode"

    def __init__(self, stem: bool = False) -> None:
        self.stem = stem

    def __call__(self, text: str) -> list[str]:
        tokens: list[str] = _unicode_token_re().findall(text.lower())
        if self.stem:
            tokens = [
                porter_stem(t) if len(t) >= _MIN_STEM_LEN and _ASCII_WORD_RE.match(t) else t
                for t in tokens
            ]
        return tokens

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of every text."""
        if self.stem:
            return [self(t) for t in texts]
        return list(map(_unicode_token_re().findall, map(str.lower, texts)))

    def __repr__(self) -> str:
        return f"UnicodeRougeTokenizer(stem={self.stem})"
