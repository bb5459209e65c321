"""Tercom's normaliser (Snover et al. 2006, ``Normalizer.java``) as sacrebleu 2.x applies it.

The steps, in order: lowercase (unless case sensitive); with ``normalized``, the general
and Western rules (join hyphenated line breaks and lines, unescape four XML entities, pad
ASCII punctuation, split ``'s``, split ``.``/``,`` not between digits, split a dash after
a digit) and, with ``asian_support``, CJK characters padded to single characters; with
``no_punct``, the ASCII marks ``.,?:;!"()`` (and, with ``asian_support``, CJK and
full-width punctuation) removed; finally whitespace squeezed. The rules below state the
Tercom behaviour as regular expressions so the tokens match sacrebleu's exactly.

sacrebleu runs every rule on every line, a regular expression pass each: on CJK targets,
where a line is one or two words and the shift search is trivial, that was most of TER's
time. With the compiled kernel (``_mtkernel.tercom_tokens``) each rule is one pass in C
over the line. The pure-Python fallback joins the lines of a call by a control character
none of them holds and runs each rule once on the whole text (a rule only where its marks
occur; the rules that look at a character's neighbours line by line, on the lines holding
``.``, ``,``, ``'`` or ``-``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, TokenTable

__all__ = ["TercomNormalizer"]

# character classes (without their brackets)
_ASIAN_PUNCT = "\u3001\u3002\u3008-\u3011\u3014-\u301f\uff61-\uff65\u30fb"
_FULL_WIDTH_PUNCT = "\uff0e\uff0c\uff1f\uff1a\uff1b\uff01\uff02\uff08\uff09"
_PUNCT = r'\.,\?:;!"\(\)'

#: the replacement that pads a one-character class with spaces
_PAD = r" \1 "


@dataclass(frozen=True)
class _Rule:
    """One Tercom rule: ``pattern`` replaced by ``repl``. It runs only on a text holding one
    of ``needs`` (substrings every match contains; empty: every text), so a line of CJK
    text pays a few ``in`` scans instead of a dozen regular expression passes."""

    pattern: re.Pattern[str]
    repl: str
    needs: tuple[str, ...] = ()

    def __call__(self, text: str) -> str:
        if self.needs and not any(map(text.__contains__, self.needs)):
            return text
        if self.repl == _PAD:
            # ``([class])`` -> `` \1 ``: the pieces of a split on the group joined by one space
            # are the same text, with no Python call per match (Python 3.11 makes one)
            return " ".join(self.pattern.split(text))
        return self.pattern.sub(self.repl, text)


def _pad(char_class: str) -> _Rule:
    return _Rule(re.compile(f"([{char_class}])"), _PAD)


# applied in order by the ``normalized`` setting
_WESTERN = [
    _Rule(re.compile(r"\n-"), "", ("\n-",)),
    _Rule(re.compile(r"\n"), " ", ("\n",)),
    _Rule(re.compile(r"&quot;"), '"', ("&quot;",)),
    _Rule(re.compile(r"&amp;"), "&", ("&amp;",)),
    _Rule(re.compile(r"&lt;"), "<", ("&lt;",)),
    _Rule(re.compile(r"&gt;"), ">", ("&gt;",)),
]
# applied to " " + text + " ": the padding of ASCII punctuation, then the rules that look
# at a character's neighbours, run line by line (on the lines holding one of their marks)
_PAD_ASCII = _pad(r"{-~[-` -&(-+:-@/")  # ASCII punctuation and symbols
_CONTEXT = [
    _Rule(re.compile(r"'s "), r" 's ", ("'s ",)),
    _Rule(re.compile(r"'s$"), r" 's", ("'s",)),
    _Rule(re.compile(r"([^0-9])([\.,])"), r"\1 \2 ", (".", ",")),
    _Rule(re.compile(r"([\.,])([^0-9])"), r" \1 \2", (".", ",")),
    _Rule(re.compile(r"([0-9])(-)"), r"\1 \2 ", ("-",)),
]
_CONTEXT_MARKS = re.compile(r"[\.,'-]")
_WRAP = "   "  # the space on either side of a line, padded by _PAD_ASCII

#: characters that may join the lines of one call (the first that no line holds): control
#: characters that are not whitespace, not cased, not case-ignorable and in no rule's class,
#: so lowercasing and every rule but those of _CONTEXT treat the joined text as the lines
#: one after the other; the empty lines keep their places
_SEPARATORS = "".join(map(chr, [*range(0x00, 0x09), *range(0x0E, 0x1C)]))


@cache
def _asian_rules() -> list[_Rule]:
    """The ``asian_support`` padding rules, compiled on first use (their wide character
    classes cost ~10 ms to compile, which every TER start paid without the setting)."""
    return [
        _pad("\u4e00-\u9fff\u3400-\u4dbf"),  # CJK unified ideographs
        _pad("\u31c0-\u31ef\u2e80-\u2eff"),  # strokes, radicals
        _pad("\u3300-\u33ff\uf900-\ufaff\ufe30-\ufe4f"),  # compatibility
        _pad("\u3200-\u3f22"),  # enclosed CJK letters and months (Tercom's range)
        # Tercom's kana rules: as written they only fire on a whole-string kana run (never
        # after the Western rules, which start the text with a space; kept for the record)
        *(
            _Rule(re.compile(f"(^|^[{kana}])([{kana}]+)(?=$|^[{kana}])"), r"\1 \2 ")
            for kana in ("\u3040-\u309f", "\u30a0-\u30ff", "\u31f0-\u31ff")
        ),
        _pad(_ASIAN_PUNCT),
        _pad(_FULL_WIDTH_PUNCT),
    ]


@cache
def _punct_rule(asian_support: bool) -> _Rule:
    """``no_punct``: the ASCII marks ``.,?:;!"()``, and with ``asian_support`` the CJK and
    full-width ones, removed in one pass (removing one-character classes one after the
    other removes their union)."""
    marks = _PUNCT + (_ASIAN_PUNCT + _FULL_WIDTH_PUNCT if asian_support else "")
    return _Rule(re.compile(f"[{marks}]"), "")


def _apply(rules: list[_Rule], text: str) -> str:
    for rule in rules:
        text = rule(text)
    return text


class TercomNormalizer:
    """Text -> TER tokens with sacrebleu's four switches."""

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

    def tokens(self, text: str) -> tuple[str, ...]:
        """Tokens of ``text`` (sacrebleu right-strips the line first)."""
        return tuple(self.many([text])[0])

    def twice(self, texts: Sequence[str]) -> list[Sequence[str]]:
        """Tokens of every text normalised, joined by spaces and normalised again (sacrebleu
        normalises references twice: with ``normalized`` the second pass can split more,
        ``it's,`` -> ``it's`` without punctuation -> ``it 's``)."""
        return self.many([" ".join(words) for words in self.many(texts)])

    def packer(self) -> Callable[[Sequence[str], bool], Packed]:
        """``pack(texts, twice)``: the token ids of every text (of :meth:`twice` if ``twice``,
        else of :meth:`many`), equal tokens getting equal ids over every call of this
        ``pack``. The kernel maps tokens to ids as it finds them, with no str per token."""
        kernel = _kernel.mt
        if kernel is None:
            table = TokenTable()
            return lambda texts, twice: table.pack_chunked(
                self.twice if twice else self.many, texts
            )
        vocab = kernel.Vocab()
        flags = (self.normalized, self.no_punct, self.asian_support, self.case_sensitive)

        def pack(texts: Sequence[str], twice: bool) -> Packed:
            ids, offsets = kernel.tercom_encode(list(texts), vocab, *flags, twice)
            return Packed(
                np.frombuffer(ids, dtype=np.int64), np.frombuffer(offsets, dtype=np.int64)
            )

        return pack

    def many(self, texts: Sequence[str]) -> list[Sequence[str]]:
        """Tokens of every text, as sacrebleu's tokenizer gives them line by line.

        The kernel runs the rules line by line; the fallback joins the lines by a separator
        none holds and runs each rule once on the whole text (the rules of _CONTEXT on the
        lines that need them), so a call costs a few passes at C speed, not a dozen regular
        expression calls per line.
        """
        kernel = _kernel.mt
        if kernel is not None:
            tokens: list[Sequence[str]] = kernel.tercom_tokens(
                list(texts), self.normalized, self.no_punct, self.asian_support, self.case_sensitive
            )
            return tokens
        if not (self.normalized or self.no_punct):  # lowercasing and split() alone
            return list(map(str.split, texts if self.case_sensitive else map(str.lower, texts)))
        lines = list(map(str.rstrip, texts))
        if not lines:
            return []
        held = "".join(lines)
        sep = next((c for c in _SEPARATORS if c not in held), None)
        if sep is None:  # every candidate occurs: line by line, with no separator
            return [self._normalized(line, None).split() for line in lines]
        return list(map(str.split, self._normalized(sep.join(lines), sep).split(sep)))

    def _normalized(self, text: str, sep: str | None) -> str:
        """``text`` (lines joined by ``sep``, or one line) after the rules of the settings."""
        if not self.case_sensitive:
            text = text.lower()
        if self.normalized:
            text = _western(text, sep)
            if self.asian_support:
                text = _apply(_asian_rules(), text)
        if self.no_punct:
            text = _punct_rule(self.asian_support)(text)
        return text


def _western(text: str, sep: str | None) -> str:
    """The general and Western rules on the lines of ``text`` (joined by ``sep``, or one)."""
    # Tercom pads " " + line + " ": the padding of ASCII punctuation makes each of those
    # spaces three, written here as such, so the rule's pass meets only the lines' own marks
    text = f"{_WRAP}{_PAD_ASCII(_apply(_WESTERN, text))}{_WRAP}"
    if sep is None:
        return _apply(_CONTEXT, text)
    lines = text.replace(sep, f"{_WRAP}{sep}{_WRAP}").split(sep)
    for i, line in enumerate(lines):
        if _CONTEXT_MARKS.search(line):
            lines[i] = _apply(_CONTEXT, line)
    return sep.join(lines)
