"""The Porter stemmer, reproducing nltk's ``PorterStemmer()`` (mode ``NLTK_EXTENSIONS``).

rouge-score's ``DefaultTokenizer(use_stemmer=True)`` instantiates
``nltk.stem.porter.PorterStemmer()`` with its default mode, ``NLTK_EXTENSIONS``: Porter
(1980) "An algorithm for suffix stripping" with Martin Porter's later extensions plus
nltk's own (an irregular-forms table; ``ies``/``ied`` on four-letter words; ``y -> i`` only
after a consonant; ``alli`` handled first in step 2; ``fulli`` and ``logi`` rules; a
two-letter ``vc`` word counts as ``*o``). This module is an independent implementation of
that behaviour so the runtime needs no nltk; ``tests/text/test_porter.py`` checks it
word by word against nltk on the WMT22 English vocabulary.

Stems are cached (:func:`functools.lru_cache`): words repeat, and stemming is the most
expensive step of ROUGE tokenization.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["PorterStemmer", "porter_stem"]

_VOWELS = frozenset("aeiou")

# nltk NLTK_EXTENSIONS irregular forms: word -> stem (checked before any rule).
_IRREGULAR = {
    "sky": "sky", "skies": "sky",
    "dying": "die", "lying": "lie", "tying": "tie",
    "news": "news",
    "innings": "inning", "inning": "inning",
    "outings": "outing", "outing": "outing",
    "cannings": "canning", "canning": "canning",
    "howe": "howe",
    "proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}  # fmt: skip


def _consonants(word: str) -> list[bool]:
    """``True`` where ``word[i]`` is a consonant: not a vowel, and ``y`` only after a vowel
    (or at the start), as defined in the paper."""
    flags: list[bool] = []
    prev = False
    for i, ch in enumerate(word):
        if ch in _VOWELS:
            cons = False
        elif ch == "y":
            cons = True if i == 0 else not prev
        else:
            cons = True
        flags.append(cons)
        prev = cons
    return flags


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant transitions in ``[C](VC){m}[V]``."""
    m = 0
    prev_vowel = False
    for cons in _consonants(stem):
        if cons and prev_vowel:
            m += 1
        prev_vowel = not cons
    return m


def _contains_vowel(stem: str) -> bool:
    return not all(_consonants(stem))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonants(word)[-1]


def _ends_cvc(word: str) -> bool:
    """Condition ``*o``: ends consonant-vowel-consonant, the last not w, x or y; nltk also
    accepts a two-letter vowel-consonant word."""
    if len(word) >= 3:
        c = _consonants(word)
        if c[-3] and not c[-2] and c[-1] and word[-1] not in "wxy":
            return True
    if len(word) == 2:
        c = _consonants(word)
        return not c[0] and c[1]
    return False


def _m_gt0(stem: str) -> bool:
    return _measure(stem) > 0


def _m_gt1(stem: str) -> bool:
    return _measure(stem) > 1


def _apply_rules(word: str, rules: list[tuple[str, str, object]]) -> str:
    """Apply the first rule whose suffix matches; if its condition fails, stop (Porter)."""
    for suffix, replacement, condition in rules:
        if word.endswith(suffix):
            stem = word[: len(word) - len(suffix)]
            if condition is None or condition(stem):  # type: ignore[operator]
                return stem + replacement
            return word
    return word


def _step1a(word: str) -> str:
    if word.endswith("ies") and len(word) == 4:  # nltk: 'dies' -> 'die', but 'flies' -> 'fli'
        return word[:-3] + "ie"
    for suffix, replacement in (("sses", "ss"), ("ies", "i"), ("ss", "ss"), ("s", "")):
        if word.endswith(suffix):
            return word[: len(word) - len(suffix)] + replacement
    return word


def _step1b(word: str) -> str:
    if word.endswith("ied"):  # nltk: 'died' -> 'die', 'spied' -> 'spi'
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        root = word[:-3]
        return root + "ee" if _measure(root) > 0 else word
    stem: str | None = None
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            candidate = word[: len(word) - len(suffix)]
            if _contains_vowel(candidate):
                stem = candidate
                break
    if stem is None:
        return word
    for suffix, replacement in (("at", "ate"), ("bl", "ble"), ("iz", "ize")):
        if stem.endswith(suffix):
            return stem[: len(stem) - len(suffix)] + replacement
    if _ends_double_consonant(stem):
        # (*d and not (*L or *S or *Z)) -> single letter
        return stem[:-1] if stem[-1] not in "lsz" else stem
    if _measure(stem) == 1 and _ends_cvc(stem):
        return stem + "e"
    return stem


