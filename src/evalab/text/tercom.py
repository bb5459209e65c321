"""Tercom's normaliser (Snover et al. 2006, ``Normalizer.java``) as sacrebleu 2.x applies it.

The steps, in order: lowercase (unless case sensitive); with ``normalized``, the general
and Western rules (join hyphenated line breaks and lines, unescape four XML entities, pad
ASCII punctuation, split ``'s``, split ``.``/``,`` not between digits, split a dash after
a digit) and, with ``asian_support``, CJK characters padded to single characters; with
``no_punct``, the ASCII marks ``.,?:;!"()`` (and, with ``asian_support``, CJK and
full-width punctuation) removed; finally whitespace squeezed. The rules below state the
Tercom behaviour as regular expressions so the tokens match sacrebleu's exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache

__all__ = ["TercomNormalizer"]

_ASIAN_PUNCT = "[\u3001\u3002\u3008-\u3011\u3014-\u301f\uff61-\uff65\u30fb]"
_FULL_WIDTH_PUNCT = "[\uff0e\uff0c\uff1f\uff1a\uff1b\uff01\uff02\uff08\uff09]"

# (pattern, replacement) applied in order by the ``normalized`` setting
_WESTERN = [
    (re.compile(r"\n-"), ""),
    (re.compile(r"\n"), " "),
    (re.compile(r"&quot;"), '"'),
    (re.compile(r"&amp;"), "&"),
    (re.compile(r"&lt;"), "<"),
    (re.compile(r"&gt;"), ">"),
]
# applied to " " + text + " "
_WESTERN_PADDED = [
    (re.compile(r"([{-~[-` -&(-+:-@/])"), r" \1 "),  # ASCII punctuation and symbols
    (re.compile(r"'s "), r" 's "),
    (re.compile(r"'s$"), r" 's"),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


@cache
def _asian_rules() -> list[tuple[re.Pattern[str], str]]:
    """The ``asian_support`` padding rules, compiled on first use (their wide character
    classes cost ~10 ms to compile, which every TER start paid without the setting)."""
    return [
        (re.compile("([\u4e00-\u9fff\u3400-\u4dbf])"), r" \1 "),  # CJK unified ideographs
        (re.compile("([\u31c0-\u31ef\u2e80-\u2eff])"), r" \1 "),  # strokes, radicals
        (re.compile("([\u3300-\u33ff\uf900-\ufaff\ufe30-\ufe4f])"), r" \1 "),  # compatibility
        (
            re.compile("([\u3200-\u3f22])"),
            r" \1 ",
        ),  # enclosed CJK letters and months (Tercom's range)
        # Tercom's kana rules: as written they only fire on a whole-string kana run
        (re.compile("(^|^[\u3040-\u309f])([\u3040-\u309f]+)(?=$|^[\u3040-\u309f])"), r"\1 \2 "),
        (re.compile("(^|^[\u30a0-\u30ff])([\u30a0-\u30ff]+)(?=$|^[\u30a0-\u30ff])"), r"\1 \2 "),
        (re.compile("(^|^[\u31f0-\u31ff])([\u31f0-\u31ff]+)(?=$|^[\u31f0-\u31ff])"), r"\1 \2 "),
        (re.compile(f"({_ASIAN_PUNCT})"), r" \1 "),
        (re.compile(f"({_FULL_WIDTH_PUNCT})"), r" \1 "),
    ]


_PUNCT = re.compile(r"[\.,\?:;!\"\(\)]")


@cache
def _asian_punct() -> list[re.Pattern[str]]:
    """The CJK and full-width punctuation ``no_punct`` removes with ``asian_support``."""
    return [re.compile(_ASIAN_PUNCT), re.compile(_FULL_WIDTH_PUNCT)]


def _apply(rules: list[tuple[re.Pattern[str], str]], text: str) -> str:
    for pattern, repl in rules:
        text = pattern.sub(repl, text)
    return text


class TercomNormalizer:
    """Text -> TER tokens with sacrebleu's four switches (stateless apart from an LRU cache)."""

    name = "tercom"

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = False,
    ) -> None:
        self.normalized = normalized
        self.no_punct = no_punct
        self.asian_support = asian_support
        self.case_sensitive = case_sensitive
        # references are normalised once per system scored; the cache makes repeats free
        self.tokens = lru_cache(maxsize=2**16)(self._tokens)

    def _tokens(self, text: str) -> tuple[str, ...]:
        """Tokens of ``text`` (sacrebleu right-strips the line first)."""
        text = text.rstrip()
        if not text:
            return ()
        if not self.case_sensitive:
            text = text.lower()
        if self.normalized:
            text = _apply(_WESTERN_PADDED, f" {_apply(_WESTERN, text)} ")
            if self.asian_support:
                text = _apply(_asian_rules(), text)
        if self.no_punct:
            text = _PUNCT.sub("", text)
            if self.asian_support:
                for pattern in _asian_punct():
                    text = pattern.sub("", text)
        return tuple(text.split())

    def many(self, texts: Sequence[str]) -> list[Sequence[str]]:
        """Tokens of every text, as :attr:`tokens` gives them one by one.

        Without ``normalized`` and ``no_punct`` the tokens are the lowercased (or kept) text
        split at whitespace (``split()`` drops the trailing whitespace ``rstrip`` would), so
        the whole list is done by C loops, with no call per line.
        """
        if self.normalized or self.no_punct:
            return list(map(self.tokens, texts))
        if self.case_sensitive:
            return list(map(str.split, texts))
        return list(map(str.split, map(str.lower, texts)))

    def __getstate__(self) -> dict[str, bool]:
        return {
            k: getattr(self, k)
            for k in ("normalized", "no_punct", "asian_support", "case_sensitive")
        }

    def __setstate__(self, state: dict[str, bool]) -> None:
        self.__init__(**state)  # type: ignore[misc]
