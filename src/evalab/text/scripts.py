"""Which writing systems a text uses, and whether it reads like English: numbers only.

The command line warns from these counts when a tokenizer or an encoder does not fit the
text (Chinese scored with 13a, German embedded with an English-only encoder).

>>> share = script_share(["我们今天去北京。", "ok"])
>>> share.letters, share.han, share.dominant_cjk()
(9, 7, 'zh')
>>> script_share(["東京へ行きます"]).dominant_cjk()
'ja'
>>> english_word_share(["the cat sat on the mat"]) > english_word_share(["die Katze sitzt auf der Matte"])
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

import numpy as np

__all__ = ["ScriptShare", "english_word_share", "script_share"]

#: segments looked at (the first ones): enough to tell a script, cheap on any file
SAMPLE_SEGMENTS = 2000

#: share of CJK characters among letters above which a text is taken for CJK text
CJK_MAJORITY = 0.5

# Code-point ranges (inclusive) of each script, counted on the code points as an array: a
# regular expression of these classes costs more to compile (re enumerates every code point
# of a range) than counting takes on the 2000 segments of a sample.
_HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2EBEF))
_KANA = ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))
_HANGUL = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF))
_WORD = re.compile(r"[^\W\d_]+")

#: the most frequent English function words (a third or more of running English text)
_ENGLISH = frozenset(
    [
        "the",
        "of",
        "and",
        "to",
        "a",
        "in",
        "is",
        "it",
        "that",
        "for",
        "on",
        "was",
        "with",
        "as",
        "be",
        "by",
        "at",
        "this",
        "are",
        "from",
        "or",
        "have",
        "an",
        "not",
        "but",
        "his",
        "they",
        "which",
        "he",
        "we",
        "you",
        "she",
        "her",
        "their",
        "has",
        "had",
        "were",
        "been",
        "its",
        "one",
        "all",
        "there",
    ]
)


@dataclass(frozen=True)
class ScriptShare:
    """Letter counts of a text by script (Han, kana, Hangul) among all its letters."""

    letters: int
    han: int
    kana: int
    hangul: int

    def dominant_cjk(self) -> str | None:
        """``zh``, ``ja`` or ``ko`` when CJK characters are most of the letters, else None.

        Japanese mixes Han with kana: any kana beyond a tenth of the CJK letters says ``ja``.
        """
        cjk = self.han + self.kana + self.hangul
        if not self.letters or cjk / self.letters < CJK_MAJORITY:
            return None
        if self.hangul >= max(self.han, self.kana):
            return "ko"
        return "ja" if self.kana > 0.1 * cjk else "zh"

    def cjk_fraction(self) -> float:
        """CJK characters as a share of all letters (0 for a text without letters)."""
        return (self.han + self.kana + self.hangul) / self.letters if self.letters else 0.0


def script_share(segments: Iterable[str | None]) -> ScriptShare:
    """Letter counts by script over the first :data:`SAMPLE_SEGMENTS` segments."""
    text = "\n".join(s for s in islice(segments, SAMPLE_SEGMENTS) if s)
    letters = sum(len(w) for w in _WORD.findall(text))
    if text.isascii():  # no character of any of the three scripts
        return ScriptShare(letters, 0, 0, 0)
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    han, kana, hangul = (_in_ranges(points, ranges) for ranges in (_HAN, _KANA, _HANGUL))
    return ScriptShare(letters, han, kana, hangul)


def _in_ranges(points: np.ndarray, ranges: tuple[tuple[int, int], ...]) -> int:
    """How many of the code points lie in one of the (inclusive) ranges."""
    return sum(int(np.count_nonzero((points >= lo) & (points <= hi))) for lo, hi in ranges)


def english_word_share(segments: Iterable[str | None]) -> float:
    """Share of the words (over the first segments) that are frequent English function words.

    English running text is around 0.3-0.45; German, French, Czech... are below 0.1.
    """
    words = [w.lower() for s in islice(segments, SAMPLE_SEGMENTS) if s for w in _WORD.findall(s)]
    return sum(w in _ENGLISH for w in words) / len(words) if words else 0.0