def _step1c(word: str) -> str:
    # nltk: y -> i only after a consonant that is not the whole stem ('happy' -> 'happi',
    # 'enjoy' and 'by' unchanged)
    if word.endswith("y"):
        stem = word[:-1]
        if len(stem) > 1 and _consonants(stem)[-1]:
            return stem + "i"
    return word


_STEP2_RULES: list[tuple[str, str, object]] = [
    ("ational", "ate", _m_gt0),
    ("tional", "tion", _m_gt0),
    ("enci", "ence", _m_gt0),
    ("anci", "ance", _m_gt0),
    ("izer", "ize", _m_gt0),
    ("bli", "ble", _m_gt0),
    ("alli", "al", _m_gt0),
    ("entli", "ent", _m_gt0),
    ("eli", "e", _m_gt0),
    ("ousli", "ous", _m_gt0),
    ("ization", "ize", _m_gt0),
    ("ation", "ate", _m_gt0),
    ("ator", "ate", _m_gt0),
    ("alism", "al", _m_gt0),
    ("iveness", "ive", _m_gt0),
    ("fulness", "ful", _m_gt0),
    ("ousness", "ous", _m_gt0),
    ("aliti", "al", _m_gt0),
    ("iviti", "ive", _m_gt0),
    ("biliti", "ble", _m_gt0),
    ("fulli", "ful", _m_gt0),
    # nltk keeps the 'l' with the stem for the measure, so 'geologi' works like 'philologi'
    ("logi", "log", lambda stem: _measure(stem + "l") > 0),
]


def _step2(word: str) -> str:
    # nltk applies ALLI -> AL first and runs step 2 again on the result
    if word.endswith("alli") and _measure(word[:-4]) > 0:
        return _step2(word[:-4] + "al")
    return _apply_rules(word, _STEP2_RULES)


_STEP3_RULES: list[tuple[str, str, object]] = [
    ("icate", "ic", _m_gt0),
    ("ative", "", _m_gt0),
    ("alize", "al", _m_gt0),
    ("iciti", "ic", _m_gt0),
    ("ical", "ic", _m_gt0),
    ("ful", "", _m_gt0),
    ("ness", "", _m_gt0),
]

_STEP4_RULES: list[tuple[str, str, object]] = [
    ("al", "", _m_gt1),
    ("ance", "", _m_gt1),
    ("ence", "", _m_gt1),
    ("er", "", _m_gt1),
    ("ic", "", _m_gt1),
    ("able", "", _m_gt1),
    ("ible", "", _m_gt1),
    ("ant", "", _m_gt1),
    ("ement", "", _m_gt1),
    ("ment", "", _m_gt1),
    ("ent", "", _m_gt1),
    ("ion", "", lambda stem: _measure(stem) > 1 and stem[-1] in "st"),
    ("ou", "", _m_gt1),
    ("ism", "", _m_gt1),
    ("ate", "", _m_gt1),
    ("iti", "", _m_gt1),
    ("ous", "", _m_gt1),
    ("ive", "", _m_gt1),
    ("ize", "", _m_gt1),
]


def _step5a(word: str) -> str:
    # Both rules are tried (unlike the other steps): (m>1) E -> ; (m=1 and not *o) E ->
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _ends_cvc(stem)):
            return stem
    return word


def _step5b(word: str) -> str:
    # (m > 1 and *d and *L) -> single letter; nltk measures the word minus one 'l'
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        return word[:-1]
    return word


@lru_cache(maxsize=1 << 18)
def porter_stem(word: str) -> str:
    """Stem ``word`` exactly as nltk's ``PorterStemmer().stem(word)`` does.

    >>> [porter_stem(w) for w in ["running", "flies", "dies", "happily", "generalization"]]
    ['run', 'fli', 'die', 'happili', 'gener']
    """
    stem = word.lower()
    if stem in _IRREGULAR:
        return _IRREGULAR[stem]
    # nltk leaves words of one or two characters alone (measured before lowercasing)
    if len(word) <= 2:
        return stem
    stem = _step1a(stem)
    stem = _step1b(stem)
    stem = _step1c(stem)
    stem = _step2(stem)
    stem = _apply_rules(stem, _STEP3_RULES)
    stem = _apply_rules(stem, _STEP4_RULES)
    stem = _step5a(stem)
    return _step5b(stem)


class PorterStemmer:
    """A named, stateless wrapper around :func:`porter_stem` (its name goes in signatures)."""

    name = "porter"

    def stem(self, word: str) -> str:
        """Stem one word (see :func:`porter_stem`)."""
        return porter_stem(word)

    def __repr__(self) -> str:
        return "PorterStemmer()"
