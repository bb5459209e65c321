"""ROUGE's per-pair counts over token ids: clipped n-gram overlaps and LCS lengths.

Tokens are interned as int32 ids in one shared, bounded table (:data:`TABLE`, see
:class:`evalab._kernel.TokenTable`); the segments of one side are packed into one id
array with offsets (:class:`evalab._kernel.Packed`) and every pair of a call is counted in
one pass of the optional compiled kernel (``evalab._kernel.rouge``), or by the
pure-Python fallbacks here, which give identical counts.

The LCS length is Hyyrö's bit-parallel row update (2004, "Bit-parallel LCS-length
computation revisited") after cutting the common prefix and suffix: ``|a| * |b| / 64``
word steps in C (about a second for two different 10^5-word lines) instead of the
``|a| * |b|`` table cells of rouge-score, so a long single line cannot stall a run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, TokenTable

__all__ = [
    "TABLE",
    "lcs_lengths",
    "lcs_of_ids",
    "lcs_seconds",
    "match_masks",
    "ngram_overlaps",
    "token_ids",
]

#: the token table of ROUGE's id caches (:mod:`evalab.metrics.rouge` keeps token ids per
#: distinct text across calls, so the table is shared; a metric call holds a session)
TABLE = TokenTable()


def token_ids(tokens: Sequence[str]) -> np.ndarray:
    """The interned int32 ids of ``tokens`` (equal tokens, equal ids, while :data:`TABLE` lives)."""
    return TABLE.ids(tokens)


def vocab_size() -> int:
    """One more than the largest id :func:`token_ids` has handed out."""
    return len(TABLE)


# -- LCS ------------------------------------------------------------------------------------
def match_masks(tokens: Sequence[Hashable]) -> dict[Hashable, int]:
    """Bit ``i`` of ``masks[t]`` is set where ``tokens[i] == t`` (Hyyrö's match vectors)."""
    masks: dict[Hashable, int] = {}
    for i, t in enumerate(tokens):
        masks[t] = masks.get(t, 0) | (1 << i)
    return masks


def lcs_from_masks(masks: dict[Hashable, int], m: int, other: Sequence[Hashable]) -> int:
    """LCS length of the ``m`` tokens behind ``masks`` and ``other`` (Python integers as
    bit vectors: V holds, in its low m bits, the zeros of one DP row; LCS = m - popcount)."""
    v = (1 << m) - 1
    get = masks.get
    for t in other:
        bits = get(t)
        if bits:
            u = v & bits
            v = (v + u) | (v - u)
    return m - (v & ((1 << m) - 1)).bit_count()


def lcs_of_ids(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """LCS length of two token sequences in pure Python (common prefix and suffix cut)."""
    a, b = list(a), list(b)
    common = 0
    while a and b and a[-1] == b[-1]:
        a.pop(), b.pop()
        common += 1
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    a, b = a[start:], b[start:]
    if not a or not b:
        return common + start
    if len(b) > len(a):  # the shorter side is the bit vector: fewer digits per step
        a, b = b, a
    return common + start + lcs_from_masks(match_masks(b), len(b), a)


# Seconds per 64-column word step, measured on a 2-core x86-64 machine (C: 10^5 x 10^5
# random words in about 0.05 s; Python integers are about 20 times slower). Only used to
# tell a user how long a very long pair will take.
_SECONDS_PER_WORD_STEP = 1.5e-9
_PYTHON_SLOWDOWN = 20.0


def lcs_seconds(n: int, m: int) -> float:
    """A rough upper estimate of the seconds :func:`lcs_lengths` spends on an n x m pair."""
    steps = max(n, m) * -(-min(n, m) // 64)
    return steps * _SECONDS_PER_WORD_STEP * (1.0 if _kernel.rouge is not None else _PYTHON_SLOWDOWN)


def lcs_lengths(a: Packed, b: Packed) -> np.ndarray:
    """LCS length of every segment pair ``(a[s], b[s])`` (int64)."""
    out = np.zeros(len(a.offsets) - 1, dtype=np.int64)
    kernel = _kernel.rouge
    if kernel is not None:
        kernel.lcs_lengths(a.ids, a.offsets, b.ids, b.offsets, vocab_size(), out)
        return out
    for s in range(len(out)):
        out[s] = lcs_of_ids(a.segment(s).tolist(), b.segment(s).tolist())
    return out


# -- n-gram overlaps ------------------------------------------------------------------------
def _ngram_counts(ids: list[int], n: int) -> Counter[Hashable]:
    # shifted copies of different lengths: zip stops at the shortest on purpose
    return Counter(ids if n == 1 else zip(*(ids[k:] for k in range(n)), strict=False))


def ngram_overlaps(a: Packed, b: Packed, n: int) -> np.ndarray:
    """Clipped n-gram overlap ``sum_g min(c_a(g), c_b(g))`` of every segment pair (int64)."""
    out = np.zeros(len(a.offsets) - 1, dtype=np.int64)
    kernel = _kernel.rouge
    if kernel is not None and n in (1, 2):
        kernel.ngram_overlaps(a.ids, a.offsets, b.ids, b.offsets, n, out)
        return out
    for s in range(len(out)):
        ca = _ngram_counts(a.segment(s).tolist(), n)
        cb = _ngram_counts(b.segment(s).tolist(), n)
        out[s] = sum((ca & cb).values())
    return out
