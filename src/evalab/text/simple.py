"""Simple tokenizers: the seed's ``words``, ``whitespace`` and SQuAD v1.1 normalisation.

Each tokenizer is a small stateless object with a ``name`` (written into signatures) and
``__call__(text) -> list[str]``.
"""

from __future__ import annotations

import re
import string

__all__ = ["SquadTokenizer", "WhitespaceTokenizer", "WordsTokenizer", "normalize_squad"]

# Seed 002: ``re.findall(r"\w+", text.lower())``; stdlib ``re`` on ``str`` is Unicode-aware.
_WORDS_RE = re.compile(r"\w+", re.UNICODE)
# The SQuAD v1.1 evaluation script (evaluate-v1.1.py, ``normalize_answer``): ASCII
# punctuation only, articles as whole words, in this order.
_SQUAD_PUNCT = frozenset(string.punctuation)
_SQUAD_ARTICLES_RE = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_squad(text: str) -> str:
    """SQuAD v1.1 answer normalisation: lowercase, drop punctuation and articles, squeeze spaces.

    The steps and their order are those of ``normalize_answer`` in the official
    ``evaluate-v1.1.py`` script.

    >>> normalize_squad("The  Eiffel Tower!")
    'eiffel tower'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _SQUAD_PUNCT)
    text = _SQUAD_ARTICLES_RE.sub(" ", text)
    return " ".join(text.split())


class _Stateless:
    """A tokenizer without settings: its ``repr`` is its constructor call."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class WordsTokenizer(_Stateless):
    """The seed's tokenizer: lowercase, then runs of Unicode word characters (``\\w+``).

    >>> WordsTokenizer()("Hello, World! x_1")
    ['hello', 'world', 'x_1']
    """

    name = "words"

    def __call__(self, text: str) -> list[str]:
        return _WORDS_RE.findall(text.lower())


class WhitespaceTokenizer(_Stateless):
    """Split on runs of whitespace (``str.split()``), nothing else: case and punctuation kept.

    >>> WhitespaceTokenizer()("  Hello,  World! ")
    ['Hello,', 'World!']
    """

    name = "whitespace"

    def __call__(self, text: str) -> list[str]:
        return text.split()


class SquadTokenizer(_Stateless):
    """SQuAD v1.1: :func:`normalize_squad`, then split on whitespace (as ``f1_score`` does).

    >>> SquadTokenizer()("The cat, a hat.")
    ['cat', 'hat']
    """

    name = "squad"

    def __call__(self, text: str) -> list[str]:
        return normalize_squad(text).split()
