"""The tokenizer registry.

A tokenizer maps a string to a list of tokens and has a ``name`` that goes into metric
signatures. Implementations live in small modules and are imported lazily:

* ``evalab.text.simple``: ``words`` (seed 002: ``re.findall(r"\\w+", text.lower())``),
  ``whitespace``, ``squad`` (SQuAD v1.1 answer normalisation, then whitespace split).
* ``evalab.text.rouge_tokenizers``: ``rouge`` (rouge-score's default, ASCII only) and
  ``unicode`` (the same rules for every script).
* ``evalab.text.mt``: sacrebleu's ``13a``, ``intl``, ``zh``, ``char``, ``none`` and the
  MeCab tokenizers ``ja-mecab``, ``ko-mecab`` (extras ``ja``/``ko``).
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from evalab.errors import SettingsError


@runtime_checkable
class Tokenizer(Protocol):
    """Anything with a ``name`` and ``__call__(text) -> list[str]``."""

    name: str

    def __call__(self, text: str) -> list[str]: ...


#: tokenizer name -> "module:factory" (the factory takes no arguments)
TOKENIZERS: dict[str, str] = {
    "words": "evalab.text.simple:WordsTokenizer",
    "whitespace": "evalab.text.simple:WhitespaceTokenizer",
    "squad": "evalab.text.simple:SquadTokenizer",
    "rouge": "evalab.text.rouge_tokenizers:RougeTokenizer",
    "unicode": "evalab.text.rouge_tokenizers:UnicodeRougeTokenizer",
    "13a": "evalab.text.mt:Tokenizer13a",
    "intl": "evalab.text.mt:TokenizerIntl",
    "zh": "evalab.text.mt:TokenizerZh",
    "char": "evalab.text.mt:TokenizerChar",
    "none": "evalab.text.mt:TokenizerNone",
    "ja-mecab": "evalab.text.mt:TokenizerJaMecab",
    "ko-mecab": "evalab.text.mt:TokenizerKoMecab",
}

_CACHE: dict[str, Tokenizer] = {}


def available_tokenizers() -> list[str]:
    """All registered tokenizer names."""
    return list(TOKENIZERS)


def check_tokenizer_name(name: str) -> str:
    """Return ``name`` if it is a registered tokenizer, else raise a :class:`SettingsError`.

    Settings validate names with this (without importing the tokenizer's module).
    """
    if name not in TOKENIZERS:
        raise SettingsError(
            f"unknown tokenizer {name!r}; known tokenizers: {', '.join(TOKENIZERS)}"
        )
    return name


def get_tokenizer(name: str) -> Tokenizer:
    """The tokenizer registered under ``name`` (instances are cached and stateless)."""
    if name in _CACHE:
        return _CACHE[name]
    check_tokenizer_name(name)
    module_name, factory = TOKENIZERS[name].split(":")
    tok: Tokenizer = getattr(importlib.import_module(module_name), factory)()
    _CACHE[name] = tok
    return tok
